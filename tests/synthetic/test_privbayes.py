"""DataSynthesizer 0.1.13's PrivBayes, audited in dpaudit's own environment (the extra
``datasynthesizer``): refusals before any run, the claim, the statistics against the library's
own functions, and — with the extra installed — its two violations shown (the support of its
noisy counts and the sensitivity of its network search follow the private data), their fixes
not, and the planted bug refuted. The heavy audits over 20 seeds are recorded by
``benchmarks/bench_synthetic.py --privbayes`` (``docs/results/synthetic-data/privbayes-*.json``,
checked against the docs page here)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_privbayes import (
    _mutual_information,
    laplace_llr_mean_shift,
    laplace_measurement_llr,
    network_llr,
    network_llr_mean_shift,
    network_log_laws,
    privbayes_sensitivity,
    unseen_values,
)
from dpaudit.bounds import Explicit, epsilon_from_scores
from dpaudit.errors import MissingDependencyError
from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.synthetic_data import SyntheticDataSettings, audit_synthetic_data
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell

DS = LIBRARIES["datasynthesizer"]
needs_ds = pytest.mark.skipif(
    not DS.available(),
    reason="DataSynthesizer is not installed: pip install 'dpaudit[datasynthesizer]'",
)
ROOT = Path(__file__).resolve().parents[2]


def _gen(name: str, eps: float = 1.0, **options):
    return SYSTEMS.get(name)(GeneratorCell(name, eps, 1e-2, options=tuple(options.items())))


def test_missing_extra_is_refused_naming_the_install_command(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "DataSynthesizer", None)  # not importable
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=3)
    g = _gen("datasynthesizer-privbayes")
    hint = re.escape("pip install 'dpaudit[datasynthesizer]'")
    with pytest.raises(MissingDependencyError, match=hint):
        g.fit_runs([pair.D], [0], [0], domain=pair.domain)
    s = SyntheticDataSettings(generators=("datasynthesizer-privbayes",), dataset="unique-record",
                              columns=2, rows=3, runs=2, pilot_runs=2)  # fmt: skip
    with pytest.raises(MissingDependencyError, match=hint):
        WORKFLOWS.get("synthetic-data").check_settings(s)
    with pytest.raises(MissingDependencyError, match=hint):
        audit_synthetic_data(s)
    # a table outside the domain is refused first, before the library is looked for
    with pytest.raises(ValueError, match=r"datasets\[1\] has values outside the declared domain"):
        g.fit_runs([pair.D, [[0, 0], [3, 0]]], [0], [0], domain=pair.domain)


def test_claim_is_pure_epsilon_and_its_implied_mu():
    for eps in (1.0, 10.0):
        g = _gen("datasynthesizer-privbayes", eps)
        c = g.claim(delta=1e-5)
        assert (c.epsilon, c.delta) == (eps, 0.0) and "DataSynthesizer 0.1.13" in c.source
        # reference: 2 Φ⁻¹(e^ε / (1 + e^ε)) by scipy
        assert g.implied_mu(0.0) == pytest.approx(2 * norm.ppf(math.exp(eps) / (1 + math.exp(eps))))
    assert _gen("datasynthesizer-privbayes").bug is None
    assert _gen("datasynthesizer-privbayes-quiet-noise").bug
    with pytest.raises(ValueError, match="degree"):
        SyntheticDataSettings(degree=0)


def test_statistics_by_hand():
    wc = WORST_CASE_DATASETS.get("binary-flip")(rows=6)
    # target (0, 2, 1): clique [0, 1] cell 0·3 + 2 = 2, count 0 in D; r = 0.25: (0.25 − 0.75)/2
    m = [{"clique": [0, 1], "scale": 2.0, "y": [0.0, 0.0, 0.25, 3, 0, 0, 0, 0, 0]}]
    assert laplace_measurement_llr(m, wc.D, wc.target, wc.domain) == pytest.approx(-0.25)
    with pytest.raises(ValueError, match=r"measurements\[0\]\['y'\]"):
        laplace_measurement_llr([{"clique": [0], "scale": 2.0, "y": [1.0, 2.0]}], wc.D,
                                wc.target, wc.domain)  # fmt: skip
    assert unseen_values(np.array([[1, 0, 0], [0, 1, 1], [2, 2, 2]]), wc.D) == 1.0
    with pytest.raises(ValueError, match="rows must be even"):
        WORST_CASE_DATASETS.get("binary-flip")(rows=5)
    with pytest.raises(ValueError, match="network"):
        network_llr([{"candidates": [[1, [0]]], "epsilon": 0.5}], [], wc.D, wc.target, wc.domain)


@needs_ds
def test_sensitivity_and_mutual_information_match_the_library():
    import pandas as pd
    from DataSynthesizer.lib.PrivBayes import calculate_sensitivity
    from DataSynthesizer.lib.utils import mutual_information

    for n in (2, 5, 1000, 1001):
        for binary in (True, False):
            lib = calculate_sensitivity(n, "a", ["b"], {"a": binary, "b": False})
            assert privbayes_sensitivity(n, binary) == pytest.approx(lib, rel=1e-12)
    data = np.random.default_rng(0).integers(0, 3, size=(40, 3))
    df = pd.DataFrame(data, columns=["c0", "c1", "c2"]).astype(str)
    assert _mutual_information(data, 0, [1, 2]) == pytest.approx(
        mutual_information(df["c0"], df[["c1", "c2"]]), rel=1e-9)  # fmt: skip


@needs_ds
def test_thread_pool_runs_equal_the_library_process_pool():
    pair = WORST_CASE_DATASETS.get("binary-flip")(rows=10)
    out = []
    for pool in ("processes", "threads"):
        r = _gen("datasynthesizer-privbayes", pool=pool).fit_runs(
            [pair.D_prime], [0], [7], domain=pair.domain,
            observe=("measurements", "selections", "synthetic"), sample_rows=6)  # fmt: skip
        out.append((r.runs[0]["network"], r.runs[0]["measurements"], r.runs[0]["selections"],
                    r.synthetic[0].tolist()))  # fmt: skip
    assert out[0] == out[1]


@needs_ds
def test_the_support_follows_the_private_data_even_with_a_public_domain():
    """Violation 1, in the installed source: the noisy counts span range(max(code) + 1) of the
    private columns. D (zeros) gets 1 cell and never a 1 in its synthetic tables; the fix
    measures the public domain's 4 cells on both."""
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=4)
    for name, cells in (("datasynthesizer-privbayes", (4, 1)),
                        ("datasynthesizer-privbayes-public-support", (4, 4))):  # fmt: skip
        r = _gen(name).fit_runs([pair.D, pair.D_prime], [1, 0] * 4, list(range(8)),
                                domain=pair.domain, observe=("domain", "synthetic"),
                                sample_rows=8)  # fmt: skip
        sizes = [sum(len(m["y"]) for m in run["measurements"]) for run in r.runs]
        assert sizes == list(cells) * 4
        if name == "datasynthesizer-privbayes":
            assert all(unseen_values(s, pair.D) == 0 for s in r.synthetic[1::2])


