"""Label-DP mechanisms as maths: label noising, Bayesian posteriors, simplex projection.

Malek, Mironov, Prasad, Shilov & Tramèr 2021, "Antipodes of Label Differential Privacy: PATE
and ALIBI" (arXiv:2106.03408), §5 and App. D. A label y ∈ {0, …, C−1} is released as

* **Soft randomized response** ``o = e_y + noise`` (Laplace of scale b: ALIBI; Gaussian of
  standard deviation σ: "AGIBI"), then post-processed (privacy is kept by post-processing):

  - Bayesian post-processing (Eq. 1–3 and App. D.2, Eq. 4–5): with a prior π over the classes
    (uniform, or the current model's softmax output),
    ``P(y = c | o) = softmax_c(ℓ_c(o) + log π_c)`` with the per-class log-likelihood
    ``ℓ_c(o) = (|o_c| − |o_c − 1|)/b`` for Laplace (Eq. 3: ``−‖o − e_c‖₁/b`` up to a term
    constant in c) and ``ℓ_c(o) = o_c/σ²`` for Gaussian noise (Eq. 5, since
    ``‖o − e_c‖² = ‖o‖² − 2o_c + 1``). The authors' code divides by σ instead of σ² for the
    Gaussian posterior; that is not the posterior, and is not what this module computes.
  - uninformed post-processing (App. D.1, Alg. 4): the Euclidean projection onto the
    probability simplex (Duchi, Shalev-Shwartz, Singer & Chandra 2008, ICML, Fig. 1).

* **Randomized response** over C classes (Warner 1965; Ghazi et al. 2021, arXiv:2102.06062):
  keep y with probability ``e^ε/(e^ε + C − 1)``, else a uniformly random other label.

Example:
    >>> laplace_label_posterior([0.9, 0.3, -0.2], 0.5).round(6).tolist()
    [0.894421, 0.08114, 0.024439]
    >>> project_to_simplex([1.7, -0.4, 0.1]).tolist()
    [1.0, 0.0, 0.0]
"""

from __future__ import annotations

import math
import sys

import numpy as np
from scipy import special

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_array, check_positive, check_positive_int, check_scale
from dpaudit.mechanisms.values import GaussianLabels, LaplaceLabels, RandomizedResponse

__all__ = [
    "check_labels",
    "gaussian_label_log_likelihood",
    "gaussian_label_posterior",
    "label_log_likelihood",
    "label_posterior",
    "laplace_label_log_likelihood",
    "laplace_label_posterior",
    "noise_labels",
    "project_to_simplex",
]


def check_labels(name: str, labels: ArrayLike, num_classes: int) -> IntArray:
    """Integer class labels in ``0..num_classes−1`` (1-d), with ``num_classes ≥ 2``.

    Raises:
        ValueError: C < 2, a label out of range, a non-integer label, or not 1-d.
        TypeError: non-numeric input.

    Example:
        >>> check_labels("y", [0, 2], 3).tolist()
        [0, 2]
    """
    c = check_positive_int("num_classes", num_classes)
    if c < 2:
        raise ValueError(f"num_classes must be at least 2, got {c}")
    arr = check_array(name, labels, ndim=1, allow_empty=True)
    if np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must be integer class labels, got non-integer values")
    if arr.size and (arr.min() < 0 or arr.max() > c - 1):
        bad = arr[(arr < 0) | (arr > c - 1)][0]
        raise ValueError(f"{name} must be class labels in [0, {c - 1}], got {bad:g}")
    return arr.astype(np.int64)


def _outputs(outputs: ArrayLike) -> FloatArray:
    arr = check_array("outputs", outputs, ndim_min=1)
    if arr.shape[-1] < 2:
        raise ValueError(f"outputs must have at least 2 classes in the last axis, got {arr.shape}")
    return arr


def laplace_label_log_likelihood(outputs: ArrayLike, scale: float) -> FloatArray:
    """Per-class log-likelihood of a Laplace-noised one-hot label, up to a constant in c.

    ``ℓ_c(o) = (|o_c| − |o_c − 1|)/b`` (Malek et al. 2021, arXiv:2106.03408, Eq. 2–3: the
    density of ``o`` given ``y = c`` is ∝ ``exp(−‖o − e_c‖₁/b)``).

    Args:
        outputs: noisy one-hot labels ``(..., C)``.
        scale: Laplace scale b > 0.

    Returns:
        ``(..., C)`` log-likelihoods.

    Raises:
        TypeError: non-real outputs or scale.
        ValueError: non-finite outputs, fewer than 2 classes, b outside the supported range
            ``[1e-100, 1e100]`` (:data:`dpaudit._validate.SCALE_RANGE`; since
            ``|o_c| − |o_c − 1|`` lies in [−1, 1], the result is then finite).

    Example:
        >>> laplace_label_log_likelihood([1.5, -0.5], 0.5).tolist()
        [2.0, -2.0]
    """
    o = _outputs(outputs)
    b = check_scale("scale", scale)
    return (np.abs(o) - np.abs(o - 1.0)) / b


