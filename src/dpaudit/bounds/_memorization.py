"""Label-memorization lower bound (Malek, Mironov, Prasad, Shilov & Tramèr 2021, arXiv:2106.03408).

Canaries are training examples given a wrong label y′; for a second wrong label y″ the
adversary guesses which of the two the model was trained on — the more confident one — and
abstains when both confidences are below a threshold τ (Malek et al. 2021, App. B, last display;
ties count as wrong guesses). Theorem B.1: an ε-DP mechanism has correct-guess rate CGR with

    ε ≥ log(CGR / (1 − CGR)),

so a one-sided lower confidence bound on CGR gives an ε lower bound. Two estimators:

* ``clopper-pearson`` (Game 3): one alternative label y″ per canary; with M guesses and V
  correct, the exact one-sided Clopper–Pearson bound on CGR (guesses on different canaries are
  treated as independent — the paper's heuristic step, exact for per-example mechanisms).
* ``averaged-normal`` (the averaged variant): every one of the C − 2 alternatives y″ ≠ y, y′;
  per canary ``ACGR_i = (correct_i)/m_i`` over its ``m_i`` non-abstained alternatives (0/0
  canaries dropped), combined as the weighted mean with the ``m_i`` as reliability weights
  (= total correct / total guesses) and a one-sided normal bound ``x̄ − z·SE``.
  ``standard_error="reliability"`` is the authors' formula (normalised weights w,
  ``V = Σw(x − x̄)²/(1 − Σw²)``, ``SE = √(V/N_eff)``); ``"ratio"`` is the linearised standard
  error of the ratio estimator, ``SE² = Σm_i²(x_i − x̄)²/(Σm_i)² · N_eff/(N_eff − 1)``. Both are
  large-sample approximations, not exact bounds.

**Perfect attacker / degenerate variance.** The point estimate is ``+inf`` when every guess is
right, never NaN. The CP bound stays below 1 (``β^{1/M}``). When the averaged variant's
standard error is 0 (all ``ACGR_i`` equal, including the perfect attacker) or only one canary
guessed, the normal interval degenerates and is replaced by the Clopper–Pearson bound for
``N_eff`` trials with ``N_eff·x̄`` successes (the authors' code uses the rule of three
``1 − 3/N`` for the same case). With no guesses at all, CGR is reported as ½ (no information)
and ε as 0.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._results import ConfidenceInterval, ResultMixin, SelectionRecord
from dpaudit._typing import ArrayLike, Progress, ProgressLike, RngLike
from dpaudit._validate import (
    check_array,
    check_at_most,
    check_choice,
    check_confidence_level,
    check_nonneg_int,
    check_real,
    track,
)
from dpaudit.bounds._beta import beta_ppf
from dpaudit.bounds._selection import DEFAULT_BONFERRONI, Explicit, Selection
from dpaudit.bounds._sweep import Outcome, SweepData, SweepResult, run_sweep

__all__ = [
    "DEFAULT_MEMORIZATION_THRESHOLDS",
    "LabelMemorizationResult",
    "label_memorization_audit",
    "label_memorization_epsilon",
    "label_memorization_sweep",
]

_STANDARD_ERRORS = ("reliability", "ratio")
_AVERAGED = "averaged-normal"
_CHOICE = "abstention threshold"
_COUNTS_GIVEN = SelectionRecord(
    "abstention threshold",
    "none",
    "guess counts given by the caller; valid if the guess rule was fixed in advance",
)
#: The abstention thresholds of the authors' code (``memorization_attack/attack.py``).
DEFAULT_MEMORIZATION_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


@dataclasses.dataclass(frozen=True)
class LabelMemorizationResult(ResultMixin):
    """ε lower bound from a label-memorization attack.

    Attributes:
        epsilon: ``max(0, log(CGR_lo/(1 − CGR_lo)))``.
        estimate: the point estimate ``log(CGR/(1 − CGR))`` clipped at 0 (``inf`` when every
            guess is right).
        correct_guess_rate: CGR (weighted mean for the averaged variant; ½ with no guesses).
        cgr_interval: ``[CGR_lo, 1]``.
        confidence_interval: ``[epsilon, inf)``.
        confidence_level: 1 − β (one-sided).
        method: ``"clopper-pearson"`` or ``"averaged-normal"``.
        num_canaries: N canaries attacked.
        num_guessed_canaries: canaries with at least one guess.
        num_guesses: guesses made (pairs (y′, y″) not abstained on).
        num_correct: correct guesses.
        threshold: abstention threshold τ (None for count input).
        standard_error: SE of the averaged variant (None for CP).
        standard_error_form: ``"reliability"`` / ``"ratio"`` (None for CP).
        degenerate_fallback: True when the averaged variant fell back to the CP bound.
        selection: how τ was chosen: strategy ``"explicit"`` (fixed in advance) or
            ``"none"`` (counts given).
    """

    epsilon: float
    estimate: float
    correct_guess_rate: float
    cgr_interval: ConfidenceInterval
    confidence_interval: ConfidenceInterval
    confidence_level: float
    method: str
    num_canaries: int
    num_guessed_canaries: int
    num_guesses: int
    num_correct: int
    threshold: float | None = None
    standard_error: float | None = None
    standard_error_form: str | None = None
    degenerate_fallback: bool = False
    selection: SelectionRecord = _COUNTS_GIVEN


def _logit_eps(p: float) -> float:
    """``max(0, log(p/(1−p)))`` with ``inf`` at p = 1 (Theorem B.1)."""
    if p <= 0.5:
        return 0.0
    if p >= 1.0:
        return math.inf
    return max(0.0, math.log(p) - math.log1p(-p))


def _cp_lower(successes: float, trials: float, beta: float) -> float:
    """One-sided Clopper–Pearson lower bound, continuous in ``successes`` (0 at 0 successes)."""
    if successes <= 0:
        return 0.0
    return float(beta_ppf(beta, successes, trials - successes + 1.0))


@dataclasses.dataclass(frozen=True)
class _Tally:
    """Canaries attacked, canaries with a guess, guesses and correct guesses."""

    canaries: int
    guessed: int
    guesses: int
    correct: int


def _from_rate(
    rate: float,
    low: float,
    level: float,
    method: str,
    tally: _Tally,
    threshold: float | None,
    **fields: object,
) -> LabelMemorizationResult:
    """Result from the CGR estimate and its lower bound: ε = logit(low) (Theorem B.1)."""
    eps = _logit_eps(low)
    rule = _COUNTS_GIVEN if threshold is None else Explicit(threshold).record(_CHOICE)
    return LabelMemorizationResult(
        epsilon=eps,
        estimate=_logit_eps(rate),
        correct_guess_rate=rate,
        cgr_interval=ConfidenceInterval(low, 1.0),
        confidence_interval=ConfidenceInterval(eps, math.inf),
        confidence_level=level,
        method=method,
        num_canaries=tally.canaries,
        num_guessed_canaries=tally.guessed,
        num_guesses=tally.guesses,
        num_correct=tally.correct,
        threshold=threshold,
        selection=rule,
        **fields,
    )


def _cp_result(tally: _Tally, level: float, threshold: float | None) -> LabelMemorizationResult:
    if tally.guesses == 0:
        cgr, low = 0.5, 0.0
    else:
        cgr = tally.correct / tally.guesses
        low = _cp_lower(tally.correct, tally.guesses, 1.0 - level)
    return _from_rate(cgr, low, level, "clopper-pearson", tally, threshold)


def label_memorization_epsilon(
    num_guesses: int, num_correct: int, *, confidence_level: float = 0.95
) -> LabelMemorizationResult:
    """ε ≥ log(CGR/(1 − CGR)) with a one-sided Clopper–Pearson bound on CGR.

    Malek et al. 2021 (arXiv:2106.03408), Theorem B.1.

    Args:
        num_guesses: guesses made (abstentions excluded).
        num_correct: correct guesses, ≤ num_guesses.
        confidence_level: 1 − β in (0, 1).

    Returns:
        :class:`LabelMemorizationResult` (``estimate = inf`` for a perfect attacker, never NaN).

    Raises:
        TypeError, ValueError: negative counts, num_correct > num_guesses, bad level.

    Example:
        >>> res = label_memorization_epsilon(100, 100)
        >>> res.estimate, round(res.epsilon, 4)
        (inf, 3.493)
    """
    m = check_nonneg_int("num_guesses", num_guesses)
    v = check_at_most("num_correct", check_nonneg_int("num_correct", num_correct), m, "num_guesses")
    level = check_confidence_level(confidence_level)
    return _cp_result(_Tally(m, m, m, v), level, None)


def _check_confidences(
    canary_confidence: ArrayLike, alternative_confidence: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    c1 = check_array("canary_confidence", canary_confidence, ndim=1)
    c2 = check_array("alternative_confidence", alternative_confidence, ndim_min=1)
    if c2.ndim == 1:
        c2 = c2[:, None]
    if c2.ndim != 2:
        raise ValueError(
            f"alternative_confidence must have shape (N,) or (N, A), got "
            f"{np.shape(alternative_confidence)}"
        )
    if c2.shape[0] != c1.shape[0]:  # either may be the wrong one: name both
        raise ValueError(
            f"canary_confidence and alternative_confidence must have one row per canary each, "
            f"got {c1.shape[0]} and {c2.shape[0]} rows (shapes {c1.shape} and "
            f"{np.shape(alternative_confidence)})"
        )
    return c1, c2


def _check_variant(averaged: object, standard_error: object) -> bool:
    """Validate ``standard_error`` and ``averaged``; return ``averaged`` as a bool."""
    check_choice("standard_error", standard_error, _STANDARD_ERRORS)
    if not isinstance(averaged, (bool, np.bool_)):
        raise TypeError(f"averaged must be a bool, got {averaged!r}")
    return bool(averaged)


def _guess_matrices(
    c1: np.ndarray, c2: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """(guessed, correct) boolean matrices of shape (N, A) (Malek et al. 2021 App. B adversary)."""
    guessed = np.maximum(c1[:, None], c2) >= threshold
    correct = guessed & (c1[:, None] > c2)
    return guessed, correct


def _averaged(
    guessed: np.ndarray, correct: np.ndarray, level: float, se_form: str, threshold: float
) -> LabelMemorizationResult:
    n_canaries = guessed.shape[0]
    m_i = guessed.sum(axis=1).astype(np.float64)
    v_i = correct.sum(axis=1).astype(np.float64)
    keep = m_i > 0
    m_i, v_i = m_i[keep], v_i[keep]
    n_eff = int(m_i.size)
    total_m, total_v = int(m_i.sum()), int(v_i.sum())
    beta = 1.0 - level
    tally = _Tally(n_canaries, n_eff, total_m, total_v)
    if n_eff == 0:
        return _from_rate(
            0.5, 0.0, level, _AVERAGED, tally, threshold, standard_error=math.inf,
            standard_error_form=se_form,
        )  # fmt: skip
    x = v_i / m_i
    mean = total_v / total_m
    w = m_i / m_i.sum()
    if n_eff > 1:
        if se_form == "reliability":
            denom = 1.0 - float(np.sum(w * w))
            var = float(np.sum(w * (x - mean) ** 2)) / denom
            se = math.sqrt(var / n_eff)
        else:
            se = math.sqrt(float(np.sum((w * (x - mean)) ** 2)) * n_eff / (n_eff - 1))
    else:
        se = 0.0
    fallback = se == 0.0
    if fallback:
        low = _cp_lower(mean * n_eff, float(n_eff), beta)
    else:
        # A rate is at most 1: at a confidence level near 0 (β → 1) the normal bound
        # mean + |z|·se passes 1 (and is mean + inf at β = 1 in float64), so it is clipped.
        low = min(1.0, max(0.0, mean - float(-special.ndtri(beta)) * se))
    return _from_rate(
        mean, low, level, _AVERAGED, tally, threshold, standard_error=se,
        standard_error_form=se_form, degenerate_fallback=fallback,
    )  # fmt: skip


def _audit_arrays(
    c1: np.ndarray, c2: np.ndarray, threshold: float, averaged: bool, level: float, se_form: str
) -> LabelMemorizationResult:
    if not averaged:
        c2 = c2[:, :1]
    guessed, correct = _guess_matrices(c1, c2, threshold)
    if averaged:
        return _averaged(guessed, correct, level, se_form, threshold)
    n_guess = int(np.count_nonzero(guessed[:, 0]))
    tally = _Tally(c1.shape[0], n_guess, n_guess, int(np.count_nonzero(correct[:, 0])))
    return _cp_result(tally, level, threshold)


def label_memorization_audit(
    canary_confidence: ArrayLike,
    alternative_confidence: ArrayLike,
    *,
    threshold: float = 0.5,
    averaged: bool = False,
    standard_error: str = "reliability",
    confidence_level: float = 0.95,
) -> LabelMemorizationResult:
    """Label-memorization ε lower bound from model confidences (Malek et al. 2021, App. B).

    For each canary and alternative label y″ the adversary abstains if
    ``max(conf(y′), conf(y″)) < threshold`` and otherwise guesses y′ iff
    ``conf(y′) > conf(y″)`` (a guess is correct when it names y′, the label trained on).

    Args:
        canary_confidence: (N,) model confidence on each canary's (wrong) training label y′.
        alternative_confidence: (N,) or (N, A) confidences on alternative wrong labels y″
            (A = C − 2 for the averaged variant: every label other than the true y and y′).
            The basic variant uses column 0, which should be one uniformly drawn y″.
        threshold: abstention threshold τ (fixed in advance; to sweep it use
            :func:`dpaudit.bounds.label_memorization_sweep`).
        averaged: use the averaged variant over all columns with reliability weights.
        standard_error: ``"reliability"`` (authors' formula) or ``"ratio"``; averaged only.
        confidence_level: 1 − β in (0, 1), one-sided.

    Returns:
        :class:`LabelMemorizationResult` (never NaN; ``estimate = inf`` for a perfect attacker).

    Raises:
        TypeError, ValueError: bad shapes, non-finite confidences, bad threshold or level.

    Example:
        >>> res = label_memorization_audit([0.9, 0.8, 0.2], [0.05, 0.1, 0.7], threshold=0.5)
        >>> res.num_guesses, res.num_correct
        (3, 2)
    """
    c1, c2 = _check_confidences(canary_confidence, alternative_confidence)
    threshold = check_real("threshold", threshold)
    level = check_confidence_level(confidence_level)
    averaged = _check_variant(averaged, standard_error)
    return _audit_arrays(c1, c2, threshold, averaged, level, standard_error)


# ---------------------------------------------------------------------------------------------
# Sweep over the abstention threshold
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Game(SweepData):
    """Abstain below τ; the bound of :func:`label_memorization_audit` at each τ."""

    averaged: bool = False
    standard_error: str = "reliability"
    parameter = "threshold"
    choice = _CHOICE
    scale = False

    @property
    def method(self) -> str:
        variant = _AVERAGED if self.averaged else "clopper-pearson"
        return f"label memorization, {variant} (Malek et al. 2021 App. B)"

    def check_grid(self, grid: object, name: str = "thresholds") -> np.ndarray:
        values = DEFAULT_MEMORIZATION_THRESHOLDS if grid is None else grid
        values = np.atleast_1d(check_array(name, values, ndim_min=0))
        if values.ndim != 1:
            raise ValueError(f"{name} must be 1-d, got shape {values.shape}")
        return np.unique(values)

    def counts(self, idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.part(idx)
        ng, nc = [], []
        for t in vals:
            guessed, correct = _guess_matrices(a, b, float(t))
            ng.append(int(guessed.sum()))
            nc.append(int(correct.sum()))
        return np.array(ng, dtype=np.int64), np.array(nc, dtype=np.int64)

    def _eps(self, idx: np.ndarray | None, vals: np.ndarray, level: float, report: Progress):
        a, b = self.part(idx)
        return np.array(
            [
                _audit_arrays(a, b, float(t), self.averaged, level, self.standard_error).epsilon
                for t in track(vals, vals.size, "label-memorization sweep", report)
            ]
        )

    def all_eps(
        self, idx: np.ndarray | None, vals: np.ndarray, n: int, report: Progress
    ) -> np.ndarray:
        return self._eps(idx, vals, self.level, report)

    def outcome(self, idx: np.ndarray | None, vals: np.ndarray, beta: float, n: int) -> Outcome:
        e = self._eps(idx, vals, 1.0 - beta, _silent)
        j = int(np.argmax(e))
        ng, nc = self.counts(idx, vals[j : j + 1])
        return Outcome(float(e[j]), j, int(ng[0]), int(nc[0]))


def _silent(done: int, total: int, description: str) -> None:
    """No progress for the bound behind ``epsilon`` (one pass over the grid at most)."""


def label_memorization_sweep(
    canary_confidence: ArrayLike,
    alternative_confidence: ArrayLike,
    *,
    thresholds: ArrayLike | None = None,
    averaged: bool = False,
    standard_error: str = "reliability",
    confidence_level: float = 0.95,
    selection: Selection | str = DEFAULT_BONFERRONI,
    rng: RngLike = None,
    progress: ProgressLike = None,
) -> SweepResult:
    """Label-memorization bound over an abstention-threshold sweep, with the choice paid for.

    Malek et al. 2021 (arXiv:2106.03408, App. B) try τ ∈ [0.5, 0.99] and report the best
    bound, "omitting corrections for multiple hypothesis testing"; that number is
    ``uncorrected_max_epsilon`` here, beside the valid ``epsilon``
    (:mod:`dpaudit.bounds._sweep`). The bound at each τ is that of
    :func:`label_memorization_audit`.

    Args:
        canary_confidence: (N,) confidence on each canary's training label y′.
        alternative_confidence: (N,) or (N, A) confidences on alternative labels y″.
        thresholds: the τ grid (default :data:`DEFAULT_MEMORIZATION_THRESHOLDS`, the
            authors' 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99); or give it as
            ``Bonferroni(candidates)``.
        averaged: use the averaged variant (all columns, reliability weights).
        standard_error: ``"reliability"`` or ``"ratio"`` (averaged only).
        confidence_level: 1 − β in (0, 1).
        selection: :class:`~dpaudit.bounds.Bonferroni` (default), :class:`~dpaudit.bounds.Split`
            (choose τ on a random part of the canaries) or :class:`~dpaudit.bounds.Explicit`.
        rng: randomness of the split (keyword-only; recorded as ``seed``).
        progress: a :class:`~dpaudit._typing.Progress` callback over thresholds, ``True``
            for a rich bar, or None.

    Returns:
        :class:`~dpaudit.bounds.SweepResult` with ``parameter="threshold"``.

    Raises:
        TypeError, ValueError: bad shapes, empty or non-finite thresholds, bad level or
            selection.

    Example:
        >>> res = label_memorization_sweep([0.9] * 50, [0.05] * 50)
        >>> res.selection.strategy, res.num_tests, res.epsilon > 0
        ('bonferroni', 7, True)
    """
    c1, c2 = _check_confidences(canary_confidence, alternative_confidence)
    level = check_confidence_level(confidence_level)
    averaged = _check_variant(averaged, standard_error)
    cols = c2 if averaged else c2[:, :1]
    game = _Game(c1, cols, None, level, averaged, standard_error)
    return run_sweep(game, thresholds, selection=selection, rng=rng, progress=progress)
