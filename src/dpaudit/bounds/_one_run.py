"""One-run audit of (ε, δ)-DP (Steinke, Nasr & Jagielski 2023, arXiv:2305.08846).

Game (Steinke et al. 2023 §3; Algorithm 1 of Liu, Boglioni, Fu, Hu, Thaker & Wu, *Enhancing
One-run Privacy Auditing with Quantile Regression-Based Membership Inference*): m canaries,
each included independently with probability
½; one training run; the auditor guesses "in"/"out" for r canaries (abstaining on the rest)
and gets v right. Under (ε, δ)-DP the number of correct guesses is stochastically dominated
as in Steinke et al. (2023, Thm 5.2), which gives the p-value

    q_ε = e^ε/(1 + e^ε),   β_b = Pr[Bin(r, q_ε) ≥ v],
    α   = max_{1 ≤ i ≤ v} (1/i) · Pr[v − i ≤ Bin(r, q_ε) < v]   (0 when v = 0),
    p(ε, δ) = min(1, β_b + 2·m·δ·α)        (the δ factor uses m, not r).

The ε lower bound at confidence 1 − β is ``sup{ε ≥ 0 : p(ε, δ) < β}``. For δ = 0 it has a
closed form — the logit of the one-sided Clopper–Pearson lower bound on the accuracy,
``q = I⁻¹_β(v, r − v + 1)`` — and for δ > 0 it is found by Brent's method on ``β − p(ε)``
inside ``[0, ε(δ = 0)]`` (p only grows with δ), with ``xtol = 1e-9``; the value returned is
checked to satisfy ``p < β`` and lies within :data:`EPSILON_TOLERANCE` below the supremum.

**Floor of the δ term.** For every ε ≥ 0 (so q_ε ≥ ½, and ``Pr[Bin(r, q_ε) ≥ ⌈r/2⌉] ≥ ½``),
taking ``i = v − ⌈r/2⌉`` in α gives ``α ≥ Pr[⌈r/2⌉ ≤ B < v]/(v − ⌈r/2⌉)`` and hence

    p(ε, δ) ≥ min(½, m·δ/(v − ⌈r/2⌉))     (v > ⌈r/2⌉; p ≥ ½ otherwise).

So no claim at all, not even ε = 0, is rejected at level β unless the guesses beat chance by
``v − ⌈r/2⌉ > m·δ/β`` correct answers. With δ > 0 and a small per-test level (Bonferroni over
G guess counts: β/G) this can make the bound exactly 0 however good the attack looks at δ = 0:
m = 10⁴, δ = 10⁻⁵, β/G = 0.05/1000 needs more than 2000 excess correct guesses. This is a
property of Steinke et al.'s p-value (the δ term uses all m canaries), not of the search.

:func:`one_run_sweep` runs the bound over a grid of guess counts with the choice paid for
(:mod:`dpaudit.bounds._sweep`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, special

from dpaudit._results import ConfidenceInterval, ResultMixin, SelectionRecord
from dpaudit._typing import ArrayLike, Progress, ProgressLike, RngLike
from dpaudit._validate import (
    check_array,
    check_at_most,
    check_confidence_level,
    check_delta,
    check_in_range,
    check_mask,
    check_nonneg_int,
    check_positive_int,
    check_real,
    track,
)
from dpaudit.bounds._beta import beta_ppf
from dpaudit.bounds._compiled import compiled
from dpaudit.bounds._selection import DEFAULT_BONFERRONI, Explicit, Selection
from dpaudit.bounds._sweep import (
    GuessCountData,
    Outcome,
    SweepResult,
    max_by_upper_bound,
    run_sweep,
)

__all__ = [
    "EPSILON_TOLERANCE",
    "GameResult",
    "OneRunResult",
    "one_run_epsilon",
    "one_run_epsilon_from_scores",
    "one_run_p_value",
    "one_run_sweep",
]

#: Absolute tolerance of the root search in ε (Brent ``xtol``), δ > 0 only.
EPSILON_TOLERANCE = 1e-9
_METHOD = "one-run (Steinke et al. 2023)"
#: The record of a bound computed from guess counts given by the caller.
COUNTS_GIVEN = SelectionRecord(
    "guess rule", "none", "counts given by the caller; valid if the guess rule was fixed in advance"
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GameResult(ResultMixin):
    """What the one-run audits share: the game's counts and the ε lower bound.

    Attributes:
        epsilon: the ε lower bound (0 when nothing is rejected).
        confidence_interval: the one-sided interval ``[epsilon, inf)``.
        confidence_level: 1 − β.
        method: the audit.
        num_canaries: m (all canaries or slots, guessed or not).
        num_guesses: guesses made (non-abstentions).
        num_correct: correct guesses.
        delta: the δ of the claims tested.
        tolerance: absolute tolerance of the root search (0 for a closed form).
        selection: how the guess rule was chosen: strategy ``"none"`` (counts given) or
            ``"explicit"`` (guess counts fixed in advance).
    """

    epsilon: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    method: str
    num_canaries: int
    num_guesses: int
    num_correct: int
    delta: float
    tolerance: float
    selection: SelectionRecord = COUNTS_GIVEN


def game_fields(
    epsilon: float, level: float, method: str, counts: tuple[int, int, int], delta: float
) -> dict[str, object]:
    """The :class:`GameResult` fields of a bound ``epsilon`` from game ``counts`` (m, r, v)."""
    m, r, v = counts
    return {
        "epsilon": epsilon,
        "confidence_interval": ConfidenceInterval(epsilon, math.inf),
        "confidence_level": level,
        "method": method,
        "num_canaries": m,
        "num_guesses": r,
        "num_correct": v,
        "delta": delta,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class OneRunResult(GameResult):
    """ε lower bound of a one-run audit (fields of :class:`GameResult`, and the p-value).

    Attributes:
        epsilon: the lower bound ``sup{ε : p(ε, δ) < β}`` (0 when nothing is rejected).
        p_value: p(ε, δ) at the returned ε: < β for δ > 0, = β up to rounding at the δ = 0
            closed-form supremum, ≥ β when ε = 0.
        tolerance: absolute tolerance of the root search in ε (0 for the closed form, δ = 0).
    """

    p_value: float


def check_game_counts(
    num_canaries: object, num_guesses: object, num_correct: object
) -> tuple[int, int, int]:
    """Game counts m ≥ 1, r ≤ m guesses, v ≤ r correct (errors name the argument)."""
    m = check_positive_int("num_canaries", num_canaries)
    r = check_nonneg_int("num_guesses", num_guesses)
    v = check_nonneg_int("num_correct", num_correct)
    check_at_most("num_guesses", r, m, "num_canaries")
    check_at_most("num_correct", v, r, "num_guesses")
    return m, r, v


#: Guess counts up to which the log-factorials come from a shared ``gammaln`` table
#: (8 bytes per guess); above, they are computed where needed, so memory stays O(1) in r.
LGAM_TABLE_MAX = 2**20
#: Window entries of α's binomial pmf evaluated at once: O(1) memory whatever r.
ALPHA_CHUNK = 2**16


def log_factorial_table(m: int) -> np.ndarray | None:
    """``log k!`` for k = 0..m+1 when m ≤ :data:`LGAM_TABLE_MAX`, else None (computed lazily)."""
    return special.gammaln(np.arange(m + 2.0)) if m <= LGAM_TABLE_MAX else None


def binomial_sf(v: int, r: int, q: float) -> float:
    """``Pr[Bin(r, q) ≥ v]`` for ``1 ≤ v ≤ r`` as the regularised incomplete beta
    ``I_q(v, r − v + 1)``.

    ``scipy.special.bdtrc`` is not used: it loses accuracy from r ≈ 10⁶ on (3e-9 relative at
    r = 10⁶, 5% at r = 2²⁵) and returns NaN from r = 2³¹ on, while ``betainc`` agrees with
    ``scipy.stats.binom.sf`` and mpmath there.
    """
    return float(special.betainc(v, r - v + 1, q))


class _PValue:
    """Evaluates p(ε, δ) for fixed (m, r, v) quickly and exactly (Steinke et al. 2023 §5).

    α only needs the binomial pmf on ``j ∈ [j0, v − 1]`` with ``j0`` about 12 standard
    deviations below the mean: for ``i > v − j0``, ``(1/i)·Pr[v−i ≤ B < v] ≤ α_window +
    Pr[B < j0]/(v − j0 + 1)``, and that remainder (``Pr[B < j0] ≲ 1e-30``) is *added* to α so
    the p-value is never understated. The window is walked down from ``v − 1`` in chunks of
    :data:`ALPHA_CHUNK` with a running sum (the same sequential sums as one cumulative sum),
    and log binomial coefficients come from a shared ``gammaln`` table for r ≤
    :data:`LGAM_TABLE_MAX` or are computed per chunk (the same values): memory is O(1) in r.
    """

    def __init__(self, m: int, r: int, v: int, delta: float, lgam: np.ndarray | None = None):
        self.m, self.r, self.v, self.delta = m, r, v, delta
        self.lgam = None
        if delta > 0 and v > 0:
            self.lgam = lgam if lgam is not None else log_factorial_table(r)

    def _log_factorial(self, k: np.ndarray) -> np.ndarray:
        """``log k!`` for integer-valued float ``k`` (table lookup or ``gammaln(k + 1)``)."""
        if self.lgam is not None and self.lgam.size > self.r + 1:
            return self.lgam[k.astype(np.int64) + 1]  # lgam[k] = log Γ(k) = log (k−1)!
        return special.gammaln(k + 1.0)

    def _alpha(self, j0: int, log_q: float, log_1mq: float) -> float:
        """``max_i (1/i)·Pr[v−i ≤ B < v]`` over the window ``[j0, v − 1]``: one compiled pass
        (:func:`_alpha_loop`) when numba is installed and the log-factorials are tabulated,
        else :meth:`_alpha_numpy`."""
        loop = compiled(_alpha_loop) if self.lgam is not None else None
        if loop is None or self.lgam.size <= self.r + 1:
            return self._alpha_numpy(j0, log_q, log_1mq)
        return float(loop(self.lgam, self.r, self.v, j0, log_q, log_1mq))

    def _alpha_numpy(self, j0: int, log_q: float, log_1mq: float) -> float:
        """:meth:`_alpha` vectorised with NumPy, in chunks (any r)."""
        r, v = self.r, self.v
        log_r = self._log_factorial(np.array([float(r)]))[0]
        best, carry, done = -math.inf, 0.0, 0
        for top in range(v - 1, j0 - 1, -ALPHA_CHUNK):
            j = np.arange(top, max(j0, top - ALPHA_CHUNK + 1) - 1, -1, dtype=np.float64)
            log_pmf = (
                log_r
                - self._log_factorial(j)
                - self._log_factorial(r - j)
                + j * log_q
                + (r - j) * log_1mq
            )
            # cum[t] = Pr[v-1-t <= B <= v-1] with i = t + 1, summed in the order of one cumsum
            cum = np.cumsum(np.concatenate(([carry], np.exp(log_pmf))))[1:]
            i = np.arange(done + 1.0, done + cum.size + 1.0)
            best = max(best, float(np.max(cum / i)))
            carry, done = float(cum[-1]), done + cum.size
        return best

    def __call__(self, epsilon: float) -> float:
        m, r, v, delta = self.m, self.r, self.v, self.delta
        if v == 0:
            return 1.0
        q = float(special.expit(epsilon))
        beta_b = binomial_sf(v, r, q)  # Pr[Bin(r, q) >= v]
        if delta == 0.0:
            return min(1.0, beta_b)
        sd = math.sqrt(r * q * (1.0 - q))
        j0 = max(0, min(v - 1, math.floor(r * q - 12.0 * sd - 10.0)))
        log_q = -math.log1p(math.exp(-epsilon))
        log_1mq = -epsilon + log_q
        alpha = self._alpha(j0, log_q, log_1mq)
        if j0 > 0:
            alpha += float(special.betaincc(j0, r - j0 + 1, q)) / (v - j0 + 1)  # Pr[B < j0]
        return min(1.0, beta_b + 2.0 * m * delta * alpha)


def _alpha_loop(lgam: np.ndarray, r: int, v: int, j0: int, log_q: float, log_1mq: float) -> float:
    """:meth:`_PValue._alpha` as one loop over ``j = v − 1, …, j0`` (``lgam[k] = log (k−1)!``):
    ``α = max_i (1/i)·Pr[v−i ≤ Bin(r, q_ε) < v]`` of the δ term (Steinke, Nasr & Jagielski
    2023, arXiv:2305.08846, Thm 5.2), the same terms summed in the same order as the NumPy
    version's chunked cumulative sum."""
    log_r = lgam[r + 1]
    best, cum, i = -math.inf, 0.0, 0.0
    for j in range(v - 1, j0 - 1, -1):
        fj = float(j)
        log_pmf = log_r - lgam[j + 1] - lgam[r - j + 1] + fj * log_q + (r - fj) * log_1mq
        cum += math.exp(log_pmf)
        i += 1.0
        if cum / i > best:
            best = cum / i
    return best


