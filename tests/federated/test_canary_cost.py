"""The canary clients' cost cut without changing a statistic (issue 43, ≤ 10 % overhead).

The directions are drawn in cache-sized blocks (the same numbers as one (k, d) draw), the
cosines come from one float32 product with the unit deltas and the unit final delta (no float64
copy of the deltas, no second pass over the canaries), and DP-FedAvg sums a round's few sending
canaries in place. Each is checked against the path it replaced: the reference implementations
below are that path, and the seeded runs' statistics are the values the replaced code gave
(recorded before the change, same seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.attacks import canary_cosines, draw_canary_clients
from dpaudit.attacks._federated import _BLOCK_FLOATS
from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
)

pytest.importorskip("dp_accounting")


def _one_draw(k: int, d: int, seed: int):
    """The replaced draw: one (k, d) float32 Gaussian draw, rows divided by their norms."""
    g = np.random.default_rng(seed)
    rows = g.standard_normal((k, d), dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    rows /= norms.astype(np.float32)[:, None]
    return rows, g.random(k) < 0.5


def _float64_cosines(directions, deltas, final):
    """The replaced cosines: float64 unit rows cast to float32, one product for the rounds and
    a second for the final delta."""

    def unit(x):
        x = np.asarray(x, dtype=np.float64)
        n = np.linalg.norm(x, axis=-1, keepdims=True)
        return np.divide(x, n, out=np.zeros_like(x), where=n > 0)

    u = unit(deltas)
    per_round = (directions @ u.T.astype(np.float32)).astype(np.float64)
    fin = (directions @ unit(final).astype(np.float32)).astype(np.float64)
    return per_round, fin, float(np.linalg.norm(u.sum(axis=0))) / math.sqrt(u.shape[1])


@pytest.mark.parametrize(
    ("k", "d"), [(7, 30), (3000, 50), (5, _BLOCK_FLOATS // 3 + 1), (3, _BLOCK_FLOATS + 5)]
)
def test_block_draw_gives_the_one_draw_numbers(k, d):
    """Blocks of one row, of several rows and of a last partial block: bit for bit the numbers
    of one (k, d) draw, and the inclusion flags drawn after them."""
    c = draw_canary_clients(k, d, rng=9)
    rows, inc = _one_draw(k, d, 9)
    np.testing.assert_array_equal(c.directions, rows)
    np.testing.assert_array_equal(c.included, inc)
    assert c.directions.dtype == np.float32 and c.directions.flags.c_contiguous


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cosines_match_the_replaced_path(dtype):
    """Float32 deltas (what the systems record) and float64 deltas, a zero round among them:
    every cosine within 1e-7 of the float64-unit-row path (cosines here are ~0.05)."""
    g = np.random.default_rng(2)
    k, d, t = 300, 2000, 12
    can = draw_canary_clients(k, d, rng=3).directions
    deltas = (g.normal(size=(t, d)) * 0.01 + 0.002 * can[:5].sum(axis=0)).astype(dtype)
    deltas[4] = 0.0
    final = deltas.sum(axis=0, dtype=np.float64)
    cos = canary_cosines(can, deltas, final)
    per_round, fin, null_sum = _float64_cosines(can, deltas, final)
    np.testing.assert_allclose(cos.per_round, per_round, rtol=0, atol=1e-7)
    np.testing.assert_allclose(cos.final, fin, rtol=0, atol=1e-7)
    np.testing.assert_allclose(cos.sum, per_round.sum(axis=1), rtol=0, atol=1e-6)
    np.testing.assert_allclose(cos.max, per_round.max(axis=1), rtol=0, atol=1e-7)
    np.testing.assert_allclose(cos.null_sd_sum, null_sum, rtol=1e-7)
    assert np.all(cos.per_round[:, 4] == 0.0) and cos.per_round.flags.c_contiguous


def test_cosines_refuse_non_finite_and_non_unit_input():
    can = draw_canary_clients(4, 6, rng=0).directions
    deltas = np.ones((3, 6), dtype=np.float32)
    for bad in (np.nan, np.inf):
        d32 = deltas.copy()
        d32[1, 2] = bad
        with pytest.raises(ValueError, match="deltas"):
            canary_cosines(can, d32, deltas[0])
        c = can.copy()
        c[0, 0] = bad
        with pytest.raises(ValueError, match="directions"):
            canary_cosines(c, deltas, deltas[0])
    with pytest.raises(ValueError, match="directions must be unit"):
        canary_cosines(can * 1.01, deltas, deltas[0])
    with pytest.raises(ValueError, match="deltas must not be empty"):
        canary_cosines(can, np.zeros((0, 6), dtype=np.float32), deltas[0])


#: (hidden, sampling, threat model) -> mean_in, mean_out, estimate ε (fitted and null variance)
#: of the seeded runs below, as the replaced code computed them (seed 11).
_RECORDED = {
    (16, "poisson", "all-iterates"): (0.05892248654031548, 0.0653848681554553,
                                      1.6928548813014146, 0.7780017667376222),
    (16, "poisson", "final-model"): (0.006282853382109697, 0.002540833761616211,
                                     1.4357241936706244, 0.4966226309074643),
    (0, "all", "all-iterates"): (0.17674777554086993, -0.01863250450321263,
                                 5.119304650175489, 3.6084884095661405),
    (0, "all", "final-model"): (0.05853340765200207, -0.005882474543747082,
                                5.183180506712939, 3.6214160822061694),
}  # fmt: skip


@pytest.mark.parametrize(("hidden", "sampling", "m", "stat"),
                         [(16, "poisson", 10, "max"), (0, "all", None, "sum")])  # fmt: skip
def test_seeded_audit_statistics_are_the_replaced_codes(hidden, sampling, m, stat):
    """An MLP under Poisson sampling (a few canaries a round: the in-place sum) and softmax
    regression with every client every round (the dense product): the canaries' mean
    statistics and Andrew et al.'s estimates equal the replaced code's to 1e-6 relative (the
    float32 products may add in another order), the valid bounds too."""
    s = FederatedSettings(
        seed=11,
        data=FederatedDataSettings(num_clients=40, examples=800, features=20),
        training=FederatedTrainingSettings(rounds=6, sampling=sampling, clients_per_round=m,
                                           hidden=hidden, noise_multiplier=2.0),
        canaries=FederatedCanarySettings(count=200, all_iterates=stat),
    )  # fmt: skip
    bounds = {(0, "all-iterates"): 0.5279752271965803, (0, "final-model"): 0.5748263897938872}
    for e in audit_federated(s).entries:
        d = e.detail
        got = (d.mean_in, d.mean_out, d.estimate.epsilon, d.estimate.epsilon_null_variance)
        np.testing.assert_allclose(got, _RECORDED[hidden, sampling, d.threat_model], rtol=1e-6)
        assert d.bounds.max_valid == pytest.approx(bounds.get((hidden, d.threat_model), 0.0))
