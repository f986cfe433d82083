"""smartnoise-synth's MWEM (Hardt, Ligett & McSherry 2012, arXiv:1012.4763): its pure ε claim
and (with the smartnoise environment built: ``make venv-smartnoise``) the library as installed
— the histogram it measures over read from the private data, refuted in the white-box-domain
view; the fix, its control, not — and the planted bug (the fix with its Laplace noise 0.1×)
refuted by the Laplace log-likelihood ratio of its noisy cuboids while the fix is not."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from doctest_support import module_examples
from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_mwem import _choice_logp, mwem_choice_llr, mwem_histograms
from dpaudit.experiments.synthetic_data import SyntheticDataSettings, audit_synthetic_data
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell, TabularDomain

needs_smartnoise = pytest.mark.skipif(
    not LIBRARIES["smartnoise"].available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)
MWEM = ("smartnoise-mwem", "smartnoise-mwem-public-domain", "smartnoise-mwem-quiet-noise")


def test_mwem_is_registered_with_a_pure_epsilon_claim():
    for name in MWEM:
        g = SYSTEMS.get(name)(GeneratorCell(name, 2.0, 1e-2))
        c = g.claim(rho=2.0)
        assert (c.epsilon, c.delta) == (2.0, 0.0) and "arXiv:1012.4763" in c.source
        assert "pure ε-DP" in g.mechanism
    assert SYSTEMS.get(MWEM[0])(GeneratorCell(MWEM[0], 1.0, 1e-2)).bug is None
    assert SYSTEMS.get(MWEM[2])(GeneratorCell(MWEM[2], 1.0, 1e-2)).bug
    with pytest.raises(ValueError, match="fixes iterations=3"):
        GeneratorCell(MWEM[1], 1.0, 1e-2, options=(("iterations", 30),))


@needs_smartnoise
def test_mwem_as_installed_measures_over_the_private_range_and_the_fix_does_not():
    """On D (every row 0…0) MWEM as installed builds a 1×1×1 histogram: its first noisy
    cuboid has one cell whatever its clique; the fix measures over the public 2×2×2 domain
    (2^|clique| cells), with the Laplace scale 2T/ε it states (T = 3, ε = 1: 6)."""
    pair = WORST_CASE_DATASETS.get("unique-record")(rows=50)
    for name, cells in ((MWEM[0], lambda c: 1), (MWEM[1], lambda c: 2 ** len(c))):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2))
        r = g.fit_runs([pair.D], [0, 0], [1, 2], domain=pair.domain, observe=("domain",))
        assert r.rho == 0.5  # ε²/2
        for run in r.runs:
            (m,) = run["measurements"]
            assert len(m["y"]) == cells(m["clique"])
            if name == MWEM[1]:
                assert m["scale"] == pytest.approx(6.0)


@needs_smartnoise
def test_mwem_as_installed_is_refuted_by_its_private_range_and_the_fix_is_not():
    s = SyntheticDataSettings(
        generators=MWEM[:2], dataset="unique-record", runs=15, pilot_runs=3, group_size=18,
        threat_models=("white-box-domain",), seed=2,
    )  # fmt: skip
    bad, control = audit_synthetic_data(s).entries
    assert bad.gap.refutes_claim and bad.detail.fp == 0 and bad.detail.tp == 15
    assert bad.lower_bound.epsilon > 1.2
    assert not control.gap.refutes_claim and control.lower_bound.epsilon == 0.0


@needs_smartnoise
def test_planted_quiet_noise_is_refuted_and_the_fixed_mwem_is_not():
    """White-box Laplace LLR of the noisy cuboids (stated scale), ε = 1, unique-record pair:
    120 run pairs after 30 pilot pairs, each fit ~0.01 CPU-s (T = 3). Over root seeds 1-8
    the planted bug's bound was 1.44-1.86 (seed 1: 1.64) and the fix's 0.0 every time; its
    noise comes from OpenDP (not seedable), so the margin above 1 is what makes it stable."""
    s = SyntheticDataSettings(
        generators=(MWEM[2], MWEM[1]), dataset="unique-record", runs=120, pilot_runs=30,
        group_size=150, threat_models=("white-box-laplace",), seed=1,
    )  # fmt: skip
    bug, ok = audit_synthetic_data(s).entries
    assert bug.system == MWEM[2] and bug.gap.refutes_claim and bug.lower_bound.epsilon > 1.0
    assert not ok.gap.refutes_claim


_CHECK = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import _handler_smartnoise as H
rng = np.random.default_rng(0)
cards = [2, 3, 4]
X = np.stack([rng.integers(0, k, 300) for k in cards], 1)
for histogram in ("public", "data"):
    body = {"synth": "mwem", "epsilon": 1.0, "delta": 0.01, "cardinalities": cards,
            "observe": ["measurements"], "options": {"histogram": histogram, "iterations": 8},
            "noise_scale": 1e-9, "runs": [{"dataset": 0, "seed": 3}]}
    (out, _), cliques = H.op_fit(body, {"data0": X}), set()
    for m in out["runs"][0]["measurements"]:
        x = np.zeros([cards[j] for j in m["clique"]])
        np.add.at(x, tuple(X[:, m["clique"]].T), 1)
        assert np.allclose(x.ravel(), m["y"], atol=1e-4), (m["clique"], m["y"])
        assert m["scale"] == 16.0, m["scale"]
        cliques.add(len(m["clique"]))
    assert cliques == {1, 2}, cliques
print("ok")
"""


