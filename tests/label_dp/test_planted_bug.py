"""Planted bug: an ALIBI that adds a quarter of the noise it claims is refuted by the audit.

The setting is fixed so that the attack has the power (found by hand, kept fixed): 400
training rows of 256 i.i.d. Gaussian features, every row a canary (its label flipped to y′
as in Game 3), C = 10, a 512-unit MLP trained long enough to memorise its targets. ALIBI
claims ε = 1 (Laplace scale b = 2) with the model's own prior (Malek et al. 2021 Alg. 3);
the buggy copy noises with b/4 (true ε = 4). The attack chooses τ on half of the canaries and
bounds on the other half. The honest system at the same setting is not refuted.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")

from dpaudit.attacks import label_memorization_attack, plant_label_canaries
from dpaudit.experiments.label_dp.pipeline import make_entry
from dpaudit.experiments.label_dp.settings import LabelDPSettings
from dpaudit.mechanisms import LaplaceLabels
from dpaudit.systems.label_dp import ALIBI, TrainingSettings

TRAINING = TrainingSettings(hidden=(512,), epochs=60, batch_size=64)
N, D, C = 400, 256, 10


@dataclasses.dataclass(frozen=True)
class QuarterNoiseALIBI(ALIBI):
    """Claims ε = 2/b but noises with scale b/4 (ε = 8/b)."""

    def noise_mechanism(self) -> LaplaceLabels:
        return LaplaceLabels(self.scale / 4)


def audit(system: ALIBI):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D)).astype(np.float32)
    y = rng.integers(0, C, N)
    canaries = plant_label_canaries(y, N, num_classes=C, rng=1)
    fit = system.fit(X, canaries.apply(y), num_classes=C, rng=2)
    probs = fit.network.predict_proba(X[canaries.indices])
    attack = label_memorization_attack(probs, canaries, rng=3)
    return make_entry(LabelDPSettings(), "planted", fit, attack, accuracy=float("nan"))


def test_quarter_noise_alibi_is_refuted():
    entry = audit(QuarterNoiseALIBI(scale=2.0, training=TRAINING))
    assert entry.claim.epsilon == 1.0
    assert entry.lower_bound.epsilon > 1.0, entry.lower_bound
    assert entry.gap.refutes_claim
    assert entry.selections[0].strategy == "split"


def test_honest_alibi_is_not_refuted():
    entry = audit(ALIBI(scale=2.0, training=TRAINING))
    assert 0.0 <= entry.lower_bound.epsilon <= 1.0
    assert not entry.gap.refutes_claim
