"""PrivatePredictor: budget, refusal, abstention and answer caching (Chadha et al. 2024,
arXiv:2402.09403, Alg. 1, §5.4); concurrent predict never overspends (issue 13)."""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time

import numpy as np
import pytest

from dpaudit.data import load_digits
from dpaudit.errors import BudgetExhaustedError
from dpaudit.systems import (
    ABSTAIN,
    REFUSED,
    ConfidentGNMax,
    GNMax,
    PrivatePredictor,
    TeacherEnsemble,
    make_ledger,
)

M = 15


class TinyLedger:
    """A minimal ledger with the API of dpaudit.accounting.PrivacyLedger.

    Data-independent RDP (GNMax λ/σ²; threshold step λ/(2σ1²)), standard conversion
    ε = min_λ RDP(λ) + log(1/δ)/(λ − 1). can_afford assumes the query is answered.
    """

    def __init__(
        self,
        *,
        sigma,
        delta,
        epsilon_budget=None,
        analysis="data-independent",
        threshold=None,
        sigma1=None,
        orders=None,
    ):
        self.sigma = sigma
        self.delta = delta
        self.epsilon_budget = epsilon_budget
        self.analysis = analysis
        self.threshold = threshold
        self.sigma1 = sigma1
        self.orders = np.arange(2.0, 65.0) if orders is None else np.asarray(orders, float)
        self._rdp = np.zeros_like(self.orders)
        self.num_queries = 0
        self.num_answered = 0
        self.charges = []

    def _cost(self, answered):
        cost = self.orders / self.sigma**2 if answered else np.zeros_like(self.orders)
        if self.threshold is not None:
            cost = cost + self.orders / (2 * self.sigma1**2)
        return cost

    def _eps(self, rdp, delta=None):
        d = self.delta if delta is None else delta
        return float(np.min(rdp + math.log(1 / d) / (self.orders - 1)))

    def epsilon(self, delta=None):
        return self._eps(self._rdp, delta)

    def can_afford(self, votes):
        if self.epsilon_budget is None:
            return True
        return self._eps(self._rdp + self._cost(True)) <= self.epsilon_budget

    def charge(self, votes, *, answered=True):
        if not self.can_afford(votes):
            raise BudgetExhaustedError("budget exhausted")
        self._rdp = self._rdp + self._cost(answered)
        self.num_queries += 1
        self.num_answered += int(answered)
        self.charges.append((np.asarray(votes).copy(), answered))


class SlowLedger(TinyLedger):
    """TinyLedger whose charge yields the GIL between its budget check and its commit (as an
    accountant doing I/O would): two unsynchronised callers both pass the check."""

    def charge(self, votes, *, answered=True):
        if not self.can_afford(votes):
            raise BudgetExhaustedError("budget exhausted")
        time.sleep(1e-4)
        self._rdp = self._rdp + self._cost(answered)
        self.num_queries += 1
        self.num_answered += int(answered)
        self.charges.append((np.asarray(votes).copy(), answered))


class ConsensusLedger:
    """A vote-dependent ledger: cost 1 − max/sum (cheap for consensus), budget on the sum."""

    def __init__(self, budget):
        self.budget = budget
        self.spent = 0.0
        self.num_queries = 0

    @staticmethod
    def _cost(votes):
        votes = np.asarray(votes, float)
        return 1.0 - votes.max() / votes.sum()

    def can_afford(self, votes):
        return self.spent + self._cost(votes) <= self.budget

    def charge(self, votes, *, answered=True):
        if not self.can_afford(votes):
            raise BudgetExhaustedError("over budget")
        self.spent += self._cost(votes)
        self.num_queries += 1


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


@pytest.fixture(scope="module")
def ensemble(digits):
    return TeacherEnsemble.fit(digits.X_train, digits.y_train, num_teachers=M, rng=2)


