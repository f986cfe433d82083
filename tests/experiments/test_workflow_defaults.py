"""Issue 45: every registered workflow runs with no options on its default dataset, or says in
one line what it needs.

Each workflow's default settings (its shipped config, else the settings' defaults) go through
the checks a run makes before any work (:meth:`Workflow.check_settings`: the settings' own
validation, then the workflow's ``check`` — the dataset against the sizes asked for); the fast
ones run end to end. ``dpaudit audit private-prediction`` and ``dpaudit audit group-privacy``
used to stop at once: their paper-scale defaults asked digits for more test rows than it has.
"""

from __future__ import annotations

import pytest

from dpaudit.errors import MissingDatasetError, MissingDependencyError
from dpaudit.experiments import WORKFLOWS

#: Workflows whose default run takes seconds: run end to end with no settings at all.
FAST = ("lidp-gaussian",)
#: Workflows whose default run needs an input only the user has: what the one-line error says.
NEEDS_INPUT = {"scores": "give either --in-scores and --out-scores, or --scores and --included"}


@pytest.mark.parametrize("name", WORKFLOWS.names())
def test_default_settings_pass_the_checks_before_any_work(name):
    workflow = WORKFLOWS.get(name)
    try:
        settings = workflow.check_settings()
    except (MissingDatasetError, MissingDependencyError) as exc:  # says what to install
        message = str(exc)
        assert "\n" not in message.strip() and ("install" in message or "pip" in message)
        pytest.skip(f"{name}: {message}")
    assert isinstance(settings, workflow.settings)
    assert workflow.check_settings(settings) is settings


def test_the_two_workflows_that_did_not_fit_digits_now_do():
    for name in ("private-prediction", "group-privacy"):
        settings = WORKFLOWS.get(name).check_settings()
        dataset = getattr(settings, "data", settings).dataset
        assert dataset == "digits"


def test_the_checks_refuse_what_the_run_would_refuse():
    from dpaudit import _settings

    pp = WORKFLOWS.get("private-prediction")
    too_many = _settings.apply_overrides(pp.default_settings(), {"queries": 1000})
    with pytest.raises(ValueError, match=r"queries must be at most 448 for digits"):
        pp.check_settings(too_many)
    gp = WORKFLOWS.get("group-privacy")
    with pytest.raises(ValueError, match=r"queries \+ proxy_queries \+ pool must be at most"):
        gp.check_settings(gp.settings())  # the paper-scale defaults, without the config
    with pytest.raises(TypeError, match=r"settings must be GroupPrivacySettings"):
        gp.check_settings(pp.default_settings())


@pytest.mark.parametrize("name", FAST)
def test_the_fast_workflows_run_their_defaults_end_to_end(name):
    result = WORKFLOWS.get(name)()
    assert result.workflow == name and result.entries
    for entry in result.entries:
        lb = entry.lower_bound
        assert lb.epsilon is None or lb.epsilon >= 0.0


@pytest.mark.parametrize("name", sorted(NEEDS_INPUT))
def test_a_workflow_that_needs_an_input_says_so_in_one_line(name):
    workflow = WORKFLOWS.get(name)
    with pytest.raises(ValueError, match=NEEDS_INPUT[name]) as info:
        workflow()
    assert "\n" not in str(info.value)


def test_the_command_line_runs_the_default_checks_first(tmp_path, capsys):
    """With no options the command line starts from the same default settings (printed here
    rather than run: the runs take minutes)."""
    from dpaudit.cli import run

    for name in ("private-prediction", "group-privacy"):
        assert run(["audit", name, "--print-config"]) == 0
        out = capsys.readouterr().out
        assert 'dataset = "digits"' in out
