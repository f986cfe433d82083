"""Base layer: validation helpers, RNG plumbing, result serialisation."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._rng import as_generator, block_seeds, seed_entropy
from dpaudit._validate import (
    check_confidence_level,
    check_counts,
    check_delta,
    check_nonneg_int,
    check_orders,
    check_votes,
)
from dpaudit.conversions import dp_to_delta, rdp_to_dp


def test_block_seeds_are_stable_and_prefix_consistent():
    a = [s.generate_state(2).tolist() for s in block_seeds(42, 3)]
    b = [s.generate_state(2).tolist() for s in block_seeds(42, 5)]
    assert a == b[:3]
    assert seed_entropy(42) == 42
    g = as_generator(1)
    assert as_generator(g) is g


def test_results_serialise_strict_json():
    @dataclasses.dataclass(frozen=True)
    class R(ResultMixin):
        x: np.ndarray
        ci: ConfidenceInterval
        e: float

    r = R(np.array([1.0, np.inf]), ConfidenceInterval(0.1, math.inf), -math.inf)
    d = json.loads(r.to_json())
    assert d == {"x": [1.0, "inf"], "ci": {"low": 0.1, "high": "inf"}, "e": "-inf"}
    with pytest.raises(ValueError, match="low <= high"):
        ConfidenceInterval(2.0, 1.0)
    assert tuple(ConfidenceInterval(0.0, 1.0)) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: check_confidence_level(1.0), ValueError, "confidence_level"),
        (lambda: check_delta(1.0), ValueError, "delta"),
        (lambda: check_nonneg_int("n", True), TypeError, "n"),
        (lambda: check_nonneg_int("n", -1), ValueError, "n"),
        (lambda: check_orders([1.0]), ValueError, "orders"),
        (lambda: check_orders([]), ValueError, "orders"),
        (lambda: check_counts("counts", [1.5]), ValueError, "counts"),
        (lambda: check_votes("votes", [[1, 2], [3]]), ValueError, "votes"),
    ],
)
def test_validation_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_rdp_to_dp_reference_values():
    """formulas.md §1.8 item 6: 1000 GNMax queries, σ = 40, δ = 1e-5."""
    orders = np.concatenate([np.arange(2.0, 100.01, 0.5), np.geomspace(100, 500, 101)[1:]])
    rdp = 1000 * orders / 40.0**2
    std = rdp_to_dp(orders, rdp, 1e-5, conversion="standard")
    imp = rdp_to_dp(orders, rdp, 1e-5)
    assert std.epsilon == pytest.approx(5.995927881, abs=1e-8) and std.order == 5.5
    assert imp.epsilon == pytest.approx(5.377728337, abs=1e-8) and imp.order == 5.0
    back = dp_to_delta(orders, rdp, imp.epsilon)
    assert back.delta == pytest.approx(1e-5, rel=1e-6)
    with pytest.raises(ValueError, match="delta"):
        rdp_to_dp(orders, rdp, 0.0)
    with pytest.raises(ValueError, match="rdp"):
        rdp_to_dp(orders, rdp[:-1], 1e-5)


def test_check_sections_validates_a_settings_root():

    from dpaudit import _settings
    from dpaudit._settings import option

    @dataclasses.dataclass(frozen=True)
    class Inner:
        x: int = option(1, help="x")

    @dataclasses.dataclass(frozen=True)
    class Root:
        name: str = option("run", help="name")
        seed: int = option(0, help="seed")
        inner: Inner = option(default_factory=Inner, help="a section")

        def __post_init__(self) -> None:
            _settings.check_sections(self)

    assert Root(seed=np.int64(3)).seed == 3 and type(Root(seed=np.int64(3)).seed) is int
    with pytest.raises(ValueError, match="name must be a non-empty string, got ' '"):
        Root(name=" ")
    with pytest.raises(ValueError, match="seed"):
        Root(seed=-1)
    with pytest.raises(TypeError, match=r"inner must be Inner, got \{'x': 2\}"):
        Root(inner={"x": 2})
