"""A faithful reimplementation of Wang et al. 2022's reconstruction procedure (the baseline).

Paper 003 §3.2 (Alg. 2) and §4.1, as released in ``cleverhans-lab/monte-carlo-adv``
(``section4/attack.py``), which we follow where the text and the code differ:

* **Q by the trapezoid rule** (§3.2 Step 2): ``Q̃_k = Σ_r w_r φ((r − H_k)/σ)/σ ·
  ∏_{i≠k} Φ((r − H_i)/σ)`` on the unit-step grid ``r = H_k − 6σ, H_k − 6σ + 1, …`` (``ceil(12σ)``
  nodes, the right end excluded as ``arange`` does), trapezoid weights ``w``.
* **Objective** ``‖Q̃(Ĥ)/‖Q̃(Ĥ)‖₂ − q̄/‖q̄‖₂‖₂`` — the released code compares the two vectors
  after L2 normalisation (the text writes ``‖Q(Ĥ) − q̄‖₂``; ``normalise=False`` gives that).
* **Gradient** as automatic differentiation of that code computes it: the grid is a constant
  (``jnp.arange`` needs concrete bounds), so ``∂/∂H`` differentiates the integrand at fixed
  nodes.
* **Start** ``Ĥ = N/C`` in every class (the code; the text's all-zero start plus the final
  shift by ``(N − ΣĤ)/C`` is the same thing, because Q̃ and its gradient are shift invariant).
* **Step schedule** (§4.1): normalised gradient steps of length 10 (learning rate
  ``10/‖∇‖``) while they lower the loss, then steps of length 1 (``1/‖∇‖``); stop when the loss
  rises, falls below ``tolerance`` (0 in the code; the text quotes 0.01), an entry turns
  negative, or after ``max_iter`` = 100 iterations. As in the code, a final unit step that made
  things worse is kept.
* **Final shift** by ``(N − ΣĤ)/C`` (Alg. 2 line 18; a no-op up to rounding here).

Everything is vectorised numpy (the paper's JAX loop took ~10 min per step, 003 §5).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray, IntArray
from dpaudit._validate import (
    MAX_COUNT,
    check_counts,
    check_flag,
    check_memory,
    check_nonneg_int,
    check_positive_int,
    check_real,
    check_scale,
    check_votes,
)

__all__ = [
    "MAX_ITER",
    "PAPER_MIN_SIGMA",
    "PaperReconstruction",
    "reconstruct_histogram_paper",
    "trapezoid_argmax_probabilities",
]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: Smallest σ of the paper's procedure: its grid has unit steps over ``H_k ± 6σ``, so below
#: this it has fewer than 6 nodes and Q̃ is not an approximation of anything.
PAPER_MIN_SIGMA = 0.5
#: Iteration cap of the procedure (each iteration evaluates Q̃ twice).
MAX_ITER = 10**6


def _check_paper_sigma(sigma: object, num_classes: int) -> float:
    """σ in the range the unit-step grid supports, with its (C, C, 12σ) arrays under the cap."""
    s = check_scale("sigma", sigma)
    if s < PAPER_MIN_SIGMA:
        raise ValueError(
            f"sigma must be at least {PAPER_MIN_SIGMA} for the paper's unit-step trapezoid grid "
            f"over ±6σ (fewer than 6 nodes below), got {s:g}"
        )
    nodes = math.ceil(12.0 * s)
    check_memory(
        64.0 * num_classes * num_classes * nodes,
        f"the trapezoid grid of sigma={s:g} ({nodes} nodes) on C={num_classes} classes",
    )
    return s


def _grid_offsets(sigma: float) -> np.ndarray:
    """Offsets t with r = H_k + t: ``arange(−6σ, 6σ, 1)`` (right end excluded)."""
    return np.arange(-6.0 * sigma, 6.0 * sigma, 1.0)


def _trapezoid_weights(n: int) -> np.ndarray:
    w = np.ones(n)
    if n > 1:
        w[0] = w[-1] = 0.5
    return w


def _q_and_jacobian(votes: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Trapezoid Q̃ and its fixed-grid Jacobian ``J[k, i] = ∂Q̃_k/∂H_i``."""
    c = votes.size
    t = _grid_offsets(sigma)
    w = _trapezoid_weights(t.size)
    # z[k, i, r] = (H_k + t_r − H_i)/σ; gaps of ~1e308 overflow to ±inf, the limit (φ = 0).
    with np.errstate(over="ignore"):
        z = (votes[:, None, None] - votes[None, :, None] + t[None, None, :]) / sigma
        cdf = special.ndtr(z)
        pdf = np.exp(-0.5 * z * z) * _INV_SQRT_2PI
    eye = np.eye(c, dtype=bool)
    cdf_others = np.where(eye[:, :, None], 1.0, cdf)
    prod = np.prod(cdf_others, axis=1)  # (C, R): ∏_{i≠k} Φ(z_ki)
    dens = np.exp(-0.5 * (t / sigma) ** 2) * _INV_SQRT_2PI / sigma  # φ((r − H_k)/σ)/σ
    integrand = dens[None, :] * prod
    q = integrand @ w
    # rest[k, i, r] = ∏_{l≠k,i} Φ(z_kl): prefix × suffix products (no division, so exact even
    # when a factor underflows).
    ones = np.ones((c, 1, t.size))
    prefix = np.cumprod(np.concatenate([ones, cdf_others[:, :-1]], axis=1), axis=1)
    suffix = np.cumprod(np.concatenate([ones, cdf_others[:, :0:-1]], axis=1), axis=1)[:, ::-1]
    rest = prefix * suffix
    # ∂/∂H_i Φ((r − H_i)/σ) = −φ(·)/σ for i ≠ k
    jac = -np.einsum("kir,r->ki", rest * pdf / sigma * dens[None, None, :], w)
    # ∂/∂H_k of φ((r − H_k)/σ)/σ at fixed r: φ(·)/σ · (r − H_k)/σ²
    jac[np.arange(c), np.arange(c)] = (integrand * (t / sigma**2)[None, :]) @ w
    return q, jac


