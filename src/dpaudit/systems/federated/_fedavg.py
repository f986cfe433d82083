"""DP-FedAvg with canary clients: the system under audit and its user-level claim.

Each round the server samples clients, every sampled client trains locally and returns an
update, each update is clipped to L2 norm C, the server adds Gaussian noise of standard
deviation σC to the sum, divides by the number of slots m (the fixed denominator) and
applies the result with a server learning rate (McMahan, Ramage, Talwar & Zhang 2018,
"Learning Differentially Private Recurrent Language Models", arXiv:1710.06963, Alg. 1). The
privacy unit is a client (a user): adding or removing one client's whole data moves the
clipped sum by at most C.

Samplers (:data:`SAMPLERS`): ``"all"`` (every client every round: the T-fold composition of
the Gaussian mechanism), ``"poisson"`` (each client independently with the public rate
q = m / P over a public population of P client slots) and ``"fixed"`` (m of the P slots
uniformly without replacement).

Canary clients (Andrew, Kairouz, Oh, Oprea, McMahan & Suriyakumar 2024, arXiv:2302.03098,
§4): k extra clients of the population whose update, whatever the model, is a fixed vector
``s · C · c_j`` with ``c_j`` a unit direction chosen by the auditor. A canary that is *not*
inserted stays in the population as a client with a zero update (it still takes a slot under
fixed-size sampling), so inserting it is a replace-one change; with a fixed denominator and
Poisson or full participation it is also an add/remove change.

The claim (:meth:`DPFedAvg.claim`) is the user-level RDP accountant's: the Poisson-subsampled
Gaussian composed T times (Mironov, Talwar & Zhang 2019, arXiv:1908.10530; q = 1 for
``"all"``) under add/remove, or sampling without replacement under replace-one (Wang, Balle &
Kasiviswanathan 2019, arXiv:1808.00087, Thm 27; sensitivity 2C) for ``"fixed"``, converted to
(ε, δ) by Balle et al. 2020 (arXiv:1905.09982, Thm 21). For ``"all"`` the exact ε is the
μ-GDP ε of μ = √T/σ (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 3.3 and 2.13).

Planted bugs (:data:`FEDAVG_VARIANTS`), each a system that ships the correct claim:

* ``noise-divided-twice`` — the noise σC divided by m before the division by m (σC/m² on the
  average): a noise calibrated to one client's sensitivity divided by the number of sampled
  clients twice;
* ``clip-after-noise`` — the raw updates summed, noised, and the noisy sum clipped (to mC):
  no client's contribution is bounded;
* ``example-level-accountant`` — training is correct but the claim is an example-level
  accountant's (the noise multiplier of one example's share C/n̄ of a client update, n̄ the
  mean examples per client) reported as user-level (Chua et al. 2024, "Mind the Privacy
  Unit!", arXiv:2406.14322, §2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import Claim, Curve
from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_choice,
    check_delta,
    check_mask,
    check_memory,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.mechanisms.values import SubsampledGaussian
from dpaudit.systems._blas import one_blas_thread as _one_blas_thread
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.federated._clients import (
    FederatedData,
    initial_parameters,
    local_update,
    num_parameters,
    predict_logits,
)

__all__ = [
    "FEDAVG_VARIANTS",
    "SAMPLERS",
    "DPFedAvg",
    "FedAvgCell",
    "FedAvgRun",
    "FedAvgVariant",
    "accuracy",
]

#: Client samplers: every client every round, Poisson at q = m/P, or m of P without replacement.
SAMPLERS: tuple[str, ...] = ("all", "poisson", "fixed")


def check_round_slots(s: Any, *, unit: str, step: str) -> None:
    """Check the sampling fields every federated system shares: ``rounds``,
    ``clients_per_round`` (m), ``population`` (P), ``sampling`` and ``claim_sampling`` (a
    claim for another sampler than the one used is refused: it would not describe the system).

    Raises:
        ValueError, TypeError: naming the field and its value; ``unit`` ("client", "user")
            and ``step`` ("round", "step") word the messages.
    """
    check_positive_int("rounds", s.rounds)
    m = check_positive_int("clients_per_round", s.clients_per_round)
    p = check_positive_int("population", s.population)
    check_choice("sampling", s.sampling, SAMPLERS)
    if s.claim_sampling is not None:
        check_choice("claim_sampling", s.claim_sampling, SAMPLERS)
        if s.claim_sampling != s.sampling:
            raise ValueError(
                f"claim_sampling={s.claim_sampling!r} is not the sampler the system "
                f"uses (sampling={s.sampling!r}): the claim would not describe it"
            )
    if s.sampling == "all" and p > m:
        raise ValueError(
            f"population={p} {unit}s (real plus canary {unit}s) exceed the "
            f"clients_per_round={m} slots of sampling='all' (every {unit} every {step})"
        )
    if s.sampling != "all" and m > p:
        raise ValueError(f"clients_per_round={m} exceeds the population={p} {unit} slots")


_SOURCE = (
    "McMahan, Ramage, Talwar & Zhang 2018 (arXiv:1710.06963), user-level DP-FedAvg; RDP of "
    "the subsampled Gaussian, Mironov, Talwar & Zhang 2019 (arXiv:1908.10530) via "
    "dp-accounting; conversion Balle et al. 2020 (arXiv:1905.09982)"
)


@dataclasses.dataclass(frozen=True)
class FedAvgVariant:
    """One DP-FedAvg implementation: the correct one or a planted bug.

    Attributes:
        name: registry name.
        title: one line.
        bug: what deviates from the analysed algorithm (None for the correct one).
        clip_clients: each client's update clipped to C before summing.
        noise_divisions: the noise σC divided by m this many extra times (0: correct).
        clip_after_noise: the noisy sum clipped to mC.
        claim_unit: ``"user"`` (correct) or ``"example"`` (an example-level accountant).
    """

    name: str
    title: str
    bug: str | None
    clip_clients: bool = True
    noise_divisions: int = 0
    clip_after_noise: bool = False
    claim_unit: str = "user"


FEDAVG_VARIANTS: Registry[FedAvgVariant] = Registry("DP-FedAvg variant")
FEDAVG_VARIANTS.register("correct", FedAvgVariant(
    "correct", "DP-FedAvg: clipped client updates, noise σC on the sum, user-level accountant",
    None))  # fmt: skip
FEDAVG_VARIANTS.register("noise-divided-twice", FedAvgVariant(
    "noise-divided-twice", "noise divided by the number of sampled clients twice",
    "the noise σC is divided by m before the average divides by m again (σC/m on the sum)",
    noise_divisions=1))  # fmt: skip
FEDAVG_VARIANTS.register("clip-after-noise", FedAvgVariant(
    "clip-after-noise", "clipping after noising",
    "raw client updates are summed and noised, then the noisy sum is clipped to mC: no "
    "client's contribution is bounded", clip_clients=False, clip_after_noise=True))  # fmt: skip
FEDAVG_VARIANTS.register("example-level-accountant", FedAvgVariant(
    "example-level-accountant", "an example-level accountant reported as user-level",
    "the claim charges one example's share C/n̄ of a client update (noise multiplier σn̄) "
    "and reports it as the user-level guarantee", claim_unit="example"))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class FedAvgCell:
    """The settings cell of DP-FedAvg (``SYSTEMS.get("dp-fedavg")(cell)``).

    Attributes:
        rounds: T.
        clients_per_round: m, the slots per round and the fixed denominator (expected
            participants under Poisson sampling; every client must fit under ``"all"``).
        population: P, the public number of client slots (real clients plus canary slots).
        sampling: the sampler used (:data:`SAMPLERS`).
        claim_sampling: the sampler the claim assumes (None: the sampler used); any other
            value is refused: the claim would not describe the system.
        clip_norm: C.
        noise_multiplier: σ (noise std σC on the clipped sum).
        server_learning_rate: η_s.
        client_learning_rate: η_c of the local gradient steps.
        local_steps: local full-batch steps per round.
        examples_per_client: n̄, the mean examples per client (the example-level claim only).
        hidden: 0 for softmax regression, else the ReLU units of a one-hidden-layer MLP.
        variant: a :data:`FEDAVG_VARIANTS` name.
    """

    rounds: int = 20
    clients_per_round: int = 100
    population: int = 1000
    sampling: str = "poisson"
    claim_sampling: str | None = None
    clip_norm: float = 1.0
    noise_multiplier: float = 1.0
    server_learning_rate: float = 1.0
    client_learning_rate: float = 0.5
    local_steps: int = 1
    examples_per_client: float = 1.0
    hidden: int = 0
    variant: str = "correct"

    def __post_init__(self) -> None:
        check_round_slots(self, unit="client", step="round")
        check_positive("clip_norm", self.clip_norm)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("server_learning_rate", self.server_learning_rate)
        check_positive("client_learning_rate", self.client_learning_rate)
        check_positive_int("local_steps", self.local_steps)
        check_positive("examples_per_client", self.examples_per_client)
        check_nonneg_int("hidden", self.hidden)
        FEDAVG_VARIANTS.get(self.variant)

    @property
    def sampling_rate(self) -> float:
        """q: 1 for ``"all"``, m/P otherwise."""
        return 1.0 if self.sampling == "all" else self.clients_per_round / self.population


@dataclasses.dataclass(frozen=True)
class FedAvgRun:
    """What one training run shows.

    Attributes:
        deltas: ``(T, d)`` float32 model delta of each round (the all-iterates view).
        final: ``(d,)`` float64 final parameters.
        participation: ``(k,)`` rounds each canary slot was sampled in.
        participants: ``(T,)`` clients sampled each round (real and canary slots).
        seed: the run's seed entropy, where it had one.
        seconds: wall seconds of the whole run (``"training"``) and of the canary clients'
            part of it (``"canaries"``: their updates, clipping and summing), measured in the
            same run.
        initial: ``(d,)`` the starting parameters (None: 0).
        versions: versions of the libraries that trained it out of process (``{"flwr": …}``).
        clip_norms: ``(T, 2)`` for a library's wrapper that reports them (None otherwise): the
            norm each round's client updates were clipped to, and the norm the wrapper held
            after the round (an adaptive-clipping wrapper's updated norm).
    """

    deltas: np.ndarray
    final: np.ndarray
    participation: np.ndarray
    participants: np.ndarray
    seed: int | None = None
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    initial: np.ndarray | None = None
    versions: dict[str, str] = dataclasses.field(default_factory=dict)
    clip_norms: np.ndarray | None = None

    @property
    def final_delta(self) -> np.ndarray:
        """``θ_T − θ_0``, what the final-model adversary compares the canaries with."""
        return self.final if self.initial is None else self.final - self.initial


class DPFedAvg:
    """DP-FedAvg on softmax regression or an MLP (module docstring), registered as ``"dp-fedavg"``.

    Example:
        >>> from dpaudit.systems.federated import dirichlet_split
        >>> g = np.random.default_rng(0)
        >>> data = dirichlet_split(g.normal(size=(60, 4)), g.integers(0, 3, 60), 6,
        ...                        alpha=1.0, rng=0)
        >>> fl = DPFedAvg(FedAvgCell(rounds=3, clients_per_round=6, population=6,
        ...                          sampling="all", noise_multiplier=2.0))
        >>> run = fl.train(data, rng=0)
        >>> run.deltas.shape, round(fl.claim(delta=1e-5).epsilon, 3)
        ((3, 15), 4.011)
    """

    name = "dp-fedavg"

    def __init__(self, cell: FedAvgCell) -> None:
        if not isinstance(cell, FedAvgCell):
            raise TypeError(f"settings must be a FedAvgCell, got {type(cell).__name__}")
        cell.__post_init__()  # a cell changed after it was built is checked again
        self.cell = cell
        self.variant = FEDAVG_VARIANTS.get(cell.variant)

    @property
    def mechanism(self) -> SubsampledGaussian:
        """The mechanism the claim analyses (sampling rate, σ, T)."""
        c = self.cell
        return SubsampledGaussian(c.sampling_rate, c.noise_multiplier, c.rounds)

    # ----------------------------------------------------------------------------- the claim

    def _claim_noise_multiplier(self, unit: str | None = None) -> float:
        z = self.cell.noise_multiplier
        unit = self.variant.claim_unit if unit is None else unit
        return z * self.cell.examples_per_client if unit == "example" else z

    def claim_rdp(self, orders: ArrayLike | None = None, *, unit: str | None = None) -> Curve:
        """The accountant's RDP curve of the whole run (what :meth:`claim` converts); ``unit``
        (``"user"`` or ``"example"``) overrides the variant's privacy unit."""
        return _sampled_gaussian_curve(self.cell, self._claim_noise_multiplier(unit), orders)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The user-level (ε, δ) the system reports: its RDP accountant, converted at δ.

        Raises:
            ValueError: δ outside (0, 1).
        """
        from dpaudit.conversions import rdp_to_dp

        d = check_delta(1e-5 if delta is None else delta, allow_zero=False)
        curve = self.claim_rdp(orders)
        conv = rdp_to_dp(curve.orders, curve.epsilons, d)
        relation = "replace-one" if self.cell.sampling == "fixed" else "add/remove"
        unit = "user-level" + ("" if self.variant.claim_unit == "user" else " (as reported)")
        return Claim(f"accountant (RDP), {unit}, {relation}", _SOURCE, conv.epsilon, d,
                     rdp=curve, conversion=conv.conversion)  # fmt: skip

    def example_level_claim(self, delta: float) -> Claim:
        """What an example-level accountant would report for the same run, for comparison:
        one example's share C/n̄ of a client update, noise multiplier σ·n̄ (Chua et al. 2024,
        arXiv:2406.14322, §2: the guarantee for one example, not for a user's data)."""
        from dpaudit.conversions import rdp_to_dp

        d = check_delta(delta, allow_zero=False)
        curve = self.claim_rdp(unit="example")
        conv = rdp_to_dp(curve.orders, curve.epsilons, d)
        return Claim("accountant (RDP), example-level, for comparison", _SOURCE, conv.epsilon, d,
                     rdp=curve, conversion=conv.conversion)  # fmt: skip

    def canary_label(self, count: int) -> str:
        """How ``count`` canaries of this system are named in a result."""
        return f"{count} canary clients"

    def comparison_claims(self, delta: float) -> tuple[Claim, ...]:
        """The claims printed beside the reported one: :meth:`example_level_claim`."""
        return (self.example_level_claim(delta),)

    def exact_claim(self, delta: float) -> Claim | None:
        """The exact user-level ε of the correct mechanism under ``"all"`` (μ = √T/σ), else None."""
        from dpaudit.conversions import gdp_epsilon

        c = self.cell
        if c.sampling != "all":
            return None
        d = check_delta(delta, allow_zero=False)
        mu = math.sqrt(c.rounds) / c.noise_multiplier
        return Claim("exact (composed Gaussian, μ-GDP)",
                     "Dong, Roth & Su 2022 (arXiv:1905.02383), Cor. 3.3 and 2.13",
                     gdp_epsilon(mu, d), d)  # fmt: skip

    # ------------------------------------------------------------------------------ training

    def check_inputs(
        self, data: Any, canaries: ArrayLike | None, included: ArrayLike | None, scale: float
    ) -> tuple[FederatedData, np.ndarray, np.ndarray]:
        """The checked training inputs ``(data, canaries (k, d) float32, included (k,))``.

        Raises:
            TypeError: ``data`` is not :class:`FederatedData`.
            ValueError: canaries not ``(k, d)`` unit rows, ``included`` not one flag per
                canary, the real clients plus canary slots not the cell's ``population``,
                ``canary_scale`` ≤ 0, or the canaries would not fit in memory.
        """
        d = None if not isinstance(data, FederatedData) else self.dimension(data)
        return _check_training_inputs(self.cell.population, data, canaries, included, scale, d)

    def dimension(self, data: FederatedData) -> int:
        """d, the model's parameter count on ``data``."""
        return num_parameters(data.num_features, data.num_classes, self.cell.hidden)

    def accuracy(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike, num_classes: int) -> float:
        """Test accuracy of the model's parameters ``theta``."""
        logits = predict_logits(theta, X, num_classes, self.cell.hidden)
        return float(np.mean(np.argmax(logits, axis=1) == np.asarray(y)))

    def train(
        self,
        data: FederatedData,
        canaries: ArrayLike | None = None,
        included: ArrayLike | None = None,
        *,
        canary_scale: float = 1.0,
        rng: RngLike = None,
    ) -> FedAvgRun:
        """Run T rounds from θ = 0 with canary clients ``canaries`` (rows: unit directions),
        of which those flagged in ``included`` send ``canary_scale · C · c_j`` (the others a
        zero update).

        Raises:
            TypeError, ValueError: as :meth:`check_inputs`, before any training.
        """
        data, can, inc = self.check_inputs(data, canaries, included, canary_scale)
        from dpaudit._rng import as_seed_sequence, seed_entropy

        seq = as_seed_sequence(rng)
        g = as_generator(seq)
        c, v = self.cell, self.variant
        n, k, d, m = data.num_clients, can.shape[0], self.dimension(data), c.clients_per_round
        theta = initial_parameters(data.num_features, data.num_classes, c.hidden, rng=g)
        initial = theta.copy() if c.hidden else None
        deltas = np.zeros((c.rounds, d), dtype=np.float32)
        participation = np.zeros(k, dtype=np.int64)
        participants = np.zeros(c.rounds, dtype=np.int64)
        start, canary_seconds = time.perf_counter(), 0.0
        sent = canary_scale * c.clip_norm  # a canary update's norm
        weight = sent * (min(1.0, c.clip_norm / sent) if v.clip_clients else 1.0)
        # the MLP's per-client products are small: one BLAS thread avoids the threads' handoffs
        # (4x faster on a shared 2-core machine); softmax regression keeps the default
        with _one_blas_thread() if c.hidden else contextlib.nullcontext():
            for t in range(c.rounds):
                real, slots = self._sample(g, n, k)
                participation += slots
                participants[t] = real.size + int(slots.sum())
                total = np.zeros(d)
                for i in real:
                    u = local_update(theta, data.features[i], data.labels[i], data.num_classes,
                                     steps=c.local_steps, lr=c.client_learning_rate,
                                     hidden=c.hidden)  # fmt: skip
                    total += _clip(u, c.clip_norm) if v.clip_clients else u
                if k:
                    t0 = time.perf_counter()
                    sending = slots & inc
                    if sending.sum() * 4 < k:  # few canaries this round: sum their rows only,
                        # in place and in the order a float64 sum over the rows would add them
                        # (no copy of the rows)
                        acc = np.zeros(d)
                        for j in np.flatnonzero(sending).tolist():
                            np.add(acc, can[j], out=acc)
                        acc *= weight
                        total += acc
                    else:
                        w = sending.astype(np.float32) * np.float32(weight)
                        total += (w @ can).astype(np.float64)
                    canary_seconds += time.perf_counter() - t0
                noise = g.normal(0.0, c.noise_multiplier * c.clip_norm, d) / m**v.noise_divisions
                noisy = total + noise
                if v.clip_after_noise:
                    noisy = _clip(noisy, m * c.clip_norm)
                delta = c.server_learning_rate * noisy / m
                theta += delta
                deltas[t] = delta
        seconds = {"training": time.perf_counter() - start, "canaries": canary_seconds}
        return FedAvgRun(deltas, theta, participation, participants, seed_entropy(seq), seconds,
                         initial)  # fmt: skip

    def _sample(self, g: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        return _sample_slots(self.cell, g, n, k)


def _sample_slots(
    cell: Any, g: np.random.Generator, n: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Real clients (users) sampled this round, and which canary slots were (``cell``: a
    settings cell with ``sampling``, ``sampling_rate`` and ``clients_per_round``)."""
    if cell.sampling == "all":
        return np.arange(n), np.ones(k, dtype=bool)
    if cell.sampling == "poisson":
        pick = g.random(n + k) < cell.sampling_rate
    else:
        pick = np.zeros(n + k, dtype=bool)
        pick[g.choice(n + k, size=cell.clients_per_round, replace=False)] = True
    return np.flatnonzero(pick[:n]), pick[n:]


def _sampled_gaussian_curve(cell: Any, z: float, orders: ArrayLike | None) -> Curve:
    """The RDP curve of ``cell.rounds`` sampled Gaussian steps of noise multiplier ``z``:
    Poisson (q = 1 for ``"all"``) under add/remove, or m of P without replacement under
    replace-one (module docstring)."""
    from dpaudit.accounting import DEFAULT_ORDERS, subsampled_gaussian_rdp

    lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64)
    if cell.sampling == "fixed":
        rdp = _without_replacement_rdp(cell.population, cell.clients_per_round, z, cell.rounds,
                                       lam)  # fmt: skip
    else:
        rdp = subsampled_gaussian_rdp(cell.sampling_rate, z, lam, count=cell.rounds).epsilons
    # dp-accounting returns inf where its fractional-order series does not converge (it logs a
    # warning); those orders are dropped (the conversion would skip them too)
    keep = np.isfinite(rdp)
    return Curve(lam[keep], np.asarray(rdp)[keep])


def _check_training_inputs(
    population: int,
    data: Any,
    canaries: ArrayLike | None,
    included: ArrayLike | None,
    scale: float,
    dimension: int | None = None,
) -> tuple[FederatedData, np.ndarray, np.ndarray]:
    """The checks of :meth:`DPFedAvg.check_inputs` against a population of P slots and a model
    of ``dimension`` parameters (None: softmax regression's)."""
    if not isinstance(data, FederatedData):
        raise TypeError(f"data must be a FederatedData, got {type(data).__name__}")
    check_positive("canary_scale", scale)
    d = data.dimension if dimension is None else dimension
    if canaries is None:
        can = np.zeros((0, d), dtype=np.float32)
    else:
        shape = np.shape(canaries)
        if len(shape) != 2 or shape[1] != d:
            raise ValueError(f"canaries must be (k, {d}) directions, got shape {shape}")
        check_memory(4.0 * shape[0] * d, "the canary clients' updates")
        can = np.asarray(canaries, dtype=np.float32)
        # one pass over the (k, d) rows: a NaN or inf entry makes its row's norm NaN or inf,
        # so the finiteness check runs only to name what failed
        norms = np.sqrt(np.einsum("ij,ij->i", can, can, dtype=np.float64))
        if not np.allclose(norms, 1.0, atol=1e-4):
            if not np.all(np.isfinite(norms)):
                raise ValueError("canaries must be finite")
            raise ValueError("canaries must be unit vectors (rows of L2 norm 1)")
    k = can.shape[0]
    inc = np.ones(k, dtype=bool) if included is None else check_mask("included", included)
    if inc.shape != (k,):
        raise ValueError(f"included must have one flag per canary ({k}), got {inc.shape}")
    if data.num_clients + k != population:
        raise ValueError(
            f"population={population} must equal the {data.num_clients} real "
            f"clients plus the {k} canary clients"
        )
    return data, can, inc


def _clip(u: np.ndarray, bound: float) -> np.ndarray:
    norm = float(np.linalg.norm(u))
    return u if norm <= bound else u * (bound / norm)


def _without_replacement_rdp(
    population: int, sample: int, z: float, rounds: int, orders: np.ndarray
) -> np.ndarray:
    """RDP of T rounds of m-of-P sampling without replacement, replace-one (dp-accounting;
    Wang, Balle & Kasiviswanathan 2019, arXiv:1808.00087, Thm 27): a replaced client moves
    the clipped sum by up to 2C, so the Gaussian's multiplier is σ/2."""
    from dpaudit.errors import require

    dpa = require("dp_accounting", "accounting")
    relation = dpa.NeighboringRelation.REPLACE_ONE
    acct = dpa.rdp.RdpAccountant(orders=orders.tolist(), neighboring_relation=relation)
    event = dpa.SampledWithoutReplacementDpEvent(population, sample, dpa.GaussianDpEvent(z / 2))
    acct.compose(event, rounds)
    return np.maximum(np.asarray(acct._rdp, dtype=np.float64), 0.0)


def accuracy(theta: ArrayLike, X: ArrayLike, y: ArrayLike, num_classes: int) -> float:
    """Test accuracy of softmax-regression parameters ``theta``."""
    logits = predict_logits(theta, X, num_classes)
    return float(np.mean(np.argmax(logits, axis=1) == np.asarray(y)))


SYSTEMS.register("dp-fedavg", SystemFactory(FedAvgCell, DPFedAvg), tags=("federated",))
