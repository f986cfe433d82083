"""The worst-case-initialised black-box threat model of the DP-SGD audit.

Annamalai & De Cristofaro 2024 (*Nearly Tight Black-Box Auditing of Differentially Private
Machine Learning*, NeurIPS 2024, arXiv:2405.14106): the auditor sees only the final model
(its logits on one input) but chooses what DP-SGD's analysis leaves free — the initial
parameters θ₀ — and the target record. Many independent models are trained, half on
``D = D⁻ ∪ {target}`` and half on ``D⁻``, all from the same θ₀ and the same D⁻; the score of
each model is the target's negative loss. The stages:

1. :func:`draw_data` — D⁻ (``data.num_non_canaries`` records) and a disjoint public split
   (``worst_case.public_size``), dealt from the pool by a seeded permutation;
2. :func:`craft` — θ₀ pre-trained on the public split
   (:func:`dpaudit.attacks.pretrain_initial_state`) and the blank target
   (:func:`dpaudit.attacks.craft_blank_target`), before any DP training;
3. :class:`WorstCaseRun` — one engine task per model (``runs_in`` with the target, then
   ``runs_out`` without), seeded by its index and journalled under ``checkpoint`` so that an
   interrupted audit resumes without retraining a finished model;
4. :func:`bound_runs` — the **valid** Clopper–Pearson ε lower bound of the threshold test,
   the threshold chosen on a held-out part of the runs (``audit.selection``; Jagielski,
   Ullman & Oprea 2020, arXiv:2006.07709), and the papers' Gaussian-DP **estimate**
   (:func:`dpaudit.bounds.gdp_estimate_from_scores`: best threshold, not paid for, Gaussian
   trade-off assumed — labelled not valid);
   or, with ``audit.mode = "sequential"``, :func:`stream_runs` — ``split_fraction`` of the
   runs as a pilot that fixes the threshold, the rest as a stream of (D, D⁻) model pairs
   through the anytime-valid test of the claim (:mod:`dpaudit.experiments._sequential_runs`),
   stopping at its rejection;
5. :func:`audit_worst_case_init` — the :class:`~dpaudit._results.AuditResult` with both.

The system is trained through ``system.train(data, rng=..., initial_state=θ₀)`` (e.g.
:class:`dpaudit.systems.DPSGD`); the paper's setting is full-batch DP-GD
(``training.batch_size`` = |D|, so q = 1).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    ConfidenceInterval,
    LowerBound,
    ResultMixin,
    package_versions,
)
from dpaudit._rng import child_seed
from dpaudit._typing import ProgressLike
from dpaudit.attacks import (
    InitialParameters,
    craft_blank_target,
    per_example_gradient_norms,
    pretrain_initial_state,
    split_pool,
    target_loss_score,
)
from dpaudit.bounds import (
    EpsDeltaAudit,
    GDPEstimate,
    SequentialAudit,
    epsilon_from_scores,
    gdp_estimate_from_scores,
    selection_from_name,
)
from dpaudit.engine import journal_in, run_tasks
from dpaudit.experiments._sequential_runs import (
    SEQUENTIAL_CHUNK,
    StreamedRuns,
    choose_threshold,
    stream_claim_test,
    stream_selections,
    witness_direction,
)
from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings
from dpaudit.systems import DPSGD, LabelledData
from dpaudit.systems.dpsgd import train_dpsgd_batched

__all__ = [
    "WorstCaseDetail",
    "WorstCaseRun",
    "audit_worst_case_init",
    "batched_group_size",
    "bound_runs",
    "craft",
    "draw_data",
    "stream_runs",
]

_GPU_GROUP = 25  # models per batched-trainer call on a CUDA device
_VALID_METHOD = (
    "Clopper–Pearson ε lower bound of the test {−loss(target) ≥ t} over independent runs "
    "(Jagielski, Ullman & Oprea 2020, arXiv:2006.07709), t chosen on held-out runs"
)
_SEQUENTIAL_METHOD = (
    "anytime-valid confidence sequence of the test {−loss(target) ≥ t} over a stream of "
    "independent (D, D⁻) model pairs (test supermartingales by betting), t chosen on pilot runs"
)
_ESTIMATE_METHOD = (
    "Gaussian-DP estimate (Nasr et al. 2023, arXiv:2302.07956, as Annamalai & De Cristofaro "
    "2024, arXiv:2405.14106): best threshold, one-sided 1 − 2α Clopper–Pearson rates"
)


@dataclasses.dataclass(frozen=True)
class WorstCaseDetail(ResultMixin):
    """The worst-case-initialised audit's runs.

    Attributes:
        dataset: the dataset.
        num_members: |D⁻|.
        num_public: public records θ₀ was pre-trained on.
        mechanism: the claimed ``SubsampledGaussian(q, σ, T)``.
        pretrain_epochs: θ₀'s pre-training epochs (0: fixed random θ₀).
        public_accuracy: θ₀'s accuracy on the public records.
        target_label: the blank target's label.
        gradient_norm_median: median per-record gradient norm of D⁻ at θ₀.
        clipped_fraction: share of D⁻ whose gradient at θ₀ exceeds the clipping norm.
        in_scores: the target's negative loss on each model trained with it.
        out_scores: the same on each model trained without it.
        valid: the valid bound (:class:`~dpaudit.bounds.EpsDeltaAudit`; with
            ``audit.mode = "sequential"``, the stream's :class:`~dpaudit.bounds.SequentialAudit`).
        estimate: the papers' estimate (:class:`~dpaudit.bounds.GDPEstimate`; NOT valid).
        computed_runs: models trained in this call (the rest came from the journal).
    """

    dataset: str
    num_members: int
    num_public: int
    mechanism: Any
    pretrain_epochs: int
    public_accuracy: float | None
    target_label: int
    gradient_norm_median: float
    clipped_fraction: float
    in_scores: np.ndarray
    out_scores: np.ndarray
    valid: EpsDeltaAudit | SequentialAudit
    estimate: GDPEstimate
    computed_runs: int
    threshold: float | None = None
    pilot_runs: tuple[int, int] | None = None


def draw_data(
    pool: LabelledData, settings: DPSGDAuditSettings, *, rng: np.random.SeedSequence
) -> tuple[LabelledData, LabelledData]:
    """D⁻ and the disjoint public split, dealt from the pool by a seeded permutation."""
    sizes = {"members": settings.data.num_non_canaries, "public": settings.worst_case.public_size}
    parts = split_pool(len(pool), sizes, rng=rng)
    return pool.subset(parts["members"]), pool.subset(parts["public"])


def craft(
    settings: DPSGDAuditSettings, public: LabelledData, *, rng: np.random.SeedSequence
) -> tuple[InitialParameters, LabelledData]:
    """θ₀ (pre-trained on ``public``) and the blank target, before any DP training."""
    w, t = settings.worst_case, settings.training
    init = pretrain_initial_state(
        public, t.model, epochs=w.pretrain_epochs, learning_rate=w.pretrain_learning_rate,
        batch_size=w.pretrain_batch_size, hidden=t.hidden, rng=rng, num_threads=t.num_threads,
    )  # fmt: skip
    label = None if w.target_label < 0 else w.target_label
    return init, craft_blank_target(init, label=label)


@dataclasses.dataclass(frozen=True)
class WorstCaseRun:
    """One engine task: a model trained from θ₀ on D (index < ``runs_in``) or on D⁻ (the
    rest) → ``[score]``, the target's negative loss on the final model.

    Attributes:
        system: the DP-SGD system (``train(data, *, rng, initial_state)``, ``claims()``).
        members: D⁻.
        target: the crafted target (one row).
        initial_state: θ₀ (parameter name → array; no wall times, so that the task's
            fingerprint, and with it the journal, is the same on resumption).
        runs_in: the number of runs with the target.
        num_threads: torch threads of the scoring forward pass.
        group_size: models trained at once by the batched trainer
            (:func:`dpaudit.systems.train_dpsgd_batched`, the engine's groups, whole groups
            journalled; the same seeds, initial parameters, batches and noise as one model
            at a time, equal to float32 rounding), or None: one model per engine task
            through ``system.train``.
    """

    system: Any
    members: LabelledData
    target: LabelledData
    initial_state: dict[str, np.ndarray]
    runs_in: int
    num_threads: int = 1
    group_size: int | None = None

    def __call__(self, index: int, seed: np.random.SeedSequence) -> np.ndarray:
        data = self.members.concat(self.target) if index < self.runs_in else self.members
        trained = self.system.train(data, rng=seed, initial_state=self.initial_state)
        logits = trained.logits(self.target.X, num_threads=self.num_threads)
        return np.array([target_loss_score(logits, self.target)])

    def run_group(self, indices: list[int], seeds: list) -> list[np.ndarray]:
        """Models ``indices`` in one call of the batched trainer (``group_size`` set): model
        i on D⁻ plus the target if ``i < runs_in``, padded to |D⁻| + 1 so that its
        arithmetic does not depend on the group."""
        n, s = len(indices), self.system
        included = [np.array([i < self.runs_in]) for i in indices]
        trained = train_dpsgd_batched(
            self.members, [self.target] * n, included, s.training_settings, rngs=list(seeds),
            nominal_size=s.dataset_size, width=len(self.members) + 1,
            initial_state=self.initial_state,
        )  # fmt: skip
        logits = trained.logits([self.target.X] * n, num_threads=self.num_threads)
        return [np.array([target_loss_score(z, self.target)]) for z in logits]


def batched_group_size(system: Any) -> int | None:
    """The default of :attr:`WorstCaseRun.group_size`: models per call of the batched trainer
    where it is the faster one, else None (one model per engine task).

    The batched trainer applies to :class:`~dpaudit.systems.DPSGD` itself (not a subclass,
    whose ``train`` may differ, e.g. a planted bug) with SGD and book-keeping clipping. It is
    chosen on a CUDA device (many models' steps per kernel launch). On the CPU at the
    audit's full batches (1,000 images per step) it costs what the one-run trainer costs
    (185 against 182 CPU-ms per model-step, measured interleaved), holds a slice's
    unfolded inputs per model, and journals whole groups: the one-run trainer stays.
    """
    if type(system) is not DPSGD:
        return None
    t = system.training_settings
    if t.optimizer != "sgd" or t.clipping != "book-keeping":
        return None
    return _GPU_GROUP if str(t.device).startswith("cuda") else None


def bound_runs(
    in_scores: np.ndarray,
    out_scores: np.ndarray,
    settings: DPSGDAuditSettings,
    *,
    rng: np.random.SeedSequence,
) -> tuple[EpsDeltaAudit, GDPEstimate]:
    """The valid bound (threshold chosen on held-out runs) and the papers' estimate."""
    a, delta = settings.audit, settings.training.delta
    selection = selection_from_name(a.selection, fraction=a.split_fraction, what="audit.selection")
    valid = epsilon_from_scores(
        in_scores, out_scores, selection=selection, delta=delta,
        confidence_level=a.confidence_level, rng=rng,
    )  # fmt: skip
    w = settings.worst_case
    estimate = gdp_estimate_from_scores(
        in_scores, out_scores, delta=delta, alpha=w.paper_alpha, interval=w.paper_interval
    )
    return valid, estimate


def _entries(valid: EpsDeltaAudit, est: GDPEstimate, claims: tuple, level: float) -> tuple:
    note = (
        f"valid at {level:.0%} with the threshold chosen on held-out runs; the estimate beside "
        f"it is {est.epsilon:.3f} (NOT a valid bound)"
    )
    lower = LowerBound(_VALID_METHOD, level, valid.epsilon, valid.delta,
                       interval=valid.confidence_interval, note=note)  # fmt: skip
    paper = LowerBound(
        _ESTIMATE_METHOD, 1.0 - 2.0 * est.alpha, est.epsilon, est.delta, epsilon_is_valid=False,
        note=f"NOT a valid lower bound: the best of {est.num_thresholds} thresholds, unpaid "
        f"for, and a Gaussian trade-off curve assumed; mu = {est.mu:.4f}",
    )  # fmt: skip
    cp = AuditEntry("dp-sgd", "worst-case-init:cp", lower, claims,
                    selections=(valid.selection,), detail=valid)  # fmt: skip
    return cp, AuditEntry("dp-sgd", "worst-case-init:paper-gdp", paper, claims, detail=est)


def _models(task: WorstCaseRun, n: int, rng: Any, settings: DPSGDAuditSettings, journal: str,
            checkpoint: Any, progress: ProgressLike, description: str):  # fmt: skip
    """``n`` models of ``task`` as one engine job → (scores, models trained in this call)."""
    w = settings.worst_case
    run = run_tasks(task, n, rng=rng, executor=w.executor, workers=w.workers,
                    checkpoint=journal_in(checkpoint, journal),
                    key=f"{journal}:{settings.name}", progress=progress,
                    description=description)  # fmt: skip
    return run.stacked()[:, 0], run.computed_tasks


def stream_runs(
    settings: DPSGDAuditSettings,
    task: WorstCaseRun,
    claim: float,
    *,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> tuple[np.ndarray, np.ndarray, float, StreamedRuns, int]:
    """The sequential form of stages 3–4: pilot models fix the threshold, then model pairs
    stream through the anytime-valid test of ``claim`` until it is rejected.

    The pilot is ``audit.split_fraction`` of ``runs_in`` and of ``runs_out`` (at least 2
    each); the stream has at most the remaining ``min(runs_in, runs_out)`` pairs, in engine
    jobs of :data:`~dpaudit.experiments._sequential_runs.SEQUENTIAL_CHUNK` pairs (chunk k
    seeded by ``child_seed(seed, 3, k)``, journalled, so an interrupted stream resumes).

    Returns:
        ``(pilot in-scores, pilot out-scores, threshold, the stream, models trained)``.
    """
    w, a = settings.worst_case, settings.audit
    pilot_in = min(w.runs_in - 1, max(2, round(a.split_fraction * w.runs_in)))
    pilot_out = min(w.runs_out - 1, max(2, round(a.split_fraction * w.runs_out)))
    pilot_task = dataclasses.replace(task, runs_in=pilot_in)
    scores, computed = _models(pilot_task, pilot_in + pilot_out, child_seed(settings.seed, 2),
                               settings, "worst-case-init.pilot.tasks", checkpoint, progress,
                               "DP-SGD pilot models")  # fmt: skip
    pin, pout = scores[:pilot_in], scores[pilot_in:]
    level = a.confidence_level
    t, _ = choose_threshold(pin, pout, settings.training.delta, level)
    pairs = min(w.runs_in - pilot_in, w.runs_out - pilot_out)
    done = [computed]

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(SEQUENTIAL_CHUNK, pairs - k * SEQUENTIAL_CHUNK)
        sc, c = _models(dataclasses.replace(task, runs_in=n), 2 * n,
                        child_seed(settings.seed, 3, k), settings,
                        f"worst-case-init.seq{k}.tasks", checkpoint, progress,
                        f"DP-SGD model pairs {k * SEQUENTIAL_CHUNK + 1}-"
                        f"{k * SEQUENTIAL_CHUNK + n}")  # fmt: skip
        done[0] += c
        return sc[:n], sc[n:]

    streamed = stream_claim_test(
        draw, threshold=t, forward=witness_direction(pin, pout, t), claimed_epsilon=claim,
        delta=settings.training.delta, confidence_level=level,
        max_chunks=-(-pairs // SEQUENTIAL_CHUNK),
    )  # fmt: skip
    return pin, pout, t, streamed, done[0]


def _sequential_entries(streamed: StreamedRuns, est: GDPEstimate, claims: tuple,
                        pilot: tuple[int, int], budget: int) -> tuple:  # fmt: skip
    s = streamed.state
    lower = LowerBound(
        _SEQUENTIAL_METHOD, s.confidence_level, s.epsilon, s.delta,
        interval=ConfidenceInterval(s.epsilon, math.inf),
        note=f"{streamed.stop_note(f'of at most {budget}')}; threshold from {pilot[0]} + "
        f"{pilot[1]} pilot models; the estimate beside it is {est.epsilon:.3f} (NOT a valid "
        "bound)",
    )  # fmt: skip
    sel = stream_selections(f"{pilot[0]} + {pilot[1]} held-out pilot models")
    seq = AuditEntry("dp-sgd", "worst-case-init:sequential", lower, claims, selections=sel,
                     detail=s)  # fmt: skip
    paper = LowerBound(
        _ESTIMATE_METHOD, 1.0 - 2.0 * est.alpha, est.epsilon, est.delta, epsilon_is_valid=False,
        note=f"NOT a valid lower bound: the best of {est.num_thresholds} thresholds on every "
        f"model trained (pilot and stream), unpaid for, and a Gaussian trade-off curve "
        f"assumed; mu = {est.mu:.4f}",
    )  # fmt: skip
    return seq, AuditEntry("dp-sgd", "worst-case-init:paper-gdp", paper, claims, detail=est)


def audit_worst_case_init(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    claims: tuple,
    *,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Stages 1–5 of the module docstring: ``runs_in + runs_out`` models as engine tasks."""
    t0 = time.perf_counter()
    w = settings.worst_case
    data_seq, init_seq, runs_seq, split_seq = np.random.SeedSequence(settings.seed).spawn(4)
    members, public = draw_data(pool, settings, rng=data_seq)
    init, target = craft(settings, public, rng=init_seq)
    norms = per_example_gradient_norms(init, members)
    t1 = time.perf_counter()
    threads = settings.training.num_threads
    task = WorstCaseRun(system, members, target, init.state, w.runs_in, threads,
                        batched_group_size(system))  # fmt: skip
    if settings.audit.mode == "sequential":
        return _sequential_result(settings, system, task, members, public, init, target, norms,
                                  claims, t0, t1, progress, checkpoint)  # fmt: skip
    run = run_tasks(task, w.runs_in + w.runs_out, rng=runs_seq, executor=w.executor,
                    workers=w.workers, checkpoint=journal_in(checkpoint, "worst-case-init.tasks"),
                    key=f"worst-case-init:{settings.name}", progress=progress,
                    description="DP-SGD models")  # fmt: skip
    scores = run.stacked()[:, 0]
    valid, est = bound_runs(scores[: w.runs_in], scores[w.runs_in :], settings, rng=split_seq)
    level = settings.audit.confidence_level
    detail = WorstCaseDetail(
        settings.data.dataset, len(members), len(public), system.mechanism, init.epochs,
        init.public_accuracy, int(target.y[0]), float(np.median(norms)),
        float(np.mean(norms > settings.training.max_grad_norm)), scores[: w.runs_in],
        scores[w.runs_in :], valid, est, run.computed_tasks,
    )  # fmt: skip
    return AuditResult(
        workflow="dp-sgd",
        entries=_entries(valid, est, claims, level),
        settings=settings,
        seed=settings.seed,
        timings={"craft": t1 - t0, "runs": run.wall_seconds, "all": time.perf_counter() - t0},
        versions=package_versions("torch", "opacus", "dp-accounting"),
        detail=detail,
        note=(
            f"Worst-case-initialised black-box audit (Annamalai & De Cristofaro 2024): "
            f"{w.runs_in} + {w.runs_out} models from one pre-trained θ₀, blank target with label "
            f"{int(target.y[0])}. 'cp' is a valid lower bound at {level:.0%}; 'paper-gdp' is the "
            "papers' estimate, NOT a valid lower bound."
        ),
    )


def _sequential_result(settings, system, task, members, public, init, target, norms, claims,
                       t0, t1, progress, checkpoint) -> AuditResult:  # fmt: skip
    """:func:`audit_worst_case_init`'s result in the sequential mode."""
    w = settings.worst_case
    claim = claims[0].epsilon  # the primary claim: Opacus' chosen accountant
    pin, pout, t, streamed, computed = stream_runs(settings, task, claim, progress=progress,
                                                   checkpoint=checkpoint)  # fmt: skip
    ins = np.concatenate([pin, streamed.in_scores])
    outs = np.concatenate([pout, streamed.out_scores])
    est = gdp_estimate_from_scores(ins, outs, delta=settings.training.delta,
                                   alpha=w.paper_alpha, interval=w.paper_interval)  # fmt: skip
    budget = min(w.runs_in - pin.size, w.runs_out - pout.size)
    detail = WorstCaseDetail(
        settings.data.dataset, len(members), len(public), system.mechanism, init.epochs,
        init.public_accuracy, int(target.y[0]), float(np.median(norms)),
        float(np.mean(norms > settings.training.max_grad_norm)), ins, outs, streamed.state, est,
        computed, t, (pin.size, pout.size),
    )  # fmt: skip
    level = settings.audit.confidence_level
    return AuditResult(
        workflow="dp-sgd",
        entries=_sequential_entries(streamed, est, claims, (pin.size, pout.size), budget),
        settings=settings,
        seed=settings.seed,
        timings={"craft": t1 - t0, "all": time.perf_counter() - t0},
        versions=package_versions("torch", "opacus", "dp-accounting"),
        detail=detail,
        note=(
            f"Worst-case-initialised black-box audit (Annamalai & De Cristofaro 2024), "
            f"sequential: {pin.size} + {pout.size} pilot models fix the threshold, then "
            f"{streamed.pairs} of at most {budget} model pairs streamed through an anytime-valid "
            f"test of the claim ε = {claim:.3f} ({streamed.stop_note('budget spent')}). "
            f"'sequential' is a valid lower bound at {level:.0%} at the stopping time; "
            "'paper-gdp' is the papers' estimate, NOT a valid lower bound."
        ),
    )
