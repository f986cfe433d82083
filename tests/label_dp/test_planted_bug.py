"""Planted bugs: label-DP systems that add less noise than they claim are refuted by the audit.

ALIBI, randomized response (RR) and PATE-FM each have a buggy copy that claims the honest
system's ε but noises less; the label-memorization audit must refute the copy and must not
refute the honest system at the same setting.

ALIBI: an ALIBI that adds a quarter of the noise it claims.

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
from dpaudit.mechanisms import ConfidentGNMax, LaplaceLabels, RandomizedResponse
from dpaudit.systems import SYSTEMS, PATEFMCell, RRCell
from dpaudit.systems.label_dp import (
    ALIBI,
    PATEFM,
    ConsistencySettings,
    RandomizedResponseLabels,
    TrainingSettings,
)

TRAINING = TrainingSettings(hidden=(512,), epochs=60, batch_size=64)
N, D, C = 400, 256, 10


@dataclasses.dataclass(frozen=True)
class QuarterNoiseALIBI(ALIBI):
    """Claims ε = 2/b but noises with scale b/4 (ε = 8/b)."""

    def noise_mechanism(self) -> LaplaceLabels:
        return LaplaceLabels(self.scale / 4)


def audit(system, X=None, y=None, num_canaries: int = N):
    rng = np.random.default_rng(0)
    if X is None:
        X = rng.standard_normal((N, D)).astype(np.float32)
        y = rng.integers(0, C, N)
    canaries = plant_label_canaries(y, num_canaries, num_classes=C, rng=1)
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


# --------------------------------------------------------------------- randomized response
# The registered "rr" system claims ε = 1; the buggy copy releases each label by 4ε-RR
# (true ε = 4). Same data, canaries and network as the ALIBI case above.


@dataclasses.dataclass(frozen=True)
class FourfoldEpsilonRR(RandomizedResponseLabels):
    """Claims ε but releases labels with 4ε-randomized response."""

    def noise_mechanism(self) -> RandomizedResponse:
        return RandomizedResponse(4 * self.epsilon, self.num_classes)


def _rr() -> RandomizedResponseLabels:
    return SYSTEMS.get("rr")(RRCell(epsilon=1.0, num_classes=C, training=TRAINING))


def test_fourfold_epsilon_rr_is_refuted():
    honest = _rr()
    entry = audit(FourfoldEpsilonRR(honest.epsilon, honest.num_classes, training=TRAINING))
    assert entry.claim.epsilon == pytest.approx(1.0)
    assert entry.lower_bound.epsilon > 2.0, entry.lower_bound  # observed 3.09
    assert entry.gap.refutes_claim


def test_honest_rr_is_not_refuted():
    entry = audit(_rr())
    assert 0.0 <= entry.lower_bound.epsilon <= 1.0
    assert not entry.gap.refutes_claim


# --------------------------------------------------------------------------------- PATE-FM
# Two teachers on a learnable task (10 Gaussian clusters, 32 features), 200 of the 400 rows
# canaries, every row queried. The registered "pate-fm" system claims Confident GNMax with
# σ1 = σ2 = 400 (released data-dependent ε ≈ 0.47 at δ = 1e-5); the buggy copy answers with
# σ/1000. A canary's row then gets one vote for y′ (its teacher memorised it) and one for the
# true label y from the other teacher, never one for y″, so the student learns y′ on about
# half of the canaries and the audit's guesses are almost all right (observed 25 of 27,
# bound 1.29). The honest system's answers are noise; its bound is 0.


@dataclasses.dataclass(frozen=True)
class QuietPATEFM(PATEFM):
    """Claims its Confident GNMax but answers the student with σ1/1000 and σ2/1000."""

    def query(self, teachers, X, *, rng=None):
        m = self.mechanism
        quiet = ConfidentGNMax(m.threshold, m.sigma1 / 1000, m.sigma2 / 1000)
        return PATEFM.query(dataclasses.replace(self, mechanism=quiet), teachers, X, rng=rng)


PATE_N, PATE_D = 400, 32


def _pate_fm() -> PATEFM:
    cell = PATEFMCell(
        num_teachers=2, threshold=0.5, sigma1=400.0, sigma2=400.0, queries=PATE_N,
        teacher_steps=300, student_steps=600,
        training=TrainingSettings(hidden=(256,), batch_size=64),
        consistency=ConsistencySettings(enabled=False),  # tabular rows: no augmentations
    )  # fmt: skip
    return SYSTEMS.get("pate-fm")(cell)


def _pate_audit(system: PATEFM):
    rng = np.random.default_rng(0)
    y = rng.integers(0, C, PATE_N)
    X = 3 * rng.standard_normal((C, PATE_D))[y] + rng.standard_normal((PATE_N, PATE_D))
    return audit(system, X.astype(np.float32), y, num_canaries=PATE_N // 2)


def test_quiet_pate_fm_is_refuted():
    honest = _pate_fm()
    fields = {f.name: getattr(honest, f.name) for f in dataclasses.fields(honest)}
    entry = _pate_audit(QuietPATEFM(**fields))
    assert entry.claim.epsilon < 0.6, entry.claims  # the released data-dependent claim
    assert entry.lower_bound.epsilon > 2 * entry.claim.epsilon, entry.lower_bound
    assert entry.gap.refutes_claim


def test_honest_pate_fm_is_not_refuted():
    entry = _pate_audit(_pate_fm())
    assert entry.lower_bound.epsilon <= entry.claim.epsilon
    assert not entry.gap.refutes_claim
