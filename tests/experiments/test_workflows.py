"""The workflow registry: every audit is one Workflow with one entry signature, and a toy
workflow registered in a test gets ``dpaudit audit toy`` with no CLI code."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math

import numpy as np
import pytest

from dpaudit import AuditEntry, AuditResult, Claim, LowerBound
from dpaudit._results import package_versions
from dpaudit._settings import check_sections, option
from dpaudit.bounds import clopper_pearson, epsilon_from_error_rates
from dpaudit.experiments import WORKFLOWS, Workflow, run_workflow

EXPECTED = {
    "private-prediction",
    "label-dp",
    "dp-sgd",
    "scores",
    "lidp-gaussian",
    "lidp-dp-sgd",
    "vote-leakage",
    "mechanism",
    "group-privacy",
}


def test_every_workflow_is_registered_with_one_entry_signature():
    assert set(WORKFLOWS.names()) >= EXPECTED
    for name in EXPECTED:
        wf = WORKFLOWS.get(name)
        assert isinstance(wf, Workflow) and wf.name == name and wf.summary
        params = inspect.signature(wf.run).parameters
        first, *rest = params.values()
        assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        keyword = {p.name for p in rest if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert {"data", "progress", "checkpoint"} <= keyword, name
        for p in ("data", "progress", "checkpoint"):
            assert params[p].default is None, (name, p)
        # the default settings are valid and a report is found
        assert isinstance(wf.default_settings(), wf.settings)
        report = wf.reporter()
        assert callable(report.render) and callable(report.write)


def test_settings_are_checked_before_running():
    wf = WORKFLOWS.get("lidp-gaussian")
    with pytest.raises(TypeError, match="settings must be LiDPGaussianSettings"):
        wf(WORKFLOWS.get("scores").settings())
    with pytest.raises(ValueError, match="unknown workflow 'nope'"):
        run_workflow("nope")
    with pytest.raises(ValueError, match="unknown setting"):
        wf.load_settings(no_such_option=3)


def test_result_stores_the_settings_object():
    wf = WORKFLOWS.get("lidp-gaussian")
    s = wf.load_settings(num_runs=100, num_repetitions=2, seed=5)
    res = wf(s)
    assert res.workflow == "lidp-gaussian" and res.settings == s
    again = run_workflow("lidp-gaussian", s)
    assert again.entries[1].lower_bound.epsilon == res.entries[1].lower_bound.epsilon


# ------------------------------------------------------------------------ a toy workflow


@dataclasses.dataclass(frozen=True)
class ToySettings:
    """Randomized response audited by its error rates (a toy workflow)."""

    name: str = option("toy", help="run name")
    seed: int = option(0, help="root seed")
    epsilon: float = option(1.0, help="true ε of the randomized response")
    trials: int = option(20_000, help="trials per side")
    delta: float = option(1e-5, help="δ of the bound")

    def __post_init__(self) -> None:
        check_sections(self)
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be positive, got {self.epsilon!r}")


def run_toy(settings, *, data=None, progress=None, checkpoint=None):
    """Bound ε of randomized response from its false positive and negative counts."""
    g = np.random.default_rng(settings.seed)
    p = math.exp(settings.epsilon) / (1 + math.exp(settings.epsilon))
    fn = int(g.binomial(settings.trials, 1 - p))
    fp = int(g.binomial(settings.trials, 1 - p))
    n = settings.trials  # both rates bounded at 1 − β/2 (Bonferroni over the two)
    fpr = clopper_pearson(fp, n, confidence_level=0.975, alternative="less").high
    fnr = clopper_pearson(fn, n, confidence_level=0.975, alternative="less").high
    eps = epsilon_from_error_rates(fpr, fnr, delta=settings.delta)
    entry = AuditEntry(
        "randomized-response",
        "threshold",
        LowerBound(
            method="Clopper-Pearson error rates",
            confidence_level=0.95,
            epsilon=eps,
            delta=settings.delta,
        ),
        claims=(
            Claim(
                analysis="randomized response",
                source="Warner 1965",
                epsilon=settings.epsilon,
                delta=0.0,
            ),
        ),
    )
    return AuditResult("toy", (entry,), settings, settings.seed, {}, package_versions())


@pytest.fixture
def toy():
    wf = Workflow("toy", ToySettings, run_toy, "A toy audit of randomized response.")
    WORKFLOWS.register("toy", wf, replace=True)
    yield wf
    WORKFLOWS.unregister("toy")


def test_toy_workflow_runs_and_bounds_below_the_truth(toy):
    res = run_workflow("toy", ToySettings(seed=1))
    e = res.entries[0]
    assert 0.5 < e.lower_bound.epsilon < 1.0 and not e.gap.refutes_claim


def test_toy_workflow_gets_a_cli_command_with_no_cli_code(toy, tmp_path):
    pytest.importorskip("typer")
    from typer.testing import CliRunner

    from dpaudit.cli import build_app

    runner = CliRunner()
    wide = {"COLUMNS": "200", "TERMINAL_WIDTH": "200"}
    help_text = runner.invoke(build_app(), ["audit", "toy", "--help"], env=wide).stdout
    for flag in ("--epsilon", "--trials", "--delta", "--config", "--print-config", "--json"):
        assert flag in help_text
    line = next(x for x in help_text.splitlines() if "--delta" in x)
    assert "FLOAT" in line and "[default: 1e-05]" in line, line
    cfg = tmp_path / "toy.toml"
    cfg.write_text("seed = 1\nepsilon = 1.0\ntrials = 20000\n")
    printed = runner.invoke(build_app(), ["audit", "toy", "--config", str(cfg), "--print-config"])
    assert printed.exit_code == 0 and 'name = "toy"' in printed.stdout
    out = tmp_path / "run"
    res = runner.invoke(
        build_app(),
        ["audit", "toy", "--config", str(cfg), "--json", "--out", str(out), "--no-store"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    direct = run_workflow("toy", ToySettings(seed=1))
    assert data["workflow"] == "toy"
    assert data["entries"][0]["lower_bound"]["epsilon"] == direct.entries[0].lower_bound.epsilon
    assert (out / "results.json").is_file()
    html = tmp_path / "report.html"
    rep = runner.invoke(build_app(), ["report", str(out / "results.json"), "--out", str(html)])
    assert rep.exit_code == 0, rep.output
    assert "randomized-response" in html.read_text()


def test_docstring_examples():
    from doctest_support import module_examples

    for name in ("dpaudit.experiments", "dpaudit.experiments._workflow", "dpaudit._settings"):
        assert module_examples(name).failed == 0, name


def test_package_versions_are_importlib_metadata_s_looked_up_once():
    from importlib import metadata

    first = package_versions("torch", "no-such-package-dpaudit")
    assert "no-such-package-dpaudit" not in first
    assert first["numpy"] == metadata.version("numpy") and set(first) >= {"dpaudit", "scipy"}
    assert package_versions("torch", "no-such-package-dpaudit") == first
