"""Parametric histogram models of PATE and CaPC (Chadha et al. 2024 §5.1, §5.2).

About 10^8 experiments per query are needed to audit a private-prediction interface, and an
experiment would otherwise mean a fresh training phase. Paper 000 models the randomness of
training instead, per query q:

* **PATE** (§5.1): every teacher trained on a random part of S votes from one distribution
  ``P_q``; the teacher whose part holds the added point (x′, y′) votes from ``P′_q``:
  ``H_S = Mult(k, P_q)`` and ``H_S′ = Mult(k−1, P_q) + Mult(1, P′_q)``. With k of m teachers
  chosen per query (Alg. 1 CHOOSE) the affected teacher votes with probability k/m.
* **CaPC** (§5.2): parties are fixed, teacher i votes from ``P_q^i``, and the teacher of the
  party that receives the point (teacher 1 in the paper, any ``affected_teacher`` here) from
  ``P_q^{1′}``: ``H_S = Σ_i Mult(1, P_q^i)``, ``H_S′ = Mult(1, P_q^{1′}) + Σ_{i≠1} Mult(1, P_q^i)``.

**Estimation** (maximum likelihood from N_g instantiations of the training phase). ``P_q`` is
the pooled frequency of the teachers' votes (PATE), ``P_q^i`` the frequency of teacher i's
votes across instantiations (CaPC). For the neighbour, R retrainings of one teacher with the
point added give *paired* votes (before, after) of the same teacher. The paper's estimator
(``neighbour_estimator="direct"``) takes ``P′`` = frequency of the after-votes. The default
``"paired"`` estimator writes ``P′ = P·K`` with ``K(y′|y)`` the probability that the point
turns a teacher voting y into one voting y′, and takes the MLE ``K̂(y′|y) = n_{y→y′}/n_y``
(identity for rows y never observed): it is the MLE of ``P′`` under that factorisation, and
it gives ``P′ = P`` exactly when no retraining changed a vote, where the direct estimator
would show spurious leakage from the sampling noise of R ≪ N_g·m votes. The uncertainty of
the estimate is reported as the number of instantiations and retrainings and a
Clopper–Pearson interval on the flip probability of the affected teacher
(:class:`FlipEstimate`).

**Output distributions** (what the audit samples from). Each experiment draws a fresh
histogram, so its output is one draw from the mixture ``p̄ = E_H[Q(H)]`` (Q from Chadha et al. 2024
Eq. 4), and counts of T experiments are exactly ``Multinomial(T, p̄)``. ``p̄`` is computed
exactly:

* multinomial histograms (PATE): by Poissonisation, ``Mult(K, p)`` is the law of independent
  ``Poisson(K p_i)`` conditioned on their sum being K, so
  ``E[Q_c(H)] = κ·∫ [z^K] (g_c ∏_{i≠c} G_i)(z; x) dx`` with
  ``G_i(z; x) = Σ_h Poi(h; K p_i) Φ(x − h_i/σ) z^h``, ``g_c`` the same with φ, and κ the
  normaliser; the coefficients are products of non-negative sequences (no cancellation), the
  x-integral is the trapezoidal rule of :mod:`dpaudit.mechanisms` on a grid of step
  ``0.25/√C`` (tails beyond 9 standard deviations and binomial tails below 1e-20 dropped).
  Agreement with brute-force enumeration is ≤ 1e-14 in the tests.
* sums of independent categorical votes (CaPC): by enumeration of the support of the
  histogram (duplicates merged; beam-truncated beyond ``max_support`` histograms, with the
  truncated probability mass reported; deterministic teachers cost nothing).

The samplers (:class:`PATEHistogramSampler`, :class:`CaPCHistogramSampler`) draw ``H_S`` or
``H_S′`` per experiment as ``histogram_sampler(gen, size)`` for the direct simulation
(:class:`dpaudit.mechanisms.NoisyArgmaxBlock`,
:func:`dpaudit.mechanisms.sample_argmax_counts_from`).

The training side (:func:`train_instantiations`, :func:`retrain_with_points`) drives
:class:`dpaudit.systems.TeacherEnsemble`: N_g instantiations of the training phase, and
retrainings that touch only the teacher whose part receives the point.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_counts,
    check_memory,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.attacks._histograms import (
    DEFAULT_MAX_SUPPORT,
    CaPCHistogramSampler,
    HistogramSupport,
    PATEHistogramSampler,
    _categorical_sum_support,
    _multinomial_support,
    _support_output,
    _warn_truncation,
)
from dpaudit.attacks._multinomial import (
    _check_distribution,
    _multinomial_output,
    _multinomial_pair_output,
)

__all__ = [
    "HISTOGRAM_MODELS",
    "NEIGHBOUR_ESTIMATORS",
    "CaPCHistogramModel",
    "FlipEstimate",
    "HistogramModel",
    "ModelEstimation",
    "ModelInputs",
    "PATEHistogramModel",
    "estimate_capc_model",
    "estimate_pate_model",
    "flip_estimate",
    "model_independent",
    "model_multinomial",
    "transition_matrix",
]

NEIGHBOUR_ESTIMATORS: tuple[str, ...] = ("paired", "direct")

# =============================================================================================
# Estimation summaries
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class FlipEstimate(ResultMixin):
    """How often adding the point changed the affected teacher's vote, with a CI.

    Attributes:
        num_retrainings: R, the paired (before, after) votes observed.
        num_flips: how many of them differ.
        estimate: ``num_flips / R`` (NaN when R = 0).
        interval: two-sided Clopper–Pearson interval (Clopper & Pearson 1934).
        confidence_level: its level.
        method: ``"clopper-pearson"``.
    """

    num_retrainings: int
    num_flips: int
    estimate: float
    interval: ConfidenceInterval
    confidence_level: float
    method: str = "clopper-pearson"


def flip_estimate(
    before: ArrayLike, after: ArrayLike, *, confidence_level: float = 0.95
) -> FlipEstimate:
    """Flip probability of the affected teacher with a Clopper–Pearson interval.

    Args:
        before: the teacher's votes without the point, shape ``(R,)`` (or any shape).
        after: its votes with the point, same shape.
        confidence_level: level of the two-sided interval, in (0, 1).

    Returns:
        :class:`FlipEstimate` (interval ``[0, 1]`` when there are no pairs).

    Raises:
        ValueError: shapes differ, negative or non-integer votes, bad level.

    Example:
        >>> fe = flip_estimate([0, 0, 1, 1], [2, 0, 2, 1])
        >>> fe.num_flips, round(fe.estimate, 2)
        (2, 0.5)
    """
    from dpaudit.bounds import clopper_pearson

    b = check_counts("before", before, ndim_min=0)
    a = check_counts("after", after, ndim_min=0)
    if a.shape != b.shape:
        raise ValueError(f"after must have the shape of before {b.shape}, got {a.shape}")
    level = check_confidence_level(confidence_level)
    r = int(b.size)
    flips = int(np.sum(a != b))
    if r == 0:
        return FlipEstimate(0, 0, float("nan"), ConfidenceInterval(0.0, 1.0), level)
    ci = clopper_pearson(flips, r, confidence_level=level)
    return FlipEstimate(r, flips, flips / r, ci, level)


@dataclasses.dataclass(frozen=True)
class ModelEstimation(ResultMixin):
    """How a histogram model was estimated.

    Attributes:
        method: ``"maximum-likelihood"``.
        neighbour_estimator: ``"paired"`` or ``"direct"`` (module notes).
        num_instantiations: N_g, training phases run.
        num_votes: teacher votes behind ``P`` (PATE: N_g·m pooled; CaPC: N_g per teacher).
        flips: the affected teacher's flip probability with its interval.
    """

    method: str
    neighbour_estimator: str
    num_instantiations: int
    num_votes: int
    flips: FlipEstimate


def transition_matrix(before: ArrayLike, after: ArrayLike, num_classes: int) -> FloatArray:
    """MLE of ``K(y′|y)``, the law of a teacher's vote after adding the point given before.

    ``K̂(y′|y) = n_{y→y′} / n_y`` from paired votes; rows of classes never seen before the
    point are the identity (no change observed).

    Args:
        before: votes without the point, shape ``(R,)``.
        after: votes with the point, shape ``(R,)``.
        num_classes: C.

    Returns:
        ``(C, C)`` row-stochastic matrix.

    Raises:
        ValueError: shapes differ or labels outside ``0..C-1``.

    Example:
        >>> transition_matrix([0, 0, 1], [1, 0, 1], 2).tolist()
        [[0.5, 0.5], [0.0, 1.0]]
    """
    c = check_positive_int("num_classes", num_classes)
    _check_class_memory(c, "paired", "transition_matrix")
    b = check_counts("before", before, ndim_min=0).ravel()
    a = check_counts("after", after, ndim_min=0).ravel()
    if a.shape != b.shape:
        raise ValueError(f"after must have the shape of before {b.shape}, got {a.shape}")
    if b.size and (b.max() >= c or a.max() >= c):
        raise ValueError(f"before/after must hold labels in 0..{c - 1} (num_classes={c})")
    counts = np.zeros((c, c))
    np.add.at(counts, (b, a), 1.0)
    rows = counts.sum(axis=1)
    out = np.eye(c)
    seen = rows > 0
    out[seen] = counts[seen] / rows[seen, None]
    return out


def _check_class_memory(c: int, estimator: str, what: str) -> None:
    """Refuse a number of classes whose (C, C) transition matrices (3 of them, paired
    estimator) or frequency vectors would exceed the memory cap."""
    need = 24.0 * c * c if estimator == "paired" else 16.0 * c
    check_memory(need, f"{what} with num_classes={c}")


def _frequencies(votes: np.ndarray, num_classes: int) -> np.ndarray:
    counts = np.bincount(votes.ravel(), minlength=num_classes).astype(np.float64)
    return counts / counts.sum()


# =============================================================================================
# Models
# =============================================================================================


def _check_k_m(k: int, m: int) -> tuple[int, int]:
    m = check_positive_int("num_teachers", m)
    k = check_positive_int("teachers_per_query", k)
    if k > m:
        raise ValueError(f"teachers_per_query must be at most num_teachers={m}, got {k}")
    return k, m


@dataclasses.dataclass(frozen=True)
class PATEHistogramModel(ResultMixin):
    """PATE's parametric histogram model for one query (Chadha et al. 2024 §5.1).

    Attributes:
        probabilities: ``P_q``, the vote distribution of a teacher on a random part, ``(C,)``.
        neighbour_probabilities: ``P′_q``, that of the teacher whose part holds the point.
        num_teachers: m.
        teachers_per_query: k (≤ m) teachers vote per query.
        estimation: how the model was estimated (``None`` for a model given by hand).

    Example:
        >>> model = PATEHistogramModel([0.9, 0.1], [0.5, 0.5], 10, 10)
        >>> pbar = model.output_distributions(2.0)
        >>> pbar.shape
        (2, 2)
    """

    probabilities: FloatArray
    neighbour_probabilities: FloatArray
    num_teachers: int
    teachers_per_query: int
    estimation: ModelEstimation | None = None

    def __post_init__(self) -> None:
        p = _check_distribution("probabilities", self.probabilities)
        q = _check_distribution("neighbour_probabilities", self.neighbour_probabilities, p.size)
        k, m = _check_k_m(self.teachers_per_query, self.num_teachers)
        object.__setattr__(self, "probabilities", p)
        object.__setattr__(self, "neighbour_probabilities", q)
        object.__setattr__(self, "num_teachers", m)
        object.__setattr__(self, "teachers_per_query", k)

    @property
    def num_classes(self) -> int:
        """Number of classes C."""
        return int(self.probabilities.size)

    def sampler(self, *, neighbour: bool = False) -> PATEHistogramSampler:
        """A picklable ``histogram_sampler(gen, size)`` for H_S (or H_S′ with ``neighbour``)."""
        return PATEHistogramSampler(
            self.probabilities,
            self.neighbour_probabilities,
            self.num_teachers,
            self.teachers_per_query,
            bool(neighbour),
        )

    def output_distributions(self, sigma: float) -> FloatArray:
        """Exact output distributions ``[E Q(H_S), E Q(H_S′)]`` of the noisy argmax, ``(2, C)``.

        With ``A_y = E[Q(M + e_y)]``, ``M ~ Mult(k−1, P)``
        (:func:`multinomial_output_probabilities`): ``p̄ = Σ_y P(y) A_y`` and
        ``p̄′ = (k/m) Σ_y P′(y) A_y + (1 − k/m) p̄``; both use the same ``A_y``, so their
        difference carries no rounding from two separate computations. For ``k ≥ 2`` both
        ``Σ_y P(y) A_y`` and ``Σ_y P′(y) A_y`` come from one dual-number pass over the
        Poissonised product (:func:`~dpaudit.attacks._multinomial._multinomial_pair_output`;
        equal to the per-offset sums within 1e-12 absolute, about 10× faster at C = 10,
        k = 250). When ``P′ = P``, ``p̄ = p̄′ = E[Q(Mult(k, P))]`` (one evaluation).

        Args:
            sigma: noise standard deviation σ > 0.

        Returns:
            ``(2, C)``: row 0 under S, row 1 under S′.
        """
        s = check_positive("sigma", sigma)
        p, q = self.probabilities, self.neighbour_probabilities
        k, m = self.teachers_per_query, self.num_teachers
        c = p.size
        if np.array_equal(p, q):  # no vote changes: one multinomial, H_S′ = H_S
            pbar = _multinomial_output(tuple(p.tolist()), k, s, (0.0,) * c)
            return np.stack([pbar, pbar])
        if k >= 2 and np.count_nonzero(p) >= 2:  # both rows in one pass (same law)
            both = _multinomial_pair_output(tuple(p.tolist()), tuple(q.tolist()), k - 1, s)
            return np.stack([both[0], (k / m) * both[1] + (1.0 - k / m) * both[0]])
        ys = np.flatnonzero((p > 0) | (q > 0))
        a = np.zeros((c, c))
        for y in ys:
            off = np.zeros(c)
            off[y] = 1.0
            a[y] = _multinomial_output(tuple(p.tolist()), k - 1, s, tuple(off.tolist()))
        pbar = p @ a
        return np.stack([pbar, (k / m) * (q @ a) + (1.0 - k / m) * pbar])

    def support(self, *, max_support: int = DEFAULT_MAX_SUPPORT) -> HistogramSupport:
        """The most probable histograms of ``H_S ~ Mult(k, P)`` (binomial chain, beam-truncated).

        Args:
            max_support: histograms kept, ≥ 1.

        Returns:
            :class:`HistogramSupport` (``dropped_mass`` = probability left out).
        """
        ms = check_positive_int("max_support", max_support)
        return _multinomial_support(self.probabilities, self.teachers_per_query, ms)

    @property
    def affected_teacher(self) -> int:
        """−1: the point lands in a random part (no fixed affected teacher)."""
        return -1

    def claim_support(self, max_support: int) -> HistogramSupport:
        """Histograms over which the data-dependent claim is averaged (given up, with
        ``dropped_mass = 1``, once more than half the mass would be left out)."""
        ms = check_positive_int("max_support", max_support)
        return _multinomial_support(self.probabilities, self.teachers_per_query, ms, 0.5)

    def cache_key(self) -> tuple[Any, ...]:
        """Identifies the distribution of ``H_S`` (models with equal keys share a claim)."""
        return ("multinomial", self.probabilities.tobytes(), self.teachers_per_query)


@dataclasses.dataclass(frozen=True)
class CaPCHistogramModel(ResultMixin):
    """CaPC's parametric histogram model for one query (Chadha et al. 2024 §5.2).

    Attributes:
        teacher_probabilities: ``P_q^i`` for every teacher i, ``(m, C)``.
        neighbour_probabilities: ``P_q^{1′}``, the affected teacher's vote distribution once
            its party holds the point.
        affected_teacher: index of the party that receives the point.
        teachers_per_query: k (≤ m) teachers vote per query.
        max_support: histograms kept when the support is enumerated.
        estimation: how the model was estimated.

    Example:
        >>> model = CaPCHistogramModel([[1, 0], [1, 0], [0, 1]], [0, 1], 0, 3)
        >>> np.round(model.output_distributions(1.0)[:, 0], 4).tolist()
        [0.7602, 0.2398]
    """

    teacher_probabilities: FloatArray
    neighbour_probabilities: FloatArray
    affected_teacher: int
    teachers_per_query: int
    max_support: int = DEFAULT_MAX_SUPPORT
    estimation: ModelEstimation | None = None

    def __post_init__(self) -> None:
        tp = check_array("teacher_probabilities", self.teacher_probabilities, ndim=2, nonneg=True)
        if tp.shape[1] < 2:
            raise ValueError(f"teacher_probabilities must have >= 2 classes, got {tp.shape}")
        if np.any(np.abs(tp.sum(axis=1) - 1.0) > 1e-9):
            raise ValueError("teacher_probabilities rows must sum to 1")
        tp = tp / tp.sum(axis=1, keepdims=True)
        tp.setflags(write=False)
        q = _check_distribution(
            "neighbour_probabilities", self.neighbour_probabilities, tp.shape[1]
        )
        k, m = _check_k_m(self.teachers_per_query, tp.shape[0])
        j = check_nonneg_int("affected_teacher", self.affected_teacher)
        if j >= m:
            raise ValueError(f"affected_teacher must be in [0, {m}), got {j}")
        object.__setattr__(self, "teacher_probabilities", tp)
        object.__setattr__(self, "neighbour_probabilities", q)
        object.__setattr__(self, "affected_teacher", j)
        object.__setattr__(self, "teachers_per_query", k)
        object.__setattr__(self, "max_support", check_positive_int("max_support", self.max_support))

    @property
    def num_teachers(self) -> int:
        """Number of teachers m."""
        return int(self.teacher_probabilities.shape[0])

    @property
    def num_classes(self) -> int:
        """Number of classes C."""
        return int(self.teacher_probabilities.shape[1])

    @property
    def probabilities(self) -> FloatArray:
        """The affected teacher's vote distribution without the point (``P_q^1``)."""
        return self.teacher_probabilities[self.affected_teacher]

    def sampler(self, *, neighbour: bool = False) -> CaPCHistogramSampler:
        """A picklable ``histogram_sampler(gen, size)`` for H_S (or H_S′ with ``neighbour``)."""
        return CaPCHistogramSampler(
            self.teacher_probabilities,
            self.neighbour_probabilities,
            self.affected_teacher,
            self.teachers_per_query,
            bool(neighbour),
        )

    def _others(self) -> np.ndarray:
        return np.delete(self.teacher_probabilities, self.affected_teacher, axis=0)

    def output_distributions(self, sigma: float) -> FloatArray:
        """Exact output distributions ``[E Q(H_S), E Q(H_S′)]``, shape ``(2, C)``.

        With M the votes of the other chosen teachers, ``A_y = E[Q(M_{k−1} + e_y)]`` and
        ``B = E[Q(M_k)]`` (M_k: k of the m−1 others, used when the affected teacher is not
        chosen): ``p̄ = (k/m) P¹·A + (1 − k/m) B``, ``p̄′ = (k/m) P¹′·A + (1 − k/m) B``.
        Supports are enumerated exactly unless larger than ``max_support`` (then a
        :class:`dpaudit.errors.FallbackWarning` reports the mass left out).

        Args:
            sigma: noise standard deviation σ > 0.

        Returns:
            ``(2, C)``: row 0 under S, row 1 under S′.
        """
        s = check_positive("sigma", sigma)
        k, m, c = self.teachers_per_query, self.num_teachers, self.num_classes
        p, q = self.probabilities, self.neighbour_probabilities
        others = self._others()
        ys = np.flatnonzero((p > 0) | (q > 0))
        offsets = np.eye(c)[ys]
        sup = _categorical_sum_support(others, k - 1, self.max_support)
        _warn_truncation(sup, "CaPC output distribution")
        a = np.zeros((c, c))
        a[ys] = _support_output(sup, s, offsets)
        pbar, qbar = p @ a, q @ a
        if k < m:
            sup_k = _categorical_sum_support(others, k, self.max_support)
            _warn_truncation(sup_k, "CaPC output distribution")
            b = _support_output(sup_k, s, np.zeros((1, c)))[0]
            pbar = (k / m) * pbar + (1 - k / m) * b
            qbar = (k / m) * qbar + (1 - k / m) * b
        if np.array_equal(p, q):
            qbar = pbar.copy()
        return np.stack([pbar, qbar])

    def support(self, *, max_support: int | None = None) -> HistogramSupport:
        """The most probable histograms of ``H_S`` (all m teachers, k chosen).

        Args:
            max_support: histograms kept (default: the model's ``max_support``).

        Returns:
            :class:`HistogramSupport`.
        """
        ms = (
            self.max_support
            if max_support is None
            else check_positive_int("max_support", max_support)
        )
        return _categorical_sum_support(self.teacher_probabilities, self.teachers_per_query, ms)

    def claim_support(self, max_support: int) -> HistogramSupport:
        """Histograms over which the data-dependent claim is averaged."""
        return self.support(max_support=max_support)

    def cache_key(self) -> tuple[Any, ...]:
        """Identifies the distribution of ``H_S`` (models with equal keys share a claim)."""
        return ("independent", self.teacher_probabilities.tobytes(), self.teachers_per_query)


