"""The private-prediction audit end to end, as a short list of stages.

Per system and adversary (Chadha et al. 2024, "Auditing Private Prediction",
arXiv:2402.09403, Alg. 1, §4–5): train N_g instantiations → craft S′ and retrain the receiving
teacher R times → parametric histogram models and their exact output distributions → T
experiments per query through the sampling engine → held-out 2-cut RDP lower bounds composed
over queries or repetitions → the system's claim (data-dependent, data-independent) and the
exact RDP beside it, all in one :class:`dpaudit.AuditResult`.

**Why the curves are ordered.** ``audit ≤ exact`` with probability ≥ 1 − β (the 2-cut of a
divergence is below it, Balle et al. 2020, arXiv:1905.09982, and the bound is valid at its
level). ``exact ≤ data-dependent``: for α > 1, ``(P, Q) ↦ Σ P^α Q^{1−α}`` is jointly convex,
and ``(H_S, H_S′)`` can be coupled so that they differ in at most one teacher's vote, so
``e^{(α−1) D_α(p̄‖p̄′)} ≤ E[e^{(α−1) ε_dd(H)}]`` because ε_dd(H) bounds the divergence to
*every* neighbour of H. ``data-dependent ≤ data-independent`` since ε_dd ≤ α/σ² pointwise
(Papernot et al. 2018, arXiv:1802.08908, Prop. 8). A violation of the last two is a bug and
raises; a violation of the first is a statistical event that the result records.

ε at δ (Balle et al. 2020 Thm 20) is given for display; applied to the audit's RDP lower
bound it is **not** an (ε, δ) lower bound (Chadha et al. 2024 §5.4), and the result says so.

Caveat shared with the paper: answers to repeated queries of one trained interface share its
training randomness, so composing the per-query bound of the modelled mixture over
repetitions treats them as fresh experiments (the composed curves of Chadha et al. 2024
Fig. 3–4).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import AuditEntry, AuditResult, package_versions
from dpaudit._rng import block_seeds, child_seed
from dpaudit._typing import ProgressLike
from dpaudit.experiments.private_prediction import stages
from dpaudit.experiments.private_prediction.confirm import confirm_worst
from dpaudit.experiments.private_prediction.findings import (
    LeakageProfile,
    check_findings,
    scale_max,
)
from dpaudit.experiments.private_prediction.results import (
    AdversaryAudit,
    OrderingCheck,
    PrivatePredictionDetail,
    QueryResults,
    check_ordering,
    epsilon_display,
    make_entry,
)
from dpaudit.experiments.private_prediction.settings import PrivatePredictionSettings
from dpaudit.systems._blas import one_blas_thread as _one_blas_thread

__all__ = ["SUMMARY_ORDERS", "audit_adversary", "audit_private_prediction", "audit_system"]

#: Orders at which per-query curves are kept in the result (full curves are kept composed).
SUMMARY_ORDERS: tuple[float, ...] = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0)

NOTE = (
    "audit = valid RDP lower bound at confidence_level; exact = RDP of the modelled output "
    "distributions; data-dependent / data-independent = the claimed guarantee (Papernot et al. "
    "2018). epsilon values at delta are for display; the audit's is not an (epsilon, delta) "
    "lower bound."
)


class _Clock:
    """Wall seconds per stage."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        yield
        self.timings[name] = time.perf_counter() - t

    def total(self) -> dict[str, float]:
        self.timings["total"] = time.perf_counter() - self._start
        return self.timings


@dataclasses.dataclass(frozen=True)
class _Seeds:
    queries: np.random.SeedSequence
    train: np.random.SeedSequence
    retrain: np.random.SeedSequence


