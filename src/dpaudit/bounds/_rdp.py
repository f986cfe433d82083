"""Rényi-DP lower bounds for mechanisms with discrete outputs: fixed and chosen cuts.

Chadha, Jagielski, Papernot, Choquette-Choo & Nasr 2024 (*Auditing Private Prediction*,
arXiv:2402.09403, §4.2 and App. B). Given per-class output counts of a mechanism run on S
and on a neighbour S′, these audits bound ``D_α(μ₁ ‖ μ₂)`` from below at an array of orders
α > 1 with stated confidence (the formula is in :mod:`~dpaudit.bounds._cuts`):

* :func:`rdp_two_cut` — 2-cut ``(O, Oᶜ)`` with Clopper–Pearson intervals (their Eq. 3 and
  App. B): exact at every sample size and for all orders at once.
* :func:`rdp_k_cut` — k-cut with Goodman or Sison–Glaz simultaneous intervals (App. B
  Eq. 5): asymptotically valid only.
* :func:`rdp_audit` — either, with the output set or partition *chosen by the audit*:
  choosing it on the counts that are then bounded invalidates the bound, so the choice is
  paid for by a :class:`~dpaudit.bounds.Split` (held-out part, default),
  :class:`~dpaudit.bounds.Bonferroni` or :class:`~dpaudit.bounds.MultiSplit` selection and
  recorded in the result.

The confidence is split over the two distributions (and over the candidates paid for by
Bonferroni). Bootstrap variants are in :mod:`~dpaudit.bounds._rdp_bootstrap`, composition and
display conversion in :mod:`~dpaudit.bounds._rdp_compose`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from dpaudit._typing import ArrayLike, Progress, ProgressLike, RngLike
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_orders,
    check_progress,
    check_real,
    no_progress,
    track,
)
from dpaudit.bounds._cuts import (
    MAX_CLASSES_K_CUT,
    MAX_CLASSES_TWO_CUT,
    Counts,
    Partition,
    RDPAudit,
    all_output_sets,
    all_partitions,
    audit_result,
    candidate_bounds,
    check_output_set,
    check_partition,
    two_cut_partition,
)
from dpaudit.bounds._selection import (
    DEFAULT_SPLIT,
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
)

__all__ = ["rdp_audit", "rdp_k_cut", "rdp_two_cut"]

_CI_METHODS = ("two-cut", "k-cut-goodman", "k-cut-sison-glaz")

_KCUT_METHODS = ("goodman", "sison-glaz")


# ---------------------------------------------------------------------------------------------
# Fixed output set / partition
# ---------------------------------------------------------------------------------------------


def _choice(method: str) -> str:
    return "output set" if method.startswith("two-cut") else "partition"


def _fixed_audit(data: Counts, part: Partition, method: str, level: float) -> RDPAudit:
    """Audit with one candidate fixed in advance, by a confidence-interval method."""
    eps = candidate_bounds(data.c1, data.c2, (part,), data.lam, method, 1.0 - level)[..., 0, :]
    return audit_result(data, eps, method, level, fixed=part)


def rdp_two_cut(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    output_set: Sequence[int] | np.ndarray,
    confidence_level: float = 0.95,
) -> RDPAudit:
    """2-cut RDP lower bound with Clopper–Pearson intervals for a fixed output set.

    Chadha et al. 2024 (arXiv:2402.09403) §4.2 Eq. (3) and App. B: with ``p₁ = μ₁(O)``,
    ``p₂ = μ₂(O)`` bounded by two-sided Clopper–Pearson intervals at level ``1 − β/2`` each,
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
    data = Counts.check(counts, counts_neighbour, orders)
    level = check_confidence_level(confidence_level)
    part = _candidate(output_set, "two-cut", data.n_classes, "output_set")
    return _fixed_audit(data, part, "two-cut", level)


