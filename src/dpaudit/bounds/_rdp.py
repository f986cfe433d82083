"""Rényi-DP lower bounds for mechanisms with discrete outputs (paper 000 §4.2 and App. B).

Given per-class output counts of a mechanism run on S (``counts``, distribution μ₁) and on a
neighbour S′ (``counts_neighbour``, μ₂), these audits bound ``D_α(μ₁ ‖ μ₂)`` from below at an
array of orders α > 1, with stated confidence:

* **2-cut** (paper 000 Eq. 3 and the App. B formula): for an output set O with
  ``p_j = μ_j(O)`` and Clopper–Pearson bounds ``p_jℓ ≤ p_j ≤ p_jᵘ``,
  ``D_α ≥ (1/(α−1)) log[(p₁ℓ)^α (p₂ᵘ)^{1−α} + (1 − p₁ᵘ)^α (1 − p₂ℓ)^{1−α}]``.
  Exact at every sample size and for all orders at once.
* **k-cut** (App. B Eq. 5): for a partition ``O₁..O_k`` and simultaneous bounds
  ``D_α ≥ (1/(α−1)) log Σᵢ (p₁ℓ(i))^α (p₂ᵘ(i))^{1−α}`` with Goodman or Sison–Glaz intervals
  (asymptotically valid only).
* **Bootstrap** 2-cut / k-cut (App. B): percentile lower bound of the plug-in divergence over
  multinomial resamples; asymptotic, invalid at zero divergence and order by order only
  (App. B Table 2).

Each term of the cut bounds is monotone in the right direction (``p₁^α p₂^{1−α}`` increases
in p₁ and decreases in p₂ for α > 1), so the bound holds whenever all intervals do; the
confidence is split over the two distributions (and over the candidates paid for by
Bonferroni). Bounds are clipped at 0 (a divergence is non-negative).

Choosing O or the partition on the same counts invalidates the bound; :func:`rdp_audit`
chooses on a held-out split of the counts (default) or pays with Bonferroni, and records it.
Per-query curves compose by summation (RDP composition; paper 000 §4.2), with the failure
probabilities added (union bound). Converting an RDP *lower* bound to (ε, δ) with an
upper-bound conversion (Balle et al. 2020 Thm 20, paper 000 Thm 1) is for display only.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator, block_seeds, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_counts,
    check_delta,
    check_in_range,
    check_orders,
    check_positive_int,
    check_real,
)
from dpaudit.bounds._intervals import (
    _cp_one_sided,
    _goodman_rows,
    _sison_glaz_rows,
    bootstrap_counts,
)
from dpaudit.conversions import rdp_to_dp

__all__ = [
    "ConvertedRDPLowerBound",
    "RDPAudit",
    "RDPLowerBoundCurve",
    "compose_rdp_lower_bounds",
    "per_query_confidence_level",
    "rdp_audit",
    "rdp_k_cut",
    "rdp_k_cut_bootstrap",
    "rdp_lower_bound_to_dp",
    "rdp_two_cut",
    "rdp_two_cut_bootstrap",
]

_CI_METHODS = ("two-cut", "k-cut-goodman", "k-cut-sison-glaz")
_KCUT_METHODS = ("goodman", "sison-glaz")
_SELECTIONS = ("split", "bonferroni")
#: Largest number of classes for which :func:`rdp_audit` enumerates candidates itself.
MAX_CLASSES_TWO_CUT = 16
MAX_CLASSES_K_CUT = 6

_NOTE_CP = "2-cut with Clopper-Pearson intervals: valid at every sample size and all orders."
_NOTE_KCUT = (
    "k-cut with simultaneous multinomial intervals: asymptotically valid only "
    "(paper 000 App. B, Table 2)."
)
_NOTE_BOOT = (
    "bootstrap: asymptotic, invalid when the true divergence is 0 and valid order by order "
    "only (paper 000 App. B, Table 2); do not use it to refute a claim."
)

Partition = tuple[tuple[int, ...], ...]


# ---------------------------------------------------------------------------------------------
# Results
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
        selection: ``"explicit"`` (set/partition given), ``"split"`` or ``"bonferroni"``.
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
    selection: str
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
class RDPLowerBoundCurve(ResultMixin):
    """A composed RDP lower-bound curve (sum of per-query lower bounds at each order).

    Attributes:
        orders: Rényi orders, shape ``(A,)``.
        epsilons: composed lower bounds, shape ``(A,)``.
        confidence_level: ``1 − Σ_q β_q`` (union bound over the queries' failure events).
        n_queries: number of per-query curves summed.
        methods: the audit methods that contributed.
        asymptotic: some contribution is only asymptotically valid.
        simultaneous_over_orders: every contribution holds at all orders at once.
        note: validity statement.
        valid_at_zero: every contribution is valid when its true divergence is 0 (False
            as soon as one bootstrap audit is composed: summing bootstrap bounds over many
            near-zero-leakage queries adds up their bias; paper 000 App. B).
    """

    orders: FloatArray
    epsilons: FloatArray
    confidence_level: float
    n_queries: int
    methods: tuple[str, ...]
    asymptotic: bool
    simultaneous_over_orders: bool
    note: str = ""
    valid_at_zero: bool = True

    def __add__(self, other: RDPLowerBoundCurve | RDPAudit) -> RDPLowerBoundCurve:
        return compose_rdp_lower_bounds([self, other])


@dataclasses.dataclass(frozen=True)
class ConvertedRDPLowerBound(ResultMixin):
    """(ε, δ) obtained by converting an RDP *lower* bound — for display, not a lower bound.

    Attributes:
        epsilon: ε from the conversion of the lower-bound curve.
        delta: δ used.
        order: order attaining the minimum.
        conversion: ``"balle2020"`` (paper 000 Thm 1) or ``"standard"``.
        rdp_confidence_level: confidence of the RDP curve that was converted.
        is_valid_dp_lower_bound: always False (see ``note``).
        note: why this number is not an (ε, δ) lower bound.
    """

    epsilon: float
    delta: float
    order: float
    conversion: str
    rdp_confidence_level: float
    is_valid_dp_lower_bound: bool
    note: str


# ---------------------------------------------------------------------------------------------
# Core maths
# ---------------------------------------------------------------------------------------------


def _cut_bound(low1: np.ndarray, high2: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """``max(0, (1/(α−1)) log Σᵢ low1ᵢ^α high2ᵢ^{1−α})`` for every order (paper 000 App. B).

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


def _membership(partitions: Sequence[Partition], n_classes: int) -> np.ndarray:
    """0/1 matrix ``(M, K, C)`` of cell memberships for partitions with K cells each."""
    k = len(partitions[0])
    mat = np.zeros((len(partitions), k, n_classes))
    for m, part in enumerate(partitions):
        for i, cell in enumerate(part):
            mat[m, i, list(cell)] = 1.0
    return mat


def _candidate_bounds(
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
        mem = _membership([candidates[i] for i in idxs], n_classes)
        m1 = np.einsum("...c,mkc->...mk", f1, mem)  # (..., m, K)
        m2 = np.einsum("...c,mkc->...mk", f2, mem)
        if method == "plug-in":
            low1, high2 = m1 / n1, m2 / n2
        elif method == "two-cut":
            tail = beta / 4.0  # four one-sided Clopper–Pearson bounds
            lo1, hi1 = _cp_one_sided(m1[..., 0], n1[..., 0], tail)
            lo2, hi2 = _cp_one_sided(m2[..., 0], n2[..., 0], tail)
            low1 = np.stack([lo1, 1.0 - hi1], axis=-1)
            high2 = np.stack([hi2, 1.0 - lo2], axis=-1)
        elif method == "k-cut-goodman":
            low1 = _goodman_rows(m1.reshape(-1, k), beta / 2.0)[0].reshape(m1.shape)
            high2 = _goodman_rows(m2.reshape(-1, k), beta / 2.0)[1].reshape(m2.shape)
        else:  # k-cut-sison-glaz
            # Both sides in one call: identical rows and the log-factorial table are shared.
            r12 = np.rint(np.concatenate([m1.reshape(-1, k), m2.reshape(-1, k)]))
            low12, high12 = _sison_glaz_rows(r12.astype(np.int64), beta / 2.0)
            half = r12.shape[0] // 2
            low1 = low12[:half].reshape(m1.shape)
            high2 = high12[half:].reshape(m2.shape)
        out[..., idxs, :] = _cut_bound(low1, high2, orders)
    return out


# ---------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------


def _check_pair(counts: ArrayLike, counts_neighbour: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
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


def _check_output_set(output_set: object, n_classes: int) -> tuple[int, ...]:
    if isinstance(output_set, (str, bytes)) or output_set is None:
        raise TypeError(f"output_set must be a collection of class indices, got {output_set!r}")
    arr = np.asarray(list(output_set) if not isinstance(output_set, np.ndarray) else output_set)
    if arr.dtype == bool:
        if arr.shape != (n_classes,):
            raise ValueError(
                f"output_set as a mask must have shape ({n_classes},), got {arr.shape}"
            )
        idx = np.flatnonzero(arr)
    else:
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"output_set must contain integer class indices, got {output_set!r}")
        idx = arr.astype(np.int64).ravel()
    if idx.size != np.unique(idx).size:
        raise ValueError(f"output_set must not repeat classes, got {output_set!r}")
    if np.any((idx < 0) | (idx >= n_classes)):
        raise ValueError(f"output_set must contain classes in [0, {n_classes}), got {output_set!r}")
    if idx.size == 0 or idx.size == n_classes:
        raise ValueError(
            f"output_set must be a non-empty proper subset of the {n_classes} classes, "
            f"got {output_set!r}"
        )
    return tuple(int(i) for i in np.sort(idx))


def _two_cut_partition(output_set: tuple[int, ...], n_classes: int) -> Partition:
    rest = tuple(i for i in range(n_classes) if i not in set(output_set))
    return (output_set, rest)


def _check_partition(partition: object, n_classes: int, name: str = "partition") -> Partition:
    if partition is None:
        return tuple((i,) for i in range(n_classes))
    if isinstance(partition, (str, bytes)):
        raise TypeError(
            f"{name} must be a sequence of cells (class-index sequences), got {partition!r}"
        )
    try:
        cells = [tuple(int(i) for i in cell) for cell in partition]  # type: ignore[union-attr]
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


def _level_fields(method: str) -> dict[str, object]:
    if method == "two-cut":
        return {"asymptotic": False, "valid_at_zero": True, "note": _NOTE_CP}
    return {"asymptotic": True, "valid_at_zero": True, "note": _NOTE_KCUT}


# ---------------------------------------------------------------------------------------------
# Fixed output set / partition
# ---------------------------------------------------------------------------------------------


def _fixed_audit(
    c1: np.ndarray, c2: np.ndarray, lam: np.ndarray, part: Partition, method: str, level: float
) -> RDPAudit:
    """Audit with one fixed candidate (``selection="explicit"``) by a CI method."""
    beta = 1.0 - level
    eps = _candidate_bounds(c1, c2, (part,), lam, method, beta)[..., 0, :]
    return RDPAudit(
        orders=lam,
        epsilons=eps,
        method=method,
        confidence_level=level,
        selection="explicit",
        candidates=(part,),
        chosen=np.zeros(eps.shape, dtype=np.int64),
        counts=c1,
        counts_neighbour=c2,
        bound_counts=c1,
        bound_counts_neighbour=c2,
        interval_level=1.0 - beta / 2.0,
        simultaneous_over_orders=True,
        **_level_fields(method),
    )


def rdp_two_cut(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    output_set: Sequence[int] | np.ndarray,
    confidence_level: float = 0.95,
) -> RDPAudit:
    """2-cut RDP lower bound with Clopper–Pearson intervals for a fixed output set.

    Paper 000 §4.2 Eq. (3) and App. B: with ``p₁ = μ₁(O)``, ``p₂ = μ₂(O)`` bounded by
    two-sided Clopper–Pearson intervals at level ``1 − β/2`` each,
    ``D_α(μ₁‖μ₂) ≥ (1/(α−1)) log[(p₁ℓ)^α (p₂ᵘ)^{1−α} + (1−p₁ᵘ)^α (1−p₂ℓ)^{1−α}]`` (clipped at
    0) for every α at once. ``O`` must be fixed independently of these counts (otherwise use
    :func:`rdp_audit`).

    Args:
        counts: per-class output counts under S, shape ``(C,)`` or ``(..., C)`` (batch of
            queries).
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1 (finite), scalar or 1-d.
        output_set: class indices forming O (or a boolean mask of length C); a non-empty
            proper subset.
        confidence_level: confidence per query, in (0, 1).

    Returns:
        :class:`RDPAudit` with ``.orders`` and ``.epsilons`` (shape ``(..., A)``).

    Raises:
        TypeError, ValueError: negative or non-integer counts, mismatched shapes, a query
            with no samples, orders ≤ 1, bad output set or level.

    Example:
        >>> res = rdp_two_cut([9000, 1000], [7000, 3000], [2, 10], output_set=[0])
        >>> np.round(res.epsilons, 3)
        array([0.141, 0.216])
    """
    c1, c2 = _check_pair(counts, counts_neighbour)
    lam = check_orders(orders)
    level = check_confidence_level(confidence_level)
    o = _check_output_set(output_set, c1.shape[-1])
    return _fixed_audit(c1, c2, lam, _two_cut_partition(o, c1.shape[-1]), "two-cut", level)


def rdp_k_cut(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    partition: Sequence[Sequence[int]] | None = None,
    method: str = "goodman",
    confidence_level: float = 0.95,
) -> RDPAudit:
    """k-cut RDP lower bound with simultaneous multinomial intervals (paper 000 App. B Eq. 5).

    ``D_α(μ₁‖μ₂) ≥ (1/(α−1)) log Σᵢ (p₁ℓ(i))^α (p₂ᵘ(i))^{1−α}`` over the cells of the
    partition, with Goodman (1965) or Sison & Glaz (1995) intervals at level ``1 − β/2`` per
    distribution. With the finest partition (default: every class its own cell) the k-cut
    equals the Rényi divergence of the discrete outputs. Asymptotically valid only (the
    intervals are; App. B Table 2), flagged in the result.

    Args:
        counts: per-class counts under S, ``(C,)`` or ``(..., C)``.
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1.
        partition: cells covering the classes exactly once (≥ 2 cells); default finest.
        method: ``"goodman"`` or ``"sison-glaz"``.
        confidence_level: in (0, 1).

    Returns:
        :class:`RDPAudit` (``asymptotic=True``).

    Raises:
        TypeError, ValueError: as :func:`rdp_two_cut`, plus a bad partition or method.

    Example:
        >>> res = rdp_k_cut([9000, 600, 400], [7000, 1800, 1200], [2, 10])
        >>> res.method, bool(res.asymptotic), np.round(res.epsilons, 3)
        ('k-cut-goodman', True, array([0.133, 0.213]))
    """
    c1, c2 = _check_pair(counts, counts_neighbour)
    lam = check_orders(orders)
    level = check_confidence_level(confidence_level)
    check_choice("method", method, _KCUT_METHODS)
    part = _check_partition(partition, c1.shape[-1])
    return _fixed_audit(c1, c2, lam, part, f"k-cut-{method}", level)


# ---------------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------------


def _bootstrap_audit(
    c1: np.ndarray,
    c2: np.ndarray,
    lam: np.ndarray,
    part: Partition,
    method: str,
    level: float,
    n_resamples: int,
    rng: RngLike,
) -> RDPAudit:
    mem = _membership([part], c1.shape[-1])[0]  # (K, C)

    def statistic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        p1 = a / a.sum(axis=-1, keepdims=True)
        p2 = b / b.sum(axis=-1, keepdims=True)
        return _cut_bound(p1, p2, lam)  # (R, A)

    rows1 = c1.reshape(-1, c1.shape[-1]).astype(np.float64) @ mem.T
    rows2 = c2.reshape(-1, c2.shape[-1]).astype(np.float64) @ mem.T
    seeds = block_seeds(rng, rows1.shape[0])
    eps = np.empty((rows1.shape[0], lam.size))
    for i in range(rows1.shape[0]):
        res = bootstrap_counts(
            statistic,
            [np.rint(rows1[i]).astype(np.int64), np.rint(rows2[i]).astype(np.int64)],
            confidence_level=level,
            n_resamples=n_resamples,
            method="percentile",
            alternative="greater",
            engine="multinomial",
            rng=seeds[i],
        )
        eps[i] = np.maximum(res.low, 0.0)
    eps = eps.reshape((*c1.shape[:-1], lam.size))
    return RDPAudit(
        orders=lam,
        epsilons=eps,
        method=method,
        confidence_level=level,
        selection="explicit",
        candidates=(part,),
        chosen=np.zeros(eps.shape, dtype=np.int64),
        counts=c1,
        counts_neighbour=c2,
        bound_counts=c1,
        bound_counts_neighbour=c2,
        interval_level=level,
        asymptotic=True,
        valid_at_zero=False,
        simultaneous_over_orders=False,
        seed=seed_entropy(rng),
        n_resamples=n_resamples,
        note=_NOTE_BOOT,
    )


def rdp_two_cut_bootstrap(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    output_set: Sequence[int] | np.ndarray,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: RngLike = None,
) -> RDPAudit:
    """2-cut bootstrap audit (paper 000 App. B, "2-cut Bootstrap audit").

    The plug-in 2-cut ``D_α(Bern(p̂₁)‖Bern(p̂₂))`` for a fixed O, with its lower confidence
    limit read off the percentile bootstrap (each side resampled as Multinomial(n, p̂)).
    **Asymptotic, invalid when the true divergence is 0, and valid order by order only**
    (App. B Table 2); the result says so (``asymptotic``, ``valid_at_zero=False``,
    ``simultaneous_over_orders=False``).

    Args:
        counts: per-class counts under S, ``(C,)`` or ``(..., C)``.
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1.
        output_set: the set O (class indices or a boolean mask).
        confidence_level: nominal level, in (0, 1).
        n_resamples: bootstrap resamples per query, ≥ 1.
        rng: seed or generator (one independent stream per query).

    Returns:
        :class:`RDPAudit` with ``method="two-cut-bootstrap"``.

    Raises:
        TypeError, ValueError: as :func:`rdp_two_cut`, plus a bad ``n_resamples``.

    Example:
        >>> res = rdp_two_cut_bootstrap([9000, 1000], [7000, 3000], [2], output_set=[0], rng=0)
        >>> res.valid_at_zero, round(float(res.epsilons[0]), 2)
        (False, 0.16)
    """
    c1, c2 = _check_pair(counts, counts_neighbour)
    lam = check_orders(orders)
    level = check_confidence_level(confidence_level)
    o = _check_output_set(output_set, c1.shape[-1])
    n_resamples = check_positive_int("n_resamples", n_resamples)
    part = _two_cut_partition(o, c1.shape[-1])
    return _bootstrap_audit(c1, c2, lam, part, "two-cut-bootstrap", level, n_resamples, rng)


def rdp_k_cut_bootstrap(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    partition: Sequence[Sequence[int]] | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: RngLike = None,
) -> RDPAudit:
    """k-cut bootstrap audit (paper 000 App. B, "k-cut Bootstrap audit").

    Percentile-bootstrap lower limit of the plug-in divergence between the two cell
    distributions (finest partition by default, i.e. the plug-in Rényi divergence of the
    outputs). Asymptotic, invalid at zero divergence and order by order only (App. B
    Table 2); flagged in the result. A resample with an empty cell under S′ but not under S
    has infinite plug-in divergence; the lower percentile ignores such rare resamples only if
    fewer than β of them occur.

    Args:
        counts: per-class counts under S.
        counts_neighbour: per-class counts under S′.
        orders: Rényi orders α > 1.
        partition: cells (default finest).
        confidence_level: nominal level.
        n_resamples: resamples per query.
        rng: seed or generator.

    Returns:
        :class:`RDPAudit` with ``method="k-cut-bootstrap"``.

    Raises:
        TypeError, ValueError: as :func:`rdp_k_cut`.

    Example:
        >>> res = rdp_k_cut_bootstrap([9000, 600, 400], [7000, 1800, 1200], [2], rng=0)
        >>> res.method, round(float(res.epsilons[0]), 2)
        ('k-cut-bootstrap', 0.16)
    """
    c1, c2 = _check_pair(counts, counts_neighbour)
    lam = check_orders(orders)
    level = check_confidence_level(confidence_level)
    part = _check_partition(partition, c1.shape[-1])
    n_resamples = check_positive_int("n_resamples", n_resamples)
    return _bootstrap_audit(c1, c2, lam, part, "k-cut-bootstrap", level, n_resamples, rng)


# ---------------------------------------------------------------------------------------------
# Selection of the output set / partition
# ---------------------------------------------------------------------------------------------


def _all_output_sets(n_classes: int) -> list[Partition]:
    """Non-empty proper subsets up to complement (O and Oᶜ give the same 2-cut bound)."""
    out = []
    base = range(n_classes - 1)  # sets without the last class: one of each {O, Oᶜ}
    for size in range(1, n_classes):
        for combo in itertools.combinations(base, size):
            out.append(_two_cut_partition(tuple(combo), n_classes))
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


def _all_partitions(n_classes: int) -> list[Partition]:
    parts = []
    for p in _set_partitions(list(range(n_classes))):
        if len(p) >= 2:
            parts.append(tuple(sorted(tuple(sorted(c)) for c in p)))
    return sorted(parts, key=lambda p: (-len(p), p))


def _query_chunks(n_rows: int, m: int, n_orders: int, cands: Sequence[Partition]) -> list[slice]:
    """Row slices keeping the ``(rows, M, A, K)`` intermediates under ~4 million floats."""
    k = max(len(p) for p in cands)
    per = max(1, 4_000_000 // max(1, m * n_orders * k))
    return [slice(i, min(i + per, n_rows)) for i in range(0, n_rows, per)]


def _split_counts(
    c: np.ndarray, fraction: float, gen: np.random.Generator, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Random split of each row's samples: counts of the selection part are hypergeometric.

    Splitting i.i.d. samples at random gives two independent multinomial samples, so the
    held-out counts are independent of any choice made on the selection counts.
    """
    rows = c.reshape(-1, c.shape[-1])
    sel = np.empty_like(rows)
    for i, row in enumerate(rows):
        n = int(row.sum())
        k = round(fraction * n)
        if k < 1 or k > n - 1:
            raise ValueError(
                f"{name} has a query with {n} samples: split_fraction={fraction} leaves the "
                "selection or the held-out part empty"
            )
        sel[i] = gen.multivariate_hypergeometric(row, k)
    sel = sel.reshape(c.shape)
    return sel, c - sel


def rdp_audit(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    method: str = "two-cut",
    candidates: Sequence[Sequence[int]] | Sequence[Sequence[Sequence[int]]] | None = None,
    selection: str = "split",
    split_fraction: float = 0.5,
    selection_order: float | None = None,
    confidence_level: float = 0.95,
    rng: RngLike = None,
) -> RDPAudit:
    """RDP audit with the output set (2-cut) or partition (k-cut) chosen by the audit.

    Choosing O on the counts that are then bounded breaks validity; this function pays:

    * ``selection="split"`` (default): each query's samples are split at random (the
      selection counts are multivariate-hypergeometric, so both parts are independent
      multinomial samples); the candidate with the best bound on the selection part —
      summed over ``orders``, or at ``selection_order`` — is bounded on the held-out part
      only. One candidate per query, so the curve holds at all orders at once. For the
      k-cut methods the choice uses the Goodman bound (cheap; any rule is valid here).
    * ``selection="bonferroni"``: every candidate is bounded on all counts at failure
      probability ``β/M`` and the best is kept at each order (simultaneous over candidates,
      hence over orders).

    Candidates (default, paper 000 §4.2 "all possible sets"): for the 2-cut, every non-empty
    proper subset of the classes up to complement (``2^{C−1} − 1``; C ≤ 16); for the k-cut,
    every partition into ≥ 2 cells (C ≤ 6). Pass ``candidates`` for larger C: output sets
    (2-cut) or partitions (k-cut), fixed before seeing the counts.

    Args:
        counts: per-class counts under S, ``(C,)`` or ``(..., C)``.
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1.
        method: ``"two-cut"``, ``"k-cut-goodman"`` or ``"k-cut-sison-glaz"``.
        candidates: output sets or partitions to choose from (default: all, see above).
        selection: ``"split"`` or ``"bonferroni"``.
        split_fraction: share of each query's samples used for selection, in (0, 1).
        selection_order: order at which candidates are compared (split only); default:
            the sum of the bounds over ``orders``.
        confidence_level: confidence per query, including the selection.
        rng: seed or generator for the split.

    Returns:
        :class:`RDPAudit` recording the candidates, the choice per query and order, the
        counts bounded and ``selection``.

    Raises:
        TypeError, ValueError: bad counts, orders, level, method, selection, fraction,
            candidates, or too many classes to enumerate candidates.

    Example:
        >>> res = rdp_audit([6000, 3000, 1000], [4000, 5000, 1000], [2, 5], rng=0)
        >>> res.selection, res.candidates[int(res.chosen[0])][0]
        ('split', (0,))
    """
    c1, c2 = _check_pair(counts, counts_neighbour)
    lam = check_orders(orders)
    level = check_confidence_level(confidence_level)
    check_choice("method", method, _CI_METHODS)
    check_choice("selection", selection, _SELECTIONS)
    fraction = check_in_range("split_fraction", split_fraction, 0.0, 1.0)
    n_classes = c1.shape[-1]
    sel_order = None
    if selection_order is not None:
        sel_order = check_orders(check_real("selection_order", selection_order), "selection_order")
    if candidates is None:
        if method == "two-cut":
            if n_classes > MAX_CLASSES_TWO_CUT:
                raise ValueError(
                    f"candidates must be given for more than {MAX_CLASSES_TWO_CUT} classes "
                    f"(got C={n_classes}); pass the output sets to try"
                )
            cands = _all_output_sets(n_classes)
        else:
            if n_classes > MAX_CLASSES_K_CUT:
                raise ValueError(
                    f"candidates must be given for more than {MAX_CLASSES_K_CUT} classes "
                    f"(got C={n_classes}); pass the partitions to try"
                )
            cands = _all_partitions(n_classes)
    else:
        if isinstance(candidates, (str, bytes)) or len(candidates) == 0:
            raise ValueError(f"candidates must be a non-empty sequence, got {candidates!r}")
        if method == "two-cut":
            cands = [
                _two_cut_partition(_check_output_set(o, n_classes), n_classes) for o in candidates
            ]
        else:
            cands = [_check_partition(p, n_classes, "candidates") for p in candidates]
    cands_t = tuple(cands)
    m = len(cands_t)
    beta = 1.0 - level
    fields = _level_fields(method)
    batch = c1.shape[:-1]

    if selection == "bonferroni":
        f1, f2 = c1.reshape(-1, n_classes), c2.reshape(-1, n_classes)
        eps = np.empty((f1.shape[0], lam.size))
        chosen = np.empty((f1.shape[0], lam.size), dtype=np.int64)
        for rows in _query_chunks(f1.shape[0], m, lam.size, cands_t):
            bounds = _candidate_bounds(f1[rows], f2[rows], cands_t, lam, method, beta / m)
            chosen[rows] = bounds.argmax(axis=-2)
            eps[rows] = np.take_along_axis(bounds, chosen[rows][:, None, :], axis=-2)[:, 0, :]
        eps = eps.reshape((*batch, lam.size))
        chosen = chosen.reshape((*batch, lam.size))
        return RDPAudit(
            orders=lam,
            epsilons=eps,
            method=method,
            confidence_level=level,
            selection="bonferroni",
            candidates=cands_t,
            chosen=chosen.astype(np.int64),
            counts=c1,
            counts_neighbour=c2,
            bound_counts=c1,
            bound_counts_neighbour=c2,
            interval_level=1.0 - beta / (2.0 * m),
            simultaneous_over_orders=True,
            **fields,
        )

    seed = seed_entropy(rng)
    gen = as_generator(rng)
    s1, e1 = _split_counts(c1, fraction, gen, "counts")
    s2, e2 = _split_counts(c2, fraction, gen, "counts_neighbour")
    crit_orders = lam if sel_order is None else sel_order
    crit_method = "two-cut" if method == "two-cut" else "k-cut-goodman"
    fs1, fs2 = s1.reshape(-1, n_classes), s2.reshape(-1, n_classes)
    best = np.empty(fs1.shape[0], dtype=np.int64)
    for rows in _query_chunks(fs1.shape[0], m, crit_orders.size, cands_t):
        crit = _candidate_bounds(fs1[rows], fs2[rows], cands_t, crit_orders, crit_method, beta)
        plug = _candidate_bounds(fs1[rows], fs2[rows], cands_t, crit_orders, "plug-in", beta)
        # best bound on the selection part; ties (e.g. all 0) broken by the plug-in estimate
        keys = np.stack([plug.sum(axis=-1), crit.sum(axis=-1)])  # (2, rows, M)
        best[rows] = [np.lexsort(keys[:, i, :])[-1] for i in range(keys.shape[1])]
    best = best.reshape(batch)
    eps = np.empty((*batch, lam.size))
    flat_e1 = e1.reshape(-1, n_classes)
    flat_e2 = e2.reshape(-1, n_classes)
    flat_best = best.reshape(-1)
    flat_eps = eps.reshape(-1, lam.size)
    for j in np.unique(flat_best):
        rows = np.flatnonzero(flat_best == j)
        flat_eps[rows] = _candidate_bounds(
            flat_e1[rows], flat_e2[rows], (cands_t[j],), lam, method, beta
        )[:, 0, :]
    chosen = np.broadcast_to(best[..., None], (*batch, lam.size)).astype(np.int64)
    return RDPAudit(
        orders=lam,
        epsilons=flat_eps.reshape((*batch, lam.size)),
        method=method,
        confidence_level=level,
        selection="split",
        candidates=cands_t,
        chosen=np.array(chosen),
        counts=c1,
        counts_neighbour=c2,
        bound_counts=e1,
        bound_counts_neighbour=e2,
        interval_level=1.0 - beta / 2.0,
        simultaneous_over_orders=True,
        seed=seed,
        **fields,
    )


# ---------------------------------------------------------------------------------------------
# Composition and display conversion
# ---------------------------------------------------------------------------------------------


def per_query_confidence_level(confidence_level: float, n_queries: int) -> float:
    """Per-query level so that ``n_queries`` composed lower bounds hold jointly at the level.

    Union bound: ``1 − (1 − confidence_level)/n_queries``.

    Args:
        confidence_level: the joint level wanted for the composed curve, in (0, 1).
        n_queries: number of per-query audits to compose, ≥ 1.

    Returns:
        The level to pass to each per-query audit.

    Raises:
        ValueError, TypeError: level ∉ (0, 1) or ``n_queries`` < 1.

    Example:
        >>> per_query_confidence_level(0.95, 100)
        0.9995
    """
    level = check_confidence_level(confidence_level)
    q = check_positive_int("n_queries", n_queries)
    return 1.0 - (1.0 - level) / q


def compose_rdp_lower_bounds(
    audits: RDPAudit | RDPLowerBoundCurve | Sequence[RDPAudit | RDPLowerBoundCurve],
) -> RDPLowerBoundCurve:
    """Compose per-query RDP lower bounds by summing them at each order.

    Rényi divergences of independent outputs add (RDP composition, Mironov 2017 Prop. 1;
    paper 000 §4.2: "audit each query in isolation, and compose the lower bounds"), so
    ``Σ_q L_q(α) ≤ Σ_q D_α,q`` whenever every per-query bound holds; the composed curve's
    confidence is ``1 − Σ_q β_q`` (union bound). Use :func:`per_query_confidence_level` to
    run each query at the level that gives the joint level you want. The validity flags
    carry over: ``asymptotic`` if any contribution is, ``simultaneous_over_orders`` and
    ``valid_at_zero`` only if every contribution is.

    Args:
        audits: one :class:`RDPAudit` (its batch of queries is summed), a composed curve,
            or a sequence of them; all on the same orders.

    Returns:
        :class:`RDPLowerBoundCurve`.

    Raises:
        TypeError: an element is not an audit or curve.
        ValueError: empty input, different orders, or failure probabilities summing to ≥ 1.

    Example:
        >>> a = rdp_two_cut([[9000, 1000]] * 2, [[7000, 3000]] * 2, [2], output_set=[0],
        ...                 confidence_level=per_query_confidence_level(0.95, 2))
        >>> curve = compose_rdp_lower_bounds(a)
        >>> curve.n_queries, round(curve.confidence_level, 6), np.round(curve.epsilons, 3)
        (2, 0.95, array([0.274]))
    """
    items = [audits] if isinstance(audits, (RDPAudit, RDPLowerBoundCurve)) else list(audits)
    if not items:
        raise ValueError("audits must contain at least one audit")
    orders = None
    total = None
    beta = 0.0
    n_q = 0
    methods: list[str] = []
    asym = False
    simul = True
    at_zero = True
    for i, item in enumerate(items):
        if isinstance(item, RDPAudit):
            eps = item.epsilons.reshape(-1, item.orders.size).sum(axis=0)
            q = item.n_queries
            beta += q * (1.0 - item.confidence_level)
            meths = [item.method]
        elif isinstance(item, RDPLowerBoundCurve):
            eps = item.epsilons
            q = item.n_queries
            beta += 1.0 - item.confidence_level
            meths = list(item.methods)
        else:
            raise TypeError(
                f"audits[{i}] must be an RDPAudit or RDPLowerBoundCurve, got {type(item).__name__}"
            )
        if orders is None:
            orders = item.orders
            total = np.zeros(orders.size)
        elif item.orders.shape != orders.shape or not np.array_equal(item.orders, orders):
            raise ValueError(f"orders of audits[{i}] differ from those of audits[0]")
        total = total + eps
        n_q += q
        methods += [m for m in meths if m not in methods]
        asym = asym or item.asymptotic
        simul = simul and item.simultaneous_over_orders
        at_zero = at_zero and item.valid_at_zero
    if beta >= 1.0:
        raise ValueError(
            f"confidence_level of the composed curve would be 1 - {beta:.4g} <= 0 (union bound "
            f"over {n_q} queries); run each query at per_query_confidence_level(level, {n_q})"
        )
    note = f"sum of {n_q} per-query lower bounds; confidence by the union bound."
    if asym:
        note += " Some contributions are only asymptotically valid."
    if not at_zero:
        note += (
            " Some contributions are invalid at zero divergence (bootstrap): summed over "
            "near-zero-leakage queries they can exceed the true divergence (paper 000 App. B)."
        )
    return RDPLowerBoundCurve(
        orders=np.asarray(orders),
        epsilons=np.asarray(total),
        confidence_level=1.0 - beta,
        n_queries=n_q,
        methods=tuple(methods),
        asymptotic=asym,
        simultaneous_over_orders=simul,
        note=note,
        valid_at_zero=at_zero,
    )


def rdp_lower_bound_to_dp(
    curve: RDPLowerBoundCurve | RDPAudit, delta: float, *, conversion: str = "balle2020"
) -> ConvertedRDPLowerBound:
    """Convert an RDP lower-bound curve to (ε, δ) **for display only**.

    Uses :func:`dpaudit.conversions.rdp_to_dp` (Balle et al. 2020 Thm 20, paper 000 Thm 1,
    or the standard Mironov conversion). That conversion maps an RDP *guarantee* to an
    (ε, δ) *guarantee*; applied to a lower bound it does not give a lower bound on the ε the
    mechanism satisfies at δ, and the result says so (``is_valid_dp_lower_bound=False``).
    Paper 000 plots such converted values next to converted upper bounds.

    Args:
        curve: a composed curve, or a single-query :class:`RDPAudit`.
        delta: δ in (0, 1).
        conversion: ``"balle2020"`` (default) or ``"standard"``.

    Returns:
        :class:`ConvertedRDPLowerBound`.

    Raises:
        TypeError: ``curve`` has the wrong type.
        ValueError: a batched audit (compose it first), δ ∉ (0, 1), unknown conversion.

    Example:
        >>> a = rdp_two_cut([9000, 1000], [7000, 3000], [2, 4, 8], output_set=[0])
        >>> res = rdp_lower_bound_to_dp(a, 1e-5)
        >>> res.is_valid_dp_lower_bound
        False
    """
    if isinstance(curve, RDPAudit):
        if curve.epsilons.ndim != 1:
            raise ValueError(
                f"curve must be a single-query audit (epsilons of shape (A,)), got shape "
                f"{curve.epsilons.shape}; compose a batch with compose_rdp_lower_bounds first"
            )
    elif not isinstance(curve, RDPLowerBoundCurve):
        raise TypeError(
            f"curve must be an RDPAudit or RDPLowerBoundCurve, got {type(curve).__name__}"
        )
    d = check_delta(delta, allow_zero=False)
    conv = rdp_to_dp(curve.orders, curve.epsilons, d, conversion=conversion)
    return ConvertedRDPLowerBound(
        epsilon=float(conv.epsilon),
        delta=d,
        order=float(conv.order),
        conversion=conv.conversion,
        rdp_confidence_level=curve.confidence_level,
        is_valid_dp_lower_bound=False,
        note=(
            "display only: an RDP-to-DP conversion maps guarantees (upper bounds) to "
            "guarantees; applied to an RDP lower bound it is not a lower bound on (epsilon, "
            "delta)."
        ),
    )
