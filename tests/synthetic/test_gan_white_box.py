"""DPCTGAN's white-box view (``white-box-dpsgd``): the statistic on data generated here, the
threat model's place among the others, and (with ``make venv-smartnoise-gan``) an audit that
refutes the planted bug and not the library as installed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks._synthetic import SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_gan import (
    LOSS_CAP,
    dpsgd_mixture_llr,
    dpsgd_projections,
    out_of_reach,
)
from dpaudit.experiments.synthetic_data import SyntheticDataSettings
from dpaudit.systems.synthetic import GENERATORS, LIBRARIES, GeneratorCell

needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)
#: A discriminator without hidden layers (no dropout: t's clipped gradient on its columns is
#: exactly the direction the adversary computes), σ = 2, 4 rows a step: 60 real-row steps on
#: 50 rows, t sampled about 4.7 times.
OPTIONS = ("sigma=2", "batch_size=4", "discriminator_dim=", "generator_dim=8", "embedding_dim=8")


def _null_steps(rng, steps, shape, sigma):
    noisy = sigma * rng.standard_normal((steps, *shape))
    direction = rng.normal(0.0, 1.0, (steps, *shape))
    return noisy, direction


def test_under_D_the_projections_are_standard_normal_and_the_rest_chi_square():
    """Under D the restricted noisy sum is σ·N(0, I) (Abadi et al. 2016, arXiv:1607.00133):
    along any unit direction fixed before the step, N(0, σ²); the squared norm of the rest,
    σ²·χ² with one degree of freedom fewer per step (checked against scipy's distributions)."""
    rng = np.random.default_rng(0)
    sigma, steps, shape = 0.5, 40, (2, 3)
    xs, rests = [], []
    for _ in range(300):
        x, a, rest, dof = dpsgd_projections(*_null_steps(rng, steps, shape, sigma))
        xs.append(x / sigma)
        rests.append(rest / sigma**2)
        assert dof == steps * (6 - 1) and a.shape == (steps,)
    assert stats.kstest(np.concatenate(xs), "norm").pvalue > 1e-3
    assert stats.kstest(rests, stats.chi2(steps * 5).cdf).pvalue > 1e-3


def test_a_zero_direction_leaves_the_whole_step_to_the_rest():
    noisy = np.array([[[3.0, 4.0]], [[1.0, 0.0]]])
    direction = np.array([[[0.0, 0.0]], [[2.0, 0.0]]])
    x, a, rest, dof = dpsgd_projections(noisy, direction)
    np.testing.assert_allclose(x, [0.0, 1.0])
    np.testing.assert_allclose(a, [0.0, 2.0])
    assert (rest, dof) == (25.0, 3)


def _naive_llr(x, a, sigma, b, p):
    total = 0.0
    for xk, ak in zip(x, a, strict=True):
        lik = sum(math.comb(b, m) * p**m * (1 - p) ** (b - m)
                  * math.exp((m * ak * xk - m * m * ak * ak / 2) / sigma**2)
                  for m in range(b + 1))  # fmt: skip
        total += math.log(lik)
    return total


def test_the_mixture_llr_is_the_naive_binomial_mixture_of_gaussian_shifts():
    rng = np.random.default_rng(7)
    x, a = rng.normal(0.0, 1.0, 12), rng.uniform(0.0, 1.0, 12)
    for sigma, b, p in ((1.0, 1, 0.5), (0.3, 4, 1 / 51), (2.0, 16, 1 / 21)):
        want = _naive_llr(x, a, sigma, b, p)
        got = dpsgd_mixture_llr(x, a, sigma=sigma, batch_size=b, rate=p)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_mixture_llr_is_a_likelihood_ratio_its_exponential_has_mean_one_under_D():
    """E_D[exp(ℓ)] = 1 for a log-likelihood ratio ℓ of D ∪ {t} against D (Monte Carlo, 4
    standard errors)."""
    rng = np.random.default_rng(11)
    sigma, a, b, p = 1.0, 1.0, 4, 0.05
    x = sigma * rng.standard_normal(200_000)
    e = np.exp([dpsgd_mixture_llr([v], [a], sigma=sigma, batch_size=b, rate=p) for v in x[:20000]])
    assert abs(e.mean() - 1.0) < 4 * e.std() / math.sqrt(e.size)


def test_the_statistic_refuses_bad_inputs():
    with pytest.raises(ValueError, match="share a"):
        dpsgd_projections(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="rate"):
        dpsgd_mixture_llr([0.0], [1.0], sigma=1.0, batch_size=2, rate=1.5)
    with pytest.raises(ValueError, match="sigma"):
        dpsgd_mixture_llr([0.0], [1.0], sigma=0.0, batch_size=2, rate=0.5)
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=4)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-dpsgd")
    with pytest.raises(ValueError, match="recorded gradients"):
        tm.statistic({"seconds": 1.0}, None, pair, None)


