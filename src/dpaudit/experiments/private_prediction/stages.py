"""The stages of the private-prediction audit, each a public function with a typed result.

``load_data → choose_queries → train → craft_neighbours → model_queries → sample_counts →
bound → claim`` (Chadha et al. 2024, "Auditing Private Prediction", arXiv:2402.09403, Alg. 1,
§4–5). The stages see a system only through the
:class:`dpaudit.systems.PrivatePredictionSystem` protocol and an adversary only through
:class:`dpaudit.attacks.Adversary`, so a new system or adversary is a registry entry.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from dpaudit._results import ResultMixin
from dpaudit._rng import block_seeds
from dpaudit._typing import FloatArray, IntArray
from dpaudit.experiments.private_prediction.bound import QueryAudit, audit_distributions
from dpaudit.experiments.private_prediction.settings import (
    DEFAULT_BLOCK,
    PrivatePredictionSettings,
)

__all__ = [
    "ComposedCurves",
    "Modelled",
    "Neighbours",
    "Queries",
    "Trained",
    "bound",
    "build_models",
    "choose_queries",
    "claim",
    "craft_neighbours",
    "data_dependent_claim",
    "evaluate_models",
    "expected_histograms",
    "load_data",
    "model_queries",
    "sample_counts",
    "shortlist",
    "train",
]

_DEFAULT_BLOCK = DEFAULT_BLOCK  # one table, in the settings


def stream_id(obj: Any) -> int:
    """A plug-in's stream index: its ``stream_id``, else a stable hash of its name."""
    sid = getattr(obj, "stream_id", None)
    if sid is not None:
        return int(sid)
    return zlib.crc32(str(obj.name).encode()) & 0x7FFFFFFF


# ----------------------------------------------------------------------------------- data


def load_data(settings: PrivatePredictionSettings, dataset: Any = None) -> Any:
    """The dataset of ``settings.data`` (or ``dataset``), checked against the settings.

    Raises:
        ValueError: a dataset of another name, or too few rows for the teachers or queries.
        MissingDatasetError: the dataset is not installed (the message says what to do).
    """
    from dpaudit.data import load_subset

    d = settings.data
    ds = (
        load_subset(d.dataset, n_train=d.n_train, n_test=d.n_test, seed=settings.seed)
        if (dataset is None)
        else dataset
    )
    if ds.name != d.dataset:
        raise ValueError(f"dataset must be {d.dataset!r}, got {ds.name!r}")
    if settings.system.teachers > ds.num_train:
        raise ValueError(
            f"teachers must be at most the {ds.num_train} training rows of {ds.name}, "
            f"got {settings.system.teachers}"
        )
    if settings.adversary.queries + 1 > ds.num_test:
        raise ValueError(
            f"queries must be at most {ds.num_test - 1} for {ds.name} (one test point is kept "
            f"for the poisoning source), got {settings.adversary.queries}"
        )
    return ds


@dataclasses.dataclass(frozen=True)
class Queries(ResultMixin):
    """The audited queries: n_Q natural test queries, then the poisoning source.

    Attributes:
        test_indices: rows of the test set, ``(n_Q + 1,)`` (the last is the source).
        X: their features.
        y: their labels.
    """

    test_indices: IntArray
    X: FloatArray
    y: IntArray

    @property
    def num_queries(self) -> int:
        """n_Q."""
        return int(self.test_indices.size - 1)


def choose_queries(data: Any, num_queries: int, *, rng: np.random.SeedSequence) -> Queries:
    """A random poisoning source, then n_Q distinct natural test queries without it."""
    from dpaudit.attacks import natural_queries

    gen = np.random.default_rng(rng)
    source = int(gen.integers(data.num_test))
    q_idx = natural_queries(data.num_test, num_queries, rng=gen, exclude=[source])
    rows = np.concatenate([q_idx, [source]])
    return Queries(rows, np.asarray(data.X_test)[rows], np.asarray(data.y_test)[rows])


# ------------------------------------------------------------------------------- training


@dataclasses.dataclass(frozen=True, eq=False)
class Trained:
    """N_g instantiations of a system's training phase and the votes they give.

    Attributes:
        instantiations: the system's :class:`dpaudit.systems.Instantiations`.
        base_votes: histograms of the first instantiation on every query row, ``(n_Q + 1, C)``.
        accuracy: accuracy of their noiseless plurality on the natural queries.
    """

    instantiations: Any
    base_votes: IntArray
    accuracy: float

    @property
    def predictions(self) -> IntArray:
        """Every teacher's vote ``(N_g, n_Q + 1, m)``."""
        return self.instantiations.predictions


