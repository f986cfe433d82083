"""smartnoise-synth 1.0.8's GANs, DPCTGAN and PATECTGAN (Rosenblatt et al. 2020,
arXiv:2011.05537), DPGAN (Xie et al. 2018, arXiv:1802.06739) and PATEGAN (Jordon, Yoon & van
der Schaar 2019, ICLR): their (ε, δ) claims and (with the environment built: ``make
venv-smartnoise-gan``; opacus 0.14.0 on torch 2.13.0) a fit of each as installed, with what
the library's own accountant spent, and the planted bugs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.attacks._synthetic import WORST_CASE_DATASETS
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell

needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)
GANS = ("smartnoise-dpctgan", "smartnoise-dpctgan-quiet-noise", "smartnoise-patectgan",
        "smartnoise-patectgan-quiet-noise", "smartnoise-dpgan", "smartnoise-dpgan-quiet-noise",
        "smartnoise-pategan", "smartnoise-pategan-quiet-noise")  # fmt: skip
_SOURCES = {"dpctgan": "arXiv:2011.05537", "patectgan": "arXiv:2011.05537",
            "dpgan": "arXiv:1802.06739", "pategan": "Jordon, Yoon & van der Schaar"}  # fmt: skip


def test_gans_are_registered_with_the_librarys_epsilon_delta_claim():
    for name in GANS:
        g = SYSTEMS.get(name)(GeneratorCell(name, 2.0, 1e-3))
        c = g.claim(rho=math.nan)
        assert (c.epsilon, c.delta) == (2.0, 1e-3) and _SOURCES[g.spec.synth] in c.source
        assert ("opacus" in g.mechanism) == (g.spec.synth in ("dpctgan", "dpgan"))
        views = {"dpctgan": "gradients", "dpgan": "gradients", "patectgan": "student",
                 "pategan": "votes"}  # fmt: skip
        assert g.spec.white_box[0] == views[g.spec.synth]
        assert (g.bug is not None) == name.endswith("quiet-noise")
    with pytest.raises(ValueError, match="delta"):
        SYSTEMS.get(GANS[0])(GeneratorCell(GANS[0], 1.0, 1e-2)).claim(delta=1e-3)


def test_the_mu_beside_the_claim_is_tight_at_the_claimed_epsilon_delta():
    from dpaudit.conversions import gdp_epsilon

    g = SYSTEMS.get(GANS[2])(GeneratorCell(GANS[2], 1.0, 1e-2))
    assert gdp_epsilon(g.implied_mu(math.nan), 1e-2) == pytest.approx(1.0, rel=1e-9)


def _fit(name: str, epsilon: float, options: tuple, rows: int = 20, **kw):
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=rows)
    g = SYSTEMS.get(name)(GeneratorCell(name, epsilon, 1e-2, options=options))
    return g.fit_runs([pair.D, pair.D_prime], [1, 0], [3, 4], domain=pair.domain, **kw)


@needs_gan
def test_dpctgan_fits_samples_and_ends_past_its_epsilon_by_its_own_accountant():
    """DPCTGAN reads opacus's ε before each epoch and stops at the first reading above ε:
    the epoch before it was trained on a reading ≤ ε and paid for after (2 optimizer steps
    an epoch here: 21 rows, batch 16; a fake-data step and a real-data step)."""
    r = _fit("smartnoise-dpctgan", 1.0, (("epochs", 50), ("batch_size", 16)),
             observe=("synthetic",), sample_rows=30)  # fmt: skip
    assert r.version == "1.0.8" and math.isnan(r.rho)
    for run, table in zip(r.runs, r.synthetic, strict=True):
        a = run["accounting"]
        assert table.shape == (30, 2) and set(np.unique(table)) <= {0, 1}
        assert a["steps"] == 2 * a["epochs"] and a["epochs"] < 50
        assert max(a["reported"][:-1]) <= 1.0 < a["reported"][-1] == pytest.approx(a["spent"])


@needs_gan
def test_patectgan_fits_samples_and_ends_past_its_epsilon_by_its_own_accountant():
    """PATECTGAN reads its moments accountant before each iteration and stops at the first
    reading above ε: its last iteration was trained on a reading ≤ ε."""
    opts = (("batch_size", 16), ("student_iters", 2), ("teacher_iters", 1),
            ("noise_multiplier", 0.01))  # fmt: skip
    r = _fit("smartnoise-patectgan", 1.0, opts, observe=("synthetic",), sample_rows=30)
    for run, table in zip(r.runs, r.synthetic, strict=True):
        a = run["accounting"]
        assert table.shape == (30, 2) and a["queries"] == 16 * a["student_steps"]
        assert a["reported"][-1] <= 1.0 < a["spent"]


@needs_gan
def test_dpgan_fits_samples_and_ends_past_its_epsilon_by_its_own_accountant():
    """DPGAN reads opacus's ε before each epoch and stops at the first reading above ε, as
    DPCTGAN does (21 and 20 rows, batch 8 with ``drop_last``: 2 batches an epoch, each a
    generated-rows step and a real-rows step, all 4 counted at sampling rate 8/n)."""
    r = _fit("smartnoise-dpgan", 1.0, (("epochs", 50), ("batch_size", 8)),
             observe=("synthetic",), sample_rows=30)  # fmt: skip
    assert r.version == "1.0.8" and math.isnan(r.rho)
    for run, table, spent in zip(r.runs, r.synthetic, (1.01995, 1.08300), strict=True):
        a = run["accounting"]
        assert table.shape == (30, 2) and set(np.unique(table)) <= {0, 1}
        assert (a["epochs"], a["steps"], len(a["reported"])) == (4, 16, 5)
        assert max(a["reported"][:-1]) <= 1.0 < a["reported"][-1] == pytest.approx(a["spent"])
        assert a["spent"] == pytest.approx(spent, abs=1e-5)  # n = 21 (D ∪ {t}), then 20 (D)


@needs_gan
def test_pategan_fits_samples_and_ends_past_its_epsilon_by_its_own_accountant():
    """PATEGAN (1 teacher on 1,000 and 1,001 rows) reads its moments accountant before each
    iteration and stops at the first reading above ε. Its Laplace scale is 1/λ = 1000 and its
    data-dependent bound carries no log, so it never binds: after Q queries the ε is the
    data-independent min_l (2λ²l(l + 1)Q + log 1/δ)/l (10 iterations of 5 student steps of
    512 queries here, 2,560 before the last)."""
    r = _fit("smartnoise-pategan", 1.0, (("batch_size", 512), ("teacher_iters", 1)), rows=1000,
             observe=("synthetic",), sample_rows=30)  # fmt: skip

    def eps(q):
        return min((2e-6 * q * l * (l + 1) - math.log(1e-2)) / l for l in range(1, 101))

    for run, table in zip(r.runs, r.synthetic, strict=True):
        a = run["accounting"]
        assert table.shape == (30, 2) and set(np.unique(table)) <= {0, 1}
        assert (a["queries"], a["student_steps"]) == (25_600, 50)
        assert a["reported"][-1] <= 1.0 < a["spent"]
        assert a["reported"][-1] == pytest.approx(eps(23_040), rel=1e-6)
        assert a["spent"] == pytest.approx(eps(25_600), rel=1e-6)
    assert eps(25_600) == pytest.approx(1.02369, abs=1e-5)


def test_pategan_refuses_fewer_than_1000_rows_before_any_run():
    """int(rows / 1000) teachers: none under 1,000 rows, where the library's np.array_split
    fails mid-run; dpaudit refuses the table first (no environment needed)."""
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=999)
    g = SYSTEMS.get("smartnoise-pategan")(GeneratorCell("smartnoise-pategan", 1.0, 1e-2))
    with pytest.raises(ValueError, match=r"datasets\[0\] has 999 rows.*1,000 rows"):
        g.fit_runs([pair.D, pair.D_prime], [0, 1], [0, 1], domain=pair.domain)


_NOISE = """
import sys, warnings, numpy as np, torch
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import _handler_smartnoise_gan as H
import opacus
import snsynth.pytorch.nn.patectgan as P
out = []
for scale in (1.0, 0.1):
    engines = []
    undo = H._patch_dpctgan(scale, engines)
    m = torch.nn.Linear(4, 1)
    e = opacus.PrivacyEngine(m, batch_size=10, sample_size=100, noise_multiplier=5.0,
                             max_grad_norm=1.0)
    m.weight.grad = torch.zeros_like(m.weight)
    z = torch.stack([e._generate_noise(1.0, m.weight) for _ in range(5000)])
    undo()
    undo = H._patch_patectgan(scale, [])
    np.random.seed(0)
    teacher = lambda x: torch.ones(x.shape[0], 1)
    labels, _ = P.pate(torch.zeros(20000, 3), [teacher], 0.1)
    undo()
    out.append((float(z.std()), float(labels.mean()), len(engines), e.noise_multiplier))