@needs_ds
def test_support_violation_is_refuted():
    s = SyntheticDataSettings(generators=("datasynthesizer-privbayes",), dataset="unique-record",
                              columns=2, rows=4, threat_models=("white-box-domain",), runs=15,
                              pilot_runs=3)  # fmt: skip
    (e,) = audit_synthetic_data(s).entries
    assert e.gap.refutes_claim and e.lower_bound.epsilon > 1.2
    assert (e.detail.tp, e.detail.fp, e.detail.version) == (15, 0, "0.1.13")


@needs_ds
def test_support_fix_is_not_refuted():
    s = SyntheticDataSettings(generators=("datasynthesizer-privbayes-public-support",),
                              dataset="unique-record", columns=2, rows=4, runs=15,
                              threat_models=("white-box-domain",), pilot_runs=3)  # fmt: skip
    (e,) = audit_synthetic_data(s).entries
    assert not e.gap.refutes_claim and e.lower_bound.epsilon == 0.0


@needs_ds
def test_the_network_sensitivity_follows_the_private_data():
    """Violation 2, in the installed source, read from the library's own exponential mechanism
    on binary-flip (1,000 rows): with the root y, the first step picks x or z with probability
    ½ each on D ∪ {t}; on D, x binary makes the sensitivity smaller and z's probability
    0.0075 — a ratio far above e^(ε/4), the step's share of ε = 1. With the public sensitivity
    the ratio stays within it."""
    pair = WORST_CASE_DATASETS.get("binary-flip")(rows=1000)
    ratios = {}
    for name in ("datasynthesizer-privbayes", "datasynthesizer-privbayes-public-sensitivity"):
        g = _gen(name, public_rows=1000)
        runs = g.fit_runs([pair.D, pair.D_prime], [1, 0], [0, 0], domain=pair.domain).runs
        first = [run["selections"][0] for run in runs]
        assert first[0]["candidates"] == first[1]["candidates"]  # the same root (seed 0: y)
        assert first[0]["candidates"][0][1] != [0]  # root y or z
        p_in, p_out = np.array(first[0]["p"]), np.array(first[1]["p"])
        ratios[name] = float(np.max(np.abs(np.log(p_in / p_out))))
        if name == "datasynthesizer-privbayes":
            assert min(first[1]["p"]) < 0.01 and first[0]["p"] == pytest.approx([0.5, 0.5])
    assert ratios["datasynthesizer-privbayes"] > 4.0
    assert ratios["datasynthesizer-privbayes-public-sensitivity"] <= 0.25