def audit_private_prediction(
    settings: PrivatePredictionSettings,
    *,
    data: Any = None,
    progress: ProgressLike = None,
    checkpoint: str | Path | None = None,
) -> AuditResult:
    """Run the end-to-end audit of private prediction (module notes).

    Everything is validated (settings at construction, sizes against the dataset) before
    any teacher is trained.

    Args:
        settings: :class:`PrivatePredictionSettings`.
        data: a :class:`dpaudit.data.Dataset` to use instead of loading
            ``settings.data.dataset`` (its name must match).
        progress: truthy: rich progress bars for training, retraining and sampling (the
            sampling engine reports to its own bars, so a callback also shows bars).
        checkpoint: directory for the sampling engine's checkpoints (resume an
            interrupted run with the same settings).

    Returns:
        :class:`dpaudit.AuditResult` with one entry per system × adversary (the
        :class:`AdversaryAudit` as each entry's ``detail``).

    Raises:
        ValueError: settings inconsistent with the dataset (too many teachers or queries).
        MissingDatasetError: the dataset is not installed (the message says what to do).
        DPAuditError: exact ≤ data-dependent ≤ data-independent failed (a bug).

    Example:
        >>> s = PrivatePredictionSettings.of(dataset="digits", systems=("capc",),
        ...     adversaries=("pois-advq",), teachers=10, sigma=2.0, queries=4,
        ...     experiments=10**6, instantiations=1, retrainings=1)
        >>> res = audit_private_prediction(s)
        >>> e = res.entry("capc", "pois-advq")
        >>> bool(np.all(e.exact.rdp.epsilons <= e.claim.rdp.epsilons + 1e-12))
        True
    """
    if not isinstance(settings, PrivatePredictionSettings):
        raise TypeError(
            f"settings must be PrivatePredictionSettings, got {type(settings).__name__}"
        )
    with _one_blas_thread():
        return _audit(settings, data, bool(progress), checkpoint)


def _audit(
    settings: PrivatePredictionSettings,
    dataset: Any,
    progress: bool,
    checkpoint_dir: str | Path | None,
) -> AuditResult:
    from dpaudit.attacks import ADVERSARIES
    from dpaudit.systems import SYSTEMS

    clock = _Clock()
    with clock("load"):
        data = stages.load_data(settings, dataset)
    seeds = _Seeds(*block_seeds(np.random.SeedSequence(settings.seed), 3))
    queries = stages.choose_queries(data, settings.adversary.queries, rng=seeds.queries)
    systems = [SYSTEMS.get(name)(settings.system) for name in settings.system.systems]
    adversaries = [ADVERSARIES.get(name) for name in settings.adversary.adversaries]
    run = _Run(settings, data, queries, seeds, clock, {}, progress, checkpoint_dir)
    audited = _audit_systems(systems, adversaries, run)
    with clock("findings"):
        findings = check_findings(
            [e.detail for e in audited.entries],
            confidence_level=settings.audit.confidence_level,
            orders=settings.audit.order_grid(),
            delta=settings.audit.delta,
        )
    detail = PrivatePredictionDetail(
        data.name,
        int(data.num_train),
        int(data.num_test),
        int(data.num_classes),
        audited.accuracy,
        findings,
        audited.retrainings,
    )
    return AuditResult(
        workflow="private-prediction",
        entries=tuple(audited.entries),
        settings=settings,
        seed=settings.seed,
        timings=clock.total(),
        versions=package_versions("scikit-learn", "torch"),
        detail=detail,
        note=NOTE,
    )


@dataclasses.dataclass(frozen=True)
class _SystemsAudited:
    """The entries of every system × adversary, with each system's plurality accuracy and
    distinct retrainings (what :class:`PrivatePredictionDetail` reports)."""

    entries: list[AuditEntry]
    accuracy: dict[str, float]
    retrainings: dict[str, int]


def _audit_systems(systems: list[Any], adversaries: list[Any], run: _Run) -> _SystemsAudited:
    """Train each system (its own stream below the training seed), then audit every
    adversary against it (:func:`audit_system`)."""
    out = _SystemsAudited([], {}, {})
    for system in systems:
        with run.clock(f"{system.name}/training"):
            trained = stages.train(
                system,
                run.data,
                run.queries,
                instantiations=run.settings.adversary.instantiations,
                rng=child_seed(run.seeds.train, stages.stream_id(system)),
                progress=run.progress,
            )
        out.accuracy[system.name] = trained.accuracy
        out.entries.extend(audit_system(system, trained, adversaries, run))
        done = getattr(trained.instantiations, "retrain_cache", None)
        if done is not None:
            out.retrainings[system.name] = len(done)
    return out