def _epsilon_delta0(r: int, v: int, beta: float) -> float:
    """Closed form of the δ = 0 bound: logit of the Clopper–Pearson lower bound on accuracy."""
    if v == 0:
        return 0.0
    q = float(beta_ppf(beta, v, r - v + 1))
    if q <= 0.5:
        return 0.0
    if q >= 1.0:  # β rounds to 1 (a confidence level below ~1e-16): nothing bounds ε
        return math.inf
    return max(0.0, math.log(q) - math.log1p(-q))


def _epsilon_search(
    m: int,
    r: int,
    v: int,
    delta: float,
    beta: float,
    lgam: np.ndarray | None = None,
    gap_hint: float | None = None,
) -> tuple[float, float, float]:
    """ε lower bound, the p-value there, and the tolerance used (module docstring).

    ``gap_hint`` (the gap ``ε(δ=0) − ε(δ)`` of a neighbouring sweep point) only narrows the
    first bracket; the answer does not depend on it beyond the tolerance.
    """
    eps0 = _epsilon_delta0(r, v, beta)
    # eps0 = inf: β rounds to 1 (a level below ~1e-16), nothing bounds ε whatever δ — and
    # the search below would never leave an infinite bracket.
    if delta == 0.0 or eps0 == 0.0 or math.isinf(eps0):
        p = binomial_sf(v, r, float(special.expit(eps0))) if v > 0 else 1.0
        return eps0, min(1.0, p), 0.0
    pval = _PValue(m, r, v, delta, lgam)
    # p(ε0, δ) >= p(ε0, 0) = β, so [0, ε0] brackets the crossing.
    lo, hi = 0.0, eps0
    if pval(hi) < beta:  # rounding at the closed form: the supremum is eps0 itself
        return hi, pval(hi), EPSILON_TOLERANCE
    if gap_hint is not None and 0.0 < 2.0 * gap_hint < eps0:
        cand = eps0 - 2.0 * gap_hint
        if pval(cand) < beta:
            lo = cand
        else:
            hi = cand
    if lo == 0.0 and pval(0.0) >= beta:
        return 0.0, pval(0.0), EPSILON_TOLERANCE
    root = optimize.brentq(lambda e: beta - pval(e), lo, hi, xtol=EPSILON_TOLERANCE)
    x = float(root)
    p = pval(x)
    while p >= beta and x > 0.0:  # report a point verified to lie in the rejected set
        x = max(0.0, x - EPSILON_TOLERANCE)
        p = pval(x)
    return x, p, EPSILON_TOLERANCE


