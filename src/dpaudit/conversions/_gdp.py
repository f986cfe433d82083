"""Gaussian differential privacy μ ↔ (ε, δ) (layer 2).

A mechanism is μ-GDP (Dong, Roth & Su 2022, "Gaussian differential privacy", JRSS-B) when its
trade-off function is at least ``G_μ(α) = Φ(Φ⁻¹(1−α) − μ)``. Corollary 2.13 of that paper
gives the exact privacy profile of ``G_μ``:

    δ(ε; μ) = Φ(−ε/μ + μ/2) − e^ε · Φ(−ε/μ − μ/2),

decreasing in ε and increasing in μ (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 2.13). All three
functions here evaluate it in log space (``log Φ`` via :func:`scipy.special.log_ndtr`) so that
δ down to 1e-300 and μ up to ~40 stay accurate, and invert it with Brent's method.

Equivalently, ``gdp_epsilon(μ, δ)`` equals ``dp_accounting.get_epsilon_gaussian(1/μ, δ)``.
"""

from __future__ import annotations

import math

from scipy import optimize, special

from dpaudit._validate import check_delta, check_real

__all__ = ["gdp_delta", "gdp_epsilon", "gdp_mu"]

# Brent tolerances: absolute 1e-12 in ε (resp. μ) and a few ulps relative.
_XTOL = 1e-12
_RTOL = 8.9e-16


def _log1mexp(x: float) -> float:
    """``log(1 − eˣ)`` for x ≤ 0, accurate in both regimes."""
    if x >= 0.0:
        return -math.inf
    if x < -0.6931471805599453:
        return math.log1p(-math.exp(x))
    return math.log(-math.expm1(x))


def _log_delta(epsilon: float, mu: float) -> float:
    """``log δ(ε; μ)`` of Dong–Roth–Su Cor. 2.13, in log space; μ > 0 finite, ε ≥ 0."""
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_pa = float(special.log_ndtr(a))
    log_pb = float(special.log_ndtr(b))
    return log_pa + _log1mexp(min(0.0, epsilon + log_pb - log_pa))


def _check_mu(mu: object) -> float:
    if isinstance(mu, (float, int)) and not isinstance(mu, bool) and mu == math.inf:
        return math.inf
    out = check_real("mu", mu)
    if out < 0:
        raise ValueError(f"mu must be non-negative, got {out}")
    return out


def _check_epsilon(epsilon: object) -> float:
    epsilon = check_real("epsilon", epsilon)
    if epsilon < 0:
        raise ValueError(f"epsilon must be non-negative, got {epsilon}")
    return epsilon


def gdp_delta(epsilon: float, mu: float) -> float:
    """δ such that a μ-GDP mechanism is (ε, δ)-DP (exact privacy profile).

    Dong, Roth & Su (2022), Corollary 2.13 (arXiv:1905.02383):
    ``δ(ε; μ) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``, computed in log space.

    Args:
        epsilon: ε ≥ 0.
        mu: μ ≥ 0 (``inf`` allowed: δ = 1; μ = 0: δ = 0).

    Returns:
        δ in [0, 1].

    Raises:
        TypeError, ValueError: ε or μ negative or not a number.

    Example:
        >>> round(gdp_delta(4.377178, 1.0) * 1e5, 4)
        1.0
    """
    epsilon = _check_epsilon(epsilon)
    mu = _check_mu(mu)
    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    return float(min(1.0, math.exp(_log_delta(epsilon, mu))))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε such that a μ-GDP mechanism is (ε, δ)-DP.

    Solves ``δ(ε; μ) = δ`` (Dong, Roth & Su 2022, Cor. 2.13, arXiv:1905.02383) by
    Brent's method on ``log δ(ε; μ) − log δ`` (absolute tolerance 1e-12). ``δ(ε; μ)`` is
    decreasing in ε; if ``δ(0; μ) = 2Φ(μ/2) − 1 ≤ δ`` the answer is 0. The root is bracketed
    by ``[0, μ·(μ/2 + Φ⁻¹(1−δ))]``, where ``δ(ε) ≤ Φ(−ε/μ + μ/2) ≤ δ``.

    Args:
        mu: μ ≥ 0 (μ = 0 gives 0).
        delta: δ in (0, 1).

    Returns:
        ε ≥ 0 (``inf`` when it exceeds the float range, for μ above about 1.9e154).

    Raises:
        TypeError, ValueError: μ negative or infinite, δ outside (0, 1).

    Example:
        >>> round(gdp_epsilon(1.0, 1e-5), 6)
        4.377178
    """
    mu = _check_mu(mu)
    if math.isinf(mu):
        raise ValueError(f"mu must be finite, got {mu}")
    delta = check_delta(delta, allow_zero=False)
    if mu == 0.0:
        return 0.0
    log_target = math.log(delta)
    if _log_delta(0.0, mu) <= log_target:
        return 0.0
    hi = mu * (mu / 2.0 - float(special.ndtri(delta)))
    if not math.isfinite(hi):
        return math.inf  # ε ≥ μ²/2 − μ·Φ⁻¹(1−δ)-ish beyond the float range (μ ≳ 1.9e154)
    if _log_delta(hi, mu) > log_target:  # pragma: no cover - guaranteed by the bracket
        hi *= 2.0
    return float(
        optimize.brentq(lambda e: _log_delta(e, mu) - log_target, 0.0, hi, xtol=_XTOL, rtol=_RTOL)
    )


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest μ such that every μ-GDP mechanism is (ε, δ)-DP.

    Inverts Dong, Roth & Su (2022), Cor. 2.13 in μ (``δ(ε; μ)`` increases with μ) by Brent's
    method on ``log δ(ε; μ) − log δ`` over ``log μ`` (relative tolerance ~1e-12).

    Args:
        epsilon: ε ≥ 0.
        delta: δ in (0, 1).

    Returns:
        μ > 0.

    Raises:
        TypeError, ValueError: ε negative, δ outside (0, 1).

    Example:
        >>> round(gdp_mu(4.377178, 1e-5), 5)
        1.0
    """
    epsilon = _check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    log_target = math.log(delta)

    def f(log_mu: float) -> float:
        return _log_delta(epsilon, math.exp(log_mu)) - log_target

    lo, hi = -1.0, 1.0
    while f(lo) > 0:
        lo -= 2.0
    while f(hi) < 0:
        hi += 1.0
    log_mu = optimize.brentq(f, lo, hi, xtol=1e-13, rtol=_RTOL)
    return float(math.exp(log_mu))
