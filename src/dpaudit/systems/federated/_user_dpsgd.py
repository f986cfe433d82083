"""User-level DP-SGD with canary users: the system under audit, its user- and example-level claims.

Each step the trainer samples users (Poisson at the public rate q = m/P over a public
population of P user slots, all users, or m of P without replacement), sums each sampled
user's per-example gradients, clips **the user's summed gradient** to L2 norm C, adds
Gaussian noise of standard deviation σC to the sum over users and takes the step
``θ ← θ − η · (noisy sum) / m`` (DP-FedSGD, McMahan, Ramage, Talwar & Zhang 2018,
arXiv:1710.06963, §2; "user-level sampling" of Chua et al. 2024, "Mind the Privacy Unit!",
arXiv:2406.14322, §3). A user contributes at most ``max_examples`` examples (the first ones;
later ones are dropped before training). Adding or removing a user moves the clipped sum by at
most C, so the claim is the sampled Gaussian's RDP with multiplier σ, composed T times, under
add/remove of a user (replace-one for ``"fixed"``), converted to (ε, δ) (Mironov, Talwar &
Zhang 2019, arXiv:1908.10530; Wang, Balle & Kasiviswanathan 2019, arXiv:1808.00087, Thm 27;
Balle et al. 2020, arXiv:1905.09982, Thm 21).

With **per-example clipping** instead (each example's gradient clipped to C, a user's clipped
gradients summed; the example-level DP-SGD with users sampled as units) a user of up to n_max
examples moves the sum by up to n_max·C and, being sampled as one unit, the user-level claim is
the same sampled Gaussian with multiplier σ/n_max (the group's sensitivity; exact for the
mechanism, tighter than group privacy of the example-level guarantee).

Every system states both units (:meth:`UserDPSGD.unit_claim`): the user-level one above; the
example-level one is σ/2 under add/remove (σ under the replace-one analysis of fixed-size
sampling, which charges 2C already) for both clippings: under per-user clipping an example
added to a user who keeps other examples can move the user's clipped gradient by up to 2C
(both ends lie in the ball of radius C); under per-example clipping an example added to a user
at the cap n_max displaces the user's last kept example (a replacement, 2C).

Canary users (white-box gradient canaries, Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski,
Carlini & Terzis 2023, arXiv:2302.07956, §4; as whole users, after the canary clients of
Andrew et al. 2024, arXiv:2302.03098): k extra users of the population, each holding
``canary_examples`` examples whose gradient, whatever the model, is ``−s·C·c_j`` for the
auditor's unit direction ``c_j`` (so a step moves the model along ``+c_j``). Per-user
clipping bounds the canary user's contribution to C; per-example clipping lets it send
``canary_examples · min(s, 1) · C``. A canary not inserted stays a user with no data.

Variants (:data:`USER_DPSGD_VARIANTS`):

* ``correct`` — per-user clipping, the user-level claim;
* ``per-example-clipping`` — example-level DP-SGD with users sampled as units, reporting its
  user-level guarantee (multiplier σ/n_max): honest, and the example-level claim beside it is
  far smaller;
* ``example-level-claim`` (planted bug) — per-example clipping, and an example-level DP-SGD
  accountant's ε (multiplier σ: one example moves the sum by C) reported as the user-level
  guarantee (Chua et al. 2024, §2: the privacy unit mistaken).
"""

from __future__ import annotations

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
    check_positive,
    check_positive_int,
)
from dpaudit.mechanisms.values import SubsampledGaussian
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.federated._clients import FederatedData
from dpaudit.systems.federated._fedavg import (
    FedAvgRun,
    _check_training_inputs,
    _clip,
    _sample_slots,
    _sampled_gaussian_curve,
    accuracy,
    check_round_slots,
)

__all__ = [
    "CLIPPING",
    "UNITS",
    "USER_DPSGD_VARIANTS",
    "UserDPSGD",
    "UserDPSGDCell",
    "UserDPSGDVariant",
    "softmax_gradients",
]

#: What is clipped to C: each user's summed gradient, or each example's gradient.
CLIPPING: tuple[str, ...] = ("user", "example")
#: Privacy units a claim can be about.
UNITS: tuple[str, ...] = ("user", "example")

_SOURCE = (
    "McMahan, Ramage, Talwar & Zhang 2018 (arXiv:1710.06963), user-level DP-FedSGD; units after "
    "Chua et al. 2024 (arXiv:2406.14322); RDP of the sampled Gaussian, Mironov, Talwar & Zhang "
    "2019 (arXiv:1908.10530) via dp-accounting; conversion Balle et al. 2020 (arXiv:1905.09982)"
)


