"""Worst-case datasets and white-box statistics of the synthetic-data audit, against naive
reference computations (no library environment needed)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    marginal_counts,
    measured_cells,
    measurement_llr,
    selection_llr,
    synthetic_rows,
    target_count,
)
from dpaudit.systems.synthetic import TabularDomain


def _pair(name="tree-flip", **kw):
    return WORST_CASE_DATASETS.get(name)(**kw)


def test_marginal_counts_match_a_naive_count():
    g = np.random.default_rng(0)
    dom = TabularDomain((2, 3, 4))
    data = np.column_stack([g.integers(0, k, 50) for k in dom.cardinalities])
    got = marginal_counts(data, [2, 1], dom)
    naive = [np.sum((data[:, 2] == a) & (data[:, 1] == b)) for a in range(4) for b in range(3)]
    np.testing.assert_array_equal(got, naive)


def test_measurement_llr_is_the_gaussian_log_density_ratio():
    pair = _pair(rows=10)
    g = np.random.default_rng(1)
    meas, ref = [], 0.0
    for clique in ([0], [1], [2], [0, 1], [1, 2]):
        x1 = marginal_counts(pair.D_prime, clique, pair.domain)
        x0 = marginal_counts(pair.D, clique, pair.domain)
        sigma = float(g.uniform(0.5, 3))
        y = x1 + g.normal(0, sigma, x1.size)
        meas.append({"clique": clique, "sigma": sigma, "y": y.tolist()})
        ref += np.sum(stats.norm.logpdf(y, x1, sigma) - stats.norm.logpdf(y, x0, sigma))
    np.testing.assert_allclose(measurement_llr(meas, pair.D, pair.target, pair.domain), ref,
                               rtol=1e-10)  # fmt: skip


def test_measurement_over_another_domain_is_refused():
    pair = _pair(rows=10)
    m = [{"clique": [0, 1], "sigma": 1.0, "y": [1.0, 2.0, 3.0]}]
    with pytest.raises(ValueError, match=r"clique \[0, 1\] has 3 cells, its marginal .* has 4"):
        measurement_llr(m, pair.D, pair.target, pair.domain)


def test_selection_llr_matches_explicit_probabilities():
    pair = _pair(rows=10)
    cands = [[0, 1], [0, 2], [1, 2]]
    g = np.random.default_rng(2)
    xhat = [g.uniform(0, 5, 4).tolist() for _ in cands]
    eps, sens, chosen = 0.7, 1.0, 1
    sel = {"candidates": cands, "xhat": xhat, "epsilon": eps, "sensitivity": sens,
           "chosen": chosen, "weights": [1.0, 2.0, 0.5], "bias": [0.3, 0.0, 1.0],
           "q": [0.0, 0.0, 0.0]}  # fmt: skip
    probs = []
    for data in (pair.D, pair.D_prime):
        rows = zip(cands, xhat, sel["weights"], sel["bias"], strict=True)
        q = np.array([w * (np.abs(marginal_counts(data, c, pair.domain) - xh).sum() - b)
                      for c, xh, w, b in rows])  # fmt: skip
        p = np.exp(eps / (2 * sens) * q)
        probs.append(p[chosen] / p.sum())
    ref = np.log(probs[1]) - np.log(probs[0])
    got = selection_llr([sel], pair.D, pair.target, pair.domain)
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def test_selection_llr_checks_the_library_scores():
    pair = _pair(rows=10)
    cands = [[0, 1], [0, 2]]
    xhat = [[2.5, 2.5, 2.5, 2.5]] * 2
    q_d = [float(np.abs(marginal_counts(pair.D, c, pair.domain) - 2.5).sum()) for c in cands]
    sel = {"candidates": cands, "xhat": xhat, "epsilon": 1.0, "sensitivity": 1.0, "chosen": 0,
           "weights": [1.0, 1.0], "bias": [0.0, 0.0], "q": q_d}  # fmt: skip
    selection_llr([sel], pair.D, pair.target, pair.domain, check_observed=pair.D)
    with pytest.raises(ValueError, match="differ from the library's"):
        selection_llr([sel], pair.D, pair.target, pair.domain, check_observed=pair.D_prime)


def test_tree_flip_moves_mst_edge_scores_by_the_most_the_mechanism_allows():
    """With x̂ the product of D's one-way marginals (MST's estimate before any edge), the
    target raises the score of edge (a, c) by one and lowers the other two by one."""
    pair = _pair(rows=1000)
    n = len(pair.D)
    p = [marginal_counts(pair.D, [j], pair.domain) / n for j in range(3)]
    shifts = []
    for a, b in ([0, 1], [0, 2], [1, 2]):
        xhat = n * np.outer(p[a], p[b]).ravel()
        before = np.abs(marginal_counts(pair.D, [a, b], pair.domain) - xhat).sum()
        after = np.abs(marginal_counts(pair.D_prime, [a, b], pair.domain) - xhat).sum()
        shifts.append(after - before)
    np.testing.assert_allclose(shifts, [-1.0, 1.0, -1.0])


def _mst_tree_flip_choices(first, second, rho=0.10341283143348307):
    """MST's two choices on tree-flip as smartnoise-synth 1.0.8 records them: candidates, the
    estimate x̂ (the product of D's one-way marginals: the three scores tie), ε = √(8(ρ/3)/2)
    per choice (``select`` with ρ/3 over r − 1 = 2 steps), sensitivity 1."""
    pair = _pair(rows=1000)
    n = len(pair.D)
    p = [marginal_counts(pair.D, [j], pair.domain) / n for j in range(3)]
    eps = float(np.sqrt(8 * rho / 3 / 2))
    cands = [[0, 1], [0, 2], [1, 2]]
    sels = []
    for pick in (first, second):
        xhat = [n * np.outer(p[a], p[b]).ravel() for a, b in cands]
        q = [float(np.abs(marginal_counts(pair.D, c, pair.domain) - x).sum())
             for c, x in zip(cands, xhat, strict=True)]  # fmt: skip
        sels.append({"candidates": cands, "xhat": [x.tolist() for x in xhat], "q": q,
                     "epsilon": eps, "sensitivity": 1.0, "chosen": cands.index(pick),
                     "weights": [1.0] * len(cands), "bias": [0.0] * len(cands)})  # fmt: skip
        cands = [c for c in cands if c != pick]
    return pair, sels, eps


def test_mst_choice_llr_on_tree_flip_matches_its_closed_form():
    """The choice log-likelihood ratio of MST's tree (exponential mechanism, McSherry &
    Talwar 2007; MST's select, McKenna, Miklau & Sheldon 2021, arXiv:2108.04978) on
    tree-flip, against its closed form. With e = exp(ε) (the scores move by (−1, +1, −1),
    the mechanism's coefficient is ε/2): (a, c) first → log(3e/(e + 2)), the second choice
    uninformative; (a, b) or (b, c) first → log(3/(e + 2)) + log(2e/(e + 1)) when (a, c)
    follows, + log(2/(e + 1)) when not. Under D every order has probability 1/6; the mean
    shift E_{D∪t}[L] − E_D[L] (the symmetrised KL divergence of the choices) is 0.0535 at
    (ε, δ) = (1, 10⁻²), 0.78 of the 2ρ/3 = 0.069 their ρ/3-zCDP budget allows."""
    ab, ac, bc = (0, 1), (0, 2), (1, 2)
    e = np.exp(np.sqrt(8 * 0.10341283143348307 / 3 / 2))
    closed = {
        (ac, ab): np.log(3 * e / (e + 2)), (ac, bc): np.log(3 * e / (e + 2)),
        (ab, ac): np.log(3 / (e + 2)) + np.log(2 * e / (e + 1)),
        (bc, ac): np.log(3 / (e + 2)) + np.log(2 * e / (e + 1)),
        (ab, bc): np.log(3 / (e + 2)) + np.log(2 / (e + 1)),
        (bc, ab): np.log(3 / (e + 2)) + np.log(2 / (e + 1)),
    }  # fmt: skip
    llr = {}
    for order, ref in closed.items():
        pair, sels, _ = _mst_tree_flip_choices(*(list(c) for c in order))
        llr[order] = selection_llr(sels, pair.D, pair.target, pair.domain,
                                   check_observed=pair.D)  # fmt: skip
        np.testing.assert_allclose(llr[order], ref, rtol=1e-9)
    np.testing.assert_allclose(llr[(ac, ab)], 0.231664, atol=1e-6)
    np.testing.assert_allclose(llr[(ab, ac)], 0.028864, atol=1e-6)
    np.testing.assert_allclose(llr[(ab, bc)], -0.342463, atol=1e-6)
    L = np.array(list(llr.values()))
    p_d = np.full(6, 1 / 6)
    p_dp = p_d * np.exp(L)  # the likelihood ratio reweights D's law into D ∪ {t}'s
    np.testing.assert_allclose(p_dp.sum(), 1.0, rtol=1e-12)
    shift = p_dp @ L - p_d @ L
    np.testing.assert_allclose(shift, 0.053516, atol=1e-6)
    np.testing.assert_allclose([p_d @ L**2 - (p_d @ L) ** 2, p_dp @ L**2 - (p_dp @ L) ** 2],
                               [0.056515, 0.049910], atol=1e-6)  # fmt: skip


def test_gaussian_transcript_llr_has_the_gdp_mean_and_variance():
    """Coverage of the white-box statistic on a pure-Gaussian marginal mechanism simulated
    here: the LLR is N(±μ²/2, μ²) with μ² = Σ 1/σ² (closed form), seeded, 4,000 runs each."""
    pair = _pair(rows=100)
    cliques = [[0], [1], [2], [0, 1], [0, 2]]
    sigmas = [6.6, 6.6, 6.6, 5.4, 5.4]
    mu2 = sum(1 / s**2 for s in sigmas)
    g = np.random.default_rng(3)
    out = {}
    for name, data in (("D", pair.D), ("D'", pair.D_prime)):
        vals = []
        exact = [marginal_counts(data, c, pair.domain) for c in cliques]
        for _ in range(4000):
            meas = [{"clique": c, "sigma": s, "y": (x + g.normal(0, s, 2 ** len(c))).tolist()}
                    for c, s, x in zip(cliques, sigmas, exact, strict=True)]  # fmt: skip
            vals.append(measurement_llr(meas, pair.D, pair.target, pair.domain))
        out[name] = np.array(vals)
    se = np.sqrt(mu2 / 4000)
    assert abs(out["D'"].mean() - mu2 / 2) < 4 * se
    assert abs(out["D"].mean() + mu2 / 2) < 4 * se
    np.testing.assert_allclose(out["D"].var(), mu2, rtol=0.1)


def test_worst_case_designs_and_their_checks():
    u = _pair("unique-record", columns=4, rows=7)
    assert u.D.shape == (7, 4) and u.target.tolist() == [1, 1, 1, 1]
    assert u.D_prime.shape == (8, 4)
    with pytest.raises(ValueError, match="columns must be at least 2"):
        _pair("unique-record", columns=1)
    with pytest.raises(ValueError, match="tree-flip design has 3 columns"):
        _pair("tree-flip", columns=4)
    with pytest.raises(ValueError, match="rows must be even"):
        _pair("tree-flip", rows=7)


def test_black_box_and_domain_statistics():
    assert target_count(np.array([[1, 0], [1, 1], [1, 1]]), np.array([1, 1])) == 2.0
    assert measured_cells([{"y": [1.0]}, {"y": [1.0, 2.0]}]) == 3.0
    assert synthetic_rows(np.zeros((7, 3))) == 7.0
    assert set(SYNTHETIC_THREAT_MODELS.names()) == {
        "white-box", "white-box-measurements", "white-box-domain", "black-box",
        "black-box-rows", "white-box-laplace", "white-box-network", "black-box-unseen",
        "white-box-selections", "black-box-dcr", "black-box-density", "white-box-mwem",
        "white-box-mwem-choices", "white-box-dpsgd", "white-box-student",
        "white-box-conditions", "white-box-votes", "white-box-steps",
        "white-box-training-conditions"}  # fmt: skip


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([[0, 2]], r"column 1 holds 2, its domain is 0..1"),
        ([[0, -1]], r"column 1 holds -1"),
        ([[0.5, 1]], "must hold integer category codes"),
        ([0, 1], r"must be a \(rows, 2\) table"),
    ],
)
def test_data_outside_the_declared_domain_is_refused(data, match):
    with pytest.raises(ValueError, match=match):
        TabularDomain((2, 2)).check(data)


def test_domain_needs_two_categories_per_column():
    with pytest.raises(ValueError, match=r"cardinalities\[1\] must be at least 2"):
        TabularDomain((2, 1))


def test_the_statistics_are_public_and_name_a_bad_argument():
    import dpaudit.attacks as attacks

    dom = TabularDomain((2, 2))
    for name in ("marginal_counts", "measurement_llr", "selection_llr", "target_count",
                 "measured_cells", "synthetic_rows", "WorstCaseDataset",
                 "SyntheticThreatModel"):  # fmt: skip
        assert name in attacks.__all__
    with pytest.raises(TypeError, match="data must contain real numbers, not booleans"):
        marginal_counts([[True, False]], [0], dom)
    with pytest.raises(ValueError, match=r"clique holds \[0, 2\]: columns are 0..1"):
        marginal_counts([[0, 1]], [0, 2], dom)
    with pytest.raises(TypeError, match="domain must be a TabularDomain, got tuple"):
        marginal_counts([[0, 1]], [0], (2, 2))
    m = [{"clique": [0], "sigma": 0.0, "y": [1.0, 2.0]}]
    with pytest.raises(ValueError, match=r"measurements\[0\]\['sigma'\]"):
        measurement_llr(m, [[0, 0]], [1, 1], dom)
    with pytest.raises(ValueError, match="target must have one code per column"):
        measurement_llr(m, [[0, 0]], [1, 1, 1], dom)
    s = [{"candidates": [[0], [1]], "xhat": [[1.0, 1.0]], "epsilon": 1.0, "sensitivity": 1.0,
          "chosen": 0, "weights": [1.0, 1.0], "bias": [0.0, 0.0]}]  # fmt: skip
    with pytest.raises(ValueError, match=r"selections\[0\]\['xhat'\] must hold one estimate"):
        selection_llr(s, [[0, 0]], [1, 1], dom)
    with pytest.raises(ValueError, match=r"selections\[0\] lacks \['chosen'\]"):
        selection_llr([{k: v for k, v in s[0].items() if k != "chosen"}], [[0, 0]], [1, 1], dom)
    with pytest.raises(ValueError, match="target has 3 codes, the synthetic table 2 columns"):
        target_count([[0, 1]], [0, 1, 1])
    with pytest.raises(TypeError, match="measurements must be a sequence of dicts, got str"):
        measured_cells("y")