@needs_ds
def test_planted_bug_is_refuted():
    """Noise 0.1× the stated scale: the Laplace log-likelihood ratio of the counts above 0 (a
    threshold fixed in advance) on 20 runs of D ∪ {t} against 20 of D refutes ε = 1."""
    pair = WORST_CASE_DATASETS.get("tree-flip")(rows=4)
    g = _gen("datasynthesizer-privbayes-quiet-noise")
    r = g.fit_runs([pair.D, pair.D_prime], [1, 0] * 20, list(range(40)), domain=pair.domain,
                   observe=("measurements",))  # fmt: skip
    stat = [laplace_measurement_llr(x["measurements"], pair.D, pair.target, pair.domain)
            for x in r.runs]  # fmt: skip
    b = epsilon_from_scores(np.array(stat[0::2]), np.array(stat[1::2]),
                            selection=Explicit(0.0), delta=1e-2)  # fmt: skip
    assert b.epsilon > 1.0, (b.tp, b.fp)


def test_docs_rows_come_from_the_recorded_runs():
    """The PrivBayes rows of the docs page state what the recorded runs hold."""
    page = (ROOT / "docs" / "workflows" / "synthetic-data.md").read_text()
    results = ROOT / "docs" / "results" / "synthetic-data"
    for name in ("support", "sensitivity", "quiet-noise"):
        body = json.loads((results / f"privbayes-{name}.json").read_text())
        for g in (body["reproducer"], body["control"]):
            for tm in body["threat_models"]:
                rows = [r for r in body["results"] if r["generator"] == g
                        and r["threat_model"] == tm]  # fmt: skip
                refuted = sum(r["refutes"] for r in rows)
                eps = [r["epsilon_lower"] for r in rows]
                row = (f"| `{g}` | {body['epsilon']:g} | {tm} ({body['dataset']}) | "
                       f"{body['runs']} ({body['pilot_runs']}) × {len(rows)} seeds | "
                       f"{min(eps):.3f}–{max(eps):.3f} | {refuted} of {len(rows)} |")  # fmt: skip
                assert row in page, row


def test_docs_catalogue_rows_come_from_the_recorded_runs():
    page = (ROOT / "docs" / "workflows" / "synthetic-data.md").read_text()
    for eps in (1, 10):
        path = ROOT / "docs" / "results" / "synthetic-data" / f"privbayes-tree-flip-eps{eps}.json"
        d = json.loads(path.read_text())
        s = d["settings"]
        assert s["generators"] == ["datasynthesizer-privbayes"] and s["dataset"] == "tree-flip"
        for e in d["entries"]:
            x = e["detail"]
            row = (f"| {x['epsilon']:g} | {x['threat_model']} | {s['runs']} ({s['pilot_runs']}) "
                   f"| {e['lower_bound']['epsilon']:.3f} | "
                   f"{'yes' if e['gap']['refutes_claim'] else 'no'} | {x['mu_lower']:.3f} | "
                   f"{x['mu_estimate']:.3f} | {x['implied_mu']:.3f} |")  # fmt: skip
            assert row in page, row


