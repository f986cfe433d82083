"""Textbook DP mechanisms with known privacy curves: Gaussian, Laplace, randomized response.

Samplers (keyword-only ``rng``) and exact privacy quantities, used as ground truth by the
coverage tests of the audits and by anyone who needs a mechanism whose true ε is known:

* Gaussian mechanism ``x + N(0, σ²)`` with sensitivity Δ: Rényi divergence ``αΔ²/(2σ²)``
  (Mironov 2017, arXiv:1702.07476, Prop. 7) and exact privacy profile
  ``δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ)`` (Balle & Wang 2018, arXiv:1805.06530, Thm 8;
  Dong, Roth & Su 2022 Cor. 2.13 with μ = Δ/σ).
* Laplace mechanism ``x + Lap(b)``: ``D_α = (1/(α−1))·log[(α/(2α−1))·e^{(α−1)Δ/b} +
  ((α−1)/(2α−1))·e^{−αΔ/b}]`` (Mironov 2017, Prop. 6 / Table II), pure ε = Δ/b, profile
  ``δ(ε) = 1 − e^{(ε − Δ/b)/2}`` for ε ≤ Δ/b.
* C-ary randomized response with parameter ε: keep the label with probability
  ``p = e^ε/(e^ε + C − 1)``, each other label ``q = 1/(e^ε + C − 1)`` (Warner 1965; Ghazi et al.
  2021, arXiv:2102.06062); for two
  different labels the output distributions differ on two outcomes only, so
  ``D_α = (1/(α−1))·log[p^α q^{1−α} + q^α p^{1−α} + (C − 2)·q]`` and
  ``δ(ε′) = max(0, p − e^{ε′}·q)``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import (
    check_array,
    check_delta,
    check_memory,
    check_nonneg_int,
    check_orders,
    check_positive,
    check_positive_int,
    check_real,
    check_work,
)

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_renyi",
    "laplace_delta",
    "laplace_renyi",
    "randomized_response_delta",
    "randomized_response_probabilities",
    "randomized_response_renyi",
    "sample_gaussian_mechanism",
    "sample_laplace_mechanism",
    "sample_randomized_response",
    "sample_randomized_response_counts",
]


def _check_nonneg_real(name: str, value: object) -> float:
    out = check_real(name, value)
    if out < 0:
        raise ValueError(f"{name} must be non-negative, got {out}")
    return out


# ---------------------------------------------------------------------------------------------
# Gaussian mechanism
# ---------------------------------------------------------------------------------------------


def sample_gaussian_mechanism(
    value: ArrayLike, sigma: float, n: int, *, rng: RngLike = None
) -> FloatArray:
    """``n`` independent releases of ``value + N(0, σ²I)``.

    Args:
        value: the true query answer, scalar or array.
        sigma: noise standard deviation σ > 0.
        n: number of releases, ≥ 0.
        rng: seed or generator.

    Returns:
        Array of shape ``(n, *value.shape)``.

    Raises:
        ValueError, TypeError: non-finite value, σ ≤ 0, bad n.

    Example:
        >>> sample_gaussian_mechanism(1.0, 2.0, 3, rng=0).shape
        (3,)
    """
    x = check_array("value", value)
    s = check_positive("sigma", sigma)
    n = check_nonneg_int("n", n)
    gen = as_generator(rng)
    check_memory(16.0 * n * max(x.size, 1), f"sample_gaussian_mechanism with n={n}")
    with np.errstate(over="ignore"):  # σ·Z beyond the float range is ±inf, as it should be
        return x + s * gen.standard_normal((n, *x.shape))


def gaussian_renyi(orders: ArrayLike, *, sigma: float, sensitivity: float = 1.0) -> FloatArray:
    """Rényi divergence ``D_α(N(0,σ²)‖N(Δ,σ²)) = αΔ²/(2σ²)`` (Mironov 2017, Prop. 7).

    Args:
        orders: orders α ≥ 1 (α = 1 gives the KL divergence ``Δ²/(2σ²)``; ``inf`` gives inf).
        sigma: noise standard deviation σ > 0.
        sensitivity: L2 sensitivity Δ ≥ 0.

    Returns:
        Array of the divergences at each order.

    Raises:
        ValueError, TypeError: orders < 1 or NaN, σ ≤ 0, Δ < 0.

    Example:
        >>> gaussian_renyi([2, 10], sigma=2.0)
        array([0.25, 1.25])
    """
    lam = check_orders(orders, allow_one=True, allow_inf=True)
    s = check_positive("sigma", sigma)
    d = _check_nonneg_real("sensitivity", sensitivity)
    if d == 0:
        return np.zeros_like(lam)
    # (Δ/σ)² may overflow (inf, the right limit) or underflow (then α·0 = 0 below α = ∞,
    # while D_∞ = ∞ for any Δ > 0).
    with np.errstate(over="ignore", under="ignore"):
        ratio = np.float64(d) / np.float64(s)
        out = lam * (ratio * ratio) / 2
    return np.where(np.isinf(lam), np.inf, out)


def gaussian_delta(epsilon: float, *, sigma: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    ``δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ)``, evaluated as
    ``Φ(a) − exp(ε + log Φ(b))`` so large ε does not overflow.

    Args:
        epsilon: ε ≥ 0.
        sigma: noise standard deviation σ > 0.
        sensitivity: L2 sensitivity Δ ≥ 0.

    Returns:
        δ in [0, 1].

    Raises:
        ValueError, TypeError: ε < 0, σ ≤ 0, Δ < 0.

    Example:
        >>> round(gaussian_delta(1.0, sigma=1.0), 6)
        0.126937
    """
    eps = _check_nonneg_real("epsilon", epsilon)
    s = check_positive("sigma", sigma)
    d = _check_nonneg_real("sensitivity", sensitivity)
    if d == 0:
        return 0.0
    a = d / (2 * s) - eps * s / d
    b = -d / (2 * s) - eps * s / d
    val = special.ndtr(a) - math.exp(eps + special.log_ndtr(b))
    return float(min(max(val, 0.0), 1.0))


