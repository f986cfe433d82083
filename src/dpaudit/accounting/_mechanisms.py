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

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import special

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_array,
    check_choice,
    check_flag,
    check_mask,
    check_orders,
    check_probability,
    check_votes,
)
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._gnmax import check_rdp_table
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

__all__ = [
    "ANALYSES",
    "NoisyArgmaxCost",
    "check_finite_cost",
    "expected_data_dependent_rdp",
    "mechanism_epsilon",
    "mechanism_rdp",
    "noisy_argmax_cost",
]

ANALYSES: tuple[str, ...] = ("data-independent", "data-dependent")


def _orders(orders: ArrayLike | None) -> np.ndarray:
    return check_orders(DEFAULT_ORDERS if orders is None else orders)


@dataclasses.dataclass(frozen=True, eq=False)
class NoisyArgmaxCost(ResultMixin):
    """Per-use RDP of GNMax / Confident GNMax, split by step, with Thm 6's fallbacks.

    Confident GNMax (Papernot et al. 2018, arXiv:1802.08908, Alg. 1) pays its threshold step
    on every query and its GNMax step only when it answers; plain GNMax has no threshold step
    (zeros) and always answers. Computed by :func:`noisy_argmax_cost`, the one place these
    claims are made (:func:`mechanism_rdp`, :class:`~dpaudit.accounting.PrivacyLedger` and
    :func:`~dpaudit.accounting.pate_accounting` all read them here).

    Attributes:
        mechanism: the :class:`~dpaudit.mechanisms.GNMax` or
            :class:`~dpaudit.mechanisms.ConfidentGNMax` value.
        orders: ``(K,)``.
        threshold_rdp: ``(..., K)`` the step paid by every query (0 for GNMax).
        answer_rdp: ``(..., K)`` the GNMax step, paid by answered queries.
        threshold_fallback, answer_fallback: ``(..., K)`` where the data-dependent analysis
            of that step fell back to its data-independent bound (a condition of Thm 6
            failed); all False for the data-independent analysis.
        answer_probability: ``(...)`` Pr[answered] (1 for GNMax; for Confident GNMax
            without votes its upper bound 1, so that ``expected_rdp`` is an upper bound).
        expected_rdp: ``(..., K)`` ``threshold_rdp + answer_probability · answer_rdp``
            (a step never taken, ``answer_probability = 0``, adds 0 even at an infinite
            ``answer_rdp``).
        analysis: ``"data-independent"`` or ``"data-dependent"``.
        q: the q̃ bound of the data-dependent analysis (``"union"`` or ``"exact"``).
    """

    mechanism: Any
    orders: FloatArray
    threshold_rdp: FloatArray
    answer_rdp: FloatArray
    threshold_fallback: np.ndarray
    answer_fallback: np.ndarray
    answer_probability: FloatArray
    expected_rdp: FloatArray
    analysis: str
    q: str

    def per_use(self, answered: bool = True) -> FloatArray:
        """RDP of each use given its outcome: threshold step (+ GNMax step if answered)."""
        if isinstance(self.mechanism, GNMax):
            return self.answer_rdp.copy()
        return self.threshold_rdp + (self.answer_rdp if answered else 0.0)

    def fallback(self, answered: bool = True) -> np.ndarray:
        """Where a step that was charged fell back: threshold step, or GNMax step if answered."""
        return self.threshold_fallback | (self.answer_fallback & bool(answered))

    def realised(self, answered: ArrayLike) -> RDPCurve:
        """Composed RDP of the batch given which queries were answered: Σ ρ1 + 1{answered}·ρ2.

        Raises:
            ValueError: ``answered`` not booleans of the batch shape.
        """
        shape = np.shape(self.answer_probability)
        mask = check_mask("answered", answered)
        if mask.shape != shape:
            raise ValueError(f"answered must be booleans of shape {shape}, got {answered!r}")
        k = self.orders.size
        total = self.threshold_rdp.reshape(-1, k).sum(axis=0) + (
            mask.reshape(-1, 1) * self.answer_rdp.reshape(-1, k)
        ).sum(axis=0)
        return RDPCurve(self.orders, total)

    def expected(self) -> RDPCurve:
        """Expected composed RDP of the batch, Σ (ρ1 + p·ρ2) (for planning and plots)."""
        return RDPCurve(self.orders, self.expected_rdp.reshape(-1, self.orders.size).sum(axis=0))

    def composed(self) -> RDPCurve:
        """Composed RDP of the batch when every query is answered (plain GNMax)."""
        return RDPCurve(self.orders, self.answer_rdp.reshape(-1, self.orders.size).sum(axis=0))