def test_the_threat_model_caps_a_loss_the_audit_cannot_resolve():
    """Steps whose noise is far below the σC = 2 the record states, t standing out on two:
    the statistic reads the noise off the rest of each step and caps the loss at LOSS_CAP."""
    rng = np.random.default_rng(3)
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=4, rows=20)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-dpsgd")
    direction = np.full((30, 1, 4), 0.45)
    noisy = 0.15 * rng.standard_normal((30, 1, 4))
    rec = {"sigma": 2.0, "batch_size": 4, "direction": direction, "columns": [1, 3, 5, 7]}
    out = tm.statistic({"gradients": dict(rec, noisy=noisy)}, None, pair, None)
    noisy[[3, 17]] += direction[[3, 17]]  # t sampled on two steps
    inn = tm.statistic({"gradients": dict(rec, noisy=noisy)}, None, pair, None)
    assert out < 0.0 and inn == LOSS_CAP


def test_only_the_columns_no_row_of_D_sets_are_read_unless_D_sets_them_all():
    """binary-flip's D lacks value 0 in column 0 only: t's coordinate there is read alone;
    tree-flip's D sets every value: all of t's columns are read."""
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-dpsgd")
    rng = np.random.default_rng(5)
    for name, cols, keep in (("binary-flip", [0, 5, 7], [True, False, False]),
                             ("tree-flip", [1, 2, 4], [False, False, False])):  # fmt: skip
        pair = WORST_CASE_DATASETS.get(name)(columns=3, rows=20)
        assert out_of_reach(cols, pair.D, pair.domain.cardinalities).tolist() == keep
        rec = {"sigma": 1.0, "batch_size": 2, "columns": cols,
               "noisy": rng.normal(0.0, 1.0, (20, 4, 3)),
               "direction": np.ones((20, 4, 3))}  # fmt: skip
        before = tm.statistic({"gradients": rec}, None, pair, None)
        rec["noisy"][..., 1:] *= 10.0  # the columns D reaches
        after = tm.statistic({"gradients": rec}, None, pair, None)
        assert (before == after) == any(keep)


def test_auto_audits_dpctgan_under_its_gradients_and_patectgan_under_its_student():
    s = SyntheticDataSettings(generators=("smartnoise-dpctgan",), dpctgan_options=OPTIONS)
    assert s.threat_models_for("smartnoise-dpctgan") == ("white-box-dpsgd",)
    assert s.threat_models_for("smartnoise-patectgan") == ("white-box-student",)
    tm = SYNTHETIC_THREAT_MODELS.get("white-box-dpsgd")
    served = {g for g in GENERATORS.names()
              if tm.serves(GENERATORS.get(g).synth, GENERATORS.get(g).white_box)}  # fmt: skip
    assert served == {"smartnoise-dpctgan", "smartnoise-dpctgan-quiet-noise",
                      "smartnoise-dpctgan-public-conditions",
                      "smartnoise-dpctgan-public-training-conditions",
                      "smartnoise-dpctgan-public-rows", "smartnoise-dpgan",
                      "smartnoise-dpgan-quiet-noise", "smartnoise-dpgan-public-rows"}  # fmt: skip
    with pytest.raises(ValueError, match="cannot serve"):
        SyntheticDataSettings(generators=("smartnoise-mst",), threat_models=("white-box-dpsgd",))
    one_run = SyntheticDataSettings(generators=("smartnoise-dpctgan",), mode="one-run")
    assert one_run.threat_models_for("smartnoise-dpctgan") == ("black-box",)
    with pytest.raises(ValueError, match="for one target"):
        SyntheticDataSettings(generators=("smartnoise-dpctgan",), mode="one-run",
                              threat_models=("white-box-dpsgd",))  # fmt: skip


