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

Stages: :func:`canary_run` — one training run with ``canaries_per_run`` canary gradients
(:class:`dpaudit.integrations.opacus.CanaryAuditor`), an engine task (seeded by its index,
resumable from ``checkpoint``); then :func:`audit_all_iterates` pools the scores and bounds
them (:func:`dpaudit.experiments.canary_scores.audit_canary_scores`, design
``"independent"`` for one canary per run).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from dpaudit._results import AuditResult, package_versions
from dpaudit._typing import ProgressLike
from dpaudit.engine import journal_in, run_tasks
from dpaudit.experiments.canary_scores import audit_canary_scores
from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings
from dpaudit.experiments.dpsgd.whitebox import draw_members
from dpaudit.integrations.opacus import CanaryAuditor
from dpaudit.systems import LabelledData

__all__ = ["CanaryRun", "audit_all_iterates"]


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