# =============================================================================================
# Estimation from training instantiations
# =============================================================================================


def _check_pairs(before: ArrayLike, after: ArrayLike, c: int) -> tuple[np.ndarray, np.ndarray]:
    b = check_counts("before", before, ndim_min=0).ravel()
    a = check_counts("after", after, ndim_min=0).ravel()
    if a.shape != b.shape:
        raise ValueError(f"after must have the shape of before {b.shape}, got {a.shape}")
    if b.size == 0:
        raise ValueError("before must hold at least one retraining (paired vote)")
    if b.max() >= c or a.max() >= c:
        raise ValueError(f"before/after must hold labels in 0..{c - 1} (num_classes={c})")
    return b, a


def _check_predictions(predictions: ArrayLike, c: int) -> np.ndarray:
    preds = check_counts("predictions", predictions, ndim_min=2)
    if preds.ndim != 2:
        raise ValueError(
            f"predictions must have shape (instantiations, teachers), got {preds.shape}"
        )
    if preds.max() >= c:
        raise ValueError(
            f"predictions must hold labels in 0..{c - 1} (num_classes={c}), got {preds.max()}"
        )
    return preds


def estimate_pate_model(
    predictions: ArrayLike,
    before: ArrayLike,
    after: ArrayLike,
    *,
    num_classes: int,
    teachers_per_query: int | None = None,
    neighbour_estimator: str = "paired",
    confidence_level: float = 0.95,
) -> PATEHistogramModel:
    """Maximum-likelihood PATE model for one query from training instantiations (§5.1).

    Args:
        predictions: every teacher's vote in every instantiation, ``(N_g, m)``.
        before: the affected teacher's vote without the point in each retraining, ``(R,)``.
        after: its vote after retraining with the point, ``(R,)``.
        num_classes: C.
        teachers_per_query: k (default m).
        neighbour_estimator: ``"paired"`` (``P′ = P·K̂``) or ``"direct"`` (frequencies of
            ``after``); module notes.
        confidence_level: level of the flip-probability interval.

    Returns:
        :class:`PATEHistogramModel` with its :class:`ModelEstimation`.

    Raises:
        ValueError: bad shapes, labels ≥ C, no retrainings, k > m, unknown estimator.

    Example:
        >>> preds = np.array([[0, 0, 0, 1], [0, 0, 1, 1]])
        >>> model = estimate_pate_model(preds, [0, 1], [1, 1], num_classes=2)
        >>> model.probabilities.tolist(), model.neighbour_probabilities.tolist()
        ([0.625, 0.375], [0.0, 1.0])
    """
    c = check_positive_int("num_classes", num_classes)
    check_choice("neighbour_estimator", neighbour_estimator, NEIGHBOUR_ESTIMATORS)
    _check_class_memory(c, neighbour_estimator, "estimate_pate_model")
    preds = _check_predictions(predictions, c)
    b, a = _check_pairs(before, after, c)
    m = preds.shape[1]
    k = m if teachers_per_query is None else teachers_per_query
    p = _frequencies(preds, c)
    q = p @ transition_matrix(b, a, c) if neighbour_estimator == "paired" else _frequencies(a, c)
    est = ModelEstimation(
        method="maximum-likelihood",
        neighbour_estimator=neighbour_estimator,
        num_instantiations=int(preds.shape[0]),
        num_votes=int(preds.size),
        flips=flip_estimate(b, a, confidence_level=confidence_level),
    )
    return PATEHistogramModel(p, q / q.sum(), m, k, est)


