"""Sweeps over guess counts and abstention thresholds, paid for honestly.

Papers 001 (§4, "Choice of number of guesses k": every k from 10 to the maximum in steps of
10) and 004 (App. B: thresholds τ ∈ [0.5, 0.99]) report the *largest* bound over a sweep
with no correction for having chosen it on the same data. That maximum is not a valid lower
bound at the nominal level (``shared/formulas.md`` §2, "Choosing the guess rule";
``shared/design.md``, "What valid means here"). Every sweep here returns, clearly apart:

* ``epsilon`` — a valid bound, paid for by ``selection``:

  - ``"bonferroni"``: every sweep point is tested at level ``1 − β/G`` (G points) on all
    canaries and the largest of those bounds is reported (union bound over the G tests);
  - ``"split"``: the canaries are split at random (``rng``); the sweep point with the largest
    bound on the *selection* part is chosen and the bound is computed at level ``1 − β`` on the
    disjoint *test* part only. Guess counts are rescaled to the part sizes (same fraction of
    the canaries). Canary inclusions are independent, so the test part's game is a fresh game
    given the selection part (Steinke et al. 2023 allow any guess rule that does not see the
    test canaries' membership).

* ``epsilons`` / ``uncorrected_max_epsilon`` — the per-point bounds at the nominal level on all
  canaries and their maximum: what the papers report, labelled *uncorrected* (not valid).

The Bonferroni maximum is found without evaluating every point exactly: each point has a
cheap upper bound (δ = 0 closed form for the one-run bound, ``μ₀`` for the f-DP bound) and
points whose upper bound cannot beat the current best are skipped.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from scipy import special

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_in_range,
)
from dpaudit.bounds._fdp import (
    _MU_MAX,
    MU_TOLERANCE,
    _check_slot_scores,
    _largest_rejected_mu,
    _mu_to_epsilon,
    _ranked_slot_correct,
    _rejection_margin,
)
from dpaudit.bounds._memorization import (
    _audit_arrays,
    _check_confidences,
    _check_variant,
    _guess_matrices,
)
from dpaudit.bounds._one_run import (
    _check_scores_membership,
    _epsilon_delta0,
    _epsilon_search,
    _ranked_correct,
)

__all__ = [
    "DEFAULT_MEMORIZATION_THRESHOLDS",
    "SweepResult",
    "default_guess_counts",
    "fdp_one_run_sweep",
    "label_memorization_sweep",
    "one_run_sweep",
]

_SELECTIONS = ("bonferroni", "split")
#: Thresholds of the authors' code for paper 004 (``memorization_attack/attack.py``).
DEFAULT_MEMORIZATION_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
_UNCORRECTED_NOTE = (
    "uncorrected_max_epsilon is the maximum over the sweep at the nominal confidence level "
    "without any correction for the selection, as reported in papers 001 and 004; it is NOT a "
    "valid lower bound at confidence_level. Use epsilon."
)


@dataclasses.dataclass(frozen=True)
class SweepResult(ResultMixin):
    """A sweep over guess counts or thresholds, with the selection paid for.

    Attributes:
        epsilon: the valid lower bound after ``selection`` (Bonferroni or split).
        confidence_interval: ``[epsilon, inf)``.
        confidence_level: 1 − β of ``epsilon``.
        selection: ``"bonferroni"`` or ``"split"``.
        method: the underlying bound (one-run, f-DP one-run, label memorization).
        parameter: what was swept: ``"num_guesses"`` or ``"threshold"``.
        values: the sweep grid (in full-data units).
        num_guesses: guesses per sweep point on all canaries.
        num_correct: correct guesses per sweep point on all canaries.
        epsilons: per-point bound on all canaries at ``confidence_level`` — UNCORRECTED.
        uncorrected_max_epsilon: ``max(epsilons)`` — the papers' number, NOT a valid bound.
        uncorrected_value: the sweep value attaining it.
        selected_value: the sweep value behind ``epsilon``.
        per_test_confidence_level: level of each test behind ``epsilon`` (``1 − β/G`` for
            Bonferroni, ``1 − β`` for split).
        num_tests: G, the number of sweep points.
        num_canaries: canaries (or slots) in the data.
        test_num_canaries: canaries the reported bound was computed on (all, or the test part).
        test_num_guesses: guesses behind ``epsilon``.
        test_num_correct: correct guesses behind ``epsilon``.
        delta: δ (None for label memorization).
        split_fraction: fraction of canaries used for selection (split only).
        seed: integer seed of the split when known.
        selection_epsilons: per-point bounds on the selection part (split only).
        mus: per-point largest rejected μ on all canaries, uncorrected (f-DP only).
        mu: the μ behind ``epsilon`` (f-DP only).
        uncorrected_note: what ``uncorrected_max_epsilon`` is and is not.
    """

    epsilon: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    selection: str
    method: str
    parameter: str
    values: np.ndarray
    num_guesses: np.ndarray
    num_correct: np.ndarray
    epsilons: np.ndarray
    uncorrected_max_epsilon: float
    uncorrected_value: float
    selected_value: float
    per_test_confidence_level: float
    num_tests: int
    num_canaries: int
    test_num_canaries: int
    test_num_guesses: int
    test_num_correct: int
    delta: float | None = None
    split_fraction: float | None = None
    seed: int | None = None
    selection_epsilons: np.ndarray | None = None
    mus: np.ndarray | None = None
    mu: float | None = None
    uncorrected_note: str = _UNCORRECTED_NOTE


def default_guess_counts(num_canaries: int) -> np.ndarray:
    """Paper 001's guess-count grid: 10, 20, … up to ``num_canaries`` (``[m]`` if m < 10).

    Example:
        >>> default_guess_counts(35).tolist()
        [10, 20, 30]
    """
    if num_canaries < 10:
        return np.array([num_canaries], dtype=np.int64)
    return np.arange(10, num_canaries + 1, 10, dtype=np.int64)


def _check_guess_counts(guess_counts: ArrayLike | None, m: int) -> np.ndarray:
    if guess_counts is None:
        return default_guess_counts(m)
    g = check_array("guess_counts", guess_counts, ndim_min=0)
    g = np.atleast_1d(g)
    if g.ndim != 1:
        raise ValueError(f"guess_counts must be 1-d, got shape {g.shape}")
    if not np.all(g == np.round(g)) or np.any(g < 1) or np.any(g > m):
        raise ValueError(f"guess_counts must be integers in [1, {m}], got {guess_counts!r}")
    return np.unique(g.astype(np.int64))


def _check_selection(selection: str, split_fraction: float) -> float:
    check_choice("selection", selection, _SELECTIONS)
    return check_in_range("split_fraction", split_fraction, 0.0, 1.0)


def _split(n: int, fraction: float, rng: RngLike) -> tuple[np.ndarray, np.ndarray]:
    n_sel = round(fraction * n)
    if n_sel < 1 or n_sel > n - 1:
        raise ValueError(
            f"split_fraction={fraction} leaves an empty part for {n} canaries; "
            "use more canaries or another fraction"
        )
    perm = as_generator(rng).permutation(n)
    return np.sort(perm[:n_sel]), np.sort(perm[n_sel:])


def _scaled(values: np.ndarray, n_part: int, n_full: int) -> np.ndarray:
    return np.rint(values * (n_part / n_full)).astype(np.int64)


def _argmax_first(x: np.ndarray) -> int:
    return int(np.argmax(x))


def _max_by_upper_bound(
    upper: np.ndarray, evaluate: Callable[[int, float], float]
) -> tuple[float, int]:
    """Largest ``evaluate(j, best)`` over the points, pruned by their upper bounds.

    Points are visited by decreasing ``upper`` (ties in order); the search stops once no
    remaining upper bound exceeds the best value so far. ``evaluate`` may return any value
    ≤ ``best`` for a point it can show does not beat ``best``. Returns ``(best, index)``,
    ``(0.0, argmax(upper))`` when no point has a positive value.
    """
    best, best_idx = 0.0, _argmax_first(upper)
    for j in np.argsort(-upper, kind="stable"):
        if upper[j] <= best:
            break
        value = evaluate(int(j), best)
        if value > best:
            best, best_idx = value, int(j)
    return best, best_idx


@dataclasses.dataclass
class _Outcome:
    eps: float
    index: int
    guesses: int
    correct: int
    mu: float | None = None


# ---------------------------------------------------------------------------------------
# One-run (Steinke et al. 2023)
# ---------------------------------------------------------------------------------------


def _one_run_counts(
    ranked: np.ndarray, r: np.ndarray, positive_fraction: float
) -> tuple[np.ndarray, np.ndarray]:
    m = ranked.size
    cum = np.concatenate(([0], np.cumsum(ranked, dtype=np.int64)))
    kp = np.rint(r * positive_fraction).astype(np.int64)
    kn = r - kp
    correct = cum[kp] + (kn - (cum[m] - cum[m - kn]))
    return r.astype(np.int64), correct.astype(np.int64)


def _one_run_eps_all(m: int, r: np.ndarray, v: np.ndarray, delta: float, beta: float) -> np.ndarray:
    if delta == 0.0:
        out = np.zeros(r.size)
        pos = v > 0
        q = special.betaincinv(v[pos].astype(float), (r[pos] - v[pos] + 1).astype(float), beta)
        with np.errstate(divide="ignore"):
            out[pos] = np.maximum(0.0, np.log(q) - np.log1p(-q))
        return out
    lgam = special.gammaln(np.arange(m + 2.0))
    out = np.zeros(r.size)
    gap = None
    for j in range(r.size):
        if r[j] == 0:
            continue
        e = _epsilon_search(m, int(r[j]), int(v[j]), delta, beta, lgam, gap_hint=gap)[0]
        out[j] = e
        e0 = _epsilon_delta0(int(r[j]), int(v[j]), beta)
        if e > 0.0:
            gap = e0 - e
    return out


def _one_run_eps_max(
    m: int, r: np.ndarray, v: np.ndarray, delta: float, beta: float
) -> tuple[float, int]:
    upper = _one_run_eps_all(m, r, v, 0.0, beta)
    if delta == 0.0:
        idx = _argmax_first(upper)
        return float(upper[idx]), idx
    lgam = special.gammaln(np.arange(m + 2.0))

    def evaluate(j: int, best: float) -> float:
        return _epsilon_search(m, int(r[j]), int(v[j]), delta, beta, lgam)[0]

    return _max_by_upper_bound(upper, evaluate)


def one_run_sweep(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    guess_counts: ArrayLike | None = None,
    positive_fraction: float = 0.5,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    selection: str = "bonferroni",
    split_fraction: float = 0.5,
    rng: RngLike = None,
) -> SweepResult:
    """One-run ε bound over a guess-count sweep, with Bonferroni or split correction.

    For each total guess count r in the sweep (default: paper 001 §4, 10 to m in steps of
    10), guess "in" for the ``round(positive_fraction·r)`` highest scores and "out" for the
    rest of the r lowest (paper 001, Alg. 1), then apply the bound of
    :func:`dpaudit.bounds.one_run_epsilon` (``shared/formulas.md`` §2). The papers' maximum
    over the sweep is returned as ``uncorrected_max_epsilon`` beside the valid ``epsilon``.

    With δ > 0, Bonferroni tests every point at β/G, and the δ term of the p-value alone is at
    least ``min(½, m·δ/(v − ⌈r/2⌉))`` at every ε (module docstring of ``_one_run``): unless
    some point has ``v − ⌈r/2⌉ > m·δ·G/β`` the Bonferroni bound is exactly 0 (e.g. m = 10⁴,
    δ = 10⁻⁵, G = 1000 needs more than 2000 correct guesses above chance), while the split
    tests one point at β on half the canaries and usually certifies far more.

    Args:
        scores: (m,) canary scores, larger = more likely included.
        included: (m,) booleans/0-1, the true inclusion of each canary.
        guess_counts: total guesses per sweep point (integers in [1, m]).
        positive_fraction: share of the guesses that are "in" guesses, in [0, 1].
        delta: δ in [0, 1).
        confidence_level: 1 − β in (0, 1).
        selection: ``"bonferroni"`` or ``"split"``.
        split_fraction: fraction of canaries used to choose the guess count (split only).
        rng: randomness of the split (keyword-only).

    Returns:
        :class:`SweepResult`.

    Raises:
        TypeError, ValueError: bad shapes, membership not 0/1, guess counts out of range, bad
            fractions, δ or level; a split leaving an empty part.

    Example:
        >>> import numpy as np
        >>> g = np.random.default_rng(0)
        >>> inc = g.random(1000) < 0.5
        >>> res = one_run_sweep(inc + g.normal(size=1000), inc, rng=1)
        >>> res.selection, res.num_tests, res.epsilon <= res.uncorrected_max_epsilon
        ('bonferroni', 100, True)
    """
    s, inc = _check_scores_membership(scores, included)
    m = s.size
    values = _check_guess_counts(guess_counts, m)
    positive_fraction = check_in_range(
        "positive_fraction", positive_fraction, 0.0, 1.0, low_inclusive=True, high_inclusive=True
    )
    delta = check_delta(delta)
    level = check_confidence_level(confidence_level)
    split_fraction = _check_selection(selection, split_fraction)
    beta = 1.0 - level

    def counts(idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ranked = _ranked_correct(s, inc) if idx is None else _ranked_correct(s[idx], inc[idx])
        return _one_run_counts(ranked, vals, positive_fraction)

    def outcome(idx: np.ndarray | None, vals: np.ndarray, lvl_beta: float, n: int) -> _Outcome:
        r, v = counts(idx, vals)
        e, j = _one_run_eps_max(n, r, v, delta, lvl_beta)
        return _Outcome(e, j, int(r[j]), int(v[j]))

    def all_eps(idx: np.ndarray | None, vals: np.ndarray, n: int) -> np.ndarray:
        r, v = counts(idx, vals)
        return _one_run_eps_all(n, r, v, delta, beta)

    return _run_sweep(
        method="one-run (Steinke et al. 2023)",
        parameter="num_guesses",
        values=values,
        n=m,
        counts=counts,
        all_eps=all_eps,
        outcome=outcome,
        scale=True,
        level=level,
        selection=selection,
        split_fraction=split_fraction,
        rng=rng,
        delta=delta,
    )


# ---------------------------------------------------------------------------------------
# f-DP one-run (Mahloujifar et al. 2024)
# ---------------------------------------------------------------------------------------


def _fdp_counts(ranked: np.ndarray, ng: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cum = np.concatenate(([0], np.cumsum(ranked, dtype=np.int64)))
    return ng.astype(np.int64), cum[ng].astype(np.int64)


def _fdp_mu_all(m: int, ng: np.ndarray, nc: np.ndarray, tau: float, k: int) -> np.ndarray:
    upper = np.minimum(_fdp_mu_upper(m, ng, nc, tau, k), _MU_MAX)
    out = np.zeros(ng.size)
    gap = None
    for j in range(ng.size):
        if ng[j] == 0:
            continue
        mu = _largest_rejected_mu(m, int(ng[j]), int(nc[j]), tau, k, hint_gap=gap)
        out[j] = mu
        if mu > 0:
            gap = float(upper[j]) - mu
    return out


def _fdp_mu_upper(m: int, ng: np.ndarray, nc: np.ndarray, tau: float, k: int) -> np.ndarray:
    """μ₀ per point: no μ ≥ μ₀ is rejected (module docstring of ``_fdp``)."""
    r0 = tau * nc / m
    h0 = tau * (ng - nc) / m
    with np.errstate(divide="ignore", invalid="ignore"):
        mu0 = special.ndtri(r0) - special.ndtri(h0 / (k - 1))
    mu0 = np.where(nc == 0, 0.0, np.where(h0 <= 0, np.inf, mu0))
    return np.maximum(mu0, 0.0)


def _fdp_mu_max(m: int, ng: np.ndarray, nc: np.ndarray, tau: float, k: int) -> tuple[float, int]:
    def evaluate(j: int, best: float) -> float:
        a, b = int(ng[j]), int(nc[j])
        # One evaluation decides whether this point can beat the best so far.
        if best > 0.0 and _rejection_margin(best + MU_TOLERANCE, m, a, b, tau, k) <= 0.0:
            return 0.0
        return _largest_rejected_mu(
            m, a, b, tau, k, rejected_at=best + MU_TOLERANCE if best > 0.0 else None
        )

    return _max_by_upper_bound(_fdp_mu_upper(m, ng, nc, tau, k), evaluate)


def fdp_one_run_sweep(
    scores: ArrayLike,
    inserted: ArrayLike,
    *,
    guess_counts: ArrayLike | None = None,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    selection: str = "bonferroni",
    split_fraction: float = 0.5,
    rng: RngLike = None,
) -> SweepResult:
    """f-DP one-run bound over a guess-count sweep, with Bonferroni or split correction.

    In each slot the adversary names the highest-scoring candidate and guesses in the n_g
    slots with the largest margin over the runner-up; for each n_g in the sweep (default
    10, 20, …, m) the largest rejected Gaussian-DP μ is found as in
    :func:`dpaudit.bounds.fdp_one_run_epsilon` (``shared/formulas.md`` §3) and turned into ε
    at δ. The uncorrected maximum over the sweep is reported apart from the valid bound.

    Args:
        scores: (m, K) candidate scores per slot, K ≥ 2.
        inserted: (m,) index of the inserted candidate per slot.
        guess_counts: numbers of guesses per sweep point (integers in [1, m]).
        delta: δ in [0, 1).
        confidence_level: 1 − τ in (0, 1).
        selection: ``"bonferroni"`` or ``"split"``.
        split_fraction: fraction of slots used to choose the guess count (split only).
        rng: randomness of the split (keyword-only).

    Returns:
        :class:`SweepResult` (with ``mus`` and ``mu``).

    Raises:
        TypeError, ValueError: bad shapes or indices, guess counts out of range, bad δ/level,
            a split leaving an empty part.

    Example:
        >>> import numpy as np
        >>> g = np.random.default_rng(0)
        >>> ins = g.integers(0, 2, 500)
        >>> sc = g.normal(size=(500, 2)); sc[np.arange(500), ins] += 2.0
        >>> res = fdp_one_run_sweep(sc, ins, guess_counts=[50, 100, 250, 500], delta=1e-5)
        >>> res.mu > 0, res.epsilon <= res.uncorrected_max_epsilon
        (True, True)
    """
    s, ins = _check_slot_scores(scores, inserted)
    m, k = s.shape
    values = _check_guess_counts(guess_counts, m)
    delta = check_delta(delta)
    level = check_confidence_level(confidence_level)
    split_fraction = _check_selection(selection, split_fraction)
    tau = 1.0 - level

    def counts(idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ranked = (
            _ranked_slot_correct(s, ins) if idx is None else _ranked_slot_correct(s[idx], ins[idx])
        )
        return _fdp_counts(ranked, vals)

    def outcome(idx: np.ndarray | None, vals: np.ndarray, lvl_tau: float, n: int) -> _Outcome:
        ng, nc = counts(idx, vals)
        mu, j = _fdp_mu_max(n, ng, nc, lvl_tau, k)
        return _Outcome(_mu_to_epsilon(mu, delta), j, int(ng[j]), int(nc[j]), mu=mu)

    mus_holder: dict[str, np.ndarray] = {}

    def all_eps(idx: np.ndarray | None, vals: np.ndarray, n: int) -> np.ndarray:
        ng, nc = counts(idx, vals)
        mus = _fdp_mu_all(n, ng, nc, tau, k)
        if idx is None:
            mus_holder["mus"] = mus
        return np.array([_mu_to_epsilon(float(x), delta) for x in mus])

    result = _run_sweep(
        method=f"f-DP one-run, Gaussian-DP family, K={k} (Mahloujifar et al. 2024)",
        parameter="num_guesses",
        values=values,
        n=m,
        counts=counts,
        all_eps=all_eps,
        outcome=outcome,
        scale=True,
        level=level,
        selection=selection,
        split_fraction=split_fraction,
        rng=rng,
        delta=delta,
    )
    return dataclasses.replace(result, mus=mus_holder["mus"])


# ---------------------------------------------------------------------------------------
# Label memorization (paper 004, App. B)
# ---------------------------------------------------------------------------------------


def label_memorization_sweep(
    canary_confidence: ArrayLike,
    alternative_confidence: ArrayLike,
    *,
    thresholds: ArrayLike = DEFAULT_MEMORIZATION_THRESHOLDS,
    averaged: bool = False,
    standard_error: str = "reliability",
    confidence_level: float = 0.95,
    selection: str = "bonferroni",
    split_fraction: float = 0.5,
    rng: RngLike = None,
) -> SweepResult:
    """Label-memorization bound over an abstention-threshold sweep, paid for.

    Paper 004 (App. B) tries τ ∈ [0.5, 0.99] and reports the best bound, "omitting
    corrections for multiple hypothesis testing"; that number is ``uncorrected_max_epsilon``
    here, beside the Bonferroni- or split-corrected ``epsilon``. The bound at each τ is that of
    :func:`dpaudit.bounds.label_memorization_audit`.

    Args:
        canary_confidence: (N,) confidence on each canary's training label y′.
        alternative_confidence: (N,) or (N, A) confidences on alternative labels y″.
        thresholds: the τ grid (default: the authors' 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99).
        averaged: use the averaged variant (all columns, reliability weights).
        standard_error: ``"reliability"`` or ``"ratio"`` (averaged only).
        confidence_level: 1 − β in (0, 1).
        selection: ``"bonferroni"`` or ``"split"`` (split over canaries).
        split_fraction: fraction of canaries used to choose τ (split only).
        rng: randomness of the split (keyword-only).

    Returns:
        :class:`SweepResult` with ``parameter="threshold"``.

    Raises:
        TypeError, ValueError: bad shapes, empty or non-finite thresholds, bad level/fraction.

    Example:
        >>> res = label_memorization_sweep([0.9] * 50, [0.05] * 50)
        >>> res.selection, res.num_tests, res.epsilon > 0
        ('bonferroni', 7, True)
    """
    c1, c2 = _check_confidences(canary_confidence, alternative_confidence)
    values = np.atleast_1d(check_array("thresholds", thresholds, ndim_min=0))
    if values.ndim != 1:
        raise ValueError(f"thresholds must be 1-d, got shape {values.shape}")
    values = np.unique(values)
    level = check_confidence_level(confidence_level)
    split_fraction = _check_selection(selection, split_fraction)
    averaged = _check_variant(averaged, standard_error)
    cols = c2 if averaged else c2[:, :1]
    n = c1.size

    def counts(idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = c1 if idx is None else c1[idx]
        b = cols if idx is None else cols[idx]
        ng, nc = [], []
        for t in vals:
            guessed, correct = _guess_matrices(a, b, float(t))
            ng.append(int(guessed.sum()))
            nc.append(int(correct.sum()))
        return np.array(ng, dtype=np.int64), np.array(nc, dtype=np.int64)

    def eps_at(idx: np.ndarray | None, vals: np.ndarray, lvl: float) -> np.ndarray:
        a = c1 if idx is None else c1[idx]
        b = cols if idx is None else cols[idx]
        return np.array(
            [_audit_arrays(a, b, float(t), averaged, lvl, standard_error).epsilon for t in vals]
        )

    def outcome(idx: np.ndarray | None, vals: np.ndarray, lvl_beta: float, n_part: int) -> _Outcome:
        e = eps_at(idx, vals, 1.0 - lvl_beta)
        j = _argmax_first(e)
        ng, nc = counts(idx, vals[j : j + 1])
        return _Outcome(float(e[j]), j, int(ng[0]), int(nc[0]))

    def all_eps(idx: np.ndarray | None, vals: np.ndarray, n_part: int) -> np.ndarray:
        return eps_at(idx, vals, level)

    variant = "averaged-normal" if averaged else "clopper-pearson"
    return _run_sweep(
        method=f"label memorization, {variant} (paper 004 App. B)",
        parameter="threshold",
        values=values,
        n=n,
        counts=counts,
        all_eps=all_eps,
        outcome=outcome,
        scale=False,
        level=level,
        selection=selection,
        split_fraction=split_fraction,
        rng=rng,
        delta=None,
    )


# ---------------------------------------------------------------------------------------
# Shared driver
# ---------------------------------------------------------------------------------------


def _run_sweep(
    *,
    method: str,
    parameter: str,
    values: np.ndarray,
    n: int,
    counts: Callable,
    all_eps: Callable,
    outcome: Callable,
    scale: bool,
    level: float,
    selection: str,
    split_fraction: float,
    rng: RngLike,
    delta: float | None,
) -> SweepResult:
    beta = 1.0 - level
    ng_all, nc_all = counts(None, values)
    eps_all = all_eps(None, values, n)
    j_unc = _argmax_first(eps_all)
    g = values.size
    if selection == "bonferroni":
        out = outcome(None, values, beta / g, n)
        per_test = 1.0 - beta / g
        sel_value = values[out.index]
        test_n, sel_eps, frac, seed = n, None, None, None
    else:
        seed = seed_entropy(rng)
        sel_idx, test_idx = _split(n, split_fraction, rng)
        vals_sel = _scaled(values, sel_idx.size, n) if scale else values
        vals_test = _scaled(values, test_idx.size, n) if scale else values
        usable = vals_sel >= 1 if scale else np.ones(g, dtype=bool)
        sel_eps = np.zeros(g)
        sel_eps[usable] = all_eps(sel_idx, vals_sel[usable], sel_idx.size)
        j = _argmax_first(sel_eps)
        test_val = vals_test[j : j + 1]
        if scale and test_val[0] < 1:
            test_val = np.array([1], dtype=np.int64)
        if scale:
            test_val = np.minimum(test_val, test_idx.size)
        out = outcome(test_idx, test_val, beta, test_idx.size)
        out.index = j
        per_test = level
        sel_value = values[j]
        test_n, frac = test_idx.size, split_fraction
    return SweepResult(
        epsilon=float(out.eps),
        confidence_interval=ConfidenceInterval(float(out.eps), math.inf),
        confidence_level=level,
        selection=selection,
        method=method,
        parameter=parameter,
        values=values,
        num_guesses=ng_all,
        num_correct=nc_all,
        epsilons=eps_all,
        uncorrected_max_epsilon=float(eps_all[j_unc]),
        uncorrected_value=float(values[j_unc]),
        selected_value=float(sel_value),
        per_test_confidence_level=per_test,
        num_tests=g,
        num_canaries=n,
        test_num_canaries=int(test_n),
        test_num_guesses=out.guesses,
        test_num_correct=out.correct,
        delta=delta,
        split_fraction=frac,
        seed=seed,
        selection_epsilons=sel_eps,
        mu=out.mu,
    )
