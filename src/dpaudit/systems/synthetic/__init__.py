"""DP synthetic-data generators as systems under audit, run as installed.

* :mod:`._generators` — :class:`SyntheticGenerator` (the system), its settings cell
  :class:`GeneratorCell`, the public :class:`TabularDomain` every table is checked against,
  and :data:`GENERATORS` (each also a system in :data:`dpaudit.systems.SYSTEMS`, tag
  ``"synthetic-data"``): smartnoise-synth's MST and AIM, their planted bugs and known
  violations. The libraries run out of process in environments of their own
  (:mod:`dpaudit.systems._external`; ``make venv-smartnoise``).
* ``_handler_*.py`` — the scripts the libraries' workers load (not imported by dpaudit).
"""

from dpaudit.systems.synthetic._generators import (
    GENERATORS,
    LIBRARIES,
    SYSTEM_TAG,
    GeneratorCell,
    GeneratorRuns,
    GeneratorSpec,
    SyntheticGenerator,
    TabularDomain,
)

__all__ = [
    "GENERATORS",
    "LIBRARIES",
    "SYSTEM_TAG",
    "GeneratorCell",
    "GeneratorRuns",
    "GeneratorSpec",
    "SyntheticGenerator",
    "TabularDomain",
]
