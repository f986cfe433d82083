"""The service records each freshly drawn answer with its vote histogram (the operator's view
that ``dpaudit monitor`` tests), durably and in the charge's own transaction."""

from __future__ import annotations

import numpy as np
import pytest
from serve_support import HIST, fixed_service

from dpaudit.mechanisms import GNMax
from dpaudit.serve import LedgerConfig, MemoryLedger, SQLiteLedger


def _ledger(kind, tmp_path):
    from dpaudit.accounting import DEFAULT_ORDERS

    cfg = LedgerConfig(GNMax(4.0), tuple(DEFAULT_ORDERS), 1e-5)
    if kind == "memory":
        return MemoryLedger(cfg, global_budget=1e9)
    return SQLiteLedger(tmp_path / "ledger.sqlite", cfg, global_budget=1e9)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_every_charged_answer_is_recorded_with_its_votes(kind, tmp_path):
    led = _ledger(kind, tmp_path)
    svc = fixed_service(ledger=led, noise_rng=3)
    client = svc.authenticate(led.add_client("alice", 1e8))
    labels = [svc.predict(client, [[float(i)]] * 5).labels for i in range(3)]
    log = led.answers()
    assert len(log) == 15 and log.last_charge_id == 3
    np.testing.assert_array_equal(log.labels, np.concatenate(labels))
    np.testing.assert_array_equal(log.votes, np.tile(HIST, (15, 1)))
    np.testing.assert_array_equal(log.charge_ids, np.repeat([1, 2, 3], 5))
    np.testing.assert_array_equal(log.client_ids, np.full(15, client.id))
    later = led.answers(after=2)
    assert len(later) == 5 and later.last_charge_id == 3
    assert len(led.answers(after=1, limit=1)) == 5
    empty = led.answers(after=3)
    assert len(empty) == 0 and empty.last_charge_id == 3
    led.close()


def test_records_survive_a_restart_and_cached_answers_are_not_recorded(tmp_path):
    led = _ledger("sqlite", tmp_path)
    svc = fixed_service(ledger=led, cache=True, noise_rng=1)
    client = svc.authenticate(led.add_client("bob", 1e8))
    svc.predict(client, [[1.0], [2.0], [1.0]])  # the repeat inside the request: one draw
    svc.predict(client, [[2.0], [3.0]])  # 2.0 comes from the cache
    led.close()
    again = SQLiteLedger.open(tmp_path / "ledger.sqlite")
    log = again.answers()
    assert len(log) == 3  # 1.0, 2.0, 3.0: one fresh draw each
    np.testing.assert_array_equal(log.charge_ids, [1, 1, 2])
    again.close()


def test_no_records_when_recording_is_off(tmp_path):
    from dpaudit.attacks import fixed_histogram_interface
    from dpaudit.serve import PredictionService

    led = _ledger("sqlite", tmp_path)
    svc = PredictionService(
        fixed_histogram_interface(HIST, GNMax(4.0)), led, noise_rng=0, record_votes=False
    )
    client = svc.authenticate(led.add_client("carol", 1e8))
    svc.predict(client, [[0.0]] * 4)
    assert len(led.answers()) == 0 and len(led.journal()) == 1
    led.close()


def test_monitor_statuses_are_stored(tmp_path):
    for kind in ("memory", "sqlite"):
        led = _ledger(kind, tmp_path / kind)
        assert led.monitor_statuses() == {}
        led.set_monitor_status("m", {"alarm": False, "answers": 3})
        led.set_monitor_status("m", {"alarm": True, "answers": 9})
        assert led.monitor_statuses() == {"m": {"alarm": True, "answers": 9}}
        led.close()


def test_charge_votes_must_match_the_labels():
    from dpaudit.serve import Charge

    with pytest.raises(ValueError, match=r"votes must have shape \(n, C\) with n = 2"):
        Charge(np.zeros(2, int), np.zeros((2, 1)), np.zeros((2, 1)), np.ones(2, bool),
               votes=np.zeros((3, 4)))  # fmt: skip