def rdp_k_cut(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    partition: Sequence[Sequence[int]] | None = None,
    method: str = "goodman",
    confidence_level: float = 0.95,
) -> RDPAudit:
    """k-cut RDP lower bound with simultaneous multinomial intervals.

    Chadha et al. 2024 (arXiv:2402.09403) App. B Eq. (5):
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
    data = Counts.check(counts, counts_neighbour, orders)
    level = check_confidence_level(confidence_level)
    check_choice("method", method, _KCUT_METHODS)
    return _fixed_audit(data, check_partition(partition, data.n_classes), f"k-cut-{method}", level)


# ---------------------------------------------------------------------------------------------
# The output set / partition chosen by the audit
# ---------------------------------------------------------------------------------------------


def _candidate(value: object, method: str, n_classes: int, name: str) -> Partition:
    """One candidate: an output set (2-cut) or a partition (k-cut), as a partition."""
    if method == "two-cut":
        return two_cut_partition(check_output_set(value, n_classes, name), n_classes)
    return check_partition(value, n_classes, name)


def _candidates(
    given: object, sel: Selection, method: str, n_classes: int
) -> tuple[Partition, ...]:
    """The candidates paid for: given (argument or ``Bonferroni.candidates``) or all."""
    from_selection = getattr(sel, "candidates", None)
    if given is not None and from_selection is not None:
        raise ValueError("give the candidates once: in candidates= or in Bonferroni(candidates)")
    given = given if given is not None else from_selection
    if given is None:
        limit = MAX_CLASSES_TWO_CUT if method == "two-cut" else MAX_CLASSES_K_CUT
        if n_classes > limit:
            what = "output sets" if method == "two-cut" else "partitions"
            raise ValueError(
                f"candidates must be given for more than {limit} classes "
                f"(got C={n_classes}); pass the {what} to try"
            )
        return tuple(
            all_output_sets(n_classes) if method == "two-cut" else all_partitions(n_classes)
        )
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise TypeError(
            f"candidates must be a sequence of output sets or partitions, got {given!r}"
        )
    given = list(given)
    if len(given) == 0:
        raise ValueError(f"candidates must be a non-empty sequence, got {given!r}")
    return tuple(_candidate(c, method, n_classes, f"candidates[{i}]") for i, c in enumerate(given))


def _query_chunks(n_rows: int, m: int, n_orders: int, cands: Sequence[Partition]) -> list[slice]:
    """Row slices keeping the ``(rows, M, A, K)`` intermediates under ~4 million floats."""
    k = max(len(p) for p in cands)
    per = max(1, 4_000_000 // max(1, m * n_orders * k))
    return [slice(i, min(i + per, n_rows)) for i in range(0, n_rows, per)]


def _bonferroni_audit(
    data: Counts, cands: tuple[Partition, ...], method: str, level: float, report: Progress
) -> RDPAudit:
    """Every candidate at failure probability β/M on all counts; the best at each order."""
    lam = data.lam
    m = len(cands)
    beta = 1.0 - level
    f1, f2 = data.c1.reshape(-1, data.n_classes), data.c2.reshape(-1, data.n_classes)
    eps = np.empty((f1.shape[0], lam.size))
    chosen = np.empty((f1.shape[0], lam.size), dtype=np.int64)
    chunks = _query_chunks(f1.shape[0], m, lam.size, cands)
    for rows in track(chunks, len(chunks), "RDP audit (Bonferroni)", report):
        bounds = candidate_bounds(f1[rows], f2[rows], cands, lam, method, beta / m)
        chosen[rows] = bounds.argmax(axis=-2)
        eps[rows] = np.take_along_axis(bounds, chosen[rows][:, None, :], axis=-2)[:, 0, :]
    batch = data.c1.shape[:-1]
    return audit_result(
        data,
        eps.reshape((*batch, lam.size)),
        method,
        level,
        selection=Bonferroni().record(_choice(method), n_candidates=m),
        candidates=cands,
        chosen=chosen.reshape((*batch, lam.size)),
        interval_level=1.0 - beta / (2.0 * m),
    )


#: numpy's multivariate hypergeometric sampler needs fewer samples than this per row; the
#: split of larger rows is binomial (:func:`_split_counts`).
HYPERGEOMETRIC_MAX_N = 10**9


def _split_counts(
    c: np.ndarray, fraction: float, gen: np.random.Generator, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Random split of each row's samples into a selection and a held-out part.

    Splitting i.i.d. samples at random gives two independent multinomial samples, so the
    held-out counts are independent of any choice made on the selection counts. A row of n
    samples puts ``k = round(fraction·n)`` of them in the selection part, drawn without
    replacement (multivariate hypergeometric counts), while numpy can:
    ``n <`` :data:`HYPERGEOMETRIC_MAX_N`. Larger rows send each sample to the selection part
    independently with probability ``fraction`` (binomial counts per class): given the part
    sizes, the two parts are again independent multinomial samples (the sizes are
    ``Bin(n, fraction)`` and independent of the labels), which is all the held-out bound
    needs. Rows below the limit keep the hypergeometric draws, hence every seeded number.
    """
    rows = c.reshape(-1, c.shape[-1])
    sel = np.empty_like(rows)
    for i, row in enumerate(rows):
        n = int(row.sum())
        if n < HYPERGEOMETRIC_MAX_N:
            k = round(fraction * n)
            _check_split_sizes(k, n, fraction, name)
            sel[i] = gen.multivariate_hypergeometric(row, k)
        else:
            sel[i] = gen.binomial(row, fraction)
            _check_split_sizes(int(sel[i].sum()), n, fraction, name)
    sel = sel.reshape(c.shape)
    return sel, c - sel


