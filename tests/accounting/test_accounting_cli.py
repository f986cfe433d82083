"""``dpaudit account pate`` end to end and the library function behind it."""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest

from dpaudit.accounting import (
    DEFAULT_ORDERS,
    RDPCurve,
    confident_gnmax_cost,
    gnmax_rdp,
    mechanism_rdp,
    pate_accounting,
)
from dpaudit.mechanisms import ConfidentGNMax, GNMax, LNMax

pytest.importorskip("typer")
from typer.testing import CliRunner

from dpaudit.cli import build_app

VOTES = np.array([[200, 30, 20], [150, 90, 10], [240, 5, 5], [100, 80, 70]])


def _rows(data):
    return {(r["analysis"], r["q"], r["conversion"]): r for r in data["rows"]}


def test_pate_accounting_matches_composed_curves():
    rep = pate_accounting(VOTES, GNMax(40.0), delta=1e-5)
    assert rep.num_queries == 4 and rep.num_answered == 4 and rep.cost == "all-answered"
    for analysis, q in (
        ("data-independent", "union"),
        ("data-dependent", "union"),
        ("data-dependent", "exact"),
    ):
        curve = RDPCurve(DEFAULT_ORDERS, gnmax_rdp(VOTES, 40, analysis=analysis, q=q).sum(axis=0))
        label = "none" if analysis == "data-independent" else q
        for row in rep.rows:
            if (row.analysis, row.q) == (analysis, label):
                conv = curve.to_dp(1e-5, conversion=row.conversion)
                assert row.epsilon == conv.epsilon and row.order == conv.order
    eps = {(r.analysis, r.q, r.conversion): r.epsilon for r in rep.rows}
    for conv in ("standard", "balle2020"):
        assert eps[("data-dependent", "exact", conv)] <= eps[("data-dependent", "union", conv)]
        assert eps[("data-dependent", "union", conv)] <= eps[("data-independent", "none", conv)]
    for key in eps:
        if key[2] == "balle2020":
            assert eps[key] <= eps[(key[0], key[1], "standard")]


def test_pate_accounting_with_threshold_expected_and_realised():
    rep = pate_accounting(VOTES, ConfidentGNMax(180, 30, 40), delta=1e-5)
    c = confident_gnmax_cost(VOTES, threshold=180, sigma1=30, sigma2=40)
    assert rep.cost == "expected"
    assert rep.num_answered == pytest.approx(float(c.answer_probability.sum()))
    row = next(
        r
        for r in rep.rows
        if (r.analysis, r.q, r.conversion) == ("data-dependent", "union", "balle2020")
    )
    assert row.epsilon == c.expected().to_dp(1e-5).epsilon
    answered = np.array([True, False, True, False])
    real = pate_accounting(VOTES, ConfidentGNMax(180, 30, 40), delta=1e-5, answered=answered)
    assert real.cost == "realised" and real.num_answered == 2
    row = next(
        r
        for r in real.rows
        if (r.analysis, r.q, r.conversion) == ("data-dependent", "union", "standard")
    )
    assert row.epsilon == c.realised(answered).to_dp(1e-5, conversion="standard").epsilon