def train(
    system: Any,
    data: Any,
    queries: Queries,
    *,
    instantiations: int,
    rng: np.random.SeedSequence,
    progress: Any = None,
) -> Trained:
    """Run the system's training phase N_g times and record the teachers' votes."""
    inst = system.train(
        data.X_train,
        data.y_train,
        queries.X,
        instantiations=instantiations,
        num_classes=data.num_classes,
        rng=rng,
        progress=progress,
    )
    c = data.num_classes
    base = np.stack([np.bincount(p, minlength=c) for p in inst.predictions[0]])
    nq = queries.num_queries
    acc = float(np.mean(base[:nq].argmax(axis=1) == queries.y[:nq]))
    return Trained(inst, base, acc)


# ------------------------------------------------------------------------------- crafting


@dataclasses.dataclass(frozen=True, eq=False)
class Neighbours:
    """The adversary's neighbouring datasets S′ and the receiving teacher's paired votes.

    Attributes:
        targets: the distinguisher's targets (source query, evaluated columns).
        points: the crafted point of each target.
        teachers: the receiving teacher per target where the adversary chose it, else None.
        paired: per target, the receiving teacher's votes before/after retraining.
    """

    targets: tuple[Any, ...]
    points: tuple[Any, ...]
    teachers: tuple[int, ...] | None
    paired: tuple[Any, ...]

    @property
    def columns(self) -> list[int]:
        """The audited query columns, in order."""
        return [c for t in self.targets for c in t.columns]

    @property
    def crafted_labels(self) -> IntArray:
        """The crafted point's label, per audited column."""
        return np.array(
            [p.label for t, p in zip(self.targets, self.points, strict=True) for _ in t.columns],
            dtype=np.int64,
        )


def craft_neighbours(
    system: Any,
    trained: Trained,
    adversary: Any,
    queries: Queries,
    *,
    num_candidates: int,
    retrainings: int,
    rng: np.random.SeedSequence,
    progress: Any = None,
) -> Neighbours:
    """Craft S′ per target and retrain only the teacher that receives the point (R times)."""
    targets = adversary.targets(queries.num_queries, num_candidates)
    points = tuple(
        adversary.craft(
            queries.X[t.source],
            int(queries.y[t.source]),
            trained.base_votes[t.source],
            source_index=int(queries.test_indices[t.source]),
        )
        for t in targets
    )
    teachers = None
    if system.placement == "chosen":
        preds0 = trained.predictions[0]
        teachers = tuple(
            adversary.choose_teacher(preds0[t.source, :], p)
            for t, p in zip(targets, points, strict=True)
        )
    single = all(t.columns == (t.source,) for t in targets)
    paired = system.retrain(
        trained.instantiations,
        np.stack([p.x for p in points]),
        np.array([p.label for p in points]),
        retrainings=retrainings,
        eval_rows=None if single else [queries.X[list(t.columns)] for t in targets],
        teachers=teachers,
        rng=rng,
        progress=progress,
    )
    return Neighbours(tuple(targets), points, teachers, tuple(paired))


# -------------------------------------------------------------------------------- models


@dataclasses.dataclass(frozen=True, eq=False)
class Modelled:
    """Parametric models of every audited query and what they imply.

    Attributes:
        models: one :class:`dpaudit.attacks.HistogramModel` per audited column.
        output_probabilities: exact ``[p̄, p̄′]`` per column, ``(n, 2, C)``.
        exact: per-query exact RDP ``D_α(p̄‖p̄′)``, ``(n, A)``.
        data_dependent: per-query data-dependent claim, ``(n, A)``.
        dropped_mass: histogram mass left out of each data-dependent expectation.
    """

    models: tuple[Any, ...]
    output_probabilities: FloatArray
    exact: FloatArray
    data_dependent: FloatArray
    dropped_mass: FloatArray


def exact_rdp(pbar: np.ndarray, orders: np.ndarray) -> FloatArray:
    """``D_α(p̄ ‖ p̄′)`` per query from ``(n, 2, C)`` output distributions (renormalised)."""
    from dpaudit.divergence import renyi_divergence_from_log

    with np.errstate(divide="ignore"):
        lp = np.log(np.maximum(pbar[:, 0], 0.0))
        lq = np.log(np.maximum(pbar[:, 1], 0.0))
    lp -= special.logsumexp(lp, axis=1, keepdims=True)
    lq -= special.logsumexp(lq, axis=1, keepdims=True)
    return np.maximum(renyi_divergence_from_log(lp, lq, orders), 0.0)


