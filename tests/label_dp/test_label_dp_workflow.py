"""The label-DP audit end to end on small data: settings, stages, AuditResult, report, CLI."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from dpaudit._settings import fields, from_mapping, to_mapping, to_toml
from dpaudit.experiments.label_dp.settings import LabelDPSettings, load_label_dp_config

TINY = {
    "seed": 1,
    "data": {"dataset": "digits", "n_train": 600, "n_test": 300},
    "mechanisms": ["alibi", "rr", "pate-fm"],
    "levels": {"names": ["high"]},
    "alibi": {"epsilons": [8.0]},
    "rr": {"epsilons": [3.0]},
    "pate": {
        "teachers": [4], "thresholds": [3.0], "sigma1": [1.0], "sigma2": [0.5],
        "queries": [100], "answers": [40], "teacher_steps": 20, "student_steps": 20,
    },
    "consistency": {"flip": False},
    "canaries": {"count": 60},
    "training": {"epochs": 3, "hidden": [64]},
    "validation": {"runs": 2, "level": "high"},
}  # fmt: skip


def merged(patch: dict) -> dict:
    """TINY with the tables of ``patch`` merged in (one level deep)."""
    out = dict(TINY)
    for key, value in patch.items():
        old = out.get(key)
        out[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
    return out


def test_shipped_configs_parse_and_round_trip():
    for name in ("label-dp-demo", "label-dp-fashion-mnist"):
        s = load_label_dp_config(name)
        assert s.data.dataset == "fashion-mnist"
        assert from_mapping(LabelDPSettings, to_mapping(s)) == s
        assert "[pate]" in to_toml(s)
    flags = [f.flag for f in fields(LabelDPSettings) if f.cli]
    assert len(flags) == len(set(flags))


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"alibi": {"epsilons": [8.0, 4.0]}}, "one value per accuracy level"),
        ({"alibi": {"epsilons": [0.0]}}, "alibi.epsilons must be a positive"),
        ({"agibi": {"sigmas": [-1.0]}}, "agibi.sigmas must be a positive"),
        ({"rr": {"epsilons": [-2.0]}}, "rr.epsilons must be a positive"),
        ({"pate": {"queries": [0]}}, "pate.queries must be a positive"),
        ({"pate": {"answers": [500]}}, "pate.answers must be at most"),
        ({"pate": {"teacher_steps": 0}}, "pate.teacher_steps must be a positive"),
        ({"canaries": {"count": 601}}, "larger than the training set"),
        ({"canaries": {"count": 0}}, "canaries.count must be a positive"),
        ({"mechanisms": ["alibi", "dp-sgd"]}, "mechanisms must be one of"),
        ({"attack": {"thresholds": [1.5]}}, r"attack.thresholds must be in \[0.0, 1.0\]"),
        ({"data": {"dataset": "cifar10"}}, "data.dataset must be one of"),
        ({"validation": {"runs": 1}}, "validation.runs must be 0"),
        ({"seed": -1}, "seed must be a non-negative"),
    ],
)
def test_bad_settings_are_rejected_with_the_key(patch, match):
    data = merged(patch)
    with pytest.raises(ValueError, match=match):
        from_mapping(LabelDPSettings, data)


def test_bad_data_rejected_before_training(monkeypatch):
    pytest.importorskip("torch")
    import dpaudit.experiments.label_dp.pipeline as wf

    def no_training(*args, **kwargs):
        raise AssertionError("training started before validation")

    monkeypatch.setattr(wf, "train_cell", no_training)
    patch = {"data": {"n_train": None, "n_test": None}, "canaries": {"count": 5000}}
    s = from_mapping(LabelDPSettings, merged(patch))
    with pytest.raises(ValueError, match=r"canaries\.count=5000 is larger than the training set"):
        wf.run_label_dp(s)
    s = from_mapping(LabelDPSettings, merged({"pate": {"teachers": [700]}}))
    with pytest.raises(ValueError, match="num_teachers=700 exceeds the 600"):
        wf.run_label_dp(s)
    s = from_mapping(LabelDPSettings, merged({"training": {"device": "cuda"}}))
    if not __import__("torch").cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            wf.run_label_dp(s)


def _cp_epsilon(guesses: int, correct: int, beta: float) -> float:
    """logit of the one-sided Clopper–Pearson lower bound on the correct-guess rate (scipy)."""
    from scipy import stats

    p = stats.beta.ppf(beta, correct, guesses - correct + 1) if correct else 0.0
    return max(0.0, math.log(p / (1 - p))) if p > 0 else 0.0


def _check_values_against_oracles(result) -> None:
    """RR and PATE-FM values (not only ranges) against independent oracles."""
    for name in ("rr", "pate-fm"):
        e = result.entry(name)
        cgr = e.detail["cgr"]
        beta = 1 - cgr.per_test_confidence_level
        assert e.lower_bound.epsilon == cgr.epsilon  # the reported variant is CGR
        assert cgr.epsilon == pytest.approx(
            _cp_epsilon(cgr.num_guesses, cgr.num_correct, beta), rel=1e-9, abs=1e-12
        )
    # RR's claim is its ε; its released labels agree with the training label w.p. the
    # closed form e^ε / (e^ε + C − 1) (300 rows of the 600 kept after 30 canaries: ±4 s.e.).
    rr = result.entry("rr")
    assert rr.claim.epsilon == 3.0
    keep = math.exp(3.0) / (math.exp(3.0) + 9)
    se = math.sqrt(keep * (1 - keep) / 600)
    assert rr.detail["released_label_agreement"] == pytest.approx(keep, abs=4 * se)
    # PATE-FM's data-independent claim: α/(2σ1²) per query and α/σ2² per answer (Papernot
    # et al. 2018 Prop. 8), standard conversion at δ.
    pf = result.entry("pate-fm")
    di = pf.claims[2]
    lam = np.asarray(di.rdp.orders)
    rho = pf.detail["num_queries"] * lam / 2 + pf.detail["num_answered"] * lam / 0.5**2
    np.testing.assert_allclose(di.rdp.epsilons, rho, rtol=1e-12)
    assert di.epsilon == pytest.approx(np.min(rho + math.log(1 / di.delta) / (lam - 1)), rel=1e-9)


@pytest.fixture(scope="module")
def result():
    pytest.importorskip("torch")
    from dpaudit.experiments.label_dp.pipeline import run_label_dp

    return run_label_dp(from_mapping(LabelDPSettings, TINY))


def test_one_entry_per_mechanism_and_level(result):
    assert result.workflow == "label-dp"
    assert [(e.system, e.adversary) for e in result.entries] == [
        ("alibi", "label-memorization/high"),
        ("rr", "label-memorization/high"),
        ("pate-fm", "label-memorization/high"),
    ]
    for e in result.entries:
        lb = e.lower_bound
        assert lb.interval.low <= lb.epsilon + 1e-12 or lb.interval.low == pytest.approx(lb.epsilon)
        assert 0.0 <= lb.epsilon <= lb.interval.high
        assert e.selections[0].strategy == "split"
        assert 0.0 < e.detail["accuracy"] <= 1.0
        assert e.detail["cgr"].num_canaries == 30
        assert math.isfinite(e.claim.epsilon) and e.gap is not None
    assert result.entry("alibi").claim.epsilon == 8.0
    assert result.entry("pate-fm").claims[0].analysis.startswith("data-dependent")
    _check_values_against_oracles(result)
    v = result.detail["validation"]
    assert v["runs"] == 2 and v["canaries_per_run"] == 30
    assert v["pooled"]["cgr"]["num_canaries"] == 30  # half of the 60 pooled canaries


def test_json_and_determinism(result):
    from dpaudit.experiments.label_dp.pipeline import run_label_dp

    data = json.loads(result.to_json())
    assert data["settings"]["levels"]["names"] == ["high"]
    again = run_label_dp(from_mapping(LabelDPSettings, {**TINY, "validation": {"runs": 0}}))
    for a, b in zip(result.entries, again.entries, strict=True):
        assert a.lower_bound.epsilon == b.lower_bound.epsilon
        assert a.detail["accuracy"] == b.detail["accuracy"]


def test_report_files_and_table(result, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("rich")
    from dpaudit.report.label_dp import label_dp_markdown, label_dp_rows, write_label_dp_report

    out = write_label_dp_report(result, tmp_path / "run")
    assert (out / "results.json").is_file() and (out / "claimed_vs_measured.png").is_file()
    md = label_dp_markdown(result)
    assert md.count("\n") == 2 + len(result.entries) and "PATE-FM" in md and "ε_m ≥" in md
    assert label_dp_markdown(json.loads(result.to_json())) == md  # from results.json too
    rows = label_dp_rows(result)
    assert rows[0]["mechanism"] == "ALIBI" and rows[0]["claim"] == "8"


def test_cli_json(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    cfg = tmp_path / "tiny.toml"
    tiny = {**TINY, "mechanisms": ["rr"], "validation": {"runs": 0}}
    cfg.write_text(to_toml(from_mapping(LabelDPSettings, tiny)))
    args = ["audit", "label-dp", "--config", str(cfg), "--rr-epsilons", "2", "--json",
            "--no-progress"]  # fmt: skip
    res = CliRunner().invoke(build_app(), args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["entries"][0]["claims"][0]["epsilon"] == 2.0
    bad = CliRunner().invoke(build_app(), ["audit", "label-dp", "--rr-epsilons", "0"])
    assert bad.exit_code == 2 and "rr.epsilons" in bad.output


FASHION = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(FASHION), reason="dataset-fashion-mnist not installed")
def test_alibi_on_real_fashion_mnist_images():
    pytest.importorskip("torch")
    from dpaudit.experiments.label_dp.pipeline import run_label_dp

    s = from_mapping(LabelDPSettings, {
        "data": {"dataset": "fashion-mnist", "n_train": 1500, "n_test": 500},
        "mechanisms": ["alibi"], "levels": {"names": ["high"]}, "alibi": {"epsilons": [8.0]},
        "canaries": {"count": 100}, "training": {"epochs": 5, "hidden": [128]},
    })  # fmt: skip
    res = run_label_dp(s)
    e = res.entries[0]
    assert res.detail["dataset"] == "fashion-mnist" and res.detail["n_train"] == 1500
    assert e.detail["accuracy"] > 0.6
    assert e.claim.epsilon == 8.0 and not e.gap.refutes_claim
    assert np.isfinite(e.lower_bound.epsilon)
