"""The Lifted-DP audit of DP-SGD: k random canaries per training run, many runs as tasks.

Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh 2023 ("Unleashing the Power of Randomization
in Auditing Differentially Private ML", NeurIPS 2023, arXiv:2305.18447), "Experiments:
FashionMNIST + MLP model". Stages:

1. :func:`load_data` — an offline dataset (train and test rows as one pool), images
   average-pooled (``data.pooling``).
2. :func:`draw_layout` — the fixed training set D (``num_train`` examples) and a disjoint
   canary pool, dealt by a seeded permutation (child 0 of the seed).
3. ``SYSTEMS.get("dp-sgd")(settings.system_cell)`` — the DP-SGD system
   (:class:`dpaudit.systems.DPSGD`) from its settings cell, on the nominal size
   ``num_train + max k`` with sampling rate q: its noise multiplier and its claims
   (Opacus' accountant first), fixed before any run. The same mechanism, hence the same
   claim, for every run and every k.
4. :class:`DPSGDCanaryRuns` — one training run (a pure function of its seed, picklable): an
   *alternative* run draws k canaries i.i.d. from the canary distribution and trains on
   D ∪ {c₁…c_k}; a *null* run draws 2k − 1 distinct canaries in a uniformly random order,
   trains on D ∪ {c₁…c_{k−1}} and tests the k others. Statistic: the final model's logit
   margin (or minus the loss) of each tested canary with its training label — larger means
   "included" (:func:`dpaudit.attacks.membership_score`). Canaries drawn from the data
   (``flipped``, ``data``) are distinct within a run and come from a pool disjoint from D;
   the random order makes every fresh canary distributed as the k-th included one given the
   others, which is what the LiDP tests need. Generated canaries (``signs``, ``noise``) are
   i.i.d.
5. :func:`dpaudit.experiments.lidp_dpsgd.runs.audit_canary_runs` — every run as a task of
   :func:`dpaudit.engine.run_tasks` (checkpointed; processes or Ray), τ tuned per method on
   separate runs, CP/W1/W2/W4 bounds, curves and the gain over k = 1 (child 1 of the seed).

:func:`run_lidp_dpsgd` returns an :class:`~dpaudit._results.AuditResult` (workflow
``"lidp-dp-sgd"``): one entry per k × interval method whose lower bound is repetition 0's
(valid at its confidence level; τ recorded as a ``"split"`` selection) next to the system's
claims; each entry's ``detail`` is the :class:`~dpaudit.bounds.LiDPResult`; the run's
``detail`` is :class:`LiDPDPSGDDetail` (curves, gains, statistics, throughput). A system
object can be passed in — e.g. a copy that trains with less noise than it claims (the
planted-bug test).

Example:
    >>> s = LiDPDPSGDSettings()
    >>> s.audit.num_runs, s.audit.tuning_runs, s.canaries.kind
    (100, 50, 'signs')
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    LowerBound,
    ResultMixin,
    SelectionRecord,
    package_versions,
)
from dpaudit._rng import child_seed
from dpaudit._typing import ProgressLike
from dpaudit._validate import check_progress
from dpaudit.attacks import draw_canaries, membership_score, split_pool
from dpaudit.engine import EXECUTORS, Executor, RayExecutor
from dpaudit.experiments.dpsgd.pipeline import load_pool
from dpaudit.experiments.lidp_dpsgd.batched import BatchedDPSGDCanaryRuns
from dpaudit.experiments.lidp_dpsgd.runs import LiDPRunsAudit, audit_canary_runs
from dpaudit.experiments.lidp_dpsgd.settings import LiDPDPSGDSettings
from dpaudit.systems import SYSTEMS, DPSGDSettings, LabelledData, train_dpsgd

__all__ = [
    "JOURNAL",
    "SYSTEM",
    "WORKFLOW",
    "DPSGDCanaryRuns",
    "Layout",
    "LiDPDPSGDDetail",
    "build_runs",
    "check_layout",
    "draw_layout",
    "load_data",
    "pool_images",
    "resolve_executor",
    "run_lidp_dpsgd",
]

#: The journal of finished training runs inside a ``checkpoint`` directory.
JOURNAL = "runs.tasks"

WORKFLOW = "lidp-dp-sgd"
SYSTEM = "dp-sgd"


# ---------------------------------------------------------------------------------- data


def pool_images(data: LabelledData, factor: int) -> LabelledData:
    """Average-pool image rows by ``factor`` in each direction (1: unchanged).

    Raises:
        ValueError: pooling of rows that are not images, or a factor that does not divide
            the image size.

    Example:
        >>> d = LabelledData(np.arange(16.0).reshape(1, 16), np.array([0]), 2, (4, 4))
        >>> pool_images(d, 2).X.tolist(), pool_images(d, 2).image_shape
        ([[2.5, 4.5, 10.5, 12.5]], (2, 2))
    """
    if factor == 1:
        return data
    if data.image_shape is None:
        raise ValueError(f"pooling={factor} needs image data; use pooling = 1")
    h, w = data.image_shape
    if h % factor or w % factor:
        raise ValueError(f"pooling={factor} does not divide the image size {h}×{w}")
    c = data.channels
    x = data.X.reshape(-1, c, h // factor, factor, w // factor, factor).mean(axis=(3, 5))
    return dataclasses.replace(
        data, X=x.reshape(len(data), -1), image_shape=(h // factor, w // factor)
    )


def load_data(settings: LiDPDPSGDSettings) -> LabelledData:
    """The dataset's train and test rows as one pool, images pooled (``data.pooling``).

    Raises:
        ValueError: unknown dataset, pooling that does not fit. MissingDatasetError: not
            installed.
    """
    return pool_images(load_pool(settings.data.dataset, settings.data.path), settings.data.pooling)


def check_layout(settings: LiDPDPSGDSettings, pool: LabelledData) -> None:
    """D and the canary pool fit the data; the model fits the rows (before any training).

    Raises:
        ValueError: ``num_train`` (+ ``canary_pool``) larger than the data; a CNN on
            non-image rows.
    """
    need = settings.pool_examples
    if need > len(pool):
        what = "num_train" if settings.canaries.synthetic else "num_train + canary_pool"
        raise ValueError(
            f"{what} = {need} examples, but {settings.data.dataset} (after pooling) has {len(pool)}"
        )
    if settings.training.model == "cnn" and pool.image_shape is None:
        raise ValueError(f"model='cnn' needs image data; {settings.data.dataset} is tabular")


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """The fixed training set D and the pool data-based canaries come from.

    Attributes:
        train: D.
        canary_pool: the canaries' source (None for generated canaries).
        train_index: D's rows in the pool.
    """

    train: LabelledData
    canary_pool: LabelledData | None
    train_index: np.ndarray


def draw_layout(
    pool: LabelledData, settings: LiDPDPSGDSettings, *, rng: np.random.SeedSequence
) -> Layout:
    """Deal D and the canary pool from the data (a seeded permutation)."""
    synthetic = settings.canaries.synthetic
    sizes = {"train": settings.data.num_train,
             "canaries": 0 if synthetic else settings.data.canary_pool}  # fmt: skip
    parts = split_pool(len(pool), sizes, rng=rng)
    source = None if synthetic else pool.subset(parts["canaries"])
    return Layout(pool.subset(parts["train"]), source, parts["train"])


# ---------------------------------------------------------------------------------- runs


@dataclasses.dataclass(frozen=True, eq=False)
class DPSGDCanaryRuns:
    """One DP-SGD training run with canaries (module notes, stage 4); a pure, picklable
    :class:`~dpaudit.experiments.lidp_dpsgd.runs.CanaryRuns`.

    Attributes:
        train: the fixed training set D.
        canary_pool: where data-based canaries are drawn (None: generated from ``kind``).
        kind: the canary distribution (:data:`dpaudit.attacks.CANARY_KINDS`).
        statistic: the score (:data:`dpaudit.attacks.MEMBERSHIP_SCORES`).
        settings: training settings with σ resolved.
        nominal_size: the size that fixes q.
        extras: ``("final_loss",)``: the mean training loss of the last steps.
    """

    train: LabelledData
    canary_pool: LabelledData | None
    kind: str
    statistic: str
    settings: DPSGDSettings
    nominal_size: int
    extras: tuple[str, ...] = ("final_loss",)

    def __call__(
        self, alternative: bool, num_canaries: int, seed: np.random.SeedSequence
    ) -> np.ndarray:
        """``(k + 1,)``: the k tested canaries' statistics, then the final training loss."""
        k = int(num_canaries)
        m = k if alternative else 2 * k - 1
        source = self.canary_pool if self.canary_pool is not None else self.train
        drawn = draw_canaries(source.X, source.y, m, num_classes=self.train.num_classes,
                              kind=self.kind, rng=child_seed(seed, 0))  # fmt: skip
        order = np.random.default_rng(child_seed(seed, 1)).permutation(m)
        X, labels = drawn.X[order], drawn.labels[order]
        canaries = dataclasses.replace(self.train, X=X, y=labels)
        included = np.arange(m) < (k if alternative else k - 1)
        tested = slice(0, k) if alternative else slice(k - 1, m)
        trained = train_dpsgd(self.train, canaries, included, self.settings,
                              rng=child_seed(seed, 2), nominal_size=self.nominal_size)  # fmt: skip
        logits = trained.logits(X[tested], num_threads=self.settings.num_threads)
        scores = membership_score(logits, labels[tested], self.statistic)
        return np.append(scores, trained.final_loss)