@needs_smartnoise
def test_mwem_cuboids_are_recorded_as_marginals_in_c_order():
    """With the noise scaled to 10⁻⁹, every recorded cuboid equals the exact marginal of the
    table over its clique in C order (2 × 3 × 4 domain, one- and two-way cliques), at the
    Laplace scale 2T/ε = 16 the library states (run in the smartnoise environment)."""
    import subprocess
    from pathlib import Path

    handler = Path(LIBRARIES["smartnoise"].handler).parent
    r = subprocess.run([str(LIBRARIES["smartnoise"].python()), "-W", "ignore", "-c", _CHECK,
                        str(handler)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# --- MWEM's exponential-mechanism choices (white-box-mwem) ---------------------------------


def test_choice_probability_is_the_redraw_loop_s():
    """P(k) with redraws of measured cuboids (11 draws, then uniform among the unmeasured)
    against 200,000 simulated runs of the library's loop (seeded), within 5 binomial sd."""
    q = np.array([30.0, 10.0, 28.0, 25.0, 12.0, 29.0])
    eps, measured, draws = 0.5, [0, 2, 5], 11
    logits = eps * q / 2
    p = np.exp(logits - logits.max())
    p /= p.sum()
    g = np.random.default_rng(46)
    n = 200_000
    d = g.choice(q.size, size=(n, draws), p=p)
    ok = ~np.isin(d, measured)
    first = np.where(ok.any(axis=1), d[np.arange(n), ok.argmax(axis=1)], -1)
    unmeasured = np.array([1, 3, 4])
    first[first < 0] = unmeasured[g.integers(0, 3, size=int((first < 0).sum()))]
    for k in unmeasured:
        want = math.exp(_choice_logp(q, eps, int(k), measured, draws))
        got = float(np.mean(first == k))
        assert abs(got - want) < 5 * math.sqrt(want * (1 - want) / n), (k, got, want)
    assert math.exp(_choice_logp(q, eps, 3, [], draws)) == pytest.approx(p[3])


def _rounds():
    """Three hand-made rounds on the 2 × 3 domain (the worker's record format)."""
    sels = [{"candidates": [[0], [1], [0, 1]], "epsilon": 0.4, "chosen": k, "measured": m,
             "draws": 11, "iterations": 20, "columns": [0, 1]}
            for k, m in ((2, []), (0, [2]), (1, [2, 0]))]  # fmt: skip
    ms = [{"clique": [0, 1], "scale": 2.5, "y": [3.0, 1.0, 0.5, 0.0, 1.5, 2.0]},
          {"clique": [0], "scale": 2.5, "y": [4.0, 3.0]},
          {"clique": [1], "scale": 2.5, "y": [3.0, 2.5, 2.0]}]  # fmt: skip
    return sels, ms


def test_replayed_histograms_are_a_naive_multiplicative_weights_loop():
    """The replay against MWEM's update written out cell by cell over the 2-D histogram (the
    library's order: first clique column fastest), and the choice LLR against the explicit
    softmax of the scores under each dataset."""
    sels, ms = _rounds()
    dom = TabularDomain((2, 3))
    D = np.array([[0, 0], [0, 1], [1, 2], [1, 2], [0, 0]])
    t = np.array([1, 0])
    hists = mwem_histograms(sels, ms, len(D), dom)
    A = np.full((2, 3), len(D) / 6.0)
    cells = {(0, 1): [(a, b) for b in range(3) for a in range(2)], (0,): [(0,), (1,)],
             (1,): [(0,), (1,), (2,)]}  # fmt: skip
    done = []
    for r, m in enumerate(ms):
        np.testing.assert_allclose(hists[r], A.ravel(), rtol=1e-12)
        done.append(m)
        total = A.sum()
        for _ in range(20):
            for mm in done:
                clique = tuple(mm["clique"])
                y = np.asarray(mm["y"]).reshape([(2, 3)[c] for c in clique])
                for cell in cells[clique]:
                    sl = [slice(None), slice(None)]
                    for c, v in zip(clique, cell, strict=True):
                        sl[c] = v
                    A[tuple(sl)] *= math.exp((y[cell] - A[tuple(sl)].sum()) / (2 * total))
                    A *= total / A.sum()
    llr = 0.0
    for r, s in enumerate(sels):
        lp = []
        for data, h in ((D, mwem_histograms(sels, ms, 5, dom)[r]),
                        (np.vstack([D, t]), mwem_histograms(sels, ms, 6, dom)[r])):  # fmt: skip
            H = h.reshape(2, 3)
            xs = [np.bincount(data[:, 0], minlength=2), np.bincount(data[:, 1], minlength=3),
                  np.bincount(data[:, 0] * 3 + data[:, 1], minlength=6)]  # fmt: skip
            xh = [H.sum(axis=1), H.sum(axis=0), H.ravel()]
            q = np.array([np.abs(x - e).mean() for x, e in zip(xs, xh, strict=True)])
            lp.append(_choice_logp(q, s["epsilon"], s["chosen"], s["measured"], 11))
        llr += lp[1] - lp[0]
    assert mwem_choice_llr(sels, ms, D, t, dom) == pytest.approx(llr, rel=1e-12)


def test_choice_llr_refuses_records_it_cannot_replay():
    sels, ms = _rounds()
    dom, D, t = TabularDomain((2, 3)), np.zeros((4, 2), dtype=int), np.array([1, 0])
    cases = [(lambda s, m: s[1].update(measured=[1]), "the earlier choices are"),
             (lambda s, m: s[0].update(columns=[0]), "no splits"),
             (lambda s, m: s[2].update(chosen=0), "already measured"),
             (lambda s, m: m[1].update(clique=[1], y=[1.0, 1.0, 1.0]), "the choice of round 1"),
             (lambda s, m: s[0].update(chosen=7), "not one of its 3 candidates"),
             (lambda s, m: m.pop(), "3 choices but 2 noisy cuboids"),
             (lambda s, m: m[0].update(y=[1.0]), "has 1 cells")]  # fmt: skip
    for change, match in cases:
        s, m = (copy.deepcopy(x) for x in _rounds())
        change(s, m)
        with pytest.raises(ValueError, match=match):
            mwem_choice_llr(s, m, D, t, dom)
    with pytest.raises(ValueError, match="differ from the library's"):  # scores not the library's
        mwem_choice_llr([dict(sels[0], q=[0.0, 0.0, 0.0])], ms, D, t, dom, check_observed=D)


def test_mwem_module_examples_run():
    assert module_examples("dpaudit.attacks._synthetic_mwem").failed == 0


@needs_smartnoise
def test_mwem_choices_replay_the_library_s_histograms_and_scores():
    """MWEM as installed at T = 8 on a 2 × 3 × 4 table holding every value (its histogram then
    spans the public domain; its pool of 16 cuboids repeats some, so redraws happen) and the
    fix at T = 3 on unique-record: every round's replayed histogram and scores equal the
    library's (``check_observed``); a changed score or histogram is refused."""
    g = np.random.default_rng(0)
    dom = TabularDomain((2, 3, 4))
    X = np.stack([g.permutation(np.arange(60) % k) for k in dom.cardinalities], axis=1)
    pair = WORST_CASE_DATASETS.get("unique-record")(rows=50)
    for name, opts, tables, d in (
        (MWEM[0], (("iterations", 8),), [X], dom),
        (MWEM[1], (), [pair.D, pair.D_prime], pair.domain),
    ):  # fmt: skip
        gen = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=opts))
        which = [i % len(tables) for i in range(6)]
        r = gen.fit_runs(tables, which, list(range(6)), domain=d,
                         observe=("measurements", "selections"))  # fmt: skip
        T = dict(opts).get("iterations", 3)
        for run, w in zip(r.runs, which, strict=True):
            sels, ms = run["selections"], run["measurements"]
            assert len(sels) == len(ms) == T
            assert [s["measured"] for s in sels] == [[s["chosen"] for s in sels[:i]]
                                                     for i in range(T)]  # fmt: skip
            llr = mwem_choice_llr(sels, ms, tables[0], np.ones(3, dtype=int), d,
                                  check_observed=tables[w])  # fmt: skip
            assert math.isfinite(llr)
    bad = copy.deepcopy(sels)
    bad[1]["q"][0] += 1e-3
    with pytest.raises(ValueError, match="differ from the library's"):
        mwem_choice_llr(bad, ms, pair.D, pair.target, pair.domain, check_observed=tables[w])
    bad = copy.deepcopy(sels)
    bad[2]["xhat"][0] *= 1.01
    with pytest.raises(ValueError, match="replayed histogram"):
        mwem_choice_llr(bad, ms, pair.D, pair.target, pair.domain, check_observed=tables[w])


