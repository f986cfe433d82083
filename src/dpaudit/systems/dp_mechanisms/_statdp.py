"""StatDP's benchmark list, re-implemented from its published definitions.

The eleven algorithms that Ding, Wang, Wang, Zhang & Kifer 2018 ("Detecting Violations of
Differential Privacy", CCS, §6 and Algs. 1–10; the public ``statdp`` package's
``algorithms.py`` and ``examples/benchmark.py``) test: report noisy max with Laplace or
exponential noise returning the index (correct) or the value (incorrect), a noisy histogram
with the right (1/ε) or wrong (ε) Laplace scale, the sparse vector technique and four incorrect
variants iSVT1–4. Unlike DP-Sniper's versions (:mod:`._suite`), StatDP releases a *statistic*
of each run — the histogram's first bin, the number of "below" answers, or the Hamming
distance of the answers to the pattern "first half above, second half below" — and tests at
claimed ε ∈ {0.2, 0.7, 1.5}; they are registered at ε = 0.7, with 5 queries for noisy max and
the histogram and 10 for the sparse vector variants (StatDP's two input lengths), SVT with
``N = 1, T = 0.5`` and iSVT1–4 with ``N = 1, T = 1`` (its benchmark's arguments).

Correspondence with the analysed algorithms (which gives each its claim and true ε):

* iSVT1 — Lyu, Su & Li 2017 (arXiv:1603.01699) Alg. 5 (no query noise): outputs that one
  input of a pair never produces, so no finite ε.
* iSVT2 — Lyu et al. Alg. 6 (query noise that does not scale with the cut-off, no cut-off).
* iSVT3 — Lyu et al. Alg. 4 (ε₁ = ε/4, query noise 1/ε₂ with ε₂ = 3ε/4): ((1+6c)/4)·ε-DP
  with c = N = 1 (Lyu et al. Thm. 6), i.e. 7ε/4.
* iSVT4 — Lyu et al. Alg. 3 (releases the noisy query value above the threshold).

Outputs are float arrays ``(size, k)``: iSVT4's second value is the released noisy query
value, or −1000 (the flag) when every answer was "below".
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.systems.dp_mechanisms._spec import MECHANISMS, MechanismSpec
from dpaudit.systems.dp_mechanisms._suite import _noisy_max, noisy_max_true_epsilon

__all__ = ["statdp_suite"]

EPS = 0.7
_DING = "Ding, Wang, Wang, Zhang & Kifer 2018 (StatDP), CCS"
_LYU = "Lyu, Su & Li 2017, arXiv:1603.01699"
_BELOW = -1000.0  # iSVT4: no noisy value released


def _histogram_first(scale: float):
    """StatDP's ``histogram``: Laplace noise of ``scale`` on every bin, the first bin out."""

    def sample(db, size, rng):
        return db[0] + rng.laplace(0.0, scale, (size, 1))

    return sample


def _pattern(d: int) -> np.ndarray:
    """StatDP's reference answers: the first ⌊d/2⌋ queries above, the rest below."""
    return np.arange(d) < d // 2


def _first_above(above: np.ndarray) -> np.ndarray:
    """Index of the first True per row (``d`` when none): where a c = 1 run stops."""
    d = above.shape[1]
    return np.where(above.any(axis=1), np.argmax(above, axis=1), d)


def _svt(eps: float, t: float):
    """StatDP's ``SVT`` (Lyu et al. Alg. 1, c = N = 1): the number of "below" answers."""

    def sample(db, size, rng):
        rho = rng.laplace(0.0, 2.0 / eps, (size, 1))
        nu = rng.laplace(0.0, 4.0 / eps, (size, db.size))
        return _first_above(db[None, :] + nu >= t + rho).astype(float)[:, None]

    return sample


def _hamming_no_cutoff(eps: float, t: float, query_noise: bool):
    """iSVT1 (no query noise) and iSVT2 (query noise 2/ε): every query answered; the Hamming
    distance of the answers to :func:`_pattern`."""

    def sample(db, size, rng):
        rho = rng.laplace(0.0, 2.0 / eps, (size, 1))
        noisy = db[None, :]
        if query_noise:
            noisy = noisy + rng.laplace(0.0, 2.0 / eps, (size, db.size))
        above = noisy >= t + rho
        return (above != _pattern(db.size)[None, :]).sum(axis=1).astype(float)[:, None]

    return sample


def _isvt3(eps: float, t: float):
    """iSVT3 (Lyu et al. Alg. 4 with c = 1, strict comparison): stops after the first "above";
    StatDP's Hamming distance counts the unanswered queries as mismatches."""

    def sample(db, size, rng):
        rho = rng.laplace(0.0, 4.0 / eps, (size, 1))
        nu = rng.laplace(0.0, 4.0 / (3.0 * eps), (size, db.size))
        above = db[None, :] + nu > t + rho
        k = _first_above(above)
        answered = np.arange(db.size)[None, :] <= k[:, None]
        answers = np.arange(db.size)[None, :] == k[:, None]  # below until k, above at k
        mismatch = np.where(answered, answers != _pattern(db.size)[None, :], True)
        return mismatch.sum(axis=1).astype(float)[:, None]

    return sample


