"""The white-box threat model of the DP-SGD audit: canary gradients read at every step.

The auditor (Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini & Terzis 2023,
arXiv:2302.07956; Steinke, Nasr & Jagielski 2023, arXiv:2305.08846, §6) sees every privatised
update and may add gradients: m Dirac canary gradients at the clipping norm, in free
coordinates, each included with probability ½ and Poisson-sampled like an example
(:class:`dpaudit.integrations.opacus.CanaryAuditor`, attached to the system's Opacus
optimizer). The stages of one repetition:

1. :func:`draw_members` — the r non-canary training examples, dealt from the pool;
2. ``system.train(members, instrument=auditor.attach)`` — one DP-SGD run (q = batch_size / r);
3. ``auditor.result`` — per-canary scores (log-likelihood ratio and inner product), the
   one-run bounds with the number of guesses paid for, the Gaussian-pair estimate, and the
   anytime-valid test of the claimed noise multiplier over the steps
   (:class:`dpaudit.attacks.StepClaimTest`: the step at which a run adding less noise than
   its accountant is told was caught, in ``detail.runs[i].claim_test``).

Repetition 0's result is the workflow's result; the auditor's seed is ``settings.seed`` for
repetition 0 (so a user's own Opacus loop audited with ``CanaryAuditor(..., rng=seed)`` gets
the same bounds), and child stream i of it for repetition i.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from dpaudit._results import AuditResult, ResultMixin, package_versions
from dpaudit._rng import child_seed
from dpaudit._typing import ProgressLike
from dpaudit.attacks import split_pool
from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings
from dpaudit.integrations.opacus import CanaryAuditor, WhiteBoxRun
from dpaudit.systems import LabelledData

__all__ = ["WhiteBoxDetail", "audit_white_box", "draw_members", "run_white_box"]


@dataclasses.dataclass(frozen=True)
class WhiteBoxDetail(ResultMixin):
    """The white-box audit's runs.

    Attributes:
        dataset: the dataset.
        num_canaries: m gradient canaries.
        num_non_canaries: r training examples (the nominal size: q = batch_size / r).
        mechanism: the claimed ``SubsampledGaussian(q, σ, T)``.
        runs: one :class:`~dpaudit.integrations.opacus.WhiteBoxRun` per repetition.
        valid: entry name → valid bound per repetition.
        training_seconds: DP-SGD wall time per repetition (auditor included).
        bookkeeping_seconds: the auditor's share of it per repetition.
    """

    dataset: str
    num_canaries: int
    num_non_canaries: int
    mechanism: Any
    runs: tuple[WhiteBoxRun, ...]
    valid: dict[str, tuple[float, ...]]
    training_seconds: tuple[float, ...]
    bookkeeping_seconds: tuple[float, ...]


def draw_members(pool: LabelledData, settings: DPSGDAuditSettings, *, rng: Any) -> LabelledData:
    """The r training examples of one repetition, dealt from the pool by a seeded permutation."""
    parts = split_pool(len(pool), {"members": settings.data.num_non_canaries}, rng=rng)
    return pool.subset(parts["members"])


def run_white_box(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    index: int,
    claims: tuple,
    *,
    progress: ProgressLike = None,
) -> tuple[AuditResult, float]:
    """One repetition: members, an instrumented training run, the auditor's result."""
    layout_seq, train_seq = child_seed(settings.seed, index).spawn(2)
    audit_rng = settings.seed if index == 0 else child_seed(settings.seed, index, 1)
    members = draw_members(pool, settings, rng=layout_seq)
    auditors: list[CanaryAuditor] = []

    def attach(optimizer: Any, q: float) -> None:
        auditors.append(CanaryAuditor(
            optimizer, sample_rate=q, num_canaries=settings.white_box.gradient_canaries,
            noise_source=settings.white_box.noise_source, rng=audit_rng,
            claimed_noise_multiplier=system.mechanism.noise_multiplier,
        ))  # fmt: skip

    trained = system.train(members, rng=train_seq, progress=progress, instrument=attach)
    a = settings.audit
    result = auditors[0].result(
        claims=claims, delta=settings.training.delta, confidence_level=a.confidence_level,
        selection=a.selection, split_fraction=a.split_fraction, max_points=a.max_guess_points,
    )  # fmt: skip
    return result, trained.seconds


def audit_white_box(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    claims: tuple,
    *,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> AuditResult:
    """``repetitions`` white-box runs; repetition 0's entries, every run in the detail."""
    t0 = time.perf_counter()
    pairs = [run_white_box(settings, system, pool, i, claims, progress=progress)
             for i in range(settings.repetitions)]  # fmt: skip
    first = pairs[0][0]
    runs = tuple(r.detail for r, _ in pairs)
    valid = {
        e.adversary: tuple(float(r.entries[j].lower_bound.epsilon) for r, _ in pairs)
        for j, e in enumerate(first.entries)
    }
    detail = WhiteBoxDetail(
        settings.data.dataset, settings.white_box.gradient_canaries, settings.data.num_non_canaries,
        system.mechanism, runs, valid, tuple(s for _, s in pairs),
        tuple(r.bookkeeping_seconds for r in runs),
    )  # fmt: skip
    spread = {k: f"{np.mean(v):.3f} ± {np.std(v, ddof=1) if len(v) > 1 else 0.0:.3f}"
              for k, v in valid.items() if k.endswith(":max")}  # fmt: skip
    test = runs[0].claim_test
    caught = ""
    if test is not None:
        verdict = (f"rejected at step {test.rejected_at_step} of {test.steps}."
                   if test.rejects_claim else f"not rejected in {test.steps} steps.")  # fmt: skip
        caught = f" Sequential test of the claimed σ = {test.noise_multiplier:g}: {verdict}"
    return dataclasses.replace(
        first,
        settings=settings,
        seed=settings.seed,
        timings={"repetitions": time.perf_counter() - t0},
        versions=package_versions("torch", "opacus", "dp-accounting"),
        detail=detail,
        note=first.note
        + f" Repetition 0 shown; over {settings.repetitions} run(s): {spread}."
        + caught,
    )
