"""(ε, δ) lower bounds from the success of a distinguishing attack.

Paper 000 §2.2 (Eq. 1 and its FP/FN form) and paper 002 step 3: run the mechanism many
times on neighbouring datasets S and S′, count how often the output lands in a rejection set
O, bound the two probabilities with exact Clopper–Pearson intervals and read off the
smallest ε compatible with (ε, δ)-DP.

Conventions. *Positives* are runs on S′ (the hypothesis the attack tries to detect), so with
O the set where the attack says "S′":

* ``TPR = P(A(S′) ∈ O)`` (estimated by TP/(TP+FN)), ``FPR = P(A(S) ∈ O)`` (FP/(FP+TN));
* (ε, δ)-DP implies ``TPR ≤ e^ε·FPR + δ`` and, on the complement,
  ``1 − FPR ≤ e^ε·(1 − TPR) + δ``; so with ``TPR ≥ TPR_lo`` and ``FPR ≤ FPR_hi``

      ε ≥ max{ log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)) },

  which is paper 000's FP/FN form ``max{(1−δ−FN^u)/FP^u, (1−δ−FP^u)/FN^u}`` (inside a log)
  with ``FN^u = 1 − TPR_lo``.

The confidence is split over the intervals used (union bound): with the default
``orientation="given"`` two one-sided intervals (TPR lower, FPR upper) at ``1 − β/2`` each;
with ``orientation="either"`` (the attack's direction is not fixed in advance, Eq. 1 taken
literally with both ``(p₁ℓ−δ)/p₀ᵘ`` and ``(p₀ℓ−δ)/p₁ᵘ``) four one-sided intervals at
``1 − β/4``. Thresholds chosen on the data are paid for by a held-out split or Bonferroni.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_in_range,
    check_nonneg_int,
    check_probability,
    check_real,
)
from dpaudit.bounds._intervals import _cp_one_sided

__all__ = [
    "Bonferroni",
    "EpsDeltaAudit",
    "Explicit",
    "Split",
    "epsilon_from_confusion",
    "epsilon_from_error_rates",
    "epsilon_from_rejection_set",
    "epsilon_from_scores",
]

_ORIENTATIONS = ("given", "either")


# ---------------------------------------------------------------------------------------------
# Threshold strategies
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Explicit:
    """Use a threshold fixed before seeing the scores: ``O = {score ≥ threshold}``.

    Attributes:
        threshold: finite real number.
    """

    threshold: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", check_real("threshold", self.threshold))


@dataclasses.dataclass(frozen=True)
class Split:
    """Choose the threshold on a random part of the scores, bound ε on the rest.

    Each class of scores is shuffled and its first ``round(fraction·n)`` scores form the
    selection part; the threshold maximising the ε bound there is applied to the held-out
    part, whose counts alone give the reported bound (valid because the held-out scores are
    independent of the choice).

    Attributes:
        fraction: share of each class used for selection, in (0, 1).
        seed: seed of the random split (``None``: fresh entropy, recorded in the result).
    """

    fraction: float = 0.5
    seed: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", check_in_range("fraction", self.fraction, 0.0, 1.0))
        if self.seed is not None:
            object.__setattr__(self, "seed", check_nonneg_int("seed", self.seed))


@dataclasses.dataclass(frozen=True)
class Bonferroni:
    """Try every threshold in ``candidates`` on all the scores at level ``1 − β/m``.

    Attributes:
        candidates: the m thresholds (fixed before seeing the scores), finite, non-empty.
    """

    candidates: tuple[float, ...]

    def __post_init__(self) -> None:
        arr = check_array("candidates", self.candidates, ndim=1)
        object.__setattr__(self, "candidates", tuple(float(x) for x in arr))


ThresholdStrategy = Explicit | Split | Bonferroni


# ---------------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EpsDeltaAudit(ResultMixin):
    """A lower bound on ε at a given δ from one rejection set, with the evidence.

    Attributes:
        epsilon: the lower bound (≥ 0; 0 means no evidence of leakage; may be ``inf``).
        confidence_interval: the one-sided interval ``[epsilon, inf)``.
        confidence_level: joint confidence of the bound, including any selection.
        delta: the δ at which ε is bounded.
        method: ``"clopper-pearson"``.
        orientation: ``"given"`` (O signals S′) or ``"either"`` (both directions tried).
        direction: the inequality that gave ε: ``"tpr/fpr"``, ``"tnr/fnr"`` (and, with
            ``orientation="either"``, ``"fpr/tpr"``, ``"fnr/tnr"``), or ``"none"`` at ε = 0.
        tpr_lower: Clopper–Pearson lower bound on TPR = P(A(S′) ∈ O).
        fpr_upper: Clopper–Pearson upper bound on FPR = P(A(S) ∈ O).
        tpr_upper: upper bound on TPR (``orientation="either"`` only, else ``None``).
        fpr_lower: lower bound on FPR (``orientation="either"`` only, else ``None``).
        tp, fn, fp, tn: the counts the bound was computed from (the held-out part under
            ``Split``).
        interval_level: one-sided level of each Clopper–Pearson bound.
        selection: ``"none"`` (counts given), ``"explicit"``, ``"split"`` or
            ``"bonferroni"``.
        threshold: the threshold used (score-based audits), else ``None``.
        n_candidates: number of rejection sets paid for (1 unless Bonferroni).
        seed: seed of the split (``Split`` only).
    """

    epsilon: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    delta: float
    method: str
    orientation: str
    direction: str
    tpr_lower: float
    fpr_upper: float
    tpr_upper: float | None
    fpr_lower: float | None
    tp: int
    fn: int
    fp: int
    tn: int
    interval_level: float
    selection: str
    threshold: float | None
    n_candidates: int
    seed: int | None = None

    @property
    def fnr_upper(self) -> float:
        """Upper bound on FNR = 1 − TPR (paper 000's FN^u)."""
        return 1.0 - self.tpr_lower

    @property
    def tnr_lower(self) -> float:
        """Lower bound on TNR = 1 − FPR."""
        return 1.0 - self.fpr_upper


# ---------------------------------------------------------------------------------------------
# Vectorised core
# ---------------------------------------------------------------------------------------------

_DIRECTIONS_GIVEN = ("tpr/fpr", "tnr/fnr")
_DIRECTIONS_EITHER = ("tpr/fpr", "tnr/fnr", "fpr/tpr", "fnr/tnr")


def _log_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``log(num/den)`` with ``-inf`` where ``num ≤ 0`` (no evidence) and ``inf`` at den 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.where(num > 0, num, 1.0)) - np.log(den)
    return np.where(num > 0, out, -np.inf)