def test_predict_without_ledger_is_the_aggregator_on_the_votes(digits, ensemble):
    X = digits.X_test[:50]
    agg = GNMax(sigma=3.0)
    api = PrivatePredictor(ensemble, agg)
    labels = api.predict(X, rng=9)
    np.testing.assert_array_equal(labels, agg.answer(ensemble.votes(X), rng=9))
    np.testing.assert_array_equal(api.votes(X), ensemble.votes(X))
    assert api.num_charged == 50 and api.num_answered == 50
    np.testing.assert_array_equal(api.charged_votes, ensemble.votes(X))
    # utility: a private answer at σ = 3 with 15 teachers is mostly right on digits
    assert np.mean(labels == digits.y_test[:50]) > 0.8


def test_budget_refuses_and_keeps_refusing(digits, ensemble):
    sigma, delta, budget = 4.0, 1e-5, 6.0
    orders = np.arange(2.0, 65.0)
    # oracle: largest q with min_λ q·λ/σ² + log(1/δ)/(λ−1) ≤ budget
    affordable = 0
    while (
        np.min((affordable + 1) * orders / sigma**2 + math.log(1 / delta) / (orders - 1)) <= budget
    ):
        affordable += 1
    assert 5 < affordable < 60
    X = digits.X_test[: affordable + 10]
    ledger = TinyLedger(sigma=sigma, delta=delta, epsilon_budget=budget)
    api = PrivatePredictor(ensemble, GNMax(sigma=sigma), ledger=ledger)
    labels = api.predict(X, rng=3)
    unlimited = PrivatePredictor(ensemble, GNMax(sigma=sigma)).predict(X, rng=3)
    np.testing.assert_array_equal(labels[:affordable], unlimited[:affordable])
    np.testing.assert_array_equal(labels[affordable:], np.full(10, REFUSED))
    assert ledger.num_queries == affordable and api.num_refused == 10 and api.exhausted
    assert ledger.epsilon() <= budget
    assert np.all(api.predict(digits.X_test[:5], rng=4) == REFUSED)
    np.testing.assert_allclose(
        api.claimed_rdp(orders).epsilons, affordable * orders / sigma**2, rtol=1e-14
    )


def test_once_refused_a_later_cheaper_query_is_refused_too(digits, ensemble):
    votes = ensemble.votes(digits.X_test)
    cost = 1.0 - votes.max(axis=1) / M
    cheap = np.flatnonzero(cost == 0)[:3]
    dear = np.flatnonzero(cost > 0.3)[:2]
    assert cheap.size == 3 and dear.size == 2
    order = np.array([dear[0], cheap[0], dear[1], cheap[1], cheap[2]])
    ledger = ConsensusLedger(budget=cost[dear[0]] + 0.01)
    api = PrivatePredictor(ensemble, GNMax(sigma=1.0), ledger=ledger)
    labels = api.predict(digits.X_test[order], rng=0)
    assert labels[0] >= 0 and labels[1] >= 0  # the dear one fits, then a free one
    assert labels[2] == REFUSED
    assert labels[3] == REFUSED and labels[4] == REFUSED  # free, but refused after a refusal
    assert ledger.num_queries == 2 and api.num_refused == 3


def test_confident_gnmax_abstentions_cost_privacy(digits, ensemble):
    agg = ConfidentGNMax(threshold=1e6, sigma1=50.0, sigma2=4.0)
    ledger = TinyLedger(sigma=4.0, delta=1e-5, threshold=1e6, sigma1=50.0)
    api = PrivatePredictor(ensemble, agg, ledger=ledger)
    labels = api.predict(digits.X_test[:20], rng=0)
    np.testing.assert_array_equal(labels, np.full(20, ABSTAIN))
    assert ledger.num_queries == 20 and ledger.num_answered == 0
    assert [answered for _, answered in ledger.charges] == [False] * 20
    orders = np.array([2.0, 8.0])
    np.testing.assert_allclose(
        api.claimed_rdp(orders).epsilons, 20 * orders / (2 * 50.0**2), rtol=1e-14
    )
    # a reachable threshold: answered queries are charged with answered=True
    agg2 = ConfidentGNMax(threshold=M - 1, sigma1=1.0, sigma2=4.0)
    ledger2 = TinyLedger(sigma=4.0, delta=1e-5, threshold=M - 1, sigma1=1.0)
    api2 = PrivatePredictor(ensemble, agg2, ledger=ledger2)
    labels2 = api2.predict(digits.X_test[:60], rng=1)
    answered = labels2 != ABSTAIN
    assert 0 < answered.sum() < 60
    assert [a for _, a in ledger2.charges] == answered.tolist()
    np.testing.assert_array_equal(api2.charged_answered, answered)
    np.testing.assert_allclose(
        api2.claimed_rdp(orders).epsilons,
        60 * orders / 2.0 + answered.sum() * orders / 16.0,
        rtol=1e-14,
    )


