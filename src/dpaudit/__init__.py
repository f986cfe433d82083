"""dpaudit: audit differentially private ML systems.

A DP system ships a claimed guarantee (an upper bound on ε from its accountant); dpaudit
attacks the system and turns the attack's success into a statistically valid lower bound on
ε, and puts the two side by side.

``import dpaudit`` needs only numpy and scipy; subpackages that need more import it lazily.
"""

from dpaudit._results import ConfidenceInterval

__all__ = ["ConfidenceInterval", "__version__"]
__version__ = "0.1.0"