def gaussian_epsilon(delta: float, *, sigma: float, sensitivity: float = 1.0) -> float:
    """Smallest ε with ``gaussian_delta(ε) ≤ δ`` (exact privacy profile inverted by Brent).

    Args:
        delta: δ in (0, 1).
        sigma: noise standard deviation σ > 0.
        sensitivity: L2 sensitivity Δ ≥ 0.

    Returns:
        ε ≥ 0 (0 when δ(0) ≤ δ already), to absolute tolerance 1e-12.

    Raises:
        ValueError, TypeError: δ ∉ (0, 1), σ ≤ 0, Δ < 0.

    Example:
        >>> round(gaussian_epsilon(1e-5, sigma=1.0), 4)
        4.3772
    """
    dl = check_delta(delta, allow_zero=False)
    s = check_positive("sigma", sigma)
    d = _check_nonneg_real("sensitivity", sensitivity)
    if gaussian_delta(0.0, sigma=s, sensitivity=d) <= dl:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, sigma=s, sensitivity=d) > dl:
        if hi > 1e307:
            return math.inf  # ε ≈ Δ²/(2σ²) beyond the float range (σ/Δ below ~1e-154)
        hi *= 2.0
    return float(
        optimize.brentq(
            lambda e: gaussian_delta(e, sigma=s, sensitivity=d) - dl, 0.0, hi, xtol=1e-12
        )
    )


# ---------------------------------------------------------------------------------------------
# Laplace mechanism
# ---------------------------------------------------------------------------------------------


