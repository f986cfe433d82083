"""The computational core of Private-kNN: subsampling maths, exact neighbour ranking, votes.

Private-kNN (Zhu, Yu, Chandraker, Wang 2020, "Private-kNN: Practical Differential Privacy for
Computer Vision", CVPR 2020) answers a query q with the noisy argmax of the labels of the k
nearest neighbours of q among a random subsample of the training set, drawn afresh for every
query. With **Poisson subsampling** at rate γ (each point kept independently, what the
subsampled-Gaussian accountant assumes), rank the training points by their distance to q
(ties by index); the k voters are the first k kept points, so the gaps between kept ranks are
i.i.d. Geometric(γ):

* the point of rank r votes with probability ``ν(r) = γ·P(Bin(r−1, γ) ≤ k−1)``, which is γ
  for r ≤ k (Chadha et al. 2024, "Auditing Private Prediction", arXiv:2402.09403, §6 and
  App. D.3: ``Σ_{i<k} C(r−1, i) γ^{i+1} (1−γ)^{r−1−i}``) — :func:`topk_inclusion_probability`;
* the k-th voter has rank t with the negative-binomial probability
  ``C(t−1, k−1) γ^k (1−γ)^{t−k}`` — :func:`kth_neighbour_probabilities`;
* beyond the horizon ``R = k + NegBin_{1−τ}(k, γ)`` (:func:`rank_horizon`) a point votes with
  total probability ≤ τ = 1e-12, so only the R nearest neighbours of each query are ranked.

The reference implementation instead draws ``round(γ·n)`` teachers *with replacement*
(``sampling="with-replacement"`` here): a point can then vote several times, which the
Poisson-subsampling analysis does not cover.

Votes are drawn for all queries at once (:func:`poisson_topk_ranks`: k geometric gaps per
query, ``O(n_Q·k)`` random numbers per draw, no distance computation) from the ranked lists
of :func:`ranked_neighbours` (blocked float64 distances, partial sort, exact tie order).
:func:`knn_votes_loop` is the plain per-query loop (subsample, distances, partial sort) the
benchmark compares with.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_array, check_positive_int

__all__ = [
    "RANK_TAIL",
    "SAMPLINGS",
    "RankedNeighbours",
    "check_features",
    "check_sampling_rate",
    "draw_votes",
    "histograms",
    "knn_votes_loop",
    "kth_neighbour_probabilities",
    "poison_ranks",
    "poisson_topk_ranks",
    "rank_horizon",
    "ranked_neighbours",
    "replacement_topk_ranks",
    "short_sample_probability",
    "topk_inclusion_probability",
]

#: Total probability left beyond the ranked horizon (and of a short sample).
RANK_TAIL = 1e-12
#: How teachers are sampled per query.
SAMPLINGS: tuple[str, ...] = ("poisson", "with-replacement")
_BLOCK_BYTES = 64 * 2**20


# =============================================================================================
# Subsampling maths
# =============================================================================================


def check_sampling_rate(value: object, name: str = "sampling_rate") -> float:
    """γ ∈ (0, 1] as a float, else ValueError/TypeError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a number in (0, 1], got {value!r}")
    g = float(value)
    if not (0.0 < g <= 1.0):
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return g


def topk_inclusion_probability(rank: ArrayLike, k: int, sampling_rate: float) -> FloatArray:
    """Probability ν that the training point of rank r is among the k voters of a query.

    ``ν(r) = γ·P(Bin(r−1, γ) ≤ k−1)``: the point must be kept (γ) and fewer than k of the
    r−1 closer points kept (Chadha et al. 2024, arXiv:2402.09403, §6: γ if r ≤ k, else
    ``Σ_{i=0}^{k−1} C(r−1, i) γ^{i+1} (1−γ)^{r−1−i}``).

    Args:
        rank: r ≥ 1 (any shape, integers).
        k: voters per query ≥ 1.
        sampling_rate: γ ∈ (0, 1].

    Returns:
        ν with the shape of ``rank`` (exactly γ where r ≤ k).

    Raises:
        ValueError: r < 1 or non-integer, k < 1, γ ∉ (0, 1].

    Example:
        >>> topk_inclusion_probability([1, 200, 201], 200, 0.2).round(6).tolist()
        [0.2, 0.2, 0.2]
        >>> float(topk_inclusion_probability(1001, 200, 0.2).round(4))
        0.0975
    """
    r = np.asarray(rank)
    if r.size and (not np.all(np.isfinite(r)) or np.any(r != np.round(r)) or np.any(r < 1)):
        raise ValueError(f"rank must hold integers >= 1, got {rank!r}")
    k = check_positive_int("k", k)
    g = check_sampling_rate(sampling_rate)
    r = r.astype(np.int64)
    out = g * stats.binom.cdf(k - 1, r - 1, g)
    return np.where(r <= k, g, out)


