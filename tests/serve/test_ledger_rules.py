"""One ledger arithmetic: the service's ledgers run dpaudit.accounting's LedgerRules (the rules
PrivacyLedger runs) and only store what they compute."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.accounting import DEFAULT_ORDERS, PrivacyLedger
from dpaudit.accounting._ledger import LedgerRules
from dpaudit.errors import BudgetExhaustedError
from dpaudit.mechanisms import ConfidentGNMax, GNMax
from dpaudit.serve import (
    GLOBAL_ACCOUNT,
    BudgetRefused,
    Charge,
    LedgerConfig,
    MemoryLedger,
    SQLiteLedger,
    batch_cost,
)

VOTES = np.random.default_rng(3).multinomial(250, [0.55, 0.3, 0.1, 0.05], size=40)


def _bits(x: np.ndarray) -> list[str]:
    return [float(v).hex() for v in np.asarray(x, dtype=np.float64)]


def _ledgers(tmp_path, cfg, budget=1e6):
    return [
        MemoryLedger(cfg, global_budget=budget),
        SQLiteLedger(tmp_path / "l.sqlite", cfg, global_budget=budget),
    ]


def test_the_service_config_is_the_accounting_rules():
    cfg = LedgerConfig(GNMax(40.0), tuple(DEFAULT_ORDERS), 1e-5, analysis="data-dependent")
    led = PrivacyLedger(GNMax(40.0), delta=1e-5, analysis="data-dependent")
    assert isinstance(cfg, LedgerRules) and isinstance(led.rules, LedgerRules)
    assert LedgerRules.compose is LedgerConfig.compose and LedgerRules.fits is LedgerConfig.fits
    assert cfg.orders == led.rules.orders and cfg.delta == led.rules.delta
    assert LedgerConfig.costs is LedgerRules.costs and LedgerConfig.epsilon is LedgerRules.epsilon
    np.testing.assert_array_equal(cfg.order_grid, led.orders)


@pytest.mark.parametrize("analysis", ["data-independent", "data-dependent"])
@pytest.mark.parametrize(
    "mechanism, answered",
    [(GNMax(40.0), True), (ConfidentGNMax(150.0, 60.0, 30.0), False)],
)
def test_one_query_requests_total_what_the_in_process_ledger_totals(
    tmp_path, analysis, mechanism, answered
):
    """Requests of one query each: the service's account is PrivacyLedger's curve, bit for
    bit (GNMax charges ρ2 alone, an abstention ρ1 alone, so the grouping of the additions is
    the same), and so is ε(δ)."""
    cfg = LedgerConfig(mechanism, tuple(DEFAULT_ORDERS), 1e-5, analysis=analysis)
    local = PrivacyLedger(mechanism, delta=1e-5, analysis=analysis)
    for v in VOTES:
        local.charge(v, answered=answered)
    for led in _ledgers(tmp_path, cfg):
        client = led.authenticate(led.add_client("a", 1e6))
        for v in VOTES:
            ans = np.array([answered])
            worst, realised = cfg.costs(v[None, :], ans)
            led.settle(client, Charge(np.zeros(1, np.int64), worst, realised, ans))
        for cid in (client.id, GLOBAL_ACCOUNT):
            assert _bits(led.account(cid).rdp) == _bits(local.rdp.epsilons)
        assert led.epsilon(client.id) == local.epsilon()
        assert led.verify().ok
        led.close()


@pytest.mark.parametrize("analysis", ["data-independent", "data-dependent"])
def test_the_budget_refuses_where_the_in_process_ledger_refuses(analysis):
    """The same budget test: one-query requests are accepted exactly while PrivacyLedger
    accepts them, and refused from the same query on."""
    budget = 0.6
    cfg = LedgerConfig(GNMax(40.0), tuple(DEFAULT_ORDERS), 1e-5, analysis=analysis)
    led = MemoryLedger(cfg, global_budget=1e6)
    client = led.authenticate(led.add_client("a", budget))
    local = PrivacyLedger(GNMax(40.0), delta=1e-5, epsilon_budget=budget, analysis=analysis)
    served, charged = [], []
    for v in np.tile(VOTES, (20, 1)):
        worst, realised = cfg.costs(v[None, :], np.array([True]))
        try:
            led.settle(client, Charge(np.zeros(1, np.int64), worst, realised, np.array([True])))
            served.append(True)
        except BudgetRefused:
            served.append(False)
        try:
            local.charge(v)
            charged.append(True)
        except BudgetExhaustedError:
            charged.append(False)
    assert served == charged and not all(served) and any(served)
    assert led.epsilon(client.id) == local.epsilon() <= budget


def test_batches_compose_as_the_rules_say(tmp_path):
    cfg = LedgerConfig(ConfidentGNMax(150.0, 60.0, 30.0), (2.0, 8.0, 32.0), 1e-5)
    for led in _ledgers(tmp_path, cfg):
        client = led.authenticate(led.add_client("a", 1e6))
        answered = np.arange(len(VOTES)) % 3 != 0
        worst, realised = cfg.costs(VOTES, answered)
        r = led.settle(client, Charge(np.zeros(len(VOTES), np.int64), worst, realised, answered))
        assert _bits(r.rdp) == _bits(batch_cost(realised))
        want = LedgerRules.compose(np.zeros(3), batch_cost(realised))
        assert _bits(led.account(client.id).rdp) == _bits(want)
        assert r.client_epsilon == cfg.epsilon(want)
        led.close()


def test_stored_config_text_is_unchanged():
    """Ledger files compare the stored config as text: its JSON must not drift."""
    cfg = LedgerConfig(
        ConfidentGNMax(100.0, 50.0, 20.0), (2.0, 8.0), 1e-5, analysis="data-dependent"
    )
    assert cfg.to_json() == (
        '{"analysis": "data-dependent", "conversion": "balle2020", "delta": '
        '"0x1.4f8b588e368f1p-17", "format": "dpaudit.serve.LedgerConfig/1", "mechanism": '
        '{"name": "confident-gnmax", "sigma1": "0x1.9000000000000p+5", "sigma2": '
        '"0x1.4000000000000p+4", "threshold": "0x1.9000000000000p+6"}, "orders": '
        '["0x1.0000000000000p+1", "0x1.0000000000000p+3"], "q": "union"}'
    )
    assert LedgerConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ValueError, match="ledger config"):
        LedgerConfig.from_json(cfg.to_json().replace('"sigma1"', '"sigma9"'))


def test_service_config_validates_like_the_accounting_ledger():
    """One validation: what PrivacyLedger refuses, the service's config refuses."""
    with pytest.raises(ValueError, match="threshold"):
        LedgerConfig(ConfidentGNMax(-1.0, 50.0, 20.0), (2.0,), 1e-5)
    with pytest.raises(ValueError, match="strictly increasing"):
        LedgerConfig(GNMax(40.0), (8.0, 2.0), 1e-5)
    with pytest.raises(ValueError, match="sigma"):
        LedgerConfig(GNMax(1e-200), (2.0,), 1e-5)
    with pytest.raises(ValueError, match="conversion"):
        LedgerConfig(GNMax(40.0), (2.0,), 1e-5, conversion="other")