print(out)
"""


@needs_gan
def test_the_planted_bugs_draw_a_tenth_of_the_noise_the_accountants_are_given():
    """With ``noise_scale`` 0.1 the worker's opacus engine draws Gaussian noise of standard
    deviation 0.5 (0.1 × 5 × 1) while keeping noise multiplier 5 for its accountant, and
    PATECTGAN's votes get Laplace noise of scale 1 instead of 1/0.1 = 10: one teacher
    voting "real" passes the 1/2 threshold with probability 1 − e^{−λ/2}/2, 0.524 at
    λ = 0.1 and 0.697 at λ = 1."""
    import ast
    import subprocess
    from pathlib import Path

    lib = LIBRARIES["smartnoise-gan"]
    r = subprocess.run([str(lib.python()), "-c", _NOISE, str(Path(lib.handler).parent)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (sd1, p1, n1, nm1), (sd01, p01, n01, nm01) = ast.literal_eval(r.stdout.strip())
    assert n1 == n01 == 1 and nm1 == nm01 == 5.0
    assert sd1 == pytest.approx(5.0, rel=0.05) and sd01 == pytest.approx(0.5, rel=0.05)
    assert p1 == pytest.approx(1 - math.exp(-0.05) / 2, abs=0.01)
    assert p01 == pytest.approx(1 - math.exp(-0.5) / 2, abs=0.01)


_NOISE_GAN = """
import sys, warnings, numpy as np, torch
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import _handler_smartnoise_gan as H
import opacus
import snsynth.pytorch.nn.dpgan as DG
import snsynth.pytorch.nn.pategan as PG
from snsynth.pytorch.nn import privacy_utils
out = []
for scale in (1.0, 0.1):
    engines, reported = [], []
    undo = H._patch_dpgan(scale, engines, reported, 0)
    m = torch.nn.Linear(4, 1)
    e = DG.PrivacyEngine(m, batch_size=10, sample_size=100, noise_multiplier=3.5,
                         max_grad_norm=1.0)
    e.get_privacy_spent(1e-2)
    m.weight.grad = torch.zeros_like(m.weight)
    z = torch.stack([e._generate_noise(1.0, m.weight) for _ in range(5000)])
    undo()
    undo = H._patch_patectgan(scale, [], module="pategan")
    np.random.seed(0)
    teacher = lambda x: torch.ones(x.shape[0], 1)
    labels, _ = PG.pate(torch.zeros(20000, 3), [teacher], 0.1)
    undo()
    restored = DG.PrivacyEngine is opacus.PrivacyEngine and PG.pate is privacy_utils.pate
    out.append((float(z.std()), float(labels.mean()), len(engines), len(reported),
                e.noise_multiplier, restored))
