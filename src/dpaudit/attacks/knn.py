"""Histogram models and poison crafters for Private-kNN (Chadha et al. 2024, "Auditing
Private Prediction", arXiv:2402.09403, §6 and App. D.3).

**Models.** For a query q let the training points be ranked by distance (ties by index), the
added point (x′, y′) have rank r_q (``r_q − 1`` training points at distance ≤ its own), and
voters be drawn by Poisson subsampling at rate γ (:class:`dpaudit.systems.PrivateKNN`).

* ``"knn-multinomial"`` — the paper's parametric model (§6): ``H_S = Mult(k, P_q)`` and
  ``H_S′ = Mult(k, P_q) + Ber(ν)·(1{y′} − Mult(1, P_q^k))``, with ``P_q`` the law of a voter's
  label and ``P_q^k`` that of the k-th voter's, both **computed exactly** from the ranked
  labels (``P_q = Σ_r ν(r) e_{y_r} / k``, ``P_q^k = Σ_t NegBin(t) e_{y_t}``, the limits of the
  paper's estimates from subsample draws), and ν the closed-form inclusion probability of
  rank r_q (:func:`dpaudit.systems.private_prediction.knn.topk_inclusion_probability`). It
  treats the k voters as independent; the true voters are the first k kept ranks, whose
  histogram is less variable (about 0.8× the multinomial variance at k = 200, γ = 0.2).
* ``"knn-subsample"`` — the exact law of the subsampled votes (what the system does): the
  voters are the first k kept ranks; the point enters iff kept and fewer than k closer
  training points are kept, displacing the k-th voter (with replacement: the reference
  code's multiset draw, coupled).

**Output distributions** ``[p̄, p̄′] = [E Q(H_S), E Q(H_S′)]`` (Q the exact noisy-argmax
probabilities, Chadha et al. 2024 Eq. 4) are Rao–Blackwellised Monte Carlo averages over
``model_draws`` draws of the histogram: Q is exact per draw, only the average over histograms
is sampled. Under Poisson sampling the point's own coin is averaged analytically:
``p̄′ = mean[(1 − γ a_i) Q(H_i) + γ a_i Q(H_i + e_{y′} − e_{Y_i})]`` (a_i: the point would
vote; Y_i: the k-th voter), so ``D_α(p̄‖p̄′)`` stays below the subsampled-Gaussian claim by
joint convexity. The control variate ``J(μ)(H − μ)`` (J the Jacobian of Q at the exact mean
μ of H) removes the first-order sampling noise; the standard errors are reported. For the
paper's model with C ≤ 3 classes the exact Poissonisation of
:func:`dpaudit.attacks.multinomial_output_probabilities` is used instead. The samplers draw
``H_S`` / ``H_S′`` per experiment (the direct simulation of the pipeline's ``monte-carlo``
sampler; for ``"knn-subsample"`` it is the system itself).

**Crafters** (Pois-NatQ, App. D.3). A poison x helps a natural-query adversary in proportion
to ``E(x) = Σ_i P(x among the k voters of q_i) = Σ_i ν(r_{q_i}(x))`` (at most γ·n_Q).
:class:`KNNPoisonSearch` picks the poison maximising E among the test rows (the audited
queries and the poisoning source), among the training rows (a relabelled copy), or builds it
in feature space as the paper does: for the queries whose expected vote is class c, count
how often each training point is among their k nearest, and average those points with the
counts as weights; the best class wins. The label is the second most common class of the
votes the poison can enter (weighted by ν). The choice uses the training data and the
queries, never the mechanism's outputs, so the audit's bound stays valid.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray, IntArray
from dpaudit._validate import check_choice, check_positive, check_positive_int
from dpaudit.attacks._histograms import HistogramSupport
from dpaudit.attacks._multinomial import _multinomial_output
from dpaudit.attacks.adversaries import (
    ADVERSARIES,
    Adversary,
    CraftedPoint,
    NaturalQueries,
)
from dpaudit.attacks.parametric import (
    HISTOGRAM_MODELS,
    FlipEstimate,
    ModelEstimation,
    ModelInputs,
    flip_estimate,
)
from dpaudit.systems.private_prediction.knn import (
    draw_votes,
    histograms,
    knn_context,
    kth_neighbour_probabilities,
    poison_ranks,
    poisson_topk_ranks,
    topk_inclusion_probability,
)

__all__ = [
    "KNN_POISON_POOLS",
    "KNNHistogramModel",
    "KNNPoisonSearch",
    "KNNSubsampleModel",
    "expected_topk_count",
    "expected_votes",
    "model_knn_multinomial",
    "model_knn_subsample",
]

KNN_POISON_POOLS: tuple[str, ...] = ("test", "train", "embedding")
_EXACT_MAX_CLASSES = 3


# =============================================================================================
# Rao–Blackwellised output distributions
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class OutputEstimate(ResultMixin):
    """``[p̄, p̄′]`` of a model and how they were computed.

    Attributes:
        probabilities: ``(2, C)``: row 0 under S, row 1 under S′.
        standard_error: Monte Carlo standard errors ``(2, C)`` (zeros when exact).
        method: ``"exact"`` or ``"rao-blackwellised monte carlo"`` (``+ control variate``).
        draws: histograms drawn (0 when exact).
    """

    probabilities: FloatArray
    standard_error: FloatArray
    method: str
    draws: int


def _unique_q(hists: np.ndarray, sigma: float) -> np.ndarray:
    from dpaudit.mechanisms import argmax_probabilities

    uniq, inv = np.unique(hists, axis=0, return_inverse=True)
    return np.asarray(argmax_probabilities(uniq.astype(np.float64), sigma))[inv.ravel()]


@dataclasses.dataclass(frozen=True)
class BaseEstimate(ResultMixin):
    """``p̄ = E Q(H_S)`` of one query from M draws: the part every added point shares.

    Attributes:
        plain: ``mean Q(H_i)``.
        plain_se: its standard error.
        cv: ``mean[Q(H_i) − J(μ)(H_i − μ)]`` (control variate), or None without μ.
        cv_se: its standard error.
        draws: M.
    """

    plain: FloatArray
    plain_se: FloatArray
    cv: FloatArray | None
    cv_se: FloatArray | None
    draws: int


def base_estimate(h: IntArray, sigma: float, mean: FloatArray | None = None) -> BaseEstimate:
    """The S-side Rao–Blackwellised estimate (and its control-variate version, with the
    exact mean μ of H; J from :func:`dpaudit.mechanisms.argmax_probabilities_jacobian`)."""
    from dpaudit.mechanisms import argmax_probabilities_jacobian

    m = h.shape[0]
    q = _unique_q(h, sigma)
    cv = cv_se = None
    if mean is not None:
        _, jac = argmax_probabilities_jacobian(np.asarray(mean, dtype=np.float64), sigma)
        r = q - (h - mean) @ jac.T
        cv, cv_se = r.mean(axis=0), r.std(axis=0) / np.sqrt(m)
    return BaseEstimate(q.mean(axis=0), q.std(axis=0) / np.sqrt(m), cv, cv_se, int(m))


def rao_blackwell_output(
    h: IntArray,
    h_alt: IntArray,
    weight: FloatArray,
    sigma: float,
    mean: FloatArray | None = None,
    base: BaseEstimate | None = None,
) -> OutputEstimate:
    """``p̄ = mean Q(H_i)`` and ``p̄′ = mean[(1 − w_i) Q(H_i) + w_i Q(H̃_i)]`` over draws.

    With ``mean`` (the exact E[H]) the control variate ``J(mean)(H_i − mean)`` is subtracted
    (its expectation is 0), unless that makes an entry negative (then the plain averages are
    used). Only the draws the point changes are evaluated for p̄′ − p̄; ``base`` (the shared
    :func:`base_estimate` of the same draws) saves the S side.

    Args:
        h: ``(M, C)`` histograms under S.
        h_alt: ``(M, C)`` histograms with the point in.
        weight: ``(M,)`` probabilities w_i that the point is in, given draw i.
        sigma: noise σ.
        mean: exact E[H] ``(C,)`` or None.
        base: the S-side estimate of these draws, if already computed.

    Returns:
        :class:`OutputEstimate` (the S′ row's standard error ignores the covariance of the
        two parts).
    """
    m = h.shape[0]
    b = base_estimate(h, sigma, mean) if base is None else base
    moved = np.flatnonzero((weight > 0) & np.any(h_alt != h, axis=1))
    dmean = np.zeros(h.shape[1])
    dvar = np.zeros(h.shape[1])
    if moved.size:
        d = weight[moved, None] * (_unique_q(h_alt[moved], sigma) - _unique_q(h[moved], sigma))
        dmean = d.sum(axis=0) / m
        dvar = np.maximum((d**2).sum(axis=0) / m - dmean**2, 0.0)
    p, se, method = b.plain, b.plain_se, "rao-blackwellised monte carlo"
    if b.cv is not None and np.all(b.cv >= 0) and np.all(b.cv + dmean >= 0):
        p, se, method = b.cv, b.cv_se, method + " + control variate"
    out = np.clip(np.stack([p, p + dmean]), 0.0, None)
    out /= out.sum(axis=1, keepdims=True)
    se2 = np.stack([se, np.sqrt(se**2 + dvar / m)])
    return OutputEstimate(out, se2, method, int(m))


# =============================================================================================
# The paper's model
# =============================================================================================


def _shared_base(shared: dict | None, key: tuple, h, sigma: float, mean) -> BaseEstimate:
    """The S-side estimate of a query's draws, computed once per query and σ (the draws
    depend only on the query's column, so every added point on it shares them)."""
    if shared is None:
        return base_estimate(h, sigma, mean)
    if key not in shared:
        shared[key] = base_estimate(h, sigma, mean)
    return shared[key]


