"""DataSynthesizer 0.1.13's PrivBayes as systems under audit, run in dpaudit's environment.

PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017, "PrivBayes: Private Data
Release via Bayesian Networks", ACM TODS 42(4); SIGMOD 2014; no arXiv version) as DataSynthesizer
0.1.13 implements it (Ping, Stoyanovich & Howe 2017, "DataSynthesizer: Privacy-Preserving
Synthetic Datasets", SSDBM; its correlated attribute mode). The library states ε and splits
it in halves:

* ε/2 on the network: a greedy search of d − 1 steps, each an exponential mechanism over
  (child, parents) pairs scored by mutual information with ε/(2(d − 1)) (PrivBayes Alg. 4 and
  Lemma 1 for the score's sensitivity);
* ε/2 on the d − k noisy count vectors it releases (the first k + 1 attributes' joint, then
  each further attribute with its parents): Laplace noise of scale (d − k)/(ε/2) on counts
  of sensitivity 1 (add/remove neighbours).

So the claim is pure ε-DP, (ε, 0). The installed library departs from the analysis in two
places its source shows (the violations the audit reproduces): every noisy count vector spans
``range(max(code) + 1)`` of the *private* encoded columns even when a public domain is given,
and the exponential mechanism's sensitivity uses the private row count and whether each
column is binary *in the private data*. (Its independent-attribute histograms, noised with a
further ε, enter the synthetic table only for parent values without a conditional, which the
correlated mode never produces; the saved description also holds the exact row count.)

Registered generators (library ``"datasynthesizer"``, an extra of the package:
``pip install 'dpaudit[datasynthesizer]'``):

* ``datasynthesizer-privbayes`` — as installed, given the public domain (degree ``k`` = 1 by
  default; the cell's options may set ``k``);
* ``datasynthesizer-privbayes-quiet-noise`` — the planted bug: the Laplace noise's scale 0.1×
  what the library states;
* ``datasynthesizer-privbayes-public-support`` — the fix of the support (the control of the
  first violation): every noisy count vector spans the public domain;
* ``datasynthesizer-privbayes-public-sensitivity`` — the fix of the sensitivity (the control
  of the second): the exponential mechanism's sensitivity from a public row count and the
  public domain's binary columns.

Example:
    >>> g = PrivBayesGenerator(GeneratorCell("datasynthesizer-privbayes", 1.0, 1e-2))
    >>> c = g.claim()
    >>> (c.epsilon, c.delta)
    (1.0, 0.0)
    >>> round(g.implied_mu(0.5), 4)  # 2 Φ⁻¹(e/(1 + e))
    1.232
"""

from __future__ import annotations

from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.synthetic._generators import (
    GENERATORS,
    LIBRARIES,
    SYSTEM_TAG,
    GeneratorCell,
    GeneratorSpec,
    PureEpsilonGenerator,
)
from dpaudit.systems.synthetic._inprocess import InProcessLibrary

__all__ = ["PRIVBAYES_GENERATORS", "PrivBayesGenerator"]

LIBRARIES["datasynthesizer"] = InProcessLibrary(
    "datasynthesizer", "DataSynthesizer", "DataSynthesizer",
    "dpaudit.systems.synthetic._handler_datasynthesizer", "datasynthesizer",
)  # fmt: skip


class PrivBayesGenerator(PureEpsilonGenerator):
    """DataSynthesizer's PrivBayes: a pure ε-DP claim (the module docstring)."""

    MECHANISM = "PrivBayes"
    BUDGET = "ε/2 on the network, ε/2 on the noisy counts"


_SOURCE = ("Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017, PrivBayes (ACM TODS 42(4)), as "
           "DataSynthesizer 0.1.13 implements it (correlated attribute mode)")  # fmt: skip
_QUIET = "the Laplace noise's scale is 0.1× what the library states and accounts"
_WB = ("measurements", "selections")

#: The PrivBayes entries (also in :data:`GENERATORS` and :data:`dpaudit.systems.SYSTEMS`).
PRIVBAYES_GENERATORS: tuple[GeneratorSpec, ...] = (
    GeneratorSpec("datasynthesizer-privbayes", "datasynthesizer", "privbayes",
                  "PrivBayes (DataSynthesizer), as installed", _SOURCE,
                  options=(("k", 1),), white_box=_WB),
    GeneratorSpec("datasynthesizer-privbayes-quiet-noise", "datasynthesizer", "privbayes",
                  "PrivBayes with its noise scaled down 10× (planted bug)", _SOURCE, bug=_QUIET,
                  noise_scale=0.1, options=(("k", 1),), white_box=_WB),
    GeneratorSpec("datasynthesizer-privbayes-public-support", "datasynthesizer", "privbayes",
                  "PrivBayes with the noisy counts over the public domain (the fix; control)",
                  _SOURCE, options=(("k", 1), ("support", "public")), white_box=_WB),
    GeneratorSpec("datasynthesizer-privbayes-public-sensitivity", "datasynthesizer",
                  "privbayes", "PrivBayes with the network's sensitivity from public values "
                  "(the fix; control)", _SOURCE,
                  options=(("k", 1), ("sensitivity", "public")), white_box=_WB),
    GeneratorSpec("datasynthesizer-privbayes-public-support-quiet-noise", "datasynthesizer",
                  "privbayes", "PrivBayes with the noisy counts over the public domain and "
                  "its noise scaled down 10× (planted bug of the fixed generator: every noisy "
                  "count is defined, so white-box statistics read each record's cell)", _SOURCE,
                  bug=_QUIET, noise_scale=0.1, options=(("k", 1), ("support", "public")),
                  white_box=_WB),
)  # fmt: skip

for _spec in PRIVBAYES_GENERATORS:
    GENERATORS.register(_spec.name, _spec)
    SYSTEMS.register(_spec.name, SystemFactory(GeneratorCell, PrivBayesGenerator),
                     tags=(SYSTEM_TAG,))  # fmt: skip
