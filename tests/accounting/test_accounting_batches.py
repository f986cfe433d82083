"""ε of fixed-size batches (dpaudit.accounting._batches) against dp-accounting's PLDs where the
instance is one of its mechanisms, a naive grid integration where it is not, the Monte Carlo
interval's coverage over seeds, bad input, and the synthetic-data page's table."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from dpaudit.accounting import shuffled_gaussian_epsilon, with_replacement_gaussian_epsilon

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
ROOT = Path(__file__).resolve().parents[2]


def _poisson(sigma: float, shift: float, q: float, steps: int, delta: float) -> float:
    loss = pld.from_gaussian_mechanism(
        sigma, sensitivity=shift, sampling_prob=q, value_discretization_interval=1e-3
    )
    return loss.self_compose(steps).get_epsilon_for_delta(delta)


@pytest.mark.parametrize("shift", [2.0, 1.0])
def test_one_draw_a_batch_is_the_poisson_subsampled_gaussian(shift):
    """B = 1: t is the batch's one row with probability 1/n, the Poisson-subsampled Gaussian
    of sensitivity 2C (or C) at q = 1/n, as dp-accounting computes it."""
    got = with_replacement_gaussian_epsilon(1.0, 1, 10, 30, 1e-3, copy_shift=shift)
    assert got == pytest.approx(_poisson(1.0, shift, 0.1, 30, 1e-3), rel=1e-6)


def test_copies_cost_more_than_poisson_at_the_same_rate():
    """DPCTGAN's 10 real-row steps: with replacement (0.535) above Poisson at B/n (0.513),
    and the displaced instance far above both."""
    binomial = with_replacement_gaussian_epsilon(5.0, 500, 1001, 10, 1e-2, copy_shift=1.0)
    poisson = _poisson(5.0, 1.0, 500 / 1001, 10, 1e-2)
    assert poisson < binomial < 1.05 * poisson
    page = " ".join((ROOT / "docs/workflows/synthetic-data.md").read_text().split())
    assert f"{binomial:.3f} against {poisson:.3f} for DPCTGAN's 10 steps" in page
    assert with_replacement_gaussian_epsilon(5.0, 500, 1001, 10, 1e-2) > 2.5 * binomial


@pytest.mark.parametrize("shift", [2.0, 1.0])
def test_one_batch_an_epoch_is_poisson_at_the_keep_rate(shift):
    """n = B + 1: one batch an epoch, t in it unless dropped (probability 1/n): exactly the
    subsampled Gaussian at q = 1 − 1/n, composed over the epochs (dp-accounting)."""
    est = shuffled_gaussian_epsilon(2.0, 9, 10, 5, 1e-2, copy_shift=shift, samples=100_000, rng=3)
    exact = _poisson(2.0, shift, 0.9, 5, 1e-2)
    assert est.low <= exact <= est.high and est.high - est.low < 0.1


def _grid_epsilon(sigma: float, shift: float, n: int, size: int, delta: float) -> float:
    """One epoch of two batches, by a naive sum over a grid of both batches' outputs."""
    z = np.linspace(-9.0, 9.0 + shift / sigma, 3001)
    h = z[1] - z[0]
    phi = np.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
    phi_s = np.exp(-0.5 * (z - shift / sigma) ** 2) / math.sqrt(2 * math.pi)
    p_drop = (n - 2 * size) / n
    q = np.outer(phi, phi)
    p = p_drop * q + (1 - p_drop) / 2 * (np.outer(phi_s, phi) + np.outer(phi, phi_s))

    def worst(eps: float) -> float:
        add = np.maximum(p - math.exp(eps) * q, 0).sum() * h * h
        remove = np.maximum(q - math.exp(eps) * p, 0).sum() * h * h
        return max(add, remove) - delta

    return optimize.brentq(worst, 0.0, 20.0, xtol=1e-7)