def _label_law(labels: IntArray, weights: FloatArray, num_classes: int) -> FloatArray:
    p = np.bincount(labels, weights=weights, minlength=num_classes)
    return p / p.sum()


@dataclasses.dataclass(frozen=True, eq=False)
class _KNNModelBase(ResultMixin):
    def _cached(self, sigma: float, compute) -> OutputEstimate:
        s = check_positive("sigma", sigma)
        cache = self.__dict__.setdefault("_outputs", {})
        if s not in cache:
            cache[s] = compute(s)
        return cache[s]

    def output_distributions(self, sigma: float) -> FloatArray:
        """``[E Q(H_S), E Q(H_S′)]``, shape ``(2, C)`` (module notes)."""
        return self.output_estimate(sigma).probabilities

    @property
    def affected_teacher(self) -> int:
        """−1: the point is a teacher of its own, not given to one."""
        return -1

    def claim_support(self, max_support: int) -> HistogramSupport:
        """One histogram (the expected votes, rounded): Private-kNN's claim is
        data-independent, so the histograms only label the cache."""
        check_positive_int("max_support", max_support)
        v = np.rint(self.expected_votes()).astype(np.int64)[None, :]
        return HistogramSupport(v, np.ones(1), 0.0)


@dataclasses.dataclass(frozen=True, eq=False)
class KNNHistogramModel(_KNNModelBase):
    """The paper's model of Private-kNN's votes on one query (Chadha et al. 2024 §6).

    Attributes:
        probabilities: ``P_q`` ``(C,)``.
        last_probabilities: ``P_q^k`` ``(C,)``.
        inclusion: ν, the probability that the point is among the k voters.
        label: y′.
        k: voters.
        draws: Monte Carlo draws of the output estimate (C > 3).
        seed: seed of those draws.
        estimation: how the model was obtained.

    Example:
        >>> m = KNNHistogramModel([0.7, 0.3], [0.6, 0.4], 0.2, 1, 20, 256, 0)
        >>> p = m.output_distributions(3.0)
        >>> bool(p[1, 1] > p[0, 1])
        True
    """

    probabilities: FloatArray
    last_probabilities: FloatArray
    inclusion: float
    label: int
    k: int
    draws: int
    seed: Any
    estimation: ModelEstimation | None = None
    shared: dict | None = dataclasses.field(default=None, repr=False)

    @property
    def num_classes(self) -> int:
        """C."""
        return int(np.size(self.probabilities))

    def expected_votes(self) -> FloatArray:
        """``k·P_q``."""
        return self.k * np.asarray(self.probabilities, dtype=np.float64)

    def output_estimate(self, sigma: float) -> OutputEstimate:
        """The output distributions and how they were computed."""
        return self._cached(sigma, self._compute)

    def _compute(self, s: float) -> OutputEstimate:
        p = np.asarray(self.probabilities, dtype=np.float64)
        pk = np.asarray(self.last_probabilities, dtype=np.float64)
        c, y, nu = p.size, self.label, float(self.inclusion)
        if c <= _EXACT_MAX_CLASSES:
            base = _multinomial_output(tuple(p.tolist()), self.k, s, (0.0,) * c)
            alt = np.zeros(c)
            for j in np.flatnonzero(pk > 0):
                off = np.ones(c)
                off[y] += 1.0
                off[j] -= 1.0  # + e_y′ − e_j, shifted by one everywhere (Q is shift invariant)
                alt += pk[j] * _multinomial_output(tuple(p.tolist()), self.k, s, tuple(off))
            out = np.stack([base, (1 - nu) * base + nu * alt])
            return OutputEstimate(out / out.sum(1, keepdims=True), np.zeros((2, c)), "exact", 0)
        gen = np.random.default_rng(self.seed)
        h = gen.multinomial(self.k, p, size=self.draws).astype(np.int64)
        last = gen.choice(c, size=self.draws, p=pk)
        h_alt = h.copy()
        h_alt[:, y] += 1
        h_alt[np.arange(self.draws), last] -= 1
        base = _shared_base(self.shared, ("paper", s), h, s, self.k * p)
        return rao_blackwell_output(h, h_alt, np.full(self.draws, nu), s, base=base)

    def sampler(self, *, neighbour: bool = False) -> KNNMultinomialSampler:
        """A picklable ``histogram_sampler(gen, size)`` for H_S (or H_S′)."""
        return KNNMultinomialSampler(
            np.asarray(self.probabilities),
            np.asarray(self.last_probabilities),
            float(self.inclusion),
            int(self.label),
            int(self.k),
            bool(neighbour),
        )

    def cache_key(self) -> tuple[Any, ...]:
        """Identifies the law of H_S."""
        return ("knn-multinomial", np.asarray(self.probabilities).tobytes(), self.k)


