"""DPCTGAN's training reads the private data outside its mechanism (violation 5 in
training): ``white-box-training-conditions`` (the conditional vectors its training draws by
the private category frequencies) and ``white-box-steps`` (the epochs its accountant allows
at the rate B/n, n the private row count), each with its control — the statistic and its
place among the threat models here, and, with ``make venv-smartnoise-gan``, the library's
draws and step counts as recorded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from dpaudit.attacks._synthetic import SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_gan import LOSS_CAP, target_conditions
from dpaudit.experiments.synthetic_data import SyntheticDataSettings
from dpaudit.systems.synthetic import GENERATORS, LIBRARIES, GeneratorCell

#: The settings of the recorded audits: the library's σ = 5, 4 rows a batch, DPCTGAN's small
#: public network (no hidden discriminator layer).
TRAINING = ("batch_size=4", "discriminator_dim=", "generator_dim=8", "embedding_dim=8")
needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)
ROOT = Path(__file__).resolve().parents[2]


def _pair():
    return WORST_CASE_DATASETS.get("twin-record")(columns=3, rows=50)


def test_the_statistic_is_the_binomial_llr_of_the_training_draws_on_ts_categories():
    """On twin-record a draw lands on one of t's categories with probability 1/50 on D and
    2/51 on D ∪ {t}: the statistic is the naive Binomial log-likelihood ratio of that count
    over every draw, capped at 5."""
    pair = _pair()
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-training-conditions")
    rng = np.random.default_rng(3)
    cats = rng.integers(0, 6, size=1584)
    cats[cats % 2 == 1] = 0  # t's categories (1, 3, 5) on a few draws only
    cats[:48] = [1, 3, 5] * 16
    run = {"training-conditions": {"categories": cats, "rule": "frequencies", "draws": 1584}}
    k = target_conditions(cats, pair.target, pair.domain.cardinalities)
    assert k == 48
    naive = binom.logpmf(k, 1584, 2 / 51) - binom.logpmf(k, 1584, 1 / 50)
    assert tm.statistic(run, None, pair, pair.D) == pytest.approx(naive, rel=1e-12)
    cats[:200] = 1
    assert tm.statistic(run, None, pair, pair.D) == LOSS_CAP
    with pytest.raises(ValueError, match="DPCTGAN's training drew: the run holds none"):
        tm.statistic({"conditions": run["training-conditions"]}, None, pair, pair.D)


def test_the_threat_models_serve_dpctgan_and_its_controls_only():
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-training-conditions")
    served = {g for g in GENERATORS.names()
              if tm.serves(GENERATORS.get(g).synth, GENERATORS.get(g).white_box)}  # fmt: skip
    assert served == {g for g in GENERATORS.names() if g.startswith("smartnoise-dpctgan")}
    assert {"smartnoise-dpctgan-public-training-conditions", "smartnoise-dpctgan-public-rows"} <= (
        served
    )
    steps = SYNTHETIC_THREAT_MODELS.get("white-box-steps")
    assert steps.serves("dpctgan", GENERATORS.get("smartnoise-dpctgan-public-rows").white_box)
    s = SyntheticDataSettings(generators=("smartnoise-dpctgan-public-training-conditions",))
    assert s.threat_models_for("smartnoise-dpctgan-public-training-conditions") == (
        "white-box-dpsgd",
    )


def _fit(name, observe, seeds=(7, 8)):
    from dpaudit.systems import SYSTEMS

    pair = _pair()
    opts = SyntheticDataSettings(dpctgan_options=TRAINING).dpctgan_settings()
    g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=opts))
    return pair, g.fit_runs([pair.D, pair.D_prime], [0, 1], list(seeds), domain=pair.domain,
                            observe=observe)  # fmt: skip


@needs_gan
def test_dpctgan_trains_on_conditions_drawn_by_private_frequencies_and_the_fix_on_public_ones():
    """The generator steps' draws recorded: 4 a batch, and opacus counts two steps a batch,
    so draws = 2 × the opacus steps (792 on D, 816 on D ∪ {t}: 33 epochs against 34). The
    library's count on t's categories is Binomial(draws, 1/50) on D and (draws, 2/51) on
    D ∪ {t} (means 32 and 64); the fix's, Binomial(draws, 1/2) on both."""
    counts = {}
    for name in ("smartnoise-dpctgan", "smartnoise-dpctgan-public-training-conditions"):
        pair, r = _fit(name, ("training-conditions", "accounting"))
        for run in r.runs:
            rec = run["training-conditions"]
            assert rec["draws"] == len(rec["categories"]) == 2 * run["accounting"]["steps"]
            assert rec["rule"] == "frequencies"
        assert [run["accounting"]["steps"] for run in r.runs] == [792, 816]
        counts[name] = [target_conditions(run["training-conditions"]["categories"], pair.target,
                                          pair.domain.cardinalities) for run in r.runs]  # fmt: skip
    on_d, on_dp = counts["smartnoise-dpctgan"]
    assert binom.cdf(on_d, 1584, 1 / 50) > 1e-3 and binom.sf(on_d - 1, 1584, 1 / 50) > 1e-3
    assert binom.cdf(on_dp, 1632, 2 / 51) > 1e-3 and binom.sf(on_dp - 1, 1632, 2 / 51) > 1e-3
    assert all(abs(c - n / 2) < 4 * np.sqrt(n / 4)
               for c, n in zip(counts["smartnoise-dpctgan-public-training-conditions"],
                               (1584, 1632), strict=True))  # fmt: skip


