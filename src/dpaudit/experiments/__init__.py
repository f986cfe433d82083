"""Audit pipelines, one module per paper workflow (layer 7).

- :mod:`dpaudit.experiments.private_prediction`: any registered private-prediction system
  audited end to end (Chadha et al. 2024, arXiv:2402.09403).
- :mod:`dpaudit.experiments.config`: TOML configs of that audit, validated before training.
- :mod:`dpaudit.experiments.dpsgd`: DP-SGD audited in one training run with canaries, baseline
  and quantile-regression scores, one-run and f-DP bounds (Liu et al.; Steinke et al. 2023,
  arXiv:2305.08846); :mod:`dpaudit.experiments.canary_scores`: every bound from canary scores
  of your own model.
- :mod:`dpaudit.experiments.label_dp`: label DP under audit — ALIBI, AGIBI, RR, PATE-FM trained
  with flipped-label canaries, the memorization attack beside each claim (Malek et al. 2021,
  arXiv:2106.03408).
- :mod:`dpaudit.experiments.lidp`: the Lifted-DP Gaussian experiment (Pillutla et al. 2023,
  arXiv:2305.18447).
- :mod:`dpaudit.experiments.lidp_dpsgd`: the Lifted-DP audit of DP-SGD, k random canaries per
  training run, runs as engine tasks (processes or Ray) over :mod:`~dpaudit.experiments.lidp_runs`.
- :mod:`dpaudit.experiments.vote_leakage`: vote extraction and attribute inference (Wang et al.
  2022, arXiv:2209.10732), one module per part: :mod:`~dpaudit.experiments.vote_extraction`,
  :mod:`~dpaudit.experiments.budget_limited`, :mod:`~dpaudit.experiments.noise_sweep`,
  :mod:`~dpaudit.experiments.attribute_inference`.

The most used entry points are re-exported here, with the sampling engine
(:func:`dpaudit.engine.run_blocks`) and its kernels (:mod:`dpaudit.mechanisms`); everything else
is in its module.
"""

from dpaudit.engine import EngineRun, run_blocks
from dpaudit.experiments.canary_scores import ScoresAuditSettings, audit_canary_scores
from dpaudit.experiments.config import demo_settings, find_config, load_config, parse_config
from dpaudit.experiments.dpsgd import audit_dpsgd
from dpaudit.experiments.dpsgd_settings import DPSGDAuditSettings
from dpaudit.experiments.label_dp import run_label_dp
from dpaudit.experiments.label_dp_settings import LabelDPSettings
from dpaudit.experiments.lidp import LiDPExperimentResult, run_lidp_gaussian
from dpaudit.experiments.lidp_dpsgd import run_lidp_dpsgd
from dpaudit.experiments.private_prediction import (
    AdversaryAudit,
    PrivatePredictionSettings,
    audit_private_prediction,
)
from dpaudit.experiments.vote_leakage import (
    VoteLeakageConfig,
    VoteLeakageResult,
    run_vote_leakage,
)
from dpaudit.mechanisms import MultinomialBlock, NoisyArgmaxBlock

__all__ = [
    "AdversaryAudit",
    "DPSGDAuditSettings",
    "EngineRun",
    "LabelDPSettings",
    "LiDPExperimentResult",
    "MultinomialBlock",
    "NoisyArgmaxBlock",
    "PrivatePredictionSettings",
    "ScoresAuditSettings",
    "VoteLeakageConfig",
    "VoteLeakageResult",
    "audit_canary_scores",
    "audit_dpsgd",
    "audit_private_prediction",
    "demo_settings",
    "find_config",
    "load_config",
    "parse_config",
    "run_blocks",
    "run_label_dp",
    "run_lidp_dpsgd",
    "run_lidp_gaussian",
    "run_vote_leakage",
]