@dataclasses.dataclass(frozen=True)
class UserDPSGDVariant:
    """One user-level DP-SGD implementation.

    Attributes:
        name: registry name.
        title: one line.
        bug: what deviates from what the claim analyses (None when the claim is right).
        clipping: ``"user"`` or ``"example"`` (:data:`CLIPPING`).
        reported_unit: the unit whose guarantee the system reports as user-level.
    """

    name: str
    title: str
    bug: str | None
    clipping: str = "user"
    reported_unit: str = "user"


USER_DPSGD_VARIANTS: Registry[UserDPSGDVariant] = Registry("user-level DP-SGD variant")
USER_DPSGD_VARIANTS.register("correct", UserDPSGDVariant(
    "correct", "user-level DP-SGD: each user's summed gradient clipped to C, noise σC",
    None))  # fmt: skip
USER_DPSGD_VARIANTS.register("per-example-clipping", UserDPSGDVariant(
    "per-example-clipping",
    "example-level DP-SGD with users sampled as units, its user-level claim (σ/n_max)", None,
    clipping="example"))  # fmt: skip
USER_DPSGD_VARIANTS.register("example-level-claim", UserDPSGDVariant(
    "example-level-claim", "an example-level accountant's ε reported as user-level",
    "each example's gradient is clipped to C, so a user of n examples moves the sum by up to "
    "nC, but the claim charges C (an example-level accountant's multiplier σ, for a user)",
    clipping="example", reported_unit="example"))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class UserDPSGDCell:
    """The settings cell of user-level DP-SGD (``SYSTEMS.get("user-dp-sgd")(cell)``).

    Attributes:
        rounds: T, the steps.
        clients_per_round: m, the user slots per step and the fixed denominator (expected
            users under Poisson sampling; every user must fit under ``"all"``).
        population: P, the public number of user slots (real users plus canary users).
        sampling: the user sampler (:data:`SAMPLERS`).
        claim_sampling: the sampler the claim assumes (None: the one used); any other value is
            refused.
        clip_norm: C.
        noise_multiplier: σ (noise std σC on the sum).
        learning_rate: η.
        max_examples: n_max, the most examples a user contributes (later ones are dropped).
        canary_examples: the examples each canary user holds (≤ n_max).
        variant: a :data:`USER_DPSGD_VARIANTS` name.
    """

    rounds: int = 20
    clients_per_round: int = 100
    population: int = 1000
    sampling: str = "poisson"
    claim_sampling: str | None = None
    clip_norm: float = 1.0
    noise_multiplier: float = 1.0
    learning_rate: float = 0.5
    max_examples: int = 64
    canary_examples: int = 16
    variant: str = "correct"

    def __post_init__(self) -> None:
        check_round_slots(self, unit="user", step="step")
        check_positive("clip_norm", self.clip_norm)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("learning_rate", self.learning_rate)
        n_max = check_positive_int("max_examples", self.max_examples)
        if check_positive_int("canary_examples", self.canary_examples) > n_max:
            raise ValueError(
                f"canary_examples={self.canary_examples} exceeds max_examples={n_max}, the most "
                f"examples a user may contribute"
            )
        USER_DPSGD_VARIANTS.get(self.variant)

    @property
    def sampling_rate(self) -> float:
        """q: 1 for ``"all"``, m/P otherwise."""
        return 1.0 if self.sampling == "all" else self.clients_per_round / self.population


