"""Issue 28: the label-memorization attack at extreme confidence levels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.attacks import label_memorization_attack, plant_label_canaries


@pytest.mark.parametrize("level", [1e-300, 1e-20, 1e-3])
@pytest.mark.parametrize("selection", ["split", "bonferroni"])
def test_tiny_confidence_level_gives_a_bound_not_an_internal_error(level, selection):
    """It raised "ConfidenceInterval needs low <= high" (a normal lower bound above 1)."""
    rng = np.random.default_rng(0)
    canaries = plant_label_canaries(rng.integers(0, 3, 200), 100, num_classes=3, rng=0)
    probs = rng.dirichlet([1.0, 1.0, 1.0], 100)
    res = label_memorization_attack(
        probs, canaries, confidence_level=level, selection=selection, rng=0
    )
    for bound in (res.cgr, res.acgr):
        assert not math.isnan(bound.epsilon) and bound.epsilon >= 0.0
        assert bound.interval.low <= bound.interval.high


def test_usual_levels_are_unchanged_by_the_clip():
    rng = np.random.default_rng(1)
    canaries = plant_label_canaries(rng.integers(0, 3, 200), 100, num_classes=3, rng=0)
    labels = canaries.labels
    probs = np.full((100, 3), 0.05)
    probs[np.arange(100), labels] = 0.9
    res = label_memorization_attack(probs, canaries, confidence_level=0.95, rng=0)
    assert 0.0 < res.acgr.epsilon < math.inf
