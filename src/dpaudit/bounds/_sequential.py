"""Anytime-valid audits: test supermartingales for a DP claim and a confidence sequence for ε.

A fixed-sample audit must be sized in advance, and looking at its bound while it runs and
stopping when it looks good voids its guarantee. A *test supermartingale* does not have that
problem: it is a nonnegative process ``K_t`` with ``K_0 = 1`` whose expectation cannot grow
under the null, and Ville's inequality gives ``P(∃t: K_t ≥ 1/β) ≤ β`` — the test may look
after every observation and stop whenever it likes (González, Dulce-Rubio, Ramdas & Ribero
2025, "Sequentially Auditing Differential Privacy", arXiv:2509.07055; testing by betting,
Waudby-Smith & Ramdas 2023, JRSS-B, arXiv:2010.09686; Shafer 2021).

**The observation.** Draw ``X_t ~ M(a′)`` and ``Y_t ~ M(a)`` on a neighbouring pair and
apply a *witness* ``h_t`` with values in ``[0, 1]`` (the indicator of an event, or a soft
score) chosen from the past only (predictable). If ``M`` is (ε, δ)-DP then
``E[h(M(a′))] ≤ e^ε E[h(M(a))] + δ`` for every such ``h`` (integrate the DP inequality over
the level sets of ``h``), so

    Z_t(ε) = h_t(X_t) − e^ε h_t(Y_t) − δ ∈ [−e^ε − δ, 1 − δ]

has conditional mean ≤ 0 under the claim. Betting a predictable fraction
``λ_t ∈ [0, c/(e^ε + δ)]`` (``c < 1``) of the current wealth on it gives the test
supermartingale ``K_t(ε) = Π_{s ≤ t} (1 + λ_s Z_s(ε))``.

**Betting strategies.** ``"agrapa"`` (default): the approximate growth-rate adaptive bet
``λ_t = μ̂_{t−1} / m̂₂_{t−1}`` from the running mean and second moment of the past ``Z``
(Waudby-Smith & Ramdas 2023, §B.3, "aGRAPA"), truncated to ``[0, c/(e^ε + δ)]``; every bet is
a function of past prefix sums, so a whole batch is updated with vector operations.
``"ons"``: online Newton step on the log-wealth (Cutkosky & Orabona 2018, "Black-box
reductions for parameter-free online learning in Banach spaces", COLT, arXiv:1802.06293; as
used for testing by Shekhar & Ramdas 2023, arXiv:2112.09162, Alg. 1), bets in ``[0, c]`` on the
normalised ``Z/(e^ε + δ) ∈ [−1, …]``; sequential, so slower.

**Confidence sequence for ε.** Each ε′ of an increasing grid has its own test
supermartingale. The lower bound at time ``t`` is the largest grid ε′ such that every grid
value up to it has been rejected at some time ``≤ t`` (fixed-sequence testing). If the
mechanism is (ε*, δ)-DP, the bound can exceed ε* only if the first grid value ``≥ ε*`` — a
true null — is rejected, which happens with probability ``≤ β`` over the whole stream: the
bound holds at every time simultaneously, hence at any stopping time, with no correction for
the grid (the order of the tests is fixed in advance).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpaudit._results import ResultMixin
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_in_range,
    check_positive,
    check_positive_int,
)
from dpaudit.bounds._sequential_kernel import compiled_agrapa, compiled_paired_agrapa

__all__ = [
    "BETTING_STRATEGIES",
    "BettingEProcess",
    "DPClaimEProcess",
    "SequentialAudit",
    "epsilon_grid",
]

BETTING_STRATEGIES = ("agrapa", "ons")
_MAX_BET = 0.5  # c: bets at most half the way to ruin (Waudby-Smith & Ramdas 2023, §5)
_CHUNK = 2**16  # grid points × observations per vectorised step (stays in cache: ~1.5× faster)
_ONS_CONSTANT = 2.0 / (2.0 - math.log(3.0))  # Cutkosky & Orabona 2018, Alg. 1 for betting
_MAX_EPSILON = 50.0  # e^ε must stay a usable float in the statistic e^ε·h(Y)
_MAX_POINTS = 100_000  # grid points (each a test supermartingale updated per observation)
_BLOCK = 4096  # pairs per vector step of update_until_rejected (~7 MB at the default grid)


def epsilon_grid(claimed_epsilon: float, *, points: int = 200, top: float | None = None):
    """The default ε grid of :class:`DPClaimEProcess`: ``points`` values evenly spaced on
    ``[0, top]`` (default ``top = 2·claimed_epsilon + 1``), with the claim itself added.

    Example:
        >>> g = epsilon_grid(1.0, points=5)
        >>> g.tolist()
        [0.0, 0.75, 1.0, 1.5, 2.25, 3.0]
    """
    claimed = check_in_range("claimed_epsilon", claimed_epsilon, 0.0, _MAX_EPSILON,
                             low_inclusive=True, high_inclusive=True)  # fmt: skip
    if check_positive_int("points", points, maximum=_MAX_POINTS) < 2:
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    top = 2.0 * claimed + 1.0 if top is None else check_positive("top", top)
    if top > 2 * _MAX_EPSILON + 1:
        raise ValueError(f"top must be at most {2 * _MAX_EPSILON + 1:g}, got {top!r}")
    return np.unique(np.append(np.linspace(0.0, top, int(points)), claimed))


class BettingEProcess:
    """Test supermartingales for ``H0: E[Z_t | past] ≤ 0`` with ``Z_t ∈ [lower, upper]``, one
    per column of a family, updated from a stream.

    Each column ``j`` receives its own observations ``z[j, t]`` (with their own bounds
    ``lower[j] < 0 < upper[j]``) and bets ``λ_t ∈ [0, c/|lower_j|]`` on them with the
    strategy named; ``log_wealth[j]`` is ``log K_t`` and ``max_log_wealth[j]`` its running
    maximum. Under the null ``P(sup_t K_t ≥ 1/β) ≤ β`` (Ville's inequality), for each column.

    Args:
        lower: the lowest possible value of each column's observations (< 0).
        strategy: ``"agrapa"`` (vectorised, default) or ``"ons"``.
        max_bet: the truncation ``c ∈ (0, 1)`` of the bets as a fraction of ``1/|lower|``.

    Example:
        >>> e = BettingEProcess([-1.0])
        >>> _ = e.update(np.full((1, 200), 0.2))  # mean 0.2 > 0: evidence grows
        >>> bool(e.max_log_wealth[0] > math.log(20))
        True
    """

    def __init__(self, lower: ArrayLike, *, strategy: str = "agrapa", max_bet: float = _MAX_BET):
        low = check_array("lower", lower, ndim=1)
        if np.any(low >= 0):
            raise ValueError(f"lower must be < 0 in every column, got {low.tolist()}")
        self.strategy = check_choice("strategy", strategy, BETTING_STRATEGIES)
        max_bet = check_in_range("max_bet", max_bet, 0.0, 1.0)
        self.scale = -low  # Z / scale ≥ −1
        self.max_bet = float(max_bet)
        g = low.size
        self.count = 0
        self._bet_count = 0.0  # observations (and pseudo-observations) the bets learn from
        self._sum = np.zeros(g)  # Σ z/scale
        self._sum_sq = np.zeros(g)  # Σ (z/scale)²
        self._ons_bet = np.zeros(g)
        self._ons_grad_sq = np.ones(g)  # 1 + Σ g²
        self.log_wealth = np.zeros(g)
        self.max_log_wealth = np.zeros(g)

    def update(self, z: ArrayLike, *, threshold: float | None = None):
        """Feed observations ``z`` of shape ``(columns, n)`` in time order.

        Args:
            z: the new observations (each column within its declared range).
            threshold: a log-wealth level; when given, returns for each column the index in
                this batch (0-based) at which the running maximum first reached it, or -1.

        Returns:
            ``None``, or the first-crossing indices when ``threshold`` is given.
        """
        z = np.asarray(z, dtype=float)
        if z.ndim != 2 or z.shape[0] != self.scale.size:
            raise ValueError(f"z must have shape ({self.scale.size}, n), got {z.shape}")
        y = z / self.scale[:, None]
        if np.any(y < -1.0 - 1e-12):
            raise ValueError("z has values below the declared lower bound")
        crossing = np.full(self.scale.size, -1, dtype=np.int64)
        step = max(_CHUNK // max(self.scale.size, 1), 1)
        for start in range(0, y.shape[1], step):
            part = y[:, start : start + step]
            path = self._agrapa(part) if self.strategy == "agrapa" else self._ons(part)
            if threshold is not None:
                hit = np.maximum.accumulate(path, axis=1) >= threshold
                first = np.where(hit.any(axis=1), hit.argmax(axis=1) + start, -1)
                crossing = np.where((crossing < 0) & (first >= 0), first, crossing)
            if path.shape[1]:
                self.max_log_wealth = np.maximum(self.max_log_wealth, path.max(axis=1))
                self.log_wealth = path[:, -1].copy()
        return crossing if threshold is not None else None

    def restart_bets(
        self, mean: ArrayLike | None = None, second: ArrayLike | None = None, weight: float = 0.0
    ) -> None:
        """Forget what the bets learnt (the wealth is kept): from now on they learn from the
        new observations only, optionally seeded with ``weight`` pseudo-observations of the
        given per-column ``mean`` and ``second`` moment of ``z`` (unscaled). A restart at a
        time fixed by the past, with a seed computed from the past, keeps every bet
        predictable, so the wealth stays a test supermartingale; use it when the witness
        changes (a new event whose statistic has another mean).

        Example:
            >>> e = BettingEProcess([-1.0])
            >>> _ = e.update(np.full((1, 100), -0.5))  # the old event: bets fall to 0
            >>> e.restart_bets(mean=[0.2], second=[0.3], weight=8)
            >>> _ = e.update(np.full((1, 50), 0.2))  # the new one: bets at once
            >>> bool(e.log_wealth[0] > 2.0)
            True
        """
        weight = float(weight)
        if not weight >= 0.0:
            raise ValueError(f"weight must be >= 0, got {weight!r}")
        self._sum, self._sum_sq = np.zeros(self.scale.size), np.zeros(self.scale.size)
        self._ons_bet, self._ons_grad_sq = np.zeros(self.scale.size), np.ones(self.scale.size)
        self._bet_count = 0.0
        if weight > 0.0:
            if mean is None or second is None:
                raise ValueError("a restart with weight > 0 needs mean and second")
            m = check_array("mean", mean, ndim=1) / self.scale
            v = check_array("second", second, ndim=1) / self.scale**2
            if m.size != self.scale.size or v.size != self.scale.size:
                raise ValueError(f"mean and second must have {self.scale.size} values")
            self._sum, self._sum_sq, self._bet_count = weight * m, weight * v, weight

    def _agrapa(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """aGRAPA bets from past prefix sums (one pseudo-observation at mean 0, second moment
        1/4 regularises the first bets), then the log-wealth path: one compiled pass
        (:mod:`dpaudit.bounds._sequential_kernel`) when numba is installed, else
        :meth:`_agrapa_numpy`."""
        kernel = compiled_agrapa()
        if kernel is None:
            return self._agrapa_numpy(y)
        path = kernel(np.ascontiguousarray(y), self._sum, self._sum_sq, float(self._bet_count),
                      self.log_wealth.copy(), self.max_bet)  # fmt: skip
        self.count += y.shape[1]
        self._bet_count += y.shape[1]
        return path

    def _agrapa_numpy(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """:meth:`_agrapa` vectorised with NumPy (prefix sums over the batch)."""
        n = y.shape[1]
        before = np.cumsum(y, axis=1) - y + self._sum[:, None]
        before_sq = np.cumsum(y * y, axis=1) - y * y + self._sum_sq[:, None]
        k = self._bet_count + np.arange(n) + 1.0  # past observations + the pseudo-observation
        mean = before / k
        second = (before_sq + 0.25) / k
        bet = np.clip(mean / second, 0.0, self.max_bet)
        path = self.log_wealth[:, None] + np.cumsum(np.log1p(bet * y), axis=1)
        self._sum += y.sum(axis=1)
        self._sum_sq += (y * y).sum(axis=1)
        self.count += n
        self._bet_count += n
        return path

    def _ons(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        path = np.empty_like(y)
        wealth = self.log_wealth.copy()
        bet, grad_sq = self._ons_bet, self._ons_grad_sq
        for t in range(y.shape[1]):
            yt = y[:, t]
            gain = 1.0 + bet * yt
            wealth += np.log(gain)
            path[:, t] = wealth
            g = yt / gain
            grad_sq += g * g
            bet = np.clip(bet + _ONS_CONSTANT * g / grad_sq, 0.0, self.max_bet)
        self._ons_bet, self._ons_grad_sq = bet, grad_sq
        self.count += y.shape[1]
        self._bet_count += y.shape[1]
        self._sum += y.sum(axis=1)
        self._sum_sq += (y * y).sum(axis=1)
        return path


@dataclasses.dataclass(frozen=True)
class SequentialAudit(ResultMixin):
    """Where a sequential audit of an (ε, δ) claim stands.

    Attributes:
        epsilon: the ε lower bound of the confidence sequence (valid at every stopping time,
            at ``confidence_level``); the grid's top when the whole grid is rejected (the
            truth is then above it: ``grid_top`` says so).
        claimed_epsilon: the ε of the claim tested.
        delta: δ of the claim and of the bound.
        rejects_claim: whether the claim's test supermartingale has reached ``1/β``.
        rejected_at: the observation (1-based) at which it did, or ``None``.
        observations: the pairs seen so far.
        log_e_value: log of the claim's e-process now; ``max_log_e_value`` its running max.
        confidence_level: 1 − β.
        strategy: the betting strategy.
        grid_top: the largest ε of the grid (a bound equal to it means "at least this").
    """

    epsilon: float
    claimed_epsilon: float
    delta: float
    rejects_claim: bool
    rejected_at: int | None
    observations: int
    log_e_value: float
    max_log_e_value: float
    confidence_level: float
    strategy: str
    grid_top: float
    method: str = "test supermartingales by betting; fixed-sequence ε grid (anytime-valid)"


def _indicator(values: ArrayLike) -> ArrayLike:
    """Boolean arrays (an event's indicator) as 0/1 floats; anything else unchanged."""
    arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
    return arr.astype(float) if arr.dtype == np.bool_ else values


#: Relative offset of the grid point :class:`DPClaimEProcess` adds just above the claim.
_ABOVE = 1e-9


class DPClaimEProcess:
    """Anytime-valid test of an (ε, δ)-DP claim and confidence sequence for ε, from paired
    witness values (module docstring).

    Args:
        claimed_epsilon: the claim tested.
        delta: δ of the claim and of the bound.
        epsilons: the increasing ε grid of the confidence sequence (default
            :func:`epsilon_grid`); the claim is added to it.
        confidence_level: 1 − β; the claim is rejected when its e-process reaches ``1/β``.
        strategy: one of :data:`BETTING_STRATEGIES`.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> e = DPClaimEProcess(0.5)  # Bernoulli(0.9) vs Bernoulli(0.1): true ε = log 9
        >>> r = e.update(rng.random(400) < 0.9, rng.random(400) < 0.1)
        >>> r.rejects_claim, 0.5 < r.epsilon < math.log(9)
        (True, True)
    """

    def __init__(
        self,
        claimed_epsilon: float,
        delta: float = 0.0,
        *,
        epsilons: Sequence[float] | None = None,
        confidence_level: float = 0.95,
        strategy: str = "agrapa",
    ):
        claimed = check_in_range("claimed_epsilon", claimed_epsilon, 0.0, _MAX_EPSILON,
                                 low_inclusive=True, high_inclusive=True)  # fmt: skip
        self.delta = check_delta(delta)
        self.confidence_level = check_confidence_level(confidence_level)
        grid = (
            epsilon_grid(claimed) if epsilons is None else check_array("epsilons", epsilons, ndim=1)
        )
        grid = np.unique(np.append(np.ravel(grid), claimed))
        if grid[0] < 0 or grid[-1] > _MAX_EPSILON:
            raise ValueError(f"epsilons must lie in [0, {_MAX_EPSILON:g}], got {grid.tolist()}")
        if grid.size > _MAX_POINTS:
            raise ValueError(f"epsilons must have at most {_MAX_POINTS} values, got {grid.size}")
        # Rejecting the claim shows ε > claim, but a bound read off the grid says only ε ≥
        # claim when the next point up is not rejected. A point just above the claim (its
        # e-process is all but the claim's) makes the bound exceed the claim whenever the
        # claim is rejected; one more test point never costs validity (the bound is wrong
        # only if the first grid point at or above the true ε rejects: probability ≤ β).
        above = claimed * (1.0 + _ABOVE) + _ABOVE
        if above <= _MAX_EPSILON and not np.any((grid > claimed) & (grid <= above)):
            grid = np.unique(np.append(grid, above))
        self.claimed_epsilon = claimed
        self.epsilons = grid
        self._claim = int(np.searchsorted(grid, claimed))
        self._factor = np.exp(grid)
        self._process = BettingEProcess(-(self._factor + self.delta), strategy=strategy)
        self.threshold = math.log(1.0 / (1.0 - self.confidence_level))
        self._rejected_at = np.full(grid.size, -1, dtype=np.int64)

    @property
    def observations(self) -> int:
        """Pairs seen so far."""
        return self._process.count

    def update(self, positives: ArrayLike, negatives: ArrayLike) -> SequentialAudit:
        """Feed paired witness values and return where the audit stands.

        Args:
            positives: ``h_t(X_t)`` in [0, 1] (booleans: an event's indicator) for outputs
                of the input the witness signals (``X_t ~ M(a′)``), in time order.
            negatives: ``h_t(Y_t)`` in [0, 1] for outputs of its neighbour, same length.

        Raises:
            ValueError: values outside [0, 1] or lengths that differ.
        """
        pos, neg = self._checked(positives, negatives)
        seen = self._process.count
        first = self._paired_update(pos, neg)
        new = (self._rejected_at < 0) & (first >= 0)
        self._rejected_at[new] = seen + first[new] + 1
        return self.result()

    def _paired_update(self, pos: NDArray[np.float64], neg: NDArray[np.float64]):
        """Every grid column's bets on ``pos − e^ε·neg − δ``; the first crossings of the
        rejection level. aGRAPA with numba: one compiled pass that forms the statistics as it
        goes (the same numbers as forming them first); otherwise the generic update."""
        p = self._process
        kernel = compiled_paired_agrapa() if p.strategy == "agrapa" else None
        if kernel is None:
            z = pos[None, :] - self._factor[:, None] * neg[None, :] - self.delta
            return p.update(z, threshold=self.threshold)
        first = kernel(np.ascontiguousarray(pos), np.ascontiguousarray(neg), self._factor,
                       self.delta, p.scale, p._sum, p._sum_sq, float(p._bet_count),
                       p.log_wealth, p.max_log_wealth, self.threshold, p.max_bet)  # fmt: skip
        p.count += pos.size
        p._bet_count += pos.size
        return first

    def update_until_rejected(
        self, positives: ArrayLike, negatives: ArrayLike, *, look: int = 1
    ) -> SequentialAudit:
        """Feed paired witness values in time order, looking after every ``look`` pairs, and
        stop at the end of the first look at which the claim is rejected (the pairs after
        that look are not fed). The same as :meth:`update` on each look's pairs in turn until
        the result rejects — the same wealth, bets, rejection times and bound — in a few
        large vector steps: pairs are fed in blocks of whole looks, and a block that
        overshoots the rejecting look is fed again, up to that look, from the state saved
        before it. If the claim is already rejected, only the first look is fed.

        Args:
            positives: as for :meth:`update`.
            negatives: as for :meth:`update`, same length.
            look: pairs between two looks (a positive integer).

        Example:
            >>> rng = np.random.default_rng(0)
            >>> e = DPClaimEProcess(0.5)  # Bernoulli(0.9) vs Bernoulli(0.1): true ε = log 9
            >>> r = e.update_until_rejected(rng.random(4000) < 0.9, rng.random(4000) < 0.1,
            ...                             look=32)
            >>> r.rejects_claim, r.observations % 32, r.observations < 4000
            (True, 0, True)
        """
        look = check_positive_int("look", look)
        pos, neg = self._checked(positives, negatives)
        if self.result().rejects_claim:
            return self.update(pos[:look], neg[:look])
        seen, n = self.observations, pos.size
        block = look * max(1, _BLOCK // look)
        for start in range(0, n, block):
            saved = self._saved()
            state = self.update(pos[start : start + block], neg[start : start + block])
            if state.rejects_claim:
                end = start + ((state.rejected_at - seen - 1 - start) // look + 1) * look
                if end < min(start + block, n):
                    self._restore(saved)
                    state = self.update(pos[start:end], neg[start:end])
                return state
        return self.result()

    def _saved(self) -> tuple[dict, np.ndarray]:
        """Everything an update changes (the bets' sums, the wealth, the rejection times)."""
        state = vars(self._process)
        return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()}, (
            self._rejected_at.copy()
        )

    def _restore(self, saved: tuple[dict, np.ndarray]) -> None:
        vars(self._process).update(saved[0])
        self._rejected_at = saved[1]

    def _checked(self, positives: ArrayLike, negatives: ArrayLike):
        pos = check_array("positives", _indicator(positives), ndim=1, allow_empty=True)
        neg = check_array("negatives", _indicator(negatives), ndim=1, allow_empty=True)
        if pos.shape != neg.shape:
            raise ValueError(
                f"positives and negatives must have the same length, got {pos.size} and {neg.size}"
            )
        for name, v in (("positives", pos), ("negatives", neg)):
            if v.size and (v.min() < 0 or v.max() > 1):
                raise ValueError(f"{name} must lie in [0, 1], got values in "
                                 f"[{v.min()}, {v.max()}]")  # fmt: skip
        return pos, neg

    def restart_bets(
        self,
        p_pos: float | None = None,
        p_neg: float | None = None,
        weight: float = 0.0,
        q_pos: float | None = None,
        q_neg: float | None = None,
    ) -> None:
        """A new witness from now on (a new event or soft witness, chosen from the past): the
        bets forget the old one's statistics, optionally seeded with ``weight``
        pseudo-observations of the new one's estimated moments ``p_pos = E h(X)``,
        ``p_neg = E h(Y)`` and ``q_pos = E h(X)²``, ``q_neg = E h(Y)²`` (estimated on outputs
        the test does not bet on; an event's ``q`` is its ``p``, the default). Predictable,
        so the test stays valid (:meth:`BettingEProcess.restart_bets`).

        Example:
            >>> e = DPClaimEProcess(0.5, epsilons=[0.5])
            >>> e.restart_bets(0.5, 0.1, weight=40, q_pos=0.3, q_neg=0.02)  # a ramp's moments
            >>> e.update(np.full(30, 0.6), np.full(30, 0.05)).rejects_claim
            True
        """
        if weight == 0.0:
            self._process.restart_bets()
            return
        pp = check_in_range("p_pos", p_pos, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
        pn = check_in_range("p_neg", p_neg, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
        for name, q, p in (("q_pos", q_pos, pp), ("q_neg", q_neg, pn)):
            if q is not None and not p * p - 1e-12 <= q <= p + 1e-12:
                raise ValueError(f"{name} must lie in [p_{name[2:]}², p_{name[2:]}] (a second "
                                 f"moment of values in [0, 1]), got {q!r}")  # fmt: skip
        qp = pp if q_pos is None else float(q_pos)  # an event: h² = h
        qn = pn if q_neg is None else float(q_neg)
        f, d = self._factor, self.delta
        mean = pp - f * pn - d  # E Z for independent X, Y
        second = qp - 2 * f * pp * pn + f * f * qn - 2 * d * (pp - f * pn) + d * d  # E Z²
        self._process.restart_bets(mean, second, weight)

    def lower_bound(self) -> float:
        """The largest grid ε whose every predecessor (and itself) has been rejected."""
        rejected = self._rejected_at >= 0
        if not rejected[0]:
            return 0.0
        run = int(np.argmin(rejected)) if not rejected.all() else rejected.size
        return float(self.epsilons[run - 1])

    def result(self) -> SequentialAudit:
        """The current :class:`SequentialAudit`."""
        at = int(self._rejected_at[self._claim])
        return SequentialAudit(
            self.lower_bound(), self.claimed_epsilon, self.delta, at > 0,
            at if at > 0 else None, self.observations,
            float(self._process.log_wealth[self._claim]),
            float(self._process.max_log_wealth[self._claim]), self.confidence_level,
            self._process.strategy, float(self.epsilons[-1]),
        )  # fmt: skip
