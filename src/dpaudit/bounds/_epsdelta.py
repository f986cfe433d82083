"""(ε, δ) lower bounds from the success of a distinguishing attack.

Chadha, Jagielski, Papernot, Choquette-Choo & Nasr 2024 (*Auditing Private Prediction*,
arXiv:2402.09403, §2.2, Eq. 1 and its FP/FN form) and Pillutla et al. 2023 (arXiv:2305.18447,
step 3 of the audit): run the mechanism many times on neighbouring datasets S and S′, count
how often the output lands in a rejection set O, bound the two probabilities with exact
Clopper–Pearson intervals and read off the smallest ε compatible with (ε, δ)-DP.

Conventions. *Positives* are runs on S′ (the hypothesis the attack tries to detect), so with
O the set where the attack says "S′":

* ``TPR = P(A(S′) ∈ O)`` (estimated by TP/(TP+FN)), ``FPR = P(A(S) ∈ O)`` (FP/(FP+TN));
* (ε, δ)-DP implies ``TPR ≤ e^ε·FPR + δ`` and, on the complement,
  ``1 − FPR ≤ e^ε·(1 − TPR) + δ``; so with ``TPR ≥ TPR_lo`` and ``FPR ≤ FPR_hi``

      ε ≥ max{ log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)) },

  which is Chadha et al.'s FP/FN form ``max{(1−δ−FN^u)/FP^u, (1−δ−FP^u)/FN^u}`` (inside a
  log) with ``FN^u = 1 − TPR_lo``.

The confidence is split over the intervals used (union bound): with the default
``orientation="given"`` two one-sided intervals (TPR lower, FPR upper) at ``1 − β/2`` each;
with ``orientation="either"`` (the attack's direction is not fixed in advance, Eq. 1 taken
literally with both ``(p₁ℓ−δ)/p₀ᵘ`` and ``(p₀ℓ−δ)/p₁ᵘ``) four one-sided intervals at
``1 − β/4``. A threshold chosen on the scores is paid for by a :class:`Split`,
:class:`Bonferroni` or :class:`MultiSplit` selection (:mod:`dpaudit.bounds._selection`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ConfidenceInterval, ResultMixin, SelectionRecord
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_at_most,
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_positive_int,
    check_probability,
    check_real,
)
from dpaudit.bounds._intervals import cp_one_sided
from dpaudit.bounds._selection import (
    DEFAULT_SPLIT,
    Bonferroni,
    Explicit,
    MultiSplit,
    Selection,
    Split,
    as_selection,
    median_of_splits,
    multi_split_level,
    multi_split_seeds,
    selection_generator,
    split_indices,
)

__all__ = [
    "EpsDeltaAudit",
    "epsilon_from_confusion",
    "epsilon_from_error_rates",
    "epsilon_from_rejection_set",
    "epsilon_from_scores",
]

_ORIENTATIONS = ("given", "either")
_COUNTS_GIVEN = SelectionRecord(
    "rejection set", "none", "counts of a rejection set given by the caller (fix it in advance)"
)


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
            ``Split``; under ``MultiSplit``, of the split at the lower middle of the bounds).
        interval_level: one-sided level of each Clopper–Pearson bound.
        selection: how the rejection set (threshold) was chosen and paid for: strategy
            ``"none"`` (counts given), ``"explicit"``, ``"split"``, ``"bonferroni"`` or
            ``"multi-split"`` (``epsilon`` is then the median over the splits and the other
            fields are those of the lower-middle split, each split at level ``1 − β/2``).
        threshold: the threshold used (score-based audits), else ``None``.
        n_candidates: number of rejection sets paid for (1 unless Bonferroni).
        seed: seed of the split (``Split``; of the seeds of the splits, ``MultiSplit``).
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
    selection: SelectionRecord
    threshold: float | None
    n_candidates: int
    seed: int | None = None

    @property
    def fnr_upper(self) -> float:
        """Upper bound on FNR = 1 − TPR (Chadha et al. 2024's FN^u)."""
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


def confusion_core(tp, fn, fp, tn, delta: float, tail: float, orientation: str):
    """Bounds and ε candidates for arrays of confusion counts (inputs assumed valid).

    Each one-sided Clopper–Pearson bound has tail probability ``tail``. Returns a dict with
    ``tpr_lower``, ``fpr_upper`` (and ``tpr_upper``, ``fpr_lower`` for
    ``orientation="either"``), ``candidates`` (shape ``(..., D)``, one column per direction)
    and ``epsilon`` (the clipped maximum).
    """
    tp, fn, fp, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fn, fp, tn))
    n_pos, n_neg = tp + fn, fp + tn
    tpr_lo, tpr_hi = cp_one_sided(tp, n_pos, tail)
    fpr_lo, fpr_hi = cp_one_sided(fp, n_neg, tail)
    cols = [_log_ratio(tpr_lo - delta, fpr_hi), _log_ratio(1.0 - fpr_hi - delta, 1.0 - tpr_lo)]
    out = {"tpr_lower": tpr_lo, "fpr_upper": fpr_hi}
    if orientation == "either":
        cols += [_log_ratio(fpr_lo - delta, tpr_hi), _log_ratio(1.0 - tpr_hi - delta, 1.0 - fpr_lo)]
        out.update(tpr_upper=tpr_hi, fpr_lower=fpr_lo)
    cand = np.stack(cols, axis=-1)
    out["candidates"] = cand
    out["epsilon"] = np.maximum(cand.max(axis=-1), 0.0)
    return out