def trapezoid_argmax_probabilities(
    votes: ArrayLike, sigma: float, *, jacobian: bool = False
) -> FloatArray | tuple[FloatArray, FloatArray]:
    """Paper 003 §3.2's trapezoid approximation of Q(H) (unit steps over ``H_k ± 6σ``).

    Args:
        votes: histogram (C,), C ≥ 2.
        sigma: noise σ ≥ :data:`PAPER_MIN_SIGMA` (vote units; the grid has ``ceil(12σ)``
            unit steps).
        jacobian: also return ``J[k, i] = ∂Q̃_k/∂H_i`` at fixed nodes (what automatic
            differentiation of the paper's code computes).

    Returns:
        The approximate probabilities (C,) (they need not sum exactly to 1), or
        ``(q, J)`` when ``jacobian`` is True.

    Raises:
        ValueError: bad votes, σ below :data:`PAPER_MIN_SIGMA` or a grid beyond the memory cap.
        TypeError: non-numeric votes or σ, a non-bool ``jacobian``.

    Example:
        >>> trapezoid_argmax_probabilities([200, 30, 20], 40).round(4).tolist()
        [0.998, 0.0013, 0.0007]
    """
    v = check_votes("votes", votes)
    if v.ndim != 1:
        raise ValueError(f"votes must be 1-d, got shape {v.shape}")
    s = _check_paper_sigma(sigma, v.size)
    jacobian = check_flag("jacobian", jacobian)
    q, jac = _q_and_jacobian(v, s)
    return (q, jac) if jacobian else q


def _loss_and_grad(
    votes: np.ndarray, sigma: float, target: np.ndarray, normalise: bool
) -> tuple[float, np.ndarray]:
    q, jac = _q_and_jacobian(votes, sigma)
    if normalise:
        nq = float(np.linalg.norm(q))
        a = q / nq
        diff = a - target
        loss = float(np.linalg.norm(diff))
        if loss == 0.0:
            return 0.0, np.zeros_like(votes)
        # d‖a − b‖/dq = (I − a aᵀ)(a − b)/(‖q‖·loss)
        dq = (diff - a * (a @ diff)) / (nq * loss)
    else:
        diff = q - target
        loss = float(np.linalg.norm(diff))
        if loss == 0.0:
            return 0.0, np.zeros_like(votes)
        dq = diff / loss
    return loss, dq @ jac


@dataclasses.dataclass(frozen=True, eq=False)
class PaperReconstruction(ResultMixin):
    """Result of the paper-003 procedure (baseline).

    Attributes:
        votes: the final estimate, shifted to sum to ``num_teachers`` (may be negative).
        losses: the loss after each accepted step (the first entry is at the start).
        iterations: gradient evaluations made.
        stop_reason: ``"loss-increased"``, ``"tolerance"``, ``"negative"`` or ``"max-iter"``.
        counts, sigma, num_teachers, normalise, tolerance, max_iter: the inputs.
        method: what this is.
    """

    votes: FloatArray
    losses: FloatArray
    iterations: int
    stop_reason: str
    counts: IntArray
    sigma: float
    num_teachers: int
    normalise: bool
    tolerance: float
    max_iter: int
    method: str = (
        "Wang et al. 2022 Alg. 2 / §4.1 as released: trapezoid Q over ±6σ (unit steps), normalised "
        "gradient steps of length 10 then 1"
    )