def _tail(level: float, orientation: str, n_candidates: int = 1) -> float:
    """Tail probability of each one-sided Clopper–Pearson bound under the union bound."""
    k = 2 if orientation == "given" else 4
    return (1.0 - level) / (k * n_candidates)


def _confusion_core(tp, fn, fp, tn, delta: float, tail: float, orientation: str):
    """Bounds and ε candidates for arrays of confusion counts (inputs assumed valid).

    Each one-sided Clopper–Pearson bound has tail probability ``tail``. Returns a dict with
    ``tpr_lower``, ``fpr_upper`` (and ``tpr_upper``, ``fpr_lower`` for
    ``orientation="either"``), ``candidates`` (shape ``(..., D)``, one column per direction)
    and ``epsilon`` (the clipped maximum).
    """
    tp, fn, fp, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fn, fp, tn))
    n_pos, n_neg = tp + fn, fp + tn
    tpr_lo, tpr_hi = _cp_one_sided(tp, n_pos, tail)
    fpr_lo, fpr_hi = _cp_one_sided(fp, n_neg, tail)
    cols = [_log_ratio(tpr_lo - delta, fpr_hi), _log_ratio(1.0 - fpr_hi - delta, 1.0 - tpr_lo)]
    out = {"tpr_lower": tpr_lo, "fpr_upper": fpr_hi}
    if orientation == "either":
        cols += [_log_ratio(fpr_lo - delta, tpr_hi), _log_ratio(1.0 - tpr_hi - delta, 1.0 - fpr_lo)]
        out.update(tpr_upper=tpr_hi, fpr_lower=fpr_lo)
    cand = np.stack(cols, axis=-1)
    out["candidates"] = cand
    out["epsilon"] = np.maximum(cand.max(axis=-1), 0.0)
    return out


def _epsilon_at_beta(
    tp: int, fn: int, fp: int, tn: int, delta: float, beta: float, orientation: str, m: int = 1
) -> float:
    """ε bound from fixed counts at confidence ``1 − beta`` with ``m`` candidates paid for."""
    k = 2 if orientation == "given" else 4
    core = _confusion_core(tp, fn, fp, tn, delta, beta / (k * m), orientation)
    return float(core["epsilon"])