def one_run_p_value(
    num_canaries: int, num_guesses: int, num_correct: int, epsilon: float, *, delta: float = 0.0
) -> float:
    """p-value of the claim "(ε, δ)-DP" in the one-run game.

    ``p = min(1, Pr[Bin(r, q_ε) ≥ v] + 2·m·δ·α)`` with ``q_ε = e^ε/(1+e^ε)`` and
    ``α = max_{1≤i≤v} (1/i)·Pr[v−i ≤ Bin(r, q_ε) < v]`` (Steinke, Nasr & Jagielski 2023,
    arXiv:2305.08846, Thm 5.2 and their Algorithm).

    Args:
        num_canaries: m ≥ 1, all canaries (the δ term scales with m).
        num_guesses: r ≤ m, guesses made (abstentions excluded).
        num_correct: v ≤ r, correct guesses.
        epsilon: the claimed ε ≥ 0.
        delta: the claimed δ in [0, 1).

    Returns:
        The p-value in [0, 1].

    Raises:
        TypeError, ValueError: counts out of order (r > m, v > r), ε < 0, δ outside [0, 1).

    Example:
        >>> round(one_run_p_value(1000, 100, 95, 2.0), 10)
        0.0161018188
    """
    m, r, v = check_game_counts(num_canaries, num_guesses, num_correct)
    epsilon = check_real("epsilon", epsilon)
    if epsilon < 0:
        raise ValueError(f"epsilon must be non-negative, got {epsilon}")
    delta = check_delta(delta)
    return _PValue(m, r, v, delta)(epsilon)