def build_runs(settings: LiDPDPSGDSettings, layout: Layout, system: Any) -> Any:
    """The run function of this audit (the system's training settings, σ resolved): one
    Opacus run per task, or with ``training.trainer = "batched"`` groups of runs at once
    (:class:`~dpaudit.experiments.lidp_dpsgd.batched.BatchedDPSGDCanaryRuns`)."""
    c = settings.canaries
    common = (layout.train, layout.canary_pool, c.kind, c.statistic,
              system.training_settings, system.dataset_size)  # fmt: skip
    if settings.training.trainer == "batched":
        return BatchedDPSGDCanaryRuns(*common, group_size=settings.training.group_size)
    return DPSGDCanaryRuns(*common)


def resolve_executor(settings: LiDPDPSGDSettings) -> Executor:
    """The executor of ``[execution]``: Ray at ``address`` if given, else the named one."""
    e = settings.execution
    workers = e.resolved_workers
    if e.address is not None:
        return RayExecutor(workers, address=e.address)
    return EXECUTORS.get(e.executor)(workers)


# -------------------------------------------------------------------------------- result


@dataclasses.dataclass(frozen=True)
class LiDPDPSGDDetail(ResultMixin):
    """The whole audit: data, mechanism, the LiDP audit of every k, throughput.

    Attributes:
        dataset: the dataset.
        num_features: features per row after pooling.
        num_train: |D|.
        nominal_size: the size that fixes q.
        mechanism: the claimed ``SubsampledGaussian(q, σ, T)``.
        canary_kind: the canary distribution.
        statistic: the test statistic.
        audit: :class:`~dpaudit.experiments.lidp_dpsgd.runs.LiDPRunsAudit` (bounds per k, method
            and repetition; curves; gains; statistics).
        runs_per_minute: training runs computed per minute of wall time in this call.
    """

    dataset: str
    num_features: int
    num_train: int
    nominal_size: int
    mechanism: Any
    canary_kind: str
    statistic: str
    audit: LiDPRunsAudit
    runs_per_minute: float