def kth_neighbour_probabilities(max_rank: int, k: int, sampling_rate: float) -> FloatArray:
    """``P(the k-th voter has rank t)`` for t = 1..max_rank (0 for t < k).

    Negative binomial: ``C(t−1, k−1) γ^k (1−γ)^{t−k}`` (the k-th kept point among ranked
    training points). Sums to ``P(Bin(max_rank, γ) ≥ k)``.

    Args:
        max_rank: number of ranks ≥ 1.
        k: voters ≥ 1.
        sampling_rate: γ ∈ (0, 1].

    Returns:
        ``(max_rank,)`` probabilities.

    Example:
        >>> kth_neighbour_probabilities(4, 2, 0.5).round(12).tolist()
        [0.0, 0.25, 0.25, 0.1875]
    """
    n = check_positive_int("max_rank", max_rank)
    k = check_positive_int("k", k)
    g = check_sampling_rate(sampling_rate)
    t = np.arange(1, n + 1)
    return np.where(t >= k, stats.nbinom.pmf(t - k, k, g), 0.0)


def rank_horizon(k: int, sampling_rate: float, num_points: int, tail: float = RANK_TAIL) -> int:
    """The number R of ranked neighbours beyond which votes have total probability ≤ ``tail``.

    ``R = k + NegBin.isf(tail; k, γ)`` (``P(k-th voter beyond R) = P(Bin(R, γ) < k) ≤ tail``),
    capped at ``num_points``.

    Example:
        >>> rank_horizon(200, 0.2, 60000)
        1520
        >>> rank_horizon(5, 1.0, 100)
        5
    """
    k = check_positive_int("k", k)
    g = check_sampling_rate(sampling_rate)
    n = check_positive_int("num_points", num_points)
    if g == 1.0:
        return min(k, n)
    extra = stats.nbinom.isf(tail, k, g)
    r = k + int(extra) + 1
    while r > k and stats.binom.cdf(k - 1, r - 1, g) <= tail:
        r -= 1  # isf is conservative by a few ranks
    return int(min(r, n))


def short_sample_probability(k: int, sampling_rate: float, num_points: int) -> float:
    """``P(Bin(n, γ) < k)``: the Poisson sample holds fewer than k points."""
    return float(stats.binom.cdf(k - 1, num_points, sampling_rate))


# =============================================================================================
# Features and neighbour ranking
# =============================================================================================


def check_features(name: str, value: ArrayLike, *, width: int | None = None) -> FloatArray:
    """A finite 2-d float64 feature matrix (rows = points), optionally of a given width.

    Raises:
        ValueError: not 2-d, empty, NaN/inf, or a width other than ``width``.
        TypeError: non-numeric input (e.g. raw text: embed it first).
    """
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "USO":
        raise TypeError(
            f"{name} must be a numeric feature matrix, got dtype {arr.dtype} (embed text with "
            "dpaudit.data.features first)"
        )
    x = check_array(name, arr, ndim=2)
    if width is not None and x.shape[1] != width:
        raise ValueError(
            f"{name} must have {width} feature columns (the training features' width), "
            f"got {x.shape[1]}"
        )
    return x


def _sq_norms(x: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, x)


def _sq_distances(q: np.ndarray, q_norm: np.ndarray, x: np.ndarray, x_norm: np.ndarray):
    d = q_norm[:, None] - 2.0 * (q @ x.T) + x_norm[None, :]
    np.maximum(d, 0.0, out=d)
    return d


@dataclasses.dataclass(frozen=True, eq=False)
class RankedNeighbours(ResultMixin):
    """The R nearest training points of each query, in order (distance, then index).

    Attributes:
        index: training-row indices, ``(n_q, R)``.
        sq_distance: their squared Euclidean distances, ``(n_q, R)``, non-decreasing.
        labels: their labels, ``(n_q, R)``.
        num_points: n, the training-set size.
    """

    index: IntArray
    sq_distance: FloatArray
    labels: IntArray
    num_points: int

    @property
    def depth(self) -> int:
        """R."""
        return int(self.index.shape[1])

    def rows(self, rows: ArrayLike) -> RankedNeighbours:
        """The ranked lists of a subset of the queries."""
        r = np.asarray(rows, dtype=np.int64)
        return RankedNeighbours(self.index[r], self.sq_distance[r], self.labels[r], self.num_points)


