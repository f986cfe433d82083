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

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "argmax_probabilities",
    "argmax_probabilities_jacobian",
    "log_argmax_probabilities",
    "sample_argmax_block",
    "sample_argmax_counts",
    "sample_argmax_counts_exact",
    "sample_argmax_counts_from",
]