def _entries(audit: LiDPRunsAudit, claims: tuple, n_tune: int, num: int) -> list[AuditEntry]:
    out = []
    for a in audit.audits:
        for m in a.methods:
            res = a.bounds[m][0]
            eps = a.epsilons(m)
            note = (
                f"repetition 0: {audit.num_runs} alternative + {audit.num_runs} null training "
                f"runs with {a.num_canaries} canaries each"
            )
            if audit.repetitions > 1:
                note += (
                    f"; over {audit.repetitions} repetitions: mean {eps.mean():.4f} ± "
                    f"{eps.std(ddof=1):.4f} (a summary, not itself a bound)"
                )
            tuned = SelectionRecord(
                "threshold τ", "split",
                f"maximises this method's bound over {num} candidates (10–90 % "
                f"quantile window) on {n_tune} + {n_tune} separate tuning runs; τ = "
                f"{a.thresholds[m][0]:.6g}",
            )  # fmt: skip
            lower = LowerBound(
                f"Lifted DP, {m}, k = {a.num_canaries} (Pillutla et al. 2023, arXiv:2305.18447)",
                res.confidence_level, res.epsilon, res.delta,
                interval=res.confidence_interval, note=note,
            )  # fmt: skip
            adversary = f"k={a.num_canaries}:{m}"
            out.append(AuditEntry(SYSTEM, adversary, lower, claims, selections=(tuned,),
                                  detail=res))  # fmt: skip
    return out