def build_models(
    system: Any,
    trained: Trained,
    neighbours: Neighbours,
    settings: PrivatePredictionSettings,
    *,
    num_classes: int,
) -> tuple[Any, ...]:
    """Maximum-likelihood histogram models (the system's ``histogram_model``), one per
    audited column."""
    from dpaudit.attacks import HISTOGRAM_MODELS, ModelInputs

    modeller = HISTOGRAM_MODELS.get(system.histogram_model)
    audit = settings.audit
    models = []
    for ti, t in enumerate(neighbours.targets):
        for pos, col in enumerate(t.columns):
            inputs = ModelInputs(
                instantiations=trained.instantiations,
                paired=neighbours.paired[ti],
                target=ti,
                position=pos,
                column=col,
                affected_teacher=-1 if neighbours.teachers is None else neighbours.teachers[ti],
                num_classes=num_classes,
                teachers_per_query=system.k,
                neighbour_estimator=settings.adversary.neighbour_estimator,
                confidence_level=audit.confidence_level,
                max_support=audit.max_support,
            )
            models.append(modeller(inputs))
    return tuple(models)


def model_queries(
    system: Any,
    trained: Trained,
    neighbours: Neighbours,
    settings: PrivatePredictionSettings,
    *,
    num_classes: int,
    cache: dict[Any, Any] | None = None,
    n_jobs: int = 1,
) -> Modelled:
    """Maximum-likelihood histogram models (the system's ``histogram_model``), their exact
    output distributions, exact RDP and data-dependent claim per audited column."""
    models = build_models(system, trained, neighbours, settings, num_classes=num_classes)
    return evaluate_models(
        system, [models], [neighbours.columns], settings, cache=cache, n_jobs=n_jobs
    )[0]


def expected_histograms(model: Any) -> FloatArray | None:
    """``(E[H_S], E[H_S′])`` of a multinomial (PATE) or independent-teacher (CaPC) model,
    ``(2, C)``; None for other models."""
    q = getattr(model, "neighbour_probabilities", None)
    k = getattr(model, "teachers_per_query", None)
    if q is None or k is None:
        return None
    tp = getattr(model, "teacher_probabilities", None)
    if tp is not None:  # independent teachers, the affected one replaced
        m = tp.shape[0]
        base = (k / m) * tp.sum(axis=0)
        return np.stack([base, base + (k / m) * (q - tp[model.affected_teacher])])
    m = getattr(model, "num_teachers", None)
    p = getattr(model, "probabilities", None)
    if m is None or p is None:
        return None
    return np.stack([k * p, k * p + (k / m) * (q - p)])


def shortlist(
    models: Sequence[Any],
    neighbours: Neighbours,
    size: int,
    *,
    sigma: float,
    order: float,
) -> tuple[tuple[Any, ...], Neighbours, FloatArray]:
    """Keep the ``size`` adversarial targets of largest *plug-in* leakage: the Rényi
    divergence at ``order`` between the noisy argmax's output distributions at the expected
    histograms ``E[H_S]`` and ``E[H_S′]`` (Chadha et al. 2024, arXiv:2402.09403, Eq. 4). The
    plug-in uses no experiment, so the held-out bound of whichever query is chosen later stays
    valid; it is close to the exact divergence when σ exceeds the histograms' spread (σ = 40
    against a standard deviation of at most 8 votes for 250 teachers).

    Returns:
        ``(models kept, neighbours kept, plug-in score of every candidate)``; everything is
        kept when there are at most ``size`` targets or a model has no expected histograms.
    """
    from dpaudit.mechanisms import argmax_probabilities

    hists = [expected_histograms(m) for m in models]
    if len(models) <= size or any(h is None for h in hists):
        return tuple(models), neighbours, np.full(len(models), np.nan)
    pbar = argmax_probabilities(np.stack(hists), sigma)
    score = exact_rdp(pbar, np.array([float(order)]))[:, 0]
    keep = np.sort(np.lexsort((np.arange(score.size), -score))[:size])
    kept = Neighbours(
        tuple(neighbours.targets[i] for i in keep),
        tuple(neighbours.points[i] for i in keep),
        None if neighbours.teachers is None else tuple(neighbours.teachers[i] for i in keep),
        tuple(neighbours.paired[i] for i in keep),
    )
    return tuple(models[i] for i in keep), kept, score


