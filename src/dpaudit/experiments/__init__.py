"""Audit workflows (layer 7): one package per workflow, each registered in :data:`WORKFLOWS`.

Every workflow is a :class:`Workflow` — a settings type, ``run(settings, *, data=None,
progress=None, checkpoint=None) -> AuditResult`` and a report — so the command line
(``dpaudit audit NAME``), the run store and the reports treat them all alike:

====================  ===========================  ======================================
name                  package                      source
====================  ===========================  ======================================
private-prediction    :mod:`.private_prediction`   Chadha et al. 2024, arXiv:2402.09403
label-dp              :mod:`.label_dp`             Malek et al. 2021, arXiv:2106.03408
dp-sgd                :mod:`.dpsgd`                Liu et al.; Steinke et al. 2023
dp-sgd-bugs           :mod:`.dpsgd_bugs`           Chua et al. 2024; Opacus issues
federated             :mod:`.federated`            Andrew et al. 2024, arXiv:2302.03098
scores                :mod:`.canary_scores`        Steinke et al. 2023; Mahloujifar et al.
lidp-gaussian         :mod:`.lidp_gaussian`        Pillutla et al. 2023, arXiv:2305.18447
lidp-dp-sgd           :mod:`.lidp_dpsgd`           Pillutla et al. 2023, arXiv:2305.18447
vote-leakage          :mod:`.vote_leakage`         Wang et al. 2022, arXiv:2209.10732
mechanism             :mod:`.mechanism`            Bichsel et al. 2021 (DP-Sniper), S&P
llm-fine-tuning       :mod:`.llm_fine_tuning`      Panda et al. 2025, arXiv:2503.06808
synthetic-data        :mod:`.synthetic_data`       Annamalai et al. 2024, arXiv:2405.10994
====================  ===========================  ======================================

Each package holds its settings, its stages and its reproduction driver, nothing else: the
statistics live in :mod:`dpaudit.bounds`, the systems in :mod:`dpaudit.systems`, the data in
:mod:`dpaudit.data` and the reports in :mod:`dpaudit.report`.

Example:
    >>> from dpaudit.experiments import WORKFLOWS
    >>> sorted(WORKFLOWS.names())  # doctest: +NORMALIZE_WHITESPACE
    ['dp-sgd', 'dp-sgd-bugs', 'federated', 'group-privacy', 'label-dp', 'lidp-dp-sgd',
     'lidp-gaussian', 'llm-fine-tuning', 'mechanism', 'private-prediction', 'scores',
     'synthetic-data', 'vote-leakage']
    >>> s = WORKFLOWS.get("lidp-gaussian").load_settings(num_runs=100, num_repetitions=2, seed=0)
    >>> run_workflow("lidp-gaussian", s).entries[0].adversary
    '1 canary per run'
"""

from dpaudit.experiments._workflow import WORKFLOWS, Reporter, Workflow, run_workflow
from dpaudit.experiments.canary_scores import (
    ScoresAuditSettings,
    audit_canary_scores,
    audit_scores,
)
from dpaudit.experiments.dpsgd import DPSGDAuditSettings, audit_dpsgd
from dpaudit.experiments.dpsgd_bugs import DPSGDBugsSettings, audit_dpsgd_bugs
from dpaudit.experiments.federated import FederatedSettings, audit_federated
from dpaudit.experiments.group_privacy import GroupPrivacySettings, audit_group_privacy
from dpaudit.experiments.label_dp import LabelDPSettings, run_label_dp
from dpaudit.experiments.lidp_dpsgd import LiDPDPSGDSettings, run_lidp_dpsgd
from dpaudit.experiments.lidp_gaussian import (
    LiDPExperimentResult,
    LiDPGaussianSettings,
    audit_lidp_gaussian,
    run_lidp_gaussian,
)
from dpaudit.experiments.llm_fine_tuning import (
    LLMFineTuningSettings,
    audit_llm_fine_tuning,
)
from dpaudit.experiments.mechanism import (
    MechanismAuditSettings,
    audit_mechanism,
    replay_witness,
)
from dpaudit.experiments.private_prediction import (
    AdversaryAudit,
    PrivatePredictionSettings,
    audit_private_prediction,
)
from dpaudit.experiments.private_prediction.config import (
    config_schema,
    demo_settings,
    load_config,
    parse_config,
)
from dpaudit.experiments.synthetic_data import SyntheticDataSettings, audit_synthetic_data
from dpaudit.experiments.vote_leakage import (
    VoteLeakageConfig,
    VoteLeakageResult,
    run_vote_leakage,
)

__all__ = [
    "WORKFLOWS",
    "AdversaryAudit",
    "DPSGDAuditSettings",
    "DPSGDBugsSettings",
    "FederatedSettings",
    "GroupPrivacySettings",
    "LLMFineTuningSettings",
    "LabelDPSettings",
    "LiDPDPSGDSettings",
    "LiDPExperimentResult",
    "LiDPGaussianSettings",
    "MechanismAuditSettings",
    "PrivatePredictionSettings",
    "Reporter",
    "ScoresAuditSettings",
    "SyntheticDataSettings",
    "VoteLeakageConfig",
    "VoteLeakageResult",
    "Workflow",
    "audit_canary_scores",
    "audit_dpsgd",
    "audit_dpsgd_bugs",
    "audit_federated",
    "audit_group_privacy",
    "audit_lidp_gaussian",
    "audit_llm_fine_tuning",
    "audit_mechanism",
    "audit_private_prediction",
    "audit_scores",
    "audit_synthetic_data",
    "config_schema",
    "demo_settings",
    "load_config",
    "parse_config",
    "replay_witness",
    "run_label_dp",
    "run_lidp_dpsgd",
    "run_lidp_gaussian",
    "run_vote_leakage",
    "run_workflow",
]
