"""Private-kNN's subsampling maths, neighbour ranking and vote draws
(dpaudit.systems.private_prediction.knn)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpaudit.systems.private_prediction.knn import (
    RANK_TAIL,
    draw_votes,
    histograms,
    knn_votes_loop,
    kth_neighbour_probabilities,
    poison_ranks,
    poisson_topk_ranks,
    rank_horizon,
    ranked_neighbours,
    replacement_topk_ranks,
    topk_inclusion_probability,
)

# (r, k, γ): ranks inside and beyond the top k, small and paper-sized k, several rates.
CASES = [
    (1, 1, 0.3),
    (3, 1, 0.3),
    (5, 5, 0.5),
    (6, 5, 0.5),
    (12, 5, 0.5),
    (20, 5, 0.2),
    (40, 10, 0.25),
    (60, 10, 0.25),
    (150, 20, 0.1),
    (201, 200, 0.2),
    (1000, 200, 0.2),
    (1100, 200, 0.2),
]


def _paper_sum(r: int, k: int, g: Fraction) -> Fraction:
    """Chadha et al. 2024 App. D.3, exactly in rationals: γ if r ≤ k, else the binomial sum."""
    if r <= k:
        return g
    return sum(math.comb(r - 1, i) * g ** (i + 1) * (1 - g) ** (r - 1 - i) for i in range(k))


def test_inclusion_equals_gamma_inside_top_k():
    for k in (1, 7, 200):
        for g in (0.05, 0.2, 1.0):
            nu = topk_inclusion_probability(np.arange(1, k + 1), k, g)
            assert np.all(nu == g)


@pytest.mark.parametrize(("r", "k", "g"), CASES)
def test_inclusion_matches_the_papers_sum_in_exact_arithmetic(r, k, g):
    exact = float(_paper_sum(r, k, Fraction(g).limit_denominator(10**6)))
    assert topk_inclusion_probability(r, k, g) == pytest.approx(exact, rel=1e-10, abs=1e-300)


def test_inclusion_matches_monte_carlo_on_twelve_cases():
    """P(the rank-r point is among the first k kept ranks), simulated with explicit coins."""
    gen = np.random.default_rng(7)
    n = 40_000
    z = stats.norm.isf(0.001 / (2 * len(CASES)))  # Bonferroni over the cases, two-sided
    for r, k, g in CASES:
        kept = gen.random((n, r)) < g
        before = kept[:, : r - 1].sum(axis=1)
        hit = kept[:, r - 1] & (before < k)
        nu = float(topk_inclusion_probability(r, k, g))
        tol = z * math.sqrt(nu * (1 - nu) / n) + 1e-12
        assert abs(hit.mean() - nu) <= tol, (r, k, g, hit.mean(), nu)


def test_kth_neighbour_law_and_horizon():
    p = kth_neighbour_probabilities(60, 5, 0.3)
    t = np.arange(1, 61)
    naive = [math.comb(int(i) - 1, 4) * 0.3**5 * 0.7 ** (int(i) - 5) if i >= 5 else 0.0 for i in t]
    np.testing.assert_allclose(p, naive, rtol=1e-12, atol=1e-300)
    r = rank_horizon(200, 0.2, 10**6)
    assert stats.binom.cdf(199, r, 0.2) <= RANK_TAIL < stats.binom.cdf(199, r - 1, 0.2)
    assert rank_horizon(200, 0.2, 900) == 900  # capped at n
    assert kth_neighbour_probabilities(r, 200, 0.2).sum() == pytest.approx(1.0, abs=1e-11)


def test_bad_arguments():
    with pytest.raises(ValueError, match="rank"):
        topk_inclusion_probability([0, 1], 3, 0.2)
    with pytest.raises(ValueError, match="rank"):
        topk_inclusion_probability(1.5, 3, 0.2)
    with pytest.raises(ValueError, match="sampling_rate"):
        topk_inclusion_probability(1, 3, 0.0)
    with pytest.raises(ValueError, match="sampling_rate"):
        topk_inclusion_probability(1, 3, 1.5)
    with pytest.raises(TypeError, match="sampling_rate"):
        topk_inclusion_probability(1, 3, "0.2")
    with pytest.raises(ValueError, match="k"):
        topk_inclusion_probability(1, 0, 0.2)


# ------------------------------------------------------------------------------- ranking


def _brute_ranking(x, q):
    d = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.array([np.lexsort((np.arange(x.shape[0]), row)) for row in d]), d


def test_ranked_neighbours_match_brute_force_with_ties():
    gen = np.random.default_rng(0)
    x = gen.normal(size=(300, 3))
    x[[10, 20, 30, 40]] = x[30]  # exact duplicates: equal float distances, ordered by index
    q = np.vstack([x[30], gen.normal(size=(40, 3))])
    y = gen.integers(0, 4, size=300)
    rn = ranked_neighbours(x, y, q, 50)
    order, d = _brute_ranking(x, q)
    np.testing.assert_allclose(rn.sq_distance, np.take_along_axis(d, order, 1)[:, :50], atol=1e-9)
    assert np.all(np.diff(rn.sq_distance, axis=1) >= 0)
    assert rn.index[0, :4].tolist() == [10, 20, 30, 40]
    for i in range(1, q.shape[0]):
        pos = [
            int(np.flatnonzero(rn.index[i] == j)[0]) for j in (10, 20, 30, 40) if j in rn.index[i]
        ]
        assert pos == sorted(pos) and (not pos or pos == list(range(pos[0], pos[0] + len(pos))))
    np.testing.assert_array_equal(rn.labels, y[rn.index])
    np.testing.assert_array_equal(np.sort(rn.index, 1), np.sort(order[:, :50], 1))
    # depth beyond n keeps all points
    assert ranked_neighbours(x[:5], y[:5], q[:2], 9).depth == 5


def test_poison_ranks_count_points_at_or_below_its_distance():
    gen = np.random.default_rng(1)
    x = gen.normal(size=(200, 2))
    q = gen.normal(size=(15, 2))
    rn = ranked_neighbours(x, np.zeros(200, int), q, 200)
    p = gen.normal(size=2)
    r = poison_ranks(rn, q, p)
    d = ((q[:, None] - x[None]) ** 2).sum(-1)
    dp = ((q - p) ** 2).sum(-1)
    np.testing.assert_array_equal(r, 1 + (d <= dp[:, None] + 1e-12).sum(1))
    assert poison_ranks(rn, q, x[5])[0] >= 2  # a copy of a training point comes after it
    with pytest.raises(ValueError, match="features"):
        poison_ranks(rn, q, [1.0, 2.0, 3.0])


def test_feature_checks():
    with pytest.raises(ValueError, match="finite"):
        ranked_neighbours([[0.0, np.nan]], [0], [[0.0, 0.0]], 1)
    with pytest.raises(ValueError, match="2 feature columns"):
        ranked_neighbours([[0.0, 1.0]], [0], [[0.0, 0.0, 1.0]], 1)
    with pytest.raises(TypeError, match="embed text"):
        ranked_neighbours(np.array([["a"]], dtype=object), [0], [[0.0]], 1)


# ------------------------------------------------------------------------------- draws


def test_poisson_topk_ranks_are_the_first_k_kept():
    """The k-th rank has the negative binomial law; every rank's inclusion frequency is ν."""
    gen = np.random.default_rng(3)
    k, g, depth, n = 4, 0.3, 80, 60_000
    ranks = poisson_topk_ranks(n, k, g, depth, gen)
    assert np.all(np.diff(ranks, axis=1) > 0)
    freq = np.bincount(ranks.ravel(), minlength=depth + 1)[1:] / n
    nu = topk_inclusion_probability(np.arange(1, depth + 1), k, g)
    assert np.max(np.abs(freq - nu) / np.sqrt(nu * (1 - nu) / n + 1e-12)) < 5.0
    last = np.bincount(ranks[:, -1], minlength=depth + 1)[1:] / n
    pk = kth_neighbour_probabilities(depth, k, g)
    assert np.max(np.abs(last - pk) / np.sqrt(pk * (1 - pk) / n + 1e-12)) < 5.0


