"""Parametric histogram models of PATE and CaPC (paper 000 §5.1, §5.2).

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
histogram, so its output is one draw from the mixture ``p̄ = E_H[Q(H)]`` (Q from paper 000
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
(:class:`dpaudit.experiments.engine.NoisyArgmaxBlock`,
:func:`dpaudit.mechanisms.sample_argmax_counts_from`).

The training side (:func:`train_instantiations`, :func:`retrain_with_points`) drives
:class:`dpaudit.systems.TeacherEnsemble`: N_g instantiations of the training phase, and
retrainings that touch only the teacher whose part receives the point.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import special, stats

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._rng import as_generator, as_seed_sequence, block_seeds
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_counts,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.errors import FallbackWarning

__all__ = [
    "ALGORITHMS",
    "NEIGHBOUR_ESTIMATORS",
    "CaPCHistogramModel",
    "CaPCHistogramSampler",
    "FlipEstimate",
    "HistogramSupport",
    "ModelEstimation",
    "PATEHistogramModel",
    "PATEHistogramSampler",
    "PairedVotes",
    "TrainingInstantiations",
    "estimate_capc_model",
    "estimate_pate_model",
    "flip_estimate",
    "multinomial_output_probabilities",
    "retrain_with_points",
    "train_instantiations",
    "transition_matrix",
]

ALGORITHMS: tuple[str, ...] = ("pate", "capc")
NEIGHBOUR_ESTIMATORS: tuple[str, ...] = ("paired", "direct")
#: Binomial tail dropped on each side of a class count (multinomial mass outside the box).
_COUNT_TAIL = 1e-20
#: Standard deviations of Gaussian tail beyond the grid of the x-integral.
_HALF_WIDTH = 9.0
#: Default number of histograms kept when a support is enumerated.
DEFAULT_MAX_SUPPORT = 2**14
_TRUNCATION_WARN = 1e-12


# =============================================================================================
# Exact output distribution of the noisy argmax on multinomial histograms
# =============================================================================================


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise full convolution of non-negative ``(U, n)`` and ``(U, m)`` arrays."""
    if a.shape[1] < b.shape[1]:
        a, b = b, a
    u, n = a.shape
    m = b.shape[1]
    if m == 1:
        return a * b
    pad = np.zeros((u, n + 2 * (m - 1)))
    pad[:, m - 1 : m - 1 + n] = a
    windows = sliding_window_view(pad, m, axis=1)  # [u, k, j] = pad[u, k + j]
    return np.matmul(windows, b[:, ::-1, None])[..., 0]


def _pair_at(a: np.ndarray, off_a: int, b: np.ndarray, off_b: int, total: int) -> np.ndarray:
    """``Σ_s a[s]·b[total − s]`` per row, for sequences starting at indices off_a, off_b."""
    t = total - off_a - off_b
    s_lo = max(0, t - (b.shape[1] - 1))
    s_hi = min(a.shape[1] - 1, t)
    if s_hi < s_lo:
        return np.zeros(a.shape[0])
    s = np.arange(s_lo, s_hi + 1)
    return np.einsum("us,us->u", a[:, s], b[:, t - s])


def _count_range(p: float, k: int) -> tuple[int, int]:
    """Counts of a Bin(k, p) class outside which the mass is below 1e-20 on each side.

    Found on the exact cdf / survival function (``scipy.stats.binom.ppf``/``isf`` lose the
    far tails in floating point and would return the whole range).
    """
    if p >= 1.0:
        return k, k
    h = np.arange(k + 1)
    cdf = stats.binom.cdf(h, k, p)
    sf = stats.binom.sf(h, k, p)
    lo = int(np.argmax(cdf >= _COUNT_TAIL))  # first count with P(X ≤ h) ≥ tail
    hi = int(np.argmax(sf < _COUNT_TAIL)) if np.any(sf < _COUNT_TAIL) else k
    return max(lo - 1, 0), min(hi + 1, k)