def _make_result(
    tp: int,
    fn: int,
    fp: int,
    tn: int,
    *,
    delta: float,
    level: float,
    orientation: str,
    selection: str,
    threshold: float | None,
    n_candidates: int,
    seed: int | None = None,
) -> EpsDeltaAudit:
    tail = _tail(level, orientation, n_candidates)
    core = _confusion_core(tp, fn, fp, tn, delta, tail, orientation)
    eps = float(core["epsilon"])
    cand = core["candidates"]
    names = _DIRECTIONS_GIVEN if orientation == "given" else _DIRECTIONS_EITHER
    direction = names[int(np.argmax(cand))] if eps > 0 else "none"
    return EpsDeltaAudit(
        epsilon=eps,
        confidence_interval=ConfidenceInterval(eps, math.inf),
        confidence_level=level,
        delta=delta,
        method="clopper-pearson",
        orientation=orientation,
        direction=direction,
        tpr_lower=float(core["tpr_lower"]),
        fpr_upper=float(core["fpr_upper"]),
        tpr_upper=float(core["tpr_upper"]) if "tpr_upper" in core else None,
        fpr_lower=float(core["fpr_lower"]) if "fpr_lower" in core else None,
        tp=int(tp),
        fn=int(fn),
        fp=int(fp),
        tn=int(tn),
        interval_level=1.0 - tail,
        selection=selection,
        threshold=threshold,
        n_candidates=n_candidates,
        seed=seed,
    )


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def _check_common(
    delta: object, confidence_level: object, orientation: object
) -> tuple[float, float]:
    d = check_delta(delta)
    level = check_confidence_level(confidence_level)
    check_choice("orientation", orientation, _ORIENTATIONS)
    return d, level


def epsilon_from_confusion(
    tp: int,
    fn: int,
    fp: int,
    tn: int,
    *,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    orientation: str = "given",
) -> EpsDeltaAudit:
    """Lower bound on ε from the confusion counts of a fixed rejection set.

    Paper 000 §2.2, Eq. (1) in its FP/FN form: with Clopper–Pearson bounds
    ``TPR ≥ TPR_lo``, ``FPR ≤ FPR_hi`` (one-sided, each at ``1 − β/2``),
    ``ε ≥ max{log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)), 0}``.
    With ``orientation="either"`` the reversed inequalities (O signalling S) are added and
    β is split over four one-sided intervals.

    Args:
        tp: runs on S′ with output in O. fn: runs on S′ outside O.
        fp: runs on S with output in O. tn: runs on S outside O.
        delta: δ in [0, 1).
        confidence_level: joint confidence of the bound, in (0, 1).
        orientation: ``"given"`` (default) or ``"either"``.

    Returns:
        :class:`EpsDeltaAudit` with ``epsilon``, the TPR/FPR bounds used and the direction.

    Raises:
        TypeError: non-integer counts.
        ValueError: negative counts, no positives (tp + fn = 0) or no negatives
            (fp + tn = 0), δ ∉ [0, 1), level ∉ (0, 1), unknown orientation.

    Example:
        >>> res = epsilon_from_confusion(400, 100, 50, 450, delta=1e-5)
        >>> round(res.tpr_lower, 4), round(res.fpr_upper, 4), round(res.epsilon, 4)
        (0.7622, 0.1297, 1.7709)
    """
    tp, fn, fp, tn = (
        check_nonneg_int(k, v)
        for k, v in zip(["tp", "fn", "fp", "tn"], (tp, fn, fp, tn), strict=True)
    )
    if tp + fn == 0:
        raise ValueError(f"tp + fn must be positive (no runs on S'), got tp={tp}, fn={fn}")
    if fp + tn == 0:
        raise ValueError(f"fp + tn must be positive (no runs on S), got fp={fp}, tn={tn}")
    d, level = _check_common(delta, confidence_level, orientation)
    return _make_result(
        tp,
        fn,
        fp,
        tn,
        delta=d,
        level=level,
        orientation=orientation,
        selection="none",
        threshold=None,
        n_candidates=1,
    )


