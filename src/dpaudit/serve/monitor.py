"""Continuous certification of a running ``dpaudit serve`` deployment (``dpaudit monitor``).

The service claims that each answer is Gaussian noisy argmax (GNMax) of the teachers' vote
histogram with noise σ (Papernot et al. 2018, "Scalable Private Learning with PATE",
arXiv:1802.08908, §4.1): its ledger charges every answer for that σ. The monitor tests, while
the service runs, the null

    H0(σ): for every answer t, P(y_t = top_t | past, H_t) ≤ Q_σ(H_t)[top_t],

"the answers agree with the plurality of their histogram no more often than GNMax(σ) would",
where ``H_t`` is the vote histogram answer ``t`` was drawn from (recorded by the service:
:meth:`~dpaudit.serve.ledger.LedgerBase.answers`), ``top_t = argmax H_t`` (the first maximum)
and ``Q_σ(H)`` the exact GNMax output probabilities
(:func:`dpaudit.mechanisms.argmax_probabilities`).

**Why an honest service is in the null (checked, not assumed).** With the same standard
normal noise ``N``, class ``top`` wins iff ``N_top − N_j > −(H_top − H_j)/σ`` for every
``j``; every threshold ``−(H_top − H_j)/σ ≤ 0`` grows with σ, so the winning event at a larger
σ′ is contained in the event at σ (a coupling): ``Q_σ′(H)[top] ≤ Q_σ(H)[top]`` for all
``σ′ ≥ σ`` and every histogram. Answers at least as noisy as claimed (Gaussian noise with
std ≥ σ, fresh for every answer) are in ``H0(σ)``. The tests check this monotonicity
numerically on the demo deployment's histograms and on ties. For Confident GNMax the
statistic counts answered queries only: the threshold noise is independent of the answer
noise, so given that the query was answered the label is GNMax(σ2) of the histogram (the
threshold step's σ1 is not monitored).

**The e-process.** ``Z_t = 1{answered_t} (1{y_t = top_t} − Q_σ(H_t)[top_t]) ∈ [−1, 1]`` has
conditional mean ≤ 0 under ``H0(σ)`` (``H_t`` is known before ``y_t`` is drawn, whatever the
clients chose), so betting on it with predictable aGRAPA bets
(:class:`dpaudit.bounds.BettingEProcess`; Waudby-Smith & Ramdas 2023, arXiv:2010.09686) gives
a test supermartingale ``K_t``; the monitor raises its alarm when ``K_t ≥ 1/β`` and, by
Ville's inequality, an honest deployment raises it with probability ≤ β over its whole life,
however often the monitor looks (González, Dulce-Rubio, Ramdas & Ribero 2025, "Sequentially
Auditing Differential Privacy", arXiv:2509.07055).

**The order of the stream.** The records are read in commit order (journal rows), not in the
order the noise was drawn; that order is as good: a request's queries can depend only on
answers released before it was sent, which were committed before it, and every answer's noise
is fresh, so given everything earlier in commit order (and ``H_t``) ``Z_t`` still has mean
≤ 0.

**Confidence sequence for the noise.** One such e-process per σ′ of a decreasing grid (from
4σ down to σ/4, the claim included). The nulls are nested: if the answers agree more often
than GNMax(σ′) they agree more often than GNMax(σ″) for every σ″ > σ′ (the monotonicity
above), so testing them in the fixed order of the
grid, largest first, and stopping at the first that is not rejected controls the
probability of rejecting any true null by β with no correction (fixed-sequence testing).
``sigma_upper`` — the smallest grid σ′ of the leading run of rejections — is then an
anytime-valid upper confidence bound on the noise: with probability ≥ 1 − β, at every time,
``H0(sigma_upper)`` is false ("the answers are less noisy than GNMax(sigma_upper)"). For a
GNMax deployment with noise σ_true this reads ``σ_true < sigma_upper``. The alarm is the
claim's own e-process (a level-β test by itself).

**Confidence sequence for ε (if the noise is Gaussian).** If the service adds i.i.d.
Gaussian noise of some unknown standard deviation σ_true (the family it claims), ``H0(σ′)``
holds exactly when σ′ ≤ σ_true (the coupling above, strictly for a contested histogram), so
with probability ≥ 1 − β, at every time, ``σ_true < sigma_upper``. The exact ε(δ) of one
GNMax answer, maximised over a fixed family of neighbouring histograms
(:func:`dpaudit.serve._monitor_epsilon.gnmax_answer_epsilon`), is then at least its infimum
over ``σ ≤ sigma_upper``; it is not monotone in σ (the vote lattice), so ``epsilon_lower``
is a rigorous lower bound of that infimum from interval bounds on the output probabilities
(:func:`dpaudit.serve._monitor_epsilon.gnmax_epsilon_floor`): an anytime-valid lower
confidence bound on the ε(δ) of one answer, at the ledger's δ. Beside it:
``epsilon_exact_claimed``, the same exact ε at the claimed σ (an honest service's bound stays
below it), and ``epsilon_claimed``, what the ledger charges one answer (RDP, an upper
bound). Without the Gaussian assumption ``sigma_upper`` still holds in the agreement sense,
and ``epsilon_lower`` is what it implies for a Gaussian mechanism.

The monitor reads the records incrementally (:class:`LedgerMonitor`), or sends its own probe
queries as an ordinary client under its own API key and pairs the answers it received over
HTTP with the histograms the service recorded for its charges (:class:`ClientMonitor`). Each
writes its status into the ledger (the service's ``/healthz`` shows ``privacy_alarm``), logs
one line on the ``dpaudit.monitor`` logger when the alarm is raised, and can render a live
HTML page of the e-value path (:func:`dpaudit.serve.monitor_page.write_monitor_page`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpaudit._results import ResultMixin
from dpaudit._validate import check_confidence_level, check_positive, check_positive_int
from dpaudit.bounds import BettingEProcess
from dpaudit.errors import DPAuditError
from dpaudit.mechanisms import ABSTAIN, ConfidentGNMax, GNMax, argmax_probabilities
from dpaudit.serve.ledger import GLOBAL_ACCOUNT, LedgerBase

__all__ = [
    "CONFIDENCE_LEVEL",
    "ClientMonitor",
    "DeploymentMonitor",
    "LedgerMonitor",
    "MonitorError",
    "MonitorStatus",
    "TopProbabilities",
    "agreement_statistic",
    "noise_grid",
]

logger = logging.getLogger("dpaudit.monitor")

#: Default 1 − β of the alarm. A monitor watches a deployment for its whole life and an alarm
#: stops a service, so false alarms must be rare: an honest deployment raises one with
#: probability at most 10⁻⁴ over its life (Ville), at the price of ~log(10⁴)/log(20) ≈ 3×
#: the evidence needed at β = 0.05.
CONFIDENCE_LEVEL = 0.9999
_PATH_POINTS = 2000  # the e-value path keeps at most about this many points
_CHUNK = 64  # answers per path point while the path is short


class MonitorError(DPAuditError):
    """The monitor cannot run: a claim the service does not make, an unreachable service, a
    ledger it cannot read, a deployment whose answers it cannot test."""


def noise_grid(sigma: float, *, points: int = 41, low: float = 0.25, high: float = 4.0):
    """The decreasing σ′ grid of the noise confidence sequence: ``points`` values evenly
    spaced in log between ``high·σ`` and ``low·σ``, with σ itself added.

    Example:
        >>> noise_grid(4.0, points=3).tolist()
        [16.0, 4.0, 1.0]
    """
    s = check_positive("sigma", sigma)
    check_positive_int("points", points)
    if not (0 < low < 1 < high):
        raise ValueError(f"need 0 < low < 1 < high, got low={low!r}, high={high!r}")
    grid = np.geomspace(high * s, low * s, int(points))
    return np.unique(np.append(grid, s))[::-1].copy()


class TopProbabilities:
    """``Q_σ′(H)[argmax H]`` for every σ′ of a grid, cached by histogram (deployments answer
    the same histograms again and again). Monitors with the same grid may share one.

    Args:
        sigmas: the grid σ′ (each > 0).
    """

    def __init__(self, sigmas: ArrayLike) -> None:
        s = np.asarray(sigmas, dtype=np.float64).ravel()
        if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
            raise ValueError(f"sigmas must be finite and > 0, got {s.tolist()}")
        self.sigmas = s
        self._cache: dict[bytes, np.ndarray] = {}

    def __call__(self, votes: np.ndarray) -> np.ndarray:
        """``(G, n)`` probabilities of each histogram's first plurality class."""
        votes = np.ascontiguousarray(votes, dtype=np.float64)
        n = votes.shape[0]
        out = np.empty((self.sigmas.size, n))
        if n == 0:
            return out
        uniq, inverse = np.unique(votes, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        keys = [row.tobytes() for row in uniq]
        missing = [i for i, k in enumerate(keys) if k not in self._cache]
        if missing:
            hist = uniq[missing]
            top = np.argmax(hist, axis=1)
            rows = np.arange(len(missing))
            cols = np.stack([argmax_probabilities(hist, s)[rows, top] for s in self.sigmas])
            for j, i in enumerate(missing):
                self._cache[keys[i]] = cols[:, j].copy()
        table = np.stack([self._cache[k] for k in keys], axis=1)
        out[:] = table[:, inverse]
        return out


def agreement_statistic(
    votes: ArrayLike, labels: ArrayLike, sigmas: ArrayLike | TopProbabilities
) -> np.ndarray:
    """``Z[g, t] = 1{answered_t} (1{y_t = argmax H_t} − Q_σ_g(H_t)[argmax H_t])`` (module notes).

    Args:
        votes: the histograms ``(n, C)`` the answers were drawn from.
        labels: the answers ``(n,)`` (−1: abstained).
        sigmas: the noise levels σ_g tested, or a :class:`TopProbabilities` over them.

    Returns:
        ``(G, n)`` values in ``[−1, 1]``, each with conditional mean ≤ 0 under ``H0(σ_g)``.

    Example:
        >>> z = agreement_statistic([[20, 10, 0]], [0], [4.0])
        >>> round(float(z[0, 0]), 4)  # 1 − Q_4((20, 10, 0))[0]
        0.0386
    """
    v = np.asarray(votes, dtype=np.float64)
    y = np.asarray(labels)
    if v.ndim != 2 or v.shape[1] < 2 or y.shape != (v.shape[0],):
        raise ValueError(
            f"votes must be (n, C) with C >= 2 and labels (n,), got {v.shape} and {y.shape}"
        )
    top = TopProbabilities(sigmas) if not isinstance(sigmas, TopProbabilities) else sigmas
    answered = y != ABSTAIN
    agree = (y == np.argmax(v, axis=1)) & answered
    return answered[None, :] * (agree[None, :] - top(v))


@dataclasses.dataclass(frozen=True)
class MonitorStatus(ResultMixin):
    """Where the certification of a deployment stands.

    Attributes:
        name: the monitor's name (its row in the ledger's ``monitors`` table).
        mechanism: what the service claims (``"gnmax"``, ``"confident-gnmax"``).
        claimed_sigma: σ of the claim tested (σ2 for Confident GNMax).
        answers: answers monitored so far (freshly drawn ones; cached copies are not new).
        last_charge_id: the last journal row read.
        log_e_value: log of the claim's e-process now; ``max_log_e_value`` its running max.
        threshold: ``log(1/β)``: the alarm level of the log e-value.
        confidence_level: 1 − β.
        alarm: whether the claim was rejected (the e-process reached 1/β at some time).
        alarm_at: the answer (1-based) at which it did, or None.
        mean_statistic: mean of ``Z`` at the claim (≤ 0 in expectation when honest).
        sigma_upper: the confidence sequence's upper bound on the noise (None: no bound yet).
        epsilon_claimed: ε(δ) the ledger charges one GNMax answer at the claimed σ
            (data-independent RDP, its δ and conversion; for Confident GNMax the answer step).
        epsilon_exact_claimed: the exact ε(δ) of one answer at the claimed σ on the fixed
            family of neighbouring histograms (None until a histogram was seen).
        epsilon_lower: the ε confidence sequence: a lower bound of the same exact ε over every
            σ ≤ ``sigma_upper``, hence of one answer's ε(δ) if the noise is Gaussian (module
            notes; None: no bound yet).
        delta: δ of both.
        updated: Unix time of this status.
        method: the test.
    """

    name: str
    mechanism: str
    claimed_sigma: float
    answers: int
    last_charge_id: int
    log_e_value: float
    max_log_e_value: float
    threshold: float
    confidence_level: float
    alarm: bool
    alarm_at: int | None
    mean_statistic: float
    sigma_upper: float | None
    epsilon_claimed: float
    epsilon_exact_claimed: float | None
    epsilon_lower: float | None
    delta: float
    updated: float
    method: str = (
        "plurality agreement vs exact GNMax probabilities; aGRAPA test supermartingale "
        "(anytime-valid); fixed-sequence noise grid"
    )


def _answer_epsilon(config: Any, sigma: float) -> float:
    """ε(δ) of one answer at noise σ under the ledger's conversion (data-independent RDP)."""
    cfg = dataclasses.replace(config, mechanism=GNMax(sigma), analysis="data-independent")
    worst, _ = cfg.costs(np.array([[1.0, 0.0]]), np.array([True]))
    return float(cfg.epsilon(worst[0]))


class DeploymentMonitor:
    """The e-processes of a deployment's claim and of its noise grid (module notes).

    Args:
        config: the service's :class:`~dpaudit.serve.ledger.LedgerConfig` (the claim).
        claimed_sigma: σ the caller expects the service to claim; a different claim is an
            error (None: take the service's).
        confidence_level: 1 − β of the alarm and of the confidence sequence (default
            :data:`CONFIDENCE_LEVEL`, β = 10⁻⁴).
        sigmas: the decreasing grid (default :func:`noise_grid`); the claim is added.
        probabilities: a shared :class:`TopProbabilities` over the same grid (optional).
        name: the monitor's name.

    Raises:
        MonitorError: the service claims another σ, or answers with another mechanism.
    """

    def __init__(
        self,
        config: Any,
        *,
        claimed_sigma: float | None = None,
        confidence_level: float = CONFIDENCE_LEVEL,
        sigmas: ArrayLike | None = None,
        probabilities: TopProbabilities | None = None,
        name: str = "ledger",
    ) -> None:
        mech = config.mechanism
        if not isinstance(mech, (GNMax, ConfidentGNMax)):
            raise MonitorError(
                f"the service answers with {type(mech).__name__}; the monitor tests GNMax and "
                "Confident GNMax deployments"
            )
        sigma = float(mech.sigma)
        if claimed_sigma is not None:
            want = check_positive("claimed_sigma", claimed_sigma)
            if not math.isclose(want, sigma, rel_tol=1e-12):
                raise MonitorError(
                    f"the service does not make that claim: it answers with {mech.name} at "
                    f"sigma={sigma:g} (its ledger charges for that), not sigma={want:g}"
                )
        self.config = config
        self.name = str(name)
        self.claimed_sigma = sigma
        self.confidence_level = check_confidence_level(confidence_level)
        self.threshold = math.log(1.0 / (1.0 - self.confidence_level))
        grid = noise_grid(sigma) if sigmas is None else np.asarray(sigmas, dtype=float).ravel()
        grid = np.unique(np.append(grid, sigma))[::-1].copy()
        if probabilities is None:
            probabilities = TopProbabilities(grid)
        elif not np.array_equal(probabilities.sigmas, grid):
            raise ValueError("probabilities must be over the monitor's grid (with the claim)")
        self.sigmas = grid
        self._top = probabilities
        self._claim = int(np.flatnonzero(grid == sigma)[0])
        self._process = BettingEProcess(-np.ones(grid.size))
        self._rejected_at = np.full(grid.size, -1, dtype=np.int64)
        self._sum_claim = 0.0
        self.last_charge_id = 0
        self.path: list[tuple[int, float]] = [(0, 0.0)]
        self._stride = _CHUNK
        self.epsilon_claimed = _answer_epsilon(config, sigma)
        self._shape: tuple[int, int] | None = None  # (teachers, classes) of the histograms
        self._shape_known = True

    @property
    def answers(self) -> int:
        """Answers monitored so far."""
        return self._process.count

    def observe(self, votes: ArrayLike, labels: ArrayLike) -> MonitorStatus:
        """Feed answers (in the order the service drew them) and return the status."""
        z = agreement_statistic(votes, labels, self._top)
        self._learn_shape(np.asarray(votes, dtype=np.float64))
        return self.observe_statistic(z)

    def _learn_shape(self, votes: np.ndarray) -> None:
        """The number of teachers (every histogram's total) and classes, for the ε bound;
        unknown when the totals differ or are not whole numbers."""
        if not self._shape_known or votes.shape[0] == 0:
            return
        totals = votes.sum(axis=1)
        t = float(totals[0])
        if not (np.all(totals == t) and t == round(t) and t >= 1):
            self._shape_known = False
            return
        shape = (int(t), int(votes.shape[1]))
        if self._shape is not None and self._shape != shape:
            self._shape_known = False
            return
        self._shape = shape

    def _exact_epsilon(self, sigma: float | None, *, floor: bool = False) -> float | None:
        """F(σ) (``floor``: the lower bound of its infimum up to σ, a grid value)."""
        if sigma is None or not self._shape_known or self._shape is None:
            return None
        from dpaudit.serve._monitor_epsilon import gnmax_answer_epsilon, gnmax_epsilon_floor

        delta = float(self.config.delta)
        if not floor:
            return gnmax_answer_epsilon(float(sigma), *self._shape, delta)
        table = gnmax_epsilon_floor(tuple(self.sigmas.tolist()), *self._shape, delta)
        return float(table[int(np.flatnonzero(self.sigmas == sigma)[0])])

    def observe_statistic(self, z: np.ndarray) -> MonitorStatus:
        """Feed the ``(G, n)`` statistic of :func:`agreement_statistic` over the grid."""
        z = np.asarray(z, dtype=np.float64)
        if z.ndim != 2 or z.shape[0] != self.sigmas.size:
            raise ValueError(f"z must have shape ({self.sigmas.size}, n), got {z.shape}")
        for start in range(0, z.shape[1], self._stride):
            part = z[:, start : start + self._stride]
            seen = self._process.count
            first = self._process.update(part, threshold=self.threshold)
            new = (self._rejected_at < 0) & (first >= 0)
            self._rejected_at[new] = seen + first[new] + 1
            self._sum_claim += float(part[self._claim].sum())
            self._record_path()
        return self.status()

    def _record_path(self) -> None:
        self.path.append((self._process.count, float(self._process.log_wealth[self._claim])))
        if len(self.path) > _PATH_POINTS:  # keep every other point and record half as often
            last = self.path[-1]
            self.path = self.path[::2]
            if self.path[-1] != last:
                self.path.append(last)
            self._stride *= 2

    def sigma_upper(self) -> float | None:
        """The smallest grid σ′ of the leading run of rejections (None: none yet)."""
        rejected = self._rejected_at >= 0
        if not rejected[0]:
            return None
        run = int(np.argmin(rejected)) if not rejected.all() else rejected.size
        return float(self.sigmas[run - 1])

    def status(self) -> MonitorStatus:
        """The current :class:`MonitorStatus`."""
        at = int(self._rejected_at[self._claim])
        upper = self.sigma_upper()
        n = self.answers
        return MonitorStatus(
            name=self.name,
            mechanism=self.config.mechanism.name,
            claimed_sigma=self.claimed_sigma,
            answers=n,
            last_charge_id=int(self.last_charge_id),
            log_e_value=float(self._process.log_wealth[self._claim]),
            max_log_e_value=float(self._process.max_log_wealth[self._claim]),
            threshold=self.threshold,
            confidence_level=self.confidence_level,
            alarm=at > 0,
            alarm_at=at if at > 0 else None,
            mean_statistic=self._sum_claim / n if n else 0.0,
            sigma_upper=upper,
            epsilon_claimed=self.epsilon_claimed,
            epsilon_exact_claimed=self._exact_epsilon(self.claimed_sigma),
            epsilon_lower=self._exact_epsilon(upper, floor=True),
            delta=float(self.config.delta),
            updated=time.time(),
        )


class _Reporter:
    """Writes the status to the ledger and logs the alarm once."""

    def __init__(self, ledger: LedgerBase, name: str) -> None:
        self._ledger = ledger
        self._name = name
        self._alarmed = False

    def __call__(self, status: MonitorStatus) -> None:
        if status.alarm and not self._alarmed:
            self._alarmed = True
            logger.error(
                "PRIVACY ALARM %s: the answers are less noisy than the claimed %s sigma=%g "
                "(e-value %.3g >= %.3g at answer %d; anytime-valid at confidence %g)",
                self._name, status.mechanism, status.claimed_sigma,
                math.exp(min(status.max_log_e_value, 700.0)), math.exp(status.threshold),
                status.alarm_at, status.confidence_level,
            )  # fmt: skip
        try:
            self._ledger.set_monitor_status(self._name, status.to_dict())
        except Exception as exc:
            logger.warning("could not store the monitor status in the ledger: %s", exc)


def _poll_loop(
    step: Callable[[], MonitorStatus],
    *,
    interval: float,
    duration: float | None,
    max_answers: int | None,
    stop_on_alarm: bool,
    on_status: Callable[[MonitorStatus], None] | None,
) -> MonitorStatus:
    deadline = None if duration is None else time.monotonic() + float(duration)
    while True:
        status = step()
        if on_status is not None:
            on_status(status)
        if (stop_on_alarm and status.alarm) or (
            max_answers is not None and status.answers >= max_answers
        ):
            return status
        if deadline is not None and time.monotonic() >= deadline:
            return status
        time.sleep(float(interval))


class LedgerMonitor:
    """Certify a deployment from its ledger: read the recorded answers incrementally.

    Args:
        ledger: the service's ledger (:meth:`open` opens a SQLite file).
        claimed_sigma, confidence_level, sigmas, probabilities: as :class:`DeploymentMonitor`.
        name: the monitor's row in the ledger's ``monitors`` table.
        batch: most charges read per poll.

    Example:
        >>> from dpaudit.serve import LedgerConfig, MemoryLedger, PredictionService
        >>> from dpaudit.attacks import fixed_histogram_interface
        >>> led = MemoryLedger(LedgerConfig(GNMax(4.0), (2.0,), 1e-5), global_budget=1e9)
        >>> svc = PredictionService(fixed_histogram_interface([20, 10, 0], GNMax(4.0)), led,
        ...                         noise_rng=0)
        >>> client = svc.authenticate(led.add_client("alice", 1e9))
        >>> _ = svc.predict(client, [[0.0]] * 200)
        >>> status = LedgerMonitor(led).poll()
        >>> status.answers, status.alarm
        (200, False)
    """

    def __init__(
        self,
        ledger: LedgerBase,
        *,
        claimed_sigma: float | None = None,
        confidence_level: float = CONFIDENCE_LEVEL,
        sigmas: ArrayLike | None = None,
        probabilities: TopProbabilities | None = None,
        name: str = "ledger",
        batch: int = 10_000,
    ) -> None:
        if not isinstance(ledger, LedgerBase):
            raise TypeError(f"ledger must be a dpaudit.serve ledger, got {type(ledger).__name__}")
        self.ledger = ledger
        self.monitor = DeploymentMonitor(
            ledger.config, claimed_sigma=claimed_sigma, confidence_level=confidence_level,
            sigmas=sigmas, probabilities=probabilities, name=name,
        )  # fmt: skip
        self._batch = check_positive_int("batch", batch)
        if len(ledger.answers(limit=1)) == 0 and ledger.account(GLOBAL_ACCOUNT).num_queries:
            raise MonitorError(
                "the service has answered but its ledger records no vote histograms: start it "
                "with --record-votes (the default) to monitor it"
            )
        self._report = _Reporter(ledger, self.monitor.name)

    @classmethod
    def open(cls, path: str, **kwargs: Any) -> LedgerMonitor:
        """A monitor of the SQLite ledger file ``path`` (written by ``dpaudit serve``).

        Raises:
            MonitorError: no such file, not a ledger, or a file it cannot read.
        """
        import sqlite3

        from dpaudit.serve.sqlite_ledger import SQLiteLedger

        try:
            ledger = SQLiteLedger.open(path)
            ledger.answers(limit=1)
        except (ValueError, OSError, sqlite3.Error) as exc:
            raise MonitorError(f"cannot read the ledger {str(path)!r}: {exc}") from None
        try:
            return cls(ledger, **kwargs)
        except BaseException:
            ledger.close()
            raise

    def poll(self) -> MonitorStatus:
        """Read every answer recorded since the last poll, update, report; return the status."""
        m = self.monitor
        while True:
            log = self.ledger.answers(m.last_charge_id, limit=self._batch)
            if len(log):
                m.observe(log.votes, log.labels)
            m.last_charge_id = log.last_charge_id
            if len(log) == 0 or len(np.unique(log.charge_ids)) < self._batch:
                break
        status = m.status()
        self._report(status)
        return status

    def run(
        self,
        *,
        interval: float = 1.0,
        duration: float | None = None,
        max_answers: int | None = None,
        stop_on_alarm: bool = False,
        on_status: Callable[[MonitorStatus], None] | None = None,
    ) -> MonitorStatus:
        """Poll every ``interval`` seconds until ``duration`` passed, ``max_answers`` were
        monitored, or (with ``stop_on_alarm``) the alarm was raised; return the last status."""
        return _poll_loop(
            self.poll, interval=interval, duration=duration, max_answers=max_answers,
            stop_on_alarm=stop_on_alarm, on_status=on_status,
        )  # fmt: skip

    def close(self) -> None:
        """Close the ledger."""
        self.ledger.close()


class ClientMonitor:
    """Certify a deployment with the monitor's own traffic: probe queries sent as an
    ordinary client under its own API key (charged by the ledger like any client).

    The answers tested are those received over HTTP; their histograms are the ones the
    service recorded for the monitor's charges (the response's ``charge_id``), so the
    operator's ledger must be readable. A received answer that differs from the recorded one,
    or a probe answered from the cache (no fresh noise), is an error.

    Args:
        url: the service's base URL.
        api_key: the monitor's API key (``dpaudit keys add monitor``).
        ledger: the service's ledger (or its SQLite path).
        queries: probe rows ``(m, d)``; each request sends ``batch`` of them, drawn with
            ``rng`` (a predictable choice: it never looks at the answers).
        batch: queries per request.
        rng: seed of the probe choice.
        claimed_sigma, confidence_level, sigmas, probabilities: as :class:`DeploymentMonitor`.
        name: the monitor's row in the ledger's ``monitors`` table.
        timeout: HTTP timeout in seconds.

    Raises:
        MonitorError: the service is unreachable, claims something else, or the ledger
            cannot be read.
    """

    def __init__(
        self,
        url: str,
        api_key: str,
        ledger: LedgerBase | str,
        queries: ArrayLike,
        *,
        batch: int = 64,
        rng: Any = None,
        claimed_sigma: float | None = None,
        confidence_level: float = CONFIDENCE_LEVEL,
        sigmas: ArrayLike | None = None,
        probabilities: TopProbabilities | None = None,
        name: str = "client",
        timeout: float = 30.0,
    ) -> None:
        from dpaudit._rng import as_generator
        from dpaudit.errors import require

        httpx = require("httpx", "serve")
        if not isinstance(api_key, str) or not api_key.strip():
            raise ValueError(f"api_key must be a non-empty string, got {api_key!r}")
        X = np.asarray(queries, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0 or not np.all(np.isfinite(X)):
            raise ValueError(f"queries must be a non-empty (m, d) array of finite numbers, got "
                             f"shape {X.shape}")  # fmt: skip
        self._owns_ledger = isinstance(ledger, str)
        if isinstance(ledger, str):
            ledger = LedgerMonitor.open(ledger, claimed_sigma=claimed_sigma).ledger
        self.ledger = ledger
        self.url = str(url).rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, timeout=timeout,
            headers={"Authorization": f"Bearer {api_key.strip()}"},
        )  # fmt: skip
        self._httpx = httpx
        try:
            info = self._request("GET", "/v1/info")
            mech = ledger.config.mechanism
            if info.get("mechanism") != mech.name or not math.isclose(
                float(info.get("sigma", math.nan)), float(mech.sigma), rel_tol=1e-12
            ):
                raise MonitorError(
                    f"the service at {self.url} publishes {info.get('mechanism')} sigma="
                    f"{info.get('sigma')}, but the ledger charges for {mech.name} sigma="
                    f"{mech.sigma:g}: not the ledger of this service"
                )
            self._request("GET", "/v1/budget")  # the key is valid (401/403 otherwise)
            if X.shape[1] != int(info["num_features"]):
                raise ValueError(f"queries must have {info['num_features']} features, got "
                                 f"{X.shape[1]}")  # fmt: skip
            self.monitor = DeploymentMonitor(
                ledger.config, claimed_sigma=claimed_sigma, confidence_level=confidence_level,
                sigmas=sigmas, probabilities=probabilities, name=name,
            )  # fmt: skip
        except BaseException:
            self._http.close()
            if self._owns_ledger:
                ledger.close()
            raise
        self._X = X
        self._batch = min(check_positive_int("batch", batch), int(info["max_batch"]))
        self._rng = as_generator(rng)
        self._report = _Reporter(ledger, self.monitor.name)

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            r = self._http.request(method, path, **kwargs)
        except self._httpx.HTTPError as exc:
            raise MonitorError(f"cannot reach the service at {self.url}: {exc}") from None
        try:
            body = r.json()
        except ValueError:
            body = {}
        if r.status_code != 200:
            raise MonitorError(
                f"the service at {self.url} refused {method} {path}: HTTP {r.status_code} "
                f"{body.get('error', '')}: {body.get('message', r.text[:200])}"
            )
        return body

    def probe(self) -> MonitorStatus:
        """Send one request of probes, test its answers, report; return the status."""
        rows = self._X[self._rng.integers(0, self._X.shape[0], size=self._batch)]
        body = self._request("POST", "/v1/predict", json={"queries": rows.tolist()})
        labels = np.asarray(body["labels"], dtype=np.int64)
        cid = body.get("charge_id")
        if cid is None or body.get("num_cached", 0):
            raise MonitorError(
                "the service answered probes from its answer cache (no fresh noise): probe "
                "distinct queries or turn the cache off"
            )
        log = self.ledger.answers(int(cid) - 1, limit=1)
        if len(log) != labels.size or log.last_charge_id != int(cid):
            raise MonitorError(
                f"charge {cid} has no recorded answers in the ledger (is it this service's "
                "ledger, with --record-votes?)"
            )
        if not np.array_equal(log.labels, labels):
            raise MonitorError(
                f"the answers received for charge {cid} differ from those the service recorded"
            )
        self.monitor.observe(log.votes, labels)
        self.monitor.last_charge_id = int(cid)
        status = self.monitor.status()
        self._report(status)
        return status

    def run(
        self,
        *,
        interval: float = 0.0,
        duration: float | None = None,
        max_answers: int | None = None,
        stop_on_alarm: bool = False,
        on_status: Callable[[MonitorStatus], None] | None = None,
    ) -> MonitorStatus:
        """Probe every ``interval`` seconds (as :meth:`LedgerMonitor.run`)."""
        return _poll_loop(
            self.probe, interval=interval, duration=duration, max_answers=max_answers,
            stop_on_alarm=stop_on_alarm, on_status=on_status,
        )  # fmt: skip

    def close(self) -> None:
        """Close the HTTP client (and the ledger, when this monitor opened it)."""
        self._http.close()
        if self._owns_ledger:
            self.ledger.close()