@pytest.mark.parametrize("b", [0.05, 0.4, 1.0, 4.0, 30.0])
def test_laplace_llr_mean_shift_is_the_integral_of_the_statistic(b):
    """The exact mean shift against numerical integration of one cell's log-likelihood ratio
    over the Laplace density of y on D ∪ {t} (x + 1) and on D (x), and against the
    statistic itself on seeded draws (a naive Monte Carlo within 5 standard errors)."""
    from scipy.integrate import quad
    from scipy.stats import laplace

    def llr(y):
        return (abs(y) - abs(y - 1.0)) / b

    pieces = ((-np.inf, 0.0), (0.0, 1.0), (1.0, np.inf))  # the ratio's kinks at 0 and 1
    mean = [sum(quad(lambda y, m=m: llr(y) * laplace.pdf(y, m, b), lo, hi, epsabs=1e-14,
                     epsrel=1e-12, limit=200)[0] for lo, hi in pieces)
            for m in (1.0, 0.0)]  # fmt: skip
    assert laplace_llr_mean_shift([b]) == pytest.approx(mean[0] - mean[1], rel=1e-9, abs=1e-13)
    assert laplace_llr_mean_shift([b, b, 2 * b]) == pytest.approx(
        2 * laplace_llr_mean_shift([b]) + laplace_llr_mean_shift([2 * b]), rel=1e-12
    )
    wc = WORST_CASE_DATASETS.get("tree-flip")(rows=4)
    x = np.bincount(wc.D[:, 0], minlength=2).astype(float)
    rng = np.random.default_rng(7)
    draws = {side: np.array([laplace_measurement_llr(
        [{"clique": [0], "scale": b, "y": (x + shift + rng.laplace(0, b, 2)).tolist()}],
        wc.D, wc.target, wc.domain) for _ in range(4000)])
        for side, shift in (("D_prime", np.eye(2)[wc.target[0]]), ("D", 0.0))}  # fmt: skip
    got = draws["D_prime"].mean() - draws["D"].mean()
    se = math.sqrt((draws["D_prime"].var() + draws["D"].var()) / 4000)
    assert abs(got - laplace_llr_mean_shift([b])) < 5 * se + 1e-12


BAD_SCALES = [([], ValueError), ([1.0, 0.0], ValueError), ([float("nan")], ValueError),
              (["1"], TypeError)]  # fmt: skip


@pytest.mark.parametrize("bad, err", BAD_SCALES)
def test_laplace_llr_mean_shift_refuses_bad_scales(bad, err):
    with pytest.raises(err, match="scale"):
        laplace_llr_mean_shift(bad)


def _naive_network_shift(D, Dp, eps, k):
    """KL(P′‖P) + KL(P‖P′) of PrivBayes's network laws, written out naively: every order of
    the columns and every parent set, each step's probabilities ∝ exp(ε I / (2 (d − 1) S))
    with scikit-learn's mutual information and Lemma 1's S on the dataset at hand."""
    from itertools import combinations, permutations

    from sklearn.metrics import mutual_info_score

    def probs(data, V, rest):
        n, d = data.shape
        binary = [len(set(data[:, j])) <= 2 for j in range(d)]
        cands = [(c, ps) for c in rest for ps in combinations(V, min(len(V), k))]
        w = []
        for c, ps in cands:
            pa = [",".join(map(str, r)) for r in data[:, list(ps)]]
            s = (d - 1) * privbayes_sensitivity(n, binary[c] or (len(ps) == 1 and binary[ps[0]]))
            w.append(math.exp(eps * mutual_info_score(data[:, c], pa) / (2 * s)))
        return {cand: x / sum(w) for cand, x in zip(cands, w, strict=True)}

    d, laws = D.shape[1], ({}, {})
    for order in permutations(range(d)):
        for parents in _parent_sets(order, k):
            for law, data in zip(laws, (D, Dp), strict=True):
                pr = 1 / d
                for i in range(1, d):
                    pr *= probs(data, list(order[:i]), list(order[i:])).get(
                        (order[i], parents[i - 1]), 0.0)  # fmt: skip
                law[(order, parents)] = law.get((order, parents), 0.0) + pr
    return sum((laws[1][x] - laws[0][x]) * math.log(laws[1][x] / laws[0][x])
               for x in laws[0] if laws[0][x] > 0)  # fmt: skip


