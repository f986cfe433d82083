"""The privacy claims of DP fine-tuning (:class:`dpaudit.systems.llm.DPFineTuning`).

* :func:`fine_tuning_claim` — ε at δ of T Poisson-subsampled Gaussian steps: the RDP of the
  subsampled Gaussian (Mironov, Talwar & Zhang 2019, arXiv:1908.10530) via dp-accounting,
  converted to (ε, δ) by Balle et al. 2020 (arXiv:1905.09982, Thm. 21).
* :func:`group_epsilon` — the claim for a canary inserted r times, each copy Poisson-sampled
  on its own: per step Binomial(r, q) copies are sampled, a mixture-of-Gaussians mechanism
  (Choquette-Choo, Ganesh, Steinke & Thakurta 2023, arXiv:2310.15526), composed with
  dp-accounting's privacy loss distributions (Doroshenko et al. 2022, arXiv:2207.04380),
  pessimistic.
* :func:`calibrate_noise_multiplier` — the smallest σ whose claim meets a target ε.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpaudit._results import Curve
from dpaudit._validate import check_delta, check_in_range, check_positive, check_positive_int

__all__ = ["calibrate_noise_multiplier", "fine_tuning_claim", "group_epsilon"]

_SOURCE = (
    "Poisson-subsampled Gaussian, RDP of Mironov, Talwar & Zhang 2019 (arXiv:1908.10530) via "
    "dp-accounting, conversion Balle et al. 2020 (arXiv:1905.09982, Thm 21)"
)
_GROUP_SOURCE = (
    "r Poisson-sampled copies of one example: mixture-of-Gaussians mechanism (Choquette-Choo, "
    "Ganesh, Steinke & Thakurta 2023, arXiv:2310.15526), PLD via dp-accounting (Doroshenko "
    "et al. 2022, arXiv:2207.04380), pessimistic"
)
_PLD_INTERVAL = 1e-2


def fine_tuning_claim(
    sampling_rate: float, noise_multiplier: float, steps: int, delta: float
) -> tuple[float, Curve]:
    """ε at δ (and the RDP curve) of T Poisson-subsampled Gaussian steps (module docstring).

    Example:
        >>> round(fine_tuning_claim(0.01, 1.0, 1000, 1e-5)[0], 3)
        2.101
    """
    d = check_delta(delta, allow_zero=False)
    numbers = (float, int, np.floating, np.integer)
    plain = all(isinstance(v, numbers) and not isinstance(v, bool)
                for v in (sampling_rate, noise_multiplier, steps))  # fmt: skip
    if plain and isinstance(steps, (int, np.integer)):
        return _claim(float(sampling_rate), float(noise_multiplier), int(steps), d)
    return _claim.__wrapped__(sampling_rate, noise_multiplier, steps, d)  # checked inside


@functools.lru_cache(maxsize=256)
def _claim(sampling_rate, noise_multiplier, steps, d: float) -> tuple[float, Curve]:
    """Cached: every kind's entries of a run, and the calibration's bisection, ask again."""
    from dpaudit.accounting import DEFAULT_ORDERS, subsampled_gaussian_rdp
    from dpaudit.conversions import rdp_to_dp

    curve = subsampled_gaussian_rdp(sampling_rate, noise_multiplier, DEFAULT_ORDERS, count=steps)
    eps = np.asarray(curve.epsilons, dtype=np.float64)
    keep = np.isfinite(eps)
    c = Curve(np.asarray(curve.orders, dtype=np.float64)[keep], eps[keep])
    return float(rdp_to_dp(c.orders, c.epsilons, d).epsilon), c


def group_epsilon(
    sampling_rate: float, noise_multiplier: float, steps: int, repetitions: int, delta: float
) -> float:
    """ε at δ of adding or removing ``repetitions`` copies of one example to T Poisson-
    subsampled Gaussian steps, each copy sampled on its own (module docstring: the
    mixture-of-Gaussians mechanism, privacy loss distributions, pessimistic).

    Raises:
        ValueError: arguments out of range.

    Example:
        >>> round(group_epsilon(0.05, 1.0, 50, 1, 1e-5), 2)  # the subsampled Gaussian's PLD ε
        2.67
        >>> round(group_epsilon(0.05, 1.0, 50, 2, 1e-5), 2)
        5.78
    """
    q = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
    return _group_epsilon(
        q,
        check_positive("noise_multiplier", noise_multiplier),
        check_positive_int("steps", steps),
        check_positive_int("repetitions", repetitions),
        check_delta(delta, allow_zero=False),
    )


@functools.lru_cache(maxsize=64)
def _group_epsilon(q: float, sigma: float, steps: int, r: int, delta: float) -> float:
    from dp_accounting import SelfComposedDpEvent
    from dp_accounting.dp_event import MixtureOfGaussiansDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
    from scipy.stats import binom

    probs = binom.pmf(np.arange(r + 1), r, q)
    probs = probs / probs.sum()
    event = MixtureOfGaussiansDpEvent(sigma, [float(m) for m in range(r + 1)], list(probs))
    acc = PLDAccountant(value_discretization_interval=_PLD_INTERVAL)
    acc.compose(SelfComposedDpEvent(event, steps))
    return float(acc.get_epsilon(delta))


def calibrate_noise_multiplier(
    target_epsilon: float, delta: float, sampling_rate: float, steps: int
) -> float:
    """The smallest σ (to 0.1 %) whose :func:`fine_tuning_claim` is at most ``target_epsilon``.

    Raises:
        ValueError: bad arguments, or no σ ≤ 10⁴ reaches the target.

    Example:
        >>> s = calibrate_noise_multiplier(4.0, 1e-5, 0.01, 1000)
        >>> fine_tuning_claim(0.01, s, 1000, 1e-5)[0] <= 4.0 < fine_tuning_claim(
        ...     0.01, s * 0.999, 1000, 1e-5)[0]
        True
    """
    eps = check_positive("target_epsilon", target_epsilon)
    d = check_delta(delta, allow_zero=False)
    q = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
    return _calibrate(eps, d, q, check_positive_int("steps", steps))


@functools.lru_cache(maxsize=64)
def _calibrate(eps: float, delta: float, q: float, steps: int) -> float:
    """Bisection on a geometric grid (cached: a settings cell is calibrated once)."""

    def at(s: float) -> float:
        return fine_tuning_claim(q, s, steps, delta)[0]

    lo, hi = 0.05, 1.0
    while at(hi) > eps:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            raise ValueError(f"no noise multiplier up to 1e4 reaches target_epsilon={eps}")
    if at(lo) <= eps:
        return lo
    while hi / lo > 1.0005:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if at(mid) <= eps else (mid, hi)
    return hi
