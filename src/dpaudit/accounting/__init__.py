"""Upper bounds: privacy accounting (layer 3) — the guarantee a system claims.

An audit's lower bound is read against this. :func:`mechanism_rdp` computes the claim of a
mechanism value (:mod:`dpaudit.mechanisms.values`) under each analysis, in one place.
Everything here is maths on the mechanism's parameters (and, for data-dependent analyses,
its vote histograms); it never imports
``dpaudit.bounds``: a lower bound must not be computed with the analysis it checks.

* :class:`RDPCurve` over :data:`DEFAULT_ORDERS` (one documented grid), composed with ``+``
  and ``*``, converted by :func:`rdp_to_dp` (standard or Balle et al. 2020).
* GNMax (PATE): :func:`gnmax_rdp` data-independent / data-dependent (union or exact q̃),
  with the validity of Papernot et al. 2018 Thm 6 reported by :func:`gnmax_rdp_details`.
* Confident GNMax: :func:`threshold_rdp`, :func:`answer_probability`,
  :func:`confident_gnmax_cost`; LNMax: :func:`lnmax_rdp`.
* Smooth sensitivity and the GNSS release: :func:`gnmax_local_sensitivity`,
  :func:`threshold_local_sensitivity`, :func:`smooth_sensitivity`, :func:`gnss_release`.
* Fixed-size batches against their Poisson accounting (Chua et al. 2024):
  :func:`with_replacement_gaussian_epsilon`, :func:`shuffled_gaussian_epsilon`.
* Subsampled Gaussian (Private-kNN) via dp-accounting: :func:`subsampled_gaussian_rdp`,
  :func:`private_knn_rdp`, :func:`private_knn_epsilon`.
* Label DP: :func:`laplace_label_epsilon`, :func:`gaussian_label_rdp`,
  :func:`randomized_response`, :func:`randomized_response_epsilon`.
* :func:`noisy_argmax_cost`: GNMax / Confident GNMax per step with Thm 6's fallbacks (what
  :func:`mechanism_rdp`, the ledger and :func:`pate_accounting` read).
* :func:`pate_accounting`: a batch of queries under every analysis and conversion.
* :class:`PrivacyLedger`: charge queries (atomically: thread-safe), report ε(δ), refuse past a
  budget, JSON round-trip that refuses unreachable states.
"""

from dpaudit.accounting._batches import (
    MonteCarloEpsilon,
    shuffled_gaussian_epsilon,
    with_replacement_gaussian_epsilon,
)
from dpaudit.accounting._confident import (
    ConfidentGNMaxCost,
    answer_log_probability,
    answer_probability,
    confident_gnmax_cost,
    threshold_rdp,
)
from dpaudit.accounting._curve import RDPCurve
from dpaudit.accounting._gnmax import (
    GNMaxRDP,
    gnmax_log_q,
    gnmax_rdp,
    gnmax_rdp_details,
    gnmax_rdp_from_log_q,
)
from dpaudit.accounting._label import (
    RandomizedResponse,
    gaussian_label_rdp,
    laplace_label_epsilon,
    randomized_response,
    randomized_response_epsilon,
)
from dpaudit.accounting._ledger import PrivacyLedger
from dpaudit.accounting._lnmax import LNMaxRDP, lnmax_log_q, lnmax_rdp, lnmax_rdp_details
from dpaudit.accounting._mechanisms import (
    NoisyArgmaxCost,
    expected_data_dependent_rdp,
    mechanism_epsilon,
    mechanism_rdp,
    noisy_argmax_cost,
)
from dpaudit.accounting._orders import DEFAULT_ORDERS
from dpaudit.accounting._pate import PateAccounting, PateEpsilon, pate_accounting
from dpaudit.accounting._profile import PROFILE_DIRECTIONS, subsampled_gaussian_delta
from dpaudit.accounting._smooth import (
    GNMaxPlateau,
    GNSSRelease,
    SmoothSensitivityConditions,
    gnmax_local_sensitivity,
    gnmax_plateau,
    gnss_rdp,
    gnss_release,
    pate_local_sensitivity,
    smooth_sensitivity,
    smooth_sensitivity_conditions,
    threshold_local_sensitivity,
)
from dpaudit.accounting._subsampled import (
    private_knn_epsilon,
    private_knn_rdp,
    subsampled_gaussian_rdp,
)
from dpaudit.conversions import DPConversion, dp_to_delta, rdp_to_dp

__all__ = [
    "DEFAULT_ORDERS",
    "PROFILE_DIRECTIONS",
    "ConfidentGNMaxCost",
    "DPConversion",
    "GNMaxPlateau",
    "GNMaxRDP",
    "GNSSRelease",
    "LNMaxRDP",
    "MonteCarloEpsilon",
    "NoisyArgmaxCost",
    "PateAccounting",
    "PateEpsilon",
    "PrivacyLedger",
    "RDPCurve",
    "RandomizedResponse",
    "SmoothSensitivityConditions",
    "answer_log_probability",
    "answer_probability",
    "confident_gnmax_cost",
    "dp_to_delta",
    "expected_data_dependent_rdp",
    "gaussian_label_rdp",
    "gnmax_local_sensitivity",
    "gnmax_log_q",
    "gnmax_plateau",
    "gnmax_rdp",
    "gnmax_rdp_details",
    "gnmax_rdp_from_log_q",
    "gnss_rdp",
    "gnss_release",
    "laplace_label_epsilon",
    "lnmax_log_q",
    "lnmax_rdp",
    "lnmax_rdp_details",
    "mechanism_epsilon",
    "mechanism_rdp",
    "noisy_argmax_cost",
    "pate_accounting",
    "pate_local_sensitivity",
    "private_knn_epsilon",
    "private_knn_rdp",
    "randomized_response",
    "randomized_response_epsilon",
    "rdp_to_dp",
    "shuffled_gaussian_epsilon",
    "smooth_sensitivity",
    "smooth_sensitivity_conditions",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_rdp",
    "threshold_local_sensitivity",
    "threshold_rdp",
    "with_replacement_gaussian_epsilon",
]