@dataclasses.dataclass(eq=False)
class _Run:
    """What every stage of one run shares."""

    settings: PrivatePredictionSettings
    data: Any
    queries: stages.Queries
    seeds: _Seeds
    clock: _Clock
    cache: dict[Any, Any]
    progress: bool = False
    checkpoint_dir: str | Path | None = None


def _stream(run: _Run, system: Any, adversary: Any) -> np.random.SeedSequence:
    """The (system, adversary) stream: retraining, sampling, audit, confirmation below it."""
    return child_seed(run.seeds.retrain, stages.stream_id(system), stages.stream_id(adversary))


def _craft(run: _Run, system: Any, trained: stages.Trained, adversary: Any) -> stages.Neighbours:
    s = run.settings
    with run.clock(f"{system.name}/{adversary.name}/retraining"):
        return stages.craft_neighbours(
            system,
            trained,
            adversary,
            run.queries,
            num_candidates=s.adversary.num_candidates,
            retrainings=s.adversary.retrainings_for(adversary.composition),
            rng=block_seeds(_stream(run, system, adversary), 3)[0],
            progress=run.progress,
        )


def audit_system(
    system: Any, trained: stages.Trained, adversaries: list[Any], run: _Run
) -> list[AuditEntry]:
    """Every adversary against one trained system: craft and retrain per adversary, model
    all their queries in one parallel pass (a query's models share a worker), then sample,
    bound, confirm and claim per adversary."""
    crafted = [_craft(run, system, trained, adv) for adv in adversaries]
    n_classes = run.data.num_classes
    settings = run.settings
    with run.clock(f"{system.name}/models"):
        sets = [
            stages.build_models(system, trained, nb, settings, num_classes=n_classes)
            for nb in crafted
        ]
        for i, adv in enumerate(adversaries):
            if adv.composition == "repetitions" and settings.adversary.shortlist is not None:
                sets[i], crafted[i], _ = stages.shortlist(
                    sets[i],
                    crafted[i],
                    settings.adversary.shortlist,
                    sigma=system.mechanism.sigma,
                    order=settings.audit.selection_order,
                )
        modelled = stages.evaluate_models(
            system,
            sets,
            [nb.columns for nb in crafted],
            run.settings,
            cache=run.cache,
            n_jobs=run.settings.system.n_jobs,
        )
    return [
        _finish(system, trained, adv, nb, mod, run)
        for adv, nb, mod in zip(adversaries, crafted, modelled, strict=True)
    ]


def audit_adversary(
    system: Any,
    trained: stages.Trained,
    adversary: Any,
    queries: stages.Queries,
    data: Any,
    settings: PrivatePredictionSettings,
    *,
    seeds: _Seeds,
    clock: _Clock,
    cache: dict[Any, Any],
    progress: bool = False,
    checkpoint_dir: str | Path | None = None,
) -> AuditEntry:
    """The stages after training, for one system and one adversary (the same numbers as
    within :func:`audit_private_prediction`)."""
    run = _Run(settings, data, queries, seeds, clock, cache, progress, checkpoint_dir)
    neighbours = _craft(run, system, trained, adversary)
    with clock(f"{system.name}/{adversary.name}/models"):
        modelled = stages.model_queries(
            system,
            trained,
            neighbours,
            settings,
            num_classes=data.num_classes,
            cache=cache,
            n_jobs=settings.system.n_jobs,
        )
    return _finish(system, trained, adversary, neighbours, modelled, run)


