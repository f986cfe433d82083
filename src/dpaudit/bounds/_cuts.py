"""Cut bounds on the Rényi divergence of discrete outputs: the shared core of the RDP audits.

Chadha, Jagielski, Papernot, Choquette-Choo & Nasr 2024 (*Auditing Private Prediction*,
arXiv:2402.09403, §4.2 Eq. 3 and App. B Eq. 5). Given per-class output counts of a mechanism
run on S (``counts``, distribution μ₁) and on a neighbour S′ (``counts_neighbour``, μ₂), a
partition ``O₁..O_k`` of the classes and bounds ``p₁ℓ(i) ≤ μ₁(Oᵢ)``, ``μ₂(Oᵢ) ≤ p₂ᵘ(i)``
holding together,

    D_α(μ₁‖μ₂) ≥ (1/(α−1)) log Σᵢ (p₁ℓ(i))^α (p₂ᵘ(i))^{1−α}

for every order α > 1 at once: each term ``p₁^α p₂^{1−α}`` increases in p₁ and decreases in
p₂, and the cell distributions are a post-processing of the outputs (data processing). The
2-cut is the partition ``(O, Oᶜ)`` with Clopper–Pearson intervals (exact); the k-cut uses
Goodman (1965) or Sison & Glaz (1995) simultaneous intervals (asymptotic). With the plug-in
probabilities the same formula is the Rényi divergence of the cell distributions. Bounds are
clipped at 0 (a divergence is non-negative).

This module holds the formula (:func:`cut_bound`, :func:`candidate_bounds`), the result type
:class:`RDPAudit`, the argument checks and the candidate enumeration used by
:mod:`~dpaudit.bounds._rdp` and :mod:`~dpaudit.bounds._rdp_bootstrap`, and the public
:func:`two_cut_plug_in`.
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from dpaudit._results import ResultMixin, SelectionRecord
from dpaudit._typing import ArrayLike, FloatArray, IntArray
from dpaudit._validate import check_counts, check_orders
from dpaudit.bounds._intervals import cp_one_sided, goodman_rows, sison_glaz_rows
from dpaudit.bounds._selection import Explicit

__all__ = [
    "MAX_CLASSES_K_CUT",
    "MAX_CLASSES_TWO_CUT",
    "RDPAudit",
    "two_cut_plug_in",
]

#: Largest number of classes for which :func:`~dpaudit.bounds.rdp_audit` enumerates every
#: output set itself (``2^{C−1} − 1`` candidates); pass ``candidates`` for more classes.
MAX_CLASSES_TWO_CUT = 16
#: Largest number of classes for which every partition is enumerated (Bell numbers grow fast).
MAX_CLASSES_K_CUT = 6

NOTE_CP = "2-cut with Clopper-Pearson intervals: valid at every sample size and all orders."
NOTE_KCUT = (
    "k-cut with simultaneous multinomial intervals: asymptotically valid only "
    "(Chadha et al. 2024, arXiv:2402.09403, App. B, Table 2)."
)

Partition = tuple[tuple[int, ...], ...]


# ---------------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RDPAudit(ResultMixin):
    """Lower bounds on ``D_α(μ₁‖μ₂)`` at each order, for one query or a batch of queries.

    Attributes:
        orders: the Rényi orders α, shape ``(A,)``.
        epsilons: the lower bounds, shape ``(..., A)`` (batch shape of the counts).
        method: ``"two-cut"``, ``"k-cut-goodman"``, ``"k-cut-sison-glaz"``,
            ``"two-cut-bootstrap"`` or ``"k-cut-bootstrap"``.
        confidence_level: confidence of each query's curve, selection included.
        selection: how the output set (partition) was chosen and paid for: strategy
            ``"explicit"`` (given), ``"split"`` or ``"bonferroni"``.
        candidates: the partitions considered; a 2-cut candidate is ``(O, complement)``.
        chosen: index into ``candidates`` used at each query and order, shape ``(..., A)``.
        counts: per-class counts under S (μ₁), int64 ``(..., C)``.
        counts_neighbour: per-class counts under S′ (μ₂).
        bound_counts: the counts the bound was computed from (held-out part under
            ``"split"``, else ``counts``).
        bound_counts_neighbour: likewise for S′.
        interval_level: coverage of each distribution's (simultaneous) interval set.
        asymptotic: the intervals are only asymptotically valid.
        valid_at_zero: the bound is valid when the true divergence is 0.
        simultaneous_over_orders: the curve holds at all orders at once (one event).
        seed: seed of the split or bootstrap, when one was used.
        n_resamples: bootstrap resamples (bootstrap methods only).
        note: a one-line statement of the validity properties.
    """

    orders: FloatArray
    epsilons: FloatArray
    method: str
    confidence_level: float
    selection: SelectionRecord
    candidates: tuple[Partition, ...]
    chosen: IntArray
    counts: IntArray
    counts_neighbour: IntArray
    bound_counts: IntArray
    bound_counts_neighbour: IntArray
    interval_level: float
    asymptotic: bool
    valid_at_zero: bool
    simultaneous_over_orders: bool
    seed: int | None = None
    n_resamples: int | None = None
    note: str = ""

    @property
    def n_queries(self) -> int:
        """Number of queries (product of the batch shape; 1 for a single histogram pair)."""
        return int(np.prod(self.epsilons.shape[:-1], dtype=np.int64))

    @property
    def output_set(self) -> tuple[int, ...] | None:
        """The output set O of a 2-cut audit with a single candidate, else ``None``."""
        if self.method.startswith("two-cut") and len(self.candidates) == 1:
            return self.candidates[0][0]
        return None


@dataclasses.dataclass(frozen=True)
class Counts:
    """Checked inputs of an RDP audit: per-class counts under S and S′, and the orders.

    Attributes:
        c1: counts under S, int64 ``(..., C)``.
        c2: counts under S′, same shape.
        lam: Rényi orders, ``(A,)``.
    """

    c1: IntArray
    c2: IntArray
    lam: FloatArray

    @classmethod
    def check(cls, counts: ArrayLike, counts_neighbour: ArrayLike, orders: ArrayLike) -> Counts:
        """Validate the counts (:func:`check_pair`) and the orders."""
        c1, c2 = check_pair(counts, counts_neighbour)
        return cls(c1, c2, check_orders(orders))

    @property
    def n_classes(self) -> int:
        """C, the number of classes."""
        return int(self.c1.shape[-1])


def audit_result(
    data: Counts,
    eps: np.ndarray,
    method: str,
    level: float,
    *,
    fixed: Partition | None = None,
    **fields: object,
) -> RDPAudit:
    """An :class:`RDPAudit` of ``method``; ``fields`` override the defaults below.

    Defaults: counts bounded = all counts, one candidate chosen everywhere, simultaneous over
    orders, interval level ``1 − β/2`` and the validity flags of ``method``. ``fixed``: the
    one candidate, fixed in advance (sets ``candidates`` and an explicit ``selection``).
    """
    c1, c2 = data.c1, data.c2
    if fixed is not None:
        two_cut = method.startswith("two-cut")
        value = fixed[0] if two_cut else fixed
        record = Explicit(value).record("output set" if two_cut else "partition")
        fields = {"selection": record, "candidates": (fixed,), **fields}
    values: dict[str, object] = {
        "bound_counts": c1,
        "bound_counts_neighbour": c2,
        "chosen": np.zeros(eps.shape, dtype=np.int64),
        "interval_level": 1.0 - (1.0 - level) / 2.0,
        "simultaneous_over_orders": True,
        "asymptotic": method != "two-cut",
        "valid_at_zero": True,
        "note": NOTE_CP if method == "two-cut" else NOTE_KCUT,
    }
    values.update(fields)
    return RDPAudit(
        orders=data.lam,
        epsilons=eps,
        method=method,
        confidence_level=level,
        counts=c1,
        counts_neighbour=c2,
        **values,
    )


# ---------------------------------------------------------------------------------------------
# Core maths
# ---------------------------------------------------------------------------------------------


def cut_bound(low1: np.ndarray, high2: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """``max(0, (1/(α−1)) log Σᵢ low1ᵢ^α high2ᵢ^{1−α})`` for every order (module docstring).

    ``low1``/``high2`` have shape ``(..., K)``; the result ``(..., A)``. Computed in log space
    (log-sum-exp over cells) so large orders do not overflow. A cell with ``low1 = 0``
    contributes nothing; ``high2 = 0`` with ``low1 > 0`` gives ``inf``. With the plug-in
    probabilities this is the exact Rényi divergence of the two cell distributions.
    """
    a = orders.reshape((1,) * (low1.ndim - 1) + (-1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        l1 = np.log(low1)[..., None, :]
        l2 = np.log(high2)[..., None, :]
        terms = a * l1 + (1.0 - a) * l2
    terms = np.where((low1 == 0)[..., None, :], -np.inf, terms)
    m = terms.max(axis=-1, keepdims=True)
    finite = np.isfinite(m)
    shift = np.where(finite, m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lse = np.log(np.exp(terms - shift).sum(axis=-1)) + shift[..., 0]
    lse = np.where(finite[..., 0], lse, m[..., 0])
    out = lse / (orders - 1.0)
    return np.maximum(out, 0.0)


def membership(partitions: Sequence[Partition], n_classes: int) -> np.ndarray:
    """0/1 matrix ``(M, K, C)`` of cell memberships for partitions with K cells each."""
    k = len(partitions[0])
    mat = np.zeros((len(partitions), k, n_classes))
    for m, part in enumerate(partitions):
        for i, cell in enumerate(part):
            mat[m, i, list(cell)] = 1.0
    return mat


def candidate_bounds(
    c1: np.ndarray,
    c2: np.ndarray,
    candidates: Sequence[Partition],
    orders: np.ndarray,
    method: str,
    beta: float,
) -> np.ndarray:
    """Lower bounds of every candidate, shape ``(..., M, A)``.

    ``beta`` is the failure probability allotted to each candidate (both distributions
    together). ``method`` is one of the CI methods or ``"plug-in"`` (point estimate).
    """
    n_classes = c1.shape[-1]
    batch = c1.shape[:-1]
    out = np.empty((*batch, len(candidates), orders.size))
    by_k: dict[int, list[int]] = {}
    for idx, part in enumerate(candidates):
        by_k.setdefault(len(part), []).append(idx)
    f1 = c1.astype(np.float64)
    f2 = c2.astype(np.float64)
    n1 = f1.sum(axis=-1)[..., None, None]
    n2 = f2.sum(axis=-1)[..., None, None]
    for k, idxs in by_k.items():
        mem = membership([candidates[i] for i in idxs], n_classes)
        m1 = np.einsum("...c,mkc->...mk", f1, mem)  # (..., m, K)
        m2 = np.einsum("...c,mkc->...mk", f2, mem)
        if method == "plug-in":
            low1, high2 = m1 / n1, m2 / n2
        elif method == "two-cut":
            tail = beta / 4.0  # four one-sided Clopper–Pearson bounds
            lo1, hi1 = cp_one_sided(m1[..., 0], n1[..., 0], tail)
            lo2, hi2 = cp_one_sided(m2[..., 0], n2[..., 0], tail)
            low1 = np.stack([lo1, 1.0 - hi1], axis=-1)
            high2 = np.stack([hi2, 1.0 - lo2], axis=-1)
        elif method == "k-cut-goodman":
            low1 = goodman_rows(m1.reshape(-1, k), beta / 2.0)[0].reshape(m1.shape)
            high2 = goodman_rows(m2.reshape(-1, k), beta / 2.0)[1].reshape(m2.shape)
        else:  # k-cut-sison-glaz
            # Both sides in one call: identical rows and the log-factorial table are shared.
            r12 = np.rint(np.concatenate([m1.reshape(-1, k), m2.reshape(-1, k)]))
            low12, high12 = sison_glaz_rows(r12.astype(np.int64), beta / 2.0)
            half = r12.shape[0] // 2
            low1 = low12[:half].reshape(m1.shape)
            high2 = high12[half:].reshape(m2.shape)
        out[..., idxs, :] = cut_bound(low1, high2, orders)
    return out


def two_cut_plug_in(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    output_set: Sequence[int] | np.ndarray,
) -> FloatArray:
    """Plug-in 2-cut divergence of one output set: ``D_α(Bern(p̂₁) ‖ Bern(p̂₂))``.

    With ``p̂ⱼ`` the share of runs whose output fell in O under S (j = 1) and S′ (j = 2),
    ``(1/(α−1)) log[p̂₁^α p̂₂^{1−α} + (1 − p̂₁)^α (1 − p̂₂)^{1−α}]``, clipped at 0 (Chadha et
    al. 2024, arXiv:2402.09403, App. B, the 2-cut with point estimates). A point estimate,
    **not** a lower bound: use it to rank or break ties between output sets (as
    :func:`~dpaudit.bounds.rdp_audit` does on its selection part), never as evidence.

    Args:
        counts: per-class counts under S, ``(C,)`` or ``(..., C)``.
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1, scalar or 1-d.
        output_set: class indices forming O (or a boolean mask of length C); a non-empty
            proper subset.

    Returns:
        The plug-in divergence, shape ``(..., A)`` (``inf`` where ``p̂₂ = 0 < p̂₁`` on a side).

    Raises:
        TypeError, ValueError: as :func:`~dpaudit.bounds.rdp_two_cut`.

    Example:
        >>> np.round(two_cut_plug_in([9000, 1000], [7000, 3000], [2, 10], output_set=[0]), 4)
        array([0.1744, 0.2396])
    """
    data = Counts.check(counts, counts_neighbour, orders)
    part = two_cut_partition(check_output_set(output_set, data.n_classes), data.n_classes)
    return candidate_bounds(data.c1, data.c2, (part,), data.lam, "plug-in", 0.0)[..., 0, :]


# ---------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------


def check_pair(counts: ArrayLike, counts_neighbour: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    c1 = check_counts("counts", counts)
    c2 = check_counts("counts_neighbour", counts_neighbour)
    if c1.shape != c2.shape:
        raise ValueError(
            f"counts_neighbour must have the same shape as counts {c1.shape}, got {c2.shape}"
        )
    if c1.shape[-1] < 2:
        raise ValueError(f"counts must have at least 2 classes in its last axis, got {c1.shape}")
    if np.any(c1.sum(axis=-1) == 0):
        raise ValueError("counts must have a positive total for every query")
    if np.any(c2.sum(axis=-1) == 0):
        raise ValueError("counts_neighbour must have a positive total for every query")
    return c1, c2


def check_output_set(
    output_set: object, n_classes: int, name: str = "output_set"
) -> tuple[int, ...]:
    """A non-empty proper subset of the classes: integer indices or a boolean mask (C,)."""
    if isinstance(output_set, (str, bytes)) or not isinstance(output_set, Iterable):
        raise TypeError(f"{name} must be a collection of class indices, got {output_set!r}")
    try:
        arr = np.asarray(list(output_set) if not isinstance(output_set, np.ndarray) else output_set)
    except ValueError as exc:
        raise ValueError(f"{name} must be a flat collection of class indices: {exc}") from exc
    if arr.dtype == bool:
        if arr.shape != (n_classes,):
            raise ValueError(f"{name} as a mask must have shape ({n_classes},), got {arr.shape}")
        idx = np.flatnonzero(arr)
    else:
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name} must contain integer class indices, got {output_set!r}")
        idx = arr.astype(np.int64).ravel()
    if idx.size != np.unique(idx).size:
        raise ValueError(f"{name} must not repeat classes, got {output_set!r}")
    if np.any((idx < 0) | (idx >= n_classes)):
        raise ValueError(f"{name} must contain classes in [0, {n_classes}), got {output_set!r}")
    if idx.size == 0 or idx.size == n_classes:
        raise ValueError(
            f"{name} must be a non-empty proper subset of the {n_classes} classes, "
            f"got {output_set!r}"
        )
    return tuple(int(i) for i in np.sort(idx))


def two_cut_partition(output_set: tuple[int, ...], n_classes: int) -> Partition:
    rest = tuple(i for i in range(n_classes) if i not in set(output_set))
    return (output_set, rest)


def _class_index(value: object, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must contain integer class indices, got {value!r}")
    return int(value)


def check_partition(partition: object, n_classes: int, name: str = "partition") -> Partition:
    if partition is None:
        return tuple((i,) for i in range(n_classes))
    if isinstance(partition, (str, bytes)):
        raise TypeError(
            f"{name} must be a sequence of cells (class-index sequences), got {partition!r}"
        )
    try:
        cells = [tuple(_class_index(i, name) for i in cell) for cell in partition]  # type: ignore[union-attr]
    except TypeError as exc:
        raise TypeError(
            f"{name} must be a sequence of cells (class-index sequences): {exc}"
        ) from exc
    flat = sorted(i for cell in cells for i in cell)
    if flat != list(range(n_classes)) or any(len(cell) == 0 for cell in cells):
        raise ValueError(
            f"{name} must split the classes 0..{n_classes - 1} into non-empty disjoint cells, "
            f"got {partition!r}"
        )
    if len(cells) < 2:
        raise ValueError(f"{name} must have at least 2 cells, got {partition!r}")
    return tuple(tuple(sorted(cell)) for cell in cells)


# ---------------------------------------------------------------------------------------------
# Candidate enumeration
# ---------------------------------------------------------------------------------------------


def all_output_sets(n_classes: int) -> list[Partition]:
    """Non-empty proper subsets up to complement (O and Oᶜ give the same 2-cut bound)."""
    out = []
    base = range(n_classes - 1)  # sets without the last class: one of each {O, Oᶜ}
    for size in range(1, n_classes):
        for combo in itertools.combinations(base, size):
            out.append(two_cut_partition(tuple(combo), n_classes))
    return out


def _set_partitions(items: list[int]) -> Iterator[list[list[int]]]:
    if len(items) == 1:
        yield [items]
        return
    first, rest = items[0], items[1:]
    for smaller in _set_partitions(rest):
        for i in range(len(smaller)):
            yield [*smaller[:i], [first, *smaller[i]], *smaller[i + 1 :]]
        yield [[first], *smaller]


def all_partitions(n_classes: int) -> list[Partition]:
    parts = []
    for p in _set_partitions(list(range(n_classes))):
        if len(p) >= 2:
            parts.append(tuple(sorted(tuple(sorted(c)) for c in p)))
    return sorted(parts, key=lambda p: (-len(p), p))