@pytest.mark.parametrize("shift", [2.0, 1.0])
def test_two_batches_match_a_grid_integration(shift):
    est = shuffled_gaussian_epsilon(1.0, 4, 9, 1, 1e-2, copy_shift=shift, samples=400_000, rng=5)
    exact = _grid_epsilon(1.0, shift, 9, 4, 1e-2)
    width = est.high - est.low  # one interval's width either side (its coverage: below)
    assert est.low - width <= exact <= est.high + width and width < 0.05


def test_the_interval_covers_the_exact_value_over_seeds():
    """95 % nominal: over 20 seeds the interval misses the exact ε at most 3 times."""
    exact = _poisson(2.0, 2.0, 0.9, 5, 1e-2)
    estimates = [
        shuffled_gaussian_epsilon(2.0, 9, 10, 5, 1e-2, samples=20_000, rng=seed)
        for seed in range(20)
    ]
    assert sum(not (e.low <= exact <= e.high) for e in estimates) <= 3


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="noise_multiplier"):
        with_replacement_gaussian_epsilon(0.0, 4, 10, 3, 1e-2)
    with pytest.raises(ValueError, match="delta"):
        with_replacement_gaussian_epsilon(1.0, 4, 10, 3, 0.0)
    with pytest.raises(TypeError, match="copy_shift"):
        with_replacement_gaussian_epsilon(1.0, 4, 10, 3, 1e-2, copy_shift="2")
    with pytest.raises(ValueError, match="copy_shift"):
        with_replacement_gaussian_epsilon(1.0, 4, 10, 3, 1e-2, copy_shift=2.5)  # > 2C: unclipped
    with pytest.raises(ValueError, match="num_records=64 and batch_size=64"):
        shuffled_gaussian_epsilon(1.0, 64, 64, 3, 1e-2)
    with pytest.raises(ValueError, match="samples"):
        shuffled_gaussian_epsilon(1.0, 4, 9, 3, 1e-2, samples=0)
    with pytest.raises(ValueError, match="num_records=2000001 and batch_size=2"):
        shuffled_gaussian_epsilon(1.0, 2, 2_000_001, 1, 1e-2)  # 2e11 normal draws
    with pytest.raises(ValueError, match="on 15 batches would need about"):
        shuffled_gaussian_epsilon(1.0, 64, 1001, 1, 1e-2, samples=10**8)  # 48 GB
    with pytest.raises(ValueError, match="batch_size=10000000, num_records=10"):
        with_replacement_gaussian_epsilon(1.0, 10**7, 10, 3, 1e-2)  # too many copy counts
    assert with_replacement_gaussian_epsilon(1.0, 4, 2**53 + 1, 3, 1e-2) == 0.0


def _script():
    spec = importlib.util.spec_from_file_location("gan_batches", ROOT / "scripts/gan_batches.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_synthetic_page_table_is_the_recorded_file_and_its_rows_recompute():
    """The page shows the table of gan-batches.json, and the file's ε = 1 rows of DPCTGAN's
    defaults and DPGAN are what the script computes now (same seeds)."""
    script = _script()
    recorded = json.loads(script.OUT.read_text())["rows"]
    page = (ROOT / "docs/workflows/synthetic-data.md").read_text(encoding="utf-8")
    assert script.table(recorded) in page
    at_one = [r for r in recorded if r["claim"] == 1.0]
    orthogonal = [r["shift_sqrt2"]["epsilon"] for r in at_one]
    flat = " ".join(page.split())
    assert max(orthogonal) < 1.0 and f"{min(orthogonal):.3f}–{max(orthogonal):.3f}" in flat
    zero = [r["shift_1"]["epsilon"] for r in at_one]
    assert f"{min(zero):.2f}–{max(zero):.2f} at ε = 1" in flat
    for index in (0, 4):
        now, then = script.row(script.ROWS[index]), recorded[index]
        for key, _ in script.SHIFTS:
            assert now.pop(key) == pytest.approx(then.pop(key), rel=1e-9)
        assert now == then