def run_lidp_dpsgd(
    settings: LiDPDPSGDSettings,
    *,
    data: LabelledData | None = None,
    progress: ProgressLike = None,
    checkpoint: str | os.PathLike[str] | None = None,
    system: Any = None,
    executor: Executor | None = None,
) -> AuditResult:
    """The Lifted-DP audit of DP-SGD (module notes).

    Args:
        settings: :class:`~dpaudit.experiments.lidp_dpsgd.settings.LiDPDPSGDSettings`.
        system: the system to audit (default: ``SYSTEMS.get("dp-sgd")`` of
            ``settings.system_cell``): anything with
            ``claims()``, ``mechanism``, ``training_settings`` and ``dataset_size`` — e.g. a
            copy that trains with less noise than it claims.
        data: the data pool (default :func:`load_data` of ``settings.data``; pooling is not
            applied to a pool passed in).
        executor: where the training runs go (default from ``settings.execution``).
        checkpoint: a directory for the journal of finished runs (``runs.tasks`` in it): an
            interrupted audit resumes from it and no finished run is trained again.
        progress: a callback ``(done, total, description)`` over training runs, True (a
            bar), or None.

    Returns:
        :class:`~dpaudit._results.AuditResult` (module notes).

    Raises:
        TypeError, ValueError: bad settings, a layout that does not fit the data, a
            checkpoint of another run — before any training. MissingDependencyError: torch,
            opacus (or ray) missing.
    """
    if not isinstance(settings, LiDPDPSGDSettings):
        raise TypeError(f"settings must be LiDPDPSGDSettings, got {type(settings).__name__}")
    report = check_progress(progress)
    t0 = time.perf_counter()
    pool = load_data(settings) if data is None else data
    journal = None if checkpoint is None else Path(checkpoint) / JOURNAL
    check_layout(settings, pool)
    system = SYSTEMS.get("dp-sgd")(settings.system_cell) if system is None else system
    with np.errstate(divide="ignore"):  # Opacus' PRV takes log(1 − q): −inf at q = 1, harmless
        claims = tuple(system.claims())
    runner = resolve_executor(settings) if executor is None else executor
    layout = draw_layout(pool, settings, rng=child_seed(settings.seed, 0))
    runs = build_runs(settings, layout, system)
    t1 = time.perf_counter()
    audit = audit_canary_runs(
        runs, settings.canaries.counts, settings.audit, delta=settings.training.delta,
        rng=child_seed(settings.seed, 1), executor=runner, checkpoint=journal,
        progress=report,
    )  # fmt: skip
    t2 = time.perf_counter()
    entries = _entries(audit, claims, audit.num_tuning_runs, settings.audit.num_thresholds)
    per_minute = 60.0 * audit.computed_runs / audit.runs_seconds if audit.runs_seconds else 0.0
    detail = LiDPDPSGDDetail(
        settings.data.dataset, int(pool.X.shape[1]), len(layout.train), system.dataset_size,
        system.mechanism, settings.canaries.kind, settings.canaries.statistic, audit,
        per_minute,
    )  # fmt: skip
    return AuditResult(
        workflow=WORKFLOW,
        entries=tuple(entries),
        settings=settings,
        seed=settings.seed,
        timings={"setup+claims": t1 - t0, "runs+bounds": t2 - t1, "runs": audit.runs_seconds},
        versions=package_versions("torch", "opacus", "dp-accounting"),
        detail=detail,
        note=(
            "Each lower bound is valid at its confidence level on its own (repetition 0; τ "
            "tuned on separate runs). The maximum over methods or k is not itself a bound at "
            f"that level. Claims: {claims[0].analysis} first. Curves, runs needed and the "
            "gain over 1 canary per run are in detail.audit."
        ),
    )