for synth in ("dpgan", "pategan"):
    try:
        H.op_fit({"synth": synth, "epsilon": 1.0, "delta": 1e-2, "cardinalities": [2, 2],
                  "options": {"conditions": "public"}, "runs": []}, {})
    except ValueError as err:
        out.append(str(err))
print(out)
"""


@needs_gan
def test_dpgans_and_pategans_planted_bugs_draw_a_tenth_of_the_noise():
    """As for DPCTGAN and PATECTGAN: with ``noise_scale`` 0.1 the opacus engine DPGAN builds
    (under the name its module imported) draws Gaussian noise of standard deviation 0.35
    (0.1 × 3.5 × 1) while keeping noise multiplier 3.5 for its accountant, whose readings
    are recorded; PATEGAN's ``pate`` (its module's name) one teacher's vote passes the 1/2
    threshold with probability 1 − e^{−λ/2}/2: 0.524 at λ = 0.1, 0.697 at λ = 1. Both
    refuse the ``conditions`` option (no conditional vectors)."""
    import ast
    import subprocess
    from pathlib import Path

    lib = LIBRARIES["smartnoise-gan"]
    r = subprocess.run([str(lib.python()), "-c", _NOISE_GAN, str(Path(lib.handler).parent)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    one, tenth, *refused = ast.literal_eval(r.stdout.strip())
    assert one[2:] == tenth[2:] == (1, 1, 3.5, True)
    assert one[0] == pytest.approx(3.5, rel=0.05) and tenth[0] == pytest.approx(0.35, rel=0.05)
    assert one[1] == pytest.approx(1 - math.exp(-0.05) / 2, abs=0.01)
    assert tenth[1] == pytest.approx(1 - math.exp(-0.5) / 2, abs=0.01)
    assert [m.split(" has no")[0] for m in refused] == ["DPGAN", "PATEGAN"]
    assert all("conditional vectors" in m for m in refused)


def test_the_pages_gan_figures_are_those_of_the_recorded_audit():
    """The "DP GANs" section of the synthetic-data page states what
    ``docs/results/synthetic-data/gan-unique-record-black-box-eps1.json`` holds."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    d = json.loads((root / "docs/results/synthetic-data/gan-unique-record-black-box-eps1.json")
                   .read_text())  # fmt: skip
    page = (root / "docs/workflows/synthetic-data.md").read_text()
    section = " ".join(
        page.split("## DP GANs (smartnoise-synth 1.0.8)")[1].split("\n## ")[0].split()
    )
    assert d["settings"]["runs"] == 20 and d["settings"]["pilot_runs"] == 10 and d["seed"] == 46
    assert "--runs 20 --pilot-runs 10" in d["command"] and "--seed 46" in d["command"]
    e = {(x["system"], x["detail"]["threat_model"]): x for x in d["entries"]}
    assert len(e) == 12 and all(x["lower_bound"]["epsilon"] == 0.0 for x in e.values())
    for name, tp, fp, count, unseen, sec in (
        ("smartnoise-dpctgan", 7, 12, 70, 818, "3.8"),
        ("smartnoise-patectgan", 11, 13, 37, 650, "4.6"),
    ):
        c, u = e[(name, "black-box")]["detail"], e[(name, "black-box-unseen")]["detail"]
        assert (c["tp"], c["fp"], c["threshold"], u["threshold"]) == (tp, fp, count, unseen)
        assert f"{c['seconds_per_run']:.1f}" == sec and f"{sec} " in section
        assert f"{c['mu_estimate']:.2f}" in section
        d_ = e[(name, "black-box-dcr")]["detail"]
        assert d_["tp"] == d_["fp"] == 20
    assert f"{d['timings']['total']:,.0f} s" in section