def gaussian_label_log_likelihood(outputs: ArrayLike, sigma: float) -> FloatArray:
    """Per-class log-likelihood of a Gaussian-noised one-hot label, up to a constant in c.

    ``ℓ_c(o) = o_c/σ²`` (Malek et al. 2021, arXiv:2106.03408, App. D.2, Eq. 4–5).

    Args:
        outputs: noisy one-hot labels ``(..., C)``.
        sigma: noise standard deviation σ > 0.

    Returns:
        ``(..., C)`` log-likelihoods.

    Raises:
        TypeError: non-real outputs or sigma.
        ValueError: non-finite outputs, fewer than 2 classes, σ outside the supported range
            ``[1e-100, 1e100]`` (:data:`dpaudit._validate.SCALE_RANGE`), or outputs so large
            that ``o_c/σ²`` exceeds the float64 range.

    Example:
        >>> gaussian_label_log_likelihood([0.5, 0.0], 0.5).tolist()
        [2.0, 0.0]
    """
    o = _outputs(outputs)
    s = check_scale("sigma", sigma)
    largest = float(np.abs(o).max())
    if largest > sys.float_info.max * (s * s):  # Python floats: no overflow warning
        raise ValueError(
            f"outputs / sigma**2 exceeds the float64 range: |outputs| reaches {largest:g} "
            f"with sigma={s:g}"
        )
    return o / (s * s)


