"""Group privacy of the Gaussian noisy argmax: exact divergences at distance m (layer 2).

An adversary that changes m training points moves at most m votes of a query's histogram
(Chadha et al. 2024, arXiv:2402.09403, App. C). What it can reach depends on the system:

* PATE, m points spread over m teachers, and Private-kNN without subsampling, m added points
  each displacing the k-th voter: ``"replace"`` at distance m — every ``H′ ≥ 0`` with
  ``ΣH′ = ΣH`` and ``½‖H′ − H‖₁ ≤ m`` (at most m votes moved). For Private-kNN this is a
  superset: the votes removed are those of the farthest voters, not the adversary's choice,
  so the worst case over it is an upper bound on Private-kNN's;
* PATE with all m points inside one teacher, and CaPC with one whole teacher replaced: one
  teacher's vote changes per query, i.e. ``"replace"`` at distance 1, on every query at once;
* ``"add-remove"`` at distance m: ``‖H′ − H‖₁ ≤ m`` (votes added or removed one at a time).

:func:`group_histograms` enumerates that set; :func:`dpaudit.divergence.worst_case_group_renyi`
maximises the exact ``D_α(Q(H)‖Q(H′))`` of the noisy argmax over it (exact output
distributions, Chadha et al. 2024 Eq. 4), beside the other divergences. Here, the two upper
bounds an auditor would otherwise use:
:func:`gaussian_group_rdp` (the Gaussian mechanism at distance m, ``α·m²Δ²/(2σ²)``; Mironov 2017,
arXiv:1702.07476, Prop. 7 with sensitivity mΔ) and :func:`generic_group_rdp` (any mechanism,
Mironov 2017 Prop. 2: ``(α/2^c, 3^c·ε)``-RDP at distance 2^c). :func:`normalise_group_bound`
turns a lower bound on the group RDP back into one on the single-point RDP through either.

Example:
    >>> len(group_histograms([6, 4, 0], 2))
    11
    >>> gaussian_group_rdp([2.0], sigma=2.0, distance=2).round(6).tolist()
    [2.0]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_array,
    check_choice,
    check_memory,
    check_orders,
    check_positive,
    check_positive_int,
    check_votes,
)

__all__ = [
    "GROUP_RELATIONS",
    "NORMALISATIONS",
    "gaussian_group_rdp",
    "generic_group_rdp",
    "group_histograms",
    "normalise_group_bound",
]

#: How the histograms at distance m are reached (module notes).
GROUP_RELATIONS: tuple[str, ...] = ("replace", "add-remove")
#: How a group lower bound is turned into a single-point one (:func:`normalise_group_bound`).
NORMALISATIONS: tuple[str, ...] = ("generic", "gaussian", "teacher")
#: Histograms evaluated at once by :func:`dpaudit.divergence.worst_case_group_renyi`.
GROUP_CHUNK = 512


def check_distance(distance: object) -> int:
    return check_positive_int("distance", distance)


def check_histogram(votes: ArrayLike) -> np.ndarray:
    h = check_votes("votes", votes, nonneg=True)
    if h.ndim != 1:
        raise ValueError(f"votes must be a single histogram (C,), got shape {h.shape}")
    if np.any(h != np.round(h)):
        raise ValueError(f"votes must be whole vote counts, got {votes!r}")
    return h


def effective_distance(h: np.ndarray, distance: int, relation: str) -> int:
    """Under ``"replace"`` no more votes than ΣH can move: larger m reach the same set."""
    if relation == "replace":
        return max(1, min(distance, int(min(h.sum(), 2**62))))
    return distance


def _multisets(c: int, j: int, cap: np.ndarray | None) -> list[np.ndarray]:
    """Count vectors of j items over c classes (entry-wise ≤ ``cap`` when given)."""
    out = []
    for combo in itertools.combinations_with_replacement(range(c), j):
        v = np.bincount(np.asarray(combo, dtype=np.int64), minlength=c)
        if cap is None or np.all(v <= cap):
            out.append(v)
    return out


def shifts(h: np.ndarray, distance: int, relation: str) -> Iterator[np.ndarray]:
    """Every non-zero ``d`` with ``h + d`` reachable (module notes), each once."""
    c = h.size
    cap = np.minimum(h, distance).astype(np.int64)  # no class loses more than m votes
    if relation == "replace":
        for j in range(1, distance + 1):
            removes = _multisets(c, j, cap)
            adds = _multisets(c, j, None)
            for r in removes:
                for a in adds:
                    if not np.any((r > 0) & (a > 0)):  # disjoint: else a smaller j
                        yield a - r
        return
    for j in range(1, distance + 1):
        for k in range(j + 1):  # k votes removed, j − k added, on disjoint classes
            for r in _multisets(c, k, cap):
                for a in _multisets(c, j - k, None):
                    if not np.any((r > 0) & (a > 0)):
                        yield a - r


def count_reachable(c: int, distance: int, relation: str) -> int:
    """An upper bound on the number of histograms :func:`group_histograms` returns."""
    size = [1]
    total = 0
    for j in range(1, distance + 1):  # stops once past any cap (a huge m is refused fast)
        size.append(math.comb(c + j - 1, j))
        if relation == "replace":
            total += size[j] ** 2
        else:
            total += sum(size[k] * size[j - k] for k in range(j + 1))
        if total > 10**15:
            break
    return total


def group_histograms(votes: ArrayLike, distance: int, relation: str = "replace") -> np.ndarray:
    """Every histogram an adversary changing ``distance`` votes can reach from ``votes``.

    ``"replace"``: ``H′ ≥ 0``, ``ΣH′ = ΣH``, at most ``distance`` votes moved
    (``½‖H′ − H‖₁ ≤ m``), H itself excluded. ``"add-remove"``: ``H′ ≥ 0`` with
    ``0 < ‖H′ − H‖₁ ≤ m``. Distance 1 under ``"replace"`` is the PATE neighbourhood of
    :func:`dpaudit.divergence.neighbouring_histograms` (Papernot et al. 2018,
    arXiv:1802.08908, §2: one teacher changes its vote).

    Args:
        votes: one histogram ``(C,)`` of whole, non-negative votes.
        distance: m ≥ 1, the votes the adversary can move.
        relation: ``"replace"`` or ``"add-remove"``.

    Returns:
        ``(K, C)`` float array, each reachable histogram once.

    Raises:
        ValueError: bad votes, distance < 1, unknown relation, or more rows than the memory cap.
        TypeError: a non-integer distance.

    Example:
        >>> group_histograms([1, 0], 1).tolist()
        [[0.0, 1.0]]
        >>> len(group_histograms([2, 1, 0], 2))
        8
    """
    h = check_histogram(votes)
    m = effective_distance(h, check_distance(distance), relation)
    check_choice("relation", relation, GROUP_RELATIONS)
    bound = count_reachable(h.size, m, relation)
    check_memory(8.0 * bound * h.size, f"group_histograms of votes with C={h.size}, distance={m}")
    rows = [h + d for d in shifts(h, m, relation)]
    if not rows:
        raise ValueError(f"votes has no histogram at distance {m} under {relation!r}: {votes!r}")
    return np.stack(rows).astype(np.float64)


def gaussian_group_rdp(
    orders: ArrayLike, *, sigma: float, distance: int, sensitivity: float = math.sqrt(2.0)
) -> FloatArray:
    """Group RDP of the Gaussian mechanism at distance m: ``α·(mΔ)²/(2σ²)``.

    m changes move the query by at most mΔ in L2 (triangle inequality), and the Gaussian
    mechanism with sensitivity mΔ is exactly ``(α, α(mΔ)²/(2σ²))``-RDP (Mironov 2017,
    arXiv:1702.07476, Prop. 7); this is the m² rule of Chadha et al. 2024, arXiv:2402.09403,
    App. C. The default Δ = √2 is a vote histogram's (one teacher moves one vote), so m = 1
    gives GNMax's data-independent ``α/σ²`` (Papernot et al. 2018, arXiv:1802.08908, Prop. 8),
    an upper bound on the noisy argmax (post-processing) and exact for the noisy histogram.

    Args:
        orders: orders α ≥ 1 (``inf`` allowed).
        sigma: noise standard deviation σ > 0.
        distance: m ≥ 1.
        sensitivity: L2 sensitivity Δ of one change (> 0).

    Returns:
        The group RDP at each order.

    Raises:
        ValueError, TypeError: bad orders, σ, distance or sensitivity.

    Example:
        >>> gaussian_group_rdp([2.0, 10.0], sigma=40.0, distance=3).round(6).tolist()
        [0.01125, 0.05625]
    """
    from dpaudit.mechanisms.simple import gaussian_renyi

    m = check_distance(distance)
    d = check_positive("sensitivity", sensitivity)
    return gaussian_renyi(orders, sigma=sigma, sensitivity=m * d)


def _check_curve(name: str, values: ArrayLike, orders: np.ndarray) -> np.ndarray:
    """Non-negative values (inf allowed, NaN not), one per order."""
    arr = np.atleast_1d(check_array(name, values, nonneg=True, finite=False))
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} must not contain NaN, got {values!r}")
    if arr.shape != orders.shape:
        raise ValueError(
            f"{name} and orders must have one value per order, got {name} of shape "
            f"{arr.shape} and orders of shape {orders.shape}"
        )
    return arr


def _levels(distance: int) -> int:
    """c = ⌈log₂ m⌉: distance m ≤ 2^c is covered by a 2^c-stable transformation."""
    return max(0, math.ceil(math.log2(distance) - 1e-12))


def generic_group_rdp(
    orders: ArrayLike, rdp: ArrayLike, *, distance: int
) -> tuple[FloatArray, FloatArray]:
    """The generic group conversion of an RDP curve (Mironov 2017, arXiv:1702.07476, Prop. 2).

    A mechanism that is (α, ε)-RDP is ``(α/2^c, 3^c·ε)``-RDP for datasets at distance 2^c,
    whenever ``α ≥ 2^{c+1}`` (Mironov 2017 Prop. 2, a 2^c-stable transformation; proved from
    the weak triangle inequality, Cor. 4). Distance m is covered with ``c = ⌈log₂ m⌉``
    (Chadha et al. 2024, arXiv:2402.09403, App. C writes it ``α/2^m, 3^m``).

    Args:
        orders: the orders α of the single-point curve (≥ 1).
        rdp: its values ε(α) ≥ 0.
        distance: m ≥ 1.

    Returns:
        ``(group_orders, group_rdp)``: orders ``α/2^c`` and values ``3^c·ε(α)``, only for the
        orders with ``α ≥ 2^{c+1}`` (all of them when m = 1).

    Raises:
        ValueError: shape mismatch, negative ε, bad orders or distance.

    Example:
        >>> o, e = generic_group_rdp([2.0, 8.0], [0.1, 0.4], distance=2)
        >>> o.tolist(), e.round(3).tolist()
        ([4.0], [1.2])
    """
    lam = check_orders(orders, allow_one=True, allow_inf=True)
    eps = _check_curve("rdp", rdp, lam)
    c = _levels(check_distance(distance))
    keep = lam >= 2.0 ** (c + 1) if c > 0 else np.ones(lam.shape, dtype=bool)
    return lam[keep] / 2.0**c, eps[keep] * 3.0**c


def normalise_group_bound(
    orders: ArrayLike, lower: ArrayLike, *, distance: int, rule: str
) -> tuple[FloatArray, FloatArray]:
    """A lower bound on the single-point RDP from a lower bound ``L_m`` on the group RDP.

    * ``"generic"`` — always valid: if the mechanism were (α, ε)-RDP with ``ε < L_m(α/2^c)/3^c``
      it would be ``(α/2^c, < L_m)``-RDP at distance m (Mironov 2017, arXiv:1702.07476,
      Prop. 2), contradicting ``L_m``; so ``ε(2^c·β) ≥ L_m(β)/3^c`` for every order β ≥ 2.
    * ``"gaussian"`` — ``ε(α) ≥ L_m(α)/m²``: valid for mechanisms whose group RDP is at most
      m² times their single-point RDP at the same order — the Gaussian mechanism, with equality
      (Mironov 2017 Prop. 7), hence the Gaussian release that GNMax's data-independent claim
      analyses (Papernot et al. 2018, arXiv:1802.08908, Prop. 8). It is *not* established for
      the argmax's own exact RDP (:func:`dpaudit.divergence.worst_case_group_renyi` measures
      that functional per histogram).
    * ``"teacher"`` — ``ε ≥ L_m``: the unit of privacy is a whole teacher's data (CaPC, whose
      parties each own one teacher), so the whole-teacher change is one neighbour (Chadha et
      al. 2024, arXiv:2402.09403, App. C).

    Args:
        orders: the orders of ``lower`` (≥ 1).
        lower: ``L_m`` at each order (≥ 0).
        distance: m ≥ 1.
        rule: ``"generic"``, ``"gaussian"`` or ``"teacher"``.

    Returns:
        ``(orders, single-point lower bound)``; ``"generic"`` maps order β to ``2^c·β`` and keeps
        β ≥ 2 only (all orders at m = 1).

    Raises:
        ValueError: shape mismatch, negative bounds, bad orders, distance or rule.

    Example:
        >>> normalise_group_bound([2.0, 4.0], [0.9, 1.8], distance=2, rule="gaussian")[1].tolist()
        [0.225, 0.45]
        >>> o, e = normalise_group_bound([2.0, 4.0], [0.9, 1.8], distance=2, rule="generic")
        >>> o.tolist(), e.round(2).tolist()
        ([4.0, 8.0], [0.3, 0.6])
    """
    lam = check_orders(orders, allow_one=True, allow_inf=True)
    low = _check_curve("lower", lower, lam)
    m = check_distance(distance)
    check_choice("rule", rule, NORMALISATIONS)
    if rule == "teacher":
        return lam, low.copy()
    if rule == "gaussian":
        return lam, low / float(m * m)
    c = _levels(m)
    keep = lam >= 2.0 if c > 0 else np.ones(lam.shape, dtype=bool)
    return lam[keep] * 2.0**c, low[keep] / 3.0**c