@dataclasses.dataclass(frozen=True, eq=False)
class KNNMultinomialSampler:
    """Draws of the paper's model: ``Mult(k, P)`` (+ ``Ber(ν)(e_y′ − Mult(1, P^k))``)."""

    probabilities: np.ndarray
    last_probabilities: np.ndarray
    inclusion: float
    label: int
    k: int
    neighbour: bool

    def __call__(self, gen: np.random.Generator, size: int) -> IntArray:
        h = gen.multinomial(self.k, self.probabilities, size=size).astype(np.int64)
        if not self.neighbour:
            return h
        inside = np.flatnonzero(gen.random(size) < self.inclusion)
        last = gen.choice(self.probabilities.size, size=inside.size, p=self.last_probabilities)
        h[inside, self.label] += 1
        np.add.at(h, (inside, last), -1)
        return h


# =============================================================================================
# The exact subsampling model
# =============================================================================================


@dataclasses.dataclass(frozen=True, eq=False)
class KNNSubsampleModel(_KNNModelBase):
    """The exact law of Private-kNN's votes on one query with and without the point.

    Attributes:
        neighbour_labels: the query's ranked neighbour labels ``(R,)``.
        rank: r_q, the point's rank.
        label: y′.
        k: voters.
        sampling_rate: γ.
        sampling: ``"poisson"`` or ``"with-replacement"``.
        num_points: n.
        num_classes: C.
        draws: Monte Carlo draws of the output estimate.
        seed: their seed.
        estimation: how the model was obtained.

    Example:
        >>> lab = np.array([0] * 30 + [1] * 30)
        >>> m = KNNSubsampleModel(lab, 1, 1, 10, 0.5, "poisson", 60, 2, 512, 0)
        >>> round(m.inclusion, 3)
        0.5
    """

    neighbour_labels: IntArray
    rank: int
    label: int
    k: int
    sampling_rate: float
    sampling: str
    num_points: int
    num_classes: int
    draws: int
    seed: Any
    estimation: ModelEstimation | None = None
    shared: dict | None = dataclasses.field(default=None, repr=False)

    @property
    def inclusion(self) -> float:
        """ν(r_q) (Poisson sampling)."""

        return float(topk_inclusion_probability(self.rank, self.k, self.sampling_rate))

    def expected_votes(self) -> FloatArray:
        """E[H_S] under Poisson sampling, ``Σ_r ν(r) e_{y_r}``."""

        r = np.arange(1, np.size(self.neighbour_labels) + 1)
        nu = topk_inclusion_probability(r, self.k, self.sampling_rate)
        return np.bincount(self.neighbour_labels, weights=nu, minlength=self.num_classes)

    def output_estimate(self, sigma: float) -> OutputEstimate:
        """The output distributions and how they were computed."""
        return self._cached(sigma, self._compute)

    def _compute(self, s: float) -> OutputEstimate:

        gen = np.random.default_rng(self.seed)
        lab = np.asarray(self.neighbour_labels)
        if self.sampling != "poisson":
            h, h2 = draw_votes(
                lab, rows=self.draws, k=self.k, sampling_rate=self.sampling_rate,
                num_classes=self.num_classes, gen=gen, sampling=self.sampling,
                num_points=self.num_points, point_rank=self.rank, point_label=self.label,
            )  # fmt: skip
            base = _shared_base(self.shared, ("replacement", s), h, s, None)
            return rao_blackwell_output(h, h2, np.ones(self.draws), s, base=base)
        ranks = poisson_topk_ranks(self.draws, self.k, self.sampling_rate, lab.size, gen)
        voters = lab[ranks - 1]
        h = histograms(voters, self.num_classes)
        could = ranks[:, -1] >= self.rank
        h_alt = h.copy()
        rows = np.flatnonzero(could)
        h_alt[rows, self.label] += 1
        np.add.at(h_alt, (rows, voters[rows, -1]), -1)
        w = self.sampling_rate * could.astype(np.float64)
        base = _shared_base(self.shared, ("poisson", s), h, s, self.expected_votes())
        return rao_blackwell_output(h, h_alt, w, s, base=base)

    def sampler(self, *, neighbour: bool = False) -> KNNSubsampleSampler:
        """A picklable ``histogram_sampler(gen, size)``: the system's own draws."""
        return KNNSubsampleSampler(
            np.asarray(self.neighbour_labels),
            int(self.rank),
            int(self.label),
            int(self.k),
            float(self.sampling_rate),
            self.sampling,
            int(self.num_points),
            int(self.num_classes),
            bool(neighbour),
        )

    def cache_key(self) -> tuple[Any, ...]:
        """Identifies the law of H_S."""
        return ("knn-subsample", np.asarray(self.neighbour_labels).tobytes(), self.k)