def test_vectorised_votes_have_the_law_of_the_per_query_loop():
    gen = np.random.default_rng(4)
    x = gen.normal(size=(150, 2))
    y = (x[:, 0] + 0.3 * gen.normal(size=150) > 0).astype(int)
    q = gen.normal(size=(3, 2))
    k, g, reps = 10, 0.4, 3000
    loop = np.stack(
        [knn_votes_loop(x, y, q, k=k, sampling_rate=g, num_classes=2, rng=i) for i in range(reps)]
    )
    rn = ranked_neighbours(x, y, q, rank_horizon(k, g, 150))
    rows = np.arange(3)[:, None]
    vec = np.stack(
        [histograms(rn.labels[rows, poisson_topk_ranks(3, k, g, rn.depth, gen) - 1], 2)
         for _ in range(reps)]
    )  # fmt: skip
    m_loop, m_vec = loop[..., 1].mean(0), vec[..., 1].mean(0)
    se = np.sqrt(loop[..., 1].var(0) / reps + vec[..., 1].var(0) / reps)
    assert np.all(np.abs(m_loop - m_vec) < 5 * se + 1e-9)
    # exact mean: Σ_r ν(r) 1{y_r = 1}
    nu = topk_inclusion_probability(np.arange(1, rn.depth + 1), k, g)
    np.testing.assert_allclose(m_vec, (rn.labels == 1) @ nu, atol=5 * se.max())


