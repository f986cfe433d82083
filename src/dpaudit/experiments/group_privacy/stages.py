"""The stages of the group-privacy audit, each a short public function with a typed result.

``load_data → check_sizes → split_rows → build_target → poison → sample_counts → bound →
exact / claims / normalise`` (Chadha et al. 2024, arXiv:2402.09403, App. C). The training
phase is run once per system with a fixed seed and the adversary's S′ retrains only what its
points touch, so each query's histograms H_S and H_S′ are fixed: the audited mechanism is the
noisy argmax over them, whose output distributions are exact (Eq. 4). The lower bound is the
held-out 2-cut RDP audit of the per-query counts, summed over the queries whose histogram
changed (:func:`dpaudit.experiments.private_prediction.audit_distributions`, reused as is),
and a joint 2-cut over the answers to all changed queries at once (:func:`joint_bound`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import FloatArray, IntArray
from dpaudit.experiments.group_privacy.settings import GroupPrivacySettings

__all__ = [
    "PairedHistograms",
    "Rows",
    "bound",
    "build_target",
    "check_sizes",
    "exact_curve",
    "group_runs",
    "joint_bound",
    "load_data",
    "poison",
    "sample_counts",
    "select_queries",
    "split_rows",
]


def load_data(settings: GroupPrivacySettings, dataset: Any = None) -> Any:
    """The dataset of ``settings`` (or ``dataset``, whose name must match)."""
    from dpaudit.data import load_subset

    ds = (
        load_subset(settings.dataset, n_train=settings.n_train, seed=settings.seed)
        if dataset is None
        else dataset
    )
    if ds.name != settings.dataset:
        raise ValueError(f"dataset must be {settings.dataset!r}, got {ds.name!r}")
    return ds


def check_sizes(settings: GroupPrivacySettings, data: Any) -> None:
    """Refuse, before any training, sizes the dataset cannot hold.

    Raises:
        ValueError: more test rows asked than the dataset has; more teachers (or kNN
            voters) than training rows; a group size m larger than one teacher's data (PATE,
            CaPC: m points in one teacher) or than the poisoning pool (more poison than data).
    """
    from dpaudit.attacks import GROUP_ADVERSARIES

    s = settings
    need = s.queries + s.proxy_queries + s.pool
    if need > data.num_test:
        raise ValueError(
            f"queries + proxy_queries + pool must be at most the {data.num_test} test rows of "
            f"{data.name}, got {s.queries} + {s.proxy_queries} + {s.pool} = {need}"
        )
    for field in ("teachers", "knn_k"):
        if getattr(s, field) > data.num_train:
            raise ValueError(
                f"{field} must be at most the {data.num_train} training rows of {data.name}, "
                f"got {getattr(s, field)}"
            )
    per_teacher = data.num_train // s.teachers
    m = max(s.group_sizes)
    for name in s.adversaries:
        adv = GROUP_ADVERSARIES.get(name)
        if adv.fixed_group:
            continue
        if m > s.pool:
            raise ValueError(
                f"group_sizes: m={m} poisoned points need at most pool={s.pool} rows to "
                "poison with (more poison than data)"
            )
        if adv.within_teacher and m > per_teacher:
            raise ValueError(
                f"group_sizes: m={m} is larger than a teacher's data ({per_teacher} rows "
                f"= {data.num_train} // {s.teachers} teachers) for adversary {name!r}"
            )


@dataclasses.dataclass(frozen=True)
class Rows(ResultMixin):
    """Test-set rows: audited natural queries, proxy queries, poisoning pool (disjoint)."""

    queries: IntArray
    proxy: IntArray
    pool: IntArray


def split_rows(data: Any, settings: GroupPrivacySettings, *, rng: np.random.Generator) -> Rows:
    """A seeded random split of the test rows into queries, proxy queries and pool."""
    s = settings
    perm = rng.permutation(data.num_test)
    a, b = s.queries, s.queries + s.proxy_queries
    return Rows(perm[:a], perm[a:b], perm[b : b + s.pool])


def build_target(
    adversary: Any, settings: GroupPrivacySettings, data: Any, *, rng: np.random.SeedSequence
) -> Any:
    """Train the adversary's registered system once (:func:`dpaudit.attacks.make_target`).

    Private-kNN runs with sampling rate 1 (every one of the k nearest points votes), so its
    votes are deterministic; PATE and CaPC use ``teachers`` and ``estimator``.
    """
    from dpaudit.attacks import make_target
    from dpaudit.systems import SYSTEMS, PrivatePredictionCell

    cell = PrivatePredictionCell(
        teachers=settings.teachers,
        sigma=settings.sigma,
        estimator=settings.estimator,
        options={"private-knn": {"k": settings.knn_k, "sampling_rate": 1.0}},
    )
    system = SYSTEMS.get(adversary.system)(cell)
    return make_target(
        system, data.X_train, data.y_train, num_classes=int(data.num_classes), rng=rng
    )


def group_runs(adversary: Any, settings: GroupPrivacySettings) -> tuple[tuple[Any, int], ...]:
    """The (adversary, m) runs of one group adversary: every group size, or — for a group
    fixed by the system (a whole teacher) — itself once and its single-point comparison at
    m = 1."""
    from dpaudit.attacks import GROUP_ADVERSARIES

    if not adversary.fixed_group:
        return tuple((adversary, m) for m in settings.group_sizes)
    single = GROUP_ADVERSARIES.get(adversary.single_point or adversary.name)
    return ((single, 1), (adversary, 1))


@dataclasses.dataclass(frozen=True, eq=False)
class PairedHistograms(ResultMixin):
    """The noiseless histograms on S and S′ of the audited queries.

    Attributes:
        poisoning: what the adversary changed.
        votes: H_S per query ``(n_Q, C)``.
        poisoned: H_S′ per query ``(n_Q, C)``.
        changed: the queries whose histogram moved.
    """

    poisoning: Any
    votes: IntArray
    poisoned: IntArray
    changed: IntArray

    @property
    def shifts(self) -> IntArray:
        """Votes moved per changed query, ``½‖H_S′ − H_S‖₁``."""
        d = np.abs(self.poisoned[self.changed] - self.votes[self.changed]).sum(axis=1)
        return (d // 2).astype(np.int64)


def poison(
    adversary: Any, target: Any, size: int, data: Any, rows: Rows, *, rng: np.random.Generator
) -> PairedHistograms:
    """Craft S′ (on the proxy queries and pool) and record H_S, H_S′ on the audited queries."""
    X_test, y_test = np.asarray(data.X_test), np.asarray(data.y_test)
    pool = (X_test[rows.pool], y_test[rows.pool])
    p = adversary.craft(target, size, pool, X_test[rows.proxy], rng=rng)
    q = X_test[rows.queries]
    h, h2 = np.asarray(target.votes(q)), np.asarray(target.poisoned_votes(p, q))
    changed = np.flatnonzero(np.any(h != h2, axis=1))
    return PairedHistograms(p, h, h2, changed)


def select_queries(
    pair: PairedHistograms, sigma: float, settings: GroupPrivacySettings
) -> PairedHistograms:
    """Keep the ``audited_queries`` changed queries of largest exact divergence at
    ``report_order`` (ties: lowest index). The choice uses the noiseless histograms only, no
    sampled answer, so the bound on the kept queries stays valid; it spares the union bound
    the many queries whose histogram moved without moving the answer (a decided vote)."""
    k = settings.audited_queries
    if pair.changed.size <= k:
        return pair
    from dpaudit.experiments.private_prediction.stages import exact_rdp

    score = exact_rdp(_pbar(pair, sigma), np.array([settings.report_order]))[:, 0]
    keep = np.sort(np.lexsort((np.arange(score.size), -score))[:k])
    return dataclasses.replace(pair, changed=pair.changed[keep])


def _pbar(pair: PairedHistograms, sigma: float) -> np.ndarray:
    from dpaudit.mechanisms import argmax_probabilities

    i = pair.changed
    h = np.stack([pair.votes[i], pair.poisoned[i]], axis=1).astype(np.float64)
    return argmax_probabilities(h.reshape(-1, h.shape[-1]), sigma).reshape(h.shape)


def sample_counts(
    pair: PairedHistograms, sigma: float, experiments: int, *, rng: np.random.Generator
) -> IntArray:
    """T experiments per changed query under S and S′: ``Multinomial(T, Q(H))`` counts of the
    noisy argmax at noise ``sigma`` (exact in distribution), ``(n, 2, C)``."""
    pbar = _pbar(pair, sigma)
    pbar = pbar / pbar.sum(axis=-1, keepdims=True)
    return rng.multinomial(int(experiments), pbar).astype(np.int64)


def bound(
    counts: IntArray,
    settings: GroupPrivacySettings,
    *,
    rng: np.random.SeedSequence | int,
    confidence_level: float | None = None,
) -> Any:
    """Held-out 2-cut RDP lower bounds per query, summed over the queries (union bound), at
    ``confidence_level`` (default the settings')."""
    from dpaudit.experiments.private_prediction import audit_distributions

    level = settings.confidence_level if confidence_level is None else confidence_level
    return audit_distributions(
        counts,
        settings.order_grid(),
        composition="queries",
        num_composed=max(1, counts.shape[0]),
        confidence_level=level,
        rng=rng,
        selection_order=settings.report_order,
    )


def exact_curve(pair: PairedHistograms, sigma: float, orders: np.ndarray) -> FloatArray:
    """``Σ_q D_α(Q(H_S)‖Q(H_S′))`` over the changed queries at noise ``sigma`` (exact)."""
    from dpaudit.experiments.private_prediction.stages import exact_rdp

    if pair.changed.size == 0:
        return np.zeros(orders.size)
    return exact_rdp(_pbar(pair, sigma), orders).sum(axis=0)


def _llr_sums(lp: np.ndarray, lq: np.ndarray, side: np.ndarray, n: int, gen) -> np.ndarray:
    """Σ_q log(P_q(y_q)/Q_q(y_q)) for n joint experiments, y_q drawn from ``side`` (log)."""
    total = np.zeros(n)
    llr = lp - lq
    for q in range(side.shape[0]):
        cdf = np.cumsum(np.exp(side[q] - np.logaddexp.reduce(side[q])))
        y = np.minimum(np.searchsorted(cdf, gen.random(n), side="right"), cdf.size - 1)
        total += llr[q, y]
    return total


def joint_bound(
    pair: PairedHistograms,
    sigma: float,
    settings: GroupPrivacySettings,
    *,
    rng: np.random.SeedSequence,
    confidence_level: float,
) -> tuple[FloatArray, float]:
    """One 2-cut on the *joint* answers to every changed query: the event "the summed
    log-likelihood ratio of the exact output distributions exceeds t", t chosen on a first
    half of ``joint_experiments`` and bounded (Clopper–Pearson, :func:`dpaudit.bounds.
    rdp_two_cut`) on the second half. Valid for the joint law of the n_Q answers (Chadha et
    al. 2024, arXiv:2402.09403, App. B: a 2-cut of any event is below the divergence); no
    union bound over queries, so thin leakage spread over many queries adds up.

    Returns:
        ``(RDP lower bound per order, threshold t)``.
    """
    from dpaudit.bounds import rdp_two_cut
    from dpaudit.mechanisms import log_argmax_probabilities

    i = pair.changed
    lp = log_argmax_probabilities(pair.votes[i].astype(np.float64), sigma)
    lq = log_argmax_probabilities(pair.poisoned[i].astype(np.float64), sigma)
    half = settings.joint_experiments // 2
    gens = [np.random.default_rng(s) for s in rng.spawn(4)]
    sel = [_llr_sums(lp, lq, side, half, g) for side, g in zip((lp, lq), gens[:2], strict=True)]
    candidates = np.quantile(np.concatenate(sel), np.linspace(0.02, 0.98, 49))
    orders = np.array([settings.report_order])

    # Every candidate threshold's bound on the selection half in one batched call (the same
    # numbers as one call each); the first best, as max() would take it.
    k1, k2 = ((s[None, :] > candidates[:, None]).sum(axis=1) for s in sel)
    res = rdp_two_cut(np.stack([k1, sel[0].size - k1], axis=1),
                      np.stack([k2, sel[1].size - k2], axis=1), orders, output_set=[0],
                      confidence_level=confidence_level)  # fmt: skip
    t = float(candidates[int(np.argmax(res.epsilons[:, 0]))])
    a, b = (_llr_sums(lp, lq, side, half, g) for side, g in zip((lp, lq), gens[2:], strict=True))
    k1, k2 = int(np.sum(a > t)), int(np.sum(b > t))
    res = rdp_two_cut([k1, half - k1], [k2, half - k2], settings.order_grid(), output_set=[0],
                      confidence_level=confidence_level)  # fmt: skip
    return np.asarray(res.epsilons, dtype=np.float64), t