@dataclasses.dataclass(frozen=True, eq=False)
class KNNSubsampleSampler:
    """Draws of Private-kNN's votes on one query (S, or S′ with the point)."""

    neighbour_labels: np.ndarray
    rank: int
    label: int
    k: int
    sampling_rate: float
    sampling: str
    num_points: int
    num_classes: int
    neighbour: bool
    chunk: int = 4096

    def __call__(self, gen: np.random.Generator, size: int) -> IntArray:

        out = []
        for start in range(0, size, self.chunk):
            h, h2 = draw_votes(
                self.neighbour_labels, rows=min(self.chunk, size - start), k=self.k,
                sampling_rate=self.sampling_rate, num_classes=self.num_classes, gen=gen,
                sampling=self.sampling, num_points=self.num_points,
                point_rank=self.rank if self.neighbour else None, point_label=self.label,
            )  # fmt: skip
            out.append(h2 if self.neighbour else h)
        return np.concatenate(out) if out else np.zeros((0, self.num_classes), np.int64)


# =============================================================================================
# Modellers (the registry entries)
# =============================================================================================


def _estimation(inputs: ModelInputs, method: str, draws: int) -> ModelEstimation:
    changed = np.asarray(inputs.paired.changed)[:, inputs.position].astype(np.int64)
    flips: FlipEstimate = flip_estimate(
        np.zeros_like(changed), changed, confidence_level=inputs.confidence_level
    )
    k = int(inputs.instantiations.k)
    return ModelEstimation(
        method=method,
        neighbour_estimator="closed-form",
        num_instantiations=int(draws),
        num_votes=int(draws) * k,
        flips=flips,
    )


