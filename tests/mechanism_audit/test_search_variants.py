"""The search's two scores (with and without median indicators) and its chunked selection."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.attacks import choose_event, fit_mechanism_attack
from dpaudit.experiments import MechanismAuditSettings, audit_mechanism, replay_witness
from dpaudit.experiments.mechanism import pipeline


def test_median_indicators_follow_the_likelihood_ratio_of_parallel_laplace():
    # 20 Laplace mechanisms on one count: the log-likelihood ratio of a′ = a + 1 is a sum of
    # clipped linear terms, i.e. nearly the number of coordinates above the middle; the
    # indicator features let the logistic score follow it, the raw values do not.
    g = np.random.default_rng(0)
    n, k, scale = 40_000, 20, 5.0

    def draw(x):
        return x + g.laplace(0.0, scale, (n, k))

    plain = fit_mechanism_attack(draw(0.0), draw(1.0), kind="logistic")
    ind = fit_mechanism_attack(draw(0.0), draw(1.0), kind="logistic", indicators=True)
    assert ind.medians.shape == (k,) and "1{output >" in ind.describe()
    sel_a, sel_b = draw(0.0), draw(1.0)
    _, proj_plain = choose_event(plain, sel_a, sel_b, n_eval=10**6)
    _, proj_ind = choose_event(ind, sel_a, sel_b, n_eval=10**6)
    assert proj_ind > proj_plain
    with pytest.raises(ValueError, match="width the attack was fitted on"):
        choose_event(ind, sel_a[:, :3], sel_b[:, :3], n_eval=10)
    with pytest.raises(TypeError, match="indicators"):
        fit_mechanism_attack(sel_a, sel_b, indicators="yes")


def test_chunked_selection_gives_a_valid_reproducible_bound(monkeypatch):
    # Force the chunked path (selection drawn in chunks, only scores kept) on a small run.
    monkeypatch.setattr(pipeline, "_CHUNK_VALUES", 3000)
    s = MechanismAuditSettings(mechanism="laplace-parallel", train_samples=4000,
                               select_samples=20_000, samples=50_000, seed=3)  # fmt: skip
    first = audit_mechanism(s).entries[0]
    again = audit_mechanism(s).entries[0]
    assert first.lower_bound.epsilon == again.lower_bound.epsilon
    assert 0.0 <= first.lower_bound.epsilon <= 0.1  # true ε of the 20 × 0.005 composition
    w = first.detail
    assert replay_witness(w, samples=20_000, rng=1).epsilon <= 0.1
