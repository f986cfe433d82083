"""The one-run bounds of a score vector: Steinke et al., f-DP, and their maximum, paid for.

Given the scores of m canaries from one training run and whether each was included
(independently with probability ½), the auditor guesses "in" for the k/2 highest and "out"
for the k/2 lowest scores and bounds ε from the number of correct guesses (Steinke, Nasr &
Jagielski 2023, arXiv:2305.08846, Alg. 1 — ε_or) or the largest rejected Gaussian-DP μ of the
same guesses (Mahloujifar, Melis & Chaudhuri 2024, arXiv:2410.22235, K = 2 — ε_or-fdp). Liu,
Boglioni, Fu, Hu, Thaker & Wu (*Enhancing One-run Privacy Auditing with Quantile
Regression-Based Membership Inference*, §4–5) sweep the number of guesses k over 10, 20, …,
m and report the largest bound, and also the larger of the two procedures (ε_max), with no
correction for either choice. Here:

* **ε_or, ε_or-fdp** — :func:`dpaudit.bounds.one_run_sweep` and
  :func:`dpaudit.bounds.fdp_one_run_sweep` with the choice of k paid for by the
  ``selection`` (a random split of the canaries, Bonferroni over the grid, or the median
  over many random splits — :class:`dpaudit.bounds.MultiSplit`), each at confidence 1 − β;
* **ε_max (valid)** — both sweeps again at confidence 1 − β/2 and the larger of the two
  (Bonferroni over the two procedures);
* **ε_max (uncorrected)** — the papers' number, the larger of the two uncorrected sweep
  maxima at 1 − β: shown beside, NOT a valid lower bound.

The f-DP sweep names one candidate per slot; the membership game is its K = 2 case with the
candidates "included" and "not included" (Mahloujifar et al. 2024), so each canary becomes a
slot with scores ``(c, −c)``, ``c`` the canary's rank centred at the median: the most
confident k slots are then exactly the k/2 highest and k/2 lowest scores (k even), the same
guesses as Steinke et al.'s rule.

The grid is 10, 20, … up to m, thinned to at most ``max_points`` points (step a multiple of
10) so that large m stays affordable (:func:`dpaudit.bounds.default_guess_counts`); the
selection pays for exactly the grid used.

Example:
    >>> import numpy as np
    >>> g = np.random.default_rng(0)
    >>> inc = g.random(2000) < 0.5
    >>> b = one_run_bounds(inc + g.normal(size=2000), inc, delta=1e-5, rng=0)
    >>> 0 < b.max_valid < b.uncorrected_max, b.steinke.selection.strategy
    (True, 'split')
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin, SelectionRecord
from dpaudit._rng import int_seed
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_confidence_level,
    check_delta,
    check_flag,
    check_in_range,
    check_mask,
    check_positive_int,
)
from dpaudit.bounds._fdp import fdp_one_run_sweep
from dpaudit.bounds._one_run import one_run_sweep
from dpaudit.bounds._selection import (
    DEFAULT_NUM_SPLITS,
    MAX_NUM_SPLITS,
    Bonferroni,
    selection_from_name,
)
from dpaudit.bounds._sweep import SweepResult, default_guess_counts

__all__ = [
    "OneRunBounds",
    "check_membership_scores",
    "membership_slots",
    "one_run_bounds",
]

_MAX_NOTE = (
    "max of the two procedures, each at confidence 1 - beta/2 (Bonferroni over the 2 "
    "procedures), each paying for its own choice of the number of guesses"
)


@dataclasses.dataclass(frozen=True)
class OneRunBounds(ResultMixin):
    """The one-run bounds of one score vector.

    Attributes:
        steinke: ε_or sweep (Steinke et al. 2023) at ``confidence_level``.
        fdp: ε_or-fdp sweep (Mahloujifar et al. 2024, K = 2) at ``confidence_level``.
        max_valid: max of both procedures at ``1 − β/2`` each: a valid bound at
            ``confidence_level``.
        max_procedure: the procedure that gave ``max_valid`` (``"steinke"`` / ``"fdp"``).
        uncorrected_max: max of the two uncorrected sweep maxima — NOT a valid lower bound.
        confidence_level: 1 − β.
        delta: δ.
        selection: how the number of guesses was chosen (``"split"`` / ``"bonferroni"`` /
            ``"multi-split"``).
        max_selection: how the choice of procedure was paid for.
    """

    steinke: SweepResult
    fdp: SweepResult
    max_valid: float
    max_procedure: str
    uncorrected_max: float
    confidence_level: float
    delta: float
    selection: str
    max_selection: SelectionRecord


def check_membership_scores(
    scores: ArrayLike, included: ArrayLike, name: str = "scores"
) -> tuple[np.ndarray, np.ndarray]:
    """Finite 1-d scores and a boolean (or 0/1) inclusion mask of the same length.

    Raises:
        TypeError: scores or mask not numbers (strings, None).
        ValueError: NaN/inf scores, mismatched lengths, a mask that is not 0/1, fewer than 2
            canaries.
    """
    s = check_array(name, scores, ndim=1)
    inc = check_mask("included", included)
    if inc.shape != s.shape:
        raise ValueError(
            f"included must have one entry per score ({s.size}), got shape {inc.shape}"
        )
    if s.size < 2:
        raise ValueError(f"{name} needs at least 2 canaries, got {s.size}")
    return s, inc


def membership_slots(scores: ArrayLike, included: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The membership game as K = 2 slots: scores ``(c, −c)`` and the inserted index.

    ``c`` is the canary's rank (ties by position) minus ``(m − 1)/2``; the inserted
    candidate is 0 ("included") or 1 ("not included").

    Example:
        >>> sl, ins = membership_slots([0.3, -1.0, 2.0], [1, 0, 1])
        >>> sl.tolist(), ins.tolist()
        ([[0.0, -0.0], [-1.0, 1.0], [1.0, -1.0]], [0, 1, 0])
    """
    s, inc = check_membership_scores(scores, included)
    order = np.argsort(s, kind="stable")
    rank = np.empty(s.size)
    rank[order] = np.arange(s.size)
    c = rank - (s.size - 1) / 2.0
    return np.stack([c, -c], axis=1), np.where(inc, 0, 1)