def _query(inputs: ModelInputs) -> tuple[Any, Any, IntArray, int, Any, dict]:
    """The column's ranked labels, the point's rank, and the column's seed and shared cache:
    the draws depend only on the query (its column of the training phase), so every added
    point evaluated on it reuses them (common random numbers across adversaries)."""
    inst, nb = inputs.instantiations, inputs.paired
    labels = np.asarray(nb.neighbour_labels[inputs.position])
    rank = int(nb.ranks[inputs.position])
    col = int(inputs.column)
    seed = np.random.SeedSequence(inst.seed.entropy, spawn_key=(*inst.seed.spawn_key, col))
    shared = inst.model_cache.setdefault(("column", col, inst.model_draws), {})
    return inst, nb, labels, rank, seed, shared


def model_knn_multinomial(inputs: ModelInputs) -> KNNHistogramModel:
    """The paper's model for one audited column (``P_q``, ``P_q^k``, ν in closed form)."""

    inst, nb, labels, rank, seed, shared = _query(inputs)
    r = np.arange(1, labels.size + 1)
    p = _label_law(
        labels, topk_inclusion_probability(r, inst.k, inst.sampling_rate), inst.num_classes
    )
    pk = _label_law(
        labels,
        kth_neighbour_probabilities(labels.size, inst.k, inst.sampling_rate),
        inst.num_classes,
    )
    nu = float(topk_inclusion_probability(rank, inst.k, inst.sampling_rate))
    est = _estimation(
        inputs, "closed form from the ranked labels (Chadha et al. 2024 sec. 6)", inst.model_draws
    )
    return KNNHistogramModel(p, pk, nu, int(nb.label), inst.k, inst.model_draws, seed, est, shared)