def test_docs_mwem_white_box_figures_come_from_the_recorded_runs():
    """The MWEM section's and the summary paragraph's white-box figures (with and without the
    choices, on the same runs) state what ``docs/results/synthetic-data/mwem-worst-case-eps*``
    holds."""
    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    for eps, with_ in ((1, "with the choices"), (10, "with them")):
        d = json.loads((root / f"docs/results/synthetic-data/mwem-worst-case-eps{eps}.json")
                       .read_text())  # fmt: skip
        assert d["settings"]["dataset"] == "tree-flip" and d["settings"]["runs"] == 1600
        es = {e["detail"]["threat_model"]: e for e in d["entries"]}
        full, lap, ch = (es[t] for t in ("white-box-mwem", "white-box-laplace",
                                         "white-box-mwem-choices"))  # fmt: skip
        x, y, c = full["detail"], lap["detail"], ch["detail"]
        digits = 4 if eps == 1 else 3
        lo, hi = (c["mean_shift_interval"][k] for k in ("low", "high"))
        shift = f"by {c['mean_shift']:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"
        shift = shift.replace("-", "−")
        mi = x["mu_estimate_interval"]
        figures = [
            f"is {x['mu_estimate']:.3f} {with_} and {y['mu_estimate']:.3f} without",
            f"ε ≥ {full['lower_bound']['epsilon']:.3f} and {lap['lower_bound']['epsilon']:.3f}",
            shift, f"{x['mu_estimate']:.3f} ({mi['low']:.2f}–{mi['high']:.2f})",
            (f"(μ ≥ {x['mu_lower']:.3f} and {y['mu_lower']:.3f}); the choices alone shift the "
             f"log-likelihood ratio {shift} where the cuboids shift it by {y['mean_shift']:.3f}"
             if eps == 1 else f"{shift} against {y['mean_shift']:.2f}"),
        ]  # fmt: skip
        for fig in figures:
            assert fig in page, fig
    ur = []
    for eps in (1, 10):
        d = json.loads((root / f"docs/results/synthetic-data/mwem-unique-record-black-box-eps{eps}"
                        ".json").read_text())  # fmt: skip
        es = {e["detail"]["threat_model"]: e["detail"] for e in d["entries"]}
        assert all(es[t]["tp"] == es[t]["fp"] == 70 for t in ("black-box", "black-box-dcr"))
        ur.append(-es["black-box"]["mean_shift"])
    assert f"{ur[0]:.2f} and {ur[1]:.2f} fewer copies of it on D ∪ {{t}}" in page
