"""The end-to-end private-prediction audit on real data (digits): every system ×
adversary, the ordering audit ≤ exact ≤ data-dependent ≤ data-independent, composition,
determinism, the data-dependent mixture bound, a coverage test of the composed lower bound,
and validation before training."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from scipy import stats

from dpaudit import AuditResult
from dpaudit.accounting import expected_data_dependent_rdp, gnmax_rdp
from dpaudit.attacks.parametric import CaPCHistogramModel, PATEHistogramModel
from dpaudit.divergence import renyi_divergence
from dpaudit.experiments.private_prediction import (
    SUMMARY_ORDERS,
    PrivatePredictionSettings,
    audit_distributions,
    audit_private_prediction,
)
from dpaudit.mechanisms import GNMax


def mixture_data_dependent_rdp(votes, probabilities, dropped, sigma, orders):
    return expected_data_dependent_rdp(GNMax(sigma), votes, probabilities, dropped, orders)


ORDERS = np.array([1.5, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0])
SMALL = dict(
    dataset="digits",
    teachers=16,
    sigma=2.5,
    queries=8,
    candidate_queries=6,
    experiments=10**7,
    instantiations=2,
    retrainings=3,
    orders=tuple(ORDERS),
    seed=1,
)


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return audit_private_prediction(PrivatePredictionSettings.of(**SMALL))


@pytest.fixture(scope="module")
def audit(result):
    """The per-adversary details, one per entry."""
    return [e.detail for e in result.entries]


def _le(a, b):
    return np.all(a <= b + 1e-12 + 1e-9 * np.abs(b))


def test_every_system_and_adversary_is_audited(result, audit):
    got = {(r.algorithm, r.adversary) for r in audit}
    assert got == {
        (alg, adv) for alg in ("pate", "capc") for adv in ("nat-advq", "pois-advq", "pois-natq")
    }
    assert {(e.system, e.adversary) for e in result.entries} == got
    acc = result.detail.plurality_accuracy
    assert set(acc) == {"pate", "capc"}
    assert all(0.5 < a <= 1.0 for a in acc.values())
    assert result.workflow == "private-prediction" and result.seed == 1
    assert {"dpaudit", "numpy", "scipy"} <= set(result.versions)


def test_entries_carry_bound_claims_exact_and_selections(result):
    for e in result.entries:
        r = e.detail
        np.testing.assert_array_equal(e.lower_bound.rdp.epsilons, r.audit)
        assert not e.lower_bound.epsilon_is_valid
        assert e.lower_bound.confidence_level == pytest.approx(0.95)
        assert [c.analysis for c in e.claims] == ["data-dependent", "data-independent"]
        np.testing.assert_array_equal(e.claim.rdp.epsilons, r.data_dependent)
        np.testing.assert_array_equal(
            e.claim_of("data-independent").rdp.epsilons, r.data_independent
        )
        np.testing.assert_array_equal(e.exact.rdp.epsilons, r.exact)
        strategies = {s.choice: s.strategy for s in e.selections}
        assert strategies["output set"] == "split"
        if r.composition == "repetitions":
            assert strategies["worst query"] == "split"
        else:
            assert strategies["queries"] == "bonferroni"
        assert e.gap is not None and not e.gap.refutes_claim
        assert e.gap.rdp_excess <= 0


def test_audit_le_exact_le_data_dependent_le_data_independent(audit):
    for r in audit:
        assert _le(r.audit, r.exact), (r.algorithm, r.adversary)
        assert _le(r.exact, r.data_dependent), (r.algorithm, r.adversary)
        assert _le(r.data_dependent, r.data_independent), (r.algorithm, r.adversary)
        assert r.ordering.holds and r.ordering.per_query_audit_exceeds_exact == 0
        # Per query as well, at the summary orders.
        q = r.queries
        assert _le(q.audit, q.exact) and _le(q.exact, q.data_dependent)
        assert np.all(q.data_dependent <= q.summary_orders / 2.5**2 + 1e-12)
        assert np.all(r.audit >= 0)


def test_composition(audit):
    n_q = SMALL["queries"]
    idx = [list(ORDERS).index(a) for a in SUMMARY_ORDERS]
    for r in audit:
        np.testing.assert_allclose(r.data_independent, n_q * ORDERS / 2.5**2)
        assert r.num_composed == n_q
        q = r.queries
        if r.distinguisher == "adversarial":
            assert r.composition == "repetitions" and 0 <= r.worst_query < 6
            assert q.exact.shape == (6, len(SUMMARY_ORDERS))
            np.testing.assert_allclose(r.exact[idx], n_q * q.exact[r.worst_query], rtol=1e-12)
            np.testing.assert_allclose(r.audit[idx], n_q * q.audit[r.worst_query], rtol=1e-12)
            assert r.confidence_level == pytest.approx(0.95)
            assert r.worst_query_test_index == int(q.test_indices[r.worst_query])
        else:
            assert r.composition == "queries" and r.worst_query is None
            np.testing.assert_allclose(r.exact[idx], q.exact.sum(axis=0), rtol=1e-10)
            np.testing.assert_allclose(r.audit[idx], q.audit.sum(axis=0), rtol=1e-10, atol=1e-15)
            assert r.per_query_confidence_level == pytest.approx(1 - 0.05 / n_q)
            assert r.confidence_level == pytest.approx(0.95)
            assert len(set(q.crafted_labels.tolist())) == 1


def test_counts_probabilities_and_per_query_exact(audit):
    for r in audit:
        q = r.queries
        assert np.all(q.counts.sum(axis=-1) == SMALL["experiments"])
        np.testing.assert_allclose(q.output_probabilities.sum(axis=-1), 1.0, atol=1e-11)
        want = renyi_divergence(
            q.output_probabilities[:, 0], q.output_probabilities[:, 1], q.summary_orders
        )
        np.testing.assert_allclose(q.exact, want, rtol=1e-8, atol=1e-14)
        # Counts are consistent with the exact output distributions (multinomial sampling).
        expected = SMALL["experiments"] * q.output_probabilities
        z = (q.counts - expected) / np.sqrt(expected + 1.0)
        assert np.max(np.abs(z)) < 6.5
        assert r.sampler == "exact" and r.experiments == SMALL["experiments"]
        assert (q.affected_teachers >= 0).all() == (r.algorithm == "capc")


def test_json_and_display_flags(result, tmp_path):
    data = json.loads(result.to_json())
    assert data["settings"]["system"]["teachers"] == 16
    assert len(data["entries"]) == 6
    for e in data["entries"]:
        assert e["detail"]["epsilon"]["audit_is_valid_dp_lower_bound"] is False
        assert e["detail"]["epsilon"]["delta"] == 1e-6
        assert e["lower_bound"]["epsilon_is_valid"] is False
    path = result.write_json(tmp_path / "x" / "results.json")
    assert json.loads(path.read_text())["detail"]["dataset"] == "digits"
    r = result.entry("capc", "pois-advq").detail
    assert r.epsilon.audit <= r.epsilon.exact + 1e-9 <= r.epsilon.data_independent + 1e-9
    with pytest.raises(KeyError, match="knn"):
        result.entry("knn", "pois-advq")


def test_a_subset_reproduces_the_same_numbers(result):
    sub = audit_private_prediction(
        PrivatePredictionSettings.of(
            **{**SMALL, "systems": ("capc",), "adversaries": ("pois-advq",)}
        )
    )
    a = result.entry("capc", "pois-advq").detail
    b = sub.entries[0].detail
    np.testing.assert_array_equal(a.queries.counts, b.queries.counts)
    np.testing.assert_array_equal(a.audit, b.audit)
    np.testing.assert_array_equal(a.exact, b.exact)


def test_monte_carlo_sampler_agrees_with_exact_distributions():
    res = audit_private_prediction(
        PrivatePredictionSettings.of(
            **{
                **SMALL,
                "systems": ("pate",),
                "adversaries": ("pois-advq",),
                "sampler": "monte-carlo",
                "sigma": 8.0,
                "experiments": 20_000,
                "candidate_queries": 3,
                "queries": 3,
            }
        )
    )
    r = res.entries[0].detail
    q = r.queries
    assert r.sampler == "monte-carlo" and r.ordering.exact_le_data_dependent
    p = q.output_probabilities.reshape(-1, q.output_probabilities.shape[-1])
    c = q.counts.reshape(p.shape)
    expected = 20_000 * p
    keep = expected >= 5
    chi2 = float(np.sum(((c - expected) ** 2 / expected)[keep]))
    dof = int(keep.sum()) - int(np.any(keep, axis=1).sum())
    assert dof >= 6
    assert stats.chi2.sf(chi2, dof) > 1e-4


# ---------------------------------------------------------------- data-dependent mixture bound


def test_mixture_data_dependent_rdp():
    lam = ORDERS
    one = mixture_data_dependent_rdp(np.array([[200, 30, 20]]), np.ones(1), 0.0, 40.0, lam)
    np.testing.assert_allclose(one, gnmax_rdp([200, 30, 20], 40.0, lam), rtol=1e-12)
    votes = np.array([[200, 30, 20], [120, 110, 20]])
    w = np.array([0.7, 0.3])
    eps = gnmax_rdp(votes, 40.0, lam)
    want = np.log(w @ np.exp((lam - 1) * eps)) / (lam - 1)
    np.testing.assert_allclose(mixture_data_dependent_rdp(votes, w, 0.0, 40.0, lam), want)
    # Left-out mass is charged at the data-independent bound.
    part = mixture_data_dependent_rdp(votes[:1], w[:1], 0.3, 40.0, lam)
    want = np.log(0.7 * np.exp((lam - 1) * eps[0]) + 0.3 * np.exp((lam - 1) * lam / 1600)) / (
        lam - 1
    )
    np.testing.assert_allclose(part, want)
    empty = mixture_data_dependent_rdp(np.zeros((0, 3)), np.zeros(0), 1.0, 40.0, lam)
    np.testing.assert_allclose(empty, lam / 1600)


def test_exact_le_data_dependent_on_random_models():
    """Joint convexity (module notes): D(p̄‖p̄′) ≤ mixture data-dependent ≤ α/σ²."""
    gen = np.random.default_rng(4)
    lam = ORDERS
    for trial in range(12):
        c = int(gen.integers(2, 5))
        m = int(gen.integers(3, 9))
        k = int(gen.integers(1, m + 1))
        sigma = float(gen.choice([0.7, 1.5, 3.0]))
        p = gen.dirichlet(np.ones(c) * 0.5)
        q = gen.dirichlet(np.ones(c) * 0.5)
        if trial % 2:
            model = PATEHistogramModel(p, q, m, k)
        else:
            tp = gen.dirichlet(np.ones(c) * 0.3, size=m)
            model = CaPCHistogramModel(tp, q, int(gen.integers(m)), k)
        pbar = model.output_distributions(sigma)
        exact = renyi_divergence(pbar[0], pbar[1], lam)
        sup = model.support()
        dd = mixture_data_dependent_rdp(sup.votes, sup.probabilities, sup.dropped_mass, sigma, lam)
        assert _le(exact, dd), (trial, exact, dd)
        assert _le(dd, lam / sigma**2)


# ---------------------------------------------------------------------------- coverage test


@pytest.mark.slow
@pytest.mark.parametrize("composition", ["repetitions", "queries"])
def test_composed_lower_bound_coverage(composition):
    """The composed audit exceeds the composed true RDP (worst query × n, or the sum) at some
    order in at most β of 200 seeded repetitions (+ binomial slack)."""
    gen = np.random.default_rng(0)
    n_q, c, t = 4, 3, 20_000
    pbar = np.empty((n_q, 2, c))
    for i in range(n_q):
        pbar[i, 0] = gen.dirichlet(np.ones(c) * 3)
        shift = gen.normal(scale=0.03, size=c)
        shift -= shift.mean()
        pbar[i, 1] = np.clip(pbar[i, 0] + shift, 0.01, None)
        pbar[i, 1] /= pbar[i, 1].sum()
    truth = renyi_divergence(pbar[:, 0], pbar[:, 1], ORDERS)  # (n, A)
    reps, fails, tight = 200, 0, 0.0
    for rep in range(reps):
        counts = np.stack(
            [[np.random.default_rng([rep, i, s]).multinomial(t, pbar[i, s]) for s in (0, 1)]
             for i in range(n_q)]
        )  # fmt: skip
        res = audit_distributions(
            counts, ORDERS, composition=composition, num_composed=50,
            confidence_level=0.95, rng=rep,
        )  # fmt: skip
        true_curve = 50 * truth[res.worst] if composition == "repetitions" else truth.sum(axis=0)
        fails += int(np.any(res.curve.epsilons > true_curve + 1e-12))
        tight = max(tight, float(np.max(res.curve.epsilons / true_curve)))
    slack = stats.binom.ppf(0.999, reps, 0.05)
    assert fails <= slack, (fails, slack)
    assert tight > 0.05  # the bound is not vacuous


# -------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dataset": "mnist"}, "dataset"),
        ({"teachers": 10, "teachers_per_query": 11}, "teachers_per_query"),
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -1.0}, "sigma"),
        ({"experiments": 0}, "experiments"),
        ({"experiments": -5}, "experiments"),
        ({"experiments": 2}, "experiments"),
        ({"queries": 0}, "queries"),
        ({"queries": 5, "candidate_queries": 6}, "candidate_queries"),
        ({"systems": ("pate", "knn")}, "systems"),
        ({"adversaries": ()}, "adversaries"),
        ({"teachers": 1}, "teachers"),
        ({"instantiations": 0}, "instantiations"),
        ({"retrainings": 0}, "retrainings"),
        ({"sampler": "bootstrap"}, "sampler"),
        ({"executor": "threads"}, "executor"),
        ({"confidence_level": 1.0}, "confidence_level"),
        ({"delta": 0.0}, "delta"),
        ({"orders": (0.5, 2.0)}, "orders"),
        ({"orders": (5.0, 2.0)}, "orders"),
        ({"estimator": "svm"}, "estimator"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"confirmations": -1}, "confirmations"),
        ({"shortlist": 0}, "shortlist"),
        ({"natural_retrainings": 0}, "natural_retrainings"),
        ({"name": ""}, "name"),
    ],
)
def test_bad_settings_are_clear_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        PrivatePredictionSettings.of(**kwargs)


def test_dataset_limits_are_checked_before_any_training(monkeypatch):
    import dpaudit.systems.private_prediction._teachers as teachers

    def boom(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(teachers, "train_instantiations", boom)
    with pytest.raises(ValueError, match="teachers"):
        audit_private_prediction(PrivatePredictionSettings.of(dataset="digits", teachers=5000))
    with pytest.raises(ValueError, match="queries"):
        audit_private_prediction(PrivatePredictionSettings.of(dataset="digits", queries=449))
    with pytest.raises(TypeError, match="settings"):
        audit_private_prediction({"dataset": "digits"})
    s = PrivatePredictionSettings.of(dataset="digits")
    assert dataclasses.replace(s.system, sigma=3.0).sigma == 3.0
    assert s.k == s.system.teachers
    assert s.adversary.num_candidates == s.adversary.queries
    t = PrivatePredictionSettings.of(dataset="digits", retrainings=5, natural_retrainings=9)
    assert t.adversary.retrainings_for("queries") == 9
    assert t.adversary.retrainings_for("repetitions") == 5


# ------------------------------------------------------- reproducibility and resolution

RESOLVING = dict(SMALL, estimator="ridge", retrainings=12, confirmations=60, shortlist=3)


def _numbers(res: AuditResult) -> dict:
    """The result's JSON without wall times."""
    out = json.loads(res.to_json())
    out.pop("timings")
    for e in out["entries"]:
        e["detail"].pop("engine_seconds")
    return out


