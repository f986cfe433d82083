"""Lower bounds from counts and scores (layer 4).

Pure statistics on what an adversary observed: proportion intervals, (ε,δ) audits, Rényi-DP
2-cut/k-cut audits and their composition, one-run and f-DP one-run bounds, Lifted-DP
intervals and label-memorization bounds. Every bound is valid at its stated confidence,
including any choice the audit makes on the data (held-out split or Bonferroni).

``dpaudit.bounds`` never imports ``dpaudit.accounting``: a lower bound must not be computed
with the analysis it is meant to check.
"""

from dpaudit._results import ConfidenceInterval
from dpaudit.bounds._intervals import clopper_pearson, clopper_pearson_arrays

# --- Lower bounds I (issue 3): names added here -----------------------------------------
_LOWER_BOUNDS_I: list[str] = [
    "BootstrapInterval",
    "Bonferroni",
    "ConvertedRDPLowerBound",
    "EpsDeltaAudit",
    "Explicit",
    "RDPAudit",
    "RDPLowerBoundCurve",
    "SimultaneousIntervals",
    "Split",
    "ViolationCheck",
    "bootstrap_counts",
    "check_dp_claim",
    "check_rdp_claim",
    "compose_rdp_lower_bounds",
    "epsilon_from_confusion",
    "epsilon_from_error_rates",
    "epsilon_from_rejection_set",
    "epsilon_from_scores",
    "multinomial_intervals",
    "per_query_confidence_level",
    "rdp_audit",
    "rdp_k_cut",
    "rdp_k_cut_bootstrap",
    "rdp_lower_bound_to_dp",
    "rdp_two_cut",
    "rdp_two_cut_bootstrap",
]

from dpaudit.bounds._epsdelta import (  # noqa: E402, F401
    Bonferroni,
    EpsDeltaAudit,
    Explicit,
    Split,
    epsilon_from_confusion,
    epsilon_from_error_rates,
    epsilon_from_rejection_set,
    epsilon_from_scores,
)
from dpaudit.bounds._intervals import (  # noqa: E402, F401
    BootstrapInterval,
    SimultaneousIntervals,
    bootstrap_counts,
    multinomial_intervals,
)
from dpaudit.bounds._rdp import (  # noqa: E402, F401
    ConvertedRDPLowerBound,
    RDPAudit,
    RDPLowerBoundCurve,
    compose_rdp_lower_bounds,
    per_query_confidence_level,
    rdp_audit,
    rdp_k_cut,
    rdp_k_cut_bootstrap,
    rdp_lower_bound_to_dp,
    rdp_two_cut,
    rdp_two_cut_bootstrap,
)
from dpaudit.bounds._violation import (  # noqa: E402, F401
    ViolationCheck,
    check_dp_claim,
    check_rdp_claim,
)

# --- end Lower bounds I -------------------------------------------------------------------

# --- Lower bounds II (issue 5): names added here ------------------------------------------
# (the list comes first so that these imports form their own sorted block)
_LOWER_BOUNDS_II: list[str] = [
    "FDPOneRunResult",
    "LabelMemorizationResult",
    "LiDPMoments",
    "LiDPResult",
    "OneRunResult",
    "SweepResult",
    "default_guess_counts",
    "fdp_one_run_epsilon",
    "fdp_one_run_epsilon_from_scores",
    "fdp_one_run_sweep",
    "fdp_rejects",
    "label_memorization_audit",
    "label_memorization_epsilon",
    "label_memorization_sweep",
    "lidp_epsilon",
    "lidp_moments",
    "one_run_epsilon",
    "one_run_epsilon_from_scores",
    "one_run_p_value",
    "one_run_sweep",
]

from dpaudit.bounds._fdp import (  # noqa: E402, F401
    FDPOneRunResult,
    fdp_one_run_epsilon,
    fdp_one_run_epsilon_from_scores,
    fdp_rejects,
)
from dpaudit.bounds._lidp import (  # noqa: E402, F401
    LiDPMoments,
    LiDPResult,
    lidp_epsilon,
    lidp_moments,
)
from dpaudit.bounds._memorization import (  # noqa: E402, F401
    LabelMemorizationResult,
    label_memorization_audit,
    label_memorization_epsilon,
)
from dpaudit.bounds._one_run import (  # noqa: E402, F401
    OneRunResult,
    one_run_epsilon,
    one_run_epsilon_from_scores,
    one_run_p_value,
)
from dpaudit.bounds._sweep import (  # noqa: E402, F401
    SweepResult,
    default_guess_counts,
    fdp_one_run_sweep,
    label_memorization_sweep,
    one_run_sweep,
)

# --- end Lower bounds II ------------------------------------------------------------------

__all__ = [
    "ConfidenceInterval",
    "clopper_pearson",
    "clopper_pearson_arrays",
    *_LOWER_BOUNDS_I,
    *_LOWER_BOUNDS_II,
]
