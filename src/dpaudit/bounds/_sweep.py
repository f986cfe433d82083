"""Sweeps over guess counts and abstention thresholds, paid for honestly.

The one-run audits as run by Liu, Boglioni, Fu, Hu, Thaker & Wu (*Enhancing One-run Privacy
Auditing with Quantile Regression-Based Membership Inference*, §4 "Choice of number of
guesses": every k from 10 to the maximum in steps of 10, after Steinke, Nasr & Jagielski
2023, arXiv:2305.08846, who "only report the highest auditing results") and the
label-memorization audit of Malek et al. 2021 (arXiv:2106.03408, App. B: thresholds
τ ∈ [0.5, 0.99], "we omit corrections for multiple hypothesis testing") report the *largest*
bound over a sweep with no correction for having chosen it on the same data. That maximum is
not a valid lower bound at the nominal level. Every sweep here returns, clearly apart:

* ``epsilon`` — a valid bound, paid for by the ``selection`` strategy
  (:mod:`dpaudit.bounds._selection`):

  - :class:`~dpaudit.bounds.Bonferroni`: every sweep point is tested at level ``1 − β/G``
    (G points) on all canaries and the largest of those bounds is reported (union bound);
  - :class:`~dpaudit.bounds.Split`: the canaries are split at random (``rng``); the sweep
    point with the largest bound on the *selection* part is chosen and the bound is computed
    at level ``1 − β`` on the disjoint *test* part only. Guess counts are rescaled to the
    part sizes (same fraction of the canaries). Canary inclusions are independent, so the
    test part's game is a fresh game given the selection part (Steinke et al. 2023 allow
    any guess rule that does not see the test canaries' membership);
  - :class:`~dpaudit.bounds.Explicit`: one sweep value fixed in advance, tested at
    ``1 − β`` on all canaries;
  - :class:`~dpaudit.bounds.MultiSplit`: the :class:`~dpaudit.bounds.Split` procedure on
    ``num_splits`` independent random splits, each at level ``1 − β/2`` (choice and bound),
    and the median of their bounds (Meinshausen, Meier & Bühlmann 2009, arXiv:0811.2177,
    Thm 3.1); the details (chosen point, test counts) are those of the lower-middle split.

* ``epsilons`` / ``uncorrected_max_epsilon`` — the per-point bounds at the nominal level on
  all canaries and their maximum: what the papers report, labelled *uncorrected* (not valid).

**Refinement** (``refine=True``, guess-count sweeps): the best guess count — the number
Mahloujifar, Melis & Chaudhuri (2024, arXiv:2410.22235, Table 1) report — can sit between
the points of a coarse grid, so the sweep also evaluates every guess count between the
neighbours of the best coarse point (:func:`refine_values`). That second stage is chosen on
the data, so a union bound over the coarse grid does not pay for it: with refinement the
valid bound must come from a :class:`~dpaudit.bounds.Split` or
:class:`~dpaudit.bounds.MultiSplit`, where *both* stages run on the selection part and the
chosen count (rescaled) is tested once at ``1 − β`` on the held-out part; Bonferroni and
Explicit refuse it. For Bonferroni, a fixed grid dense at every scale
(:func:`geometric_guess_counts`, log-spaced) is the data-independent alternative.

This module holds the result type and the driver; each bound defines its game (how a sweep
point turns into guesses and a bound) next to the bound itself. The Bonferroni maximum is
found without evaluating every point exactly: each point has a cheap upper bound and points
whose upper bound cannot beat the current best are skipped (:func:`max_by_upper_bound`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Protocol

import numpy as np

from dpaudit._results import ConfidenceInterval, ResultMixin, SelectionRecord
from dpaudit._typing import ArrayLike, Progress, ProgressLike, RngLike
from dpaudit._validate import (
    check_array,
    check_flag,
    check_memory,
    check_positive_int,
    check_progress,
    check_rng,
)
from dpaudit.bounds._selection import (
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

__all__ = ["SweepResult", "default_guess_counts", "geometric_guess_counts"]

#: Most points of the fine grid that :func:`refine_values` adds around the best coarse point.
REFINE_MAX_POINTS = 256

_UNCORRECTED_NOTE = (
    "uncorrected_max_epsilon is the maximum over the sweep at the nominal confidence level "
    "without any correction for the selection, as reported by the papers that sweep; it is "
    "NOT a valid lower bound at confidence_level. Use epsilon."
)


@dataclasses.dataclass(frozen=True)
class SweepResult(ResultMixin):
    """A sweep over guess counts or thresholds, with the selection paid for.

    Attributes:
        epsilon: the valid lower bound after ``selection``.
        confidence_interval: ``[epsilon, inf)``.
        confidence_level: 1 − β of ``epsilon``.
        selection: how the sweep value behind ``epsilon`` was chosen and paid for
            (strategy ``"bonferroni"``, ``"split"``, ``"multi-split"`` or ``"explicit"``).
        method: the underlying bound (one-run, f-DP one-run, label memorization).
        parameter: what was swept: ``"num_guesses"`` or ``"threshold"``.
        values: the sweep grid (in full-data units).
        num_guesses: guesses per sweep point on all canaries.
        num_correct: correct guesses per sweep point on all canaries.
        epsilons: per-point bound on all canaries at ``confidence_level`` — UNCORRECTED.
        uncorrected_max_epsilon: ``max(epsilons)`` — the papers' number, NOT a valid bound.
        uncorrected_value: the sweep value attaining it.
        selected_value: the sweep value behind ``epsilon``.
        per_test_confidence_level: level of the test behind ``epsilon`` (``1 − β/G`` for
            Bonferroni, ``1 − β/2`` for each split of a MultiSplit, ``1 − β`` otherwise).
        num_tests: G, the number of sweep points.
        num_canaries: canaries (or slots) in the data.
        test_num_canaries: canaries the reported bound was computed on (all, or the test part).
        test_num_guesses: guesses behind ``epsilon``.
        test_num_correct: correct guesses behind ``epsilon``.
        delta: δ (None for label memorization).
        split_fraction: fraction of canaries used for selection (split, multi-split).
        seed: integer seed of the split (of the seeds of the splits, multi-split).
        selection_epsilons: per-point bounds on the selection part (split; multi-split: of
            the lower-middle split); None for a refined sweep (``refine=True``), whose
            selection grid is the selection part's own coarse + fine grid.
        mus: per-point largest rejected μ on all canaries, uncorrected (f-DP only).
        mu: the μ behind ``epsilon`` (f-DP only).
        uncorrected_note: what ``uncorrected_max_epsilon`` is and is not.
    """

    epsilon: float
    confidence_interval: ConfidenceInterval
    confidence_level: float
    selection: SelectionRecord
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


def default_guess_counts(num_canaries: int, max_points: int | None = None) -> np.ndarray:
    """The guess-count grid 10, 20, … up to ``num_canaries`` (``[m]`` if m < 10).

    The grid of Liu et al. (§4, "Choice of number of guesses"). With ``max_points`` the
    grid is thinned to at most that many points: step ``10·⌈m/(10·max_points)⌉`` (a
    multiple of 10), so that large m stays affordable; the grid is unchanged while
    ``m ≤ 10·max_points``.

    Args:
        num_canaries: m ≥ 1.
        max_points: most grid points (None: every multiple of 10 up to m).

    Returns:
        int64 array of guess counts.

    Raises:
        TypeError, ValueError: m or ``max_points`` not a positive integer, or a grid beyond
            the memory cap.

    Example:
        >>> default_guess_counts(35).tolist(), default_guess_counts(50_000, 100)[:3].tolist()
        ([10, 20, 30], [500, 1000, 1500])
    """
    num_canaries = check_positive_int("num_canaries", num_canaries)
    if max_points is None:
        check_memory(0.8 * num_canaries, f"default_guess_counts with num_canaries={num_canaries}")
        step = 10
    else:
        points = check_positive_int("max_points", max_points)
        step = 10 * math.ceil(num_canaries / (10 * points))
        check_memory(8.0 * (num_canaries // step), f"default_guess_counts with max_points={points}")
    if num_canaries < 10:
        return np.array([num_canaries], dtype=np.int64)
    return np.arange(step, num_canaries + 1, step, dtype=np.int64)


def geometric_guess_counts(
    num_canaries: int, num_points: int = 256, min_count: int = 1
) -> np.ndarray:
    """A data-independent guess-count grid, log-spaced from ``min_count`` to ``num_canaries``.

    ``round(min_count·(m/min_count)^(t/(P−1)))`` for t = 0, …, P−1, deduplicated: dense where
    guess counts are small (consecutive points differ by a factor ``(m/min_count)^(1/(P−1))``,
    1.046 for m = 10⁵ and P = 256), where the linear grid of :func:`default_guess_counts`
    (steps of m/500) is coarse. Fixed before the data are seen, so a Bonferroni selection over
    it is valid; for the best guess count of the paper metric (Mahloujifar, Melis & Chaudhuri
    2024, arXiv:2410.22235, Table 1, which reports the best over the guess counts) refine it
    near its optimum with ``refine=True`` in the sweeps (:func:`refine_values`).

    Args:
        num_canaries: m ≥ 1.
        num_points: P ≥ 1 (before deduplication; fewer when m is small).
        min_count: smallest guess count, in [1, m].

    Returns:
        Sorted unique int64 guess counts in [min_count, m], ending at m.

    Raises:
        TypeError, ValueError: non-positive integers, or ``min_count > num_canaries``.

    Example:
        >>> geometric_guess_counts(1000, 8).tolist()
        [1, 3, 7, 19, 52, 139, 373, 1000]
    """
    m = check_positive_int("num_canaries", num_canaries)
    points = check_positive_int("num_points", num_points)
    low = check_positive_int("min_count", min_count)
    if low > m:
        raise ValueError(f"min_count must be at most num_canaries={m}, got {low}")
    check_memory(8.0 * points, f"geometric_guess_counts with num_points={points}")
    if points == 1:
        return np.array([m], dtype=np.int64)
    grid = np.rint(np.geomspace(low, m, points)).astype(np.int64)
    return np.unique(np.clip(grid, low, m))


def refine_values(values: np.ndarray, eps: np.ndarray, n: int) -> np.ndarray:
    """The fine grid around the best point of a coarse guess-count sweep.

    Every integer strictly between the neighbours of ``argmax(eps)`` in ``values`` (1 or
    ``n`` at the ends), thinned evenly to at most :data:`REFINE_MAX_POINTS`, minus the coarse
    points. Data-dependent: the points it returns are chosen on the data ``eps`` was computed
    from, so a valid bound must pay for the coarse *and* fine stages together (a split does:
    both stages run on the selection part only).
    """
    j = int(np.argmax(eps))
    lo = int(values[j - 1]) + 1 if j > 0 else 1
    hi = int(values[j + 1]) - 1 if j + 1 < values.size else n
    if hi < lo:
        return np.zeros(0, dtype=np.int64)
    if hi - lo + 1 > REFINE_MAX_POINTS:
        fine = np.unique(np.rint(np.linspace(lo, hi, REFINE_MAX_POINTS)).astype(np.int64))
    else:
        fine = np.arange(lo, hi + 1, dtype=np.int64)
    return np.setdiff1d(fine, values)


def check_guess_counts(guess_counts: ArrayLike | None, m: int, name: str = "guess_counts"):
    """Sorted unique integer guess counts in [1, m] (default :func:`default_guess_counts`)."""
    if guess_counts is None:
        return default_guess_counts(m)
    g = np.atleast_1d(check_array(name, guess_counts, ndim_min=0))
    if g.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {g.shape}")
    if not np.all(g == np.round(g)) or np.any(g < 1) or np.any(g > m):
        raise ValueError(f"{name} must be integers in [1, {m}], got {guess_counts!r}")
    return np.unique(g.astype(np.int64))


def sweep_grid(
    grid: ArrayLike | None, selection: Selection, check: Callable[[object], np.ndarray]
) -> np.ndarray:
    """The sweep grid: ``grid`` or ``Bonferroni.candidates`` (not both), checked by ``check``."""
    from_selection = selection.candidates if isinstance(selection, Bonferroni) else None
    if grid is not None and from_selection is not None:
        raise ValueError("give the sweep grid once: as the grid argument or Bonferroni(candidates)")
    return check(grid if from_selection is None else from_selection)


def max_by_upper_bound(
    upper: np.ndarray, evaluate: Callable[[int, float], float]
) -> tuple[float, int]:
    """Largest ``evaluate(j, best)`` over the points, pruned by their upper bounds.

    Points are visited by decreasing ``upper`` (ties in order); the search stops once no
    remaining upper bound exceeds the best value so far. ``evaluate`` may return any value
    ≤ ``best`` for a point it can show does not beat ``best``. Returns ``(best, index)``,
    ``(0.0, argmax(upper))`` when no point has a positive value.
    """
    best, best_idx = 0.0, int(np.argmax(upper))
    for j in np.argsort(-upper, kind="stable"):
        if upper[j] <= best:
            break
        value = evaluate(int(j), best)
        if value > best:
            best, best_idx = value, int(j)
    return best, best_idx


@dataclasses.dataclass
class Outcome:
    """The best sweep point of a test: its bound, index, guesses and correct guesses."""

    eps: float
    index: int
    guesses: int
    correct: int
    mu: float | None = None


@dataclasses.dataclass
class SweepData:
    """The two per-canary arrays of a sweep (scores and labels, or two confidences).

    Attributes:
        first: (n, ...) per-canary array (scores, canary confidences).
        second: (n, ...) per-canary array (membership, inserted index, alternatives).
        delta: δ of the bound (None where the bound has none).
        level: nominal confidence level 1 − β.
    """

    first: np.ndarray
    second: np.ndarray
    delta: float | None
    level: float

    @property
    def n(self) -> int:
        """Number of canaries (slots)."""
        return int(self.first.shape[0])

    def part(self, idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Both arrays restricted to the canaries ``idx`` (all for None)."""
        if idx is None:
            return self.first, self.second
        return self.first[idx], self.second[idx]