_CALL_SITES = """
import inspect, sys
import numpy as np, pandas as pd
from snsynth import Synthesizer
from snsynth.pytorch.nn.ctgan.data_sampler import DataSampler
from snsynth.pytorch.nn.dpctgan import DPCTGAN
orig, lines = DataSampler.sample_condvec, []
def draw(self, batch):
    lines.append(sys._getframe(1).f_lineno)
    return orig(self, batch)
DataSampler.sample_condvec = draw
df = pd.DataFrame(np.zeros((50, 3), dtype=int), columns=list("abc"))
df.iloc[-1] = 1
s = Synthesizer.create("dpctgan", epsilon=1.0, delta=1e-2, batch_size=4, discriminator_dim=(),
                       generator_dim=(8,), embedding_dim=8, verbose=False)
s.fit(df, categorical_columns=list("abc"))
src = open(inspect.getsourcefile(DPCTGAN)).read().splitlines()
text = lambda a, b: "\\n".join(src[a - 1:b - 1])
d, g = sorted(set(lines[0::2])), sorted(set(lines[1::2]))
print(len(lines), d, g, "optimizerD.step()" in text(d[0], g[0]),
      "optimizerD.step()" in text(g[0], g[0] + 60), "optimizerG.step()" in text(g[0], g[0] + 60))
"""


@needs_gan
def test_the_recorded_draws_are_the_generator_steps():
    """The library's training calls ``sample_condvec`` from two places, alternately: first
    before the discriminator's step (its draw picks the real rows too), then before the
    generator's, with no discriminator step between that call and ``optimizerG.step()``; the
    worker records the second call's draws."""
    import subprocess

    py = LIBRARIES["smartnoise-gan"].python()
    out = subprocess.run([str(py), "-c", _CALL_SITES], capture_output=True, text=True,
                         check=True, timeout=300).stdout.split("[")  # fmt: skip
    calls, d, g = int(out[0]), out[1].split("]")[0], out[2].split("]")[0]
    assert calls == 792 and len(d.split(",")) == len(g.split(",")) == 1 and int(d) < int(g)
    assert out[2].split("]")[1].split() == ["True", "False", "True"]


