"""Group-privacy audit of private prediction (Chadha et al. 2024, "Auditing Private
Prediction", arXiv:2402.09403, App. C): adversaries that change m training points, judged
against the group guarantee and normalised back to one point.

* :mod:`.settings` — :class:`GroupPrivacySettings`.
* :mod:`.stages` — data, rows, training, poisoning, sampling and the bound.
* :mod:`.claims` — group claims, normalisation and the exact group functional.
* :mod:`.pipeline` — :func:`audit_group_privacy`.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.group_privacy.claims import (
    GroupClaims,
    claims,
    normalise,
    worst_case_functional,
)
from dpaudit.experiments.group_privacy.pipeline import (
    GroupPrivacyDetail,
    GroupRun,
    audit_group_privacy,
)
from dpaudit.experiments.group_privacy.settings import GroupPrivacySettings
from dpaudit.experiments.group_privacy.stages import (
    PairedHistograms,
    Rows,
    bound,
    build_target,
    check_sizes,
    exact_curve,
    group_runs,
    joint_bound,
    load_data,
    poison,
    sample_counts,
    select_queries,
    split_rows,
)

__all__ = [
    "GroupClaims",
    "GroupPrivacyDetail",
    "GroupPrivacySettings",
    "GroupRun",
    "PairedHistograms",
    "Rows",
    "audit_group_privacy",
    "bound",
    "build_target",
    "check_sizes",
    "claims",
    "exact_curve",
    "group_runs",
    "joint_bound",
    "load_data",
    "normalise",
    "poison",
    "sample_counts",
    "select_queries",
    "split_rows",
    "worst_case_functional",
]


def _check_sizes(settings: GroupPrivacySettings) -> None:
    """What a run checks before any training: the dataset holds the sizes asked for."""
    check_sizes(settings, load_data(settings))


WORKFLOWS.register(
    "group-privacy",
    Workflow(
        name="group-privacy",
        settings=GroupPrivacySettings,
        run=audit_group_privacy,
        summary="Group privacy of private prediction: m-point adversaries against the group "
        "guarantee, normalised back to one point (PATE, CaPC, Private-kNN).",
        report="dpaudit.report:generic_report",
        config="group-privacy-digits",
        check=_check_sizes,
        source="Chadha et al. 2024, arXiv:2402.09403, App. C",
    ),
)