def model_knn_subsample(inputs: ModelInputs) -> KNNSubsampleModel:
    """The exact subsampling model for one audited column."""
    inst, nb, labels, rank, seed, shared = _query(inputs)
    est = _estimation(inputs, "exact law of the subsampled votes", inst.model_draws)
    return KNNSubsampleModel(
        labels, rank, int(nb.label), inst.k, inst.sampling_rate, inst.sampling,
        inst.num_points, inst.num_classes, inst.model_draws, seed, est, shared,
    )  # fmt: skip


HISTOGRAM_MODELS.register("knn-multinomial", model_knn_multinomial)
HISTOGRAM_MODELS.register("knn-subsample", model_knn_subsample)


# =============================================================================================
# Pois-NatQ crafters: the poison that enters the most natural queries' votes
# =============================================================================================


def expected_votes(ranked_labels: IntArray, k: int, sampling_rate: float, num_classes: int):
    """``E[H_q] = Σ_r ν(r) e_{y_r}`` per query, ``(n_q, C)``."""

    lab = np.asarray(ranked_labels)
    nu = topk_inclusion_probability(np.arange(1, lab.shape[1] + 1), k, sampling_rate)
    offs = (np.arange(lab.shape[0]) * num_classes)[:, None]
    flat = np.bincount((lab + offs).ravel(), weights=np.broadcast_to(nu, lab.shape).ravel(),
                       minlength=lab.shape[0] * num_classes)  # fmt: skip
    return flat.reshape(lab.shape[0], num_classes)