def estimate_capc_model(
    predictions: ArrayLike,
    before: ArrayLike,
    after: ArrayLike,
    *,
    affected_teacher: int,
    num_classes: int,
    teachers_per_query: int | None = None,
    neighbour_estimator: str = "paired",
    confidence_level: float = 0.95,
    max_support: int = DEFAULT_MAX_SUPPORT,
) -> CaPCHistogramModel:
    """Maximum-likelihood CaPC model for one query from training instantiations (§5.2).

    Args:
        predictions: every teacher's vote in every instantiation, ``(N_g, m)`` (fixed
            parties; instantiations differ in the teachers' training randomness only).
        before: the affected teacher's votes without the point in each retraining, ``(R,)``.
        after: its votes with the point, ``(R,)``.
        affected_teacher: the party that receives the point.
        num_classes: C.
        teachers_per_query: k (default m).
        neighbour_estimator: ``"paired"`` or ``"direct"``.
        confidence_level: level of the flip-probability interval.
        max_support: histograms kept when supports are enumerated.

    Returns:
        :class:`CaPCHistogramModel`.

    Raises:
        ValueError: as :func:`estimate_pate_model`, plus a teacher index out of range.

    Example:
        >>> preds = np.array([[0, 0, 1], [0, 0, 1]])
        >>> model = estimate_capc_model(preds, [0, 0], [1, 1], affected_teacher=0, num_classes=2)
        >>> model.neighbour_probabilities.tolist()
        [0.0, 1.0]
    """
    c = check_positive_int("num_classes", num_classes)
    check_choice("neighbour_estimator", neighbour_estimator, NEIGHBOUR_ESTIMATORS)
    _check_class_memory(c, neighbour_estimator, "estimate_capc_model")
    preds = _check_predictions(predictions, c)
    b, a = _check_pairs(before, after, c)
    m = preds.shape[1]
    check_memory(8.0 * m * c, f"estimate_capc_model with num_classes={c} and {m} teachers")
    j = check_nonneg_int("affected_teacher", affected_teacher)
    if j >= m:
        raise ValueError(f"affected_teacher must be in [0, {m}), got {j}")
    k = m if teachers_per_query is None else teachers_per_query
    tp = np.stack([_frequencies(preds[:, i], c) for i in range(m)])
    if neighbour_estimator == "paired":
        q = tp[j] @ transition_matrix(b, a, c)
    else:
        q = _frequencies(a, c)
    est = ModelEstimation(
        method="maximum-likelihood",
        neighbour_estimator=neighbour_estimator,
        num_instantiations=int(preds.shape[0]),
        num_votes=int(preds.shape[0]),
        flips=flip_estimate(b, a, confidence_level=confidence_level),
    )
    return CaPCHistogramModel(tp, q / q.sum(), j, k, max_support, est)


