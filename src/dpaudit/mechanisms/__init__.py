"""DP primitives as maths (layer 2): the Gaussian noisy argmax and simple mechanisms."""

from dpaudit.mechanisms.noisy_argmax import (
    DEFAULT_BLOCK_SIZE,
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

__all__ = [
    "DEFAULT_BLOCK_SIZE",
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
