"""Seeded coverage of the MultiSplit selection on mechanisms whose true privacy is known.

MultiSplit reports the median of many split bounds, each at failure probability β/2
(Meinshausen, Meier & Bühlmann 2009, arXiv:0811.2177, Thm 3.1; JAX-Privacy's auditing
library): the median exceeds the truth only if half of the splits do, which happens with
probability at most β (Markov). Each test runs 200 seeded repetitions on a mechanism whose
ε (or Rényi curve) is known exactly and where the bound can come close to it, and asserts that
the bound exceeds the truth in at most β of them, and that it is not vacuous.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from dpaudit.bounds import MultiSplit, epsilon_from_scores, one_run_sweep, rdp_audit
from dpaudit.mechanisms.simple import (
    randomized_response_renyi,
    sample_randomized_response_counts,
)

pytestmark = pytest.mark.slow

REPS = 200
LEVEL = 0.9
BETA = 1 - LEVEL
EPS = 1.0  # randomized response: truthful with probability e^ε/(1+e^ε)


def test_threshold_audit_of_randomized_response_scores():
    """Scores 1/0 = the randomized-response bit: the set {1} has ε = log(p/q) = ε exactly, so
    the truth is the bound's target; the threshold is chosen on each split."""
    p = float(special.expit(EPS))
    over, values = 0, []
    for rep in range(REPS):
        g = np.random.default_rng([61, rep])
        pos = (g.random(2000) < p).astype(float)  # runs on S′: bit 1 w.p. p
        neg = (g.random(2000) < 1 - p).astype(float)  # runs on S: bit 1 w.p. q = 1 − p
        res = epsilon_from_scores(
            pos, neg, selection=MultiSplit(5), confidence_level=LEVEL, rng=rep
        )
        over += res.epsilon > EPS
        values.append(res.epsilon)
    assert over <= BETA * REPS
    assert np.mean(values) > 0.7 * EPS  # not vacuous


def test_one_run_sweep_of_randomized_response():
    """Steinke et al.'s one-run bound is nearly tight for randomized response (their §5); the
    number of guesses is chosen on each split."""
    over, values = 0, []
    for rep in range(REPS):
        g = np.random.default_rng([62, rep])
        inc = g.random(1000) < 0.5
        truthful = g.random(1000) < special.expit(EPS)
        scores = np.where(truthful == inc, 1.0, -1.0)
        res = one_run_sweep(scores, inc, guess_counts=[250, 500, 1000], confidence_level=LEVEL,
                            selection=MultiSplit(10), rng=rep)  # fmt: skip
        over += res.epsilon > EPS
        values.append(res.epsilon)
    assert over <= BETA * REPS
    assert np.mean(values) > 0.6 * EPS


def test_rdp_audit_of_randomized_response_counts():
    """4-ary randomized response at ε = 1: the median curve stays below the true Rényi curve
    at every order at once in at least 1 − β of the repetitions."""
    orders = np.array([1.5, 2.0, 4.0, 10.0])
    truth = randomized_response_renyi(orders, num_classes=4, epsilon=EPS)
    over, values = 0, []
    for rep in range(REPS):
        g = np.random.default_rng([63, rep])
        c1 = sample_randomized_response_counts(0, 20000, num_classes=4, epsilon=EPS, rng=g)
        c2 = sample_randomized_response_counts(1, 20000, num_classes=4, epsilon=EPS, rng=g)
        res = rdp_audit(c1, c2, orders, selection=MultiSplit(3), confidence_level=LEVEL, rng=rep)
        over += bool(np.any(res.epsilons > truth))
        values.append(res.epsilons)
    assert over <= BETA * REPS
    assert np.all(np.mean(values, axis=0) > 0.5 * truth)
