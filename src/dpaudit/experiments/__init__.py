"""Audit pipelines, one module per paper workflow (layer 7).

- :mod:`dpaudit.experiments.private_prediction`: PATE and CaPC audited end to end (paper 000).
- :mod:`dpaudit.experiments.config`: TOML configs of that audit, validated before training.
- :mod:`dpaudit.experiments.lidp`: the Lifted-DP Gaussian experiment (paper 002).
- :mod:`dpaudit.experiments.vote_leakage`: vote extraction and attribute inference (paper 003).

The most used entry points are re-exported here, with the sampling engine
(:func:`dpaudit.engine.run_blocks`) and its kernels (:mod:`dpaudit.mechanisms`); everything else
is in its module.
"""

from dpaudit.engine import EngineRun, run_blocks
from dpaudit.experiments.config import demo_settings, find_config, load_config, parse_config
from dpaudit.experiments.lidp import LiDPExperimentResult, run_lidp_gaussian
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
    "EngineRun",
    "LiDPExperimentResult",
    "MultinomialBlock",
    "NoisyArgmaxBlock",
    "PrivatePredictionSettings",
    "VoteLeakageConfig",
    "VoteLeakageResult",
    "audit_private_prediction",
    "demo_settings",
    "find_config",
    "load_config",
    "parse_config",
    "run_blocks",
    "run_lidp_gaussian",
    "run_vote_leakage",
]
