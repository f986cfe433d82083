"""Rényi-DP of the Poisson-subsampled Gaussian mechanism, via dp-accounting (not re-derived).

Private-kNN (Zhu et al. 2020; Chadha et al. 2024, arXiv:2402.09403, §6) Poisson-subsamples
the private set with rate γ
for every query; the noisy screening (max count, sensitivity 1, std σ1) is charged every
query and the noisy aggregation (GNMax, L2 sensitivity √2, std σ) for answered queries.
The per-order RDP comes from dp-accounting's ``RdpAccountant``
(Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3), imported lazily (extra
``accounting``).
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit._typing import ArrayLike
from dpaudit._validate import (
    check_delta,
    check_nonneg_int,
    check_orders,
    check_probability,
    check_scale,
    check_work,
)
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.conversions import DPConversion
from dpaudit.errors import require

__all__ = ["private_knn_epsilon", "private_knn_rdp", "subsampled_gaussian_rdp"]


#: Largest order passed to dp-accounting: its integer-order series sums λ + 1 terms.
MAX_ORDER = 1e6


#: Most series terms one call may ask of dp-accounting (about 5 µs each, so ~20 s): an
#: integer order λ sums λ + 1 terms, a fractional one up to :data:`FRACTIONAL_TERMS`, once
#: per composed event. Raise it (``dpaudit.accounting._subsampled.MAX_SERIES_TERMS``) to
#: allow larger order grids.
MAX_SERIES_TERMS = 4_000_000
#: Worst-case terms of dp-accounting's fractional-order series (two series, ≤ 1000 each).
FRACTIONAL_TERMS = 2000


def _check_orders(orders: ArrayLike, num_events: int = 1) -> np.ndarray:
    lam = check_orders(orders, maximum=MAX_ORDER)
    integer = lam == np.floor(lam)
    terms = float(np.sum(lam[integer] + 1.0)) + FRACTIONAL_TERMS * float(np.sum(~integer))
    check_work(
        terms * num_events,
        MAX_SERIES_TERMS,
        f"the subsampled-Gaussian RDP at orders=<{lam.size} orders up to "
        f"{float(lam.max()):g}> for {num_events} event(s)",
        "series terms",
        "pass fewer or smaller orders, or raise dpaudit.accounting._subsampled.MAX_SERIES_TERMS",
    )
    return lam


def _dp_accounting():
    return require("dp_accounting", "accounting")


def _events(sampling_rate: float, parts: list[tuple[float, int]]):
    """``PoissonSampled(Gaussian(z))`` composed ``count`` times for each ``(z, count)``."""
    dpa = _dp_accounting()
    events = [
        dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(
                sampling_probability=sampling_rate, event=dpa.GaussianDpEvent(noise_multiplier=z)
            ),
            count,
        )
        for z, count in parts
        if count > 0
    ]
    return dpa.ComposedDpEvent(events)


def _accountant(orders: np.ndarray, event):
    dpa = _dp_accounting()
    acct = dpa.rdp.RdpAccountant(
        orders=orders.tolist(), neighboring_relation=dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    acct.compose(event)
    return acct


def _curve_of(orders: np.ndarray, event) -> RDPCurve:
    acct = _accountant(orders, event)
    # dp-accounting (0.4–0.6) exposes the composed curve only as ``_rdp``; reading it keeps
    # the per-order values bit-identical to the library's, which the tests check against
    # its own public ``get_epsilon_and_optimal_order``.
    rdp = getattr(acct, "_rdp", None)
    if rdp is None:  # pragma: no cover - depends on the installed dp-accounting
        raise RuntimeError("this dp-accounting version does not expose RdpAccountant._rdp")
    # The library's series can round a zero divergence to −1e-312 (a sampling rate near 0);
    # RDP is non-negative, so such values are clipped to 0.
    return RDPCurve(orders, np.maximum(np.asarray(rdp, dtype=np.float64), 0.0))


def subsampled_gaussian_rdp(
    sampling_rate: float,
    noise_multiplier: float,
    orders: ArrayLike = DEFAULT_ORDERS,
    *,
    count: int = 1,
) -> RDPCurve:
    """RDP of ``count`` compositions of the Poisson-subsampled Gaussian mechanism.

    For integer λ ≥ 2, ``ρ(λ) = log(Σ_j C(λ,j)(1−q)^{λ−j} q^j e^{(j²−j)/(2z²)})/(λ−1)``
    (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3); fractional orders as dp-accounting.

    Args:
        sampling_rate: Poisson inclusion probability q ∈ [0, 1].
        noise_multiplier: z = σ/Δ₂ > 0.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        count: number of compositions ≥ 0.

    Returns:
        :class:`RDPCurve` (add-or-remove-one neighbouring).

    Raises:
        ValueError: q ∉ [0, 1], z outside [1e-100, 1e100], bad orders (or above
            :data:`MAX_ORDER`), negative count.
        MissingDependencyError: dp-accounting is not installed (extra ``accounting``).

    Example:
        >>> c = subsampled_gaussian_rdp(0.01, 1.1, [2.0, 8.0])
        >>> np.round(c.epsilons, 10).tolist()
        [0.0001285101, 0.0005840703]
    """
    q = check_probability("sampling_rate", sampling_rate)
    z = check_scale("noise_multiplier", noise_multiplier)
    lam = _check_orders(orders)
    n = check_nonneg_int("count", count)
    return _curve_of(lam, _events(q, [(z, n)]))


def _knn_parts(
    sampling_rate: float,
    sigma: float,
    sigma1: float | None,
    num_queries: int,
    num_answered: int | None,
) -> tuple[float, list[tuple[float, int]]]:
    q = check_probability("sampling_rate", sampling_rate)
    s = check_scale("sigma", sigma)
    nq = check_nonneg_int("num_queries", num_queries)
    na = nq if num_answered is None else check_nonneg_int("num_answered", num_answered)
    if na > nq:
        raise ValueError(f"num_answered must be at most num_queries={nq}, got {na}")
    parts = [(s / math.sqrt(2.0), na)]
    if sigma1 is not None:
        parts.insert(0, (check_scale("sigma1", sigma1), nq))
    elif num_answered is not None and na != nq:
        raise ValueError(f"num_answered={na} < num_queries={nq} needs a screening sigma1")
    return q, parts


def private_knn_rdp(
    *,
    sampling_rate: float,
    sigma: float,
    num_queries: int,
    sigma1: float | None = None,
    num_answered: int | None = None,
    orders: ArrayLike = DEFAULT_ORDERS,
) -> RDPCurve:
    """RDP of Private-kNN: Poisson subsampling with every query (Zhu et al. 2020).

    Screening (noise σ1 on the max count, sensitivity 1): z = σ1, charged for every query.
    Aggregation (GNMax, noise σ, L2 sensitivity √2): z = σ/√2, charged for answered queries.

    Args:
        sampling_rate: γ ∈ [0, 1].
        sigma: aggregation noise σ > 0.
        num_queries: queries asked.
        sigma1: screening noise σ1 > 0, or None for no screening (all queries answered).
        num_answered: answered queries (default all).
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).

    Returns:
        :class:`RDPCurve`.

    Raises:
        ValueError: bad rates/noise/counts, ``num_answered > num_queries``, or fewer answers
            than queries without screening.
        MissingDependencyError: dp-accounting is not installed.

    Example:
        >>> c = private_knn_rdp(sampling_rate=0.15, sigma=40, num_queries=1000)
        >>> round(c.to_dp(1e-5).epsilon, 6)
        0.657837
    """
    q, parts = _knn_parts(sampling_rate, sigma, sigma1, num_queries, num_answered)
    return _curve_of(_check_orders(orders, len(parts)), _events(q, parts))


def private_knn_epsilon(
    delta: float,
    *,
    sampling_rate: float,
    sigma: float,
    num_queries: int,
    sigma1: float | None = None,
    num_answered: int | None = None,
    orders: ArrayLike = DEFAULT_ORDERS,
) -> DPConversion:
    """(ε, δ) of Private-kNN straight from dp-accounting's accountant (its public API).

    Same events as :func:`private_knn_rdp`; ε from
    ``RdpAccountant.get_epsilon_and_optimal_order`` (the conversion of Balle et al. 2020,
    arXiv:1905.09982, Thm 20).

    Args:
        delta: δ ∈ (0, 1).
        sampling_rate, sigma, num_queries, sigma1, num_answered, orders: as
            :func:`private_knn_rdp`.

    Returns:
        :class:`~dpaudit.conversions.DPConversion` (``conversion="balle2020"``).

    Raises:
        ValueError, MissingDependencyError: as :func:`private_knn_rdp`; δ ∉ (0, 1).

    Example:
        >>> round(private_knn_epsilon(1e-5, sampling_rate=0.15, sigma=40, num_queries=1000,
        ...                           sigma1=40, num_answered=600).epsilon, 6)
        0.692262
    """
    d = check_delta(delta, allow_zero=False)
    q, parts = _knn_parts(sampling_rate, sigma, sigma1, num_queries, num_answered)
    acct = _accountant(_check_orders(orders, len(parts)), _events(q, parts))
    eps, order = acct.get_epsilon_and_optimal_order(target_delta=d)
    return DPConversion(float(eps), d, float(order), "balle2020")
