"""``dpaudit argmax`` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("typer")
from typer.testing import CliRunner

from dpaudit.cli import build_app


def test_argmax_json_and_table():
    runner = CliRunner()
    res = runner.invoke(build_app(), ["argmax", "--votes", "200,30,20", "--sigma", "40", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["probabilities"][0] == pytest.approx(1 - 0.0020056117005131657, abs=1e-12)
    orders = np.array(data["orders"])
    np.testing.assert_allclose(data["data_independent_rdp"], orders / 1600)
    assert np.all(np.array(data["worst_case_rdp"]) <= orders / 1600)
    res = runner.invoke(build_app(), ["argmax", "--votes", "200,30,20", "--sigma", "40"])
    assert res.exit_code == 0 and "Q(H)" in res.stdout


def test_argmax_bad_input_is_a_clear_error():
    runner = CliRunner()
    res = runner.invoke(build_app(), ["argmax", "--votes", "200,30", "--sigma", "-1"])
    assert res.exit_code == 2
    res = runner.invoke(build_app(), ["argmax", "--votes", "a,b", "--sigma", "1"])
    assert res.exit_code != 0