def _check_split_sizes(k: int, n: int, fraction: float, name: str) -> None:
    if k < 1 or k > n - 1:
        raise ValueError(
            f"Split(fraction={fraction}) leaves the selection or the held-out part empty "
            f"for a query of {name} with {n} samples"
        )


def _best_on_selection(
    s1: np.ndarray,
    s2: np.ndarray,
    cands: tuple[Partition, ...],
    crit_orders: np.ndarray,
    method: str,
    beta: float,
    report: Progress,
) -> np.ndarray:
    """Per query, the candidate with the best bound on the selection counts (flat index)."""
    n_classes = s1.shape[-1]
    crit_method = "two-cut" if method == "two-cut" else "k-cut-goodman"
    fs1, fs2 = s1.reshape(-1, n_classes), s2.reshape(-1, n_classes)
    best = np.empty(fs1.shape[0], dtype=np.int64)
    chunks = _query_chunks(fs1.shape[0], len(cands), crit_orders.size, cands)
    for rows in track(chunks, len(chunks), "RDP audit: choosing on the selection part", report):
        crit = candidate_bounds(fs1[rows], fs2[rows], cands, crit_orders, crit_method, beta)
        plug = candidate_bounds(fs1[rows], fs2[rows], cands, crit_orders, "plug-in", beta)
        # best bound on the selection part; ties (e.g. all 0) broken by the plug-in estimate
        keys = np.stack([plug.sum(axis=-1), crit.sum(axis=-1)])  # (2, rows, M)
        best[rows] = [np.lexsort(keys[:, i, :])[-1] for i in range(keys.shape[1])]
    return best


def _split_audit(
    data: Counts,
    cands: tuple[Partition, ...],
    method: str,
    level: float,
    *,
    sel: Split,
    crit_orders: np.ndarray,
    rng: RngLike,
    report: Progress,
) -> RDPAudit:
    """Choose one candidate per query on a random part of its samples, bound the rest."""
    lam, n_classes = data.lam, data.n_classes
    beta = 1.0 - level
    gen, seed = selection_generator(rng)
    s1, e1 = _split_counts(data.c1, sel.fraction, gen, "counts")
    s2, e2 = _split_counts(data.c2, sel.fraction, gen, "counts_neighbour")
    flat_best = _best_on_selection(s1, s2, cands, crit_orders, method, beta, report)
    flat_e1, flat_e2 = e1.reshape(-1, n_classes), e2.reshape(-1, n_classes)
    flat_eps = np.empty((flat_best.size, lam.size))
    for j in np.unique(flat_best):
        rows = np.flatnonzero(flat_best == j)
        flat_eps[rows] = candidate_bounds(
            flat_e1[rows], flat_e2[rows], (cands[j],), lam, method, beta
        )[:, 0, :]
    batch = data.c1.shape[:-1]
    best = flat_best.reshape(batch)
    chosen = np.broadcast_to(best[..., None], (*batch, lam.size)).astype(np.int64)
    return audit_result(
        data,
        flat_eps.reshape((*batch, lam.size)),
        method,
        level,
        selection=sel.record(_choice(method), n_candidates=len(cands), seed=seed),
        candidates=cands,
        chosen=np.array(chosen),
        bound_counts=e1,
        bound_counts_neighbour=e2,
        seed=seed,
    )