def epsilon_at_beta(
    tp: int, fn: int, fp: int, tn: int, delta: float, beta: float, orientation: str, m: int = 1
) -> float:
    """ε bound from fixed counts at confidence ``1 − beta`` with ``m`` candidates paid for."""
    k = 2 if orientation == "given" else 4
    core = confusion_core(tp, fn, fp, tn, delta, beta / (k * m), orientation)
    return float(core["epsilon"])


@dataclasses.dataclass(frozen=True)
class _Counts:
    """Confusion counts of one or more rejection sets (arrays of equal shape)."""

    tp: np.ndarray
    fn: np.ndarray
    fp: np.ndarray
    tn: np.ndarray

    def at(self, i: int) -> tuple[int, int, int, int]:
        return int(self.tp[i]), int(self.fn[i]), int(self.fp[i]), int(self.tn[i])


def _make_result(
    counts: tuple[int, int, int, int],
    *,
    delta: float,
    level: float,
    orientation: str,
    selection: SelectionRecord,
    threshold: float | None = None,
    n_candidates: int = 1,
    seed: int | None = None,
) -> EpsDeltaAudit:
    tail = _tail(level, orientation, n_candidates)
    core = confusion_core(*counts, delta, tail, orientation)
    eps = float(core["epsilon"])
    names = _DIRECTIONS_GIVEN if orientation == "given" else _DIRECTIONS_EITHER
    direction = names[int(np.argmax(core["candidates"]))] if eps > 0 else "none"
    tp, fn, fp, tn = counts
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
        tp=tp,
        fn=fn,
        fp=fp,
        tn=tn,
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

    Chadha et al. 2024 (arXiv:2402.09403) §2.2, Eq. (1) in its FP/FN form: with
    Clopper–Pearson bounds ``TPR ≥ TPR_lo``, ``FPR ≤ FPR_hi`` (one-sided, each at
    ``1 − β/2``), ``ε ≥ max{log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)), 0}``.
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
    counts = tuple(
        check_nonneg_int(k, v)
        for k, v in zip(["tp", "fn", "fp", "tn"], (tp, fn, fp, tn), strict=True)
    )
    tp, fn, fp, tn = counts
    if tp + fn == 0:
        raise ValueError(f"tp + fn must be positive (no runs on S'), got tp={tp}, fn={fn}")
    if fp + tn == 0:
        raise ValueError(f"fp + tn must be positive (no runs on S), got fp={fp}, tn={tn}")
    d, level = _check_common(delta, confidence_level, orientation)
    return _make_result(
        counts, delta=d, level=level, orientation=orientation, selection=_COUNTS_GIVEN
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

    Chadha et al. 2024 (arXiv:2402.09403) Eq. (1): ``p₀ = P(A(S) ∈ O)``,
    ``p₁ = P(A(S′) ∈ O)``; this is :func:`epsilon_from_confusion` with
    ``TP = count_neighbour``, ``FP = count``.

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
    n = check_positive_int("n", n)
    n_neighbour = check_positive_int("n_neighbour", n_neighbour)
    count = check_at_most("count", check_nonneg_int("count", count), n, "n")
    count_neighbour = check_nonneg_int("count_neighbour", count_neighbour)
    check_at_most("count_neighbour", count_neighbour, n_neighbour, "n_neighbour")
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

    Chadha et al. 2024 (arXiv:2402.09403) §2.2, FP/FN form of Eq. 1:
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


# ---------------------------------------------------------------------------------------------
# Scores: the threshold chosen by a selection strategy
# ---------------------------------------------------------------------------------------------


def _confusion(pos: np.ndarray, neg: np.ndarray, thresholds: np.ndarray) -> _Counts:
    """Counts of ``O = {score ≥ t}`` for every threshold."""
    tp = pos.size - np.searchsorted(np.sort(pos), thresholds, side="left")
    fp = neg.size - np.searchsorted(np.sort(neg), thresholds, side="left")
    return _Counts(tp, pos.size - tp, fp, neg.size - fp)


def _split_threshold(
    pos: np.ndarray, neg: np.ndarray, fraction: float, gen, d: float, level: float, orientation: str
) -> tuple[float, np.ndarray, np.ndarray]:
    """Threshold with the best bound on a random selection part; the held-out scores."""
    parts = []
    for name, arr in (("positive_scores", pos), ("negative_scores", neg)):
        sel, held = split_indices(arr.size, fraction, gen, name)
        parts.append((arr[sel], arr[held]))
    (pos_sel, pos_eval), (neg_sel, neg_eval) = parts
    cands = np.unique(np.concatenate([pos_sel, neg_sel]))
    c = _confusion(pos_sel, neg_sel, cands)
    core = confusion_core(c.tp, c.fn, c.fp, c.tn, d, _tail(level, orientation), orientation)
    youden = c.tp / pos_sel.size - c.fp / neg_sel.size
    if orientation == "either":
        youden = np.abs(youden)
    # Best bound on the selection part; ties (e.g. all zero) broken by the point estimate.
    best = int(np.lexsort((youden, core["epsilon"]))[-1])
    return float(cands[best]), pos_eval, neg_eval


def _multi_split_scores(
    pos: np.ndarray,
    neg: np.ndarray,
    sel: MultiSplit,
    d: float,
    level: float,
    orientation: str,
    rng: RngLike,
) -> EpsDeltaAudit:
    """The median of ``sel.num_splits`` split audits, each at level ``1 − β/2``."""
    half = multi_split_level(level)
    seeds, seed = multi_split_seeds(sel.num_splits, rng)
    split = Split(sel.fraction)
    runs = []
    for s in seeds:
        one = epsilon_from_scores(
            pos, neg, selection=split, delta=d, confidence_level=half, orientation=orientation,
            rng=s,
        )  # fmt: skip
        runs.append(one)
    eps, j = median_of_splits([r.epsilon for r in runs])
    rep = runs[j]
    return dataclasses.replace(
        rep,
        epsilon=eps,
        confidence_interval=ConfidenceInterval(eps, math.inf),
        confidence_level=level,
        selection=sel.record("threshold", seed=seed, chosen=rep.threshold),
        seed=seed,
    )


def epsilon_from_scores(
    positive_scores: ArrayLike,
    negative_scores: ArrayLike,
    *,
    selection: Selection | str = DEFAULT_SPLIT,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    orientation: str = "given",
    rng: RngLike = None,
) -> EpsDeltaAudit:
    """Lower bound on ε from raw attack scores, with the threshold chosen validly.

    The rejection set is ``O = {score ≥ t}`` (scores oriented so that larger means "S′").
    ``positive_scores`` come from runs on S′, ``negative_scores`` from runs on S. The
    threshold ``t`` comes from the selection strategy:

    * :class:`Explicit` ``(t)`` — fixed in advance.
    * :class:`Split` ``(fraction)`` (default) — chosen to maximise the bound on a random
      selection part of each class (drawn with ``rng``), bounded on the held-out part.
    * :class:`Bonferroni` ``(candidates)`` — all m candidate thresholds bounded at level
      ``1 − β/m`` on all scores, the best one reported.
    * :class:`MultiSplit` ``(num_splits, fraction)`` — the :class:`Split` audit on
      ``num_splits`` independent random splits, each at level ``1 − β/2``; the median of their
      bounds is reported (Meinshausen, Meier & Bühlmann 2009, arXiv:0811.2177, Thm 3.1).

    Args:
        positive_scores: 1-d scores of runs on S′.
        negative_scores: 1-d scores of runs on S.
        selection: an :class:`Explicit`, :class:`Split`, :class:`Bonferroni` or
            :class:`MultiSplit` strategy, or one of their names.
        delta: δ in [0, 1).
        confidence_level: joint confidence including the selection, in (0, 1).
        orientation: ``"given"`` or ``"either"`` (see :func:`epsilon_from_confusion`).
        rng: randomness of the split (recorded as ``seed``; unused otherwise).

    Returns:
        :class:`EpsDeltaAudit` with the threshold used and how it was paid for.

    Raises:
        TypeError: ``selection`` is not a strategy.
        ValueError: empty or non-finite scores, a split leaving a part empty, Bonferroni
            without candidates, bad δ/level.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> pos, neg = rng.normal(2, 1, 5000), rng.normal(0, 1, 5000)
        >>> res = epsilon_from_scores(pos, neg, selection=Explicit(1.0), delta=1e-5)
        >>> res.selection.strategy, round(res.epsilon, 2)
        ('explicit', 1.58)
    """
    pos = check_array("positive_scores", positive_scores, ndim=1)
    neg = check_array("negative_scores", negative_scores, ndim=1)
    d, level = _check_common(delta, confidence_level, orientation)
    sel = as_selection(selection)
    seed = None
    if isinstance(sel, MultiSplit):
        return _multi_split_scores(pos, neg, sel, d, level, orientation, rng)
    if isinstance(sel, Explicit):
        thresholds = np.array([check_real("selection.value (threshold)", sel.value)])
    elif isinstance(sel, Bonferroni):
        if sel.candidates is None:
            raise ValueError("Bonferroni needs the candidate thresholds: Bonferroni(candidates)")
        thresholds = np.array([check_real("candidates", t) for t in sel.candidates])
    elif isinstance(sel, Split):
        gen, seed = selection_generator(rng)
        t_best, pos, neg = _split_threshold(pos, neg, sel.fraction, gen, d, level, orientation)
        thresholds = np.array([t_best])
    else:
        raise TypeError(f"selection must be Explicit, Split, Bonferroni or MultiSplit, got {sel!r}")
    m = thresholds.size
    c = _confusion(pos, neg, thresholds)
    core = confusion_core(c.tp, c.fn, c.fp, c.tn, d, _tail(level, orientation, m), orientation)
    best = int(np.argmax(core["epsilon"]))
    t = float(thresholds[best])
    return _make_result(
        c.at(best),
        delta=d,
        level=level,
        orientation=orientation,
        selection=sel.record("threshold", n_candidates=m if m > 1 else None, seed=seed, chosen=t),
        threshold=t,
        n_candidates=m,
        seed=seed,
    )
