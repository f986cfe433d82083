"""``DPClaimEProcess.update_until_rejected`` (issue 41: the sequential mechanism audit bets an
epoch's pairs looking every 32): the same audit as :meth:`update` on each look's pairs in
turn until the result rejects — the reference loop below — in a few large vector steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpaudit.bounds._sequential as seq
from dpaudit.bounds import DPClaimEProcess


def _look_by_look(e: DPClaimEProcess, pos, neg, look: int):
    """The reference: :meth:`update` on each look's pairs until the result rejects."""
    state = e.result()
    for lo in range(0, pos.size, look):
        state = e.update(pos[lo : lo + look], neg[lo : lo + look])
        if state.rejects_claim:
            break
    return state


def _epochs(seed: int):
    """Three epochs of paired events (a weak, a null, then a strong violation of ε = 0.1),
    each a restart of the bets, as the audit bets them."""
    rng = np.random.default_rng(seed)
    rates = [(0.52, 0.48, 2000), (0.3, 0.3, 3000), (0.55, 0.45, 10_000)]
    return [(rng.random(n) < p, rng.random(n) < q) for p, q, n in rates]


def _run(method, seed: int, look: int):
    e = DPClaimEProcess(0.1, 1e-6)
    states = []
    for pos, neg in _epochs(seed):
        e.restart_bets()
        states.append(method(e, pos, neg, look))
        if states[-1].rejects_claim:
            break
    return e, states


@pytest.mark.parametrize("look", [7, 32, 100, 5000])
def test_blocks_give_the_look_by_look_audit(look):
    """Exactly equal (the compiled bets are the same pass whatever the batches; NumPy's
    prefix sums may differ in the last bits, so to rounding without numba), the claim
    rejected mid-block and the stream stopped at the end of its look."""
    exact = seq.compiled_agrapa() is not None
    for seed in range(3):
        fast, got = _run(lambda e, p, n, k: e.update_until_rejected(p, n, look=k), seed, look)
        ref, want = _run(_look_by_look, seed, look)
        assert len(got) == len(want)
        assert got[-1].rejects_claim and want[-1].rejects_claim
        for g, w in zip(got, want, strict=True):
            assert (g.rejected_at, g.observations, g.epsilon) == (
                w.rejected_at, w.observations, w.epsilon)  # fmt: skip
            if exact:
                assert (g.log_e_value, g.max_log_e_value) == (w.log_e_value, w.max_log_e_value)
            else:
                assert math.isclose(g.log_e_value, w.log_e_value, rel_tol=1e-10)
        last = got[-1]  # stopped at the end of the look that rejects (looks start per epoch)
        before = sum(p.size for p, _ in _epochs(seed)[: len(got) - 1])
        assert last.rejected_at <= last.observations < last.rejected_at + look
        assert (last.observations - before) % look == 0
        np.testing.assert_array_equal(fast._rejected_at, ref._rejected_at)
        np.testing.assert_allclose(fast._process.log_wealth, ref._process.log_wealth,
                                   rtol=0 if exact else 1e-10)  # fmt: skip


def test_a_stream_that_never_rejects_is_fed_whole():
    rng = np.random.default_rng(7)
    pos, neg = rng.random(10_000) < 0.3, rng.random(10_000) < 0.3
    a, b = DPClaimEProcess(0.5), DPClaimEProcess(0.5)
    got, want = a.update_until_rejected(pos, neg, look=32), _look_by_look(b, pos, neg, 32)
    assert not got.rejects_claim and got.observations == want.observations == 10_000
    assert got.log_e_value == pytest.approx(want.log_e_value, rel=1e-12)


def test_already_rejected_feeds_one_look():
    e = DPClaimEProcess(0.1)
    e.update(np.ones(500, bool), np.zeros(500, bool))
    assert e.result().rejects_claim
    state = e.update_until_rejected(np.ones(100, bool), np.zeros(100, bool), look=32)
    assert state.observations == 532


def test_update_until_rejected_argument_checks():
    e = DPClaimEProcess(0.5)
    with pytest.raises(ValueError, match="look"):
        e.update_until_rejected([1.0], [0.0], look=0)
    with pytest.raises(ValueError, match="positives and negatives"):
        e.update_until_rejected([1.0, 0.0], [0.0], look=1)
    with pytest.raises(ValueError, match="negatives"):
        e.update_until_rejected([1.0], [2.0], look=1)
    assert e.observations == 0


def test_the_compiled_paired_pass_is_the_generic_update(monkeypatch):
    """With numba, :meth:`DPClaimEProcess.update` forms the claim's statistics inside one
    compiled pass (no columns × pairs array); the same bets, wealth, maxima and rejection
    times as the generic update of the formed statistics, to the last bit, across batches,
    δ > 0 and seeded and plain restarts."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    batches = [
        (rng.random(n) < p, rng.random(n) < q)
        for p, q, n in [(0.6, 0.4, 1), (0.6, 0.4, 700), (0.5, 0.5, 2000), (0.7, 0.3, 900)]
    ]

    def run():
        e, states = DPClaimEProcess(0.2, 1e-3), []
        for i, (pos, neg) in enumerate(batches):
            if i == 2:
                e.restart_bets(0.5, 0.45, weight=20)
            if i == 3:
                e.restart_bets()
            states.append(e.update(pos, neg))
        return e, states

    fast, got = run()
    monkeypatch.setattr(seq, "compiled_paired_agrapa", lambda: None)
    slow, want = run()
    assert got == want and got[-1].rejects_claim
    for name in ("log_wealth", "max_log_wealth", "_sum", "_sum_sq"):
        np.testing.assert_array_equal(getattr(fast._process, name), getattr(slow._process, name))
    np.testing.assert_array_equal(fast._rejected_at, slow._rejected_at)
    assert fast.observations == slow.observations == 3601
