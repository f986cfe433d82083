"""The label-memorization attack on label-DP training (Malek et al. 2021, App. B, Game 3).

Malek, Mironov, Prasad, Shilov & Tramèr 2021, "Antipodes of Label Differential Privacy"
(arXiv:2106.03408), §7 and App. B–C:

* :func:`plant_label_canaries` — Game 3's challenger: N training rows chosen uniformly without
  replacement; each gets two distinct wrong labels y′, y″ drawn uniformly from the C − 1
  labels other than its true y; the model is trained with y′ (Game 3 trains on y′ or y″ by a
  fair coin; as both are uniform the two are exchangeable, so training on y′ and attacking
  the pair (y′, y″) is the same game).
* :func:`canary_confidences` — what the attacker reads: the model's confidence on y′ and on
  every other wrong label, y″ first.
* :func:`label_memorization_attack` — the guesses and their ε lower bounds: the adversary
  guesses the more confident of the two labels and abstains when both confidences are below
  τ; ε ≥ log(CGR/(1 − CGR)) (Thm B.1) with

  - ``cgr``: one alternative y″ per canary and a Clopper–Pearson bound on the correct-guess
    rate (the guesses of different canaries are treated as independent games, the paper's
    heuristic; App. C checks it by comparing one run of N canaries with ten runs of N/10);
  - ``acgr``: the averaged variant over all C − 2 alternatives with reliability weights and a
    normal interval (a large-sample approximation; :func:`dpaudit.bounds.label_memorization_audit`).

  The abstention threshold is chosen without touching the canaries that are bounded: on a
  random part of them (:class:`dpaudit.bounds.Split`, default: half chooses, half bounds), or
  paid for by a union bound over the grid (:class:`dpaudit.bounds.Bonferroni`), or fixed in
  advance (:class:`dpaudit.bounds.Explicit`). The authors' code takes the best of seven
  thresholds on the same canaries with no correction; that number is reported beside, as
  ``uncorrected_epsilon`` — it is not a valid lower bound.

Example:
    >>> import numpy as np
    >>> canaries = plant_label_canaries(np.zeros(50, dtype=int), 40, num_classes=4, rng=0)
    >>> probs = np.full((40, 4), 0.05)
    >>> probs[np.arange(40), canaries.labels] = 0.85  # a model that memorised every canary
    >>> res = label_memorization_attack(probs, canaries, rng=0)
    >>> res.cgr.num_correct == res.cgr.num_guesses, res.cgr.epsilon > 1.5
    (True, True)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._results import ConfidenceInterval, ResultMixin, SelectionRecord
from dpaudit._rng import as_generator, int_seed
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_confidence_level,
    check_positive_int,
    check_rng,
)
from dpaudit.bounds import (
    DEFAULT_MEMORIZATION_THRESHOLDS,
    Bonferroni,
    Explicit,
    Selection,
    Split,
    clopper_pearson,
    label_memorization_audit,
    label_memorization_sweep,
)
from dpaudit.mechanisms import check_labels

__all__ = [
    "DEFAULT_ATTACK_THRESHOLDS",
    "CanaryConfidences",
    "LabelCanaries",
    "LabelMemorizationAttack",
    "MemorizationBound",
    "canary_confidences",
    "label_memorization_attack",
    "plant_label_canaries",
]

#: The abstention-threshold grid: no abstention, low thresholds (models trained on noisy labels
#: are rarely confident in a wrong label) and the authors' range up to 0.99.
DEFAULT_ATTACK_THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.99)
_CHOICE = "abstention threshold"
_MALEK = "Malek et al. 2021 (arXiv:2106.03408) App. B"


@dataclasses.dataclass(frozen=True, eq=False)
class LabelCanaries(ResultMixin):
    """Flipped-label canaries of Game 3 (Malek et al. 2021, App. B, Fig. 4).

    Attributes:
        indices: ``(N,)`` training rows that are canaries.
        true_labels: ``(N,)`` their original labels y.
        labels: ``(N,)`` the wrong labels y′ the model is trained with.
        alternatives: ``(N,)`` the second wrong labels y″ ≠ y, y′ the attacker weighs y′ against.
        num_classes: C.
    """

    indices: IntArray
    true_labels: IntArray
    labels: IntArray
    alternatives: IntArray
    num_classes: int

    @property
    def num_canaries(self) -> int:
        """N."""
        return int(self.indices.size)

    def apply(self, y: ArrayLike) -> IntArray:
        """A copy of the training labels with every canary's label set to y′.

        Raises:
            ValueError: ``y`` is shorter than the largest canary index or disagrees with the
                canaries' true labels.
        """
        out = np.array(check_labels("y", y, self.num_classes), copy=True)
        if out.size <= int(self.indices.max()) or np.any(out[self.indices] != self.true_labels):
            raise ValueError("y is not the label vector these canaries were planted in")
        out[self.indices] = self.labels
        return out


def plant_label_canaries(
    y: ArrayLike, num_canaries: int, *, num_classes: int, rng: RngLike = None
) -> LabelCanaries:
    """Choose N canaries and their wrong labels y′ ≠ y″ (Game 3's challenger).

    Args:
        y: ``(n,)`` true training labels in ``0..C−1``.
        num_canaries: N, 1 ≤ N ≤ n.
        num_classes: C ≥ 3 (two distinct wrong labels are needed).
        rng: randomness of the choice.

    Returns:
        :class:`LabelCanaries`.

    Raises:
        ValueError: N outside [1, n], C < 3, labels out of range.

    Example:
        >>> c = plant_label_canaries([0, 1, 2, 0], 2, num_classes=3, rng=0)
        >>> bool(np.all(c.labels != c.true_labels) and np.all(c.labels != c.alternatives))
        True
    """
    labels = check_labels("y", y, num_classes)
    c = int(num_classes)
    if c < 3:
        raise ValueError(f"num_classes must be at least 3 for two distinct wrong labels, got {c}")
    n_can = check_positive_int("num_canaries", num_canaries)
    if n_can > labels.size:
        raise ValueError(
            f"num_canaries={n_can} is larger than the training set y ({labels.size} rows)"
        )
    gen = as_generator(rng)
    idx = np.sort(gen.choice(labels.size, size=n_can, replace=False))
    true = labels[idx]
    first = (true + gen.integers(1, c, size=n_can)) % c  # uniform over the C − 1 wrong labels
    second = gen.integers(0, c - 2, size=n_can)  # uniform over the C − 2 remaining labels
    low, high = np.minimum(true, first), np.maximum(true, first)
    second = second + (second >= low)
    second = second + (second >= high)
    return LabelCanaries(idx.astype(np.int64), true, first.astype(np.int64),
                         second.astype(np.int64), c)  # fmt: skip


@dataclasses.dataclass(frozen=True, eq=False)
class CanaryConfidences(ResultMixin):
    """The attacker's view of each canary.

    Attributes:
        canary: ``(N,)`` the model's confidence on y′ (the label trained on).
        alternatives: ``(N, C − 2)`` its confidence on every other wrong label, y″ first.
    """

    canary: FloatArray
    alternatives: FloatArray

    def __post_init__(self) -> None:
        c1 = check_array("canary", self.canary, ndim=1)
        c2 = check_array("alternatives", self.alternatives, ndim=2)
        if c2.shape[0] != c1.size or c2.shape[1] < 1:
            raise ValueError(
                f"canary and alternatives must have one row per canary each: alternatives must "
                f"have shape ({c1.size}, A >= 1) for canary of shape {c1.shape}, got {c2.shape}"
            )
        object.__setattr__(self, "canary", c1)
        object.__setattr__(self, "alternatives", c2)

    @property
    def num_canaries(self) -> int:
        """N."""
        return int(self.canary.size)

    @classmethod
    def concatenate(cls, parts: list[CanaryConfidences]) -> CanaryConfidences:
        """The canaries of several independent runs, pooled (Malek et al. 2021 App. C)."""
        if not parts:
            raise ValueError("parts must not be empty")
        return cls(
            np.concatenate([p.canary for p in parts]),
            np.concatenate([p.alternatives for p in parts], axis=0),
        )


def _check_canaries(canaries: object) -> LabelCanaries:
    if not isinstance(canaries, LabelCanaries):
        raise TypeError(
            f"canaries must be LabelCanaries (from plant_label_canaries), got {canaries!r:.80}"
        )
    return canaries


def canary_confidences(probabilities: ArrayLike, canaries: LabelCanaries) -> CanaryConfidences:
    """The model's confidences on y′, y″ and the other wrong labels of each canary.

    Args:
        probabilities: ``(N, C)`` the model's class probabilities on the canaries' rows (in
            the order of ``canaries.indices``).
        canaries: the :class:`LabelCanaries`.

    Returns:
        :class:`CanaryConfidences` (alternatives: y″, then the remaining wrong labels in
        increasing order).

    Raises:
        TypeError: ``canaries`` is not a :class:`LabelCanaries`.
        ValueError: the shape is not ``(N, C)``.
    """
    _check_canaries(canaries)
    p = check_array("probabilities", probabilities, ndim=2)
    n, c = canaries.num_canaries, canaries.num_classes
    if p.shape != (n, c):
        raise ValueError(f"probabilities must have shape ({n}, {c}), got {p.shape}")
    rows = np.arange(n)
    others = np.ones((n, c), dtype=bool)
    others[rows, canaries.true_labels] = False
    others[rows, canaries.labels] = False
    others[rows, canaries.alternatives] = False
    rest = p[others].reshape(n, c - 3)
    alt = np.concatenate([p[rows, canaries.alternatives][:, None], rest], axis=1)
    return CanaryConfidences(p[rows, canaries.labels], alt)


@dataclasses.dataclass(frozen=True)
class MemorizationBound(ResultMixin):
    """One variant of the label-memorization ε lower bound, with the threshold paid for.

    Attributes:
        variant: ``"cgr"`` (one y″, Clopper–Pearson) or ``"acgr"`` (all alternatives,
            reliability-weighted mean, normal interval).
        method: the statistics, with their source.
        epsilon: the valid one-sided lower bound at ``confidence_level``.
        interval: two-sided interval for ε at ``confidence_level`` on the bounded canaries
            (the "95%-CI ε_m" of Malek et al. 2021 Table 1, at the per-test level).
        estimate: ``log(CGR/(1 − CGR))`` on the bounded canaries (clipped at 0).
        correct_guess_rate: CGR (or ACGR) on the bounded canaries.
        threshold: the abstention threshold τ used.
        num_canaries: canaries bounded (the held-out part under a split).
        num_guesses: guesses on them.
        num_correct: correct guesses on them.
        confidence_level: 1 − β of ``epsilon``.
        per_test_confidence_level: level of the test behind it (``1 − β/G`` for Bonferroni).
        selection: how τ was chosen and paid for.
        thresholds: the grid τ was chosen from.
        selection_epsilons: per-τ bound where τ was chosen (selection part or all canaries).
        uncorrected_epsilon: best bound over the authors' seven thresholds on *all* canaries
            with no correction — NOT a valid lower bound (shown beside, as the paper reports).
        uncorrected_threshold: the τ attaining it.
    """

    variant: str
    method: str
    epsilon: float
    interval: ConfidenceInterval
    estimate: float
    correct_guess_rate: float
    threshold: float
    num_canaries: int
    num_guesses: int
    num_correct: int
    confidence_level: float
    per_test_confidence_level: float
    selection: SelectionRecord
    thresholds: tuple[float, ...]
    selection_epsilons: tuple[float, ...]
    uncorrected_epsilon: float
    uncorrected_threshold: float


@dataclasses.dataclass(frozen=True)
class LabelMemorizationAttack(ResultMixin):
    """Both variants of the attack on one trained model.

    Attributes:
        cgr: the basic variant (valid Clopper–Pearson bound).
        acgr: the averaged variant (normal approximation).
        num_canaries: N.
        confidence_level: 1 − β.
        seed: seed of the split (None when no split was drawn).
    """

    cgr: MemorizationBound
    acgr: MemorizationBound
    num_canaries: int
    confidence_level: float
    seed: int | None

    def bound(self, variant: str) -> MemorizationBound:
        """``"cgr"`` or ``"acgr"``."""
        if variant not in ("cgr", "acgr"):
            raise ValueError(f"variant must be 'cgr' or 'acgr', got {variant!r}")
        return self.cgr if variant == "cgr" else self.acgr


def _logit(p: float) -> float:
    """``max(0, log(p/(1−p)))``, ``inf`` at 1 (Malek et al. 2021 Thm B.1)."""
    if p <= 0.5:
        return 0.0
    return math.inf if p >= 1.0 else math.log(p) - math.log1p(-p)


def _two_sided(c1: np.ndarray, c2: np.ndarray, tau: float, averaged: bool, level: float):
    """Two-sided interval of ε at ``level`` (CP for CGR, normal or CP fallback for ACGR)."""
    one = label_memorization_audit(
        c1, c2, threshold=tau, averaged=averaged, confidence_level=(1.0 + level) / 2.0
    )
    if one.num_guesses == 0:
        return ConfidenceInterval(0.0, math.inf), one
    if not averaged or one.degenerate_fallback:
        n = one.num_guesses if not averaged else one.num_guessed_canaries
        k = one.num_correct if not averaged else round(one.correct_guess_rate * n)
        high = clopper_pearson(k, n, confidence_level=level).high
    else:
        z = float(special.ndtri(0.5 + level / 2.0))
        high = min(1.0, one.correct_guess_rate + z * one.standard_error)
    return ConfidenceInterval(one.epsilon, max(one.epsilon, _logit(high))), one


def _choose(
    conf: CanaryConfidences,
    averaged: bool,
    grid: np.ndarray,
    selection: Selection,
    level: float,
    parts: tuple[np.ndarray, np.ndarray] | None,
    seed: int | None,
):
    """τ, the canaries to bound, the per-test level, the record and the per-τ bounds."""
    c1, c2 = conf.canary, conf.alternatives
    g = grid.size
    if isinstance(selection, Explicit):
        tau = float(_check_grid([selection.value])[0])
        rec = selection.record(_CHOICE, chosen=tau)
        return tau, np.arange(c1.size), level, rec, ()
    if isinstance(selection, Split):
        sel, held = parts
        sweep = label_memorization_sweep(
            c1[sel], c2[sel], thresholds=grid, averaged=averaged, confidence_level=level,
            selection=Bonferroni(),
        )  # fmt: skip
        tau = float(sweep.values[int(np.argmax(sweep.epsilons))])
        rec = selection.record(_CHOICE, n_candidates=g, seed=seed, chosen=tau)
        return tau, held, level, rec, tuple(float(e) for e in sweep.epsilons)
    sweep = label_memorization_sweep(
        c1, c2, thresholds=grid, averaged=averaged, confidence_level=level,
        selection=Bonferroni(),
    )  # fmt: skip
    tau = float(sweep.selected_value)
    per_test = 1.0 - (1.0 - level) / g
    return tau, np.arange(c1.size), per_test, sweep.selection, tuple(map(float, sweep.epsilons))


def _variant(
    conf: CanaryConfidences,
    averaged: bool,
    grid: np.ndarray,
    selection: Selection,
    level: float,
    parts: tuple[np.ndarray, np.ndarray] | None,
    seed: int | None,
) -> MemorizationBound:
    c1 = conf.canary
    c2 = conf.alternatives if averaged else conf.alternatives[:, :1]
    cols = CanaryConfidences(c1, c2)
    tau, rows, per_test, rec, sel_eps = _choose(cols, averaged, grid, selection, level, parts, seed)
    valid = label_memorization_audit(
        c1[rows], c2[rows], threshold=tau, averaged=averaged, confidence_level=per_test
    )
    interval, _ = _two_sided(c1[rows], c2[rows], tau, averaged, per_test)
    paper = label_memorization_sweep(
        c1, c2, thresholds=DEFAULT_MEMORIZATION_THRESHOLDS, averaged=averaged,
        confidence_level=level, selection=Bonferroni(),
    )  # fmt: skip
    stats = "reliability-weighted mean, normal interval" if averaged else "Clopper–Pearson"
    return MemorizationBound(
        variant="acgr" if averaged else "cgr",
        method=f"label memorization, {stats} ({_MALEK}, Thm B.1)",
        epsilon=float(valid.epsilon), interval=interval, estimate=float(valid.estimate),
        correct_guess_rate=float(valid.correct_guess_rate), threshold=tau,
        num_canaries=int(rows.size), num_guesses=int(valid.num_guesses),
        num_correct=int(valid.num_correct), confidence_level=level,
        per_test_confidence_level=per_test, selection=rec,
        thresholds=tuple(float(t) for t in grid), selection_epsilons=sel_eps,
        uncorrected_epsilon=float(paper.uncorrected_max_epsilon),
        uncorrected_threshold=float(paper.uncorrected_value),
    )  # fmt: skip


def _check_selection(selection: object) -> Selection:
    if isinstance(selection, str):
        if selection not in ("split", "bonferroni"):
            raise ValueError(f"selection must be 'split' or 'bonferroni', got {selection!r}")
        return Split() if selection == "split" else Bonferroni()
    if not isinstance(selection, (Split, Bonferroni, Explicit)):
        raise TypeError(
            f"selection must be Split, Bonferroni, Explicit, 'split' or 'bonferroni', "
            f"got {selection!r}"
        )
    return selection


def _check_grid(thresholds: ArrayLike) -> np.ndarray:
    grid = np.unique(check_array("thresholds", thresholds, ndim=1))
    if np.any((grid < 0) | (grid > 1)):
        raise ValueError(f"thresholds must lie in [0, 1], got {thresholds!r}")
    return grid


def label_memorization_attack(
    probabilities: ArrayLike | CanaryConfidences,
    canaries: LabelCanaries | None = None,
    *,
    thresholds: ArrayLike = DEFAULT_ATTACK_THRESHOLDS,
    selection: Selection | str = "split",
    confidence_level: float = 0.95,
    rng: RngLike = None,
) -> LabelMemorizationAttack:
    """Guess each canary's training label from the model's confidences; bound ε both ways.

    Args:
        probabilities: ``(N, C)`` class probabilities on the canaries' rows (with
            ``canaries``), or :class:`CanaryConfidences` directly (pooled runs, synthetic
            mechanisms).
        canaries: the :class:`LabelCanaries` (needed with probabilities).
        thresholds: the abstention-threshold grid in [0, 1].
        selection: how τ is chosen: ``"split"`` / :class:`~dpaudit.bounds.Split` (default:
            half of the canaries choose, the other half is bounded), ``"bonferroni"`` /
            :class:`~dpaudit.bounds.Bonferroni` (union bound over the grid) or
            :class:`~dpaudit.bounds.Explicit` (τ fixed in advance).
        confidence_level: 1 − β of the bounds.
        rng: randomness of the split (one split shared by both variants).

    Returns:
        :class:`LabelMemorizationAttack`.

    Raises:
        ValueError: bad shapes, thresholds outside [0, 1], bad level or selection, a split
            that leaves a part empty.
    """
    level = check_confidence_level(confidence_level)
    grid = _check_grid(thresholds)
    sel = _check_selection(selection)
    if isinstance(sel, Bonferroni) and sel.candidates is not None:
        grid = _check_grid(sel.candidates)
    check_rng(rng)
    if canaries is not None:
        _check_canaries(canaries)
    if isinstance(probabilities, CanaryConfidences):
        conf = probabilities
    else:
        if canaries is None:
            raise ValueError("canaries are needed to read confidences from probabilities")
        conf = canary_confidences(probabilities, canaries)
    parts, seed = None, None
    if isinstance(sel, Split):
        seed = int_seed(rng)
        perm = as_generator(seed).permutation(conf.num_canaries)
        k = round(sel.fraction * conf.num_canaries)
        if k < 1 or k > conf.num_canaries - 1:
            raise ValueError(
                f"Split(fraction={sel.fraction}) leaves a part empty for "
                f"{conf.num_canaries} canaries"
            )
        parts = (np.sort(perm[:k]), np.sort(perm[k:]))
    cgr = _variant(conf, False, grid, sel, level, parts, seed)
    acgr = _variant(conf, True, grid, sel, level, parts, seed)
    return LabelMemorizationAttack(cgr, acgr, conf.num_canaries, level, seed)
