"""DP primitives as maths (layer 2): mechanism values, the noisy argmax, simple mechanisms.

* Mechanism values (:mod:`dpaudit.mechanisms.values`): frozen, validated descriptions of each
  mechanism — :class:`GNMax`, :class:`ConfidentGNMax`, :class:`LNMax`,
  :class:`SubsampledGaussian`, :class:`LaplaceLabels`, :class:`GaussianLabels`,
  :class:`RandomizedResponse`. Systems answer with them; accounting computes claims from them.
* The Gaussian noisy argmax: exact output probabilities and their Jacobian, samplers, and the
  per-block sampling kernels ``f(size, seed) -> counts`` that :func:`dpaudit.engine.run_blocks`
  runs (:class:`ArgmaxBlock`, :class:`NoisyArgmaxBlock`, :class:`MultinomialBlock`).
* Textbook mechanisms with known privacy curves (Gaussian, Laplace, randomized response).
* Label-DP maths (:mod:`dpaudit.mechanisms._labels`; Malek et al. 2021, arXiv:2106.03408):
  :func:`noise_labels`, the Bayesian posteriors of ALIBI / AGIBI
  (:func:`laplace_label_posterior`, :func:`gaussian_label_posterior`, :func:`label_posterior`)
  and the simplex projection :func:`project_to_simplex` (Duchi et al. 2008).
* Group privacy of the noisy argmax (:mod:`dpaudit.mechanisms._group`; Chadha et al. 2024,
  arXiv:2402.09403, App. C): histograms at distance m (:func:`group_histograms`; their exact
  worst-case RDP is :func:`dpaudit.divergence.worst_case_group_renyi`), the Gaussian m² rule
  (:func:`gaussian_group_rdp`), Mironov's generic conversion (:func:`generic_group_rdp`) and
  the normalisation of a group lower bound (:func:`normalise_group_bound`).
"""

from dpaudit.mechanisms._group import (
    GROUP_RELATIONS,
    NORMALISATIONS,
    gaussian_group_rdp,
    generic_group_rdp,
    group_histograms,
    normalise_group_bound,
)
from dpaudit.mechanisms._kernels import MultinomialBlock, NoisyArgmaxBlock
from dpaudit.mechanisms._labels import (
    check_labels,
    gaussian_label_log_likelihood,
    gaussian_label_posterior,
    label_log_likelihood,
    label_posterior,
    laplace_label_log_likelihood,
    laplace_label_posterior,
    noise_labels,
    project_to_simplex,
)
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
    "GROUP_RELATIONS",
    "NORMALISATIONS",
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
    "check_labels",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_group_rdp",
    "gaussian_label_log_likelihood",
    "gaussian_label_posterior",
    "gaussian_renyi",
    "generic_group_rdp",
    "group_histograms",
    "label_log_likelihood",
    "label_posterior",
    "laplace_delta",
    "laplace_label_log_likelihood",
    "laplace_label_posterior",
    "laplace_renyi",
    "log_argmax_probabilities",
    "noise_labels",
    "normalise_group_bound",
    "project_to_simplex",
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
