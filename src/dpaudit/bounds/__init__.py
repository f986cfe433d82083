"""Lower bounds from counts and scores (layer 4).

Pure statistics on what an adversary observed, each valid at its stated confidence including
every choice the audit makes on the data. ``dpaudit.bounds`` never imports
``dpaudit.accounting``: a lower bound must not be computed with the analysis it is meant to
check. The names, by concept:

* **Intervals** — exact Clopper–Pearson intervals for proportions (also at real-valued
  counts, for projections), Goodman and Sison–Glaz simultaneous multinomial intervals, and a
  bootstrap of any functional of counts.
* **Selection** — how a choice made on the data (a threshold, output set, guess count,
  abstention threshold) is paid for: :class:`Explicit` (fixed in advance), :class:`Split`
  (chosen on a random part, bounded on the rest, randomness from the bound's ``rng``),
  :class:`Bonferroni` (every candidate at level ``1 − β/m``) or :class:`MultiSplit` (the
  median over many splits, each at ``1 − β/2``; Meinshausen, Meier & Bühlmann 2009,
  arXiv:0811.2177, as in JAX-Privacy's auditing library). Every bound that chooses takes
  ``selection=`` and records it in its result as a ``SelectionRecord``;
  :func:`selection_from_name` is the one parser of the names in :data:`SELECTION_NAMES`.
* **(ε, δ) audits** — ε from the confusion counts of a rejection set or from raw attack
  scores (Chadha et al. 2024, arXiv:2402.09403, §2.2), and the Gaussian-DP μ the same
  error-rate bounds imply (Dong, Roth & Su 2022, arXiv:1905.02383).
* **RDP audits and composition** — 2-cut and k-cut lower bounds on the Rényi divergence of
  discrete outputs, with the output set fixed or chosen, bootstrap variants, the plug-in
  2-cut divergence, composition over queries and (display-only) conversion to (ε, δ)
  (Chadha et al. 2024 §4.2 and App. B; Mironov 2017, arXiv:1702.07476).
* **One-run and f-DP** — one training run with many canaries: the (ε, δ) audit of Steinke,
  Nasr & Jagielski 2023 (arXiv:2305.08846) and the Gaussian-DP audit of Mahloujifar, Melis &
  Chaudhuri 2024 (arXiv:2410.22235), and their sweeps over the number of guesses.
* **Lifted DP** — Wilson intervals that use the correlation between many random canaries
  per run (Pillutla et al. 2023, arXiv:2305.18447).
* **Label memorization** — the correct-guess-rate bound of Malek et al. 2021
  (arXiv:2106.03408, App. B) and its abstention-threshold sweep.
* **Anytime-valid audits** — test supermartingales by betting for an (ε, δ) claim from paired
  witness values, and a confidence sequence for ε valid at every stopping time (González,
  Dulce-Rubio, Ramdas & Ribero 2025, arXiv:2509.07055; Waudby-Smith & Ramdas 2023,
  arXiv:2010.09686): the sequential mode of the audits.
* **Claim checks** — whether an audit refutes a claimed (ε, δ) or RDP guarantee, with a
  p-value for the exact audits.
"""

from dpaudit._results import ConfidenceInterval

# Intervals
from dpaudit.bounds._bootstrap import BootstrapInterval, bootstrap_counts
from dpaudit.bounds._intervals import (
    SimultaneousIntervals,
    clopper_pearson,
    clopper_pearson_arrays,
    clopper_pearson_real,
    multinomial_intervals,
)

# isort: split
# Selection
from dpaudit.bounds._selection import (
    SELECTION_NAMES,
    Bonferroni,
    Explicit,
    MultiSplit,
    Selection,
    Split,
    selection_from_name,
)

# isort: split
# (ε, δ) audits
from dpaudit.bounds._epsdelta import (
    EpsDeltaAudit,
    epsilon_from_confusion,
    epsilon_from_error_rates,
    epsilon_from_rejection_set,
    epsilon_from_scores,
)
from dpaudit.bounds._gaussian_pair import GaussianPairEstimate, gaussian_pair_epsilon
from dpaudit.bounds._gdp_estimate import INTERVALS as GDP_INTERVALS
from dpaudit.bounds._gdp_estimate import GDPEstimate, gdp_estimate_from_scores
from dpaudit.bounds._gdp_rates import GDPBound, gdp_from_error_rates

# isort: split
# RDP audits and composition
from dpaudit.bounds._cuts import (
    MAX_CLASSES_K_CUT,
    MAX_CLASSES_TWO_CUT,
    RDPAudit,
    two_cut_plug_in,
)
from dpaudit.bounds._rdp import rdp_audit, rdp_k_cut, rdp_two_cut
from dpaudit.bounds._rdp_bootstrap import rdp_k_cut_bootstrap, rdp_two_cut_bootstrap
from dpaudit.bounds._rdp_compose import (
    ConvertedRDPLowerBound,
    RDPLowerBoundCurve,
    compose_rdp_lower_bounds,
    per_query_confidence_level,
    rdp_lower_bound_to_dp,
)

