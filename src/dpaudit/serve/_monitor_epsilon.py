"""The exact (ε, δ) of one GNMax answer on a fixed family of neighbouring histograms, and a
rigorous lower bound of its infimum over all noise levels up to a bound: what turns the
monitor's noise confidence sequence into an ε confidence sequence.

For two output distributions ``P, Q`` on finitely many outcomes, a mechanism is (ε, δ)-DP on
that pair iff ``Σ_j max(0, P_j − e^ε Q_j) ≤ δ`` both ways (the hockey-stick divergence;
Balle, Barthe & Gaboardi 2018, "Privacy Amplification by Subsampling", arXiv:1807.01647,
Thm 1). Sorting the outcomes by ``P_j / Q_j`` (decreasing), the sum is
``max_k (SP_k − e^ε SQ_k)`` over the prefix sums, so the smallest ε is

    ε(δ) = max(0, max_{k: SP_k > δ} log((SP_k − δ) / SQ_k)),

and the same formula with any ``P′ ≤ P``, ``Q′ ≥ Q`` (not normalised) gives a lower bound.

The family: the histograms of ``T`` votes split between two classes, ``(a + 1, T − a − 1, 0,
…)`` against ``(a, T − a, 0, …)`` (one teacher changes its vote: PATE's replace relation),
``a = 0 … T − 1``; GNMax output probabilities are exact
(:func:`dpaudit.mechanisms.log_argmax_probabilities`). Each pair's ε is a lower bound on the
ε(δ) of one answer of the mechanism; the family is fixed in advance, so the maximum is one too.

**Over a range of σ.** That maximum ``F(σ)`` is not monotone in σ (the vote lattice), so a
lower bound for every ``σ ≤ σ_upper`` needs ``inf_{σ ≤ σ_upper} F(σ)``. On an interval
``[σ_lo, σ_hi]`` the probability of a class holding the most votes decreases with σ and that
of a class holding the fewest increases (the coupling of :mod:`dpaudit.serve.monitor`), and
each histogram of the family has at most one other class, whose probability is one minus the
rest: so every ``P_j(σ)`` on the interval lies between bounds computed at its two ends, and
the hockey-stick formula with ``P_min`` against ``Q_max`` bounds every pair's ε from below on
the whole interval. The minimum of these interval bounds over a fine partition of
``(0, σ_upper]`` is a rigorous lower bound of the infimum (conservative by the partition's
width; at σ = 0 the probabilities are the argmax's, ties split evenly).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from dpaudit.mechanisms import log_argmax_probabilities

__all__ = ["discrete_epsilon", "gnmax_answer_epsilon", "gnmax_epsilon_floor"]


def discrete_epsilon(log_p: np.ndarray, log_q: np.ndarray, delta: float) -> np.ndarray:
    """Smallest ε ≥ 0 with ``Σ_j max(0, P_j − e^ε Q_j) ≤ δ``, row by row (one direction).

    Args:
        log_p, log_q: logs of non-negative weights ``(..., C)`` (probabilities, or the bounds
            of the module notes).
        delta: δ ∈ [0, 1).

    Returns:
        ε per row (``inf`` where some outcome has ``P_j > δ`` and ``Q_j = 0``).

    Example:
        >>> float(discrete_epsilon(np.log([[0.9, 0.1]]), np.log([[0.5, 0.5]]), 0.0)[0])
        0.5877866649021191
    """
    lp = np.asarray(log_p, dtype=np.float64)
    lq = np.asarray(log_q, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ratio = np.where(np.isneginf(lp), -np.inf, lp - lq)
    order = np.argsort(-ratio, axis=-1, kind="stable")
    sp = np.cumsum(np.exp(np.take_along_axis(lp, order, axis=-1)), axis=-1)
    log_sq = np.logaddexp.accumulate(np.take_along_axis(lq, order, axis=-1), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.where(sp > delta, np.log(np.maximum(sp - delta, 0.0)) - log_sq, -np.inf)
    return np.maximum(cand.max(axis=-1), 0.0)


def _family(num_teachers: int, num_classes: int) -> np.ndarray:
    """``(2T, C)``: the T histograms ``(a + 1, T − a − 1, 0, …)``, then their neighbours."""
    t, c = int(num_teachers), int(num_classes)
    a = np.arange(t, dtype=np.float64)
    out = np.zeros((2 * t, c))
    out[:t, 0], out[:t, 1] = a + 1, t - a - 1
    out[t:, 0], out[t:, 1] = a, t - a
    return out


def _pair_epsilon(log_first: np.ndarray, log_second: np.ndarray, delta: float) -> np.ndarray:
    """Both directions' ε of each pair (rows), the larger; maximum over the pairs (axis −2)."""
    e = np.maximum(
        discrete_epsilon(log_first, log_second, delta),
        discrete_epsilon(log_second, log_first, delta),
    )
    return e.max(axis=-1)


