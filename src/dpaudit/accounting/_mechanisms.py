"""The claim of a mechanism value: one place computes each analysis.

:func:`mechanism_rdp` maps a mechanism value of :mod:`dpaudit.mechanisms.values` (and, for
data-dependent analyses, its vote histograms) to its per-use RDP; :func:`mechanism_epsilon`
gives the pure ε where the mechanism has one. Systems, ledgers and audits ask here instead of
recomputing ``α/σ²`` inline.

Example:
    >>> from dpaudit.mechanisms import GNMax, ConfidentGNMax
    >>> mechanism_rdp(GNMax(40.0), [2.0, 10.0]).tolist()
    [0.00125, 0.00625]
    >>> mechanism_rdp(ConfidentGNMax(200, 150, 40), [2.0], answered=False).tolist()
    [4.4444444444444447e-05]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import check_choice, check_orders
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.mechanisms.values import (
    ConfidentGNMax,
    GaussianLabels,
    GNMax,
    LaplaceLabels,
    LNMax,
    RandomizedResponse,
    SubsampledGaussian,
)

__all__ = ["ANALYSES", "expected_data_dependent_rdp", "mechanism_epsilon", "mechanism_rdp"]

ANALYSES: tuple[str, ...] = ("data-independent", "data-dependent")


def _orders(orders: ArrayLike | None) -> np.ndarray:
    return check_orders(DEFAULT_ORDERS if orders is None else orders)


def mechanism_rdp(
    mechanism: Any,
    orders: ArrayLike | None = None,
    *,
    votes: ArrayLike | None = None,
    analysis: str = "data-independent",
    q: str = "union",
    answered: bool = True,
) -> FloatArray:
    """Per-use RDP of a mechanism value under one analysis.

    * :class:`GNMax`: data-independent ``α/σ²`` (Papernot et al. 2018, arXiv:1802.08908,
      Prop. 8); data-dependent Thm 6 of the same paper on ``votes``
      (:func:`dpaudit.accounting.gnmax_rdp`).
    * :class:`ConfidentGNMax`: the threshold step ``α/(2σ1²)`` on every query plus the GNMax
      step when ``answered`` (Papernot et al. 2018 §4.2); data-dependent on ``votes`` via
      :func:`dpaudit.accounting.confident_gnmax_cost` (realised cost).
    * :class:`LNMax`: :func:`dpaudit.accounting.lnmax_rdp` (Papernot et al. 2017,
      arXiv:1610.05755, Thm 3).
    * :class:`SubsampledGaussian`: Mironov, Talwar, Zhang 2019 (arXiv:1908.10530) over
      ``steps`` compositions (:func:`dpaudit.accounting.subsampled_gaussian_rdp`).
    * :class:`LaplaceLabels`: two Laplace coordinates each moved by 1 (Mironov 2017,
      arXiv:1702.07476, Prop. 6); :class:`GaussianLabels`: ``α/σ²`` (L2 sensitivity √2,
      Mironov 2017 Prop. 7); :class:`RandomizedResponse`: its exact Rényi divergence.

    Args:
        mechanism: a mechanism value.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        votes: vote histograms ``(..., C)`` for the data-dependent analysis (and to broadcast
            the data-independent one to one row per histogram).
        analysis: ``"data-independent"`` or ``"data-dependent"``.
        q: the q̃ bound of the data-dependent GNMax analysis (``"union"`` or ``"exact"``).
        answered: Confident GNMax: whether the GNMax step ran.

    Returns:
        RDP of shape ``(len(orders),)`` or ``(..., len(orders))`` with ``votes``.

    Raises:
        ValueError: unknown analysis, data-dependent without votes, or a mechanism without
            that analysis.
        TypeError: not a mechanism value dpaudit knows.

    Example:
        >>> from dpaudit.mechanisms import GNMax
        >>> mechanism_rdp(GNMax(40.0), [2.0, 10.0], votes=[[200, 30, 20]],
        ...               analysis="data-dependent").round(8).tolist()
        [[0.00054506, 0.00074463]]
    """
    from dpaudit.accounting._confident import confident_gnmax_cost
    from dpaudit.accounting._gnmax import gnmax_rdp
    from dpaudit.accounting._label import gaussian_label_rdp
    from dpaudit.accounting._lnmax import lnmax_rdp
    from dpaudit.accounting._subsampled import subsampled_gaussian_rdp
    from dpaudit.mechanisms.simple import laplace_renyi, randomized_response_renyi

    lam = _orders(orders)
    check_choice("analysis", analysis, ANALYSES)
    dd = analysis == "data-dependent"
    if dd and votes is None:
        raise ValueError("analysis='data-dependent' needs the vote histograms (votes=...)")
    shape: tuple[int, ...] = ()
    if votes is not None:
        shape = np.shape(votes)[:-1]
    if isinstance(mechanism, GNMax):
        if dd:
            return gnmax_rdp(votes, mechanism.sigma, lam, analysis="data-dependent", q=q)
        return np.broadcast_to(lam / mechanism.sigma**2, (*shape, lam.size)).copy()
    if isinstance(mechanism, ConfidentGNMax):
        if dd:
            cost = confident_gnmax_cost(
                votes,
                threshold=mechanism.threshold,
                sigma1=mechanism.sigma1,
                sigma2=mechanism.sigma2,
                orders=lam,
                analysis="data-dependent",
                q=q,
            )
            step = cost.threshold_rdp + (cost.argmax_rdp if answered else 0.0)
            return np.asarray(step, dtype=np.float64)
        per = lam / (2.0 * mechanism.sigma1**2) + (lam / mechanism.sigma2**2 if answered else 0.0)
        return np.broadcast_to(per, (*shape, lam.size)).copy()
    if isinstance(mechanism, LNMax):
        if votes is None:
            eps = 2.0 / mechanism.scale
            return np.minimum(lam * eps * eps / 2.0, eps)
        return lnmax_rdp(votes, mechanism.scale, lam, analysis=analysis)
    if dd:
        raise ValueError(f"{mechanism.name} has no data-dependent analysis")
    if isinstance(mechanism, SubsampledGaussian):
        curve = subsampled_gaussian_rdp(
            mechanism.sampling_rate, mechanism.noise_multiplier, lam, count=mechanism.steps
        )
        out = np.asarray(curve.epsilons, dtype=np.float64)
    elif isinstance(mechanism, LaplaceLabels):
        out = 2.0 * laplace_renyi(lam, scale=mechanism.scale, sensitivity=1.0)
    elif isinstance(mechanism, GaussianLabels):
        out = np.asarray(gaussian_label_rdp(mechanism.sigma, lam).epsilons, dtype=np.float64)
    elif isinstance(mechanism, RandomizedResponse):
        out = randomized_response_renyi(
            lam, num_classes=mechanism.num_classes, epsilon=mechanism.epsilon
        )
    else:
        raise TypeError(f"no accounting for mechanism value {type(mechanism).__name__}")
    return np.broadcast_to(out, (*shape, lam.size)).copy()


def mechanism_epsilon(mechanism: Any) -> float:
    """Pure ε of a mechanism value (per use), where it has one.

    LNMax and ALIBI's Laplace labels: ``2/b`` (L1 sensitivity 2; Dwork et al. 2006);
    randomized response: ε (Warner 1965).

    Raises:
        ValueError: the mechanism is not pure-DP (Gaussian noise).

    Example:
        >>> from dpaudit.mechanisms import LaplaceLabels
        >>> mechanism_epsilon(LaplaceLabels(0.5))
        4.0
    """
    from dpaudit.accounting._label import laplace_label_epsilon

    if isinstance(mechanism, (LNMax, LaplaceLabels)):
        return laplace_label_epsilon(mechanism.scale)
    if isinstance(mechanism, RandomizedResponse):
        return float(mechanism.epsilon)
    name = getattr(mechanism, "name", type(mechanism).__name__)
    raise ValueError(f"{name} is not pure-DP: use mechanism_rdp and convert at a delta")


def expected_data_dependent_rdp(
    mechanism: Any,
    votes: np.ndarray,
    probabilities: np.ndarray,
    dropped_mass: float,
    orders: ArrayLike | None = None,
    *,
    q: str = "union",
) -> FloatArray:
    """Data-dependent RDP of a noisy argmax answering from a *random* histogram.

    ``(1/(α−1)) log [Σ_h P(h) e^{(α−1) ε_dd(h, α)} + P_dropped e^{(α−1) ε_di(α)}]`` with
    ``ε_dd`` the data-dependent analysis of :func:`mechanism_rdp` (Papernot et al. 2018,
    arXiv:1802.08908, Thm 6 for GNMax) and ``ε_di`` the data-independent one (Prop. 8), which
    also caps the result. By joint convexity of ``(P, Q) ↦ Σ P^α Q^{1−α}`` this bounds
    ``D_α(E Q(H_S) ‖ E Q(H_S′))`` for any coupling in which ``H_S′`` is one teacher away
    from ``H_S`` (Chadha et al. 2024, arXiv:2402.09403, §5).

    Args:
        mechanism: a noisy-argmax mechanism value (GNMax).
        votes: support histograms ``(S, C)`` (may be empty when ``dropped_mass = 1``).
        probabilities: their probabilities ``(S,)``.
        dropped_mass: probability of the histograms left out, in [0, 1].
        orders: Rényi orders α > 1.
        q: the q̃ bound (``"union"`` or ``"exact"``).

    Returns:
        ``(A,)`` RDP at each order.

    Example:
        >>> from dpaudit.mechanisms import GNMax
        >>> lam = np.array([2.0, 10.0])
        >>> one = expected_data_dependent_rdp(GNMax(40.0), np.array([[200, 30, 20]]),
        ...                                   np.ones(1), 0.0, lam)
        >>> bool(np.allclose(one, mechanism_rdp(GNMax(40.0), lam, votes=[200, 30, 20],
        ...                                     analysis="data-dependent")))
        True
    """
    lam = _orders(orders)
    di = mechanism_rdp(mechanism, lam)
    terms = []
    if votes.shape[0]:
        eps = mechanism_rdp(mechanism, lam, votes=votes, analysis="data-dependent", q=q)
        with np.errstate(divide="ignore"):
            logp = np.log(probabilities)[:, None]
        terms.append(logp + (lam - 1.0)[None, :] * eps)
    if dropped_mass > 0:
        terms.append((math.log(dropped_mass) + (lam - 1.0) * di)[None, :])
    if not terms:
        return np.zeros_like(lam)
    stacked = np.concatenate(terms, axis=0)
    total = probabilities.sum() + dropped_mass
    out = (special.logsumexp(stacked, axis=0) - math.log(total)) / (lam - 1.0)
    return np.minimum(np.maximum(out, 0.0), di)