def test_caching_returns_the_first_answer_at_no_cost(digits, ensemble):
    votes = ensemble.votes(digits.X_test)
    q = int(np.argmin(votes.max(axis=1)))  # the least confident query: noisy answers vary
    X = np.repeat(digits.X_test[q : q + 1], 200, axis=0)
    sigma = 4.0
    ledger = TinyLedger(sigma=sigma, delta=1e-5)
    plain = PrivatePredictor(ensemble, GNMax(sigma=sigma), ledger=ledger).predict(X, rng=0)
    assert len(set(plain.tolist())) > 1 and ledger.num_queries == 200
    ledger_c = TinyLedger(sigma=sigma, delta=1e-5)
    api = PrivatePredictor(ensemble, GNMax(sigma=sigma), ledger=ledger_c, cache=True)
    cached = api.predict(X, rng=0)
    np.testing.assert_array_equal(cached, np.full(200, plain[0]))
    assert ledger_c.num_queries == 1 and api.num_cached == 199
    # the key is the feature values, whatever the dtype
    again = api.predict(digits.X_test[q].astype(np.float64), rng=5)
    assert again.tolist() == [plain[0]] and ledger_c.num_queries == 1


def test_cached_answers_survive_exhaustion(digits, ensemble):
    sigma, delta = 4.0, 1e-5
    orders = np.arange(2.0, 65.0)
    one = float(np.min(orders / sigma**2 + math.log(1 / delta) / (orders - 1)))
    ledger = TinyLedger(sigma=sigma, delta=delta, epsilon_budget=one + 1e-9)
    api = PrivatePredictor(ensemble, GNMax(sigma=sigma), ledger=ledger, cache=True)
    X = digits.X_test[[0, 1, 0]]
    labels = api.predict(X, rng=0)
    assert labels[0] >= 0 and labels[1] == REFUSED and labels[2] == labels[0]
    assert ledger.num_queries == 1 and api.num_cached == 1 and api.num_refused == 1


def test_teachers_per_query(digits, ensemble):
    api = PrivatePredictor(ensemble, GNMax(sigma=1.0), teachers_per_query=5)
    v = api.votes(digits.X_test[:30], rng=0)
    np.testing.assert_array_equal(v.sum(axis=1), np.full(30, 5))
    labels = api.predict(digits.X_test[:30], rng=0)
    np.testing.assert_array_equal(api.charged_votes.sum(axis=1), np.full(30, 5))
    assert labels.shape == (30,)
    with pytest.raises(ValueError, match="teachers_per_query"):
        PrivatePredictor(ensemble, GNMax(sigma=1.0), teachers_per_query=M + 1)
    with pytest.raises(ValueError, match="teachers_per_query"):
        PrivatePredictor(ensemble, GNMax(sigma=1.0), teachers_per_query=0)