def test_pate_accounting_bad_input():
    g = GNMax(1.0)
    with pytest.raises(TypeError, match="mechanism"):
        pate_accounting(VOTES, 40.0, delta=1e-5)  # the loose-float signature is gone
    with pytest.raises(TypeError, match="mechanism"):
        pate_accounting(VOTES, LNMax(2.0), delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        pate_accounting(VOTES, g, delta=1.5)
    with pytest.raises(ValueError, match="votes"):
        pate_accounting(-VOTES, g, delta=1e-5)
    with pytest.raises(ValueError, match="threshold"):
        pate_accounting(VOTES, ConfidentGNMax(-1, 1, 1), delta=1e-5)
    with pytest.raises(ValueError, match="answered"):
        pate_accounting(VOTES, g, delta=1e-5, answered=[True] * 4)
    with pytest.raises(ValueError, match="answered"):
        pate_accounting(VOTES, ConfidentGNMax(1, 1, 1), delta=1e-5, answered=[True] * 3)
    with pytest.raises(ValueError, match="orders"):
        pate_accounting(VOTES, g, delta=1e-5, orders=[])
    # σ² underflows: λ/σ² is not a float64 (issue 13 item 4)
    with pytest.raises(ValueError, match=r"sigma=1e-300 is too small"):
        pate_accounting(VOTES, GNMax(1e-300), delta=1e-5)
    with pytest.raises(ValueError, match=r"sigma1=1e-300 is too small"):
        pate_accounting(VOTES, ConfidentGNMax(1, 1e-300, 1), delta=1e-5)
    # σ far above the vote scale: every class is equally likely, q̃ = 1 − 1/C, and the cost
    # λ/σ² is 0 in float64 (the exact q̃'s quadrature used to overflow here: issue 13)
    far = pate_accounting(VOTES, GNMax(1e300), delta=1e-5)
    assert all(math.isfinite(row.epsilon) and row.epsilon >= 0 for row in far.rows)


def test_pate_accounting_reproduces_the_numbers_recorded_before_mechanism_values():
    """pate_accounting(votes, sigma=..., threshold=..., sigma1=...) at commit 517270d vs the
    mechanism-value signature: every ε, order and fallback share within 1e-15 relative
    (bit-identical except the data-independent threshold step, now mechanism_rdp's
    λ/(2σ1²) instead of λ/(√2σ1)², which differ in the last bit)."""
    path = pathlib.Path(__file__).resolve().parents[1] / "data"
    doc = json.loads((path / "ledger_numbers_before_mechanism_values.json").read_text())
    votes, answered = np.array(doc["votes"]), np.array(doc["answered"])
    for rec in doc["pate_accounting"]:
        cfg = rec["config"]
        if "threshold" in cfg:
            mech = ConfidentGNMax(cfg["threshold"], cfg["sigma1"], cfg["sigma"])
        else:
            mech = GNMax(cfg["sigma"])
        rep = pate_accounting(
            votes, mech, delta=cfg["delta"], answered=answered if rec["with_answered"] else None
        )
        assert rep.mechanism is mech and rep.num_answered == float.fromhex(rec["num_answered"])
        for row, want in zip(rep.rows, rec["rows"], strict=True):
            assert (row.analysis, row.q, row.conversion) == (
                want["analysis"], want["q"], want["conversion"],
            )  # fmt: skip
            for field in ("epsilon", "order", "fallback_fraction"):
                assert getattr(row, field) == pytest.approx(
                    float.fromhex(want[field]), rel=1e-15, abs=0
                )
        for key, curve in rep.curves.items():
            want = np.array([float.fromhex(x) for x in rec["curves"][key]])
            np.testing.assert_allclose(curve.epsilons, want, rtol=1e-15, atol=0)


def test_pate_accounting_curves_are_mechanism_rdp():
    """The composed curves are sums of mechanism_rdp's per-query claims (the one place)."""
    mech = ConfidentGNMax(180, 30, 40)
    rep = pate_accounting(VOTES, mech, delta=1e-5, answered=[True, False, True, True])
    for analysis, key in (
        ("data-dependent", "data-dependent/union"),
        ("data-independent", "data-independent"),
    ):
        per = [
            mechanism_rdp(mech, DEFAULT_ORDERS, votes=v, analysis=analysis, answered=a)
            for v, a in zip(VOTES, [True, False, True, True], strict=True)
        ]
        np.testing.assert_allclose(rep.curves[key].epsilons, np.sum(per, axis=0), rtol=1e-14)


def test_cli_json_and_table(tmp_path):
    path = tmp_path / "votes.npy"
    np.save(path, VOTES)
    runner = CliRunner()
    args = ["account", "pate", "--votes-file", str(path), "--sigma", "40", "--delta", "1e-5"]
    res = runner.invoke(build_app(), [*args, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    rep = pate_accounting(VOTES, GNMax(40.0), delta=1e-5)
    rows = _rows(data)
    for r in rep.rows:
        assert rows[(r.analysis, r.q, r.conversion)]["epsilon"] == r.epsilon
    assert data["num_queries"] == 4
    res = runner.invoke(build_app(), args)
    assert res.exit_code == 0, res.output
    assert "data-independent" in res.stdout and "Balle" in res.stdout and "4 queries" in res.stdout


def test_cli_threshold_csv_and_answered_file(tmp_path):
    path = tmp_path / "votes.csv"
    np.savetxt(path, VOTES, delimiter=",")
    ans = tmp_path / "answered.npy"
    np.save(ans, np.array([True, True, False, True]))
    runner = CliRunner()
    base = [
        "account",
        "pate",
        "--votes-file",
        str(path),
        "--sigma",
        "40",
        "--threshold",
        "180",
        "--sigma1",
        "30",
    ]
    res = runner.invoke(build_app(), [*base, "--answered-file", str(ans), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["cost"] == "realised" and data["num_answered"] == 3 and data["threshold"] == 180
    res = runner.invoke(build_app(), base)
    assert res.exit_code == 0 and "Confident GNMax" in res.stdout and "expected" in res.stdout


def test_cli_errors_are_clear(tmp_path):
    runner = CliRunner()
    res = runner.invoke(
        build_app(), ["account", "pate", "--votes-file", str(tmp_path / "no.npy"), "--sigma", "1"]
    )
    assert res.exit_code == 2 and "does not exist" in res.output
    path = tmp_path / "votes.npy"
    np.save(path, VOTES)
    res = runner.invoke(
        build_app(), ["account", "pate", "--votes-file", str(path), "--sigma", "-3"]
    )
    assert res.exit_code == 2 and "sigma" in res.output
    res = runner.invoke(
        build_app(),
        [
            "account",
            "pate",
            "--votes-file",
            str(path),
            "--sigma",
            "3",
            "--threshold",
            "-1",
            "--sigma1",
            "2",
        ],
    )
    assert res.exit_code == 2 and "threshold" in res.output
    res = runner.invoke(
        build_app(), ["account", "pate", "--votes-file", str(path), "--sigma", "3", "--sigma1", "2"]
    )
    assert res.exit_code == 2 and "--threshold and --sigma1 must be given together" in res.output
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 x\n")
    res = runner.invoke(build_app(), ["account", "pate", "--votes-file", str(bad), "--sigma", "3"])
    assert res.exit_code == 2 and "cannot read" in res.output