def _per_sigma2(lam: np.ndarray, sigma: float, factor: float = 1.0) -> np.ndarray:
    """``λ/(factor·σ²)`` with ``σ**2`` as :func:`mechanism_rdp` always computed it; an
    overflowing σ² gives 0 and an underflowing one +inf (no OverflowError, no warning)."""
    try:
        sq = sigma**2
    except OverflowError:
        sq = math.inf
    with np.errstate(divide="ignore", over="ignore"):
        return lam / (factor * sq) if factor != 1.0 else lam / sq


def expected_step_rdp(rho1: np.ndarray, p: np.ndarray, rho2: np.ndarray) -> np.ndarray:
    """``ρ1 + p·ρ2`` with ``p = 0`` adding nothing even where ``ρ2 = ∞`` (the step is never
    taken), and an overflow giving ``inf`` silently (the limit)."""
    with np.errstate(over="ignore", invalid="ignore"):
        step = np.where(p[..., None] > 0, p[..., None] * rho2, 0.0)
        return rho1 + step


def check_finite_cost(mechanism: Any, orders: ArrayLike | None = None) -> None:
    """Raise a ValueError naming the parameter when a GNMax / Confident GNMax value's
    data-independent per-use RDP ``λ/σ²`` is not a finite float64 at some order (σ so small
    that σ² underflows): nothing could be charged or composed with it."""
    lam = _orders(orders)
    params = [("sigma", mechanism.sigma, 1.0)]
    if isinstance(mechanism, ConfidentGNMax):
        params = [("sigma1", mechanism.sigma1, 2.0), ("sigma2", mechanism.sigma2, 1.0)]
    for name, value, factor in params:
        cost = _per_sigma2(lam, value, factor)
        if not np.all(np.isfinite(cost)):
            raise ValueError(
                f"{name}={value!r} is too small for float64: the per-query RDP "
                f"order/{'2·' if factor != 1.0 else ''}{name}² overflows (up to order "
                f"{lam[-1]:g}); no finite privacy claim can be accounted for it"
            )


