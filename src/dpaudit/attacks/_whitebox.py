"""White-box canary-gradient scores: what an auditor who reads every privatised update computes.

In the white-box threat model of DP-SGD audits (Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski,
Carlini & Terzis 2023, arXiv:2302.07956; Steinke, Nasr & Jagielski 2023, arXiv:2305.08846, §6)
the auditor inserts *canary gradients*: unit directions at the clipping norm, mutually
orthogonal (Dirac canaries), each included in the run with probability ½ and, when included,
Poisson-sampled into every step like an example. Projecting the noisy summed update of step t
on canary i's direction (in units of the clipping norm) gives

    y_it = b_it + σ · z_it,   b_it ~ Bernoulli(q) if canary i is included (else 0),  z_it ~ N(0, 1),

with q the sampling rate and σ the noise multiplier. A one-run audit needs one score per canary
(:func:`dpaudit.bounds.one_run_bounds`), and which score matters:

* ``"inner"`` — Σ_t y_it, the sum of per-step inner products. At small q it is dominated by
  the noise of the steps where the canary was not sampled.
* ``"llr"`` — Σ_t log[(1 − q) + q · exp((2 y_it − 1) / (2σ²))], the sum of the per-step
  log-likelihood ratios of the subsampled Gaussian ``(1 − q) N(0, σ²) + q N(1, σ²)`` against
  ``N(0, σ²)``. By the Neyman–Pearson lemma it is the most powerful statistic for one canary
  (the steps are independent given inclusion), which is why it keeps the signal.

Any score gives a valid one-run bound (the inclusions are random and independent of the score's
definition); the score only decides how tight it is. On the setting of a typical DP-SGD run
(q = 256/60000, 1,171 steps, σ = 0.6405 for ε = 4 at δ = 1e-5 by the RDP accountant,
m = 10⁴ canaries, seed 0) the valid f-DP bound of :func:`dpaudit.bounds.one_run_bounds` is
0.274 from the inner products and 0.951 from the log-likelihood ratios (a test checks both).

:func:`simulate_canary_gradients` draws the observations of that idealised model: what an
exact implementation of DP-SGD shows the white-box auditor.

Example:
    >>> y, included = simulate_canary_gradients(
    ...     2000, 100, sampling_rate=0.1, noise_multiplier=0.8, rng=0)
    >>> y.shape, int(included.sum())
    ((2000, 100), 1007)
    >>> llr = canary_gradient_scores(y, statistic="llr", sampling_rate=0.1,
    ...                              noise_multiplier=0.8)
    >>> inner = canary_gradient_scores(y, statistic="inner")
    >>> from dpaudit.bounds import one_run_bounds
    >>> a = one_run_bounds(llr, included, delta=1e-5, rng=0).max_valid
    >>> b = one_run_bounds(inner, included, delta=1e-5, rng=0).max_valid
    >>> bool(a > b)
    True
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_in_range,
    check_positive,
    check_positive_int,
    check_work,
)

__all__ = [
    "GRADIENT_STATISTICS",
    "INVERTIBLE_OPTIMIZERS",
    "canary_gradient_scores",
    "gradients_from_iterates",
    "per_step_llr",
    "simulate_canary_gradients",
]

#: The per-canary statistics of :func:`canary_gradient_scores`.
GRADIENT_STATISTICS = ("llr", "inner")

#: Most observations (canaries × steps) :func:`simulate_canary_gradients` draws at once
#: (about 1.2 GB of float64 arrays at the peak, a few seconds).
MAX_SIMULATED_OBSERVATIONS = 5 * 10**7


_TINY = float(np.finfo(np.float64).tiny)


def _check_rate_and_noise(sampling_rate: float, noise_multiplier: float) -> tuple[float, float]:
    q = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
    sigma = check_positive("noise_multiplier", noise_multiplier)
    if not sigma * sigma >= _TINY:
        raise ValueError(
            f"noise_multiplier must be at least 1.5e-154 (σ² a normal float), got {sigma!r}"
        )
    return float(q), float(sigma)


def canary_gradient_scores(
    observations: ArrayLike,
    *,
    statistic: str = "llr",
    sampling_rate: float | None = None,
    noise_multiplier: float | None = None,
) -> FloatArray:
    """One score per canary from its per-step projections (module notes).

    Args:
        observations: ``(m, T)`` projections of the noisy summed update of each of T steps on
            each of m canary directions, in units of the clipping norm.
        statistic: ``"llr"`` (sum of per-step log-likelihood ratios of the subsampled
            Gaussian; Nasr et al. 2023, arXiv:2302.07956) or ``"inner"`` (sum of the
            projections).
        sampling_rate: q in (0, 1], the Poisson sampling rate (``"llr"`` only).
        noise_multiplier: σ > 0, the noise standard deviation over the clipping norm
            (``"llr"`` only).

    Returns:
        ``(m,)`` scores; larger means "included".

    Raises:
        ValueError: not a finite 2-d array, an unknown statistic, or ``"llr"`` without a valid
            sampling rate and noise multiplier.
    """
    check_choice("statistic", statistic, GRADIENT_STATISTICS)
    y = check_array("observations", observations, ndim=2)
    if statistic == "inner":
        return y.sum(axis=1)
    if sampling_rate is None or noise_multiplier is None:
        raise ValueError("statistic='llr' needs sampling_rate and noise_multiplier")
    return per_step_llr(y, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier).sum(
        axis=1
    )


def per_step_llr(
    observations: ArrayLike, *, sampling_rate: float, noise_multiplier: float
) -> FloatArray:
    """log[(1 − q) + q·exp((2y − 1)/(2σ²))] of each observation: the log-likelihood ratio of
    the subsampled Gaussian ``(1 − q) N(0, σ²) + q N(1, σ²)`` against ``N(0, σ²)`` (module
    notes; Nasr et al. 2023, arXiv:2302.07956, §4).

    Args:
        observations: projections in units of the clipping norm (any shape, finite).
        sampling_rate: q in (0, 1].
        noise_multiplier: σ > 0.

    Returns:
        The per-observation log-likelihood ratios (same shape).

    Example:
        >>> float(per_step_llr([0.5], sampling_rate=1.0, noise_multiplier=1.0)[0])
        0.0
    """
    y = check_array("observations", observations)
    q, sigma = _check_rate_and_noise(sampling_rate, noise_multiplier)
    # log[(1 − q) + q·exp(a)] = logaddexp(log(1 − q), log q + a), stable for any a and q = 1
    a = (2.0 * y - 1.0) / (2.0 * sigma * sigma)
    return np.logaddexp(math.log1p(-q) if q < 1.0 else -np.inf, math.log(q) + a)


#: Optimizers whose privatised gradients :func:`gradients_from_iterates` recovers from the
#: parameter iterates (Adam needs its second-moment state, which the iterates do not show).
INVERTIBLE_OPTIMIZERS = ("sgd",)


def gradients_from_iterates(
    iterates: ArrayLike,
    *,
    learning_rate: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    optimizer: str = "sgd",
    nesterov: bool = False,
) -> FloatArray:
    """The gradients an SGD optimizer applied, recovered from its T + 1 parameter iterates.

    torch's SGD (heavy-ball momentum μ, dampening d) updates ``b_t = μ b_{t−1} + (1 − d) g_t``
    (``b_0 = g_0``) and ``θ_{t+1} = θ_t − η b_t``; so ``b_t = (θ_t − θ_{t+1})/η`` and
    ``g_t = (b_t − μ b_{t−1})/(1 − d)`` for t ≥ 1, ``g_0 = b_0``. This is how a white-box
    auditor who sees only the iterates reads each step's privatised gradient (Nasr et al.
    2023, arXiv:2302.07956, §3: the "all iterates" threat model), without weight decay.

    Args:
        iterates: ``(T + 1, d)`` parameters before the first and after every step.
        learning_rate: η > 0.
        momentum: μ in [0, 1).
        dampening: d in [0, 1).
        optimizer: ``"sgd"`` (:data:`INVERTIBLE_OPTIMIZERS`).
        nesterov: Nesterov momentum is not invertible this way (refused).

    Returns:
        ``(T, d)`` gradients, in the units the optimizer applied them (Opacus' are the noisy
        sums divided by the expected batch size).

    Raises:
        ValueError: an optimizer other than SGD (e.g. ``"adam"``), Nesterov momentum, fewer
            than 2 iterates, bad rates.

    Example:
        >>> theta = np.array([[0.0], [-0.5], [-1.25]])  # g = 1, 1 at η = 0.5, μ = 0.5
        >>> gradients_from_iterates(theta, learning_rate=0.5, momentum=0.5).ravel().tolist()
        [1.0, 1.0]
    """
    check_choice("optimizer", optimizer, (*INVERTIBLE_OPTIMIZERS, "adam"))
    if optimizer != "sgd":
        raise ValueError(
            f"optimizer={optimizer!r} cannot be inverted from the iterates (its update depends "
            "on second-moment state the iterates do not show); read the privatised gradients "
            "directly (dpaudit.integrations.opacus.CanaryAuditor)"
        )
    if not isinstance(nesterov, (bool, np.bool_)):
        raise TypeError(f"nesterov must be a bool, got {type(nesterov).__name__}")
    if nesterov:
        raise ValueError("nesterov=True is not supported by gradients_from_iterates")
    theta = check_array("iterates", iterates, ndim=2)
    if theta.shape[0] < 2:
        raise ValueError(f"iterates needs at least 2 rows (T + 1), got {theta.shape[0]}")
    lr = check_positive("learning_rate", learning_rate)
    mu = check_in_range("momentum", momentum, 0.0, 1.0, low_inclusive=True)
    d = check_in_range("dampening", dampening, 0.0, 1.0, low_inclusive=True)
    with np.errstate(over="ignore", invalid="ignore"):
        grads = (theta[:-1] - theta[1:]) / lr
        if mu > 0.0:
            grads[1:] = (grads[1:] - mu * grads[:-1].copy()) / (1.0 - d)
    if not np.all(np.isfinite(grads)):
        raise ValueError(
            f"learning_rate={lr!r} is too small for these iterates: the recovered gradients "
            "overflow"
        )
    return grads


def simulate_canary_gradients(
    num_canaries: int,
    num_steps: int,
    *,
    sampling_rate: float,
    noise_multiplier: float,
    rng: RngLike = None,
) -> tuple[FloatArray, np.ndarray]:
    """Observations of the idealised white-box model (module notes): each canary included
    with probability ½, Poisson-sampled at rate q per step, plus N(0, σ²) noise.

    Args:
        num_canaries: m ≥ 1.
        num_steps: T ≥ 1.
        sampling_rate: q in (0, 1].
        noise_multiplier: σ > 0.
        rng: seed or generator (keyword-only).

    Returns:
        ``(observations (m, T), included (m,) bool)``.

    Raises:
        ValueError: bad sizes, rate or noise, or more than
            :data:`MAX_SIMULATED_OBSERVATIONS` observations.
    """
    m = check_positive_int("num_canaries", num_canaries)
    t = check_positive_int("num_steps", num_steps)
    q, sigma = _check_rate_and_noise(sampling_rate, noise_multiplier)
    check_work(
        m * t,
        MAX_SIMULATED_OBSERVATIONS,
        f"simulate_canary_gradients with num_canaries={m} and num_steps={t}",
        "observations",
        "raise dpaudit.attacks._whitebox.MAX_SIMULATED_OBSERVATIONS",
    )
    g = as_generator(rng)
    included = g.random(m) < 0.5
    sampled = (g.random((m, t)) < q) & included[:, None]
    return sampled + sigma * g.standard_normal((m, t)), included