def expected_topk_count(ranks: ArrayLike, k: int, sampling_rate: float) -> FloatArray:
    """``E(x) = Σ_i ν(r_{q_i}(x))``: expected number of natural queries whose k voters
    include x (Chadha et al. 2024 App. D.3), summed over the last axis of ``ranks``.

    Example:
        >>> round(float(expected_topk_count([1, 5, 10_000], 10, 0.2)), 6)
        0.4
    """
    return topk_inclusion_probability(np.asarray(ranks), k, sampling_rate).sum(axis=-1)


@dataclasses.dataclass(frozen=True)
class KNNPoisonSearch:
    """Pois-NatQ crafter for Private-kNN: the poison with the largest E(x) (module notes).

    Attributes:
        pool: ``"test"`` (the audited queries and the source), ``"train"`` (a relabelled
            copy of a training point) or ``"embedding"`` (the paper's weighted average).
        name: the crafter's name.
    """

    pool: str = "train"
    name: str = ""

    def __post_init__(self) -> None:
        check_choice("pool", self.pool, KNN_POISON_POOLS)
        if not self.name:
            object.__setattr__(self, "name", f"knn-poison-{self.pool}")

    def craft(
        self,
        x: ArrayLike,
        true_label: int,
        votes: ArrayLike,
        *,
        source_index: int = -1,
        context: Any = None,
    ) -> CraftedPoint:
        """The poison for the natural queries of a Private-kNN training phase.

        Args:
            x: the poisoning source row (the last query row of the training phase).
            true_label: its label (unused: the poison is searched for).
            votes: its votes (unused).
            source_index: its index in the test set.
            context: the training phase
                (:class:`dpaudit.systems.private_prediction.knn.KNNInstantiations`); default:
                the one whose last query row is ``x``
                (:func:`dpaudit.systems.private_prediction.knn.knn_context`), since the pipeline
                passes crafters only the source query.

        Raises:
            ValueError: no Private-kNN training phase on these queries (audit it with
                ``--system private-knn``).
        """
        ctx = knn_context(x) if context is None else context
        if ctx is None:
            raise ValueError(
                f"crafter {self.name!r} needs the Private-kNN training phase of these queries "
                "(it searches the training set): audit it with --system private-knn"
            )
        return craft_knn_poison(ctx, self.pool, name=self.name, source_index=source_index)


def _pool_candidates(ctx: Any, pool: str, natural: int) -> tuple[np.ndarray, np.ndarray]:
    """(E(x) per candidate, candidate rows in feature space) of a pool."""
    ranked = ctx.neighbours.rows(np.arange(natural))
    queries = ctx.queries[:natural]
    if pool == "train":
        nu_pos = np.empty(ranked.sq_distance.shape)
        for i in range(natural):
            row = ranked.sq_distance[i]
            r = np.searchsorted(row, row, side="right") + 1
            nu_pos[i] = topk_inclusion_probability(r, ctx.k, ctx.sampling_rate)
        score = np.zeros(ctx.num_points)
        np.add.at(score, ranked.index.ravel(), nu_pos.ravel())
        return score, ctx.features
    cands = ctx.queries
    score = np.array(
        [
            expected_topk_count(poison_ranks(ranked, queries, c), ctx.k, ctx.sampling_rate)
            for c in cands
        ]
    )
    return score, cands