def softmax_gradients(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-example cross-entropy gradients of softmax regression, in factored form.

    The gradient of example i is ``x_i r_iᵀ`` for the weights and ``r_i`` for the biases,
    ``r_i = softmax(x_i W + b) − onehot(y_i)``, so its L2 norm is
    ``√(‖x_i‖² + 1) · ‖r_i‖`` (the outer-product norm; Goodfellow 2015, "Efficient per-example
    gradient computations", arXiv:1510.01799).

    Returns:
        ``(R, norms)``: the ``(n, K)`` residuals and the ``(n,)`` per-example gradient norms.
    """
    f, k = X.shape[1], int(num_classes)
    z = X @ theta[: f * k].reshape(f, k) + theta[f * k :]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(y.size), y] -= 1.0
    norms = np.sqrt((np.einsum("ij,ij->i", X, X) + 1.0) * np.einsum("ij,ij->i", p, p))
    return p, norms


class UserDPSGD:
    """User-level DP-SGD on softmax regression (module docstring), ``"user-dp-sgd"``.

    Example:
        >>> from dpaudit.systems.federated import dirichlet_split
        >>> g = np.random.default_rng(0)
        >>> data = dirichlet_split(g.normal(size=(60, 4)), g.integers(0, 3, 60), 6,
        ...                        alpha=1.0, rng=0)
        >>> sgd = UserDPSGD(UserDPSGDCell(rounds=3, clients_per_round=6, population=6,
        ...                               sampling="all", noise_multiplier=2.0))
        >>> run = sgd.train(data, rng=0)
        >>> run.deltas.shape, round(sgd.claim(delta=1e-5).epsilon, 3)
        ((3, 15), 4.011)
    """

    name = "user-dp-sgd"

    def __init__(self, cell: UserDPSGDCell) -> None:
        if not isinstance(cell, UserDPSGDCell):
            raise TypeError(f"settings must be a UserDPSGDCell, got {type(cell).__name__}")
        cell.__post_init__()  # a cell changed after it was built is checked again
        self.cell = cell
        self.variant = USER_DPSGD_VARIANTS.get(cell.variant)

    @property
    def mechanism(self) -> SubsampledGaussian:
        """The mechanism the user-level claim analyses (sampling rate, multiplier, T)."""
        c = self.cell
        return SubsampledGaussian(c.sampling_rate, self._multiplier("user"), c.rounds)

    # ----------------------------------------------------------------------------- the claims

    def _multiplier(self, unit: str) -> float:
        """The Gaussian's multiplier of the valid ``unit``-level analysis (module docstring)."""
        c = self.cell
        if unit == "user":
            group = c.max_examples if self.variant.clipping == "example" else 1
            return c.noise_multiplier / group
        if c.sampling == "fixed":  # replace-one: the sampler's analysis charges 2C already
            return c.noise_multiplier
        return c.noise_multiplier / 2  # an example's change moves the clipped sum by up to 2C

    def _reported_multiplier(self) -> float:
        """What the variant reports as user-level: the valid user-level multiplier, or (the
        planted bug) an example-level accountant's σ, which charges one example C."""
        if self.variant.reported_unit == "user":
            return self._multiplier("user")
        return self.cell.noise_multiplier

    def claim_rdp(self, orders: ArrayLike | None = None, *, unit: str | None = None) -> Curve:
        """The RDP curve of the whole run: the valid ``unit``-level one (``"user"`` or
        ``"example"``), or, with ``unit=None``, what the variant reports as user-level."""
        if unit is None:
            return _sampled_gaussian_curve(self.cell, self._reported_multiplier(), orders)
        u = check_choice("unit", unit, UNITS)
        return _sampled_gaussian_curve(self.cell, self._multiplier(u), orders)

    def unit_claim(self, unit: str, delta: float) -> Claim:
        """The valid ``unit``-level guarantee of this run (``"user"`` or ``"example"``).

        Raises:
            ValueError: an unknown unit or δ outside (0, 1).
        """
        u = check_choice("unit", unit, UNITS)
        return self._claim(self.claim_rdp(unit=u), delta, f"accountant (RDP), {u}-level, valid")

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The user-level (ε, δ) the system reports (its accountant, converted at δ).

        Raises:
            ValueError: δ outside (0, 1).
        """
        relation = "replace-one" if self.cell.sampling == "fixed" else "add/remove"
        unit = "user-level" + ("" if self.variant.reported_unit == "user" else " (as reported)")
        return self._claim(self.claim_rdp(orders), 1e-5 if delta is None else delta,
                           f"accountant (RDP), {unit}, {relation}")  # fmt: skip

    def canary_label(self, count: int) -> str:
        """How ``count`` canaries of this system are named in a result."""
        return f"{count} canary users of {self.cell.canary_examples} examples"

    def comparison_claims(self, delta: float) -> tuple[Claim, ...]:
        """The claims printed beside the reported one: the valid example-level guarantee, and
        the valid user-level one when the system reports another unit's."""
        out = (self.unit_claim("example", delta),)
        if self.variant.reported_unit != "user":
            out += (self.unit_claim("user", delta),)
        return out

    def exact_claim(self, delta: float) -> Claim | None:
        """The exact user-level ε under ``"all"`` (μ = √T / multiplier), else None."""
        from dpaudit.conversions import gdp_epsilon

        c = self.cell
        if c.sampling != "all":
            return None
        d = check_delta(delta, allow_zero=False)
        mu = math.sqrt(c.rounds) / self._multiplier("user")
        return Claim("exact (composed Gaussian, μ-GDP)",
                     "Dong, Roth & Su 2022 (arXiv:1905.02383), Cor. 3.3 and 2.13",
                     gdp_epsilon(mu, d), d)  # fmt: skip

    @staticmethod
    def _claim(curve: Curve, delta: float, analysis: str) -> Claim:
        from dpaudit.conversions import rdp_to_dp

        d = check_delta(delta, allow_zero=False)
        conv = rdp_to_dp(curve.orders, curve.epsilons, d)
        return Claim(analysis, _SOURCE, conv.epsilon, d, rdp=curve, conversion=conv.conversion)

    # ------------------------------------------------------------------------------ training

    def check_inputs(
        self, data: Any, canaries: ArrayLike | None, included: ArrayLike | None, scale: float
    ) -> tuple[FederatedData, np.ndarray, np.ndarray]:
        """The checked inputs ``(data, canaries (k, d) float32, included (k,))``.

        Raises:
            TypeError: ``data`` is not :class:`FederatedData`.
            ValueError: as :meth:`dpaudit.systems.federated.DPFedAvg.check_inputs` (canary
                directions, ``included``, the population, ``canary_scale``).
        """
        return _check_training_inputs(self.cell.population, data, canaries, included, scale)

    def dimension(self, data: FederatedData) -> int:
        """d, the softmax-regression parameter count on ``data``."""
        return data.dimension

    def accuracy(self, theta: ArrayLike, X: ArrayLike, y: ArrayLike, num_classes: int) -> float:
        """Test accuracy of softmax-regression parameters ``theta``."""
        return accuracy(theta, X, y, num_classes)

    def train(
        self,
        data: FederatedData,
        canaries: ArrayLike | None = None,
        included: ArrayLike | None = None,
        *,
        canary_scale: float = 1.0,
        rng: RngLike = None,
    ) -> FedAvgRun:
        """Run T steps from θ = 0 with canary users ``canaries`` (rows: unit directions), of
        which those flagged in ``included`` hold ``canary_examples`` examples of gradient
        ``−canary_scale · C · c_j`` each (the others no data).

        Raises:
            TypeError, ValueError: as :meth:`check_inputs`, before any training.
        """
        data, can, inc = self.check_inputs(data, canaries, included, canary_scale)
        from dpaudit._rng import as_seed_sequence, seed_entropy

        seq = as_seed_sequence(rng)
        g = as_generator(seq)
        c, per_user = self.cell, self.variant.clipping == "user"
        n, k, d, m = data.num_clients, can.shape[0], data.dimension, c.clients_per_round
        f, K = data.num_features, data.num_classes
        X = [x[: c.max_examples] for x in data.features]
        Y = [y[: c.max_examples] for y in data.labels]
        theta = np.zeros(d)
        deltas = np.zeros((c.rounds, d), dtype=np.float32)
        participation = np.zeros(k, dtype=np.int64)
        participants = np.zeros(c.rounds, dtype=np.int64)
        start, canary_seconds = time.perf_counter(), 0.0
        # a canary user's clipped contribution: C under per-user clipping, n_c · min(s, 1) · C
        # under per-example clipping
        each = canary_scale * c.clip_norm
        if per_user:
            weight = min(c.canary_examples * each, c.clip_norm)
        else:
            weight = c.canary_examples * min(each, c.clip_norm)
        for t in range(c.rounds):
            real, slots = _sample_slots(c, g, n, k)
            participation += slots
            participants[t] = real.size + int(slots.sum())
            total = np.zeros(d)  # the clipped gradients' sum
            for i in real:
                r, norms = softmax_gradients(theta, X[i], Y[i], K)
                if per_user:
                    grad = np.concatenate([(X[i].T @ r).ravel(), r.sum(axis=0)])
                    total += _clip(grad, c.clip_norm)
                else:
                    w = np.minimum(1.0, c.clip_norm / np.maximum(norms, 1e-300))
                    rw = r * w[:, None]
                    total[: f * K] += (X[i].T @ rw).ravel()
                    total[f * K :] += rw.sum(axis=0)
            if k:
                t0 = time.perf_counter()
                sending = slots & inc
                if sending.any():
                    rows = can[np.flatnonzero(sending)]
                    total -= weight * rows.sum(axis=0, dtype=np.float64)
                canary_seconds += time.perf_counter() - t0
            noisy = total + g.normal(0.0, c.noise_multiplier * c.clip_norm, d)
            delta = -c.learning_rate * noisy / m
            theta += delta
            deltas[t] = delta
        seconds = {"training": time.perf_counter() - start, "canaries": canary_seconds}
        return FedAvgRun(deltas, theta, participation, participants, seed_entropy(seq), seconds)


SYSTEMS.register("user-dp-sgd", SystemFactory(UserDPSGDCell, UserDPSGD), tags=("federated",))