def _rank_block(d: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and distances of the ``depth`` smallest per row, ordered (distance, index)."""
    n = d.shape[1]
    if depth >= n:
        idx = np.broadcast_to(np.arange(n), d.shape).copy()
    else:
        idx = np.sort(np.argpartition(d, depth - 1, axis=1)[:, :depth], axis=1)
        dd = np.take_along_axis(d, idx, axis=1)
        thr = dd.max(axis=1)
        # Ties at the boundary: the partition may have kept a higher index; redo those rows.
        ties = np.flatnonzero(np.sum(d <= thr[:, None], axis=1) > depth)
        for i in ties:
            cand = np.flatnonzero(d[i] <= thr[i])
            order = np.lexsort((cand, d[i, cand]))[:depth]
            idx[i] = np.sort(cand[order])
    dd = np.take_along_axis(d, idx, axis=1)
    order = np.argsort(dd, axis=1, kind="stable")  # idx ascending → ties by index
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dd, order, axis=1)


def ranked_neighbours(
    features: ArrayLike, labels: ArrayLike, queries: ArrayLike, depth: int
) -> RankedNeighbours:
    """Exact ranking of the ``depth`` nearest training points of every query.

    Squared Euclidean distances ``‖q‖² − 2 q·x + ‖x‖²`` in float64, computed in blocks of
    queries (≤ 64 MiB of distances at a time), then a partial sort; ties are ordered by
    training index (the tie rule of the whole system).

    Args:
        features: training features ``(n, d)``.
        labels: training labels ``(n,)``.
        queries: query features ``(n_q, d)``.
        depth: R ≥ 1 (capped at n).

    Returns:
        :class:`RankedNeighbours`.

    Example:
        >>> rn = ranked_neighbours([[0.0], [2.0], [1.0]], [0, 1, 0], [[0.9]], 2)
        >>> rn.index.tolist(), rn.labels.tolist()
        ([[2, 0]], [[0, 0]])
    """
    x = check_features("features", features)
    q = check_features("queries", queries, width=x.shape[1])
    y = np.asarray(labels, dtype=np.int64)
    if y.shape != (x.shape[0],):
        raise ValueError(f"labels must have shape ({x.shape[0]},), got {y.shape}")
    r = min(check_positive_int("depth", depth), x.shape[0])
    xn, qn = _sq_norms(x), _sq_norms(q)
    block = max(1, _BLOCK_BYTES // (8 * x.shape[0]))
    idx = np.empty((q.shape[0], r), dtype=np.int64)
    dist = np.empty((q.shape[0], r))
    for s in range(0, q.shape[0], block):
        d = _sq_distances(q[s : s + block], qn[s : s + block], x, xn)
        idx[s : s + block], dist[s : s + block] = _rank_block(d, r)
    return RankedNeighbours(idx, dist, y[idx], int(x.shape[0]))


def poison_ranks(ranked: RankedNeighbours, queries: ArrayLike, point: ArrayLike) -> IntArray:
    """Rank r_q of an added point among the training points, for each query.

    ``r_q = 1 + #{training points at distance ≤ d(q, point)}`` (an added point comes after
    the training points it ties with). Ranks beyond the horizon are returned as R + 1 (their
    inclusion probability is below the horizon's tail anyway).

    Args:
        ranked: the queries' ranked neighbours.
        queries: query features ``(n_q, d)`` (the same rows, in the same order).
        point: the added point's features ``(d,)``.

    Returns:
        int64 ranks ``(n_q,)``.
    """
    q = check_features("queries", queries)
    p = check_array("point", point, ndim=1)
    if p.size != q.shape[1]:
        raise ValueError(f"point must have {q.shape[1]} features, got {p.size}")
    if q.shape[0] != ranked.index.shape[0]:
        raise ValueError(
            f"queries must have the {ranked.index.shape[0]} rows of the ranked lists, "
            f"got {q.shape[0]}"
        )
    d = _sq_distances(q, _sq_norms(q), p[None, :], _sq_norms(p[None, :]))[:, 0]
    below = np.sum(ranked.sq_distance <= d[:, None], axis=1)
    return (below + 1).astype(np.int64)


# =============================================================================================
# Drawing the voters
# =============================================================================================


def poisson_topk_ranks(
    num_queries: int, k: int, sampling_rate: float, depth: int, gen: np.random.Generator
) -> IntArray:
    """1-based ranks of the k voters of each query under Poisson subsampling (one draw).

    The gaps between kept ranks are i.i.d. Geometric(γ), so the voters' ranks are the
    cumulative sums of k geometric gaps. Rows whose k-th voter falls beyond ``depth`` (an
    event of probability ≤ ``RANK_TAIL`` when ``depth`` is :func:`rank_horizon`) are drawn
    again.

    Returns:
        ``(num_queries, k)`` increasing ranks in ``1..depth``.
    """
    ranks = np.cumsum(gen.geometric(sampling_rate, size=(num_queries, k)), axis=1)
    bad = np.flatnonzero(ranks[:, -1] > depth)
    while bad.size:
        ranks[bad] = np.cumsum(gen.geometric(sampling_rate, size=(bad.size, k)), axis=1)
        bad = bad[ranks[bad, -1] > depth]
    return ranks


def replacement_topk_ranks(
    num_queries: int, k: int, draws: int, num_points: int, depth: int, gen: np.random.Generator
) -> IntArray:
    """Ranks of the k voters when ``draws`` teachers are sampled *with replacement* from
    ``num_points`` (the reference implementation of Zhu et al. 2020): the k smallest ranks
    of the draws, with multiplicity.

    The draws landing among the ``depth`` nearest are ``Bin(draws, depth/n)`` uniform ranks;
    rows with fewer than k of them are drawn again.

    Returns:
        ``(num_queries, k)`` non-decreasing ranks (repeats = a point voting several times).
    """
    out = np.empty((num_queries, k), dtype=np.int64)
    p = min(1.0, depth / num_points)
    todo = np.arange(num_queries)
    while todo.size:
        counts = gen.binomial(draws, p, size=todo.size)
        ok = counts >= k
        for row, c in zip(todo[ok], counts[ok], strict=True):
            out[row] = np.sort(gen.integers(1, depth + 1, size=c))[:k]
        todo = todo[~ok]
    return out


def histograms(labels: IntArray, num_classes: int) -> IntArray:
    """Vote histograms ``(..., C)`` of label arrays ``(..., k)``."""
    lab = np.asarray(labels, dtype=np.int64)
    lead = lab.shape[:-1]
    flat = lab.reshape(-1, lab.shape[-1])
    offs = (np.arange(flat.shape[0]) * num_classes)[:, None]
    counts = np.bincount((flat + offs).ravel(), minlength=flat.shape[0] * num_classes)
    return counts.reshape(*lead, num_classes)


def knn_votes_loop(
    features: ArrayLike,
    labels: ArrayLike,
    queries: ArrayLike,
    *,
    k: int,
    sampling_rate: float,
    num_classes: int,
    rng: RngLike = None,
) -> IntArray:
    """Baseline: Private-kNN votes by a plain per-query loop (one Poisson subsample draw).

    For each query: keep each training point with probability γ, compute the distances to
    the kept points, partial-sort, count the k nearest labels. Same law as the vectorised
    draw from :func:`ranked_neighbours` + :func:`poisson_topk_ranks`; used by the benchmark
    and as a test oracle.

    Returns:
        ``(n_q, C)`` vote histograms (fewer than k votes if the sample is smaller than k).
    """
    x = check_features("features", features)
    q = check_features("queries", queries, width=x.shape[1])
    y = np.asarray(labels, dtype=np.int64)
    gen = as_generator(rng)
    out = np.zeros((q.shape[0], num_classes), dtype=np.int64)
    xn = _sq_norms(x)
    for i in range(q.shape[0]):
        keep = np.flatnonzero(gen.random(x.shape[0]) < sampling_rate)
        d = _sq_distances(q[i : i + 1], _sq_norms(q[i : i + 1]), x[keep], xn[keep])[0]
        kk = min(k, keep.size)
        if kk == 0:
            continue
        top = np.argpartition(d, kk - 1)[:kk] if kk < keep.size else np.arange(keep.size)
        out[i] = np.bincount(y[keep[top]], minlength=num_classes)
    return out


# =============================================================================================
# Votes with and without an added point (coupled draws)
# =============================================================================================


def _merge_point(train_ranks: np.ndarray, copies: int, rank: int, k: int) -> tuple[np.ndarray, int]:
    """Top-k of training voters (sorted ranks) plus ``copies`` of a point placed just before
    training rank ``rank``: the training ranks kept and the point's number of votes."""
    closer = int(np.searchsorted(train_ranks, rank, side="left"))  # training ranks < rank
    first = min(closer, k)
    votes = min(copies, k - first)
    rest = k - first - votes
    kept = np.concatenate([train_ranks[:first], train_ranks[first : first + rest]])
    return kept, votes


def draw_votes(
    labels: IntArray,
    *,
    k: int,
    sampling_rate: float,
    num_classes: int,
    gen: np.random.Generator,
    rows: int | None = None,
    sampling: str = "poisson",
    num_points: int | None = None,
    point_rank: ArrayLike | None = None,
    point_label: int | None = None,
) -> tuple[IntArray, IntArray | None]:
    """One draw of the votes of each row's query under S and, coupled, under S′ = S ∪ {point}.

    Row i is one query with ranked neighbour labels ``labels[i]`` (its R nearest training
    points), or every row the same query when ``labels`` is 1-d (``rows`` draws). Poisson
    sampling: the voters are the first k kept ranks (:func:`poisson_topk_ranks`); the point
    (rank ``point_rank``, label ``point_label``) is kept with probability γ and then votes iff
    fewer than k training voters are closer, displacing the k-th. With replacement:
    ``m = round(γ·n)`` draws from the n training points under S and ``m′ = round(γ·(n+1))``
    draws from the n + 1 points under S′, coupled by replacing the point's draws with fresh
    training draws (and dropping one uniformly random draw when m′ = m + 1), so that each
    side has its exact law.

    Args:
        labels: ``(B, R)`` ranked labels, or ``(R,)`` for one query.
        k: voters per query.
        sampling_rate: γ.
        num_classes: C.
        gen: the generator.
        rows: number of draws B when ``labels`` is 1-d.
        sampling: ``"poisson"`` or ``"with-replacement"``.
        num_points: n (with replacement only).
        point_rank: ranks r of the added point, ``(B,)`` or a scalar (None: no S′).
        point_label: its label.

    Returns:
        ``(H_S, H_S′)`` histograms ``(B, C)`` (``H_S′`` None without a point).
    """
    lab2 = np.asarray(labels)
    one = lab2.ndim == 1
    b = int(rows) if one else lab2.shape[0]
    depth = lab2.shape[-1]
    with_point = point_rank is not None
    if sampling != "poisson":
        return _replacement_votes(
            lab2,
            b,
            k,
            sampling_rate,
            num_classes,
            gen,
            int(num_points or 0),
            point_rank,
            point_label,
        )
    ranks = poisson_topk_ranks(b, k, sampling_rate, depth, gen)
    lab = lab2[ranks - 1] if one else np.take_along_axis(lab2, ranks - 1, axis=1)
    h = histograms(lab, num_classes)
    if not with_point:
        return h, None
    kept = gen.random(b) < sampling_rate
    inside = kept & (ranks[:, -1] >= np.asarray(point_rank))
    h2 = h.copy()
    idx = np.flatnonzero(inside)
    np.add.at(h2, (idx, np.full(idx.size, int(point_label))), 1)
    np.add.at(h2, (idx, lab[idx, -1]), -1)
    return h, h2


def _replacement_votes(labels, b, k, sampling_rate, num_classes, gen, n, point_rank, point_label):
    """With-replacement votes of :func:`draw_votes` (one row at a time)."""
    depth = labels.shape[-1]
    m = max(1, round(sampling_rate * n))
    m2 = max(1, round(sampling_rate * (n + 1)))
    p_land = min(1.0, depth / n)
    h = np.zeros((b, num_classes), dtype=np.int64)
    if point_rank is None:
        ranks = replacement_topk_ranks(b, k, m, n, depth, gen)
        lab = labels[ranks - 1] if labels.ndim == 1 else np.take_along_axis(labels, ranks - 1, 1)
        return histograms(lab, num_classes), None
    h2 = np.zeros((b, num_classes), dtype=np.int64)
    ranks_pt = np.broadcast_to(np.asarray(point_rank, dtype=np.int64), (b,))
    for i in range(b):
        row = labels if labels.ndim == 1 else labels[i]
        while True:
            copies = int(gen.binomial(m2, 1.0 / (n + 1)))
            others = np.sort(gen.integers(1, depth + 1, size=gen.binomial(m2 - copies, p_land)))
            extra = gen.integers(1, depth + 1, size=gen.binomial(copies, p_land))
            s_ranks = np.concatenate([others, extra])
            if m2 == m + 1:  # S has one draw fewer: drop a uniformly random draw
                u = int(gen.integers(m2))
                if u < others.size:
                    s_ranks = np.delete(s_ranks, u)
                elif m2 - copies <= u < m2 - copies + extra.size:
                    s_ranks = np.delete(s_ranks, others.size + u - (m2 - copies))
            s_ranks = np.sort(s_ranks)
            kept, votes = _merge_point(others, copies, int(ranks_pt[i]), k)
            if s_ranks.size >= k and kept.size + votes == k:
                break
        h[i] = np.bincount(row[s_ranks[:k] - 1], minlength=num_classes)
        h2[i] = np.bincount(row[kept - 1], minlength=num_classes)
        h2[i, int(point_label)] += votes
    return h, h2