def test_ledger_must_match_the_mechanism(ensemble):
    with pytest.raises(ValueError, match="sigma"):
        PrivatePredictor(ensemble, GNMax(sigma=4.0), ledger=TinyLedger(sigma=3.0, delta=1e-5))
    with pytest.raises(ValueError, match="threshold"):
        PrivatePredictor(
            ensemble,
            GNMax(sigma=4.0),
            ledger=TinyLedger(sigma=4.0, delta=1e-5, threshold=5, sigma1=1),
        )
    with pytest.raises(ValueError, match="threshold"):
        PrivatePredictor(
            ensemble,
            ConfidentGNMax(threshold=5, sigma1=1.0, sigma2=4.0),
            ledger=TinyLedger(sigma=4.0, delta=1e-5),
        )
    with pytest.raises(ValueError, match="sigma1"):
        PrivatePredictor(
            ensemble,
            ConfidentGNMax(threshold=5, sigma1=1.0, sigma2=4.0),
            ledger=TinyLedger(sigma=4.0, delta=1e-5, threshold=5, sigma1=2.0),
        )
    # a real ledger carries its mechanism value: it must be the aggregator
    agg = ConfidentGNMax(threshold=5, sigma1=1.0, sigma2=4.0)
    other = make_ledger(ConfidentGNMax(threshold=6, sigma1=1.0, sigma2=4.0), delta=1e-5)
    with pytest.raises(ValueError, match=r"ledger\.mechanism=ConfidentGNMax"):
        PrivatePredictor(ensemble, agg, ledger=other)
    PrivatePredictor(ensemble, agg, ledger=make_ledger(ConfidentGNMax(5, 1, 4), delta=1e-5))


def test_bad_arguments(ensemble):
    with pytest.raises(TypeError, match="ensemble"):
        PrivatePredictor(object(), GNMax(sigma=1.0))
    with pytest.raises(TypeError, match="aggregator"):
        PrivatePredictor(ensemble, "gnmax")
    with pytest.raises(TypeError, match="ledger"):
        PrivatePredictor(ensemble, GNMax(sigma=1.0), ledger=object())
    with pytest.raises(TypeError, match="cache"):
        PrivatePredictor(ensemble, GNMax(sigma=1.0), cache="yes")
    api = PrivatePredictor(ensemble, GNMax(sigma=1.0))
    with pytest.raises(ValueError, match="X"):
        api.predict(np.zeros((1, 3)), rng=0)
    with pytest.raises(ValueError, match="orders"):
        api.claimed_rdp([0.5])


# ----------------------------------------------------------------------------- real ledger


def test_with_the_accounting_ledger_budget_is_enforced(digits, ensemble):
    from dpaudit.accounting import PrivacyLedger

    agg = GNMax(sigma=3.0)
    ledger = make_ledger(agg, delta=1e-5, epsilon_budget=3.0, analysis="data-dependent")
    assert isinstance(ledger, PrivacyLedger) and ledger.sigma == 3.0 and ledger.mechanism is agg
    api = PrivatePredictor(ensemble, agg, ledger=ledger)
    labels = api.predict(digits.X_test, rng=0)
    answered = labels >= 0
    k = int(answered.sum())
    assert 0 < k < digits.num_test
    assert np.all(answered[:k]) and np.all(labels[k:] == REFUSED)  # refusal is final
    assert ledger.num_queries == k and ledger.epsilon() <= 3.0
    # oracle: a fresh ledger charged with the same votes in order refuses at the same query
    replay = make_ledger(agg, delta=1e-5, epsilon_budget=3.0, analysis="data-dependent")
    votes = ensemble.votes(digits.X_test)
    for i in range(k):
        replay.charge(votes[i])
    assert not replay.can_afford(votes[k])
    # the claim travels with the mechanism: the predictor's curve is the ledger's
    np.testing.assert_allclose(api.claimed_rdp().epsilons, ledger.rdp.epsilons, rtol=1e-12)
    assert api.claimed_rdp().orders.size == ledger.orders.size
    # data-dependent ≤ data-independent at every order
    di = api.claimed_rdp(analysis="data-independent").epsilons
    assert np.all(api.claimed_rdp().epsilons <= di * (1 + 1e-12))
    np.testing.assert_allclose(di, k * ledger.orders / 9.0, rtol=1e-12)


