"""Flower's DP strategy wrappers as installed (flwr 1.42, out of process), with canary clients.

Flower (Beutel et al. 2020, arXiv:2007.14390) ships central-DP wrappers around a strategy:
``DifferentialPrivacyServerSideFixedClipping`` clips each client's update to C on the server,
``DifferentialPrivacyClientSideFixedClipping`` has each client clip it (``fixedclipping_mod``);
both then let the inner strategy aggregate and add Gaussian noise of standard deviation
``σC/m`` to the aggregate, ``m = num_sampled_clients`` (Flower's ``compute_stdv``, after
McMahan et al. 2018, arXiv:1710.06963). Flower has no accountant: its stated calibration is the
guarantee, the Gaussian mechanism with multiplier σ on the sum of m clipped updates whose
average is taken, composed over T rounds. Flower's server divides by the clients that answer,
so its denominator is m only when all m sampled clients take part with equal weight: a
client is *replaced*, not removed, and replacing one clipped update moves the sum by up to 2C.
:meth:`FlowerDPFedAvg.claim` is that analysis under replace-one: all clients every round
(multiplier σ/2, q = 1; exact ε of μ = 2√T/σ, Dong, Roth & Su 2022, arXiv:1905.02383) or
Flower's fixed-size sampler (m of P without replacement; Wang, Balle & Kasiviswanathan 2019,
arXiv:1808.00087), via dp-accounting.

The adaptive-clipping wrappers (``wrapper = "server-side-adaptive"`` or
``"client-side-adaptive"``: ``DifferentialPrivacyServerSideAdaptiveClipping``,
``DifferentialPrivacyClientSideAdaptiveClipping`` with its ``adaptiveclipping_mod``) follow
Andrew, Thakkar, McMahan & Ramaswamy 2021 ("Differentially Private Learning with Adaptive
Clipping", arXiv:1905.03871, Alg. 1 and §3): the clipping norm starts at C and moves
geometrically, ``C ← C·exp(−η(b̄ − γ))``, with b̄ a noisy fraction of the round's clients
(count noise σ_b, Flower's default m/20), and the update's noise multiplier is raised to
``z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2)`` so that update and count together spend the budget of one
Gaussian mechanism of multiplier z. The claim is that Gaussian mechanism, as for the fixed
wrappers. As installed, both adaptive wrappers scale the round's noise with the norm *after*
its update (``C_{t+1}``) while the updates were clipped to ``C_t``, and b̄ counts the clipped
updates where Andrew et al.'s counts the unclipped ones (the norm moves the wrong way); each
round's :attr:`FedAvgRun.clip_norms` records both norms.

Flower's packages pin fastapi < 0.139, starlette < 1.4 and typer < 0.21, so it runs in
``.venvs/flower`` (``make venv-flower``; the wrappers work on numpy parameters, no torch)
through :class:`dpaudit.systems._external.ExternalLibrary`. dpaudit trains the clients
(softmax regression, :func:`~dpaudit.systems.federated.local_update`) and sends each sampled
client's parameters to the worker, which runs Flower's own sampler, clipping mod, wrapper and
``FedAvg`` (``_handler_flower.py``). Flower's noise and sampler draw from the global
``numpy.random`` and ``random`` generators; the worker seeds them from the run's seed.

``weighting`` is what the clients report as their example counts, which ``FedAvg`` weights
the average by: ``"uniform"`` (every client reports 1: the average of the m updates) or
``"examples"`` (each client its real count, a canary client ``canary_examples``). Canary
clients (Andrew et al. 2024, arXiv:2302.03098) send ``θ + s·C·c_j``; a canary left out is
replaced by a client that sends ``θ + s·C·c'_j`` for a fresh direction ``c'_j`` never tested,
with the same example count (replace-one). It cannot send ``θ`` unchanged: Flower's clipping
divides C by the update's norm and raises ``ZeroDivisionError`` on a zero update (both
wrappers; the docs page has the reproducer).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import Claim, Curve
from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_probability,
)
from dpaudit.mechanisms.values import SubsampledGaussian
from dpaudit.systems._external import ExternalLibrary
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.federated._clients import FederatedData, local_update
from dpaudit.systems.federated._fedavg import (
    FedAvgRun,
    FedAvgVariant,
    _check_training_inputs,
    _sampled_gaussian_curve,
    accuracy,
)

__all__ = [
    "ADAPTIVE_WRAPPERS",
    "FLOWER",
    "FLOWER_SAMPLERS",
    "FLOWER_WRAPPERS",
    "WEIGHTINGS",
    "FlowerCell",
    "FlowerDPFedAvg",
]  # fmt: skip

#: The out-of-process library: ``.venvs/flower``, built by ``make venv-flower``.
FLOWER = ExternalLibrary("flower", "flwr", str(Path(__file__).with_name("_handler_flower.py")),
                         "venv-flower")  # fmt: skip
#: Flower's samplers: every client, or its client manager's m of P (fixed size).
FLOWER_SAMPLERS: tuple[str, ...] = ("all", "fixed")
#: The central-DP wrappers: fixed clipping and adaptive clipping, on the server or the clients.
FLOWER_WRAPPERS: tuple[str, ...] = (
    "server-side", "client-side", "server-side-adaptive", "client-side-adaptive"
)  # fmt: skip
#: The adaptive-clipping wrappers among them.
ADAPTIVE_WRAPPERS: frozenset[str] = frozenset({"server-side-adaptive", "client-side-adaptive"})
#: What the clients report as example counts (FedAvg's weights).
WEIGHTINGS: tuple[str, ...] = ("uniform", "examples")

_SOURCE = (
    "Flower's stated calibration (noise σC/m on the average of m updates clipped to C; "
    "McMahan, Ramage, Talwar & Zhang 2018, arXiv:1710.06963); RDP of the sampled Gaussian via "
    "dp-accounting (Mironov, Talwar & Zhang 2019, arXiv:1908.10530; Wang, Balle & "
    "Kasiviswanathan 2019, arXiv:1808.00087); conversion Balle et al. 2020 (arXiv:1905.09982)"
)
_ADAPTIVE_SOURCE = (
    "; adaptive clipping: update noise z_Δ and count noise σ_b composed to z (Andrew, Thakkar, "
    "McMahan & Ramaswamy 2021, arXiv:1905.03871, §3)"
)
_AS_INSTALLED = FedAvgVariant("as-installed", "Flower's DP wrapper as installed", None)


@dataclasses.dataclass(frozen=True)
class FlowerCell:
    """The settings cell of Flower's DP wrappers (``SYSTEMS.get("flower-dp")(cell)``).

    Attributes:
        rounds: T.
        clients_per_round: m, ``num_sampled_clients`` (every client under ``"all"``).
        population: P, the registered clients (real plus canary clients).
        sampling: ``"all"`` or ``"fixed"`` (Flower's client manager; :data:`FLOWER_SAMPLERS`).
        claim_sampling: the sampler the claim assumes (None: the one used); any other value is
            refused.
        noise_multiplier: σ.
        client_learning_rate: η_c of the clients' local steps.
        local_steps: local full-batch steps per round.
        clip_norm: C (the adaptive wrappers' initial clipping norm).
        wrapper: ``"server-side"`` or ``"client-side"`` fixed clipping, or their adaptive
            versions (:data:`FLOWER_WRAPPERS`).
        weighting: ``"uniform"`` or ``"examples"`` (:data:`WEIGHTINGS`).
        canary_examples: the example count a canary client reports (``"examples"``).
        target_clipped_quantile: γ of the adaptive wrappers (Flower's default 0.5).
        clip_norm_lr: η of the adaptive wrappers' norm update (Flower's default 0.2).
        clipped_count_stddev: σ_b of the adaptive wrappers' count (None: Flower's m/20).
    """

    rounds: int = 20
    clients_per_round: int = 100
    population: int = 1000
    sampling: str = "fixed"
    claim_sampling: str | None = None
    clip_norm: float = 1.0
    noise_multiplier: float = 1.0
    client_learning_rate: float = 0.5
    local_steps: int = 1
    wrapper: str = "server-side"
    weighting: str = "uniform"
    canary_examples: int = 16
    target_clipped_quantile: float = 0.5
    clip_norm_lr: float = 0.2
    clipped_count_stddev: float | None = None

    def __post_init__(self) -> None:
        check_positive_int("rounds", self.rounds)
        m = check_positive_int("clients_per_round", self.clients_per_round)
        p = check_positive_int("population", self.population)
        if self.sampling not in FLOWER_SAMPLERS:
            raise ValueError(
                f"sampling={self.sampling!r} is not a sampler Flower runs: its client manager "
                f"samples a fixed number of clients per round ({' | '.join(FLOWER_SAMPLERS)})"
            )
        if self.claim_sampling is not None and self.claim_sampling != self.sampling:
            raise ValueError(
                f"claim_sampling={self.claim_sampling!r} is not the sampler Flower uses "
                f"(sampling={self.sampling!r}): the claim would not describe it"
            )
        if self.sampling == "all" and p != m:
            raise ValueError(
                f"population={p} clients (real plus canary clients) must equal the "
                f"clients_per_round={m} slots of sampling='all' (every client every round)"
            )
        if m > p:
            raise ValueError(f"clients_per_round={m} exceeds the population={p} clients")
        check_positive("clip_norm", self.clip_norm)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("client_learning_rate", self.client_learning_rate)
        check_positive_int("local_steps", self.local_steps)
        check_choice("wrapper", self.wrapper, FLOWER_WRAPPERS)
        check_choice("weighting", self.weighting, WEIGHTINGS)
        check_nonneg_int("canary_examples", self.canary_examples)
        check_probability("target_clipped_quantile", self.target_clipped_quantile)
        check_positive("clip_norm_lr", self.clip_norm_lr)
        if self.clipped_count_stddev is not None:
            check_positive("clipped_count_stddev", self.clipped_count_stddev)
        if self.wrapper not in ADAPTIVE_WRAPPERS:
            given = {f: getattr(self, f) for f in _ADAPTIVE_FIELDS}
            moved = [f"{f}={v!r}" for f, v in given.items() if v != _ADAPTIVE_FIELDS[f]]
            if moved:
                raise ValueError(
                    f"{', '.join(moved)} apply only to the adaptive-clipping wrappers, not to "
                    f"wrapper={self.wrapper!r}"
                )
        elif self.noise_multiplier >= 2 * self.count_noise:
            raise ValueError(
                f"noise_multiplier={self.noise_multiplier} must be below twice the count's "
                f"noise clipped_count_stddev={self.count_noise:g} (Flower's default m/20): "
                f"the update's noise z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2) would not exist"
            )

    @property
    def sampling_rate(self) -> float:
        """q = m/P (1 under ``"all"``)."""
        return self.clients_per_round / self.population

    @property
    def count_noise(self) -> float:
        """σ_b, the adaptive wrappers' count noise (Flower's default m/20)."""
        sd = self.clipped_count_stddev
        return self.clients_per_round / 20 if sd is None else float(sd)

    @property
    def update_noise_multiplier(self) -> float:
        """z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2) for an adaptive wrapper (Andrew et al. 2021,
        arXiv:1905.03871, §3; Flower's ``compute_adaptive_noise_params``), z for a fixed one."""
        z = self.noise_multiplier
        if self.wrapper not in ADAPTIVE_WRAPPERS:
            return z
        return (z**-2 - (2 * self.count_noise) ** -2) ** -0.5


#: The adaptive wrappers' settings and Flower's defaults.
_ADAPTIVE_FIELDS: dict[str, Any] = {
    "target_clipped_quantile": 0.5, "clip_norm_lr": 0.2, "clipped_count_stddev": None
}  # fmt: skip


class FlowerDPFedAvg:
    """Flower's DP wrapper around FedAvg, as installed (module docstring); ``"flower-dp"``.

    Example:
        >>> fl = FlowerDPFedAvg(FlowerCell(rounds=4, clients_per_round=10, population=10,
        ...                                sampling="all", noise_multiplier=4.0))
        >>> round(fl.claim(delta=1e-5).epsilon, 3), round(fl.exact_claim(1e-5).epsilon, 3)
        (4.729, 4.377)
    """

    name = "flower-dp"
    variant = _AS_INSTALLED
    library = FLOWER

    def __init__(self, cell: FlowerCell) -> None:
        if not isinstance(cell, FlowerCell):
            raise TypeError(f"settings must be a FlowerCell, got {type(cell).__name__}")
        cell.__post_init__()
        self.cell = cell

    @property
    def mechanism(self) -> SubsampledGaussian:
        """The mechanism Flower's calibration describes (sampling rate, σ, T)."""
        c = self.cell
        return SubsampledGaussian(c.sampling_rate, c.noise_multiplier, c.rounds)

    def claim_rdp(self, orders: ArrayLike | None = None) -> Curve:
        """The RDP curve of Flower's stated calibration over the T rounds, replace-one (the
        sampler without replacement halves σ itself; under ``"all"`` it is halved here)."""
        z = self.cell.noise_multiplier / (2 if self.cell.sampling == "all" else 1)
        return _sampled_gaussian_curve(self.cell, z, orders)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The user-level (ε, δ) of Flower's stated calibration at δ.

        Raises:
            ValueError: δ outside (0, 1).
        """
        from dpaudit.conversions import rdp_to_dp

        d = check_delta(1e-5 if delta is None else delta, allow_zero=False)
        curve = self.claim_rdp(orders)
        conv = rdp_to_dp(curve.orders, curve.epsilons, d)
        adaptive = self.cell.wrapper in ADAPTIVE_WRAPPERS
        label = "Flower's calibration (RDP), user-level, replace-one"
        return Claim(label + (", adaptive clipping" if adaptive else ""),
                     _SOURCE + (_ADAPTIVE_SOURCE if adaptive else ""), conv.epsilon, d,
                     rdp=curve, conversion=conv.conversion)  # fmt: skip

    def exact_claim(self, delta: float) -> Claim | None:
        """The exact ε of the calibration under ``"all"`` (μ = 2√T/σ, replace-one), else None."""
        from dpaudit.conversions import gdp_epsilon

        c = self.cell
        if c.sampling != "all":
            return None
        d = check_delta(delta, allow_zero=False)
        return Claim("exact (composed Gaussian, μ-GDP)",
                     "Dong, Roth & Su 2022 (arXiv:1905.02383), Cor. 3.3 and 2.13",
                     gdp_epsilon(2 * math.sqrt(c.rounds) / c.noise_multiplier, d), d)  # fmt: skip

    def as_run_epsilon(self, run: FedAvgRun, delta: float) -> float | None:
        """ε of the rounds as they ran, under ``"all"`` (None for other samplers, or a run
        without recorded norms): round t releases the count with noise σ_b (μ = 1/σ_b under
        replace-one) and the update sum, clipped to C_t (sensitivity 2C_t), with noise
        z_Δ·C_{t+1} — the norm the wrapper holds after the round (:attr:`FedAvgRun.clip_norms`)
        — so μ_t² = (2C_t / (z_Δ C_{t+1}))² + σ_b⁻², composed as μ-GDP
        (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 3.3 and 2.13). With C_{t+1} = C_t this is
        the claim's exact ε (2√T/z). The norms depend on the noisy counts, so this describes
        the run; it is not a guarantee.

        Raises:
            ValueError: δ outside (0, 1), or norms not one row of two per round.
        """
        from dpaudit.conversions import gdp_epsilon

        c = self.cell
        d = check_delta(delta, allow_zero=False)
        if c.sampling != "all" or run.clip_norms is None:
            return None
        norms = np.asarray(run.clip_norms, dtype=np.float64)
        if norms.shape != (c.rounds, 2) or not np.all(norms > 0):
            raise ValueError(
                f"run.clip_norms must be ({c.rounds}, 2) positive norms, got shape {norms.shape}"
            )
        adaptive = c.wrapper in ADAPTIVE_WRAPPERS
        update = 2 * norms[:, 0] / (c.update_noise_multiplier * norms[:, 1])
        count = 1 / c.count_noise if adaptive else 0.0
        return gdp_epsilon(float(np.sqrt(np.sum(update**2 + count**2))), d)

    def comparison_claims(self, delta: float) -> tuple[Claim, ...]:
        """No other unit's claim: Flower states one calibration."""
        return ()

    def canary_label(self, count: int) -> str:
        """How ``count`` canaries of this system are named in a result."""
        w = self.cell.weighting
        return f"{count} canary clients" + (
            f" reporting {self.cell.canary_examples} examples" if w == "examples" else ""
        )

    def dimension(self, data: FederatedData) -> int:
        """d, the softmax-regression parameter count on ``data``."""
        return data.dimension

    def accuracy(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike, num_classes: int) -> float:
        """Test accuracy of softmax-regression parameters ``theta``."""
        return accuracy(theta, X, y, num_classes)

    def check_inputs(
        self, data: Any, canaries: ArrayLike | None, included: ArrayLike | None, scale: float
    ) -> tuple[FederatedData, np.ndarray, np.ndarray]:
        """The checked inputs (as :meth:`dpaudit.systems.federated.DPFedAvg.check_inputs`).

        Raises:
            TypeError, ValueError: as that method.
            MissingDependencyError: ``.venvs/flower`` is not built (names ``make venv-flower``).
        """
        out = _check_training_inputs(self.cell.population, data, canaries, included, scale)
        self.library.python()
        return out

    def train(
        self,
        data: FederatedData,
        canaries: ArrayLike | None = None,
        included: ArrayLike | None = None,
        *,
        canary_scale: float = 1.0,
        rng: RngLike = None,
    ) -> FedAvgRun:
        """T rounds of Flower's wrapper from θ = 0 with canary clients (module docstring); the
        run's ``versions`` records flwr's.

        Raises:
            TypeError, ValueError, MissingDependencyError: as :meth:`check_inputs`, before any
                process is started.
        """
        data, can, inc = self.check_inputs(data, canaries, included, canary_scale)
        from dpaudit._rng import as_seed_sequence, seed_entropy

        seq = as_seed_sequence(rng)
        g = as_generator(seq)
        c = self.cell
        n, k, d = data.num_clients, can.shape[0], data.dimension
        sizes = np.asarray([y.size for y in data.labels], dtype=np.int64)
        reported = np.concatenate([sizes, np.full(k, c.canary_examples, dtype=np.int64)])
        if c.weighting == "uniform":
            reported = np.ones(n + k, dtype=np.int64)
        # the clients that replace the canaries left out: fresh directions, never tested
        fresh = g.standard_normal((k, d))
        fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
        theta = np.zeros(d)
        deltas = np.zeros((c.rounds, d), dtype=np.float32)
        participation = np.zeros(k, dtype=np.int64)
        participants = np.zeros(c.rounds, dtype=np.int64)
        clip_norms = np.zeros((c.rounds, 2))
        sent = np.where(inc[:, None], can.astype(np.float64), fresh)
        shift = (canary_scale * c.clip_norm) * sent
        start, canary_seconds = time.perf_counter(), 0.0
        with self.library.start() as worker:
            worker.call("setup", {"population": c.population, "num_sampled_clients":
                                  c.clients_per_round, "wrapper": c.wrapper,
                                  "noise_multiplier": c.noise_multiplier,
                                  "clipping_norm": c.clip_norm,
                                  "target_clipped_quantile": c.target_clipped_quantile,
                                  "clip_norm_lr": c.clip_norm_lr,
                                  "clipped_count_stddev": c.clipped_count_stddev,
                                  "seed": int(g.integers(2**63))})  # fmt: skip
            for t in range(c.rounds):
                _, got = worker.call("configure", None, {"theta": theta})
                sampled = np.asarray(got["sampled"], dtype=np.int64)
                params = np.empty((sampled.size, d))
                for row, cid in enumerate(sampled.tolist()):
                    if cid < n:
                        params[row] = theta + local_update(
                            theta, data.features[cid], data.labels[cid], data.num_classes,
                            steps=c.local_steps, lr=c.client_learning_rate)  # fmt: skip
                    else:
                        t0 = time.perf_counter()
                        j = cid - n
                        params[row] = theta + shift[j]
                        canary_seconds += time.perf_counter() - t0
                slots = sampled[sampled >= n] - n
                participation[slots] += 1
                participants[t] = sampled.size
                norms, out = worker.call(
                    "aggregate", None, {"params": params, "num_examples": reported[sampled]}
                )
                clip_norms[t] = norms["clipped_to"], norms["norm_after"]
                new = np.asarray(out["theta"], dtype=np.float64)  # fmt: skip
                deltas[t] = new - theta
                theta = new
            version = worker.version
        seconds = {"training": time.perf_counter() - start, "canaries": canary_seconds}
        return FedAvgRun(deltas, theta, participation, participants, seed_entropy(seq), seconds,
                         versions={"flwr": str(version)}, clip_norms=clip_norms)  # fmt: skip


SYSTEMS.register("flower-dp", SystemFactory(FlowerCell, FlowerDPFedAvg), tags=("federated",))
