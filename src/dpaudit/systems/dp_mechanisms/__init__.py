"""DP mechanisms under black-box audit: the DP-Sniper / StatDP benchmark suite, a naive
floating-point Laplace sampler, and adapters to the mechanisms of installed DP libraries.

* :mod:`._spec` — :class:`MechanismSpec` (a vectorised sampler with its claimed ε, input
  domain and, where known, true ε) and the registry :data:`MECHANISMS`.
* :mod:`._suite` — the twenty mechanisms of DP-Sniper's evaluation (Bichsel et al. 2021,
  IEEE S&P), from the definitions of StatDP (Ding et al. 2018, CCS), Lyu, Su & Li 2017
  (arXiv:1603.01699), Balcer & Vadhan 2018 (arXiv:1709.05396), RAPPOR (Erlingsson et al.
  2014) and ShadowDP (Wang et al. 2019).
* :mod:`._statdp` — StatDP's eleven benchmark algorithms (Ding et al. 2018, CCS) with its
  post-processed outputs, including the incorrect variants iSVT1–4 (tag ``"statdp"``).
* :mod:`._floating` — the naive floating-point Laplace of Mironov 2012 (CCS) and the
  membership test that refutes it.
* :mod:`._libraries` — OpenDP and Google's python-dp, imported lazily (the
  ``mechanism-libs`` extra).

Importing this package registers the suite (tag ``"dp-sniper"``), StatDP's list (tag
``"statdp"``), ``"naive-float-laplace"``
(tag ``"floating-point"``) and the library adapters (tag ``"library"``) in
:data:`MECHANISMS`.

Example:
    >>> spec = MECHANISMS.get("laplace")
    >>> spec.claimed_epsilon, spec.true_epsilon
    (0.1, 0.1)
    >>> len(MECHANISMS.names("dp-sniper")), len(MECHANISMS.names("statdp"))
    (20, 11)
"""

from dpaudit.systems.dp_mechanisms._spec import MECHANISMS, MechanismSpec
from dpaudit.systems.dp_mechanisms._suite import (
    geometric_pmf,
    noisy_max_true_epsilon,
    rappor_bits,
    rappor_true_epsilon,
    suite,
)

# isort: split
from dpaudit.systems.dp_mechanisms._statdp import statdp_suite

# isort: split
from dpaudit.systems.dp_mechanisms._floating import naive_laplace, naive_laplace_producible

# isort: split
from dpaudit.systems.dp_mechanisms._libraries import library_versions

__all__ = [
    "MECHANISMS",
    "MechanismSpec",
    "geometric_pmf",
    "library_versions",
    "naive_laplace",
    "naive_laplace_producible",
    "noisy_max_true_epsilon",
    "rappor_bits",
    "rappor_true_epsilon",
    "statdp_suite",
    "suite",
]
