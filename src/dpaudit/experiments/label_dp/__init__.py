"""Label DP under audit (Malek, Mironov, Prasad, Shilov & Tramèr 2021, "Antipodes of Label
Differential Privacy: PATE and ALIBI", arXiv:2106.03408): ALIBI, AGIBI, randomized response and
PATE-FM trained with flipped-label canaries, the label-memorization attack beside each claim.

* :mod:`.settings` — :class:`LabelDPSettings` and the shipped configs.
* :mod:`.pipeline` — :func:`run_label_dp`, the stages in order.
"""

from dpaudit.experiments._workflow import WORKFLOWS, Workflow
from dpaudit.experiments.label_dp.pipeline import (
    LabelDPData,
    attack_cell,
    check_before_training,
    load_label_data,
    make_entry,
    plant_canaries,
    run_label_dp,
    train_cell,
    validate_heuristic,
)
from dpaudit.experiments.label_dp.settings import (
    LABEL_DP_CONFIGS,
    LABEL_DP_MECHANISMS,
    AGIBISettings,
    ALIBISettings,
    AttackSettings,
    CanarySettings,
    DataSettings,
    LabelDPSettings,
    LevelSettings,
    PATESettings,
    RRSettings,
    SoftRRSettings,
    ValidationSettings,
    from_mapping,
    load_label_dp_config,
)

__all__ = [
    "LABEL_DP_CONFIGS",
    "LABEL_DP_MECHANISMS",
    "AGIBISettings",
    "ALIBISettings",
    "AttackSettings",
    "CanarySettings",
    "DataSettings",
    "LabelDPData",
    "LabelDPSettings",
    "LevelSettings",
    "PATESettings",
    "RRSettings",
    "SoftRRSettings",
    "ValidationSettings",
    "attack_cell",
    "check_before_training",
    "from_mapping",
    "load_label_data",
    "load_label_dp_config",
    "make_entry",
    "plant_canaries",
    "run_label_dp",
    "train_cell",
    "validate_heuristic",
]

WORKFLOWS.register(
    "label-dp",
    Workflow(
        name="label-dp",
        settings=LabelDPSettings,
        run=run_label_dp,
        summary="Label DP under audit (ALIBI, AGIBI, RR, PATE-FM): accuracy, claimed ε and the "
        "label-memorization ε_m per accuracy level.",
        report="dpaudit.report.label_dp:REPORT",
        config="label-dp-demo",
        source="Malek et al. 2021, arXiv:2106.03408",
    ),
)
