"""A new System and a new Adversary, defined here and registered, run through the full
private-prediction audit without editing dpaudit; and the README's "add a system" example."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pytest

from doctest_support import run_examples, section_examples
from dpaudit import AuditResult, Claim, Curve
from dpaudit.accounting import expected_data_dependent_rdp, mechanism_rdp
from dpaudit.attacks import ADVERSARIES, Adversary, CraftedPoint, Target
from dpaudit.experiments import PrivatePredictionSettings, audit_private_prediction
from dpaudit.mechanisms import GNMax
from dpaudit.systems import SYSTEMS, PairedVotes


@dataclasses.dataclass(frozen=True)
class _Votes:
    predictions: np.ndarray
    num_classes: int
    parts: tuple[tuple[np.ndarray, ...], ...]
    X: np.ndarray
    y: np.ndarray
    queries: np.ndarray


def _centroid_votes(X, y, part, rows, c):
    """A teacher: the label of the class centroid (over its part) nearest to each row."""
    cents = np.stack([X[part][y[part] == j].mean(0) if np.any(y[part] == j) else
                      np.full(X.shape[1], np.inf) for j in range(c)])  # fmt: skip
    d = ((rows[:, None, :] - cents[None, :, :]) ** 2).sum(-1)
    return np.argmin(np.nan_to_num(d, nan=np.inf, posinf=np.inf), axis=1)


@dataclasses.dataclass(frozen=True)
class CentroidEnsemble:
    """A toy private-prediction system written from scratch: m nearest-centroid teachers on a
    random partition (numpy only), GNMax on their votes."""

    num_teachers: int
    mechanism: GNMax
    name: ClassVar[str] = "toy-centroids"
    placement: ClassVar[str] = "random"
    histogram_model: ClassVar[str] = "multinomial"

    @property
    def k(self) -> int:
        return self.num_teachers

    def train(self, X, y, queries, *, instantiations, num_classes=None, rng=None, progress=None):
        X, y, q = np.asarray(X, float), np.asarray(y), np.asarray(queries, float)
        c = int(num_classes or y.max() + 1)
        gen = np.random.default_rng(rng)
        preds, parts = [], []
        for _ in range(instantiations):
            split = np.array_split(gen.permutation(len(y)), self.num_teachers)
            parts.append(tuple(split))
            preds.append(np.stack([_centroid_votes(X, y, p, q, c) for p in split], axis=1))
        return _Votes(np.stack(preds).astype(np.int64), c, tuple(parts), X, y, q)

    def retrain(self, trained, points, labels, *, retrainings, eval_rows=None, teachers=None,
                rng=None, progress=None):  # fmt: skip
        gen = np.random.default_rng(rng)
        out = []
        for i, (x, label) in enumerate(zip(np.atleast_2d(points), labels, strict=True)):
            rows = x[None, :] if eval_rows is None else np.atleast_2d(eval_rows[i])
            before, after, who = [], [], []
            for r in range(retrainings):
                g = r % len(trained.parts)
                j = int(gen.integers(self.num_teachers))
                part = trained.parts[g][j]
                c = trained.num_classes
                before.append(_centroid_votes(trained.X, trained.y, part, rows, c))
                X2 = np.vstack([trained.X, x[None, :]])
                y2 = np.append(trained.y, label)
                after.append(_centroid_votes(X2, y2, np.append(part, len(trained.y)), rows, c))
                who.append(j)
            out.append(PairedVotes(np.arange(retrainings) % len(trained.parts), np.array(who),
                                   np.stack(before), np.stack(after)))  # fmt: skip
        return out

    def query_rdp(self, orders, *, analysis="data-independent", votes=None, probabilities=None,
                  dropped_mass=0.0, q="union"):  # fmt: skip
        if analysis == "data-independent":
            return mechanism_rdp(self.mechanism, orders)
        return expected_data_dependent_rdp(
            self.mechanism, votes, probabilities, dropped_mass, orders, q=q
        )

    def claim(self, orders=None, *, delta=None) -> Claim:
        lam = np.asarray([2.0, 10.0] if orders is None else orders, dtype=float)
        return Claim("data-independent", "GNMax", rdp=Curve(lam, self.query_rdp(lam)))


@dataclasses.dataclass(frozen=True)
class AlwaysClassZero:
    """A toy crafter: the query point labelled class 0 (unless that is its label: class 1)."""

    name: str = "class-zero"

    def craft(self, x, true_label, votes, *, source_index=-1) -> CraftedPoint:
        label = 1 if int(true_label) == 0 else 0
        return CraftedPoint(np.asarray(x, dtype=float), label, int(true_label), source_index,
                            self.name, np.asarray(votes))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class FirstQueryOnly:
    """A toy distinguisher: the first query, repeated."""

    name: str = "first-query"
    composition: str = "repetitions"

    def targets(self, num_queries: int, num_candidates: int) -> tuple[Target, ...]:
        return (Target(0, (0,)),)


@pytest.fixture
def registered():
    SYSTEMS.register("toy-centroids", lambda s: CentroidEnsemble(s.teachers, GNMax(s.sigma)))
    ADVERSARIES.register(
        "zero-first",
        Adversary("zero-first", AlwaysClassZero(), FirstQueryOnly(), "toy", "Zero-First"),
    )
    yield
    SYSTEMS.unregister("toy-centroids")
    ADVERSARIES.unregister("zero-first")


def test_a_toy_system_and_adversary_run_through_the_full_audit(registered):
    settings = PrivatePredictionSettings.of(
        dataset="digits", systems=("toy-centroids",), adversaries=("zero-first", "pois-natq"),
        teachers=8, sigma=2.0, queries=4, experiments=10**6, instantiations=2, retrainings=3,
        seed=3,
    )  # fmt: skip
    result: Any = audit_private_prediction(settings)
    assert isinstance(result, AuditResult)
    assert [(e.system, e.adversary) for e in result.entries] == [
        ("toy-centroids", "zero-first"),
        ("toy-centroids", "pois-natq"),
    ]
    for e in result.entries:
        r = e.detail
        assert r.ordering.exact_le_data_dependent and r.ordering.data_dependent_le_data_independent
        np.testing.assert_allclose(r.data_independent, 4 * r.orders / 4.0, rtol=1e-12)
        assert e.gap is not None and not e.gap.refutes_claim
        assert np.all(r.queries.counts.sum(axis=-1) == 10**6)
    first = result.entry("toy-centroids", "zero-first").detail
    assert first.worst_query == 0 and first.queries.crafted_labels.tolist() in ([0], [1])
    again = audit_private_prediction(settings)
    np.testing.assert_array_equal(
        again.entries[0].detail.queries.counts, result.entries[0].detail.queries.counts
    )


def test_unknown_names_are_clear_errors():
    with pytest.raises(ValueError, match="systems"):
        PrivatePredictionSettings.of(systems=("toy-centroids",))
    with pytest.raises(ValueError, match="adversaries"):
        PrivatePredictionSettings.of(adversaries=("zero-first",))


def test_systems_of_other_workflows_are_refused_by_name():
    """Registry tags say which workflow audits a system; untagged ones count as private
    prediction (a user's own system)."""
    from dpaudit._registry import Registry

    assert set(SYSTEMS.names("private-prediction")) >= {"pate", "capc", "private-knn"}
    assert "dp-sgd" not in SYSTEMS.names("private-prediction")
    assert SYSTEMS.tags("alibi") == frozenset({"label-dp"})
    with pytest.raises(ValueError, match=r"'dp-sgd' is not a private-prediction system .*"
                       r"`dpaudit audit dp-sgd`"):  # fmt: skip
        PrivatePredictionSettings.of(systems=("dp-sgd",))
    with pytest.raises(ValueError, match="`dpaudit audit label-dp`"):
        PrivatePredictionSettings.of(systems=("pate", "alibi"))
    reg = Registry("thing")
    reg.register("a", 1, tags=("x",))
    reg.register("b", 2)
    assert reg.names("x") == ("a",) and reg.tags("b") == frozenset() and reg.names() == ("a", "b")
    reg.unregister("a")
    assert reg.names("x") == ()
    with pytest.raises(ValueError, match="unknown thing 'a'"):
        reg.tags("a")


def test_readme_add_a_system_example():
    assert run_examples(section_examples("01-architecture.md")) == 0
    SYSTEMS.unregister("nn-pate")
    ADVERSARIES.unregister("pois-least-advq")