def one_run_epsilon(
    num_canaries: int,
    num_guesses: int,
    num_correct: int,
    *,
    delta: float = 0.0,
    confidence_level: float = 0.95,
) -> OneRunResult:
    """ε lower bound of a one-run audit at confidence ``confidence_level``.

    ``ε_lb = sup{ε ≥ 0 : p(ε, δ) < β}``, β = 1 − confidence_level (Steinke, Nasr & Jagielski
    2023, arXiv:2305.08846, Thm 5.2). δ = 0: closed form (logit of the
    Clopper–Pearson lower bound on the accuracy). δ > 0: Brent root search on the monotone
    p-value, ``xtol`` = :data:`EPSILON_TOLERANCE`; the returned ε is verified to have
    ``p < β``. Valid for a guess rule fixed in advance; for a sweep over guess counts use
    :func:`dpaudit.bounds.one_run_sweep`.

    Args:
        num_canaries: m ≥ 1.
        num_guesses: r ≤ m.
        num_correct: v ≤ r.
        delta: δ in [0, 1).
        confidence_level: 1 − β in (0, 1).

    Returns:
        :class:`OneRunResult`.

    Raises:
        TypeError, ValueError: bad counts (r > m, v > r), δ or level out of range.

    Example:
        >>> round(one_run_epsilon(1000, 100, 95).epsilon, 6)
        2.172434
        >>> round(one_run_epsilon(1000, 100, 95, delta=1e-5).epsilon, 6)
        2.165176
    """
    m, r, v = check_game_counts(num_canaries, num_guesses, num_correct)
    delta = check_delta(delta)
    level = check_confidence_level(confidence_level)
    eps, p, tol = _epsilon_search(m, r, v, delta, 1.0 - level)
    return OneRunResult(
        **game_fields(eps, level, _METHOD, (m, r, v), delta), p_value=p, tolerance=tol
    )