def _parent_sets(order, k):
    """Every choice of a parent set per step for columns added in ``order``."""
    from itertools import combinations, product

    sets = [list(combinations(order[:i], min(i, k))) for i in range(1, len(order))]
    return product(*sets)


NETWORK_CASES = [("tree-flip", 0.5, 1), ("tree-flip", 5.0, 1), ("tree-flip", 5.0, 2),
                 ("binary-flip", 0.5, 1)]  # fmt: skip


@pytest.mark.parametrize("design, eps, k", NETWORK_CASES)
def test_network_llr_mean_shift_is_the_naive_enumeration(design, eps, k):
    wc = WORST_CASE_DATASETS.get(design)(rows=4 if design == "tree-flip" else 6)
    got = network_llr_mean_shift(wc.D, wc.target, wc.domain, eps, k)
    assert got == pytest.approx(_naive_network_shift(wc.D, wc.D_prime, eps, k), rel=1e-9)
    assert got > 0


def test_docs_sensitivity_violation_exact_network_loss():
    """The page's exact figures of violation 2 on binary-flip 3 × 1,000 at ε = 1: the
    network's largest log-probability ratio and its mean shift, from the enumeration."""
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text().split())
    rec = json.loads((ROOT / "docs/results/synthetic-data/privbayes-sensitivity.json").read_text())
    assert (rec["dataset"], rec["rows"], rec["epsilon"], rec["runs"]) == (
        "binary-flip",
        1000,
        1,
        60,
    )
    wc = WORST_CASE_DATASETS.get("binary-flip")(rows=rec["rows"])
    lp, lq = network_log_laws(wc.D, wc.target, wc.domain, rec["epsilon"] / 2)
    assert np.exp(lp).sum() == pytest.approx(1) and np.exp(lq).sum() == pytest.approx(1)
    top = float(np.abs(lq - lp).max())
    shift = network_llr_mean_shift(wc.D, wc.target, wc.domain, rec["epsilon"] / 2)
    assert (f"enumerating the {lp.size} networks the search can build on the pair "
            f"(`network_log_laws`): the network's log-probability ratio reaches {top:.3f}, "
            f"{top / (rec['epsilon'] / 2):.1f}× the network's share of the claim (ε/2 = 0.5) "
            f"and {top / rec['epsilon']:.1f}× the whole claim, and its mean shift is "
            f"{shift:.3f}; {rec['runs']} pairs bound ε by about ln {rec['runs']} ≈ "
            f"{math.log(rec['runs']):.1f} at most") in page  # fmt: skip


def test_docs_privbayes_counts_at_2000_pairs_are_the_declared_runs_and_the_analysis():
    """The page's 2,000-pair PrivBayes table: each figure from the recorded runs (bounds)
    and their per-run values (shifts), the exact shifts from the analysis, and each measured
    shift within 3 standard errors of its exact value."""
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text().split())
    res = ROOT / "docs" / "results" / "synthetic-data"
    for eps in (1, 10):
        rec = json.loads((res / f"privbayes-tree-flip-eps{eps}-2000.json").read_text())
        comp = json.loads((res / f"privbayes-tree-flip-eps{eps}-2000-components.json").read_text())
        s = rec["settings"]
        assert (s["runs"], s["pilot_runs"], s["seed"], s["degree"], s["epsilon"]) == (
            2000, 100, 1, 1, eps)  # fmt: skip
        assert "Declared" in rec["declared"] and f"--epsilon {eps} " in rec["command"]
        b = (s["columns"] - s["degree"]) / (eps / 2)
        shift = laplace_llr_mean_shift([b] * (s["columns"] - s["degree"]))
        assert comp["scale"] == b and comp["analysis"]["mean_shift"] == shift
        figs = {}
        for tm in ("white-box-laplace", "white-box-network"):
            x = comp[tm]
            assert len(x["D"]) == len(x["D_prime"]) == 2000
            assert np.mean(x["D_prime"]) - np.mean(x["D"]) == pytest.approx(x["mean_shift"])
            figs[tm] = f"{x['mean_shift']:.3f} ± {x['mean_shift_se']:.3f}"
        lap, net = (e for e in rec["entries"])
        assert (lap["detail"]["threat_model"], net["detail"]["threat_model"]) == (
            "white-box-laplace", "white-box-network")  # fmt: skip
        wc = WORST_CASE_DATASETS.get("tree-flip")(rows=s["rows"])
        net_shift = network_llr_mean_shift(wc.D, wc.target, wc.domain, eps / 2, s["degree"])
        assert comp["analysis"]["network_mean_shift"] == net_shift
        row = (f"| {eps} | {b:g} | {shift:.3f} | {figs['white-box-laplace']} | "
               f"{lap['lower_bound']['epsilon']:.3f} | {eps / 2:g} | "
               f"{lap['detail']['mu_lower']:.3f} | {net_shift:.3f} | "
               f"{figs['white-box-network']} | {net['lower_bound']['epsilon']:.3f} |")  # fmt: skip
        assert row in page, row
        for tm, exact in (("white-box-laplace", shift), ("white-box-network", net_shift)):
            z = (comp[tm]["mean_shift"] - exact) / comp[tm]["mean_shift_se"]
            assert abs(z) < 3 and f"{z:+.1f}".replace("-", "−") in page
        ratio = lap["lower_bound"]["epsilon"] / (eps / 2)
        assert f"{ratio:.2f}×" in page
        bb = json.loads((res / f"privbayes-tree-flip-black-box-eps{eps}-2000.json").read_text())
        assert bb["settings"]["seed"] == s["seed"] and "Declared" in bb["declared"]
        assert [e["detail"]["threat_model"] for e in bb["entries"]] == [
            "black-box", "black-box-dcr", "black-box-density"]  # fmt: skip
        cells = " / ".join(f"{e['lower_bound']['epsilon']:.3f}" for e in bb["entries"])
        assert f"{cells} at ε = {eps}" in page, cells