def _check_distribution(name: str, value: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    p = check_array(name, value, ndim=1, nonneg=True)
    if p.size < 2:
        raise ValueError(f"{name} must have at least 2 classes, got shape {p.shape}")
    if num_classes is not None and p.size != num_classes:
        raise ValueError(f"{name} must have {num_classes} classes, got {p.size}")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1, got sum {p.sum()!r}")
    p = p / p.sum()
    p.setflags(write=False)
    return p


def multinomial_output_probabilities(
    probabilities: ArrayLike,
    num_votes: int,
    sigma: float,
    *,
    offset: ArrayLike | None = None,
) -> FloatArray:
    """Exact ``E_M[Q(M + offset)]`` for ``M ~ Mult(num_votes, probabilities)``.

    ``Q(H)`` is the output distribution of the Gaussian noisy argmax (paper 000 Eq. 4). The
    expectation over the multinomial is evaluated by Poissonisation (module notes):
    ``P(M = h) = ∏_i Poi(h_i; K p_i) / Z_K`` on ``Σ h_i = K``, so for each x on the
    integration grid ``E[φ(x − v_c) ∏_{i≠c} Φ(x − v_i)]`` is the coefficient of ``z^K`` in a
    product of one power series per class; classes with ``p_i = 0`` contribute a constant
    factor and the most probable class is the remainder ``K − Σ_{i≠top} h_i``. ``Z_K`` is the
    Poisson mass of the same truncated box, so truncation and rounding of the Poisson
    weights cancel to first order. Error: < 1e-13 absolute per class (tested against
    brute-force enumeration and, for point masses, against
    :func:`dpaudit.mechanisms.argmax_probabilities`).

    Args:
        probabilities: the class distribution p of one vote, shape ``(C,)``, summing to 1.
        num_votes: K ≥ 0, the number of multinomial votes.
        sigma: noise standard deviation σ > 0 (vote units).
        offset: votes added to every histogram, shape ``(C,)`` (default zeros); e.g. the one
            vote of an affected teacher.

    Returns:
        ``(C,)`` output probabilities, summing to 1 within 1e-12.

    Raises:
        ValueError, TypeError: bad probabilities, K, σ or offset.

    Example:
        >>> p = multinomial_output_probabilities([0.8, 0.2], 10, 2.0)
        >>> round(float(p.sum()), 12)
        1.0
    """
    p = _check_distribution("probabilities", probabilities)
    k = check_nonneg_int("num_votes", num_votes)
    s = check_positive("sigma", sigma)
    c = p.size
    if offset is None:
        off = np.zeros(c)
    else:
        off = check_array("offset", offset, ndim=1, nonneg=True)
        if off.size != c:
            raise ValueError(f"offset must have {c} entries, got shape {off.shape}")
    return _multinomial_output(tuple(p.tolist()), k, s, tuple(off.tolist())).copy()


@functools.lru_cache(maxsize=4096)
def _multinomial_output(
    p_t: tuple[float, ...], k: int, sigma: float, off_t: tuple[float, ...]
) -> np.ndarray:
    from dpaudit.mechanisms import argmax_probabilities

    p = np.asarray(p_t)
    off = np.asarray(off_t)
    c = p.size
    nz = [int(i) for i in np.flatnonzero(p > 0)]
    if k == 0 or len(nz) == 1:
        votes = off.copy()
        if k:
            votes[nz[0]] += k
        out = np.asarray(argmax_probabilities(votes, sigma), dtype=np.float64)
        out.setflags(write=False)
        return out
    zero = [int(i) for i in np.flatnonzero(p <= 0)]
    top = max(nz, key=lambda i: (p[i], -i))
    others = [i for i in nz if i != top]
    ranges = {i: _count_range(float(p[i]), k) for i in nz}
    # Lower bound on the largest vote (any class's lowest count) and the largest vote.
    v_lo = max(max((ranges[i][0] + off[i]) / sigma for i in nz), float(off.max()) / sigma)
    v_hi = max(max((ranges[i][1] + off[i]) / sigma for i in nz), float(off.max()) / sigma)
    step = min(0.1, 0.25 / math.sqrt(c))
    x = np.arange(v_lo - _HALF_WIDTH, v_hi + _HALF_WIDTH + step, step)
    u = x.size
    weights, big_g, small_g = {}, {}, {}
    for i in nz:
        lo, hi = ranges[i]
        h = np.arange(lo, hi + 1)
        w = stats.poisson.pmf(h, k * p[i])
        z = x[:, None] - (h[None, :] + off[i]) / sigma
        weights[i] = w
        big_g[i] = w[None, :] * special.ndtr(z)
        small_g[i] = w[None, :] * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    log_phi_zero = {i: special.log_ndtr(x - off[i] / sigma) for i in zero}
    log_z = np.sum([log_phi_zero[i] for i in zero], axis=0) if zero else np.zeros(u)
    # Normaliser: Poisson mass of the truncated box at total K (same weights as the sums).
    norm_seq = np.ones((1, 1))
    norm_off = 0
    for i in nz:
        norm_seq = _conv(norm_seq, weights[i][None, :])
        norm_off += ranges[i][0]
    idx = k - norm_off
    z_k = float(norm_seq[0, idx]) if 0 <= idx < norm_seq.shape[1] else 0.0
    if not z_k > 0:  # pragma: no cover - the box always contains the mode
        raise FloatingPointError("multinomial normaliser underflowed")
    # Prefix / suffix products over the non-top classes.
    prefix = [(np.ones((u, 1)), 0)]
    for i in others:
        a, o = prefix[-1]
        prefix.append((_conv(a, big_g[i]), o + ranges[i][0]))
    suffix = [(np.ones((u, 1)), 0)]
    for i in reversed(others):
        a, o = suffix[-1]
        suffix.append((_conv(a, big_g[i]), o + ranges[i][0]))
    suffix = suffix[::-1]  # suffix[j] = product over others[j:]
    top_lo = ranges[top][0]
    rest, rest_off = prefix[-1]
    out = np.zeros(c)
    # Target = top class.
    vals = _pair_at(small_g[top], top_lo, rest, rest_off, k)
    out[top] = float(np.sum(vals * np.exp(log_z)))
    # Targets among the zero classes: φ/Φ at their own offset times the common product.
    base = _pair_at(big_g[top], top_lo, rest, rest_off, k)
    for i in zero:
        z = x - off[i] / sigma
        log_ratio = -0.5 * z * z - 0.5 * math.log(2.0 * math.pi) - log_phi_zero[i]
        out[i] = float(np.sum(base * np.exp(log_ratio + log_z)))
    # Targets among the other non-zero classes.
    for j, i in enumerate(others):
        a, o = prefix[j]
        t = _conv(a, small_g[i])
        b, ob = suffix[j + 1]
        t = _conv(t, b)
        vals = _pair_at(big_g[top], top_lo, t, o + ranges[i][0] + ob, k)
        out[i] = float(np.sum(vals * np.exp(log_z)))
    out *= step / z_k
    out.setflags(write=False)
    return out


# =============================================================================================
# Histogram supports
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class HistogramSupport(ResultMixin):
    """The most probable histograms of a model and their probabilities.

    Attributes:
        votes: int64 histograms, shape ``(S, C)``.
        probabilities: their probabilities, shape ``(S,)`` (sum = 1 − ``dropped_mass``).
        dropped_mass: probability of the histograms left out (beam truncation; 0 when the
            support was enumerated completely).
    """

    votes: IntArray
    probabilities: FloatArray
    dropped_mass: float


def _merge(hist: np.ndarray, prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge identical histograms, adding their probabilities."""
    if hist.shape[0] <= 1:
        return hist, prob
    uniq, inv = np.unique(hist, axis=0, return_inverse=True)
    return uniq, np.bincount(inv.ravel(), weights=prob, minlength=uniq.shape[0])


def _beam(
    hist: np.ndarray, prob: np.ndarray, max_support: int, dropped: float
) -> tuple[np.ndarray, np.ndarray, float]:
    keep = prob > 0
    if hist.shape[0] > max_support:
        cut = np.argpartition(-prob, max_support - 1)[:max_support]
        mask = np.zeros(prob.size, dtype=bool)
        mask[cut] = True
        keep &= mask
    dropped += float(prob[~keep].sum())
    return hist[keep], prob[keep], dropped


def _multinomial_support(
    p: np.ndarray, k: int, max_support: int, abandon_above: float = 1.0
) -> HistogramSupport:
    """Histograms of Mult(k, p) by a binomial chain over the classes, beam-truncated.

    Classes are visited in decreasing probability; class i's count given the votes still
    unassigned (``left``) is ``Bin(left, p_i / Σ_{j later} p_j)``, the last class takes the
    rest. Counts more than 10 standard deviations (+10) from the conditional mean and
    histograms beyond the ``max_support`` most probable are dropped; their exact mass is added
    to ``dropped_mass``. Once more than ``abandon_above`` is dropped the enumeration stops and
    returns an empty support with ``dropped_mass = 1``.
    """
    c = p.size
    order = [int(i) for i in np.argsort(-p, kind="stable") if p[i] > 0]
    hist = np.zeros((1, c), dtype=np.int64)
    prob = np.ones(1)
    left = np.full(1, k, dtype=np.int64)
    dropped = 0.0
    mass_left = 1.0
    for pos, i in enumerate(order):
        if pos == len(order) - 1:
            hist[:, i] = left
            break
        cond = min(1.0, p[i] / mass_left) if mass_left > 0 else 1.0
        mass_left -= p[i]
        lefts = np.unique(left)
        # A window of ±(10 sd + 10) around the mean: whatever it leaves out is counted in
        # ``dropped`` exactly below, so the window affects speed only.
        mean = lefts * cond
        half = 10.0 * np.sqrt(lefts * cond * (1.0 - cond)) + 10.0
        lo = np.maximum(np.floor(mean - half), 0).astype(np.int64)
        hi = np.minimum(np.ceil(mean + half), lefts).astype(np.int64)
        width = int((hi - lo).max()) + 1
        h_tab = lo[:, None] + np.arange(width)[None, :]
        pmf_tab = np.where(
            h_tab <= lefts[:, None], stats.binom.pmf(h_tab, lefts[:, None], cond), 0.0
        )
        row = np.searchsorted(lefts, left)
        cand = prob[:, None] * pmf_tab[row]
        keep = cand > 0
        rows, cols = np.nonzero(keep)
        new_prob = cand[rows, cols]
        dropped += float(prob.sum() - new_prob.sum())
        new_hist = hist[rows].copy()
        new_hist[:, i] = h_tab[row[rows], cols]
        hist, prob, dropped = _beam(new_hist, new_prob, max_support, dropped)
        if dropped > abandon_above:
            return HistogramSupport(np.zeros((0, c), dtype=np.int64), np.zeros(0), 1.0)
        left = k - hist.sum(axis=1)
    return HistogramSupport(hist, prob, min(max(dropped, 0.0), 1.0))


def _categorical_sum_support(
    teacher_probabilities: np.ndarray, choose: int, max_support: int
) -> HistogramSupport:
    """Histograms of the votes of ``choose`` teachers drawn uniformly without replacement
    from the rows of ``teacher_probabilities`` (independent votes), beam-truncated.

    The random subset is generated sequentially: teacher i (of n) is included with
    probability ``(choose − chosen so far)/(n − i)``, which makes every subset of size
    ``choose`` equally likely; the number chosen so far is the histogram's sum.
    """
    n, c = teacher_probabilities.shape
    hist = np.zeros((1, c), dtype=np.int64)
    prob = np.ones(1)
    dropped = 0.0
    for i in range(n):
        row = teacher_probabilities[i]
        support = np.flatnonzero(row > 0)
        remaining = n - i
        need = choose - hist.sum(axis=1)
        p_in = need / remaining
        if choose == n and support.size == 1:
            hist = hist.copy()
            hist[:, support[0]] += 1
            continue
        parts_h, parts_p = [], []
        out_mask = p_in < 1
        if out_mask.any():
            parts_h.append(hist[out_mask])
            parts_p.append(prob[out_mask] * (1 - p_in[out_mask]))
        in_mask = p_in > 0
        if in_mask.any():
            for y in support:
                hh = hist[in_mask].copy()
                hh[:, y] += 1
                parts_h.append(hh)
                parts_p.append(prob[in_mask] * p_in[in_mask] * row[y])
        hist, prob = _merge(np.concatenate(parts_h), np.concatenate(parts_p))
        hist, prob, dropped = _beam(hist, prob, max_support, dropped)
    return HistogramSupport(hist, prob, max(dropped, 0.0))


def _support_output(support: HistogramSupport, sigma: float, offsets: np.ndarray) -> np.ndarray:
    """``Σ_h P(h) Q(h + offset)`` for each offset row (the kept support renormalised)."""
    from dpaudit.mechanisms import argmax_probabilities

    hist = support.votes.astype(np.float64)
    w = support.probabilities / support.probabilities.sum()
    out = np.empty((offsets.shape[0], hist.shape[1]))
    for r, off in enumerate(offsets):
        q = np.asarray(argmax_probabilities(hist + off, sigma), dtype=np.float64)
        out[r] = w @ q
    return out


def _warn_truncation(support: HistogramSupport, what: str) -> None:
    if support.dropped_mass > _TRUNCATION_WARN:
        warnings.warn(
            f"{what}: the histogram support was truncated to {support.votes.shape[0]} "
            f"histograms, leaving out probability {support.dropped_mass:.3g}; the output "
            "distribution is exact on the kept support only (raise max_support)",
            FallbackWarning,
            stacklevel=3,
        )


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
    b = check_counts("before", before, ndim_min=0).ravel()
    a = check_counts("after", after, ndim_min=0).ravel()
    if a.shape != b.shape:
        raise ValueError(f"after must have the shape of before {b.shape}, got {a.shape}")
    if b.size and (b.max() >= c or a.max() >= c):
        raise ValueError(f"before/after must hold labels in 0..{c - 1}")
    counts = np.zeros((c, c))
    np.add.at(counts, (b, a), 1.0)
    rows = counts.sum(axis=1)
    out = np.eye(c)
    seen = rows > 0
    out[seen] = counts[seen] / rows[seen, None]
    return out


def _frequencies(votes: np.ndarray, num_classes: int) -> np.ndarray:
    counts = np.bincount(votes.ravel(), minlength=num_classes).astype(np.float64)
    return counts / counts.sum()


# =============================================================================================
# Samplers
# =============================================================================================


def _draw_categorical(gen: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    u = gen.random(size)
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


@dataclasses.dataclass(frozen=True, eq=False)
class PATEHistogramSampler:
    """``histogram_sampler(gen, size)`` drawing H_S or H_S′ of a PATE model (paper 000 §5.1).

    ``H_S ~ Mult(k, P)``; ``H_S′ = Mult(k−1, P) + e_Y`` with ``Y ~ P′`` when the affected
    teacher is among the k chosen (probability k/m), ``Y ~ P`` otherwise.

    Attributes:
        probabilities: P.
        neighbour_probabilities: P′.
        num_teachers: m.
        teachers_per_query: k.
        neighbour: draw H_S′ (True) or H_S (False).
    """

    probabilities: np.ndarray
    neighbour_probabilities: np.ndarray
    num_teachers: int
    teachers_per_query: int
    neighbour: bool = False

    def __call__(self, gen: np.random.Generator, size: int) -> IntArray:
        k, m = self.teachers_per_query, self.num_teachers
        if not self.neighbour:
            return gen.multinomial(k, self.probabilities, size=size).astype(np.int64)
        base = gen.multinomial(k - 1, self.probabilities, size=size).astype(np.int64)
        affected = gen.random(size) < k / m
        y_p = _draw_categorical(gen, np.cumsum(self.probabilities), size)
        y_n = _draw_categorical(gen, np.cumsum(self.neighbour_probabilities), size)
        y = np.where(affected, y_n, y_p)
        base[np.arange(size), y] += 1
        return base


@dataclasses.dataclass(frozen=True, eq=False)
class CaPCHistogramSampler:
    """``histogram_sampler(gen, size)`` drawing H_S or H_S′ of a CaPC model (paper 000 §5.2).

    Each teacher votes independently from its own distribution (the affected teacher from
    P′ under S′); with k < m a uniformly random subset of k teachers votes.

    Attributes:
        teacher_probabilities: ``(m, C)`` rows P^i.
        neighbour_probabilities: the affected teacher's P′.
        affected_teacher: its index.
        teachers_per_query: k.
        neighbour: draw H_S′ (True) or H_S (False).
        chunk: rows drawn at once (memory ``chunk·m`` floats).
    """

    teacher_probabilities: np.ndarray
    neighbour_probabilities: np.ndarray
    affected_teacher: int
    teachers_per_query: int
    neighbour: bool = False
    chunk: int = 4096

    def __call__(self, gen: np.random.Generator, size: int) -> IntArray:
        probs = np.array(self.teacher_probabilities, dtype=np.float64, copy=True)
        if self.neighbour:
            probs[self.affected_teacher] = self.neighbour_probabilities
        m, c = probs.shape
        k = self.teachers_per_query
        cdf = np.cumsum(probs, axis=1)
        cdf[:, -1] = 1.0
        fixed = (probs.max(axis=1) >= 1.0) & (k == m)
        base = np.bincount(probs[fixed].argmax(axis=1), minlength=c).astype(np.int64)
        rand = np.flatnonzero(~fixed)
        out = np.tile(base, (size, 1))
        if rand.size == 0:
            return out
        for start in range(0, size, self.chunk):
            n = min(self.chunk, size - start)
            u = gen.random((n, rand.size))
            votes = (u[:, :, None] >= cdf[rand][None, :, :-1]).sum(axis=2)
            if k < m:
                keys = gen.random((n, m))
                chosen = np.zeros((n, m), dtype=bool)
                np.put_along_axis(chosen, np.argpartition(keys, k - 1, axis=1)[:, :k], True, 1)
                mask = chosen[:, rand]
            else:
                mask = np.ones((n, rand.size), dtype=bool)
            flat = votes + c * np.arange(n)[:, None]
            counts = np.bincount(flat[mask], minlength=n * c).reshape(n, c)
            out[start : start + n] += counts
        return out


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
    """PATE's parametric histogram model for one query (paper 000 §5.1).

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
        difference carries no rounding from two separate computations. When ``P′ = P``,
        ``p̄ = p̄′ = E[Q(Mult(k, P))]`` (one evaluation).

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


@dataclasses.dataclass(frozen=True)
class CaPCHistogramModel(ResultMixin):
    """CaPC's parametric histogram model for one query (paper 000 §5.2).

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
        raise ValueError(f"before/after must hold labels in 0..{c - 1}")
    return b, a


def _check_predictions(predictions: ArrayLike, c: int) -> np.ndarray:
    preds = check_counts("predictions", predictions, ndim_min=2)
    if preds.ndim != 2:
        raise ValueError(
            f"predictions must have shape (instantiations, teachers), got {preds.shape}"
        )
    if preds.max() >= c:
        raise ValueError(f"predictions must hold labels in 0..{c - 1}, got {preds.max()}")
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
    preds = _check_predictions(predictions, c)
    b, a = _check_pairs(before, after, c)
    check_choice("neighbour_estimator", neighbour_estimator, NEIGHBOUR_ESTIMATORS)
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
    preds = _check_predictions(predictions, c)
    b, a = _check_pairs(before, after, c)
    check_choice("neighbour_estimator", neighbour_estimator, NEIGHBOUR_ESTIMATORS)
    m = preds.shape[1]
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
# Training phase: instantiations and retrainings
# =============================================================================================


@dataclasses.dataclass(frozen=True, eq=False)
class TrainingInstantiations:
    """N_g instantiations of the training phase (paper 000 Alg. 1 lines 4–8) and their votes.

    Attributes:
        algorithm: ``"pate"`` (a fresh random partition each time) or ``"capc"`` (fixed
            parties; only the teachers' own training randomness changes).
        ensembles: the fitted :class:`dpaudit.systems.TeacherEnsemble` of each instantiation.
        queries: the query rows, ``(n_q, d)``.
        predictions: int64 votes ``(N_g, n_q, m)``: entry ``[g, q, i]`` is teacher i's label
            for query q in instantiation g.
        num_classes: C.
        seed: integer entropy of the seed, if any.
    """

    algorithm: str
    ensembles: tuple[Any, ...]
    queries: np.ndarray
    predictions: IntArray
    num_classes: int
    seed: int | None = None

    @property
    def num_instantiations(self) -> int:
        """N_g."""
        return len(self.ensembles)

    @property
    def num_teachers(self) -> int:
        """m."""
        return int(self.predictions.shape[2])


def train_instantiations(
    X: ArrayLike,
    y: ArrayLike,
    queries: ArrayLike,
    *,
    algorithm: str,
    num_teachers: int,
    num_instantiations: int,
    estimator: Any = None,
    num_classes: int | None = None,
    parties: Sequence[ArrayLike] | None = None,
    rng: RngLike = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> TrainingInstantiations:
    """Run the training phase N_g times and record every teacher's vote on the queries.

    PATE draws a fresh random partition per instantiation (§5.1). CaPC keeps the parties
    fixed (``parties``, or one seeded random partition drawn once) and changes only the
    teachers' seeds (§5.2).

    Args:
        X: training features ``(n, d)``.
        y: training labels ``(n,)``.
        queries: query rows ``(n_q, d)``.
        algorithm: ``"pate"`` or ``"capc"``.
        num_teachers: m.
        num_instantiations: N_g ≥ 1.
        estimator: teacher model spec (see :meth:`dpaudit.systems.TeacherEnsemble.fit`).
        num_classes: C (default ``max(y) + 1``).
        parties: CaPC's fixed parties (index arrays); default: a seeded random partition.
        rng: seed.
        n_jobs: joblib workers for teacher training.
        progress: rich progress bars.

    Returns:
        :class:`TrainingInstantiations`.

    Raises:
        ValueError: unknown algorithm, m > n, N_g < 1, bad data.
    """
    from dpaudit._rng import seed_entropy
    from dpaudit.systems import TeacherEnsemble, make_partition

    check_choice("algorithm", algorithm, ALGORITHMS)
    m = check_positive_int("num_teachers", num_teachers)
    ng = check_positive_int("num_instantiations", num_instantiations)
    q = np.asarray(queries)
    if q.ndim == 1:
        q = q[None, :]
    root = as_seed_sequence(rng)
    party_seed, inst_seed = block_seeds(root, 2)
    n = int(np.shape(X)[0])
    if m > n:
        raise ValueError(f"num_teachers must be at most the number of training rows {n}, got {m}")
    partition: Any = "random"
    if algorithm == "capc":
        partition = tuple(parties) if parties is not None else make_partition(n, m, rng=party_seed)
    ensembles = []
    preds = []
    for g, seed in enumerate(block_seeds(inst_seed, ng)):
        ens = TeacherEnsemble.fit(
            X,
            y,
            num_teachers=m,
            partition=partition,
            estimator=estimator,
            num_classes=num_classes,
            rng=seed,
            n_jobs=n_jobs,
            progress=progress,
        )
        ensembles.append(ens)
        preds.append(ens.teacher_predictions(q))
        del g
    predictions = np.stack(preds).astype(np.int64)
    return TrainingInstantiations(
        algorithm=algorithm,
        ensembles=tuple(ensembles),
        queries=q,
        predictions=predictions,
        num_classes=int(ensembles[0].num_classes),
        seed=seed_entropy(rng),
    )


@dataclasses.dataclass(frozen=True)
class PairedVotes(ResultMixin):
    """Votes of one teacher before and after retraining with an added point.

    Attributes:
        instantiation: which instantiation each retraining used, ``(R,)``.
        teacher: which teacher (part) received the point, ``(R,)``.
        before: that teacher's votes on the evaluation rows without the point, ``(R, n_eval)``.
        after: its votes after retraining with the point, ``(R, n_eval)``.
    """

    instantiation: IntArray
    teacher: IntArray
    before: IntArray
    after: IntArray


def _retrain_tasks(ensembles, tasks):
    """Run retraining tasks (module level for joblib): each returns (before, after) votes."""
    out = []
    for g, j, x, label, eval_rows in tasks:
        ens = ensembles[g]
        before = np.asarray(ens.teachers[j].predict(eval_rows), dtype=np.int64)
        new = ens.with_point(x, label, partition=j)
        after = np.asarray(new.teachers[j].predict(eval_rows), dtype=np.int64)
        out.append((before, after))
    return out


def retrain_with_points(
    instantiations: TrainingInstantiations,
    points: ArrayLike,
    labels: ArrayLike,
    *,
    num_retrainings: int,
    eval_rows: Sequence[ArrayLike] | None = None,
    teachers: ArrayLike | None = None,
    rng: RngLike = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> list[PairedVotes]:
    """Paired votes of the affected teacher for each crafted point (R retrainings each).

    Retraining r of point p uses instantiation ``r mod N_g`` and adds the point to one part:
    a uniformly random part (PATE: the point lands in a random part) or ``teachers[p]``
    (CaPC: the party the adversary gives it to). Only that teacher is retrained
    (:meth:`dpaudit.systems.TeacherEnsemble.with_point`).

    Args:
        instantiations: from :func:`train_instantiations`.
        points: crafted features, ``(P, d)``.
        labels: their labels, ``(P,)``.
        num_retrainings: R ≥ 1 per point.
        eval_rows: per point, the rows to read the teacher's votes on (default: the point
            itself, i.e. the repeated query of an adversarial distinguisher).
        teachers: per point, the receiving part (default: random parts).
        rng: seed of the random parts.
        n_jobs: joblib workers (each gets the ensembles once, then a share of the tasks).
        progress: rich progress bar over points.

    Returns:
        One :class:`PairedVotes` per point.

    Raises:
        ValueError: shapes, R < 1, teacher indices out of range.
    """
    pts = np.asarray(points)
    if pts.ndim == 1:
        pts = pts[None, :]
    labs = np.atleast_1d(np.asarray(labels, dtype=np.int64))
    if labs.shape != (pts.shape[0],):
        raise ValueError(f"labels must have shape ({pts.shape[0]},), got {labs.shape}")
    r_count = check_positive_int("num_retrainings", num_retrainings)
    ng = instantiations.num_instantiations
    m = instantiations.num_teachers
    if eval_rows is None:
        evals = [pts[i : i + 1] for i in range(pts.shape[0])]
    else:
        if len(eval_rows) != pts.shape[0]:
            raise ValueError(f"eval_rows must have one entry per point ({pts.shape[0]})")
        evals = [np.atleast_2d(np.asarray(e)) for e in eval_rows]
    gen = as_generator(rng)
    if teachers is None:
        parts = gen.integers(0, m, size=(pts.shape[0], r_count))
    else:
        t = np.asarray(teachers, dtype=np.int64).ravel()
        if t.shape != (pts.shape[0],) or t.min() < 0 or t.max() >= m:
            raise ValueError(
                f"teachers must hold one part index in [0, {m}) per point, got {teachers!r}"
            )
        parts = np.repeat(t[:, None], r_count, axis=1)
    inst = np.tile(np.arange(r_count) % ng, (pts.shape[0], 1))
    tasks = [
        (int(inst[p, r]), int(parts[p, r]), pts[p], int(labs[p]), evals[p])
        for p in range(pts.shape[0])
        for r in range(r_count)
    ]
    ensembles = instantiations.ensembles
    if n_jobs == 1 or len(tasks) < 2:
        results = []
        chunks = [tasks[i : i + r_count] for i in range(0, len(tasks), r_count)]
        iterator = chunks
        if progress:
            from dpaudit.errors import require

            rp = require("rich.progress", "cli")
            iterator = rp.track(chunks, description="retraining teachers")
        for chunk in iterator:
            results.extend(_retrain_tasks(ensembles, chunk))
    else:
        from dpaudit.errors import require

        joblib = require("joblib", "ml")
        workers = joblib.effective_n_jobs(n_jobs)
        bounds = np.linspace(0, len(tasks), workers + 1).astype(int)
        chunks = [
            tasks[bounds[i] : bounds[i + 1]] for i in range(workers) if bounds[i + 1] > bounds[i]
        ]
        parts_out = joblib.Parallel(n_jobs=len(chunks))(
            joblib.delayed(_retrain_tasks)(ensembles, ch) for ch in chunks
        )
        results = [item for part in parts_out for item in part]
    out = []
    for p in range(pts.shape[0]):
        rows = results[p * r_count : (p + 1) * r_count]
        out.append(
            PairedVotes(
                instantiation=inst[p].astype(np.int64),
                teacher=parts[p].astype(np.int64),
                before=np.stack([b for b, _ in rows]),
                after=np.stack([a for _, a in rows]),
            )
        )
    return out