def test_the_pages_eps10_figures_are_those_of_the_recorded_audit():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    d = json.loads((root / "docs/results/synthetic-data/gan-unique-record-black-box-eps10.json")
                   .read_text())  # fmt: skip
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    assert (d["settings"]["runs"], d["settings"]["pilot_runs"], d["seed"]) == (5, 3, 46)
    assert "--epsilon 10 --runs 5 --pilot-runs 3" in d["command"]
    e = {x["detail"]["threat_model"]: x for x in d["entries"]}
    assert all(x["lower_bound"]["epsilon"] == 0.0 for x in e.values())
    count, unseen = e["black-box"]["detail"], e["black-box-unseen"]["detail"]
    assert (count["threshold"], count["tp"], count["fp"]) == (0.0, 5, 5)
    assert (unseen["threshold"], unseen["tp"], unseen["fp"]) == (1.0, 2, 2)
    assert f"{count['seconds_per_run']:.0f} CPU-s a fit" in page
    assert f"{d['timings']['total']:,.0f} s wall" in page


def test_the_pages_adult_figures_are_those_of_the_recorded_audit():
    """The GANs' black-box audit on Adult (the summary table's average-case cells): its
    settings are MST's (the synthetic-adult config at ε = 1) and the page's figures are its."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    d = json.loads((root / "docs/results/synthetic-data/gan-adult-black-box-eps1.json")
                   .read_text())  # fmt: skip
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    s = d["settings"]
    assert (s["dataset"], s["rows"], s["columns"], s["epsilon"]) == (
        "adult-categorical",
        1000,
        4,
        1.0,
    )
    assert (s["runs"], s["pilot_runs"], d["seed"]) == (50, 20, 46)
    assert "--config synthetic-adult" in d["command"] and "--epsilon 1" in d["command"]
    assert len(d["entries"]) == 12 and all(e["lower_bound"]["epsilon"] == 0.0 for e in d["entries"])
    secs = {e["detail"]["generator"]: e["detail"]["seconds_per_run"] for e in d["entries"]}
    names = ("dpgan", "pategan", "dpctgan", "patectgan")
    cost = ", ".join(f"{secs['smartnoise-' + n]:.1f}" for n in names)
    assert cost == "1.5, 2.7, 3.6, 4.0"
    assert "A fit costs 1.5 CPU-s (DPGAN), 2.7 (PATEGAN), 3.6 (DPCTGAN) and 4.0 (PATECTGAN)" in page
    assert f"`gan-adult-black-box-eps1.json`, {d['timings']['total']:,.0f} s on 2 workers" in page


def test_the_density_reruns_repeat_the_first_audits_tables_where_the_page_says():
    """The reruns with the density ratio: every bound 0; PATECTGAN's, DPGAN's and PATEGAN's
    count, unseen and DCR figures equal the first audits'; DPCTGAN's count as the page says."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "docs"
    page = " ".join((root / "workflows/synthetic-data.md").read_text().split())

    def entries(name: str) -> dict:
        d = json.loads((root / "results/synthetic-data" / name).read_text())
        return d, {(e["system"], e["detail"]["threat_model"]): e for e in d["entries"]}

    pairs = (("gan-unique-record-black-box-eps1.json",
              "gan-unique-record-black-box-density-eps1.json"),
             ("dpgan-pategan-unique-record-black-box-eps1.json",
              "dpgan-pategan-unique-record-black-box-density-eps1.json"))  # fmt: skip
    keys = ("tp", "fp", "threshold")
    for first, rerun in pairs:
        (_, old), (d, new) = entries(first), entries(rerun)
        assert "black-box-density" in d["command"] and "--seed 46" in d["command"]
        assert f"`{rerun}` ({d['timings']['total']:.0f} s" in page
        assert all(e["lower_bound"]["epsilon"] == 0.0 for e in new.values())
        for (system, model), e in old.items():
            same = all(e["detail"][k] == new[(system, model)]["detail"][k] for k in keys)
            if not system.startswith("smartnoise-dpctgan"):
                assert same, (system, model)
            elif model == "black-box":
                assert not same, (system, model)  # refitted: the worker seeds opacus now
    count = entries(pairs[0][1])[1][("smartnoise-dpctgan", "black-box")]["detail"]
    assert (count["tp"], count["fp"], count["threshold"]) == (4, 6, 79.0)
    assert "4 and 6 of 20 runs at or above the pilot's threshold of 79 copies" in page


def test_the_pages_dpgan_eps10_black_box_figures_are_the_recorded_audit():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    d = json.loads((root / "docs/results/synthetic-data/dpgan-unique-record-black-box-eps10.json")
                   .read_text())  # fmt: skip
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text().split())
    assert (d["settings"]["runs"], d["settings"]["pilot_runs"], d["seed"]) == (20, 10, 46)
    assert "--epsilon 10 --runs 20 --pilot-runs 10" in d["command"]
    e = {x["detail"]["threat_model"]: x for x in d["entries"]}
    assert len(e) == 4 and all(x["lower_bound"]["epsilon"] == 0.0 for x in e.values())
    count = e["black-box"]["detail"]
    assert (count["threshold"], count["tp"], count["fp"]) == (0.0, 20, 20)
    figures = f"{d['timings']['total']:,.0f} s, {count['seconds_per_run']:.1f} CPU-s a fit"
    assert f"`dpgan-unique-record-black-box-eps10.json`, {figures}" in page
