"""smartnoise-synth's MWEM (Hardt, Ligett & McSherry 2012, arXiv:1012.4763): its pure ε claim
and (with the smartnoise environment built: ``make venv-smartnoise``) the library as installed
— the histogram it measures over read from the private data, refuted in the white-box-domain
view; the fix, its control, not — and the planted bug (the fix with its Laplace noise 0.1×)
refuted by the Laplace log-likelihood ratio of its noisy cuboids while the fix is not."""

from __future__ import annotations

import pytest

from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.experiments.synthetic_data import SyntheticDataSettings, audit_synthetic_data
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell

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
