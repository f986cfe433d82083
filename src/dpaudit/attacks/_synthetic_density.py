"""The density-ratio black-box statistic of DOMIAS on categorical synthetic tables, registered
beside the statistics of :mod:`dpaudit.attacks._synthetic` as ``black-box-density``.

DOMIAS (van Breugel, Sun, Qian & van der Schaar 2023, "Membership inference attacks against
synthetic data through overfitting detection", AISTATS, arXiv:2302.12580, Eq. 2) scores a
record x by the ratio of two densities, ``p̂_synth(x) / p̂_ref(x)``: the synthetic table's,
and a reference table's drawn from the population the private data came from. On categorical
rows both densities are kernel estimates with the product kernel of Aitchison & Aitken 1976
("Multivariate binary discrimination by the kernel method", Biometrika 63(3), Eq. 2.5): for a
column with k categories, ``K_λ(x_j, t_j) = 1 − λ`` when the values agree and ``λ / (k − 1)``
otherwise, ``0 ≤ λ ≤ (k − 1)/k`` (at the upper end every value weighs alike), so that

    p̂(t) = (1/m) Σ_i Π_j K_λ(x_ij, t_j)

over the m rows x_i. At λ = 0 the estimate is the exact frequency of t (the
:func:`~dpaudit.attacks.target_count` statistic over m); a small λ adds the rows that differ
from t in one column with weight ≈ λ/(k − 1) each, then those that differ in two, and so on,
so λ interpolates between the exact count and a distance-weighted count (the
:func:`~dpaudit.attacks._synthetic_adult.closest_record_distance` view).

* :func:`kernel_log_density` — ``log p̂(t)`` (computed in the log domain, −inf where it is 0);
* :func:`density_ratio_score` — ``log p̂_synth(t) − log p̂_ref(t)``, the DOMIAS score;
* the threat model ``black-box-density``: that score for every bandwidth of the audit's grid
  (``SyntheticDataSettings.bandwidths``). **For a fixed target in the D vs D ∪ {t} game,
  p̂_ref(t) is a constant**, the same on every run, so the test is decided by p̂_synth(t)
  alone; the reference enters only the score's level. **The bandwidth is chosen on the pilot
  run pairs, with the threshold** (the pair (λ, threshold) whose Clopper–Pearson bound on the
  pilot is largest), never on the evaluation runs, so the evaluation bound stays valid. The
  reference rows are the pair's ``reference`` — for UCI Adult (``adult-categorical``) the
  records of ``adult.data`` outside D and other than the target — and, for the generated
  worst-case designs, which have no population, D itself: the worst-case adversary knows D.

Example:
    >>> rows = np.array([[0, 0], [0, 1], [1, 1]])
    >>> dom = TabularDomain((2, 2))
    >>> float(np.exp(kernel_log_density(rows, [1, 1], dom, bandwidth=0.0)))  # 1 of 3 rows
    0.3333333333333333
    >>> # (0.1² + 0.9 · 0.1 + 0.9²) / 3: rows at Hamming distance 2, 1 and 0 from t
    >>> round(float(np.exp(kernel_log_density(rows, [1, 1], dom, bandwidth=0.1))), 4)
    0.3033
    >>> round(density_ratio_score(rows, [[0, 0]], [1, 1], dom, bandwidth=0.1), 4)  # / 0.1²
    3.4122
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpaudit._validate import check_real
from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    SyntheticThreatModel,
    _check_domain,
    _check_row,
)
from dpaudit.systems.synthetic import TabularDomain

__all__ = ["density_ratio_score", "kernel_log_density"]


def _check_bandwidth(bandwidth: Any, domain: TabularDomain) -> float:
    lam = check_real("bandwidth", bandwidth)
    top = min((k - 1) / k for k in domain.cardinalities)
    if not 0.0 <= lam <= top:
        raise ValueError(f"bandwidth must lie in [0, {top:g}] (Aitchison–Aitken: λ ≤ (k − 1)/k "
                         f"for every column), got {bandwidth}")  # fmt: skip
    return lam


def _log_density(rows: np.ndarray, target: np.ndarray, cards: np.ndarray, lam: float) -> float:
    """log p̂(t) of checked rows (module formula), in the log domain."""
    with np.errstate(divide="ignore"):
        same, other = math.log1p(-lam), np.log(lam / (cards - 1.0))
    match = rows == target[None, :]
    # the row's log kernel depends only on which columns agree with t
    logk = np.where(match, same, other[None, :]).sum(axis=1)
    top = float(logk.max())
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.exp(logk - top).sum())) - math.log(rows.shape[0])


def kernel_log_density(rows: ArrayLike, target: ArrayLike, domain: TabularDomain, *,
                       bandwidth: float) -> float:  # fmt: skip
    """``log p̂(t)``: the Aitchison–Aitken product-kernel density of ``rows`` at ``target``
    (Aitchison & Aitken 1976, Biometrika 63(3), Eq. 2.5; module notes).

    Args:
        rows: the table (category codes in ``domain``), at least one row.
        target: the record t.
        domain: the public domain.
        bandwidth: λ, in ``[0, min_j (k_j − 1)/k_j]``; 0 gives the exact frequency of t.

    Returns:
        The log density (−inf when it is 0: bandwidth 0 and no row equal to t).

    Raises:
        TypeError: ``domain`` not a TabularDomain; codes or bandwidth of the wrong type.
        ValueError: ``rows`` or ``target`` outside ``domain``; ``bandwidth`` outside its range.

    Example:
        >>> dom = TabularDomain((2, 3))
        >>> round(float(np.exp(kernel_log_density([[1, 0]], [1, 1], dom, bandwidth=0.5))), 6)
        0.125
    """
    domain = _check_domain(domain)
    data = domain.check(rows, "rows")
    t = _check_row("target", target, domain)
    lam = _check_bandwidth(bandwidth, domain)
    return _log_density(data, t, np.asarray(domain.cardinalities, dtype=np.float64), lam)


def density_ratio_score(synthetic: ArrayLike, reference: ArrayLike, target: ArrayLike,
                        domain: TabularDomain, *, bandwidth: float) -> float:  # fmt: skip
    """The DOMIAS score ``log p̂_synth(t) − log p̂_ref(t)`` (van Breugel et al. 2023,
    arXiv:2302.12580, Eq. 2, in logs), both densities :func:`kernel_log_density` with the
    same bandwidth. Larger: "t was in the generator's training data".

    Args:
        synthetic: the synthetic table.
        reference: rows from the population (not the training data).
        target, domain, bandwidth: as in :func:`kernel_log_density`.

    Returns:
        The score; +inf when only the reference density is 0, −inf when only the synthetic
        one is, and 0 when both are (no evidence either way; bandwidth 0 only).

    Raises:
        TypeError, ValueError: as :func:`kernel_log_density`, naming the argument.

    Example:
        >>> dom = TabularDomain((2, 2))
        >>> density_ratio_score([[1, 1], [0, 0]], [[1, 1], [0, 0], [0, 0], [0, 1]], [1, 1],
        ...                     dom, bandwidth=0.0)  # log((1/2) / (1/4))
        0.6931471805599453
    """
    domain = _check_domain(domain)
    syn = domain.check(synthetic, "synthetic")
    ref = domain.check(reference, "reference")
    t = _check_row("target", target, domain)
    lam = _check_bandwidth(bandwidth, domain)
    cards = np.asarray(domain.cardinalities, dtype=np.float64)
    a, b = _log_density(syn, t, cards, lam), _log_density(ref, t, cards, lam)
    if a == b:  # both −inf (bandwidth 0): no evidence
        return 0.0
    return a - b


def density_scores(synthetic: np.ndarray, reference: np.ndarray, target: np.ndarray,
                   domain: TabularDomain, bandwidths: Sequence[float]) -> np.ndarray:  # fmt: skip
    """:func:`density_ratio_score` at each bandwidth of a grid (one check of the tables)."""
    return np.array([density_ratio_score(synthetic, reference, target, domain, bandwidth=b)
                     for b in bandwidths])  # fmt: skip


def _black_box_density(run, synthetic, pair, fitted_on, grid):
    ref = pair.D if pair.reference is None else pair.reference
    return density_scores(synthetic, ref, pair.target, pair.domain, grid)


SYNTHETIC_THREAT_MODELS.register(
    "black-box-density",
    SyntheticThreatModel("black-box-density", ("synthetic",), _black_box_density,
                         "the DOMIAS density ratio log p̂_synth(t) − log p̂_ref(t) "
                         "(Aitchison–Aitken kernels; bandwidth chosen on the pilot)",
                         tuned=True),
)  # fmt: skip
