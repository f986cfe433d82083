"""PromptPATE through the shared private-prediction pipeline with the real model: the shipped
test-sized configuration, the ordering audit ≤ exact ≤ data-dependent ≤ data-independent at
every order, and the planted bug (a PromptPATE with σ/2 noise claiming σ) caught by the audit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpaudit.attacks import ADVERSARIES
from dpaudit.experiments.private_prediction import audit_private_prediction, stages
from dpaudit.experiments.private_prediction.config import find_config, load_config
from dpaudit.mechanisms import GNMax
from dpaudit.systems.private_prediction.prompt_pate import PromptPATE, PromptPATEOptions

ADVS = (
    "prompt-nat-advq",
    "prompt-pois-advq",
    "prompt-pois-natq-confident",
    "prompt-pois-natq-unconfident",
    "prompt-pois-natq-all-same",
    "prompt-pois-natq-mapping",
)


def _settings(tmp_path, **changes):
    s = load_config(find_config("prompt-pate-test"))
    opts = {"prompt-pate": {**s.system.options["prompt-pate"], "cache_dir": str(tmp_path)}}
    system = dataclasses.replace(s.system, options=opts, **changes.pop("system", {}))
    return dataclasses.replace(s, system=system, **changes)


def test_shipped_test_config_runs_through_the_pipeline(language_model, tmp_path):
    s = _settings(tmp_path)
    assert s.adversary.adversaries == ADVS and s.system.systems == ("prompt-pate",)
    res = audit_private_prediction(s)
    assert [e.adversary for e in res.entries] == list(ADVS)
    tol = 1e-9
    for e in res.entries:
        d = e.detail
        assert np.all(d.audit <= d.exact + tol), e.adversary
        assert np.all(d.exact <= d.data_dependent + tol), e.adversary
        assert np.all(d.data_dependent <= d.data_independent + tol), e.adversary
        assert d.ordering.audit_le_exact and d.sampler == "exact"
        assert e.claim.analysis == "data-dependent"
        # point-mass teachers: one flip at most, recorded from one deterministic computation
        assert np.all(d.queries.retrainings == 1) and np.all(d.queries.flips <= 1)
        np.testing.assert_allclose(
            d.data_independent, 4 * np.asarray(d.orders) / s.system.sigma**2, rtol=1e-12
        )
    assert 0.0 <= res.detail.plurality_accuracy["prompt-pate"] <= 1.0
    # some adversary moves a vote (the copy bias of one-shot prompts makes that easy)
    assert max(float(np.max(e.detail.exact)) for e in res.entries) > 0.0


@dataclasses.dataclass(frozen=True)
class HalfNoisePromptPATE(PromptPATE):
    """A planted bug: answers with GNMax(σ/2) and claims GNMax(σ)."""

    claimed_sigma: float = 1.0

    def query_rdp(self, orders, **kwargs):
        honest = PromptPATE(self.num_teachers, GNMax(self.claimed_sigma), self.options)
        return honest.query_rdp(orders, **kwargs)


def _audit(system, settings, name, data, queries, trained):
    adv = ADVERSARIES.get(name)
    seeds = np.random.SeedSequence(7).spawn(3)
    nb = stages.craft_neighbours(
        system,
        trained,
        adv,
        queries,
        num_candidates=settings.adversary.num_candidates,
        retrainings=1,
        rng=seeds[0],
    )
    modelled = stages.model_queries(system, trained, nb, settings, num_classes=data.num_classes)
    counts, _ = stages.sample_counts(modelled, settings, sigma=system.mechanism.sigma, rng=seeds[1])
    audited = stages.bound(counts, adv, settings, rng=seeds[2])
    return audited, modelled


@pytest.mark.slow
def test_planted_bug_half_noise_is_caught_by_the_audit(language_model, tmp_path):
    # σ large against the m = 6 votes (gaps ≤ 6 ≪ σ/2·√2), so that a flipped vote moves the
    # output distribution whatever the (near-unanimous) histograms of the drawn queries are
    sigma = 16.0
    s = _settings(tmp_path, system={"sigma": sigma})
    s = dataclasses.replace(s, engine=dataclasses.replace(s.engine, experiments=10**7))
    opts = PromptPATEOptions(
        task="rotten-tomatoes", max_words=16, cache_dir=str(tmp_path), threads=1
    )
    honest = PromptPATE(6, GNMax(sigma), opts)
    planted = HalfNoisePromptPATE(6, GNMax(sigma / 2), opts, claimed_sigma=sigma)
    data = stages.load_data(s)
    queries = stages.choose_queries(data, s.adversary.queries, rng=np.random.SeedSequence(1))
    trained = stages.train(honest, data, queries, instantiations=1, rng=np.random.SeedSequence(2))
    orders = s.audit.order_grid()
    nq = s.adversary.queries
    claim = nq * honest.query_rdp(orders)
    np.testing.assert_allclose(planted.query_rdp(orders), honest.query_rdp(orders))
    excess = {}
    checked = ("prompt-nat-advq", "prompt-pois-advq", "prompt-pois-natq-all-same")
    for name in checked:
        for label, system in (("honest", honest), ("planted", planted)):
            audited, modelled = _audit(system, s, name, data, queries, trained)
            lower = np.asarray(audited.curve.epsilons)
            excess[(name, label)] = float(np.max(lower - claim))
            # the data-dependent claim is the claimed sigma's, whatever noise is added
            assert np.all(modelled.data_dependent <= honest.query_rdp(orders) + 1e-12)
    for name in checked:
        assert excess[(name, "honest")] <= 0.0  # a valid lower bound never refutes the truth
    # the planted system is refuted: its audited RDP exceeds the claimed data-independent RDP
    assert max(excess[(n, "planted")] for n in checked) > 0.0
