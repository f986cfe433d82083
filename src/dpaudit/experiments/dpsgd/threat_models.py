"""Threat models of the DP-SGD audit, as registry values: what the auditor sees and changes.

``settings.threat_model`` names an entry of :data:`THREAT_MODELS`; :func:`audit_dpsgd` runs
it without branching on the name. Each :class:`ThreatModel` states what the auditor sees, what
it may change, the nominal dataset size that fixes the sampling rate, its checks (run before
any training) and its audit.

* ``black-box`` — sees the final model's logits on chosen inputs; inserts m data canaries,
  each in with probability ½.
* ``white-box`` — sees every privatised update (the noisy sum of clipped gradients); inserts
  m Dirac canary gradients at the clipping norm, Poisson-sampled like examples.
* ``all-iterates`` — sees every update of each of many independent runs; inserts one canary
  gradient per run (Nasr et al. 2023's multi-run audit).
* ``worst-case-init`` — sees the final model's loss on one crafted input in each of many
  runs; chooses the initial parameters (pre-trained on public data) and a blank target
  (Annamalai & De Cristofaro 2024).

Example:
    >>> sorted(THREAT_MODELS.names())
    ['all-iterates', 'black-box', 'white-box', 'worst-case-init']
    >>> print(THREAT_MODELS.get("white-box").sees)
    every privatised update of the run (the noisy sum of clipped gradients, step by step)
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from dpaudit._results import AuditResult
from dpaudit._typing import ProgressLike
from dpaudit._validate import check_progress
from dpaudit.experiments.dpsgd.multirun import audit_all_iterates
from dpaudit.experiments.dpsgd.pipeline import audit_black_box, check_layout, load_pool
from dpaudit.experiments.dpsgd.settings import THREAT_MODELS, DPSGDAuditSettings, ThreatModel
from dpaudit.experiments.dpsgd.whitebox import audit_white_box
from dpaudit.experiments.dpsgd.worstcase import audit_worst_case_init
from dpaudit.systems import SYSTEMS, DPSGDCell, LabelledData
from dpaudit.systems.dpsgd import ModelSpec

__all__ = ["THREAT_MODELS", "ThreatModel", "audit_dpsgd"]


def _black_box_settings(s: DPSGDAuditSettings) -> None:
    if s.attack.use_qmia and s.data.num_holdout < 10:
        raise ValueError(
            f"the QMIA attack needs a holdout of at least 10 non-members, got "
            f"num_holdout={s.data.num_holdout} (or set attack.use_qmia = false)"
        )


def _white_box_data(s: DPSGDAuditSettings, pool: LabelledData) -> None:
    r = s.data.num_non_canaries
    if not 1 <= r <= len(pool):
        raise ValueError(
            f"the white-box audit trains on num_non_canaries={r} examples; "
            f"{s.data.dataset} has {len(pool)} (need 1 ≤ r ≤ {len(pool)})"
        )
    if s.training.batch_size > r:
        raise ValueError(f"batch_size={s.training.batch_size} exceeds num_non_canaries={r}")
    if s.training.model == "cnn" and pool.image_shape is None:
        raise ValueError(f"model='cnn' needs image data; {s.data.dataset} is tabular")


THREAT_MODELS.register("black-box", ThreatModel(
    name="black-box",
    sees="the final model's outputs (logits) on the canaries and a holdout",
    may_change="m data canaries in the training set, each included with probability 1/2",
    source="Steinke, Nasr & Jagielski 2023 (arXiv:2305.08846); Liu et al. (QMIA one-run audits)",
    nominal_size=lambda s: s.nominal_size,
    check_settings=_black_box_settings,
    check_data=check_layout,
    audit=audit_black_box,
))  # fmt: skip

THREAT_MODELS.register("white-box", ThreatModel(
    name="white-box",
    sees="every privatised update of the run (the noisy sum of clipped gradients, step by step)",
    may_change="m Dirac canary gradients at the clipping norm in free coordinates, each included "
    "with probability 1/2 and Poisson-sampled like an example",
    source="Nasr et al. 2023 (arXiv:2302.07956); Steinke, Nasr & Jagielski 2023 "
    "(arXiv:2305.08846, §6)",
    nominal_size=lambda s: s.data.num_non_canaries,
    check_settings=lambda s: None,
    check_data=_white_box_data,
    audit=audit_white_box,
))  # fmt: skip


def _all_iterates_settings(s: DPSGDAuditSettings) -> None:
    if s.audit.mode == "sequential" and s.white_box.canaries_per_run != 1:
        raise ValueError(
            "the sequential all-iterates audit streams independent runs, one canary gradient "
            f"each: set white_box.canaries_per_run = 1 (got {s.white_box.canaries_per_run})"
        )
    if s.audit.mode == "sequential" and s.white_box.runs < 10:
        raise ValueError(
            f"the sequential all-iterates audit needs at least 10 runs (8 pilot runs and a "
            f"stream), got white_box.runs = {s.white_box.runs}"
        )


THREAT_MODELS.register("all-iterates", ThreatModel(
    name="all-iterates",
    sees="every privatised update of each of many independent runs",
    may_change="canary gradients (one per run by default) at the clipping norm in free "
    "coordinates, each included with probability 1/2 and Poisson-sampled like an example",
    source="Nasr et al. 2023 (arXiv:2302.07956), the multi-run audit with the per-step "
    "likelihood-ratio statistic",
    nominal_size=lambda s: s.data.num_non_canaries,
    check_settings=_all_iterates_settings,
    check_data=_white_box_data,
    audit=audit_all_iterates,
    sequential=True,
))  # fmt: skip


def _worst_case_settings(s: DPSGDAuditSettings) -> None:
    if s.audit.selection == "bonferroni":
        raise ValueError(
            "the worst-case-init audit chooses its threshold on held-out runs: set "
            "audit.selection to 'split' or 'multi-split' (Bonferroni needs thresholds fixed "
            "in advance)"
        )


def _worst_case_data(s: DPSGDAuditSettings, pool: LabelledData) -> None:
    r, public = s.data.num_non_canaries, s.worst_case.public_size
    if r < 1 or r + public > len(pool):
        raise ValueError(
            f"the worst-case-init audit needs num_non_canaries={r} ≥ 1 records plus "
            f"public_size={public} public ones; {s.data.dataset} has {len(pool)}"
        )
    if s.training.batch_size > r + 1:
        raise ValueError(f"batch_size={s.training.batch_size} exceeds |D| = {r + 1}")
    if s.training.model != "mlp" and pool.image_shape is None:
        raise ValueError(
            f"model={s.training.model!r} needs image data; {s.data.dataset} is tabular"
        )
    if s.worst_case.target_label >= pool.num_classes:
        raise ValueError(
            f"target_label={s.worst_case.target_label} is not a class of {s.data.dataset} "
            f"(0..{pool.num_classes - 1}, or -1 for the least likely)"
        )
    ModelSpec.for_data(pool, s.training.model, s.training.hidden).build()  # e.g. too small


THREAT_MODELS.register("worst-case-init", ThreatModel(
    name="worst-case-init",
    sees="the final model's loss on one crafted input, in each of many independent runs",
    may_change="the initial parameters (pre-trained on a disjoint public split) and one blank "
    "target record, included in half of the runs",
    source="Annamalai & De Cristofaro 2024 (arXiv:2405.14106); estimate of Nasr et al. 2023 "
    "(arXiv:2302.07956)",
    nominal_size=lambda s: s.data.num_non_canaries + 1,
    check_settings=_worst_case_settings,
    check_data=_worst_case_data,
    audit=audit_worst_case_init,
    sequential=True,
))  # fmt: skip


def audit_dpsgd(
    settings: DPSGDAuditSettings,
    *,
    data: LabelledData | None = None,
    progress: ProgressLike = None,
    checkpoint: Any = None,
    system: Any = None,
) -> AuditResult:
    """The one-run audit of DP-SGD under ``settings.threat_model`` (:data:`THREAT_MODELS`).

    Stages: the pool, the threat model's checks, the system and its claims (fixed before any
    training), then the threat model's audit — ``repetitions`` training runs.

    Args:
        settings: :class:`~dpaudit.experiments.dpsgd.settings.DPSGDAuditSettings`.
        data: the data pool (default :func:`load_pool` of ``settings.data``).
        progress: a progress callback over training steps, ``True`` for a bar, or None.
        checkpoint: a directory: the all-iterates runs journal their results there and an
            interrupted audit resumes without rerunning a finished run (the one-run threat
            models train once per repetition and ignore it).
        system: the system to audit (default: ``SYSTEMS.get("dp-sgd")`` of the threat
            model's cell); anything with ``train(members, canaries, included, *, rng,
            progress, instrument)``, ``claims()``, ``mechanism`` and ``noise_multiplier`` —
            e.g. a copy that trains with less noise than it claims (the planted-bug tests).

    Returns:
        :class:`~dpaudit._results.AuditResult` (workflow ``"dp-sgd"``).

    Raises:
        TypeError, ValueError: bad settings or a layout that does not fit the data — before
            any training. MissingDependencyError: torch or opacus missing.
    """
    if not isinstance(settings, DPSGDAuditSettings):
        raise TypeError(f"settings must be DPSGDAuditSettings, got {type(settings).__name__}")
    report = check_progress(progress)
    t0 = time.perf_counter()
    threat = THREAT_MODELS.get(settings.threat_model)
    pool = load_pool(settings.data.dataset, settings.data.path) if data is None else data
    threat.check_data(settings, pool)
    if system is None:
        cell = DPSGDCell(settings.training, threat.nominal_size(settings))
        system = SYSTEMS.get("dp-sgd")(cell)
    claims = tuple(system.claims())
    t1 = time.perf_counter()
    result = threat.audit(settings, system, pool, claims, progress=report, checkpoint=checkpoint)
    return dataclasses.replace(result, timings={"setup+claims": t1 - t0, **result.timings})
