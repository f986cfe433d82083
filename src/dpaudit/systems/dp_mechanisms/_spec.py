"""What a DP mechanism under black-box audit is: a sampler and the claim that travels with it.

A mechanism is any callable ``mechanism(database, rng) -> output``; a :class:`MechanismSpec`
adds what an audit needs to be cheap and honest — a vectorised sampler
``sample(database, size, rng) -> (size, k) array``, the claimed ε (and δ), the input domain
from which neighbouring pairs are drawn (the input patterns of StatDP, Ding et al. 2018, CCS,
as used by DP-Sniper, Bichsel et al. 2021, IEEE S&P), whether neighbours differ in one entry
or in every entry by at most one (component-wise), the special output values that carry
meaning (DP-Sniper's "flags"), and, where known, the true ε and the published DP-Sniper lower
bound. :data:`MECHANISMS` holds the suite by name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._registry import Registry

__all__ = ["MECHANISMS", "MechanismSpec"]

Sampler = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


@dataclasses.dataclass(frozen=True)
class MechanismSpec:
    """A mechanism under black-box audit, with its claim and its input domain.

    Attributes:
        name: registry name (``"laplace"``, ``"svt1"`` …).
        sample: ``sample(database, size, rng) -> (size, k)`` float array of ``size``
            independent outputs on one ``database`` (a 1-d float array).
        claimed_epsilon: the ε the mechanism's analysis claims (> 0).
        dimensions: length of the database vector.
        source: the published definition (authors, year, venue / arXiv id).
        claimed_delta: δ of the claim (0: pure DP).
        true_epsilon: the exact ε where known in closed form (``inf``: not DP for any ε),
            else None.
        private: whether the claim is known to hold (False: a known violation).
        published_lower: DP-Sniper's published lower bound (logistic regression, Bichsel
            et al. 2021, eval_sp2021 reference results: confidence 90 %, two one-sided 95 %
            Clopper–Pearson bounds on 2·10⁸ fresh samples), where it has one.
        component_wise: neighbours differ in every entry by at most 1 (StatDP's notion for
            query vectors) rather than in one entry.
        low, high: the input domain (patterns are clipped to it).
        discrete: outputs take few values (exact-count attack).
        flags: special output values that mean "false"/"aborted" (one-hot features).
        features: optional ``features(outputs) -> (size, m)`` array of attack features that
            the mechanism's documentation suggests (e.g. Mironov's test); None: the defaults.
        pairs: neighbouring pairs ``((a, …), (a′, …))`` tried besides StatDP's patterns (e.g.
            for a local randomiser, where any two values are neighbours, input 0 against every
            other value of the domain).
        log_likelihood_ratio: optional ``llr(outputs, a, a′) -> (size,)`` array of
            ``ln p_{a′}(o) / p_a(o)`` in closed form from the mechanism's published definition
            (public knowledge of the mechanism, not of its randomness). When given, the audit
            scores outputs with it instead of fitting a classifier: by the Neyman–Pearson
            lemma its level sets are the most powerful events for the pair, and a threshold
            on it is still chosen on the selection split.
        note: anything a reader must know.
    """

    name: str
    sample: Sampler
    claimed_epsilon: float
    dimensions: int
    source: str
    claimed_delta: float = 0.0
    true_epsilon: float | None = None
    private: bool = True
    published_lower: float | None = None
    component_wise: bool = False
    low: float = -10.0
    high: float = 10.0
    discrete: bool = False
    flags: tuple[float, ...] = ()
    features: Callable[[np.ndarray], np.ndarray] | None = None
    pairs: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...] = ()
    log_likelihood_ratio: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if not callable(self.sample):
            raise TypeError(f"sample must be callable, got {self.sample!r}")
        eps = self.claimed_epsilon
        if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"claimed_epsilon must be a positive finite number, got {eps!r}")
        if not 0.0 <= self.claimed_delta < 1.0:
            raise ValueError(f"claimed_delta must be in [0, 1), got {self.claimed_delta!r}")
        if not isinstance(self.dimensions, int) or self.dimensions < 1:
            raise ValueError(f"dimensions must be a positive int, got {self.dimensions!r}")
        for a, b in self.pairs:
            if len(a) != self.dimensions or len(b) != self.dimensions:
                raise ValueError(f"pairs must have {self.dimensions} entries per input, got "
                                 f"{a!r}, {b!r}")  # fmt: skip
        if self.log_likelihood_ratio is not None and not callable(self.log_likelihood_ratio):
            raise TypeError(f"log_likelihood_ratio must be callable or None, got "
                            f"{self.log_likelihood_ratio!r}")  # fmt: skip

    def __call__(self, database: Any, rng: np.random.Generator) -> np.ndarray:
        """One output on ``database`` (the ``mechanism(database, rng)`` form)."""
        return self.sample(np.asarray(database, dtype=float), 1, rng)[0]


#: The mechanisms of the benchmark suite, by name (``dpaudit audit mechanism --mechanism NAME``).
MECHANISMS: Registry[MechanismSpec] = Registry("mechanism")
