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
_LOWER_BOUNDS_I: list[str] = []
# --- end Lower bounds I -------------------------------------------------------------------

# --- Lower bounds II (issue 5): names added here ------------------------------------------
_LOWER_BOUNDS_II: list[str] = []
# --- end Lower bounds II ------------------------------------------------------------------

__all__ = [
    "ConfidenceInterval",
    "clopper_pearson",
    "clopper_pearson_arrays",
    *_LOWER_BOUNDS_I,
    *_LOWER_BOUNDS_II,
]