def noisy_argmax_cost(
    mechanism: Any,
    orders: ArrayLike | None = None,
    *,
    votes: ArrayLike | None = None,
    analysis: str = "data-independent",
    q: str = "union",
) -> NoisyArgmaxCost:
    """Per-use RDP of a GNMax or Confident GNMax value, by step, with the fallback masks.

    * data-independent: GNMax ``α/σ²`` (Papernot et al. 2018, arXiv:1802.08908, Prop. 8);
      Confident GNMax threshold step ``α/(2σ1²)`` (Gaussian mechanism of L2 sensitivity 1 on
      the max count, Mironov 2017, arXiv:1702.07476, Prop. 7) and GNMax step ``α/σ2²``.
    * data-dependent on ``votes``: Thm 6 of Papernot et al. 2018 with Prop. 10's parameters
      per step (:func:`~dpaudit.accounting.gnmax_rdp_details`,
      :func:`~dpaudit.accounting.confident_gnmax_cost`), q̃ by ``q``; where a condition of
      Thm 6 fails the step is charged its data-independent bound and its fallback mask is set.

    Args:
        mechanism: :class:`~dpaudit.mechanisms.GNMax` or
            :class:`~dpaudit.mechanisms.ConfidentGNMax`.
        orders: Rényi orders (default :data:`DEFAULT_ORDERS`).
        votes: histograms ``(..., C)`` (needed by the data-dependent analysis; with the
            data-independent one they set the batch shape and Pr[answered]).
        analysis: ``"data-independent"`` (default) or ``"data-dependent"``.
        q: ``"union"`` (default) or ``"exact"``.

    Returns:
        :class:`NoisyArgmaxCost`.

    Raises:
        ValueError: bad orders, votes, analysis or q; data-dependent without votes; a
            negative threshold under the data-dependent analysis.
        TypeError: ``mechanism`` is not GNMax or Confident GNMax.

    Example:
        >>> from dpaudit.mechanisms import ConfidentGNMax
        >>> c = noisy_argmax_cost(ConfidentGNMax(200, 150, 40), [2.0], votes=[[210, 40, 0]])
        >>> c.per_use(answered=False).tolist(), c.per_use().tolist()
        ([[4.4444444444444447e-05]], [[0.0012944444444444444]])
    """
    from dpaudit.accounting._confident import answer_probability, confident_gnmax_cost
    from dpaudit.accounting._gnmax import Q_METHODS, gnmax_rdp_details

    if not isinstance(mechanism, (GNMax, ConfidentGNMax)):
        raise TypeError(
            f"mechanism must be GNMax or ConfidentGNMax, got {type(mechanism).__name__}"
        )
    lam = _orders(orders)
    check_choice("analysis", analysis, ANALYSES)
    check_choice("q", q, Q_METHODS)
    dd = analysis == "data-dependent"
    if dd and votes is None:
        raise ValueError("analysis='data-dependent' needs the vote histograms (votes=...)")
    if votes is not None:  # validated whether or not the analysis reads them
        votes = check_votes("votes", votes, min_classes=1, nonneg=True)
    shape: tuple[int, ...] = () if votes is None else np.shape(votes)[:-1]
    check_rdp_table(math.prod(shape), lam.size)
    full = (*shape, lam.size)
    no_fallback = np.zeros(full, dtype=bool)
    if isinstance(mechanism, GNMax):
        if dd:
            with np.errstate(over="ignore", divide="ignore"):  # σ → 0 or gap/σ → ∞: limits
                det = gnmax_rdp_details(votes, mechanism.sigma, lam, analysis="data-dependent", q=q)
            rho2, fb2 = det.rdp, det.fallback
        else:
            rho2 = np.broadcast_to(_per_sigma2(lam, mechanism.sigma), full).copy()
            fb2 = no_fallback
        zeros = np.zeros(full)
        return NoisyArgmaxCost(
            mechanism, lam, zeros, rho2, no_fallback, fb2, np.ones(shape), rho2, analysis, q
        )
    if dd:
        with np.errstate(over="ignore", divide="ignore"):  # σ → 0, gap/σ → ∞: limits
            c = confident_gnmax_cost(
                votes, threshold=mechanism.threshold, sigma1=mechanism.sigma1,
                sigma2=mechanism.sigma2, orders=lam, analysis="data-dependent", q=q,
            )  # fmt: skip
        return NoisyArgmaxCost(
            mechanism, lam, c.threshold_rdp, c.argmax_rdp, c.threshold_fallback,
            c.argmax_fallback, c.answer_probability, c.expected_rdp, analysis, q,
        )  # fmt: skip
    rho1 = np.broadcast_to(_per_sigma2(lam, mechanism.sigma1, 2.0), full).copy()
    rho2 = np.broadcast_to(_per_sigma2(lam, mechanism.sigma2), full).copy()
    if votes is None:
        p = np.ones(shape)  # unknown without votes: its upper bound
    else:
        with np.errstate(over="ignore"):  # (max − T)/σ1 → ±∞: p = 0 or 1, the limit
            p = np.asarray(answer_probability(votes, mechanism.threshold, mechanism.sigma1))
    expected = expected_step_rdp(rho1, p, rho2)
    return NoisyArgmaxCost(
        mechanism, lam, rho1, rho2, no_fallback, no_fallback.copy(), p, expected, analysis, q
    )


