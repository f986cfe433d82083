"""Fixtures of the report tests: real AuditResults of two workflows, computed once."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pp_result():
    """A small private-prediction audit (digits, CaPC, 8 teachers)."""
    from dpaudit.experiments.private_prediction import (
        PrivatePredictionSettings,
        audit_private_prediction,
    )

    settings = PrivatePredictionSettings.of(
        dataset="digits", systems=("capc",), teachers=8, sigma=2.0,
        adversaries=("pois-advq", "pois-natq"), queries=3, experiments=100_000,
        instantiations=1, retrainings=1,
    )  # fmt: skip
    return audit_private_prediction(settings, progress=False)


@pytest.fixture(scope="session")
def vl_result():
    """A small vote-leakage reproduction (one histogram, three parts)."""
    from dpaudit._settings import parse_toml
    from dpaudit.experiments.vote_leakage.pipeline import VoteLeakageConfig, run_vote_leakage

    text = """
seed = 2
histograms = ["L1"]
[query_limited]
sigmas = [40]
repetitions = 1
intervals = "none"
[budget_limited]
budget = 0.5
repetitions = 1
[noise_sweep]
sigmas = [40, 100]
repetitions = 1
[attribute_inference]
enabled = false
"""
    return run_vote_leakage(parse_toml(text, VoteLeakageConfig))
