"""DP synthetic-data generators as systems under audit, run as installed.

* :mod:`._generators` — :class:`SyntheticGenerator` (the system), its settings cell
  :class:`GeneratorCell`, the public :class:`TabularDomain` every table is checked against,
  and :data:`GENERATORS` (each also a system in :data:`dpaudit.systems.SYSTEMS`, tag
  ``"synthetic-data"``): smartnoise-synth's MST, AIM and MWEM (:class:`MWEMGenerator`, a
  pure ε-DP claim), its GANs DPCTGAN, PATECTGAN, DPGAN and PATEGAN (:class:`GANGenerator`,
  the (ε, δ) of the library's own accountants) and dpmm's MST and AIM, their planted bugs and
  known violations.
  The libraries run out of process in environments of their own
  (:mod:`dpaudit.systems._external`; ``make venv-smartnoise``, ``make venv-smartnoise-gan``,
  ``make venv-dpmm``).
* :mod:`._privbayes` — DataSynthesizer 0.1.13's PrivBayes (:class:`PrivBayesGenerator`, a
  pure ε-DP claim), imported into dpaudit's own environment as an extra
  (:mod:`._inprocess`; ``pip install 'dpaudit[datasynthesizer]'``), its planted bug and the
  fixes that control its two violations.
* ``_handler_*.py`` — the scripts the libraries' workers load (not imported by dpaudit;
  DataSynthesizer's runs in this process, imported when a run starts); ``_handler_records.py``
  holds the record layouts the smartnoise and dpmm handlers share, ``_handler_patectgan.py``
  PATECTGAN's student recording and the fix of its shared network (the GAN handler's).
"""

from dpaudit.systems.synthetic._generators import (
    GENERATORS,
    LIBRARIES,
    SYSTEM_TAG,
    GANGenerator,
    GeneratorCell,
    GeneratorRuns,
    GeneratorSpec,
    MWEMGenerator,
    SyntheticGenerator,
    TabularDomain,
)
from dpaudit.systems.synthetic._privbayes import PRIVBAYES_GENERATORS, PrivBayesGenerator

__all__ = [
    "GENERATORS",
    "LIBRARIES",
    "PRIVBAYES_GENERATORS",
    "SYSTEM_TAG",
    "GANGenerator",
    "GeneratorCell",
    "GeneratorRuns",
    "GeneratorSpec",
    "MWEMGenerator",
    "PrivBayesGenerator",
    "SyntheticGenerator",
    "TabularDomain",
]