def reconstruct_histogram_paper(
    counts: ArrayLike,
    sigma: float,
    num_teachers: int,
    *,
    normalise: bool = True,
    tolerance: float = 0.0,
    max_iter: int = 100,
    stop_on_negative: bool = True,
) -> PaperReconstruction:
    """Reconstruct a histogram with Wang et al. 2022's own procedure (the baseline of our
    benchmark).

    See the module docstring for every step and where the released code and the text differ.

    Args:
        counts: answers per class (C,), Σ ≥ 1.
        sigma: noise σ ≥ :data:`PAPER_MIN_SIGMA`.
        num_teachers: N ≥ 1.
        normalise: compare L2-normalised vectors (released code) instead of raw ones (text).
        tolerance: stop once the loss is below this (code: 0; text: 0.01).
        max_iter: iteration cap (code: 100; at most :data:`MAX_ITER`).
        stop_on_negative: stop when an entry turns negative (code: always).

    Returns:
        :class:`PaperReconstruction`.

    Raises:
        ValueError: bad counts (M = 0, < 2 classes), σ below :data:`PAPER_MIN_SIGMA`, N < 1,
            negative tolerance, ``max_iter`` above :data:`MAX_ITER`.
        TypeError: non-numeric arguments, non-bool flags.

    Example:
        >>> r = reconstruct_histogram_paper([1, 0, 2, 9996, 1], 40, 250)
        >>> round(float(r.votes.sum()), 6)
        250.0
    """
    n = check_counts("counts", counts)
    if n.ndim != 1 or n.size < 2:
        raise ValueError(f"counts must be a 1-d array over C >= 2 classes, got shape {n.shape}")
    if n.sum() == 0:
        raise ValueError("counts must contain at least one answered query (M >= 1), got M=0")
    s = _check_paper_sigma(sigma, n.size)
    total = check_positive_int("num_teachers", num_teachers, maximum=MAX_COUNT)
    tol = check_real("tolerance", tolerance)
    if tol < 0:
        raise ValueError(f"tolerance must be non-negative, got {tol}")
    iters = check_nonneg_int("max_iter", max_iter, maximum=MAX_ITER)
    normalise = check_flag("normalise", normalise)
    stop_on_negative = check_flag("stop_on_negative", stop_on_negative)
    qbar = n / n.sum()
    target = qbar / np.linalg.norm(qbar) if normalise else qbar
    x, errs, used, reason = _descend(
        np.full(n.size, total / n.size), s, target, normalise, tol, iters, stop_on_negative
    )
    x = x + (total - x.sum()) / n.size
    return PaperReconstruction(
        votes=x,
        losses=np.asarray(errs, dtype=np.float64),
        iterations=used,
        stop_reason=reason,
        counts=n,
        sigma=s,
        num_teachers=total,
        normalise=bool(normalise),
        tolerance=tol,
        max_iter=iters,
    )


def _descend(
    x: np.ndarray,
    s: float,
    target: np.ndarray,
    normalise: bool,
    tol: float,
    iters: int,
    stop_on_negative: bool,
) -> tuple[np.ndarray, list[float], int, str]:
    """The released code's step schedule from ``x`` (module docstring).

    Returns:
        ``(x, losses, gradient evaluations, stop reason)``; ``losses`` holds the loss after
        each accepted step, the first at the start.
    """
    errs = [math.inf]
    big = True
    err = math.inf
    reason = "max-iter"
    used = 0
    for i in range(iters):
        loss_x, grads = _loss_and_grad(x, s, target, normalise)
        used += 1
        if i == 0:
            err = loss_x
        if err > errs[-1]:
            reason = "loss-increased"
            break
        if err < tol:
            reason = "tolerance"
            break
        if stop_on_negative and np.any(x < 0):
            reason = "negative"
            break
        errs.append(err)
        gnorm = float(np.linalg.norm(grads))
        if gnorm == 0.0:
            reason = "tolerance"
            break
        if big:
            x10 = x - (10.0 / gnorm) * grads
            err = _loss_and_grad(x10, s, target, normalise)[0]
            if err > errs[-1]:
                big = False
            else:
                x = x10
        if not big:
            x = x - (1.0 / gnorm) * grads
            err = _loss_and_grad(x, s, target, normalise)[0]
            if err > errs[-1] or err < tol or (stop_on_negative and np.any(x < 0)):
                reason = (
                    "loss-increased"
                    if err > errs[-1]
                    else ("tolerance" if err < tol else "negative")
                )
                break
        errs.append(err)
    return x, errs[1:], used, reason