def _finish(
    system: Any,
    trained: stages.Trained,
    adversary: Any,
    neighbours: stages.Neighbours,
    modelled: stages.Modelled,
    run: _Run,
) -> AuditEntry:
    """Sample, bound, (confirm) and claim one adversary's modelled queries."""
    settings, clock = run.settings, run.clock
    label = f"{system.name}/{adversary.name}"
    key = _stream(run, system, adversary)
    _, sample_seed, audit_seed = block_seeds(key, 3)
    counts, clock.timings[f"{label}/sampling"] = stages.sample_counts(
        modelled,
        settings,
        sigma=system.mechanism.sigma,
        rng=sample_seed,
        checkpoint=_checkpoint(run, system, adversary),
        progress=run.progress,
        description=f"sampling {label}",
    )
    with clock(f"{label}/audit"):
        audited = stages.bound(counts, adversary, settings, rng=audit_seed)
    curves = stages.claim(system, modelled, audited, neighbours, adversary, settings)
    confirmed = None
    if adversary.composition == "repetitions" and settings.adversary.confirmations > 0:
        with clock(f"{label}/confirmation"):
            confirmed = confirm_worst(
                system,
                trained,
                neighbours,
                modelled,
                audited,
                adversary,
                settings,
                num_classes=run.data.num_classes,
                rng=child_seed(key, 3),
                cache=run.cache,
                screening_curves=curves,
                progress=run.progress,
            )
    detail = _adversary_audit(
        system,
        adversary,
        run.queries,
        neighbours,
        modelled,
        audited,
        curves,
        settings,
        label,
        confirmed,
    )
    seconds = clock.timings[f"{label}/sampling"]
    if confirmed is not None:
        seconds += confirmed.engine_seconds
    detail = dataclasses.replace(detail, engine_seconds=seconds)
    return make_entry(detail, primary=getattr(system, "claim_analysis", "data-dependent"))


def _checkpoint(run: _Run, system: Any, adversary: Any) -> Path | None:
    """The sampling engine's checkpoint file of one (system, adversary), if any."""
    if run.checkpoint_dir is None:
        return None
    return Path(run.checkpoint_dir) / f"{system.name}-{adversary.name}.npz"


def _query_results(
    queries: stages.Queries,
    neighbours: stages.Neighbours,
    modelled: stages.Modelled,
    audited: Any,
    orders: np.ndarray,
) -> QueryResults:
    """Per-query details of the audited columns (curves kept at :data:`SUMMARY_ORDERS`)."""
    idx = stages.summary_columns(orders, SUMMARY_ORDERS)
    cols = neighbours.columns
    models = modelled.models
    return QueryResults(
        test_indices=queries.test_indices[cols].astype(np.int64),
        true_labels=queries.y[cols].astype(np.int64),
        crafted_labels=neighbours.crafted_labels,
        affected_teachers=np.array([m.affected_teacher for m in models], dtype=np.int64),
        output_probabilities=modelled.output_probabilities,
        counts=audited.counts,
        output_sets=audited.output_sets,
        summary_orders=orders[idx],
        audit=audited.per_query[:, idx],
        exact=modelled.exact[:, idx],
        data_dependent=modelled.data_dependent[:, idx],
        selection_score=audited.score,
        flips=np.array([m.estimation.flips.num_flips for m in models], dtype=np.int64),
        retrainings=np.array([m.estimation.flips.num_retrainings for m in models], dtype=np.int64),
        dropped_mass=modelled.dropped_mass,
    )


def _adversary_audit(
    system: Any,
    adversary: Any,
    queries: stages.Queries,
    neighbours: stages.Neighbours,
    modelled: stages.Modelled,
    audited: Any,
    curves: stages.ComposedCurves,
    settings: PrivatePredictionSettings,
    label: str,
    confirmed: Any = None,
) -> AdversaryAudit:
    orders = settings.audit.order_grid()
    cols = neighbours.columns
    audit_curve, curves, ordering = _reported_curves(audited, modelled, curves, label, confirmed)
    qres = _query_results(queries, neighbours, modelled, audited, orders)
    w = audited.worst
    return AdversaryAudit(
        algorithm=system.name,
        adversary=adversary.name,
        crafter=adversary.crafter.name,
        distinguisher=adversary.distinguisher.name,
        composition=adversary.composition,
        num_composed=settings.adversary.queries,
        orders=orders,
        audit=np.asarray(audit_curve.epsilons),
        exact=curves.exact,
        data_dependent=curves.data_dependent,
        data_independent=curves.data_independent,
        confidence_level=float(audit_curve.confidence_level),
        per_query_confidence_level=audited.per_query_level,
        selection="split",
        worst_query=w,
        worst_query_test_index=int(queries.test_indices[cols[w]]) if w is not None else None,
        epsilon=epsilon_display(
            audit_curve,
            curves.exact,
            curves.data_dependent,
            curves.data_independent,
            orders,
            settings.audit.delta,
        ),
        ordering=ordering,
        flips=curves.flips,
        num_instantiations=settings.adversary.instantiations,
        num_retrainings=settings.adversary.retrainings_for(adversary.composition),
        experiments=settings.engine.experiments,
        sampler=settings.engine.sampler,
        engine_seconds=0.0,
        queries=qres,
        profile=leakage_profile(
            system.name, adversary, neighbours, modelled, audited, settings, confirmed
        ),
        confirmation=None if confirmed is None else confirmed.record,
    )