def epsilon_from_rejection_set(
    count: int,
    n: int,
    count_neighbour: int,
    n_neighbour: int,
    *,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    orientation: str = "given",
) -> EpsDeltaAudit:
    """Lower bound on ε from how often the output fell in O under S and under S′.

    Paper 000 Eq. (1): ``p₀ = P(A(S) ∈ O)``, ``p₁ = P(A(S′) ∈ O)``; this is
    :func:`epsilon_from_confusion` with ``TP = count_neighbour``, ``FP = count``.

    Args:
        count: runs on S (out of ``n``) whose output was in O.
        n: runs on S, ≥ 1.
        count_neighbour: runs on S′ (out of ``n_neighbour``) whose output was in O.
        n_neighbour: runs on S′, ≥ 1.
        delta: δ in [0, 1).
        confidence_level: in (0, 1).
        orientation: ``"given"`` (O signals S′, default) or ``"either"`` (Eq. 1's two
            directions, β split four ways).

    Returns:
        :class:`EpsDeltaAudit`.

    Raises:
        TypeError, ValueError: counts negative or above their totals, totals 0, bad δ or
            level.

    Example:
        >>> round(epsilon_from_rejection_set(50, 500, 400, 500, delta=1e-5).epsilon, 4)
        1.7709
    """
    count = check_nonneg_int("count", count)
    n = check_nonneg_int("n", n)
    count_neighbour = check_nonneg_int("count_neighbour", count_neighbour)
    n_neighbour = check_nonneg_int("n_neighbour", n_neighbour)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if n_neighbour < 1:
        raise ValueError(f"n_neighbour must be at least 1, got {n_neighbour}")
    if count > n:
        raise ValueError(f"count must be <= n, got count={count}, n={n}")
    if count_neighbour > n_neighbour:
        raise ValueError(
            f"count_neighbour must be <= n_neighbour, got {count_neighbour} > {n_neighbour}"
        )
    return epsilon_from_confusion(
        count_neighbour,
        n_neighbour - count_neighbour,
        count,
        n - count,
        delta=delta,
        confidence_level=confidence_level,
        orientation=orientation,
    )


def epsilon_from_error_rates(fpr_upper: float, fnr_upper: float, *, delta: float = 0.0) -> float:
    """ε implied by upper bounds on the false-positive and false-negative rates.

    Paper 000 §2.2 (FP/FN form of Eq. 1):
    ``ε = max{log((1 − δ − FN^u)/FP^u), log((1 − δ − FP^u)/FN^u), 0}``. A pure function of
    bounds already obtained at some confidence (e.g. from :func:`clopper_pearson`); the
    result is a lower bound at that same confidence.

    Args:
        fpr_upper: upper bound on P(A(S) ∈ O), in [0, 1].
        fnr_upper: upper bound on P(A(S′) ∉ O), in [0, 1].
        delta: δ in [0, 1).

    Returns:
        ε ≥ 0 (``inf`` when a bound is 0 and the other side is positive).

    Raises:
        ValueError: a rate outside [0, 1] or δ ∉ [0, 1).

    Example:
        >>> round(epsilon_from_error_rates(0.1, 0.2, delta=0.0), 4)
        2.0794
    """
    fp = check_probability("fpr_upper", fpr_upper)
    fnr = check_probability("fnr_upper", fnr_upper)
    d = check_delta(delta)
    a = _log_ratio(1.0 - d - fnr, fp)
    b = _log_ratio(1.0 - d - fp, fnr)
    return float(max(a, b, 0.0))


def _check_scores(name: str, scores: ArrayLike) -> FloatArray:
    arr = check_array(name, scores, ndim=1)
    return arr