_ACCOUNTED = (
    GNMax,
    ConfidentGNMax,
    LNMax,
    SubsampledGaussian,
    LaplaceLabels,
    GaussianLabels,
    RandomizedResponse,
)


def _check_mechanism(mechanism: object) -> None:
    if not isinstance(mechanism, _ACCOUNTED):
        names = ", ".join(t.__name__ for t in _ACCOUNTED)
        text = repr(mechanism)
        text = text if len(text) <= 80 else text[:77] + "..."
        raise TypeError(
            f"mechanism must be a mechanism value of dpaudit.mechanisms ({names}), got {text}"
        )


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
    from dpaudit.accounting._label import gaussian_label_rdp
    from dpaudit.accounting._lnmax import lnmax_rdp
    from dpaudit.accounting._subsampled import subsampled_gaussian_rdp
    from dpaudit.mechanisms.simple import laplace_renyi, randomized_response_renyi

    lam = _orders(orders)
    check_choice("analysis", analysis, ANALYSES)
    answered = check_flag("answered", answered)
    _check_mechanism(mechanism)
    dd = analysis == "data-dependent"
    if dd and votes is None:
        raise ValueError("analysis='data-dependent' needs the vote histograms (votes=...)")
    shape: tuple[int, ...] = ()
    if votes is not None:  # validated whether or not the analysis reads them
        votes = check_votes("votes", votes, min_classes=1, nonneg=True)
        shape = np.shape(votes)[:-1]
    if isinstance(mechanism, (GNMax, ConfidentGNMax)):
        cost = noisy_argmax_cost(mechanism, lam, votes=votes, analysis=analysis, q=q)
        return cost.per_use(answered)
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
        raise TypeError(  # pragma: no cover - _check_mechanism refused it already
            f"no accounting for mechanism value {type(mechanism).__name__}"
        )
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


def _check_support(
    votes: ArrayLike, probabilities: ArrayLike, dropped_mass: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Support histograms (S, C), their probabilities (S,) and the dropped mass in [0, 1]."""
    h = check_array("votes", votes, ndim=2, allow_empty=True, nonneg=True)
    p = check_array("probabilities", probabilities, ndim=1, allow_empty=True, nonneg=True)
    if p.shape[0] != h.shape[0]:
        raise ValueError(
            f"probabilities must have one entry per histogram of votes ({h.shape[0]}), "
            f"got {p.shape[0]}"
        )
    if np.any(p > 1):
        raise ValueError(f"probabilities must be in [0, 1], got {probabilities!r}")
    d = check_probability("dropped_mass", dropped_mass)
    if p.sum() + d <= 0:
        raise ValueError("probabilities and dropped_mass must not all be 0")
    return h, p, d


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

    Raises:
        TypeError: non-numeric votes or probabilities, a mechanism without accounting.
        ValueError: votes not (S, C) non-negative, probabilities not (S,) in [0, 1],
            dropped mass outside [0, 1], everything zero, bad orders or q.

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
    votes, probabilities, dropped_mass = _check_support(votes, probabilities, dropped_mass)
    di = mechanism_rdp(mechanism, lam)
    terms = []
    if votes.shape[0]:
        eps = mechanism_rdp(mechanism, lam, votes=votes, analysis="data-dependent", q=q)
        with np.errstate(divide="ignore"):
            logp = np.log(probabilities)[:, None]
        with np.errstate(over="ignore"):  # (α − 1)·ε beyond the float range: inf, the limit
            terms.append(logp + (lam - 1.0)[None, :] * eps)
    if dropped_mass > 0:
        with np.errstate(over="ignore"):
            terms.append((math.log(dropped_mass) + (lam - 1.0) * di)[None, :])
    if not terms:
        return np.zeros_like(lam)
    stacked = np.concatenate(terms, axis=0)
    total = probabilities.sum() + dropped_mass
    out = (special.logsumexp(stacked, axis=0) - math.log(total)) / (lam - 1.0)
    return np.minimum(np.maximum(out, 0.0), di)
