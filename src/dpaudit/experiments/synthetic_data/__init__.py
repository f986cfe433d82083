"""Audit DP synthetic-data generators as installed (``dpaudit audit synthetic-data``).

* :mod:`.settings` — :class:`SyntheticDataSettings` (generators, claim, threat models,
  worst-case dataset, runs).
* :mod:`.pipeline` — :func:`audit_synthetic_data`: per generator and threat model, run pairs
  on (D, D ∪ {t}) as resumable engine tasks (one library worker per group), the threshold on
  pilot runs, an exact Clopper–Pearson ε bound and a valid Gaussian-DP μ bound, with the μ
  estimate and the μ the claim implies beside them.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.synthetic_data.pipeline import (
    WORKFLOW,
    SyntheticAuditDetail,
    SyntheticRunPairs,
    audit_generator,
    audit_synthetic_data,
    pilot_choice,
    pilot_threshold,
)
from dpaudit.experiments.synthetic_data.settings import SyntheticDataSettings

__all__ = [
    "WORKFLOW",
    "SyntheticAuditDetail",
    "SyntheticDataSettings",
    "SyntheticRunPairs",
    "audit_generator",
    "audit_synthetic_data",
    "pilot_choice",
    "pilot_threshold",
]


def _check(settings: SyntheticDataSettings) -> None:
    """Before any run: every generator's environment is built (or its extra installed) and the
    worst-case pair lies in the public domain (raises MissingDependencyError naming the make
    target or the install command)."""
    from dpaudit.experiments.synthetic_data.pipeline import _task
    from dpaudit.systems import SYSTEMS

    for g in settings.generators:
        task = _task(settings, g)
        pair = task.pair()
        SYSTEMS.get(g)(task.cell).check_inputs([pair.D, pair.D_prime], pair.domain)


WORKFLOWS.register(
    WORKFLOW,
    Workflow(
        name=WORKFLOW,
        settings=SyntheticDataSettings,
        run=audit_synthetic_data,
        summary="DP synthetic-data generators (smartnoise-synth MST, AIM, MWEM and dpmm MST, AIM "
        "out of process; DataSynthesizer PrivBayes in-process) run as installed on worst-case "
        "datasets: "
        "multi-run Clopper-Pearson ε bounds and Gaussian-DP μ (valid bound and estimate) against "
        "the library's claim.",
        config="synthetic-data-worst-case",
        source="Annamalai, Ganev & De Cristofaro 2024, arXiv:2405.10994",
        check=_check,
    ),
)
