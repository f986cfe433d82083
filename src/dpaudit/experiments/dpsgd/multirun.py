"""The all-iterates multi-run threat model: one canary gradient per run, many runs.

Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis 2023 (arXiv:2302.07956)
audit DP-SGD tightly by training many independent runs, each with one canary gradient that
is included with probability ½, reading every privatised update of each run and scoring the
canary with the sum of its per-step likelihood ratios. Because the runs are independent, the
in- and out-scores are independent trials, so a threshold test gives a **valid**
Clopper–Pearson bound on ε (Jagielski, Ullman & Oprea 2020, arXiv:2006.07709), and the same
error rates give a confidence bound on the Gaussian-DP μ and its ε — valid only *if* the
mechanism's trade-off curve is Gaussian (the premise of Nasr et al.'s μ estimate; Dong, Roth
& Su 2022, arXiv:1905.02383), which dpaudit labels. The one-run bounds of the pooled
canaries are reported beside them.

With ``audit.mode = "sequential"`` (one canary per run), :func:`stream_all_iterates` spends
``split_fraction`` of the runs as a pilot that fixes the threshold of the likelihood-ratio
score and streams the rest, in-runs paired with out-runs in arrival order, through the
anytime-valid test of the claim (:mod:`dpaudit.experiments._sequential_runs`), stopping
at its rejection: a broken implementation is caught in a fraction of the runs.

Stages: :func:`canary_run` — one training run with ``canaries_per_run`` canary gradients
(:class:`dpaudit.integrations.opacus.CanaryAuditor`), an engine task (seeded by its index,
resumable from ``checkpoint``); then :func:`audit_all_iterates` pools the scores and bounds
them (:func:`dpaudit.experiments.canary_scores.audit_canary_scores`, design
``"independent"`` for one canary per run).
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
from dpaudit.engine import journal_in, run_tasks
from dpaudit.experiments._sequential_runs import (
    SEQUENTIAL_CHUNK,
    StreamedRuns,
    choose_threshold,
    stream_claim_test,
    stream_selections,
    witness_direction,
)
from dpaudit.experiments.canary_scores import audit_canary_scores
from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings
from dpaudit.experiments.dpsgd.whitebox import draw_members
from dpaudit.integrations.opacus import CanaryAuditor
from dpaudit.systems import LabelledData

__all__ = ["CanaryRun", "StreamDetail", "audit_all_iterates", "stream_all_iterates"]


@dataclasses.dataclass(frozen=True)
class CanaryRun:
    """One engine task: a training run with k canary gradients → ``[llr(k), included(k)]``.

    Attributes:
        settings: the audit settings.
        system: the DP-SGD system (``train(..., instrument=...)``).
        pool: the data pool.
    """

    settings: DPSGDAuditSettings
    system: Any
    pool: LabelledData

    def __call__(self, index: int, seed: np.random.SeedSequence) -> np.ndarray:
        layout_seq, train_seq, audit_seq = seed.spawn(3)
        members = draw_members(self.pool, self.settings, rng=layout_seq)
        auditors: list[CanaryAuditor] = []
        k = self.settings.white_box.canaries_per_run

        def attach(optimizer: Any, q: float) -> None:
            auditors.append(CanaryAuditor(
                optimizer, sample_rate=q, num_canaries=k,
                noise_source=self.settings.white_box.noise_source, rng=audit_seq,
                claim_test=False,
            ))  # fmt: skip

        self.system.train(members, rng=train_seq, instrument=attach)
        a = auditors[0]
        return np.concatenate([a.scores()["llr"], a.included.astype(float)])


def audit_all_iterates(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    claims: tuple,
    *,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> AuditResult:
    """``white_box.runs`` runs as engine tasks, then the pooled scores' bounds."""
    t0 = time.perf_counter()
    wb = settings.white_box
    if settings.audit.mode == "sequential":
        return _sequential_result(settings, system, pool, claims, t0, progress, checkpoint)
    run = run_tasks(CanaryRun(settings, system, pool), wb.runs, rng=settings.seed,
                    executor=wb.executor, workers=wb.workers,
                    checkpoint=journal_in(checkpoint, "all-iterates.tasks"),
                    key=f"all-iterates:{settings.name}",
                    progress=progress, description="DP-SGD runs")  # fmt: skip
    k = wb.canaries_per_run
    stacked = run.stacked()
    scores, included = stacked[:, :k].ravel(), stacked[:, k:].ravel().astype(bool)
    a = settings.audit
    pooled = audit_canary_scores(
        scores[included], scores[~included], design="independent" if k == 1 else "one-run",
        delta=settings.training.delta, confidence_level=a.confidence_level,
        selection=a.selection, split_fraction=a.split_fraction, max_points=a.max_guess_points,
        rng=settings.seed,
    )  # fmt: skip
    entries = tuple(
        dataclasses.replace(e, system="dp-sgd", adversary=f"llr:{e.adversary}", claims=claims)
        for e in pooled.entries
    )
    return AuditResult(
        workflow="dp-sgd",
        entries=entries,
        settings=settings,
        seed=settings.seed,
        timings={"runs": run.wall_seconds, "all": time.perf_counter() - t0},
        versions=package_versions("torch", "opacus", "dp-accounting"),
        detail=pooled.detail,
        note=(
            f"All-iterates multi-run audit: {wb.runs} independent runs with {k} canary "
            f"gradient(s) each, per-step likelihood-ratio scores. {pooled.note}. The 'gdp' "
            "bound rests on a Gaussian trade-off curve (Nasr et al. 2023's premise)."
        ),
    )