def _sweeps(s, inc, slots, inserted, grid, delta, level, selection, rng, refine=False):
    steinke = one_run_sweep(
        s, inc, guess_counts=grid, delta=delta, confidence_level=level, selection=selection,
        rng=rng, refine=refine,
    )  # fmt: skip
    fdp = fdp_one_run_sweep(
        slots, inserted, guess_counts=grid, delta=delta, confidence_level=level,
        selection=selection, rng=rng, refine=refine,
    )  # fmt: skip
    return steinke, fdp


def one_run_bounds(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    delta: float,
    confidence_level: float = 0.95,
    selection: str = "split",
    split_fraction: float = 0.5,
    num_splits: int = DEFAULT_NUM_SPLITS,
    max_points: int = 500,
    guess_counts: ArrayLike | None = None,
    rng: RngLike = None,
    refine: bool = False,
) -> OneRunBounds:
    """ε_or, ε_or-fdp and their paid-for maximum for one score vector (module docstring).

    Args:
        scores: (m,) canary scores, larger = more likely included.
        included: (m,) booleans/0-1: which canaries were in the training set (each
            independently with probability ½ — the games' premise).
        delta: δ in (0, 1) of the bounds.
        confidence_level: 1 − β.
        selection: ``"split"`` (choose the number of guesses on a random part of the
            canaries, bound on the rest), ``"bonferroni"`` (every grid point at β/G) or
            ``"multi-split"`` (the median of ``num_splits`` splits, each at β/2;
            :class:`~dpaudit.bounds.MultiSplit`) — :func:`~dpaudit.bounds.selection_from_name`.
        split_fraction: share of the canaries used to choose (split, multi-split).
        num_splits: number of splits (multi-split only).
        max_points: most grid points (:func:`~dpaudit.bounds.default_guess_counts`).
        guess_counts: an explicit grid instead (integers in [1, m]).
        rng: randomness of the split (keyword-only; the same split for every call).
        refine: evaluate every guess count near the best grid point too (the best guess
            count of Mahloujifar et al. 2024, Table 1): on all canaries for the uncorrected
            numbers, on the selection part for the valid ones (split / multi-split only;
            ``"bonferroni"`` raises — pass a fixed dense grid such as
            :func:`~dpaudit.bounds.geometric_guess_counts` instead).

    Returns:
        :class:`OneRunBounds`.

    Raises:
        ValueError: NaN scores, mismatched lengths, bad δ, level, selection, grid or split
            fraction (a split must leave both parts non-empty).
    """
    s, inc = check_membership_scores(scores, included)
    d = check_delta(delta, allow_zero=False)
    level = check_confidence_level(confidence_level)
    fraction = check_in_range("split_fraction", split_fraction, 0.0, 1.0)
    sel = selection_from_name(
        selection,
        fraction=fraction,
        num_splits=check_positive_int("num_splits", num_splits, maximum=MAX_NUM_SPLITS),
    )
    points = check_positive_int("max_points", max_points)
    refine = check_flag("refine", refine)
    if selection != "bonferroni" and not 1 <= round(fraction * s.size) <= s.size - 1:
        raise ValueError(
            f"split_fraction={fraction} leaves the selection or the held-out part empty for "
            f"{s.size} canaries"
        )
    grid = default_guess_counts(s.size, points) if guess_counts is None else guess_counts
    seed = _split_seed(rng)
    slots, inserted = membership_slots(s, inc)
    steinke, fdp = _sweeps(s, inc, slots, inserted, grid, d, level, sel, seed, refine)
    half = 1.0 - (1.0 - level) / 2.0
    st_half, fdp_half = _sweeps(s, inc, slots, inserted, grid, d, half, sel, seed, refine)
    best = "steinke" if st_half.epsilon >= fdp_half.epsilon else "fdp"
    record = Bonferroni(("steinke", "fdp")).record("procedure", n_candidates=2, chosen=best)
    return OneRunBounds(
        steinke=steinke,
        fdp=fdp,
        max_valid=max(st_half.epsilon, fdp_half.epsilon),
        max_procedure=best,
        uncorrected_max=max(steinke.uncorrected_max_epsilon, fdp.uncorrected_max_epsilon),
        confidence_level=level,
        delta=d,
        selection=selection,
        max_selection=dataclasses.replace(record, detail=record.detail + "; " + _MAX_NOTE),
    )


def _split_seed(rng: RngLike) -> int:
    """One int seed for the splits (children of one root seed get different seeds)."""
    if isinstance(rng, np.random.SeedSequence):
        return int(rng.generate_state(1, dtype=np.uint64)[0] % (2**63))
    return int_seed(rng)