def test_draw_votes_with_point_poisson():
    """The point votes with probability ν(r) and then displaces the k-th voter."""
    gen = np.random.default_rng(5)
    labels = np.array([0] * 30 + [1] * 30)
    k, g, n = 6, 0.3, 40_000
    for rank in (1, 15, 30):
        h, h2 = draw_votes(labels, rows=n, k=k, sampling_rate=g, num_classes=2, gen=gen,
                           point_rank=rank, point_label=1)  # fmt: skip
        assert np.all(h.sum(1) == k) and np.all(h2.sum(1) == k)
        moved = np.any(h2 != h, axis=1).mean()
        # it changes the votes iff it is in and the displaced voter has label 0
        nu = float(topk_inclusion_probability(rank, k, g))
        assert moved <= nu + 5 * math.sqrt(nu / n)
        if rank == 1:  # in w.p. γ; changes the votes iff the k-th voter is among the 0-labels
            p = g * stats.binom.sf(k - 1, 30, g)
            assert moved == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / n))


def test_replacement_draws_can_repeat_a_point_and_keep_each_side_exact():
    gen = np.random.default_rng(6)
    n_pts, depth, k = 20, 20, 4
    ranks = replacement_topk_ranks(20_000, k, 10, n_pts, depth, gen)
    assert np.any(ranks[:, 1] == ranks[:, 0])  # multiplicities happen
    labels = np.arange(20) % 2
    h, h2 = draw_votes(labels, rows=4000, k=k, sampling_rate=0.5, num_classes=2, gen=gen,
                       sampling="with-replacement", num_points=n_pts, point_rank=1,
                       point_label=1)  # fmt: skip
    assert np.all(h.sum(1) == k) and np.all(h2.sum(1) == k)
    # S′ side: the point (rank 1, label 1) has count Bin(m′, 1/(n+1)), m′ = round(0.5·21) = 10
    # (numpy rounds half to even), all of it among the top k votes unless it exceeds k
    copies = h2[:, 1] - h[:, 1]
    assert copies.max() >= 2  # the point votes twice in some draws: the reference code's flaw
