"""Pois-NatQ crafters for Private-kNN: E(x) and the poisons that maximise it."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks import ADVERSARIES, KNNPoisonSearch
from dpaudit.attacks.knn import craft_knn_poison, expected_topk_count, expected_votes
from dpaudit.mechanisms import GNMax
from dpaudit.systems import PrivateKNN, PrivateKNNOptions
from dpaudit.systems.private_prediction.knn import topk_inclusion_probability

K, GAMMA = 8, 0.4


def _brute_e(x_train, queries, point):
    """E(x) = Σ_q ν(r_q(x)), r_q = 1 + #training points at distance ≤ the point's."""
    d = ((queries[:, None] - x_train[None]) ** 2).sum(-1)
    dp = ((queries - point) ** 2).sum(-1)
    r = 1 + (d <= dp[:, None] + 1e-12).sum(1)
    return float(topk_inclusion_probability(r, K, GAMMA).sum())


@pytest.fixture(scope="module")
def trained():
    gen = np.random.default_rng(0)
    x = gen.normal(size=(300, 2))
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 1).astype(np.int64)
    queries = np.vstack([gen.normal(scale=0.7, size=(30, 2)), [[5.0, 5.0]]])  # last: source
    knn = PrivateKNN(GNMax(3.0), PrivateKNNOptions(k=K, sampling_rate=GAMMA))
    return x, y, queries, knn.train(x, y, queries, instantiations=1, rng=0)


def test_expected_topk_count_is_the_sum_of_inclusion_probabilities():
    assert expected_topk_count([1, 2, 1000], 2, 0.5) == pytest.approx(
        0.5 + 0.5 + float(topk_inclusion_probability(1000, 2, 0.5))
    )
    np.testing.assert_allclose(
        expected_topk_count([[1, 1], [3, 50]], 2, 0.5),
        [1.0, 0.5 * 0.75 + float(topk_inclusion_probability(50, 2, 0.5))],
    )


@pytest.mark.parametrize("pool", ["train", "test", "embedding"])
def test_poisons_maximise_e_over_their_pool(trained, pool):
    x, _, queries, t = trained
    natural = queries[:-1]
    pt = craft_knn_poison(t, pool)
    e = _brute_e(x, natural, pt.x)
    if pool == "train":
        scores = [_brute_e(x, natural, row) for row in x]
        assert e == pytest.approx(max(scores), rel=1e-9)
        assert any(np.array_equal(pt.x, row) for row in x)
    elif pool == "test":
        scores = [_brute_e(x, natural, row) for row in queries]
        assert e == pytest.approx(max(scores), rel=1e-9)
    else:
        assert e >= max(_brute_e(x, natural, row) for row in queries) * 0.5
    assert 0 < e <= GAMMA * natural.shape[0] + 1e-9
    # label: the second most common class of the ν-weighted expected votes it can enter
    d = ((natural[:, None] - x[None]) ** 2).sum(-1)
    r = 1 + (d <= ((natural - pt.x) ** 2).sum(-1)[:, None] + 1e-12).sum(1)
    ev = expected_votes(t.neighbours.labels[:-1], K, GAMMA, 3)
    mass = topk_inclusion_probability(r, K, GAMMA) @ ev
    assert pt.label == int(np.argsort(-mass, kind="stable")[1])
    assert pt.crafter == f"knn-poison-{pool}"


def test_embedding_poison_reaches_gamma_n_q_when_queries_share_neighbourhoods():
    """App. D.3: the histogram-weighted average of the queries' neighbours can enter almost
    every query's top k (E ≈ γ·n_Q)."""
    gen = np.random.default_rng(1)
    x = gen.normal(size=(2000, 3))
    y = gen.integers(0, 2, size=2000)
    queries = np.vstack([gen.normal(scale=0.05, size=(40, 3)), [[9.0, 9.0, 9.0]]])
    t = PrivateKNN(GNMax(3.0), PrivateKNNOptions(k=50, sampling_rate=0.2)).train(
        x, y, queries, instantiations=1, rng=0
    )
    pt = craft_knn_poison(t, "embedding")
    r = t.neighbours.rows(np.arange(40))
    from dpaudit.systems.private_prediction.knn import poison_ranks

    e = expected_topk_count(poison_ranks(r, t.queries[:40], pt.x), 50, 0.2)
    assert e >= 0.95 * 0.2 * 40
    assert craft_knn_poison(t, "train").x.shape == (3,)


def test_crafter_finds_the_training_phase_through_the_source_row(trained):
    _, _, queries, _ = trained
    crafter = KNNPoisonSearch("train")
    pt = crafter.craft(queries[-1], 0, np.zeros(3, np.int64), source_index=7)
    assert pt.x.shape == (2,) and pt.source_index == -1
    with pytest.raises(ValueError, match="--system private-knn"):
        crafter.craft(np.array([123.0, 4.0]), 0, np.zeros(3, np.int64))
    explicit = crafter.craft(np.array([123.0, 4.0]), 0, np.zeros(3), context=trained[3])
    np.testing.assert_array_equal(explicit.x, pt.x)
    with pytest.raises(ValueError, match="pool"):
        KNNPoisonSearch("everything")
    for name in ("pois-natq-test", "pois-natq-train", "pois-natq-embedding"):
        adv = ADVERSARIES.get(name)
        assert adv.composition == "queries" and adv.crafter.pool == name.rsplit("-", 1)[1]