def _multi_split_audit(
    data: Counts,
    cands: tuple[Partition, ...],
    method: str,
    level: float,
    *,
    sel: MultiSplit,
    crit_orders: np.ndarray,
    rng: RngLike,
    report: Progress,
) -> RDPAudit:
    """The elementwise median of ``sel.num_splits`` split audits, each at ``1 − β/2``.

    Each split's curve holds at all orders at once with probability ≥ 1 − β/2; the median
    curve exceeds the truth at some order only if at least half of the splits' curves do
    there, so it too holds at all orders at once with probability ≥ 1 − β (Markov, as in
    :class:`~dpaudit.bounds.MultiSplit`). Per query, the choice and the held-out counts
    recorded are those of the split whose bound summed over the orders is the lower middle.
    """
    half = multi_split_level(level)
    seeds, seed = multi_split_seeds(sel.num_splits, rng)
    split = Split(sel.fraction)
    runs = []
    for s in track(seeds, len(seeds), "RDP audit: multi-split", report):
        one = _split_audit(
            data, cands, method, half, sel=split, crit_orders=crit_orders, rng=s,
            report=no_progress,
        )  # fmt: skip
        runs.append(one)
    eps = np.stack([r.epsilons for r in runs])  # (B, ..., A)
    _, rep = median_of_splits(eps.sum(axis=-1).reshape(len(runs), -1))  # (queries,)
    batch = data.c1.shape[:-1]
    queries = np.arange(rep.size)

    def pick(name: str) -> np.ndarray:
        arr = np.stack([getattr(r, name) for r in runs])
        flat = arr.reshape(len(runs), rep.size, *arr.shape[1 + len(batch) :])
        return flat[rep, queries].reshape(arr.shape[1:])

    return dataclasses.replace(
        runs[0],
        epsilons=np.median(eps, axis=0),
        confidence_level=level,
        selection=sel.record(_choice(method), n_candidates=len(cands), seed=seed),
        chosen=pick("chosen"),
        bound_counts=pick("bound_counts"),
        bound_counts_neighbour=pick("bound_counts_neighbour"),
        seed=seed,
    )