@functools.lru_cache(maxsize=256)
def gnmax_answer_epsilon(sigma: float, num_teachers: int, num_classes: int, delta: float) -> float:
    """``F(σ)``: the largest exact ε(δ) of one GNMax(σ) answer over the family.

    Example:
        >>> round(gnmax_answer_epsilon(4.0, 30, 10, 1e-5), 4)
        1.3468
    """
    hist = _family(num_teachers, num_classes)
    lp = log_argmax_probabilities(hist, float(sigma))
    t = int(num_teachers)
    return float(_pair_epsilon(lp[:t], lp[t:], delta))


def _probabilities(hist: np.ndarray, sigma: float) -> np.ndarray:
    if sigma == 0.0:
        top = hist == hist.max(axis=1, keepdims=True)
        return top / top.sum(axis=1, keepdims=True)
    return np.exp(log_argmax_probabilities(hist, sigma))


@functools.lru_cache(maxsize=64)
def gnmax_epsilon_floor(
    sigmas: tuple[float, ...], num_teachers: int, num_classes: int, delta: float, refine: int = 8
) -> np.ndarray:
    """For each σ of ``sigmas``, a lower bound of ``inf_{0 < σ′ ≤ σ} F(σ′)`` (module notes).

    Args:
        sigmas: the points asked for (any order, > 0).
        num_teachers, num_classes: T and C of the deployment's histograms.
        delta: δ of the ε.
        refine: intervals between consecutive points (and the same log-width below the
            smallest down to 1/16 of it, then one interval to 0).

    Example:
        >>> b = gnmax_epsilon_floor((2.0, 4.0), 30, 10, 1e-5)
        >>> bool(b[1] <= gnmax_answer_epsilon(4.0, 30, 10, 1e-5) and b[0] > b[1])
        True
    """
    asked = np.asarray(sigmas, dtype=np.float64)
    pts = np.unique(asked)
    if pts[0] <= 0 or not np.all(np.isfinite(pts)):
        raise ValueError(f"sigmas must be finite and > 0, got {asked.tolist()}")
    step = (np.log(pts[-1] / pts[0]) / max(pts.size - 1, 1)) / refine if pts.size > 1 else 0.01
    low = pts[0] / 16.0
    fine = [np.exp(np.arange(np.log(low), np.log(pts[0]), step))]
    for lo, hi in itertools.pairwise(pts):
        fine.append(np.geomspace(lo, hi, refine + 1)[:-1])
    grid = np.unique(np.concatenate([[0.0], *fine, pts]))
    hist = _family(num_teachers, num_classes)
    most = hist == hist.max(axis=1, keepdims=True)
    fewest = (hist == hist.min(axis=1, keepdims=True)) & ~most
    other = ~most & ~fewest
    if other.sum(axis=1).max() > 1:  # pragma: no cover - the family has at most one
        raise AssertionError("a histogram of the family has two middle classes")
    probs = np.stack([_probabilities(hist, float(s)) for s in grid])  # (G, 2T, C)
    lo_p, hi_p = probs[:-1], probs[1:]  # at the smaller and the larger σ of each interval
    p_min = np.where(most, hi_p, np.where(fewest, lo_p, 0.0))
    p_max = np.where(most, lo_p, np.where(fewest, hi_p, 0.0))
    rest_min = (p_min * ~other).sum(axis=-1, keepdims=True)
    rest_max = (p_max * ~other).sum(axis=-1, keepdims=True)
    p_min = np.where(other, np.clip(1.0 - rest_max, 0.0, 1.0), p_min)
    p_max = np.where(other, np.clip(1.0 - rest_min, 0.0, 1.0), p_max)
    t = int(num_teachers)
    with np.errstate(divide="ignore"):
        l_min, l_max = np.log(p_min), np.log(p_max)
    bound = np.maximum(
        discrete_epsilon(l_min[:, :t], l_max[:, t:], delta),
        discrete_epsilon(l_min[:, t:], l_max[:, :t], delta),
    ).max(axis=-1)  # (G − 1,): each interval's lower bound
    floor = np.minimum.accumulate(bound)  # over (0, right end of interval i]
    ends = grid[1:]
    return floor[np.searchsorted(ends, asked)]
