"""DP-SGD implementations as systems under audit: the correct one and the bugs that shipped.

* :mod:`._probe` — the probe problem (records that are their own gradients), a reusable
  :class:`Session` per variant and dataset, and the white-box :class:`Transcript`.
* :mod:`._catalogue` — :data:`DPSGD_VARIANTS`, the registry of variants.

torch and opacus are imported only when a session first trains.
"""

from dpaudit.systems.dpsgd_variants._catalogue import DPSGD_VARIANTS, DPSGDVariant, ProbeData
from dpaudit.systems.dpsgd_variants._probe import ACCOUNTANTS, ProbeSetting, Session, Transcript

__all__ = [
    "ACCOUNTANTS",
    "DPSGD_VARIANTS",
    "DPSGDVariant",
    "ProbeData",
    "ProbeSetting",
    "Session",
    "Transcript",
]
