"""Histogram supports and samplers of parametric vote models.

The histogram models of Chadha et al. 2024 ("Auditing Private Prediction", arXiv:2402.09403,
§5.1–5.2), used by :mod:`dpaudit.attacks.parametric`. Each experiment of an audit draws a
fresh histogram H, so its output is one draw from the mixture ``p̄ = E_H[Q(H)]`` (Q the
noisy-argmax output probabilities, Chadha et al. 2024 Eq. 4), and counts of T experiments are
exactly ``Multinomial(T, p̄)``. ``p̄`` is computed exactly:

* multinomial histograms (exchangeable teachers): by Poissonisation, in
  :mod:`dpaudit.attacks._multinomial`;
* sums of independent categorical votes (fixed teachers): by enumeration of the support of the
  histogram (duplicates merged; beam-truncated beyond ``max_support`` histograms, with the
  truncated probability mass reported; deterministic teachers cost nothing).

The samplers (:class:`PATEHistogramSampler`, :class:`CaPCHistogramSampler`) draw ``H_S`` or
``H_S′`` per experiment as ``histogram_sampler(gen, size)`` for the direct simulation
(:class:`dpaudit.mechanisms.NoisyArgmaxBlock`).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from scipy import stats

from dpaudit._results import ResultMixin
from dpaudit._typing import FloatArray, IntArray
from dpaudit._validate import (
    check_array,
    check_flag,
    check_memory,
    check_nonneg_int,
    check_positive_int,
)
from dpaudit.attacks._multinomial import _check_distribution
from dpaudit.errors import FallbackWarning

__all__ = [
    "DEFAULT_MAX_SUPPORT",
    "CaPCHistogramSampler",
    "HistogramSupport",
    "PATEHistogramSampler",
]

#: Default number of histograms kept when a support is enumerated.
DEFAULT_MAX_SUPPORT = 2**14
_TRUNCATION_WARN = 1e-12


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
    keep = _beam_mask(prob, max_support)
    dropped += float(prob[~keep].sum())
    return hist[keep], prob[keep], dropped


def _beam_mask(prob: np.ndarray, max_support: int) -> np.ndarray:
    """The entries a beam keeps: the positive ones, and of those only the ``max_support``
    largest (``np.argpartition``'s choice among ties)."""
    keep = prob > 0
    if prob.size > max_support:
        cut = np.argpartition(-prob, max_support - 1)[:max_support]
        mask = np.zeros(prob.size, dtype=bool)
        mask[cut] = True
        keep &= mask
    return keep


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
        flat = np.flatnonzero(cand > 0)  # row-major: (parent, count) pairs in order
        new_prob = cand.ravel()[flat]
        dropped += float(prob.sum() - new_prob.sum())
        # The beam picks among the candidates' probabilities first; only the kept
        # histograms are built (the same selection and order as building all of them).
        keep = _beam_mask(new_prob, max_support)
        dropped += float(new_prob[~keep].sum())
        kept = np.flatnonzero(keep)
        rows, cols = np.divmod(flat[kept], width)
        hist = hist[rows]
        hist[:, i] = h_tab[row[rows], cols]
        prob = new_prob[kept]
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
# Samplers
# =============================================================================================


def _draw_categorical(gen: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    u = gen.random(size)
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


@dataclasses.dataclass(frozen=True, eq=False)
class PATEHistogramSampler:
    """``histogram_sampler(gen, size)`` drawing H_S or H_S′ of a PATE model (Chadha et al. 2024
    §5.1).

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

    def __post_init__(self) -> None:
        _check_distribution("probabilities", self.probabilities)
        p = check_array("probabilities", self.probabilities)
        _check_distribution("neighbour_probabilities", self.neighbour_probabilities, p.size)
        q = check_array("neighbour_probabilities", self.neighbour_probabilities)
        m = check_positive_int("num_teachers", self.num_teachers)
        k = check_positive_int("teachers_per_query", self.teachers_per_query)
        if k > m:
            raise ValueError(f"teachers_per_query must be at most num_teachers={m}, got {k}")
        for name, value in (("probabilities", p), ("neighbour_probabilities", q)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "num_teachers", m)
        object.__setattr__(self, "teachers_per_query", k)
        object.__setattr__(self, "neighbour", check_flag("neighbour", self.neighbour))

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
    """``histogram_sampler(gen, size)`` drawing H_S or H_S′ of a CaPC model (Chadha et al. 2024
    §5.2).

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

    def __post_init__(self) -> None:
        tp = check_array("teacher_probabilities", self.teacher_probabilities, ndim=2, nonneg=True)
        m, c = tp.shape
        if c < 2:
            raise ValueError(f"teacher_probabilities must have at least 2 classes, got {tp.shape}")
        sums = tp.sum(axis=1)
        if np.any(np.abs(sums - 1.0) > 1e-9):
            bad = sums[np.abs(sums - 1.0) > 1e-9][0]
            raise ValueError(
                f"teacher_probabilities rows must sum to 1, got a row summing to {bad!r}"
            )
        _check_distribution("neighbour_probabilities", self.neighbour_probabilities, c)
        q = check_array("neighbour_probabilities", self.neighbour_probabilities)
        j = check_nonneg_int("affected_teacher", self.affected_teacher)
        if j >= m:
            raise ValueError(f"affected_teacher must be in [0, {m}), got {j}")
        k = check_positive_int("teachers_per_query", self.teachers_per_query)
        if k > m:
            raise ValueError(f"teachers_per_query must be at most {m} teachers, got {k}")
        n = check_positive_int("chunk", self.chunk)
        # per chunk: uniforms and keys (n, m) float64, comparisons (n, m, C) booleans
        check_memory(n * m * (24.0 + c), f"CaPCHistogramSampler with chunk={n}, {m} teachers")
        object.__setattr__(self, "teacher_probabilities", tp)
        object.__setattr__(self, "neighbour_probabilities", q)
        object.__setattr__(self, "affected_teacher", j)
        object.__setattr__(self, "teachers_per_query", k)
        object.__setattr__(self, "neighbour", check_flag("neighbour", self.neighbour))
        object.__setattr__(self, "chunk", n)

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