def _evaluate_chunk(
    system: Any,
    items: list[tuple[int, int, Any]],
    orders: np.ndarray,
    audit: Any,
    claims: dict[Any, Any] | None = None,
    known: frozenset[Any] = frozenset(),
) -> tuple[list[tuple[int, int, np.ndarray]], dict[Any, Any]]:
    """Exact output distributions of some models and the claims of their H_S that are not
    ``known`` yet (one worker; ``claims``: the cache to fill, a fresh one by default)."""
    from dpaudit.systems.private_prediction._ensemble import _one_blas_thread

    out: list[tuple[int, int, np.ndarray]] = []
    claims = {} if claims is None else claims
    sigma = system.mechanism.sigma
    with _one_blas_thread():
        for s, i, model in items:
            out.append((s, i, np.asarray(model.output_distributions(sigma), dtype=np.float64)))
            if (repr(system.mechanism), *model.cache_key()) not in known:
                data_dependent_claim(system, model, orders, audit, claims)
    return out, claims


def evaluate_models(
    system: Any,
    model_sets: Sequence[Sequence[Any]],
    columns: Sequence[Sequence[int]],
    settings: PrivatePredictionSettings,
    *,
    cache: dict[Any, Any] | None = None,
    n_jobs: int = 1,
) -> list[Modelled]:
    """Exact output distributions, exact RDP and data-dependent claims of several sets of
    models (one per adversary), in parallel over the query columns.

    The models of one column (every adversary's) go to the same worker, so the exact
    distributions they share (same vote distribution P) are computed once there. Every value
    is a deterministic function of its model, computed with one BLAS thread, so the result
    is the same whatever ``n_jobs``.
    """
    audit = settings.audit
    orders = audit.order_grid()
    cache = {} if cache is None else cache
    by_column: dict[int, list[tuple[int, int, Any]]] = {}
    for s, (models, cols) in enumerate(zip(model_sets, columns, strict=True)):
        for i, (model, col) in enumerate(zip(models, cols, strict=True)):
            by_column.setdefault(int(col), []).append((s, i, model))
    groups = [by_column[c] for c in sorted(by_column)]
    results = _run_chunks(system, groups, orders, audit, n_jobs, cache)
    pbars = [[None] * len(m) for m in model_sets]
    for out, claims in results:
        for key, value in claims.items():
            cache.setdefault(key, value)
        for s, i, pbar in out:
            pbars[s][i] = pbar
    modelled = []
    for s, models in enumerate(model_sets):
        pbar = np.stack(pbars[s])
        dd = [data_dependent_claim(system, m, orders, audit, cache) for m in models]
        modelled.append(
            Modelled(
                tuple(models),
                pbar,
                exact_rdp(pbar, orders),
                np.stack([d for d, _ in dd]),
                np.array([x for _, x in dd]),
            )
        )
    return modelled


def _run_chunks(system, groups, orders, audit, n_jobs: int, cache: dict[Any, Any]) -> list:
    from dpaudit.errors import require

    if n_jobs == 1 or len(groups) < 2:
        return [_evaluate_chunk(system, [it for g in groups for it in g], orders, audit, cache)]
    joblib = require("joblib", "ml")
    workers = min(joblib.effective_n_jobs(n_jobs), len(groups))
    n_chunks = min(len(groups), 4 * workers)
    bounds = np.linspace(0, len(groups), n_chunks + 1).astype(int)
    chunks = [[it for g in groups[a:b] for it in g] for a, b in itertools.pairwise(bounds) if b > a]
    known = frozenset(cache)
    with joblib.parallel_config(backend="loky", inner_max_num_threads=1):
        return joblib.Parallel(n_jobs=workers)(
            joblib.delayed(_evaluate_chunk)(system, ch, orders, audit, None, known) for ch in chunks
        )


def data_dependent_claim(
    system: Any, model: Any, orders: np.ndarray, audit: Any, cache: dict[Any, Any]
) -> tuple[FloatArray, float]:
    """The system's data-dependent claim for one modelled query, in expectation over the
    model's histograms, and the histogram mass left out (cached by the model's key)."""
    key = (repr(system.mechanism), *model.cache_key())
    if key not in cache:
        sup = model.claim_support(audit.max_support)
        dd = system.query_rdp(
            orders,
            analysis="data-dependent",
            votes=sup.votes,
            probabilities=sup.probabilities,
            dropped_mass=sup.dropped_mass,
            q=audit.data_dependent_q,
        )
        cache[key] = (dd, sup.dropped_mass)
    return cache[key]


# ------------------------------------------------------------------------------ sampling