def label_posterior(log_likelihood: ArrayLike, prior: ArrayLike | None = None) -> FloatArray:
    """Bayes' rule over the classes: ``softmax_c(ℓ_c + log π_c)``.

    Malek et al. 2021 (arXiv:2106.03408), Eq. 1.

    Args:
        log_likelihood: ``(..., C)`` per-class log-likelihoods ℓ (any additive constant per row).
        prior: ``(..., C)`` (or ``(C,)``) non-negative prior weights π, normalised per row; None
            for the uniform prior. Zero weight gives zero posterior probability.

    Returns:
        ``(..., C)`` posterior probabilities.

    Raises:
        ValueError: non-finite log-likelihoods; a negative prior, a prior row summing to 0, or
            shapes that do not broadcast.

    Example:
        >>> label_posterior([0.0, 0.0], [0.25, 0.75]).round(12).tolist()
        [0.25, 0.75]
    """
    ll = check_array("log_likelihood", log_likelihood, ndim_min=1)
    if prior is None:
        return special.softmax(ll, axis=-1)
    pi = check_array("prior", prior, ndim_min=1, nonneg=True)
    if pi.shape[-1] != ll.shape[-1]:
        raise ValueError(f"prior must have {ll.shape[-1]} classes, got shape {pi.shape}")
    total = pi.sum(axis=-1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError("every prior row must have positive total weight")
    try:
        np.broadcast_shapes(ll.shape, pi.shape)
    except ValueError:
        raise ValueError(
            f"prior of shape {pi.shape} does not broadcast against {ll.shape}"
        ) from None
    with np.errstate(divide="ignore"):
        log_pi = np.log(pi / total)
    return special.softmax(ll + log_pi, axis=-1)


def laplace_label_posterior(
    outputs: ArrayLike, scale: float, prior: ArrayLike | None = None
) -> FloatArray:
    """ALIBI's posterior ``softmax_c((|o_c| − |o_c − 1|)/b + log π_c)``.

    Malek et al. 2021 (arXiv:2106.03408), Eq. 3.

    Args:
        outputs: noisy one-hot labels ``(..., C)``.
        scale: Laplace scale b > 0.
        prior: prior π (None: uniform).

    Returns:
        ``(..., C)`` posterior probabilities.

    Example:
        >>> laplace_label_posterior([0.9, 0.3, -0.2], 0.5, [0.2, 0.5, 0.3]).round(6).tolist()
        [0.78878, 0.178891, 0.032329]
    """
    return label_posterior(laplace_label_log_likelihood(outputs, scale), prior)


def gaussian_label_posterior(
    outputs: ArrayLike, sigma: float, prior: ArrayLike | None = None
) -> FloatArray:
    """AGIBI's posterior ``softmax_c(o_c/σ² + log π_c)`` (σ², not σ).

    Malek et al. 2021 (arXiv:2106.03408), App. D.2, Eq. 5.

    Args:
        outputs: noisy one-hot labels ``(..., C)``.
        sigma: noise standard deviation σ > 0.
        prior: prior π (None: uniform).

    Returns:
        ``(..., C)`` posterior probabilities.

    Example:
        >>> gaussian_label_posterior([0.9, 0.3, -0.2], 0.7).round(6).tolist()
        [0.714364, 0.209957, 0.075679]
    """
    return label_posterior(gaussian_label_log_likelihood(outputs, sigma), prior)


def label_log_likelihood(mechanism: LaplaceLabels | GaussianLabels, outputs: ArrayLike):
    """The per-class log-likelihood of a soft-RR mechanism value's outputs.

    Raises:
        TypeError: a mechanism that does not release noisy one-hot labels.

    Example:
        >>> label_log_likelihood(LaplaceLabels(0.5), [1.5, -0.5]).tolist()
        [2.0, -2.0]
    """
    if isinstance(mechanism, LaplaceLabels):
        return laplace_label_log_likelihood(outputs, mechanism.scale)
    if isinstance(mechanism, GaussianLabels):
        return gaussian_label_log_likelihood(outputs, mechanism.sigma)
    raise TypeError(
        f"mechanism must be LaplaceLabels or GaussianLabels, got {type(mechanism).__name__}"
    )


def project_to_simplex(values: ArrayLike, total: float = 1.0) -> FloatArray:
    """Euclidean projection onto ``{x ≥ 0, Σ x = total}``, row by row along the last axis.

    Duchi, Shalev-Shwartz, Singer & Chandra 2008 (ICML), Fig. 1; Malek et al. 2021
    (arXiv:2106.03408), App. D.1, Alg. 4: sort descending into u,
    ``ρ = max{j : u_j − (Σ_{r≤j} u_r − total)/j > 0}``, ``θ = (Σ_{r≤ρ} u_r − total)/ρ``,
    ``x = max(values − θ, 0)``.

    Args:
        values: a 1-d array, or ``(..., C)`` rows.
        total: the simplex scale (> 0).

    Returns:
        The projection, same shape.

    Raises:
        ValueError: empty or non-finite values, total ≤ 0.

    Example:
        >>> project_to_simplex([0.9, 0.3, -0.2, 0.5]).round(7).tolist()
        [0.6666667, 0.0666667, 0.0, 0.2666667]
    """
    y = check_array("values", values, ndim_min=1)
    s = check_positive("total", total)
    u = -np.sort(-y, axis=-1)
    css = np.cumsum(u, axis=-1) - s
    ind = np.arange(1, y.shape[-1] + 1, dtype=np.float64)
    cond = u - css / ind > 0
    # ρ is the last index where the condition holds (it holds at j = 1 always).
    rho = y.shape[-1] - np.argmax(cond[..., ::-1], axis=-1)
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.maximum(y - theta, 0.0)


def _rr_labels(
    labels: IntArray, mechanism: RandomizedResponse, gen: np.random.Generator
) -> IntArray:
    c = mechanism.num_classes
    keep = gen.random(labels.size) < 1.0 / (1.0 + (c - 1) * math.exp(-mechanism.epsilon))
    other = gen.integers(0, c - 1, size=labels.size)
    other = other + (other >= labels)
    return np.where(keep, labels, other).astype(np.int64)


def noise_labels(
    mechanism: LaplaceLabels | GaussianLabels | RandomizedResponse,
    labels: ArrayLike,
    num_classes: int,
    *,
    rng: RngLike = None,
) -> np.ndarray:
    """Release labels through a label-DP mechanism value, once per label.

    * :class:`LaplaceLabels`: ``e_y + Lap(b)^C`` (ALIBI, Malek et al. 2021 Alg. 3);
    * :class:`GaussianLabels`: ``e_y + N(0, σ²)^C`` (App. D.2);
    * :class:`RandomizedResponse`: C-ary ε-RR (Warner 1965).

    Args:
        mechanism: the mechanism value.
        labels: ``(n,)`` class labels in ``0..C−1``.
        num_classes: C ≥ 2 (must equal ``mechanism.num_classes`` for RR).
        rng: randomness of the noise.

    Returns:
        ``(n, C)`` float64 noisy one-hot labels, or ``(n,)`` int64 labels for RR.

    Raises:
        ValueError: labels out of range, C < 2, C different from the RR mechanism's.
        TypeError: not a label mechanism value.

    Example:
        >>> noise_labels(RandomizedResponse(50.0, 3), [0, 2], 3, rng=0).tolist()
        [0, 2]
    """
    y = check_labels("labels", labels, num_classes)
    c = int(num_classes)
    gen = as_generator(rng)
    if isinstance(mechanism, RandomizedResponse):
        if mechanism.num_classes != c:
            raise ValueError(
                f"num_classes={c} differs from the mechanism's num_classes={mechanism.num_classes}"
            )
        return _rr_labels(y, mechanism, gen)
    onehot = np.zeros((y.size, c))
    onehot[np.arange(y.size), y] = 1.0
    if isinstance(mechanism, LaplaceLabels):
        return onehot + gen.laplace(0.0, mechanism.scale, size=onehot.shape)
    if isinstance(mechanism, GaussianLabels):
        return onehot + mechanism.sigma * gen.standard_normal(onehot.shape)
    raise TypeError(f"not a label mechanism value: {type(mechanism).__name__}")