def rdp_audit(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    method: str = "two-cut",
    selection: Selection | str = DEFAULT_SPLIT,
    candidates: Sequence[Sequence[int]] | Sequence[Sequence[Sequence[int]]] | None = None,
    selection_order: float | None = None,
    confidence_level: float = 0.95,
    rng: RngLike = None,
    progress: ProgressLike = None,
) -> RDPAudit:
    """RDP audit with the output set (2-cut) or partition (k-cut) chosen by the audit.

    Choosing O on the counts that are then bounded breaks validity; the ``selection`` pays:

    * :class:`~dpaudit.bounds.Split` ``(fraction)`` (default, half): each query's samples
      are split at random with ``rng`` (the selection counts are multivariate-hypergeometric,
      or binomial per class for queries of 10⁹ samples or more, so both parts are independent
      multinomial samples); the candidate with the best bound
      on the selection part — summed over ``orders``, or at ``selection_order`` — is bounded
      on the held-out part only. One candidate per query, so the curve holds at all orders
      at once. For the k-cut methods the choice uses the Goodman bound (cheap; any rule is
      valid here).
    * :class:`~dpaudit.bounds.MultiSplit` ``(num_splits, fraction)``: the split audit on
      ``num_splits`` independent random splits, each at confidence ``1 − β/2``, and the
      median of their curves at each order (Meinshausen, Meier & Bühlmann 2009,
      arXiv:0811.2177, Thm 3.1); still simultaneous over orders. ``chosen`` and the counts
      bounded are those of the lower-middle split of each query.
    * :class:`~dpaudit.bounds.Bonferroni` ``(candidates=None)``: every candidate is bounded
      on all counts at failure probability ``β/M`` and the best is kept at each order
      (simultaneous over candidates, hence over orders).
    * :class:`~dpaudit.bounds.Explicit` ``(O or partition)``: fixed in advance, as
      :func:`rdp_two_cut` / :func:`rdp_k_cut`.

    Candidates (default, Chadha et al. 2024 §4.2 "all possible sets"): for the 2-cut, every
    non-empty proper subset of the classes up to complement (``2^{C−1} − 1``;
    C ≤ :data:`MAX_CLASSES_TWO_CUT`); for the k-cut, every partition into ≥ 2 cells
    (C ≤ :data:`MAX_CLASSES_K_CUT`). For larger C pass output sets (2-cut) or partitions
    (k-cut) fixed before seeing the counts, in ``candidates`` or ``Bonferroni(candidates)``.

    Args:
        counts: per-class counts under S, ``(C,)`` or ``(..., C)``.
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1.
        method: ``"two-cut"``, ``"k-cut-goodman"`` or ``"k-cut-sison-glaz"``.
        selection: a :class:`~dpaudit.bounds.Split`, :class:`~dpaudit.bounds.Bonferroni`,
            :class:`~dpaudit.bounds.MultiSplit` or :class:`~dpaudit.bounds.Explicit`
            strategy, or one of their names.
        candidates: output sets or partitions to choose from (default: all, see above).
        selection_order: order at which candidates are compared (split, multi-split); default:
            the sum of the bounds over ``orders``.
        confidence_level: confidence per query, including the selection.
        rng: randomness of the split (recorded as ``seed``).
        progress: a :class:`~dpaudit._typing.Progress` callback over chunks of queries,
            ``True`` for a rich bar, or None.

    Returns:
        :class:`RDPAudit` recording the candidates, the choice per query and order, the
        counts bounded and how the choice was paid for (``selection``).

    Raises:
        TypeError, ValueError: bad counts, orders, level, method, selection or candidates,
            or too many classes to enumerate candidates.

    Example:
        >>> res = rdp_audit([6000, 3000, 1000], [4000, 5000, 1000], [2, 5], rng=0)
        >>> res.selection.strategy, res.candidates[int(res.chosen[0])][0]
        ('split', (0,))
    """
    data = Counts.check(counts, counts_neighbour, orders)
    level = check_confidence_level(confidence_level)
    check_choice("method", method, _CI_METHODS)
    sel = as_selection(selection)
    report = check_progress(progress)
    crit_orders = data.lam
    if selection_order is not None:
        crit_orders = check_orders(
            check_real("selection_order", selection_order), "selection_order"
        )
    if isinstance(sel, Explicit):
        if candidates is not None:
            raise ValueError("candidates must not be given with an Explicit selection")
        part = _candidate(sel.value, method, data.n_classes, "selection.value")
        return _fixed_audit(data, part, method, level)
    cands = _candidates(candidates, sel, method, data.n_classes)
    if isinstance(sel, Bonferroni):
        return _bonferroni_audit(data, cands, method, level, report)
    if isinstance(sel, Split):
        return _split_audit(
            data, cands, method, level, sel=sel, crit_orders=crit_orders, rng=rng, report=report
        )
    if isinstance(sel, MultiSplit):
        return _multi_split_audit(
            data, cands, method, level, sel=sel, crit_orders=crit_orders, rng=rng, report=report
        )
    raise TypeError(f"selection must be Explicit, Split, Bonferroni or MultiSplit, got {sel!r}")
