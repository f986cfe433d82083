"""DP primitives as maths (layer 2): mechanism values, the noisy argmax, simple mechanisms.

* Mechanism values (:mod:`dpaudit.mechanisms.values`): frozen, validated descriptions of each
  mechanism — :class:`GNMax`, :class:`ConfidentGNMax`, :class:`LNMax`,
  :class:`SubsampledGaussian`, :class:`LaplaceLabels`, :class:`GaussianLabels`,
  :class:`RandomizedResponse`. Systems answer with them; accounting computes claims from them.
* The Gaussian noisy argmax: exact output probabilities and their Jacobian, samplers, and the
  per-block sampling kernels ``f(size, seed) -> counts`` that :func:`dpaudit.engine.run_blocks`
  runs (:class:`ArgmaxBlock`, :class:`NoisyArgmaxBlock`, :class:`MultinomialBlock`).
* Textbook mechanisms with known privacy curves (Gaussian, Laplace, randomized response).
"""

from dpaudit.mechanisms._kernels import MultinomialBlock, NoisyArgmaxBlock
from dpaudit.mechanisms.noisy_argmax import (
    DEFAULT_BLOCK_SIZE,
    ArgmaxBlock,
    argmax_probabilities,
    argmax_probabilities_jacobian,
    log_argmax_probabilities,
    sample_argmax_block,
    sample_argmax_counts,
    sample_argmax_counts_exact,
    sample_argmax_counts_from,
)
from dpaudit.mechanisms.simple import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_renyi,
    laplace_delta,
    laplace_renyi,
    randomized_response_delta,
    randomized_response_probabilities,
    randomized_response_renyi,
    sample_gaussian_mechanism,
    sample_laplace_mechanism,
    sample_randomized_response,
    sample_randomized_response_counts,
)
from dpaudit.mechanisms.values import (
    ABSTAIN,
    REFUSED,
    ConfidentGNMax,
    GaussianLabels,
    GNMax,
    LaplaceLabels,
    LNMax,
    Mechanism,
    NoisyArgmax,
    RandomizedResponse,
    SubsampledGaussian,
)

__all__ = [
    "ABSTAIN",
    "DEFAULT_BLOCK_SIZE",
    "REFUSED",
    "ArgmaxBlock",
    "ConfidentGNMax",
    "GNMax",
    "GaussianLabels",
    "LNMax",
    "LaplaceLabels",
    "Mechanism",
    "MultinomialBlock",
    "NoisyArgmax",
    "NoisyArgmaxBlock",
    "RandomizedResponse",
    "SubsampledGaussian",
    "argmax_probabilities",
    "argmax_probabilities_jacobian",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_renyi",
    "laplace_delta",
    "laplace_renyi",
    "log_argmax_probabilities",
    "randomized_response_delta",
    "randomized_response_probabilities",
    "randomized_response_renyi",
    "sample_argmax_block",
    "sample_argmax_counts",
    "sample_argmax_counts_exact",
    "sample_argmax_counts_from",
    "sample_gaussian_mechanism",
    "sample_laplace_mechanism",
    "sample_randomized_response",
    "sample_randomized_response_counts",
]