def _counts_at(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Number of scores ≥ each threshold."""
    return sorted_scores.size - np.searchsorted(sorted_scores, thresholds, side="left")


def epsilon_from_scores(
    positive_scores: ArrayLike,
    negative_scores: ArrayLike,
    *,
    threshold: ThresholdStrategy,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    orientation: str = "given",
) -> EpsDeltaAudit:
    """Lower bound on ε from raw attack scores, with the threshold chosen validly.

    The rejection set is ``O = {score ≥ t}`` (scores oriented so that larger means "S′").
    ``positive_scores`` come from runs on S′, ``negative_scores`` from runs on S. The
    threshold ``t`` comes from the strategy (the small-object design of JAX-Privacy's
    auditor):

    * :class:`Explicit` — fixed in advance; ``selection="explicit"``.
    * :class:`Split` — chosen to maximise the bound on a random selection part, bounded on
      the held-out part; ``selection="split"``.
    * :class:`Bonferroni` — all m candidates bounded at level ``1 − β/m`` on all scores, the
      best one reported; ``selection="bonferroni"``.

    Args:
        positive_scores: 1-d scores of runs on S′.
        negative_scores: 1-d scores of runs on S.
        threshold: an :class:`Explicit`, :class:`Split` or :class:`Bonferroni` object.
        delta: δ in [0, 1).
        confidence_level: joint confidence including the selection, in (0, 1).
        orientation: ``"given"`` or ``"either"`` (see :func:`epsilon_from_confusion`).

    Returns:
        :class:`EpsDeltaAudit` with the threshold used and how it was paid for.

    Raises:
        TypeError: ``threshold`` is not a strategy object.
        ValueError: empty or non-finite scores, a split leaving a part empty, bad δ/level.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> pos, neg = rng.normal(2, 1, 5000), rng.normal(0, 1, 5000)
        >>> res = epsilon_from_scores(pos, neg, threshold=Explicit(1.0), delta=1e-5)
        >>> res.selection, round(res.epsilon, 2)
        ('explicit', 1.58)
    """
    pos = _check_scores("positive_scores", positive_scores)
    neg = _check_scores("negative_scores", negative_scores)
    d, level = _check_common(delta, confidence_level, orientation)

    def confusion(p: np.ndarray, q: np.ndarray, t: np.ndarray):
        ps, qs = np.sort(p), np.sort(q)
        tp = _counts_at(ps, t)
        fp = _counts_at(qs, t)
        return tp, p.size - tp, fp, q.size - fp

    if isinstance(threshold, Explicit):
        t = np.array([threshold.threshold])
        tp, fn, fp, tn = (int(x[0]) for x in confusion(pos, neg, t))
        return _make_result(
            tp,
            fn,
            fp,
            tn,
            delta=d,
            level=level,
            orientation=orientation,
            selection="explicit",
            threshold=threshold.threshold,
            n_candidates=1,
        )
    if isinstance(threshold, Bonferroni):
        t = np.asarray(threshold.candidates)
        m = t.size
        tp, fn, fp, tn = confusion(pos, neg, t)
        core = _confusion_core(tp, fn, fp, tn, d, _tail(level, orientation, m), orientation)
        best = int(np.argmax(core["epsilon"]))
        return _make_result(
            int(tp[best]),
            int(fn[best]),
            int(fp[best]),
            int(tn[best]),
            delta=d,
            level=level,
            orientation=orientation,
            selection="bonferroni",
            threshold=float(t[best]),
            n_candidates=m,
        )
    if isinstance(threshold, Split):
        seed = threshold.seed
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
        gen = as_generator(seed)
        parts = []
        for name, arr in (("positive_scores", pos), ("negative_scores", neg)):
            k = round(threshold.fraction * arr.size)
            if k < 1 or k > arr.size - 1:
                raise ValueError(
                    f"{name} has {arr.size} scores: Split(fraction={threshold.fraction}) leaves "
                    "the selection or the held-out part empty"
                )
            perm = gen.permutation(arr.size)
            parts.append((arr[perm[:k]], arr[perm[k:]]))
        (pos_sel, pos_eval), (neg_sel, neg_eval) = parts
        cands = np.unique(np.concatenate([pos_sel, neg_sel]))
        tp, fn, fp, tn = confusion(pos_sel, neg_sel, cands)
        core = _confusion_core(tp, fn, fp, tn, d, _tail(level, orientation), orientation)
        youden = tp / pos_sel.size - fp / neg_sel.size
        if orientation == "either":
            youden = np.abs(youden)
        # Best bound on the selection part; ties (e.g. all zero) broken by the point estimate.
        best = int(np.lexsort((youden, core["epsilon"]))[-1])
        t_best = float(cands[best])
        tp_e, fn_e, fp_e, tn_e = (
            int(x[0]) for x in confusion(pos_eval, neg_eval, np.array([t_best]))
        )
        return _make_result(
            tp_e,
            fn_e,
            fp_e,
            tn_e,
            delta=d,
            level=level,
            orientation=orientation,
            selection="split",
            threshold=t_best,
            n_candidates=1,
            seed=seed_entropy(seed),
        )
    raise TypeError(
        "threshold must be Explicit(t), Split(fraction, seed) or Bonferroni(candidates), "
        f"got {type(threshold).__name__}"
    )