def _check_scores_membership(
    scores: ArrayLike, included: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    s = check_array("scores", scores, ndim=1)
    inc = check_mask("included", included)
    if inc.shape != s.shape:
        raise ValueError(f"included must have the shape of scores {s.shape}, got {inc.shape}")
    return s, inc


def _ranked_correct(scores: np.ndarray, included: np.ndarray) -> np.ndarray:
    """``included`` ordered by decreasing score (ties: original order, stable)."""
    order = np.argsort(-scores, kind="stable")
    return included[order]


def _correct_guesses(ranked_in: np.ndarray, k_pos: np.ndarray, k_neg: np.ndarray) -> np.ndarray:
    """Correct guesses of "in" for the ``k_pos`` first and "out" for the ``k_neg`` last.

    The guess rule of Steinke et al. 2023 (Algorithm 1 of Liu et al.): ``ranked_in`` is the
    membership ordered by decreasing score; vectorised over the guess counts.
    """
    m = ranked_in.size
    cum = np.concatenate(([0], np.cumsum(ranked_in, dtype=np.int64)))
    return (cum[k_pos] + (k_neg - (cum[m] - cum[m - k_neg]))).astype(np.int64)


def one_run_epsilon_from_scores(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    num_positive: int,
    num_negative: int,
    delta: float = 0.0,
    confidence_level: float = 0.95,
) -> OneRunResult:
    """One-run ε lower bound from raw canary scores with fixed guess counts k₊/k₋.

    Guess "in" for the k₊ highest scores and "out" for the k₋ lowest (Steinke et al. 2023;
    ties by position), then apply :func:`one_run_epsilon` with m = number of scores.
    Scores must be oriented so that included canaries score higher.

    Args:
        scores: (m,) canary scores.
        included: (m,) booleans (or 0/1): whether each canary was in the training set.
        num_positive: k₊ ≥ 0.
        num_negative: k₋ ≥ 0, with k₊ + k₋ ≤ m.
        delta: δ in [0, 1).
        confidence_level: 1 − β in (0, 1).

    Returns:
        :class:`OneRunResult` (selection ``"explicit"``: k₊/k₋ must be fixed in advance).

    Raises:
        TypeError, ValueError: shapes differ, non-0/1 membership, k₊ + k₋ > m, bad δ/level.

    Example:
        >>> res = one_run_epsilon_from_scores([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0],
        ...                                   num_positive=2, num_negative=2)
        >>> (res.num_guesses, res.num_correct)
        (4, 4)
    """
    s, inc = _check_scores_membership(scores, included)
    kp = check_nonneg_int("num_positive", num_positive)
    kn = check_nonneg_int("num_negative", num_negative)
    check_at_most("num_positive + num_negative", kp + kn, s.size, "the number of canaries")
    v = int(_correct_guesses(_ranked_correct(s, inc), np.array([kp]), np.array([kn]))[0])
    res = one_run_epsilon(s.size, kp + kn, v, delta=delta, confidence_level=confidence_level)
    rule = Explicit((kp, kn)).record("guess rule (k+, k-)")
    return dataclasses.replace(res, selection=rule)


# ---------------------------------------------------------------------------------------------
# Sweep over the number of guesses
# ---------------------------------------------------------------------------------------------


def _eps_all(
    m: int, r: np.ndarray, v: np.ndarray, delta: float, beta: float, report: Progress
) -> np.ndarray:
    """The bound at every sweep point (closed form at δ = 0, root searches otherwise)."""
    if delta == 0.0:
        out = np.zeros(r.size)
        pos = v > 0
        q = beta_ppf(beta, v[pos].astype(float), (r[pos] - v[pos] + 1).astype(float))
        with np.errstate(divide="ignore"):
            out[pos] = np.maximum(0.0, np.log(q) - np.log1p(-q))
        return out
    lgam = log_factorial_table(m)
    out = np.zeros(r.size)
    gap = None
    for j in track(range(r.size), r.size, "one-run sweep", report):
        if r[j] == 0:
            continue
        e = _epsilon_search(m, int(r[j]), int(v[j]), delta, beta, lgam, gap_hint=gap)[0]
        out[j] = e
        e0 = _epsilon_delta0(int(r[j]), int(v[j]), beta)
        if e > 0.0:
            gap = e0 - e
    return out


def _no_report(done: int, total: int, description: str) -> None:
    """Progress of the δ = 0 upper bounds: none (vectorised)."""


def _eps_max(m: int, r: np.ndarray, v: np.ndarray, delta: float, beta: float) -> tuple[float, int]:
    """Largest bound over the points: δ = 0 closed forms prune the δ > 0 searches."""
    upper = _eps_all(m, r, v, 0.0, beta, _no_report)
    if delta == 0.0:
        idx = int(np.argmax(upper))
        return float(upper[idx]), idx
    lgam = log_factorial_table(m)

    def evaluate(j: int, best: float) -> float:
        return _epsilon_search(m, int(r[j]), int(v[j]), delta, beta, lgam)[0]

    return max_by_upper_bound(upper, evaluate)


@dataclasses.dataclass
class _Game(GuessCountData):
    """Guess "in" for the ``round(positive_fraction·r)`` highest scores, "out" for the rest."""

    positive_fraction: float = 0.5
    method = _METHOD

    def counts(self, idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ranked = _ranked_correct(*self.part(idx))
        kp = np.rint(vals * self.positive_fraction).astype(np.int64)
        return vals.astype(np.int64), _correct_guesses(ranked, kp, vals - kp)

    def all_eps(
        self, idx: np.ndarray | None, vals: np.ndarray, n: int, report: Progress
    ) -> np.ndarray:
        r, v = self.counts(idx, vals)
        return _eps_all(n, r, v, self.delta, 1.0 - self.level, report)

    def outcome(self, idx: np.ndarray | None, vals: np.ndarray, beta: float, n: int) -> Outcome:
        r, v = self.counts(idx, vals)
        e, j = _eps_max(n, r, v, self.delta, beta)
        return Outcome(e, j, int(r[j]), int(v[j]))


def one_run_sweep(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    guess_counts: ArrayLike | None = None,
    positive_fraction: float = 0.5,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    selection: Selection | str = DEFAULT_BONFERRONI,
    rng: RngLike = None,
    progress: ProgressLike = None,
    refine: bool = False,
) -> SweepResult:
    """One-run ε bound over a guess-count sweep, with the choice of guess count paid for.

    For each total guess count r in the sweep (default: 10 to m in steps of 10, the grid of
    Liu et al. §4), guess "in" for the ``round(positive_fraction·r)`` highest scores and
    "out" for the rest of the r lowest, then apply the bound of :func:`one_run_epsilon`. The
    papers' maximum over the sweep is returned as ``uncorrected_max_epsilon`` beside the
    valid ``epsilon`` (:mod:`dpaudit.bounds._sweep`).

    With δ > 0, Bonferroni tests every point at β/G, and the δ term of the p-value alone is at
    least ``min(½, m·δ/(v − ⌈r/2⌉))`` at every ε (module docstring): unless some point has
    ``v − ⌈r/2⌉ > m·δ·G/β`` the Bonferroni bound is exactly 0 (e.g. m = 10⁴, δ = 10⁻⁵,
    G = 1000 needs more than 2000 correct guesses above chance), while the split tests one
    point at β on half the canaries and usually certifies far more.

    Args:
        scores: (m,) canary scores, larger = more likely included.
        included: (m,) booleans/0-1, the true inclusion of each canary.
        guess_counts: total guesses per sweep point (integers in [1, m]); or give them as
            ``Bonferroni(candidates)``.
        positive_fraction: share of the guesses that are "in" guesses, in [0, 1].
        delta: δ in [0, 1).
        confidence_level: 1 − β in (0, 1).
        selection: :class:`~dpaudit.bounds.Bonferroni` (default), :class:`~dpaudit.bounds.Split`
            (choose the guess count on a random part of the canaries) or
            :class:`~dpaudit.bounds.Explicit` (one guess count fixed in advance).
        rng: randomness of the split (keyword-only; recorded as ``seed``).
        refine: also evaluate every guess count between the neighbours of the best grid
            point (at most 256, :func:`dpaudit.bounds._sweep.refine_values`), on all
            canaries for the uncorrected maximum and on the selection part for the valid
            bound; needs a :class:`~dpaudit.bounds.Split` or
            :class:`~dpaudit.bounds.MultiSplit` selection (the split pays for both stages).
        progress: a :class:`~dpaudit._typing.Progress` callback over sweep points (δ > 0),
            ``True`` for a rich bar, or None.

    Returns:
        :class:`~dpaudit.bounds.SweepResult`.

    Raises:
        TypeError, ValueError: bad shapes, membership not 0/1, guess counts out of range, bad
            fractions, δ, level or selection; a split leaving an empty part.

    Example:
        >>> import numpy as np
        >>> g = np.random.default_rng(0)
        >>> inc = g.random(1000) < 0.5
        >>> res = one_run_sweep(inc + g.normal(size=1000), inc, rng=1)
        >>> res.selection.strategy, res.num_tests, res.epsilon <= res.uncorrected_max_epsilon
        ('bonferroni', 100, True)
    """
    s, inc = _check_scores_membership(scores, included)
    fraction = check_in_range(
        "positive_fraction", positive_fraction, 0.0, 1.0, low_inclusive=True, high_inclusive=True
    )
    game = _Game(s, inc, check_delta(delta), check_confidence_level(confidence_level), fraction)
    return run_sweep(
        game, guess_counts, selection=selection, rng=rng, progress=progress, refine=refine
    )