def sample_laplace_mechanism(
    value: ArrayLike, scale: float, n: int, *, rng: RngLike = None
) -> FloatArray:
    """``n`` independent releases of ``value + Lap(b)`` (i.i.d. per coordinate).

    Args:
        value: the true query answer, scalar or array.
        scale: Laplace scale b > 0.
        n: number of releases, ≥ 0.
        rng: seed or generator.

    Returns:
        Array of shape ``(n, *value.shape)``.

    Raises:
        ValueError, TypeError: non-finite value, b ≤ 0, bad n.

    Example:
        >>> sample_laplace_mechanism([0.0, 1.0], 0.5, 4, rng=0).shape
        (4, 2)
    """
    x = check_array("value", value)
    b = check_positive("scale", scale)
    n = check_nonneg_int("n", n)
    gen = as_generator(rng)
    check_memory(16.0 * n * max(x.size, 1), f"sample_laplace_mechanism with n={n}")
    with np.errstate(over="ignore"):
        return x + gen.laplace(0.0, b, size=(n, *x.shape))


def laplace_renyi(orders: ArrayLike, *, scale: float, sensitivity: float = 1.0) -> FloatArray:
    """Rényi divergence of the Laplace mechanism (Mironov 2017, Prop. 6 / Table II).

    With ``r = Δ/b``: ``D_α = (1/(α−1))·log[(α/(2α−1))·e^{(α−1)r} + ((α−1)/(2α−1))·e^{−αr}]``
    for α > 1; ``r + e^{−r} − 1`` at α = 1 (KL); ``r`` at α = ∞ (pure ε-DP).

    Args:
        orders: orders α ≥ 1 (``inf`` allowed).
        scale: Laplace scale b > 0.
        sensitivity: L1 sensitivity Δ ≥ 0.

    Returns:
        Divergences at each order.

    Raises:
        ValueError, TypeError: orders < 1 or NaN, b ≤ 0, Δ < 0.

    Example:
        >>> np.round(laplace_renyi([2, np.inf], scale=1.0), 6)
        array([0.619124, 1.      ])
    """
    lam = check_orders(orders, allow_one=True, allow_inf=True)
    b = check_positive("scale", scale)
    r = _check_nonneg_real("sensitivity", sensitivity) / b
    out = np.empty_like(lam)
    for i, a in enumerate(lam):
        if r == 0:
            out[i] = 0.0
        elif a == 1:
            out[i] = r + math.expm1(-r)
        elif math.isinf(a):
            out[i] = r
        else:
            t1 = math.log(a / (2 * a - 1)) + (a - 1) * r
            t2 = math.log((a - 1) / (2 * a - 1)) - a * r
            out[i] = np.logaddexp(t1, t2) / (a - 1)
    return out


