"""Private-kNN vote models with the point at ranks above 1, against direct simulations.

The other kNN tests place the added point at rank 1, where ``k-th kept rank ≥ r`` and
``> r`` cannot differ; a rank comparison off by one (``>`` for ``≥``) passed them all. Here the
point sits at ranks k and above (k = 6, γ = 0.5), and the models are checked against a naive
simulation of the mechanism written from its definition: every training point kept with
probability γ, the point inserted between training ranks r − 1 and r, the first k kept items
vote, and the answer is the argmax of the noisy histogram. With the mutation, p(S′) at rank 9
moves from 0.534 to 0.514 (σ = 1), i.e. ~18 standard errors of the simulation.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks.knn import KNNSubsampleModel
from dpaudit.systems.private_prediction._knn_core import draw_votes

K, GAMMA = 6, 0.5


def _naive_votes(labels, rank, label, n, rng):
    """(H_S, H_S′) of n independent draws, straight from the mechanism's definition."""
    items = np.concatenate([labels[: rank - 1], [label], labels[rank - 1 :]])
    kept = rng.random((n, items.size)) < GAMMA
    out = []
    for with_point in (False, True):
        kk = kept.copy()
        kk[:, rank - 1] &= with_point
        voting = kk & (np.cumsum(kk, axis=1) <= K)
        h = np.stack([(voting & (items == c)).sum(axis=1) for c in range(2)], axis=1)
        assert np.all(h.sum(axis=1) == K)  # the depth is ample for k voters
        out.append(h)
    return out


@pytest.mark.parametrize("rank", [K, 9, 12])
def test_subsample_model_matches_direct_simulation_at_high_rank(rank):
    labels = np.array([0, 1] * 30)
    sigma, n = 1.0, 200_000
    model = KNNSubsampleModel(labels, rank, 1, K, GAMMA, "poisson", 60, 2, 200_000, 0)
    p = model.output_distributions(sigma)
    rng = np.random.default_rng(rank)
    sim = []
    for h in _naive_votes(labels, rank, 1, n, rng):
        answer = np.argmax(h + sigma * rng.standard_normal(h.shape), axis=1)
        sim.append(np.bincount(answer, minlength=2) / n)
    # simulation s.e. ≤ 0.5/√n = 0.0011; the model's own (Rao–Blackwellised) error is smaller.
    np.testing.assert_allclose(p, np.array(sim), atol=0.006)


@pytest.mark.parametrize("rank", [K, 9, 12])
def test_draw_votes_inclusion_at_high_rank(rank):
    labels = np.zeros(60, dtype=np.int64)  # every training vote is class 0, the point's is 1
    n = 40_000
    h, h2 = draw_votes(
        labels, k=K, sampling_rate=GAMMA, num_classes=2, gen=np.random.default_rng(rank),
        rows=n, point_rank=rank, point_label=1,
    )  # fmt: skip
    assert np.all(h[:, 1] == 0) and np.all(h2.sum(axis=1) == K)
    # The point votes iff kept and at most k − 1 of the r − 1 closer training points are kept.
    exact = GAMMA * stats.binom.cdf(K - 1, rank - 1, GAMMA)
    se = np.sqrt(exact * (1 - exact) / n)
    assert h2[:, 1].mean() == pytest.approx(exact, abs=5 * se)
    # and the same law as the direct simulation
    naive = _naive_votes(labels, rank, 1, n, np.random.default_rng(100 + rank))[1]
    assert naive[:, 1].mean() == pytest.approx(exact, abs=5 * se)
