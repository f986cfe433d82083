"""Private-kNN through the shared private-prediction audit: ordering, coverage, planted bugs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from dpaudit import _settings
from dpaudit._rng import block_seeds
from dpaudit.attacks import ADVERSARIES
from dpaudit.bounds import check_rdp_claim
from dpaudit.data import Dataset
from dpaudit.divergence import renyi_divergence
from dpaudit.experiments.private_prediction import (
    PrivatePredictionSettings,
    audit_private_prediction,
    stages,
)
from dpaudit.experiments.private_prediction.bound import audit_distributions
from dpaudit.mechanisms import GNMax
from dpaudit.systems import PrivateKNN, PrivateKNNOptions

KNN_ADVERSARIES = (
    "nat-advq",
    "pois-advq",
    "pois-natq",
    "pois-natq-test",
    "pois-natq-train",
    "pois-natq-embedding",
)


def _settings_for(k, rate, sigma, queries, experiments, adversaries, draws=256):
    s = PrivatePredictionSettings.of(
        dataset="digits", systems=("private-knn",), adversaries=adversaries, sigma=sigma,
        queries=queries, experiments=experiments, instantiations=1, retrainings=4,
    )  # fmt: skip
    opts = {"k": k, "sampling_rate": rate, "model_draws": draws}
    return _settings.apply_overrides(s, {"system.options": {"private-knn": opts}})


def test_end_to_end_audit_of_every_adversary_on_digits():
    s = _settings_for(10, 0.5, 4.0, 12, 10**6, KNN_ADVERSARIES)
    res = audit_private_prediction(s)
    assert [e.adversary for e in res.entries] == list(KNN_ADVERSARIES)
    for e in res.entries:
        d = e.detail
        assert e.system == "private-knn" and d.ordering.holds, (e.adversary, d.ordering)
        assert np.all(d.audit <= d.exact + 1e-12)  # audit ≤ exact (this seed)
        assert np.all(d.exact <= d.data_independent + 1e-12)  # exact ≤ claim
        assert e.claims[0].analysis == "data-independent"
        np.testing.assert_allclose(
            d.data_independent,
            12
            * PrivateKNN(GNMax(4.0), PrivateKNNOptions(k=10, sampling_rate=0.5)).query_rdp(
                d.orders
            ),
        )
    by = {e.adversary: e.detail for e in res.entries}
    # adversarial queries leak more than natural ones; the E(x)-maximising poisons enter
    # more natural queries than the random mislabelled source
    assert by["nat-advq"].exact.max() > by["pois-natq-train"].exact.max()
    assert by["pois-natq-embedding"].exact.max() >= by["pois-natq"].exact.max()
    assert res.to_json()


def test_composed_bound_coverage_on_knn_output_distributions():
    """Coverage as for PATE: with kNN's modelled [p̄, p̄′] as the truth, the composed audit
    exceeds the composed true RDP at some order in at most β of 200 seeded repetitions."""
    from dpaudit.attacks import HISTOGRAM_MODELS, ModelInputs, second_most_common_label

    gen = np.random.default_rng(0)
    x = gen.normal(size=(400, 2))
    y = (x[:, 0] + 0.3 * gen.normal(size=400) > 0).astype(np.int64)
    q = np.c_[np.linspace(-0.3, 0.3, 4), np.zeros(4)]
    knn = PrivateKNN(GNMax(1.5), PrivateKNNOptions(k=10, sampling_rate=0.5, model_draws=512))
    t = knn.train(x, y, q, instantiations=1, rng=0)
    pbar = []
    for i in range(4):
        lab = second_most_common_label(np.bincount(t.predictions[0, i], minlength=2))
        nb = knn.retrain(t, q[i : i + 1], [lab], retrainings=2, rng=i)
        model = HISTOGRAM_MODELS.get("knn-subsample")(ModelInputs(t, nb[0], 0, 0, i, -1, 2, 10))
        pbar.append(model.output_distributions(1.5))
    pbar = np.array(pbar)
    orders = np.array([1.5, 2.0, 5.0, 10.0, 50.0])
    truth = renyi_divergence(pbar[:, 0], pbar[:, 1], orders)
    assert truth.max() > 0.01
    reps, fails = 200, 0
    for rep in range(reps):
        counts = np.stack(
            [[np.random.default_rng([rep, i, s]).multinomial(20_000, pbar[i, s]) for s in (0, 1)]
             for i in range(4)]
        )  # fmt: skip
        res = audit_distributions(counts, orders, composition="repetitions", num_composed=50,
                                  confidence_level=0.95, rng=rep)  # fmt: skip
        fails += int(np.any(res.curve.epsilons > 50 * truth[res.worst] + 1e-12))
    assert fails <= stats.binom.ppf(0.999, reps, 0.05), fails


# ------------------------------------------------------------------------------ planted bugs


@dataclasses.dataclass(frozen=True)
class HalfNoiseKNN(PrivateKNN):
    """Planted bug: runs GNMax with σ/2 (``mechanism``) but claims the guarantee of σ."""

    claimed_sigma: float = 1.0

    def query_rdp(self, orders, **kwargs):
        return PrivateKNN(GNMax(self.claimed_sigma), self.options).query_rdp(orders, **kwargs)


def _pure_region_data():
    """Class 0 around the origin, class 1 far away; queries inside the class-0 region, so the
    k voters of a query are class 0 whatever the subsample (a near-tight setting)."""
    gen = np.random.default_rng(0)
    x = np.vstack([gen.normal(size=(60, 2)), gen.normal(size=(60, 2)) + np.array([20.0, 0.0])])
    xt = gen.normal(scale=0.3, size=(12, 2))
    return Dataset("digits", x, np.repeat([0, 1], 60), xt, np.zeros(12, np.int64), 2, ("a", "b"))


def _audit_stages(system, data, experiments, *, queries=5, seed=0):
    """Pois-AdvQ through the pipeline's stages; the 2-cut bound of D_α(M(S′) ‖ M(S)).

    Private-kNN's neighbours differ by an added point, and its claim (add-or-remove) covers
    both directions; the pipeline audits D(S ‖ S′) only, so the reversed counts are bounded
    here (the direction where the added point's votes show).
    """
    s = _settings_for(system.k, system.sampling_rate, system.mechanism.sigma, queries,
                      experiments, ("pois-advq",))  # fmt: skip
    seeds = block_seeds(np.random.SeedSequence(seed), 4)
    adv = ADVERSARIES.get("pois-advq")
    q = stages.choose_queries(data, queries, rng=seeds[0])
    trained = stages.train(system, data, q, instantiations=1, rng=seeds[1])
    nb = stages.craft_neighbours(system, trained, adv, q, num_candidates=queries,
                                 retrainings=4, rng=seeds[2])  # fmt: skip
    modelled = stages.model_queries(system, trained, nb, s, num_classes=2)
    counts, _ = stages.sample_counts(modelled, s, sigma=system.mechanism.sigma, rng=seeds[3])
    audited = stages.bound(counts[:, ::-1], adv, s, rng=seeds[3])
    claim = queries * system.query_rdp(s.audit.order_grid())
    return check_rdp_claim(audited.curve, claim)


def test_planted_bug_half_sigma_is_caught():
    opts = PrivateKNNOptions(k=3, sampling_rate=0.9, model_draws=1024)
    data = _pure_region_data()
    bug = _audit_stages(HalfNoiseKNN(GNMax(0.5), opts, claimed_sigma=1.0), data, 10**7)
    assert bug.refuted and bug.valid and bug.confidence_level == pytest.approx(0.95)
    fine = _audit_stages(PrivateKNN(GNMax(1.0), opts), data, 10**7)
    assert not fine.refuted


def test_planted_bug_sampling_with_replacement_is_caught():
    """The reference code draws round(γn) teachers with replacement but claims Poisson
    subsampling: a point can vote twice. With k = 3, γ = 0.9, σ = 0.5 in a pure region the
    audit refutes the Poisson claim (T = 10^8 per side, exact multinomial sampling); the
    Poisson system is not refuted."""
    data = _pure_region_data()
    base = {"k": 3, "sampling_rate": 0.9, "model_draws": 1024}
    bug = PrivateKNN(GNMax(0.5), PrivateKNNOptions(**base, sampling="with-replacement"))
    fine = PrivateKNN(GNMax(0.5), PrivateKNNOptions(**base))
    assert _audit_stages(bug, data, 10**8).refuted
    assert not _audit_stages(fine, data, 10**8).refuted