def _isvt4(eps: float, t: float):
    """iSVT4 (Lyu et al. Alg. 3 with c = 1): the number of "below" answers and the noisy value
    of the query found above (−1000 when none)."""

    def sample(db, size, rng):
        rho = rng.laplace(0.0, 2.0 / eps, (size, 1))
        noisy = db[None, :] + rng.laplace(0.0, 2.0 / eps, (size, db.size))
        k = _first_above(noisy > t + rho)
        value = np.where(k < db.size, noisy[np.arange(size), np.minimum(k, db.size - 1)],
                         _BELOW)  # fmt: skip
        return np.column_stack([k.astype(float), value])

    return sample


def statdp_suite(epsilon: float = EPS) -> tuple[MechanismSpec, ...]:
    """StatDP's eleven benchmark algorithms at claimed ``epsilon`` (module docstring).

    Example:
        >>> [s.name for s in statdp_suite()][:2]
        ['statdp-noisy-max-v1a', 'statdp-noisy-max-v1b']
        >>> [s.true_epsilon for s in statdp_suite(0.5) if s.name.startswith("statdp-hist")]
        [0.5, 2.0]
    """
    if not isinstance(epsilon, (int, float)) or not 0 < epsilon < math.inf:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    e = float(epsilon)
    return (
        MechanismSpec("statdp-noisy-max-v1a", _noisy_max(e, "laplace", "index"), e, 5,
                      _DING + ", noisy_max_v1a (Alg. 5)", true_epsilon=noisy_max_true_epsilon(e),
                      component_wise=True, discrete=True,
                      note="Laplace noise 2/eps, index"),
        MechanismSpec("statdp-noisy-max-v1b", _noisy_max(e, "laplace", "value"), e, 5,
                      _DING + ", noisy_max_v1b (Alg. 7)", private=False, component_wise=True,
                      note="INCORRECT: releases the noisy maximum, not its index"),
        MechanismSpec("statdp-noisy-max-v2a", _noisy_max(e, "exponential", "index"), e, 5,
                      _DING + ", noisy_max_v2a (Alg. 6)", true_epsilon=noisy_max_true_epsilon(e),
                      component_wise=True, discrete=True,
                      note="exponential noise 2/eps, index"),
        MechanismSpec("statdp-noisy-max-v2b", _noisy_max(e, "exponential", "value"), e, 5,
                      _DING + ", noisy_max_v2b (Alg. 8)", true_epsilon=math.inf,
                      private=False, component_wise=True,
                      note="INCORRECT: releases the maximum; one-sided noise leaves values "
                           "only one input produces"),
        MechanismSpec("statdp-histogram", _histogram_first(1.0 / e), e, 5,
                      _DING + ", histogram (Alg. 9)", true_epsilon=e, low=0, high=10,
                      note="Laplace 1/eps on each bin, first bin released (Laplace "
                           "mechanism, Dwork et al. 2006: eps exactly)"),
        MechanismSpec("statdp-histogram-eps", _histogram_first(e), e, 5,
                      _DING + ", histogram_eps (Alg. 10)", true_epsilon=1.0 / e,
                      private=False, low=0, high=10,
                      note="INCORRECT: Laplace scale eps instead of 1/eps (a Laplace "
                           "mechanism of scale b is exactly 1/b-DP at sensitivity 1)"),
        MechanismSpec("statdp-svt", _svt(e, 0.5), e, 10, _DING + ", SVT; " + _LYU + ", Alg. 1",
                      component_wise=True, discrete=True,
                      note="N = 1, T = 0.5; releases the number of 'below' answers"),
        MechanismSpec("statdp-isvt1", _hamming_no_cutoff(e, 1.0, False), e, 10,
                      _DING + ", iSVT1; " + _LYU + ", Alg. 5", true_epsilon=math.inf,
                      private=False, component_wise=True, discrete=True,
                      note="INCORRECT: no noise on the queries; N = 1, T = 1"),
        MechanismSpec("statdp-isvt2", _hamming_no_cutoff(e, 1.0, True), e, 10,
                      _DING + ", iSVT2; " + _LYU + ", Alg. 6", private=False,
                      component_wise=True, discrete=True,
                      note="INCORRECT: query noise 2/eps, no cut-off; N = 1, T = 1"),
        MechanismSpec("statdp-isvt3", _isvt3(e, 1.0), e, 10,
                      _DING + ", iSVT3; " + _LYU + ", Alg. 4 (Thm. 6)",
                      true_epsilon=(1 + 6 * 1) / 4 * e, private=False, component_wise=True,
                      discrete=True,
                      note="INCORRECT: query noise does not scale with N; ((1+6c)/4)·eps-DP "
                           "only, c = N = 1, T = 1"),
        MechanismSpec("statdp-isvt4", _isvt4(e, 1.0), e, 10,
                      _DING + ", iSVT4; " + _LYU + ", Alg. 3", private=False,
                      component_wise=True, flags=(_BELOW,),
                      note="INCORRECT: releases the noisy query value; N = 1, T = 1"),
    )  # fmt: skip


for _spec in statdp_suite(EPS):
    MECHANISMS.register(_spec.name, _spec, replace=True, tags=("statdp",))