def sample_counts(
    modelled: Modelled,
    settings: PrivatePredictionSettings,
    *,
    sigma: float,
    rng: np.random.SeedSequence,
    checkpoint: str | Path | None = None,
    progress: bool = False,
    description: str = "sampling",
) -> tuple[IntArray, float]:
    """T experiments per query under S and S′ through the sampling engine.

    ``"exact"``: counts ``~ Multinomial(T, p̄)`` (exact in distribution: each experiment
    draws a fresh histogram, so its output is one draw from p̄). ``"monte-carlo"``: the
    direct simulation (a histogram per experiment, Gaussian noise, argmax).

    Returns:
        ``(counts (n, 2, C), engine wall seconds)``.
    """
    from dpaudit.engine import probabilities_key, run_blocks
    from dpaudit.mechanisms import MultinomialBlock, NoisyArgmaxBlock

    eng = settings.engine
    block = eng.block_size or _DEFAULT_BLOCK[eng.sampler]
    pbar = modelled.output_probabilities
    start = time.perf_counter()
    if eng.sampler == "exact":
        run = run_blocks(
            MultinomialBlock(pbar),
            eng.experiments,
            rng=rng,
            block_size=block,
            executor=eng.executor,
            workers=eng.workers,
            checkpoint=checkpoint,
            key=probabilities_key(pbar),
            progress=progress,
            description=description,
        )
        return run.counts, time.perf_counter() - start
    counts = np.zeros(pbar.shape, dtype=np.int64)
    seeds = block_seeds(rng, 2 * pbar.shape[0])
    for i, model in enumerate(modelled.models):
        for side in (0, 1):
            run = run_blocks(
                NoisyArgmaxBlock(model.sampler(neighbour=bool(side)), sigma),
                eng.experiments,
                rng=seeds[2 * i + side],
                block_size=block,
                executor=eng.executor,
                workers=eng.workers,
                progress=False,
            )
            counts[i, side] = run.counts
    return counts, time.perf_counter() - start


# ------------------------------------------------------------------------- bound and claim


def bound(
    counts: IntArray,
    adversary: Any,
    settings: PrivatePredictionSettings,
    *,
    rng: np.random.SeedSequence,
) -> QueryAudit:
    """Per-query 2-cut RDP lower bounds (output set chosen on a held-out half), composed as
    the adversary's distinguisher says (:func:`audit_distributions`)."""
    return audit_distributions(
        counts,
        settings.audit.order_grid(),
        composition=adversary.composition,
        num_composed=settings.adversary.queries,
        confidence_level=settings.audit.confidence_level,
        rng=rng,
        selection_order=settings.audit.selection_order,
        n_jobs=settings.system.n_jobs,
    )


@dataclasses.dataclass(frozen=True)
class ComposedCurves(ResultMixin):
    """The curves next to the lower bound, composed as the audit's bound is.

    Attributes:
        exact: composed exact RDP of the modelled output distributions.
        data_dependent: composed data-dependent claim.
        data_independent: composed data-independent claim.
        flips: the receiving teacher's flip probability behind the bound.
    """

    exact: FloatArray
    data_dependent: FloatArray
    data_independent: FloatArray
    flips: Any


def claim(
    system: Any,
    modelled: Modelled,
    audited: QueryAudit,
    neighbours: Neighbours,
    adversary: Any,
    settings: PrivatePredictionSettings,
) -> ComposedCurves:
    """The system's claim (data-independent, data-dependent) and the exact RDP, composed over
    n_Q repetitions of the worst query or summed over the natural queries."""
    from dpaudit.attacks import FlipEstimate
    from dpaudit.bounds import clopper_pearson

    nq = settings.adversary.queries
    orders = settings.audit.order_grid()
    di = nq * system.query_rdp(orders)
    if adversary.composition == "repetitions":
        w = audited.worst
        return ComposedCurves(
            nq * modelled.exact[w],
            nq * modelled.data_dependent[w],
            di,
            modelled.models[w].estimation.flips,
        )
    # Pooled over every column's retrainings (the models' own counts).
    nflip = sum(int(m.estimation.flips.num_flips) for m in modelled.models)
    tot = sum(int(m.estimation.flips.num_retrainings) for m in modelled.models)
    level = settings.audit.confidence_level
    flips = FlipEstimate(
        tot, nflip, nflip / tot, clopper_pearson(nflip, tot, confidence_level=level), level
    )
    return ComposedCurves(
        modelled.exact.sum(axis=0), modelled.data_dependent.sum(axis=0), di, flips
    )


def summary_columns(orders: np.ndarray, summary: Sequence[float]) -> IntArray:
    """Indices of the orders nearest to each summary order."""
    return np.array([int(np.argmin(np.abs(orders - a))) for a in summary])