def test_dpctgan_options_are_parsed_and_checked_at_the_boundary():
    s = SyntheticDataSettings(generators=("smartnoise-dpctgan",), dpctgan_options=OPTIONS)
    assert s.dpctgan_settings() == (("sigma", 2.0), ("batch_size", 4), ("discriminator_dim", ()),
                                    ("generator_dim", (8,)), ("embedding_dim", 8))  # fmt: skip
    GeneratorCell("smartnoise-dpctgan", 1.0, 1e-2, options=s.dpctgan_settings())
    with pytest.raises(ValueError, match="name=value"):
        SyntheticDataSettings(dpctgan_options=("pac=2",))
    with pytest.raises(ValueError, match="not a number"):
        SyntheticDataSettings(dpctgan_options=("sigma=x",))
    with pytest.raises(ValueError, match="widths joined by /"):
        SyntheticDataSettings(dpctgan_options=("generator_dim=8,8",))


@needs_gan
def test_the_worker_records_the_restricted_noisy_sums_and_the_noise_drawn_shows():
    """Fits on D per generator: 60 real-row steps, the 16 columns of t's one-hot
    coordinates, σC = 2 as the accountant is given; the noise read off the rest is 2 as
    installed and 0.2 with the planted bug; the same seed, the same noise (the worker seeds
    opacus's generator, which would otherwise reseed torch from os.urandom)."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=16, rows=50)
    s = SyntheticDataSettings(generators=("smartnoise-dpctgan",), dpctgan_options=OPTIONS)
    for name, drawn in (("smartnoise-dpctgan", 2.0), ("smartnoise-dpctgan-quiet-noise", 0.2)):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=s.dpctgan_settings()))
        r = g.fit_runs([pair.D, pair.D_prime], [0, 0], [5, 5], domain=pair.domain,
                       observe=("gradients",), target=pair.target)  # fmt: skip
        rec = r.runs[0]["gradients"]
        np.testing.assert_array_equal(rec["noisy"], r.runs[1]["gradients"]["noisy"])
        assert rec["noisy"].shape == rec["direction"].shape == (rec["steps"], 1, 16)
        assert (rec["sigma"], rec["batch_size"], len(rec["columns"])) == (2.0, 4, 16)
        _, a, rest, dof = dpsgd_projections(rec["noisy"], rec["direction"])
        assert math.sqrt(rest / dof) == pytest.approx(drawn, rel=0.1)
        np.testing.assert_allclose(a, 0.943, atol=0.01)  # clipped at C = 1: √(16/18)


@needs_gan
def test_the_worker_records_dpgans_real_row_steps_and_the_noise_drawn_shows():
    """DPGAN on unique-record's D (1,000 rows of zeros, 16 columns; 3 epochs of 15 batches of
    64 rows, each a generated-row then a real-row opacus step): 45 real-row steps on the 16
    columns of t's one-hot coordinates, σC = 3.5 as the accountant is given; the noise read
    off them is 3.5 as installed and 0.35 with the planted bug (no row of D reaches those
    columns, and opacus drops the generated rows' per-sample gradients once it has clipped
    them, so the real-row step's sum holds its own rows only); t's clipped gradient there is
    the same in both worlds' first step (the same seed, the same initial weights)."""
    from dpaudit.systems import SYSTEMS

    pair = WORST_CASE_DATASETS.get("unique-record")(columns=16, rows=1000)
    for name, drawn in (("smartnoise-dpgan", 3.5), ("smartnoise-dpgan-quiet-noise", 0.35)):
        g = SYSTEMS.get(name)(GeneratorCell(name, 1.0, 1e-2, options=(("epochs", 3),)))
        r = g.fit_runs([pair.D, pair.D_prime], [0, 1], [5, 5], domain=pair.domain,
                       observe=("gradients",), target=pair.target)  # fmt: skip
        rec = r.runs[0]["gradients"]
        assert rec["noisy"].shape == rec["direction"].shape == (45, 21, 16)
        assert (rec["sigma"], rec["batch_size"], len(rec["columns"])) == (3.5, 64, 16)
        _, a, rest, dof = dpsgd_projections(rec["noisy"], rec["direction"])
        assert math.sqrt(rest / dof) == pytest.approx(drawn, rel=0.05)
        assert 0.2 < a.min() <= a.max() < 1.0
        np.testing.assert_allclose(rec["direction"][0], r.runs[1]["gradients"]["direction"][0])


@needs_gan
def test_the_white_box_audit_refutes_the_quiet_noise_dpctgan_and_not_the_library():
    """DPCTGAN at ε = 1 (δ = 10⁻²) on unique-record (50 rows of zeros, t = 16 ones), 4
    pilot and 16 evaluation run pairs: the planted bug's steps where t was sampled stand out
    (ε lower bound > 1 at 95 %), the library's do not (seed 46)."""
    from dpaudit.experiments.synthetic_data import audit_synthetic_data

    s = SyntheticDataSettings(
        generators=("smartnoise-dpctgan-quiet-noise", "smartnoise-dpctgan"),
        threat_models=("white-box-dpsgd",), dataset="unique-record", rows=50, columns=16,
        runs=16, pilot_runs=4, group_size=20, seed=46, dpctgan_options=OPTIONS,
    )  # fmt: skip
    bug, ok = audit_synthetic_data(s).entries
    assert bug.detail.generator == "smartnoise-dpctgan-quiet-noise"
    assert bug.lower_bound.epsilon > 1.0 and bug.detail.mu_lower > bug.detail.implied_mu
    assert ok.lower_bound.epsilon < 1.0 and ok.detail.mu_lower < ok.detail.implied_mu


def test_docs_dpctgan_white_box_figures_are_the_recorded_run():
    """The synthetic-data page's DPCTGAN white-box figures are those of the recorded run, and
    that run is the command the page gives (its settings)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rec = json.loads((root / "docs/results/synthetic-data/"
                      "gan-unique-record-white-box-dpsgd-eps1.json").read_text())  # fmt: skip
    st = rec["settings"]
    assert (st["generators"], st["threat_models"]) == (
        ["smartnoise-dpctgan-quiet-noise", "smartnoise-dpctgan"],
        ["white-box-dpsgd"],
    )
    assert (st["dataset"], st["rows"], st["columns"], st["epsilon"], st["runs"],
            st["pilot_runs"], st["seed"]) == ("unique-record", 50, 16, 1.0, 30, 10, 46)  # fmt: skip
    assert tuple(st["dpctgan_options"]) == OPTIONS
    bug, lib = (e["detail"] for e in rec["entries"])
    page = (root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8")
    bug_eps, lib_eps = (e["lower_bound"]["epsilon"] for e in rec["entries"])
    assert f"ε ≥ {bug_eps:.3f} and μ ≥ {bug['mu_lower']:.2f}" in page
    assert f"({bug['tp']} of 30 runs on D ∪ {{t}}" in page and f"{bug['fp']} of 30 on D)" in page
    assert f"(ε ≥ {lib_eps:.3f},\n{lib['tp']} and {lib['fp']} of 30" in page
    assert f"μ estimate {lib['mu_estimate']:.2f}" in page


def test_docs_dpgan_white_box_figures_are_the_recorded_runs():
    """The page's DPGAN white-box figures are those of the two recorded audits (the first, short
    of ε = 1, and the second, on a fresh seed at 97.5 %), run as the page says."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    runs = {}
    for name, seed, runs_, level in (("-first", 46, 40, 0.95), ("", 47, 80, 0.975)):
        file = f"dpgan-unique-record-white-box-dpsgd-eps1{name}.json"
        rec = json.loads((root / "docs/results/synthetic-data" / file).read_text())
        st = rec["settings"]
        assert (st["generators"], st["threat_models"]) == (
            ["smartnoise-dpgan-quiet-noise", "smartnoise-dpgan"],
            ["white-box-dpsgd"],
        )
        keys = ("dataset", "rows", "columns", "epsilon", "seed", "runs", "confidence_level")
        assert tuple(st[k] for k in keys) == ("unique-record", 1000, 16, 1.0, seed, runs_, level)
        if not name:  # the page gives the recorded audit's command
            assert " ".join(rec["command"].split()[:-2]) in page
        runs[name] = rec["entries"]
    bug = runs["-first"][0]
    assert (f"ε ≥ {bug['lower_bound']['epsilon']:.3f} and μ ≥ {bug['detail']['mu_lower']:.2f} "
            f"({bug['detail']['tp']} of 40 runs on D ∪ {{t}} at the pilot's threshold, "
            f"{bug['detail']['fp']} of 40 on D)") in page  # fmt: skip
    bug, lib = runs[""]
    b, x = bug["detail"], lib["detail"]
    assert (f"ε ≥ {bug['lower_bound']['epsilon']:.3f} and μ ≥ {b['mu_lower']:.2f}** against the "
            f"implied {b['implied_mu']:.3f} ({b['tp']} of 80 runs on D ∪ {{t}} at or above the "
            f"pilot's threshold, {b['fp']} of 80 on D)") in page  # fmt: skip
    lo, hi = x["mu_estimate_interval"]["low"], x["mu_estimate_interval"]["high"]
    assert (f"(ε ≥ {lib['lower_bound']['epsilon']:.3f}, {x['tp']} and {x['fp']} of 80, μ "
            f"estimate {x['mu_estimate']:.2f}, interval {lo:.0f}–{hi:.2f})") in page  # fmt: skip
    assert bug["lower_bound"]["epsilon"] > 1.0 > lib["lower_bound"]["epsilon"]


