"""The exact low-dimensional simulation of the Gaussian sum-query audit's statistics.

Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh 2023, "Unleashing the Power of Randomization in
Auditing Differentially Private ML" (arXiv:2305.18447), "Auditing a Gaussian mechanism"; the
audit itself is described in :mod:`dpaudit.experiments.lidp_gaussian.pipeline`.

Simulation. Everything is rotation invariant, so each run is simulated exactly in a
(k + 1)-dimensional frame: the Gram–Schmidt coordinates of k + 1 i.i.d. ``N(0, I_d)`` vectors
(the k included canaries before normalisation and Z) form a lower-triangular matrix with
``N(0, 1)`` entries below the diagonal and ``χ_{d−i}`` on it (Bartlett decomposition), so the
cost does not grow with d (d = 10⁶ as in the paper is cheap); for d ≤ k the vectors are drawn
in ℝ^d directly. A fresh canary is independent of ``y₀``, so ``⟨y₀, c′⟩ = ‖y₀‖·u`` with u the
first coordinate of a uniform unit vector, ``u = N/√(N² + χ²_{d−1})``; and
``‖y₀‖² = (‖s‖ + σN₀)² + σ²χ²_{d−1}`` with ``s = Σ_{j<k} c_j``. The joint law of the statistics
is exactly that of the d-dimensional simulation.

Runs are drawn in fixed blocks of :data:`RUNS_PER_BLOCK` with :func:`dpaudit._rng.block_seeds`,
so results do not depend on memory-driven chunking.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence, block_seeds, seed_entropy
from dpaudit._typing import RngLike
from dpaudit._validate import check_memory, check_positive, check_positive_int, check_work

__all__ = ["RUNS_PER_BLOCK", "GaussianCanaryStatistics", "lidp_gaussian_statistics"]

#: Runs drawn per random-stream block (fixed so results are reproducible).
RUNS_PER_BLOCK = 16
#: Most runs one call of :func:`lidp_gaussian_statistics` simulates (~35–60 µs a run with
#: k = 1–16 canaries, measured: ~10 minutes at the cap; its two (n × k) arrays stay under a
#: GiB for k ≤ 16). Raise ``dpaudit.experiments.lidp_gaussian.simulation.MAX_SIMULATED_RUNS``
#: to allow more.
MAX_SIMULATED_RUNS = 10**7


def check_simulated_runs(runs: float, what: str) -> None:
    """Refuse, before any simulation, more than :data:`MAX_SIMULATED_RUNS` runs in all."""
    check_work(
        runs,
        MAX_SIMULATED_RUNS,
        what,
        "simulated runs",
        "lower them, or raise dpaudit.experiments.lidp_gaussian.simulation.MAX_SIMULATED_RUNS",
    )


def _block_statistics(
    gen: np.random.Generator, runs: int, sigma: float, dim: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Alternative and null inner-product statistics of ``runs`` runs, each (runs, k).

    Exact low-dimensional simulation (module docstring): rows of ``coords`` are the
    coordinates of the k unnormalised included canaries and of Z in an orthonormal frame.
    """
    p = k + 1
    if dim >= p:  # Bartlett: Gram–Schmidt coordinates of p i.i.d. N(0, I_d) vectors
        coords = np.zeros((runs, p, p))
        below = np.tril_indices(p, -1)
        coords[:, below[0], below[1]] = gen.standard_normal((runs, below[0].size))
        diag = np.arange(p)
        coords[:, diag, diag] = np.sqrt(gen.chisquare(dim - diag, size=(runs, p)))
    else:
        coords = gen.standard_normal((runs, p, dim))
    included = coords[:, :k] / np.linalg.norm(coords[:, :k], axis=-1, keepdims=True)
    y = included.sum(axis=1) + sigma * coords[:, k]
    alt = np.einsum("rkp,rp->rk", included, y)
    # Null release y₀ = s + σZ₀ with s = Σ_{j<k} c_j: split Z₀ along s and its complement.
    s_norm = np.linalg.norm(included[:, : k - 1].sum(axis=1), axis=-1)
    along = gen.standard_normal(runs)
    rest = gen.chisquare(dim - 1, size=runs) if dim > 1 else np.zeros(runs)
    y0_norm = np.sqrt((s_norm + sigma * along) ** 2 + sigma**2 * rest)
    # Fresh canaries: first coordinate of a uniform unit vector, independent of y₀.
    first = gen.standard_normal((runs, k))
    rest_fresh = gen.chisquare(dim - 1, size=(runs, k)) if dim > 1 else np.zeros((runs, k))
    null = y0_norm[:, None] * first / np.sqrt(first**2 + rest_fresh)
    return alt, null


def _statistics(
    seed: np.random.SeedSequence, runs: int, sigma: float, dim: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    num_blocks = -(-runs // RUNS_PER_BLOCK)
    alts, nulls = [], []
    for b, child in enumerate(block_seeds(seed, num_blocks)):
        size = min(RUNS_PER_BLOCK, runs - b * RUNS_PER_BLOCK)
        a, n = _block_statistics(np.random.default_rng(child), size, sigma, dim, k)
        alts.append(a)
        nulls.append(n)
    return np.concatenate(alts), np.concatenate(nulls)


@dataclasses.dataclass(frozen=True)
class GaussianCanaryStatistics(ResultMixin):
    """Inner-product statistics of the Gaussian sum-query audit.

    Attributes:
        alternative: (n × k) ⟨y, c_j⟩ for the k canaries included in each alternative run.
        null: (n × k) ⟨y₀, c′_j⟩ for k fresh canaries in each null run (k − 1 included).
        sigma: noise standard deviation σ.
        dim: dimension d.
        seed: integer seed when known.
    """

    alternative: np.ndarray
    null: np.ndarray
    sigma: float
    dim: int
    seed: int | None = None


def lidp_gaussian_statistics(
    sigma: float, dim: int, num_canaries: int, num_runs: int, *, rng: RngLike = None
) -> GaussianCanaryStatistics:
    """Simulate the statistics of the Gaussian sum-query audit (module docstring).

    The simulation is exact in law and costs O(k²) per run whatever d is.

    Args:
        sigma: noise standard deviation σ > 0.
        dim: dimension d ≥ 1.
        num_canaries: k ≥ 1 canaries per run.
        num_runs: number of runs n ≥ 1.
        rng: seed or generator (keyword-only).

    Returns:
        :class:`GaussianCanaryStatistics` with two (n × k) arrays.

    Raises:
        TypeError, ValueError: non-positive σ, d, k or n; more than
            :data:`MAX_SIMULATED_RUNS` runs or the memory cap.

    Example:
        >>> stats = lidp_gaussian_statistics(1.0, 16, 4, 8, rng=0)
        >>> stats.alternative.shape, stats.null.shape
        ((8, 4), (8, 4))
    """
    sigma = check_positive("sigma", sigma)
    dim = check_positive_int("dim", dim)
    k = check_positive_int("num_canaries", num_canaries)
    n = check_positive_int("num_runs", num_runs)
    check_simulated_runs(n, f"lidp_gaussian_statistics with num_runs={n}")
    check_memory(32.0 * n * k, f"lidp_gaussian_statistics with num_runs={n}, num_canaries={k}")
    alt, null = _statistics(as_seed_sequence(rng), n, sigma, dim, k)
    return GaussianCanaryStatistics(alt, null, sigma, dim, seed_entropy(rng))