# =============================================================================================
# The model protocol and registry
# =============================================================================================


@runtime_checkable
class HistogramModel(Protocol):
    """A parametric model of one query's vote histogram under S and under S′.

    What the private-prediction audit needs: the exact output distributions of the noisy
    argmax, samplers for the direct simulation, the histograms over which the data-dependent
    claim is averaged, and how the model was estimated.
    """

    @property
    def estimation(self) -> ModelEstimation | None: ...

    @property
    def affected_teacher(self) -> int: ...

    def output_distributions(self, sigma: float) -> FloatArray: ...

    def sampler(self, *, neighbour: bool = False) -> Any: ...

    def claim_support(self, max_support: int) -> HistogramSupport: ...

    def cache_key(self) -> tuple[Any, ...]: ...


@dataclasses.dataclass(frozen=True, eq=False)
class ModelInputs:
    """What a histogram modeller gets for one audited query column.

    Attributes:
        instantiations: the system's trained instantiations (``system.train``).
        paired: the system's retraining result for this column's target (``system.retrain``).
        target: index of the target (crafted point).
        position: position of the column among the target's evaluated columns.
        column: the query column (row of the audited queries).
        affected_teacher: the receiving teacher where the adversary chose it, else −1.
        num_classes: C.
        teachers_per_query: k.
        neighbour_estimator: ``"paired"`` or ``"direct"``.
        confidence_level: level of the flip-probability interval.
        max_support: histograms kept when supports are enumerated.
    """

    instantiations: Any
    paired: Any
    target: int
    position: int
    column: int
    affected_teacher: int
    num_classes: int
    teachers_per_query: int
    neighbour_estimator: str = "paired"
    confidence_level: float = 0.95
    max_support: int = DEFAULT_MAX_SUPPORT