def _reported_curves(
    audited: Any,
    modelled: stages.Modelled,
    curves: stages.ComposedCurves,
    label: str,
    confirmed: Any = None,
) -> tuple[Any, stages.ComposedCurves, OrderingCheck]:
    """The composed audit curve and claim curves an entry reports (those of the fresh
    retrainings when the worst query was confirmed), and their check ``audit ≤ exact ≤
    data-dependent ≤ data-independent`` (module notes) over every per-query bound seen."""
    if confirmed is not None:  # the composed numbers rest on the fresh retrainings
        audit_curve, curves = confirmed.audited.curve, confirmed.curves
        per_query = np.vstack([audited.per_query, confirmed.audited.per_query])
        per_exact = np.vstack([modelled.exact, confirmed.modelled.exact])
    else:
        audit_curve = audited.curve
        per_query, per_exact = audited.per_query, modelled.exact
    ordering = check_ordering(
        audit_curve.epsilons,
        curves.exact,
        curves.data_dependent,
        curves.data_independent,
        per_query,
        per_exact,
        label,
    )
    return audit_curve, curves, ordering


def leakage_profile(
    system_name: str,
    adversary: Any,
    neighbours: stages.Neighbours,
    modelled: stages.Modelled,
    audited: Any,
    settings: PrivatePredictionSettings,
    confirmed: Any = None,
) -> LeakageProfile | None:
    """The flips and output distributions behind an entry's composed curves (what the
    findings check scales; :mod:`.findings`); None for models without flip counts (e.g. a
    system with deterministic teachers and no estimation), which the check skips."""
    if any(getattr(getattr(m, "estimation", None), "flips", None) is None for m in modelled.models):
        return None
    nq = settings.adversary.queries
    if adversary.composition == "repetitions":
        w = int(audited.worst)
        if confirmed is not None:
            fl, pbar, among = confirmed.record.flips, confirmed.modelled.output_probabilities, 1
        else:
            fl = modelled.models[w].estimation.flips
            pbar = modelled.output_probabilities[w : w + 1]
            among = settings.adversary.num_candidates  # its flips also chose it
        point = neighbours.points[w]
        digest = hashlib.blake2b(digest_size=12)
        digest.update(str(system_name).encode())
        for part in (np.int64(neighbours.targets[w].source), np.asarray(point.x), point.label):
            digest.update(np.ascontiguousarray(part).tobytes())
        return LeakageProfile(
            "binomial",
            float(fl.num_flips),
            int(fl.num_retrainings),
            among,
            scale_max(pbar),
            pbar,
            "repetitions",
            nq,
            digest.hexdigest(),
        )
    n_cols = len(modelled.models)
    flipped = sum(int(m.estimation.flips.num_flips) for m in modelled.models)
    trials = int(modelled.models[0].estimation.flips.num_retrainings)
    pbar = modelled.output_probabilities
    pbar = pbar[np.any(pbar[:, 0] != pbar[:, 1], axis=1)]
    return LeakageProfile(
        "mean", flipped / n_cols, trials, 1, scale_max(pbar), pbar, adversary.composition, nq
    )
