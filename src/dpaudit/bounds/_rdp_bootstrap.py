"""Bootstrap RDP audits of discrete outputs (asymptotic; for comparison, not for verdicts).

Chadha, Jagielski, Papernot, Choquette-Choo & Nasr 2024 (arXiv:2402.09403, App. B, the "2-cut
Bootstrap audit" and "k-cut Bootstrap audit"): the percentile-bootstrap lower confidence limit
of the plug-in divergence between the cell distributions of a fixed output set or partition,
each side resampled as Multinomial(n, p̂). **Asymptotic, invalid when the true divergence is
0, and valid order by order only** (their App. B, Table 2); every result says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpaudit._rng import block_seeds, seed_entropy
from dpaudit._typing import ArrayLike, Progress, ProgressLike, RngLike
from dpaudit._validate import (
    check_confidence_level,
    check_memory,
    check_positive_int,
    check_progress,
    check_rng,
    check_work,
    track,
)
from dpaudit.bounds._bootstrap import bootstrap_counts
from dpaudit.bounds._cuts import (
    Counts,
    Partition,
    RDPAudit,
    audit_result,
    check_output_set,
    check_partition,
    cut_bound,
    membership,
    two_cut_partition,
)

__all__ = ["rdp_k_cut_bootstrap", "rdp_two_cut_bootstrap"]

#: Largest bootstrap work of one call: queries × ``n_resamples`` × orders × cells, each term
#: a log-sum-exp step over a short cell axis (~100–200 ns, measured: 6·10⁶ terms in 0.75 s,
#: 3·10⁷ in 6.4 s on a shared machine), so the cap is a few seconds. Raise
#: ``dpaudit.bounds._rdp_bootstrap.MAX_RDP_BOOTSTRAP_WORK`` to allow more.
MAX_RDP_BOOTSTRAP_WORK = 10**7
#: Resample × order × cell terms the statistic evaluates at once: the cut divergence's
#: intermediates (~32 bytes a term) stay near 128 MiB whatever the order grid.
_STATISTIC_CHUNK_TERMS = 2**22

_NOTE_BOOT = (
    "bootstrap: asymptotic, invalid when the true divergence is 0 and valid order by order "
    "only (Chadha et al. 2024, arXiv:2402.09403, App. B, Table 2); do not use it to refute "
    "a claim."
)


def _bootstrap_audit(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    cells: object,
    *,
    two_cut: bool,
    confidence_level: float,
    n_resamples: int,
    rng: RngLike,
    progress: ProgressLike,
) -> RDPAudit:
    """Validate, then bound each query by the bootstrap of its plug-in cut divergence."""
    data = Counts.check(counts, counts_neighbour, orders)
    level = check_confidence_level(confidence_level)
    if two_cut:
        part = two_cut_partition(check_output_set(cells, data.n_classes), data.n_classes)
    else:
        part = check_partition(cells, data.n_classes)
    n_resamples = check_positive_int("n_resamples", n_resamples)
    check_memory(
        16.0 * n_resamples * 2 * len(part), f"the RDP bootstrap with n_resamples={n_resamples}"
    )
    queries = data.c1.size // max(data.c1.shape[-1], 1)
    a = data.lam.size
    check_memory(  # the statistic's (R, A) bound and the percentile's sorted copy, per query
        16.0 * n_resamples * a + 32.0 * _STATISTIC_CHUNK_TERMS,
        f"the RDP bootstrap with n_resamples={n_resamples} at orders=<{a} orders>",
    )
    check_work(
        float(queries) * n_resamples * a * len(part),
        MAX_RDP_BOOTSTRAP_WORK,
        f"the RDP bootstrap of {queries} queries with n_resamples={n_resamples} at "
        f"orders=<{a} orders> over {len(part)} cells",
        "terms",
        "lower n_resamples or pass fewer orders, or raise "
        "dpaudit.bounds._rdp_bootstrap.MAX_RDP_BOOTSTRAP_WORK",
    )
    check_rng(rng)
    report = check_progress(progress)
    method = "two-cut-bootstrap" if two_cut else "k-cut-bootstrap"
    eps = _bootstrap_rows(data, part, level, n_resamples, rng, report)
    return audit_result(
        data,
        eps,
        method,
        level,
        fixed=part,
        interval_level=level,
        asymptotic=True,
        valid_at_zero=False,
        simultaneous_over_orders=False,
        seed=seed_entropy(rng),
        n_resamples=n_resamples,
        note=_NOTE_BOOT,
    )


def _bootstrap_rows(
    data: Counts, part: Partition, level: float, n_resamples: int, rng: RngLike, report: Progress
) -> np.ndarray:
    """Percentile-bootstrap lower limits of every query, shape ``(..., A)``."""
    c1, c2, lam = data.c1, data.c2, data.lam
    mem = membership([part], c1.shape[-1])[0]  # (K, C)

    def statistic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        p1 = a / a.sum(axis=-1, keepdims=True)
        p2 = b / b.sum(axis=-1, keepdims=True)
        rows = int(np.prod(p1.shape[:-1], dtype=np.int64))
        step = max(1, _STATISTIC_CHUNK_TERMS // max(rows * p1.shape[-1], 1))
        if step >= lam.size:
            return cut_bound(p1, p2, lam)  # (R, A)
        out = np.empty((*p1.shape[:-1], lam.size))
        for j in range(0, lam.size, step):  # orders in chunks: bounded intermediates
            out[..., j : j + step] = cut_bound(p1, p2, lam[j : j + step])
        return out

    rows1 = c1.reshape(-1, c1.shape[-1]).astype(np.float64) @ mem.T
    rows2 = c2.reshape(-1, c2.shape[-1]).astype(np.float64) @ mem.T
    n = rows1.shape[0]
    seeds = block_seeds(rng, n)
    eps = np.empty((n, lam.size))
    for i in track(range(n), n, "bootstrap RDP audit", report):
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
    return eps.reshape((*c1.shape[:-1], lam.size))


def rdp_two_cut_bootstrap(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    output_set: Sequence[int] | np.ndarray,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: RngLike = None,
    progress: ProgressLike = None,
) -> RDPAudit:
    """2-cut bootstrap audit (Chadha et al. 2024, arXiv:2402.09403, App. B).

    The plug-in 2-cut ``D_α(Bern(p̂₁)‖Bern(p̂₂))`` for a fixed O, with its lower confidence
    limit read off the percentile bootstrap (each side resampled as Multinomial(n, p̂)).
    **Asymptotic, invalid when the true divergence is 0, and valid order by order only**
    (App. B Table 2); the result says so (``asymptotic``, ``valid_at_zero=False``,
    ``simultaneous_over_orders=False``).

    Args:
        counts: per-class counts under S, ``(C,)`` or ``(..., C)``.
        counts_neighbour: per-class counts under S′, same shape.
        orders: Rényi orders α > 1.
        output_set: the set O (class indices or a boolean mask), fixed in advance.
        confidence_level: nominal level, in (0, 1).
        n_resamples: bootstrap resamples per query, ≥ 1.
        rng: seed or generator (one independent stream per query).
        progress: a :class:`~dpaudit._typing.Progress` callback over queries, ``True`` for
            a rich bar, or None.

    Returns:
        :class:`RDPAudit` with ``method="two-cut-bootstrap"``.

    Raises:
        TypeError, ValueError: as :func:`~dpaudit.bounds.rdp_two_cut`, plus a bad
            ``n_resamples``.

    Example:
        >>> res = rdp_two_cut_bootstrap([9000, 1000], [7000, 3000], [2], output_set=[0], rng=0)
        >>> res.valid_at_zero, round(float(res.epsilons[0]), 2)
        (False, 0.16)
    """
    return _bootstrap_audit(
        counts,
        counts_neighbour,
        orders,
        output_set,
        two_cut=True,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=rng,
        progress=progress,
    )


def rdp_k_cut_bootstrap(
    counts: ArrayLike,
    counts_neighbour: ArrayLike,
    orders: ArrayLike,
    *,
    partition: Sequence[Sequence[int]] | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: RngLike = None,
    progress: ProgressLike = None,
) -> RDPAudit:
    """k-cut bootstrap audit (Chadha et al. 2024, arXiv:2402.09403, App. B).

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
        partition: cells (default finest), fixed in advance.
        confidence_level: nominal level.
        n_resamples: resamples per query.
        rng: seed or generator.
        progress: as :func:`rdp_two_cut_bootstrap`.

    Returns:
        :class:`RDPAudit` with ``method="k-cut-bootstrap"``.

    Raises:
        TypeError, ValueError: as :func:`~dpaudit.bounds.rdp_k_cut`.

    Example:
        >>> res = rdp_k_cut_bootstrap([9000, 600, 400], [7000, 1800, 1200], [2], rng=0)
        >>> res.method, round(float(res.epsilons[0]), 2)
        ('k-cut-bootstrap', 0.16)
    """
    return _bootstrap_audit(
        counts,
        counts_neighbour,
        orders,
        partition,
        two_cut=False,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        rng=rng,
        progress=progress,
    )