def test_with_the_accounting_ledger_confident_gnmax(digits, ensemble):
    agg = ConfidentGNMax(threshold=M - 2, sigma1=2.0, sigma2=3.0)
    ledger = make_ledger(agg, delta=1e-5, analysis="data-dependent")
    assert (ledger.threshold, ledger.sigma1) == (M - 2, 2.0)
    api = PrivatePredictor(ensemble, agg, ledger=ledger, cache=True)
    X = np.vstack([digits.X_test[:80], digits.X_test[:10]])
    labels = api.predict(X, rng=4)
    abstained = labels[:80] == ABSTAIN
    assert 0 < abstained.sum() < 80
    np.testing.assert_array_equal(labels[80:], labels[:10])  # repeats: cached
    assert ledger.num_queries == 80 and ledger.num_answered == 80 - abstained.sum()
    np.testing.assert_allclose(api.claimed_rdp().epsilons, ledger.rdp.epsilons, rtol=1e-12)
    with pytest.raises(TypeError, match="aggregator"):
        make_ledger("gnmax", delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        make_ledger(agg, delta=0.0)
    with pytest.raises(ValueError, match="analysis"):
        api.claimed_rdp(analysis="exact")


# ----------------------------------------------------------------------------- concurrency


@contextlib.contextmanager
def _frequent_thread_switches():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _predict_in_threads(api, X, threads=8):
    chunks = np.array_split(np.arange(X.shape[0]), threads)
    results = [None] * threads
    start = threading.Barrier(threads)

    def work(i):
        start.wait()
        results[i] = api.predict(X[chunks[i]], rng=i)

    with _frequent_thread_switches():
        pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    return np.concatenate(results)


@pytest.mark.parametrize("which", ["accounting", "tiny", "slow"])
def test_concurrent_predict_never_overspends(digits, ensemble, which):
    """8 threads share one interface: exactly the sequentially affordable number of queries is
    charged (every query costs the same λ/σ²), each charge is recorded once, ε ≤ budget. The
    Tiny/SlowLedger check then commit without a lock of their own: the predictor's lock is
    what keeps them exact (without it, the SlowLedger overspent in 4 of 5 trial runs)."""
    from dpaudit.accounting import PrivacyLedger

    sigma, delta, budget = 4.0, 1e-5, 6.0
    orders = np.arange(2.0, 65.0)
    if which in ("tiny", "slow"):
        kind = TinyLedger if which == "tiny" else SlowLedger
        ledger = kind(sigma=sigma, delta=delta, epsilon_budget=budget, orders=orders)
    else:
        ledger = PrivacyLedger(
            GNMax(sigma), delta=delta, epsilon_budget=budget, orders=orders,
            analysis="data-independent", conversion="standard",
        )  # fmt: skip
    affordable = 0
    while (
        np.min((affordable + 1) * orders / sigma**2 + math.log(1 / delta) / (orders - 1)) <= budget
    ):
        affordable += 1
    X = digits.X_test[:240]
    api = PrivatePredictor(ensemble, GNMax(sigma=sigma), ledger=ledger)
    labels = _predict_in_threads(api, X)
    charged = int(np.sum(labels != REFUSED))
    assert charged == affordable == ledger.num_queries == api.num_charged
    assert api.num_refused == 240 - affordable and api.exhausted
    assert ledger.epsilon() <= budget
    np.testing.assert_allclose(
        api.claimed_rdp(orders).epsilons, affordable * orders / sigma**2, rtol=1e-14
    )
    if which != "accounting":
        assert len(ledger.charges) == affordable


def test_concurrent_predict_with_cache_charges_each_query_once(digits, ensemble):
    """Threads asking the same 20 queries concurrently: each is charged once, every later copy
    is served from the cache with the first answer."""
    from dpaudit.accounting import PrivacyLedger

    agg = ConfidentGNMax(threshold=M - 2, sigma1=2.0, sigma2=3.0)
    ledger = PrivacyLedger(agg, delta=1e-5)
    api = PrivatePredictor(ensemble, agg, ledger=ledger, cache=True)
    X = np.tile(digits.X_test[:20], (8, 1))
    labels = _predict_in_threads(api, X)
    assert ledger.num_queries == api.num_charged == 20 and api.num_cached == 140
    first = {}
    for row, label in zip(map(bytes, X), labels, strict=True):
        assert first.setdefault(row, label) == label
    np.testing.assert_allclose(api.claimed_rdp().epsilons, ledger.rdp.epsilons, rtol=1e-12)