# isort: split
# One-run and f-DP
from dpaudit.bounds._fdp import (
    FDPOneRunResult,
    fdp_one_run_epsilon,
    fdp_one_run_epsilon_from_scores,
    fdp_one_run_sweep,
    fdp_rejects,
)
from dpaudit.bounds._one_run import (
    OneRunResult,
    one_run_epsilon,
    one_run_epsilon_from_scores,
    one_run_p_value,
    one_run_sweep,
)
from dpaudit.bounds._sweep import SweepResult, default_guess_counts, geometric_guess_counts

# isort: split
# One run, both procedures, the choice of procedure paid for (Liu et al.; Steinke et al. 2023)
from dpaudit.bounds._one_run_max import (
    OneRunBounds,
    check_membership_scores,
    membership_slots,
    one_run_bounds,
)

# isort: split
# Lifted DP
from dpaudit.bounds._lidp import (
    LiDPMoments,
    LiDPResult,
    lidp_epsilon,
    lidp_epsilon_sweep,
    lidp_moments,
)

# isort: split
# Label memorization
from dpaudit.bounds._memorization import (
    DEFAULT_MEMORIZATION_THRESHOLDS,
    LabelMemorizationResult,
    label_memorization_audit,
    label_memorization_epsilon,
    label_memorization_sweep,
)

# isort: split
# Anytime-valid (sequential) audits
from dpaudit.bounds._sequential import (
    BETTING_STRATEGIES,
    BettingEProcess,
    DPClaimEProcess,
    SequentialAudit,
    epsilon_grid,
)

# isort: split
# Claim checks
from dpaudit.bounds._violation import ViolationCheck, check_dp_claim, check_rdp_claim

__all__ = [  # noqa: RUF022 - grouped by concept, as the imports above
    # Intervals
    "BootstrapInterval",
    "ConfidenceInterval",
    "SimultaneousIntervals",
    "bootstrap_counts",
    "clopper_pearson",
    "clopper_pearson_arrays",
    "clopper_pearson_real",
    "multinomial_intervals",
    # Selection
    "SELECTION_NAMES",
    "Bonferroni",
    "Explicit",
    "MultiSplit",
    "Selection",
    "Split",
    "selection_from_name",
    # (ε, δ) audits
    "GDP_INTERVALS",
    "EpsDeltaAudit",
    "GDPBound",
    "GDPEstimate",
    "GaussianPairEstimate",
    "epsilon_from_confusion",
    "epsilon_from_error_rates",
    "epsilon_from_rejection_set",
    "epsilon_from_scores",
    "gaussian_pair_epsilon",
    "gdp_estimate_from_scores",
    "gdp_from_error_rates",
    # RDP audits and composition
    "MAX_CLASSES_K_CUT",
    "MAX_CLASSES_TWO_CUT",
    "ConvertedRDPLowerBound",
    "RDPAudit",
    "RDPLowerBoundCurve",
    "compose_rdp_lower_bounds",
    "per_query_confidence_level",
    "rdp_audit",
    "rdp_k_cut",
    "rdp_k_cut_bootstrap",
    "rdp_lower_bound_to_dp",
    "rdp_two_cut",
    "rdp_two_cut_bootstrap",
    "two_cut_plug_in",
    # One-run and f-DP
    "FDPOneRunResult",
    "OneRunResult",
    "SweepResult",
    "OneRunBounds",
    "check_membership_scores",
    "membership_slots",
    "one_run_bounds",
    "default_guess_counts",
    "geometric_guess_counts",
    "fdp_one_run_epsilon",
    "fdp_one_run_epsilon_from_scores",
    "fdp_one_run_sweep",
    "fdp_rejects",
    "one_run_epsilon",
    "one_run_epsilon_from_scores",
    "one_run_p_value",
    "one_run_sweep",
    # Lifted DP
    "LiDPMoments",
    "LiDPResult",
    "lidp_epsilon",
    "lidp_epsilon_sweep",
    "lidp_moments",
    # Label memorization
    "DEFAULT_MEMORIZATION_THRESHOLDS",
    "LabelMemorizationResult",
    "label_memorization_audit",
    "label_memorization_epsilon",
    "label_memorization_sweep",
    # Anytime-valid audits
    "BETTING_STRATEGIES",
    "BettingEProcess",
    "DPClaimEProcess",
    "SequentialAudit",
    "epsilon_grid",
    # Claim checks
    "ViolationCheck",
    "check_dp_claim",
    "check_rdp_claim",
]