@pytest.fixture(scope="module")
def resolving() -> AuditResult:
    return audit_private_prediction(PrivatePredictionSettings.of(**RESOLVING))


def test_same_numbers_whatever_n_jobs(resolving):
    """Bit for bit: one worker or two for training, retraining, models and audits."""
    again = audit_private_prediction(PrivatePredictionSettings.of(**RESOLVING, n_jobs=2))
    a, b = _numbers(resolving), _numbers(again)
    a["settings"]["system"].pop("n_jobs")
    b["settings"]["system"].pop("n_jobs")
    assert a == b


def test_confirmation_shortlist_and_findings(resolving):
    s = resolving.settings
    for e in resolving.entries:
        d = e.detail
        if d.composition == "repetitions":
            c = d.confirmation
            assert c.retrainings == 60 and d.flips == c.flips
            assert d.flips.num_retrainings == 60
            assert d.queries.test_indices.size == 3  # the shortlist
            pbar = c.output_probabilities
            ref = renyi_divergence(pbar[0], pbar[1], d.orders)
            np.testing.assert_allclose(d.exact, s.adversary.queries * ref, rtol=1e-9, atol=1e-12)
            assert d.profile.kind == "binomial" and d.profile.selected_among == 1
        else:
            assert d.confirmation is None and d.profile.kind == "mean"
            assert d.profile.trials == 12
        assert d.ordering.exact_le_data_dependent and d.ordering.data_dependent_le_data_independent
    check = resolving.detail.findings
    assert [f.name for f in check.findings] == ["pois-ge-nat", "capc-ge-pate", "natq-lt-advq"]
    assert check.num_intervals == 6
    for f in check.findings:
        assert f.verdict in ("confirmed", "contradicted", "equal", "mixed", "unresolved")
        for c in f.comparisons:
            assert c.larger.low <= c.larger.epsilon <= c.larger.high
    entry = {(e.system, e.adversary): e.detail for e in resolving.entries}
    iv = check.finding("pois-ge-nat").comparisons[0].larger
    np.testing.assert_allclose(iv.epsilon, entry[("pate", "pois-advq")].epsilon.exact, rtol=1e-9)
    assert resolving.detail.retrainings["capc"] < resolving.detail.retrainings["pate"]


def test_shortlist_keeps_the_same_worst_query():
    """A shortlist of the largest plug-in leakage keeps the query the full audit chooses."""
    base = dict(SMALL, estimator="ridge", adversaries=("pois-advq",), systems=("pate",))
    full = audit_private_prediction(PrivatePredictionSettings.of(**base)).entries[0].detail
    short = audit_private_prediction(PrivatePredictionSettings.of(**base, shortlist=2))
    short = short.entries[0].detail
    assert short.worst_query_test_index == full.worst_query_test_index
    np.testing.assert_allclose(short.exact, full.exact, rtol=1e-12)


def test_render_prints_the_findings(resolving):
    from rich.console import Console

    console = Console(record=True, width=200)
    from dpaudit.report import render_private_prediction

    render_private_prediction(console, resolving)
    text = console.export_text()
    assert "Findings of Chadha et al. 2024" in text and "Pois-AdvQ" in text