@needs_gan
def test_dpctgans_epochs_read_the_private_row_count_and_the_fix_a_public_one():
    """At (1, 10⁻²), batches of 4: D (50 rows) trains 33 epochs of 12 batches (792 opacus
    steps), D ∪ {t} (51 rows, a lower rate) 34 (816); given the public row count 50, both
    train 33."""
    got = {}
    for name in ("smartnoise-dpctgan", "smartnoise-dpctgan-public-rows"):
        _, r = _fit(name, ("accounting",), seeds=(3, 3))
        got[name] = [(run["accounting"]["steps"], run["accounting"]["epochs"]) for run in r.runs]
    assert got == {"smartnoise-dpctgan": [(792, 33), (816, 34)],
                   "smartnoise-dpctgan-public-rows": [(792, 33), (792, 33)]}  # fmt: skip


@needs_gan
def test_the_worker_refuses_the_training_fix_and_view_for_another_gan():
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=20)
    cell = GeneratorCell(
        "smartnoise-dpgan", 1.0, 1e-2, options=(("training_conditions", "public"),)
    )
    g = SYSTEMS.get("smartnoise-dpgan")(cell)
    with pytest.raises(Exception, match="training conditions option and view apply to DPCTGAN"):
        g.fit_runs([pair.D], [0], [1], domain=pair.domain, observe=("accounting",))


def _recorded(name):
    rec = json.loads((ROOT / "docs/results/synthetic-data" / name).read_text())
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    return rec, page


@pytest.mark.parametrize(
    ("name", "threat_model", "control", "threshold"),
    [
        ("dpctgan-twin-record-white-box-training-conditions-eps1.json",
         "white-box-training-conditions", "smartnoise-dpctgan-public-training-conditions", None),
        ("dpctgan-twin-record-white-box-steps-eps1.json", "white-box-steps",
         "smartnoise-dpctgan-public-rows", 816.0),
    ],
)  # fmt: skip
def test_docs_dpctgan_training_figures_are_the_recorded_runs(
    name, threat_model, control, threshold
):
    """Each page figure of the two reproducers of violation 5 in training is its recorded run
    (its settings those the page states), and so is each figure of its 20-seed controls."""
    rec, page = _recorded(name)
    st = rec["settings"]
    assert (st["generators"], st["threat_models"]) == (["smartnoise-dpctgan", control],
                                                       [threat_model])  # fmt: skip
    keys = ("dataset", "rows", "columns", "epsilon", "runs", "pilot_runs", "seed", "workers")
    assert tuple(st[k] for k in keys) == ("twin-record", 50, 3, 1.0, 30, 10, 46, 2)
    assert tuple(st["dpctgan_options"]) == TRAINING
    lib, ctl = (e["detail"] for e in rec["entries"])
    assert (lib["tp"], lib["fp"]) == (30, 0)
    if threshold is None:  # chosen on the pilot pairs below the cap: the page states it
        assert f"a log-likelihood ratio of {lib['threshold']:.2f}, and 0 of 30 on D" in page
    else:
        assert lib["threshold"] == threshold
    assert round(rec["entries"][0]["lower_bound"]["epsilon"], 3) == 2.022
    assert rec["entries"][1]["lower_bound"]["epsilon"] == 0.0 and ctl["tp"] == ctl["fp"] == 30
    assert f"`{name}`, {rec['timings']['total']:.0f} s on 2 workers" in page
    assert f"μ ≥ {lib['mu_lower']:.2f}** (30 of 30 runs on D ∪ {{t}} at" in page
    controls = name.replace("twin-record-white-box-", "").replace(
        "training-conditions", "training-controls").replace("steps", "steps-controls")  # fmt: skip
    crec, _ = _recorded(controls)
    assert sorted(a["seed"] for a in crec["audits"]) == list(range(20))
    assert all(a["epsilon"] == 0.0 and a["tp"] == a["fp"] for a in crec["audits"])
    assert f"`{controls}`, {round(crec['seconds']):,} s in all" in page