def _embedding_candidates(ctx: Any, natural: int) -> tuple[np.ndarray, np.ndarray]:
    """Per predicted class: the counts-weighted average of its queries' k nearest points."""
    ranked = ctx.neighbours.rows(np.arange(natural))
    ev = expected_votes(ranked.labels, ctx.k, ctx.sampling_rate, ctx.num_classes)
    pred = ev.argmax(axis=1)
    rows, scores = [], []
    for c in np.unique(pred):
        idx = ranked.index[pred == c, : ctx.k].ravel()
        w = np.bincount(idx, minlength=ctx.num_points).astype(np.float64)
        sel = np.flatnonzero(w)
        rows_sel = np.asarray(ctx.inputs)[sel].astype(np.float64)
        point_in = (w[sel, None] * rows_sel).sum(axis=0) / w.sum()
        point = ctx.transform(point_in[None, :])[0]
        ranks = poison_ranks(ranked, ctx.queries[:natural], point)
        rows.append(point_in)
        scores.append(expected_topk_count(ranks, ctx.k, ctx.sampling_rate))
    return np.array(scores), np.array(rows)


def craft_knn_poison(
    ctx: Any, pool: str, *, name: str = "", source_index: int = -1
) -> CraftedPoint:
    """The E(x)-maximising poison of a pool for a Private-kNN training phase ``ctx``
    (:class:`dpaudit.systems.private_prediction.knn.KNNInstantiations`; its last query row is
    the source).

    Returns:
        :class:`dpaudit.attacks.CraftedPoint` in the input space, labelled with the second
        most common class of the ν-weighted expected votes of the queries it can enter
        (``votes``, rounded); ``true_label`` is the training label (train pool) or the most
        common class of those votes.
    """
    check_choice("pool", pool, KNN_POISON_POOLS)
    natural = ctx.queries.shape[0] - 1
    if pool == "embedding":
        score, rows_in = _embedding_candidates(ctx, natural)
        best = int(np.argmax(score))
        x_in = rows_in[best]
        point = ctx.transform(x_in[None, :])[0]
    else:
        score, rows = _pool_candidates(ctx, pool, natural)
        best = int(np.argmax(score))
        point = rows[best]
        x_in = np.asarray(ctx.inputs if pool == "train" else ctx.query_inputs)[best]
    ranked = ctx.neighbours.rows(np.arange(natural))
    ranks = poison_ranks(ranked, ctx.queries[:natural], point)
    nu = topk_inclusion_probability(ranks, ctx.k, ctx.sampling_rate)
    mass = nu @ expected_votes(ranked.labels, ctx.k, ctx.sampling_rate, ctx.num_classes)
    order = np.lexsort((np.arange(mass.size), -mass))
    true = int(ctx.labels[best]) if pool == "train" else int(order[0])
    x_arr = np.array(x_in, dtype=np.float64)
    x_arr.setflags(write=False)
    idx = source_index if (pool == "test" and best == natural) else -1
    return CraftedPoint(
        x_arr,
        int(order[1]),
        true,
        idx,
        name or f"knn-poison-{pool}",
        np.rint(mass).astype(np.int64),
    )


for _sid, _pool, _label in (
    (10, "test", "Pois-NatQ (test)"),
    (11, "train", "Pois-NatQ (train)"),
    (12, "embedding", "Pois-NatQ (embedding)"),
):
    ADVERSARIES.register(
        f"pois-natq-{_pool}",
        Adversary(
            f"pois-natq-{_pool}",
            KNNPoisonSearch(_pool),
            NaturalQueries(),
            f"Private-kNN: the {_pool} poison with the largest expected number of natural "
            "queries whose k voters it joins (Chadha et al. 2024 App. D.3), natural queries",
            _label,
            _sid,
        ),
    )
