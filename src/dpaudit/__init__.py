"""dpaudit: audit differentially private ML systems.

A DP system ships a claimed guarantee (an upper bound on ε, from its accountant); dpaudit
attacks the system, turns the attack's success into a statistically valid lower bound on ε,
and puts the two side by side.

Every audit workflow returns the same :class:`AuditResult`: one :class:`AuditEntry` per
attacked configuration, each with its :class:`LowerBound`, the system's :class:`Claim` (s),
the exact value where known, the :class:`Gap`, and how every data-dependent choice was paid
for (:class:`SelectionRecord`).

``import dpaudit`` needs only numpy and scipy; subpackages that need more import it lazily.
"""

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    ConfidenceInterval,
    Curve,
    Gap,
    LowerBound,
    SelectionRecord,
)

__all__ = [
    "AuditEntry",
    "AuditResult",
    "Claim",
    "ConfidenceInterval",
    "Curve",
    "Gap",
    "LowerBound",
    "SelectionRecord",
    "__version__",
]
__version__ = "0.1.0"