def _eps10_run(file, generator, rows):
    """The page (whitespace folded) and the one entry of a recorded ε = 10 white-box-dpsgd
    audit of ``generator`` on unique-record ``rows`` × 16, 30 (10) run pairs, seed 46."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8").split())
    rec = json.loads((root / "docs/results/synthetic-data" / file).read_text())
    st = rec["settings"]
    keys = ("generators", "threat_models", "dataset", "rows", "columns", "epsilon", "runs", "seed")
    assert tuple(st[k] for k in keys) == ([generator], ["white-box-dpsgd"], "unique-record", rows,
                                         16, 10.0, 30, 46)  # fmt: skip
    (e,) = rec["entries"]
    x = e["detail"]
    interval = f"{x['mu_estimate_interval']['low']:.2f}–{x['mu_estimate_interval']['high']:.2f}"
    mu = f"{x['mu_ratio']:.2f}× the implied {x['implied_mu']:.3f}"
    return page, rec, e, x, interval, mu


def test_docs_dpgan_eps10_white_box_figures_are_the_recorded_run():
    file = "dpgan-unique-record-white-box-dpsgd-eps10.json"
    page, rec, e, x, interval, mu = _eps10_run(file, "smartnoise-dpgan", 1000)
    assert (f"(ε ≥ {e['lower_bound']['epsilon']:.3f}: {x['tp']} and {x['fp']} of 30 runs at the "
            f"pilot's threshold), with a μ estimate of {x['mu_estimate']:.2f} (interval "
            f"{interval}), {mu}") in page  # fmt: skip
    assert f"{round(rec['timings']['total']):,} s on 2 workers" in page


def test_docs_dpctgan_eps10_white_box_figures_are_the_recorded_run():
    file = "gan-unique-record-white-box-dpsgd-eps10.json"
    page, rec, e, x, interval, mu = _eps10_run(file, "smartnoise-dpctgan", 50)
    assert tuple(rec["settings"]["dpctgan_options"]) == OPTIONS
    assert (f"**ε ≥ {e['lower_bound']['epsilon']:.3f} and μ ≥ {x['mu_lower']:.2f}** ({x['tp']} "
            f"of 30 runs on D ∪ {{t}} at the pilot's threshold, {x['fp']} of 30 on D), a μ "
            f"estimate of {x['mu_estimate']:.2f} (interval {interval}), {mu}") in page  # fmt: skip
    assert f"(`{file}`, {round(rec['timings']['total'])} s on 2 workers)" in page