def test_docs_pool_figures_come_from_the_benchmark():
    page = (ROOT / "docs" / "workflows" / "synthetic-data.md").read_text()
    pool = json.loads((ROOT / "benchmarks" / "results" / "synthetic-privbayes.json").read_text())
    pool = pool["pool"]
    p, t = pool["processes"], pool["threads"]
    assert pool["same_networks"]
    assert (f"{p['cpu_seconds_per_run']:.3f} CPU-s (the process and its pool's children) and "
            f"{p['wall_seconds_per_run']:.2f} s wall") in " ".join(page.split())  # fmt: skip
    assert f"{t['cpu_seconds_per_run']:.3f} CPU-s and {t['wall_seconds_per_run']:.2f} s wall" in (
        " ".join(page.split()))  # fmt: skip


@needs_ds
def test_the_sensitivity_fix_needs_a_public_row_count():
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=4)
    g = _gen("datasynthesizer-privbayes-public-sensitivity")
    with pytest.raises(ValueError, match="public_rows"):
        g.fit_runs([pair.D], [0], [0], domain=pair.domain)
    import DataSynthesizer.lib.PrivBayes as pb

    assert pb.Pool.__module__ == "multiprocessing.pool"  # nothing left patched


@needs_ds
def test_a_resumed_audit_takes_its_pilot_and_evaluation_from_the_checkpoint(tmp_path, monkeypatch):
    """Both stages are journalled: with every run pair finished, a rerun from the checkpoint
    fits nothing and gives the same entry (the pilot, hence the threshold, included)."""
    from dpaudit.experiments.synthetic_data import pipeline

    s = SyntheticDataSettings(generators=("datasynthesizer-privbayes",), dataset="unique-record",
                              columns=2, rows=4, threat_models=("white-box-domain",), runs=5,
                              pilot_runs=3, seed=4)  # fmt: skip
    (first,) = audit_synthetic_data(s, checkpoint=tmp_path).entries
    assert {p.name for p in tmp_path.iterdir()} >= {
        "datasynthesizer-privbayes.pilot.tasks",
        "datasynthesizer-privbayes.tasks",
    }

    def no_fit(*args, **kwargs):
        raise AssertionError("a finished run pair was fitted again")

    monkeypatch.setattr(pipeline.SyntheticRunPairs, "__call__", no_fit)
    monkeypatch.setattr(pipeline.SyntheticRunPairs, "run_group", no_fit)
    (again,) = audit_synthetic_data(s, checkpoint=tmp_path).entries
    assert again.lower_bound.epsilon == first.lower_bound.epsilon
    assert (again.detail.threshold, again.detail.tp, again.detail.fp) == (
        first.detail.threshold,
        first.detail.tp,
        first.detail.fp,
    )
