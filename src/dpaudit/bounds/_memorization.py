"""Label-memorization lower bound (Malek, Mironov, Prasad, Shilov & Tramèr 2021; paper 004 App. B).

Canaries are training examples given a wrong label y′; for a second wrong label y″ the
adversary guesses which of the two the model was trained on — the more confident one — and
abstains when both confidences are below a threshold τ (paper 004, App. B, last display;
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

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_nonneg_int,
    check_real,
)

__all__ = [
    "LabelMemorizationResult",
    "label_memorization_audit",
    "label_memorization_epsilon",
]

_STANDARD_ERRORS = ("reliability", "ratio")


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
        selection: ``"explicit"`` (τ fixed in advance).
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
    selection: str = "explicit"


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
    return float(special.betaincinv(successes, trials - successes + 1.0, beta))


def _from_rate(rate: float, low: float, **fields: object) -> LabelMemorizationResult:
    """Result from the CGR estimate and its lower bound: ε = logit(low) (Theorem B.1)."""
    eps = _logit_eps(low)
    return LabelMemorizationResult(
        epsilon=eps,
        estimate=_logit_eps(rate),
        correct_guess_rate=rate,
        cgr_interval=ConfidenceInterval(low, 1.0),
        confidence_interval=ConfidenceInterval(eps, math.inf),
        **fields,
    )


def _cp_result(
    guesses: int,
    correct: int,
    level: float,
    *,
    num_canaries: int,
    guessed: int,
    threshold: float | None,
) -> LabelMemorizationResult:
    beta = 1.0 - level
    if guesses == 0:
        cgr, low = 0.5, 0.0
    else:
        cgr = correct / guesses
        low = _cp_lower(correct, guesses, beta)
    return _from_rate(
        cgr,
        low,
        confidence_level=level,
        method="clopper-pearson",
        num_canaries=num_canaries,
        num_guessed_canaries=guessed,
        num_guesses=guesses,
        num_correct=correct,
        threshold=threshold,
    )


def label_memorization_epsilon(
    num_guesses: int, num_correct: int, *, confidence_level: float = 0.95
) -> LabelMemorizationResult:
    """ε ≥ log(CGR/(1 − CGR)) with a one-sided Clopper–Pearson bound on CGR (paper 004, Thm B.1).

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
    v = check_nonneg_int("num_correct", num_correct)
    if v > m:
        raise ValueError(f"num_correct must be <= num_guesses={m}, got {v}")
    level = check_confidence_level(confidence_level)
    return _cp_result(m, v, level, num_canaries=m, guessed=m, threshold=None)


def _check_confidences(
    canary_confidence: ArrayLike, alternative_confidence: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    c1 = check_array("canary_confidence", canary_confidence, ndim=1)
    c2 = check_array("alternative_confidence", alternative_confidence, ndim_min=1)
    if c2.ndim == 1:
        c2 = c2[:, None]
    if c2.ndim != 2 or c2.shape[0] != c1.shape[0]:
        raise ValueError(
            f"alternative_confidence must have shape ({c1.shape[0]},) or ({c1.shape[0]}, A), "
            f"got {np.shape(alternative_confidence)}"
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
    """(guessed, correct) boolean matrices of shape (N, A) (paper 004, App. B adversary)."""
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
    common = dict(
        confidence_level=level,
        method="averaged-normal",
        num_canaries=n_canaries,
        num_guessed_canaries=n_eff,
        num_guesses=total_m,
        num_correct=total_v,
        threshold=threshold,
        standard_error_form=se_form,
    )
    if n_eff == 0:
        return _from_rate(0.5, 0.0, standard_error=math.inf, **common)
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
        low = max(0.0, mean - float(-special.ndtri(beta)) * se)
    return _from_rate(mean, low, standard_error=se, degenerate_fallback=fallback, **common)


def _audit_arrays(
    c1: np.ndarray, c2: np.ndarray, threshold: float, averaged: bool, level: float, se_form: str
) -> LabelMemorizationResult:
    if not averaged:
        c2 = c2[:, :1]
    guessed, correct = _guess_matrices(c1, c2, threshold)
    if averaged:
        return _averaged(guessed, correct, level, se_form, threshold)
    g = guessed[:, 0]
    n_guess = int(np.count_nonzero(g))
    return _cp_result(
        n_guess,
        int(np.count_nonzero(correct[:, 0])),
        level,
        num_canaries=c1.shape[0],
        guessed=n_guess,
        threshold=threshold,
    )


def label_memorization_audit(
    canary_confidence: ArrayLike,
    alternative_confidence: ArrayLike,
    *,
    threshold: float = 0.5,
    averaged: bool = False,
    standard_error: str = "reliability",
    confidence_level: float = 0.95,
) -> LabelMemorizationResult:
    """Label-memorization ε lower bound from model confidences (paper 004, App. B).

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