@dataclasses.dataclass
class GuessCountData(SweepData):
    """Sweep data whose grid is a set of guess counts in [1, n] (default 10, 20, …)."""

    parameter = "num_guesses"
    choice = "number of guesses"
    scale = True

    def check_grid(self, grid: object, name: str = "guess_counts") -> np.ndarray:
        """Sorted unique guess counts in [1, n] (default :func:`default_guess_counts`)."""
        return check_guess_counts(grid, self.n, name)


class SweepGame(Protocol):
    """One bound's sweep: how a sweep value turns into guesses and a bound.

    ``idx`` selects canaries (None: all); ``vals`` are sweep values in the units of that
    part; ``n`` is the number of canaries in the part.
    """

    method: str
    parameter: str
    choice: str
    scale: bool
    n: int
    delta: float | None

    def check_grid(self, grid: object, name: str = ...) -> np.ndarray:
        """The checked sweep grid (default grid for None)."""

    def counts(self, idx: np.ndarray | None, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Guesses and correct guesses at each value."""

    def all_eps(
        self, idx: np.ndarray | None, vals: np.ndarray, n: int, report: Progress
    ) -> np.ndarray:
        """The bound at each value at the nominal level."""

    def outcome(self, idx: np.ndarray | None, vals: np.ndarray, beta: float, n: int) -> Outcome:
        """The best value at failure probability ``beta`` per test."""


def _scaled(values: np.ndarray, n_part: int, n_full: int) -> np.ndarray:
    return np.rint(values * (n_part / n_full)).astype(np.int64)


@dataclasses.dataclass
class _Valid:
    """The valid bound of a sweep and how it was obtained."""

    out: Outcome
    value: float
    per_test: float
    test_n: int
    selection_eps: np.ndarray | None = None
    seed: int | None = None


def _refined(
    game: SweepGame, idx: np.ndarray | None, vals: np.ndarray, n: int, report: Progress
) -> tuple[np.ndarray, np.ndarray]:
    """Coarse sweep on the canaries ``idx``, then the fine grid of :func:`refine_values`.

    Returns the union of both grids (sorted) and the bound at each point; both stages see
    only the canaries ``idx``. The f-DP game's per-point μ (``game.mus``, all canaries) is
    kept in the same order.
    """
    eps = game.all_eps(idx, vals, n, report)
    coarse_mus = getattr(game, "mus", None) if idx is None else None
    fine = refine_values(vals, eps, n)
    if fine.size == 0:
        return vals, eps
    eps_fine = game.all_eps(idx, fine, n, _quiet)
    order = np.argsort(np.concatenate([vals, fine]), kind="stable")
    if coarse_mus is not None:
        game.mus = np.concatenate([coarse_mus, game.mus])[order]
    return np.concatenate([vals, fine])[order], np.concatenate([eps, eps_fine])[order]


def _split_bound(
    game: SweepGame,
    values: np.ndarray,
    fraction: float,
    level: float,
    rng: RngLike,
    refine: bool = False,
) -> _Valid:
    """Choose the sweep value on a random part of the canaries, bound it on the rest.

    With ``refine`` the choice is two-stage — the coarse grid (rescaled), then the fine grid
    of :func:`refine_values` around its best point — and both stages use the selection part
    only, so the test part's bound at level ``1 − β`` pays for the whole refinement.
    """
    gen, seed = selection_generator(rng)
    sel_idx, test_idx = (np.sort(p) for p in split_indices(game.n, fraction, gen, "canaries"))
    scale = game.scale
    vals_sel = _scaled(values, sel_idx.size, game.n) if scale else values
    vals_test = _scaled(values, test_idx.size, game.n) if scale else values
    if refine:
        cand = np.unique(vals_sel[vals_sel >= 1])
        if cand.size == 0:
            cand = np.array([1], dtype=np.int64)
        cand, cand_eps = _refined(game, sel_idx, cand, sel_idx.size, _quiet)
        chosen = int(cand[int(np.argmax(cand_eps))])
        test_k = int(np.rint(chosen * (test_idx.size / sel_idx.size)))
        test_val = np.array([min(max(test_k, 1), test_idx.size)], dtype=np.int64)
        out = game.outcome(test_idx, test_val, 1.0 - level, test_idx.size)
        value = float(np.rint(chosen * (game.n / sel_idx.size)))
        return _Valid(out, value, level, test_idx.size, None, seed)
    usable = vals_sel >= 1 if scale else np.ones(values.size, dtype=bool)
    sel_eps = np.zeros(values.size)
    sel_eps[usable] = game.all_eps(sel_idx, vals_sel[usable], sel_idx.size, _quiet)
    j = int(np.argmax(sel_eps))
    test_val = vals_test[j : j + 1]
    if scale:
        test_val = np.minimum(np.maximum(test_val, 1), test_idx.size)
    out = game.outcome(test_idx, test_val, 1.0 - level, test_idx.size)
    return _Valid(out, float(values[j]), level, test_idx.size, sel_eps, seed)


def _multi_split_bound(
    game: SweepGame,
    values: np.ndarray,
    sel: MultiSplit,
    level: float,
    rng: RngLike,
    refine: bool = False,
) -> _Valid:
    """The median of ``sel.num_splits`` split bounds, each a split at level ``1 − β/2``."""
    half = multi_split_level(level)
    seeds, seed = multi_split_seeds(sel.num_splits, rng)
    split_game = dataclasses.replace(game, level=half)
    runs = [_split_bound(split_game, values, sel.fraction, half, s, refine) for s in seeds]
    eps, j = median_of_splits([r.out.eps for r in runs])
    rep = runs[j]
    out = dataclasses.replace(rep.out, eps=eps)
    return _Valid(out, rep.value, half, rep.test_n, rep.selection_eps, seed)


def _quiet(done: int, total: int, description: str) -> None:
    """No progress for the selection part (the full sweep reports)."""


def run_sweep(
    game: SweepGame,
    grid: ArrayLike | None,
    *,
    selection: Selection | str,
    rng: RngLike,
    progress: ProgressLike,
    refine: bool = False,
) -> SweepResult:
    """Run a sweep: all points uncorrected, and the valid bound paid for by ``selection``.

    ``grid`` is the sweep grid argument (None: ``Bonferroni.candidates`` or the game's
    default), checked by ``game.check_grid``, as is the value of an :class:`Explicit`
    selection.

    ``refine`` (guess-count sweeps, :class:`Split` or :class:`MultiSplit` only) adds the fine
    grid of :func:`refine_values` around the best point: on all canaries for the uncorrected
    maximum (the best guess count, the papers' metric) and, for the valid bound, on the
    selection part only (the split pays for both stages). Bonferroni and Explicit refuse it:
    the fine grid depends on the data, so a union bound over the coarse grid does not pay for
    it — use a fixed grid dense where it matters (:func:`geometric_guess_counts`) instead.
    """
    check_rng(rng)
    selection = as_selection(selection)
    refine = check_flag("refine", refine)
    if refine:
        if game.parameter != "num_guesses":
            raise ValueError(f"refine applies to guess-count sweeps, not to {game.parameter}")
        if not isinstance(selection, (Split, MultiSplit)):
            raise ValueError(
                "refine=True chooses the fine grid on the data, which only a Split or "
                f"MultiSplit selection pays for; got {type(selection).__name__} (use a fixed "
                "grid such as geometric_guess_counts with Bonferroni instead)"
            )
    values = sweep_grid(grid, selection, game.check_grid)
    if isinstance(selection, Explicit):
        fixed = game.check_grid([selection.value], "selection.value")
    report = check_progress(progress)
    level = game.level
    beta = 1.0 - level
    coarse = values  # the split refines on its selection part from the coarse grid alone
    if refine:
        values, eps_all = _refined(game, None, coarse, game.n, report)
    else:
        eps_all = game.all_eps(None, values, game.n, report)
    ng_all, nc_all = game.counts(None, values)
    j_unc = int(np.argmax(eps_all))
    g = values.size
    if isinstance(selection, Bonferroni):
        out = game.outcome(None, values, beta / g, game.n)
        valid = _Valid(out, float(values[out.index]), 1.0 - beta / g, game.n)
    elif isinstance(selection, Split):
        valid = _split_bound(game, coarse, selection.fraction, level, rng, refine)
    elif isinstance(selection, MultiSplit):
        valid = _multi_split_bound(game, coarse, selection, level, rng, refine)
    elif isinstance(selection, Explicit):
        valid = _Valid(game.outcome(None, fixed, beta, game.n), float(fixed[0]), level, game.n)
    else:
        raise TypeError(
            f"selection must be Explicit, Split, Bonferroni or MultiSplit, got {selection!r}"
        )
    out = valid.out
    return SweepResult(
        epsilon=float(out.eps),
        confidence_interval=ConfidenceInterval(float(out.eps), math.inf),
        confidence_level=level,
        selection=selection.record(
            game.choice, n_candidates=g, seed=valid.seed, chosen=valid.value
        ),
        method=game.method,
        parameter=game.parameter,
        values=values,
        num_guesses=ng_all,
        num_correct=nc_all,
        epsilons=eps_all,
        uncorrected_max_epsilon=float(eps_all[j_unc]),
        uncorrected_value=float(values[j_unc]),
        selected_value=valid.value,
        per_test_confidence_level=valid.per_test,
        num_tests=g,
        num_canaries=game.n,
        test_num_canaries=int(valid.test_n),
        test_num_guesses=out.guesses,
        test_num_correct=out.correct,
        delta=game.delta,
        split_fraction=(selection.fraction if isinstance(selection, (Split, MultiSplit)) else None),
        seed=valid.seed,
        selection_epsilons=valid.selection_eps,
        mu=out.mu,
    )