def _teacher_votes(inputs: ModelInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pv = inputs.paired
    return (
        inputs.instantiations.predictions[:, inputs.column, :],
        pv.before[:, inputs.position],
        pv.after[:, inputs.position],
    )


def model_multinomial(inputs: ModelInputs) -> PATEHistogramModel:
    """Exchangeable teachers (a point lands in a random part): :func:`estimate_pate_model`
    from the teachers' votes and the paired votes of the receiving teacher."""
    preds, before, after = _teacher_votes(inputs)
    return estimate_pate_model(
        preds,
        before,
        after,
        num_classes=inputs.num_classes,
        teachers_per_query=inputs.teachers_per_query,
        neighbour_estimator=inputs.neighbour_estimator,
        confidence_level=inputs.confidence_level,
    )


def model_independent(inputs: ModelInputs) -> CaPCHistogramModel:
    """Fixed teachers voting independently (the adversary chooses the receiving one):
    :func:`estimate_capc_model`."""
    preds, before, after = _teacher_votes(inputs)
    return estimate_capc_model(
        preds,
        before,
        after,
        affected_teacher=inputs.affected_teacher,
        num_classes=inputs.num_classes,
        teachers_per_query=inputs.teachers_per_query,
        neighbour_estimator=inputs.neighbour_estimator,
        confidence_level=inputs.confidence_level,
        max_support=inputs.max_support,
    )


HISTOGRAM_MODELS: Registry[Any] = Registry("histogram model")
"""Histogram modellers by the name a system declares (``system.histogram_model``): each is
called with a :class:`ModelInputs` and returns a :class:`HistogramModel`."""
HISTOGRAM_MODELS.register("multinomial", model_multinomial)
HISTOGRAM_MODELS.register("independent", model_independent)