def laplace_delta(epsilon: float, *, scale: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Laplace mechanism: ``max(0, 1 − e^{(ε − Δ/b)/2})``.

    The hockey-stick divergence between ``Lap(0, b)`` and ``Lap(Δ, b)``, whose privacy loss
    is ``(|x − Δ| − |x|)/b``.

    Args:
        epsilon: ε ≥ 0.
        scale: Laplace scale b > 0.
        sensitivity: L1 sensitivity Δ ≥ 0.

    Returns:
        δ in [0, 1).

    Raises:
        ValueError, TypeError: ε < 0, b ≤ 0, Δ < 0.

    Example:
        >>> round(laplace_delta(1.0, scale=0.5), 6)
        0.393469
    """
    eps = _check_nonneg_real("epsilon", epsilon)
    b = check_positive("scale", scale)
    d = _check_nonneg_real("sensitivity", sensitivity)
    r = d / b  # may be inf for a tiny scale: δ → 1
    if eps >= r:
        return 0.0
    return float(-math.expm1(max((eps - r) / 2, -800.0)))


# ---------------------------------------------------------------------------------------------
# Randomized response
# ---------------------------------------------------------------------------------------------


def _rr_params(num_classes: object, epsilon: object) -> tuple[int, float, float, float]:
    c = check_positive_int("num_classes", num_classes)
    if c < 2:
        raise ValueError(f"num_classes must be at least 2, got {c}")
    eps = _check_nonneg_real("epsilon", epsilon)
    # p = e^ε/(e^ε + C − 1), q = 1/(e^ε + C − 1), in log space for large ε.
    log_den = np.logaddexp(eps, math.log(c - 1))
    log_p = eps - log_den
    log_q = -log_den
    return c, eps, float(log_p), float(log_q)


def randomized_response_probabilities(
    label: ArrayLike, *, num_classes: int, epsilon: float
) -> FloatArray:
    """Exact output distribution of C-ary ε-randomized response (Warner 1965; Ghazi et al. 2021,
    arXiv:2102.06062).

    Args:
        label: true label(s) in ``[0, C)``, scalar or array.
        num_classes: C ≥ 2.
        epsilon: ε ≥ 0 (0 gives the uniform distribution).

    Returns:
        Probabilities of shape ``(*label.shape, C)``: ``e^ε/(e^ε + C − 1)`` at the label,
        ``1/(e^ε + C − 1)`` elsewhere.

    Raises:
        ValueError, TypeError: labels out of range or non-integer, C < 2, ε < 0.

    Example:
        >>> p = randomized_response_probabilities(0, num_classes=10, epsilon=2.0)
        >>> [round(float(x), 10) for x in p[:2]]
        [0.4508530604, 0.0610163266]
    """
    c, _, log_p, log_q = _rr_params(num_classes, epsilon)
    lab = _check_labels(label, c)
    check_memory(
        8.0 * max(lab.size, 1) * c, f"randomized_response_probabilities with num_classes={c}"
    )
    out = np.full((*lab.shape, c), math.exp(log_q))
    np.put_along_axis(out, lab[..., None], math.exp(log_p), axis=-1)
    return out


def _check_labels(label: ArrayLike, c: int) -> np.ndarray:
    arr = check_array("label", label)
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"label must contain integers, got {label!r}")
    if np.any((arr < 0) | (arr >= c)):
        raise ValueError(f"label must be in [0, num_classes={c}), got {label!r}")
    return arr.astype(np.int64)


def _check_label(label: object, c: int) -> int:
    out = check_nonneg_int("label", label)
    if out >= c:
        raise ValueError(f"label must be in [0, num_classes={c}), got {out}")
    return out


def sample_randomized_response(
    label: int, n: int, *, num_classes: int, epsilon: float, rng: RngLike = None
) -> np.ndarray:
    """``n`` independent outputs of ε-randomized response on one true label.

    Args:
        label: the true label in ``[0, C)``.
        n: number of releases, ≥ 0.
        num_classes: C ≥ 2.
        epsilon: ε ≥ 0.
        rng: seed or generator.

    Returns:
        int64 array ``(n,)`` of released labels.

    Raises:
        ValueError, TypeError: as :func:`randomized_response_probabilities`, bad n.

    Example:
        >>> sample_randomized_response(3, 5, num_classes=4, epsilon=50.0, rng=0).tolist()
        [3, 3, 3, 3, 3]
    """
    c, _, log_p, _ = _rr_params(num_classes, epsilon)
    lab = _check_label(label, c)
    n = check_nonneg_int("n", n)
    gen = as_generator(rng)
    check_memory(32.0 * n, f"sample_randomized_response with n={n}")
    keep = gen.random(n) < math.exp(log_p)
    # Otherwise uniform over the C − 1 other labels.
    other = gen.integers(0, c - 1, size=n)
    other = other + (other >= lab)
    return np.where(keep, lab, other).astype(np.int64)


def sample_randomized_response_counts(
    label: int, n: int, *, num_classes: int, epsilon: float, rng: RngLike = None
) -> np.ndarray:
    """Per-class counts of ``n`` randomized-response outputs: Multinomial(n, probabilities).

    Exact in distribution (the n outputs are i.i.d.), O(C) whatever n.

    Args:
        label: the true label in ``[0, C)``.
        n: number of releases, ≥ 0.
        num_classes: C ≥ 2.
        epsilon: ε ≥ 0.
        rng: seed or generator.

    Returns:
        int64 counts ``(C,)`` summing to n.

    Raises:
        ValueError, TypeError: as :func:`sample_randomized_response`.

    Example:
        >>> int(sample_randomized_response_counts(0, 1000, num_classes=3, epsilon=1.0, rng=0).sum())
        1000
    """
    c, _, _, _ = _rr_params(num_classes, epsilon)
    probs = randomized_response_probabilities(
        _check_label(label, c), num_classes=num_classes, epsilon=epsilon
    )
    n = check_nonneg_int("n", n)
    gen = as_generator(rng)
    return gen.multinomial(n, probs / probs.sum()).astype(np.int64)


#: Most orders :func:`randomized_response_renyi` evaluates (vectorised, ~50 ns each).
#: Raise ``dpaudit.mechanisms.simple.MAX_RR_ORDERS`` to allow longer order grids.
MAX_RR_ORDERS = 100_000


def randomized_response_renyi(orders: ArrayLike, *, num_classes: int, epsilon: float) -> FloatArray:
    """Exact Rényi divergence between RR outputs on two different labels.

    ``D_α = (1/(α−1))·log[p^α q^{1−α} + q^α p^{1−α} + (C−2)·q]`` (the distributions differ only
    at the two labels); ``(p − q)·log(p/q)`` at α = 1; ``log(p/q) = ε`` at α = ∞.

    Args:
        orders: orders α ≥ 1 (``inf`` allowed).
        num_classes: C ≥ 2.
        epsilon: ε ≥ 0.

    Returns:
        Divergences at each order.

    Raises:
        ValueError, TypeError: orders < 1 or NaN, C < 2, ε < 0.

    Example:
        >>> np.round(randomized_response_renyi([2, np.inf], num_classes=2, epsilon=1.0), 6)
        array([0.735326, 1.      ])
    """
    lam = check_orders(orders, allow_one=True, allow_inf=True)
    check_work(
        lam.size,
        MAX_RR_ORDERS,
        f"randomized_response_renyi at orders=<{lam.size} orders>",
        "orders",
        "raise dpaudit.mechanisms.simple.MAX_RR_ORDERS",
    )
    c, eps, log_p, log_q = _rr_params(num_classes, epsilon)
    out = np.zeros_like(lam)
    if eps == 0:
        return out
    finite = np.isfinite(lam) & (lam != 1)
    a = lam[finite]
    # log[p^α q^{1−α} + q^α p^{1−α} + (C−2)·q], every order at once (one logsumexp per row)
    terms = [a * log_p + (1 - a) * log_q, a * log_q + (1 - a) * log_p]
    if c > 2:
        terms.append(np.full(a.shape, math.log(c - 2) + log_q))
    out[finite] = np.maximum(special.logsumexp(np.stack(terms), axis=0) / (a - 1), 0.0)
    out[lam == 1] = (math.exp(log_p) - math.exp(log_q)) * eps
    out[np.isinf(lam)] = eps
    return out


def randomized_response_delta(epsilon_prime: float, *, num_classes: int, epsilon: float) -> float:
    """Exact δ(ε′) of ε-randomized response: ``max(0, p − e^{ε′}·q)``.

    Args:
        epsilon_prime: the ε′ ≥ 0 at which δ is evaluated.
        num_classes: C ≥ 2.
        epsilon: the mechanism's ε ≥ 0.

    Returns:
        δ in [0, 1) (0 for ε′ ≥ ε).

    Raises:
        ValueError, TypeError: ε′ < 0, C < 2, ε < 0.

    Example:
        >>> round(randomized_response_delta(1.0, num_classes=2, epsilon=2.0), 6)
        0.55677
    """
    ep = _check_nonneg_real("epsilon_prime", epsilon_prime)
    _, _, log_p, log_q = _rr_params(num_classes, epsilon)
    if ep + log_q >= log_p:
        return 0.0
    return float(max(0.0, math.exp(log_p) - math.exp(ep + log_q)))