@dataclasses.dataclass(frozen=True)
class StreamDetail(ResultMixin):
    """A sequential many-run audit's runs.

    Attributes:
        threshold: the score threshold, fixed on the pilot runs.
        forward: its event: ``score ≥ t`` on runs with the canary (True) or ``score < t`` on
            runs without it (False).
        pilot_in, pilot_out: the pilot runs' scores, with and without the canary.
        stream: the :class:`~dpaudit.experiments._sequential_runs.StreamedRuns`.
        budget_runs: the most runs the stream could have used.
        computed_runs: runs trained in this call (the rest came from the journals).
    """

    threshold: float
    forward: bool
    pilot_in: np.ndarray
    pilot_out: np.ndarray
    stream: StreamedRuns
    budget_runs: int
    computed_runs: int


def _runs(settings: DPSGDAuditSettings, task: CanaryRun, n: int, rng: Any, journal: str,
          checkpoint: Any, progress: ProgressLike, description: str):  # fmt: skip
    """``n`` canary runs as one engine job → (scores with, scores without, runs trained)."""
    wb = settings.white_box
    run = run_tasks(task, n, rng=rng, executor=wb.executor, workers=wb.workers,
                    checkpoint=journal_in(checkpoint, journal),
                    key=f"{journal}:{settings.name}", progress=progress,
                    description=description)  # fmt: skip
    stacked = run.stacked()
    scores, included = stacked[:, 0], stacked[:, 1].astype(bool)
    return scores[included], scores[~included], run.computed_tasks


def stream_all_iterates(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    claim: float,
    *,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> StreamDetail:
    """The sequential all-iterates audit (one canary per run).

    ``audit.split_fraction`` of ``white_box.runs`` (at least 8) are pilot runs (seeds
    ``child_seed(seed, 2)``): the threshold with the largest Clopper–Pearson bound on them
    and its event. The other runs stream in engine jobs of ``2 ×``
    :data:`~dpaudit.experiments._sequential_runs.SEQUENTIAL_CHUNK` runs (job k seeded by
    ``child_seed(seed, 3, k)`` and journalled), runs with the canary paired with runs
    without it in arrival order, until the test of ``claim`` rejects it or the runs are spent.
    """
    wb, a = settings.white_box, settings.audit
    task = CanaryRun(settings, system, pool)
    pilot = min(wb.runs - 2, max(8, round(a.split_fraction * wb.runs)))
    pin, pout, computed = _runs(settings, task, pilot, child_seed(settings.seed, 2),
                                "all-iterates.pilot.tasks", checkpoint, progress,
                                "DP-SGD pilot runs")  # fmt: skip
    delta, level = settings.training.delta, a.confidence_level
    if pin.size and pout.size:
        t, _ = choose_threshold(pin, pout, delta, level)
        forward = witness_direction(pin, pout, t)
    else:  # every pilot run on one side (p = 2^-7 at 8 runs): the median, D′ above it
        t, forward = float(np.median(np.concatenate([pin, pout]))), True
    budget = wb.runs - pilot
    step = 2 * SEQUENTIAL_CHUNK
    done = [computed]

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(step, budget - k * step)
        pos, neg, c = _runs(settings, task, n, child_seed(settings.seed, 3, k),
                            f"all-iterates.seq{k}.tasks", checkpoint, progress,
                            f"DP-SGD runs {k * step + 1}-{k * step + n}")  # fmt: skip
        done[0] += c
        return pos, neg

    streamed = stream_claim_test(draw, threshold=t, forward=forward, claimed_epsilon=claim,
                                 delta=delta, confidence_level=level,
                                 max_chunks=-(-budget // step))  # fmt: skip
    return StreamDetail(t, forward, pin, pout, streamed, budget, done[0])


def _sequential_result(settings, system, pool, claims, t0, progress, checkpoint) -> AuditResult:
    """:func:`audit_all_iterates`' result in the sequential mode."""
    claim = claims[0].epsilon  # the primary claim: Opacus' chosen accountant
    d = stream_all_iterates(settings, system, pool, claim, progress=progress,
                            checkpoint=checkpoint)  # fmt: skip
    s = d.stream.state
    pilot = d.pilot_in.size + d.pilot_out.size
    lower = LowerBound(
        "white-box multi-run threshold test of the per-step likelihood-ratio score, "
        "anytime-valid confidence sequence (test supermartingales by betting)",
        s.confidence_level, s.epsilon, s.delta, interval=ConfidenceInterval(s.epsilon, math.inf),
        note=f"{d.stream.stop_note(f'of at most {d.budget_runs} runs')}; threshold from "
        f"{pilot} pilot runs",
    )  # fmt: skip
    sel = stream_selections(f"{pilot} held-out pilot runs")
    entry = AuditEntry("dp-sgd", "llr:sequential", lower, claims, selections=sel, detail=s)
    return AuditResult(
        workflow="dp-sgd",
        entries=(entry,),
        settings=settings,
        seed=settings.seed,
        timings={"all": time.perf_counter() - t0},
        versions=package_versions("torch", "opacus", "dp-accounting"),
        detail=d,
        note=(
            f"All-iterates multi-run audit, sequential: {pilot} pilot runs fix the threshold "
            f"of the per-step likelihood-ratio score, then runs with one canary gradient each "
            f"stream through an anytime-valid test of the claim ε = {claim:.3f} "
            f"({d.stream.stop_note('run budget spent')})."
        ),
    )
