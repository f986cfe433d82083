"""Settings of the Lifted-DP audit of DP-SGD: one tree, from which TOML and CLI are derived.

Sections (``dpaudit audit lidp-dp-sgd``; shipped configs ``lidp-dp-sgd*.toml``):

* ``[data]`` — the dataset, the fixed training set D (``num_train`` examples, always
  trained on), the disjoint pool that data-based canaries are drawn from, and the average
  pooling of images (2: Fashion-MNIST 28×28 → 14×14);
* ``[canaries]`` — the canary counts k per run (several: one audit per k, and the gain over
  k = 1 when 1 is among them), the canary distribution and the test statistic;
* ``[training]`` — :class:`LiDPTrainingSettings`, i.e. :class:`dpaudit.systems.DPSGDSettings`
  with this workflow's defaults (logistic regression, full-batch steps), a sampling rate and
  the trainer (``per-run``: Opacus, one model at a time; ``batched``: ``group_size`` models
  at once, :mod:`dpaudit.experiments.lidp_dpsgd.batched`);
* ``[audit]`` — :class:`dpaudit.experiments.lidp_dpsgd.runs.LiDPAuditSettings` (runs, tuning runs,
  repetitions, intervals, curve, gain target);
* ``[execution]`` — where the training runs go: local processes, or Ray (an address, or a
  local instance);
* ``name`` and ``seed`` at the top.

The default model (documented in the README section): softmax regression (``model = "mlp"``,
``hidden = []``) on 2×2-average-pooled Fashion-MNIST (196 features), D = 128 training
examples, 9 full-batch DP-SGD steps (q = 1) with σ = 3 (μ = √T/σ = 1 in Gaussian DP), C = 1,
learning rate 4: about 0.05–0.1 s per training run on one core, so thousands of runs fit in
minutes; random-sign canaries (±1 inputs with a random label), logit-margin statistic. The
margin's separation between included and fresh canaries is then d′ ≈ 1.0 — what μ = 1
allows — for every |D| tried (64–256): the audit is limited by the noise, not the model.

Example:
    >>> s = LiDPDPSGDSettings()
    >>> s.canaries.counts, s.training.model, s.training.hidden, s.nominal_size
    ((16,), 'mlp', (), 144)
"""

from __future__ import annotations

import dataclasses
import os

from dpaudit import _settings
from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_in_range,
    check_nonneg_int,
    check_positive_int,
)
from dpaudit.attacks import CANARY_KINDS, MEMBERSHIP_SCORES
from dpaudit.data import DATASET_NAMES
from dpaudit.experiments.lidp_dpsgd.runs import LiDPAuditSettings
from dpaudit.systems import DPSGDCell, DPSGDSettings

__all__ = [
    "EXECUTOR_NAMES",
    "TRAINERS",
    "ExecutionSettings",
    "LiDPCanarySettings",
    "LiDPDPSGDSettings",
    "LiDPDataSettings",
    "LiDPTrainingSettings",
]

#: How the training runs are computed: one Opacus run at a time, or many at once
#: (:func:`dpaudit.systems.dpsgd.train_dpsgd_batched`).
TRAINERS: tuple[str, ...] = ("per-run", "batched")
#: Where the training runs can go (``dpaudit.engine.EXECUTORS``).
EXECUTOR_NAMES: tuple[str, ...] = ("serial", "processes", "joblib", "ray")
_SYNTHETIC = ("noise", "signs")


@dataclasses.dataclass(frozen=True)
class LiDPDataSettings:
    """The dataset, the fixed training set D and the canary pool."""

    dataset: str = option("fashion-mnist", help=f"offline dataset: {' | '.join(DATASET_NAMES)}")
    path: str | None = option(None, help="directory or file of the dataset (default: installed)")
    num_train: int = option(
        128, help="|D|: training examples in every run", flag="--train-examples"
    )
    canary_pool: int = option(
        10000, help="examples the data-based canaries are drawn from (disjoint from D)"
    )
    pooling: int = option(2, help="average pooling of images (1: none; 2: 28×28 → 14×14)")

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASET_NAMES)
        check_positive_int("num_train", self.num_train)
        check_nonneg_int("canary_pool", self.canary_pool)
        check_positive_int("pooling", self.pooling)


@dataclasses.dataclass(frozen=True)
class LiDPCanarySettings:
    """k canaries per run, i.i.d. from a canary distribution, and the test statistic."""

    counts: tuple[int, ...] = option(
        (16,), help="canaries per run k (several: one audit each; with 1: the gain)",
        flag="--canaries",
    )  # fmt: skip
    kind: str = option(
        "signs",
        help="canary distribution: signs | noise (random inputs, random label), flipped "
        "(training-distribution example, random other label), data",
    )
    statistic: str = option(
        "margin", help=f"test statistic (larger = included): {' | '.join(MEMBERSHIP_SCORES)}"
    )

    def __post_init__(self) -> None:
        if not self.counts:
            raise ValueError("counts must list at least one canary count k")
        for k in self.counts:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(f"counts must hold canary counts k >= 1, got {k!r}")
        if len(set(self.counts)) != len(self.counts):
            raise ValueError(f"counts must be distinct, got {self.counts!r}")
        check_choice("kind", self.kind, CANARY_KINDS)
        check_choice("statistic", self.statistic, tuple(MEMBERSHIP_SCORES))

    @property
    def synthetic(self) -> bool:
        """Whether canaries are generated (not drawn from the data)."""
        return self.kind in _SYNTHETIC


@dataclasses.dataclass(frozen=True)
class LiDPTrainingSettings(DPSGDSettings):
    """DP-SGD training (:class:`~dpaudit.systems.DPSGDSettings`) with this audit's defaults.

    ``sampling_rate`` q, when given, sets the expected batch size to ``q · nominal size``
    (the nominal size is ``num_train + max k``, fixed before any canary is drawn, so every
    run — alternative or null, any k — shares one claim); None uses ``batch_size``.
    """

    model: str = option("mlp", help="network: mlp (hidden = [] is softmax regression) | cnn")
    hidden: tuple[int, ...] = option((), help="hidden widths of the MLP ([]: logistic)")
    steps: int | None = option(9, help="number of steps T (overrides epochs)")
    batch_size: int = option(256, help="expected batch size when sampling_rate is not set")
    noise_multiplier: float | None = option(3.0, help="noise multiplier σ (or target_epsilon)")
    target_epsilon: float | None = option(
        None, help="target ε at delta: σ calibrated by the accountant (if σ not given)"
    )
    learning_rate: float = option(4.0, help="learning rate", flag="--lr")
    momentum: float = option(0.0, help="SGD momentum")
    sampling_rate: float | None = option(
        1.0, help="Poisson sampling rate q (1: full batch); overrides batch_size"
    )
    trainer: str = option(
        "per-run",
        help="per-run (Opacus, one model at a time) | batched (group_size models at once, "
        "same law; SGD only)",
    )
    group_size: int = option(64, help="runs trained together by the batched trainer")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sampling_rate is not None:
            check_in_range("sampling_rate", self.sampling_rate, 0.0, 1.0, high_inclusive=True)
        check_choice("trainer", self.trainer, TRAINERS)
        check_positive_int("group_size", self.group_size)
        if self.trainer == "batched" and self.optimizer != "sgd":
            raise ValueError(f"trainer='batched' needs optimizer='sgd', got {self.optimizer!r}")


@dataclasses.dataclass(frozen=True)
class ExecutionSettings:
    """Where the training runs go (the result does not depend on it)."""

    executor: str = option("processes", help=f"executor: {' | '.join(EXECUTOR_NAMES)}")
    workers: int | None = option(None, help="parallel workers [CPU count]")
    address: str | None = option(None, help="Ray cluster address (implies executor = ray)")

    def __post_init__(self) -> None:
        check_choice("executor", self.executor, EXECUTOR_NAMES)
        if self.workers is not None:
            check_positive_int("workers", self.workers)
        if self.address is not None and not self.address.strip():
            raise ValueError("address must not be empty")

    @property
    def resolved_workers(self) -> int:
        """``workers`` or the CPU count."""
        return self.workers if self.workers is not None else max(1, os.cpu_count() or 1)


@dataclasses.dataclass(frozen=True)
class LiDPDPSGDSettings:
    """The Lifted-DP audit of DP-SGD (Pillutla et al. 2023, arXiv:2305.18447)."""

    name: str = option("lidp-dp-sgd", help="run name")
    seed: int = option(0, help="root seed (layout, runs, bootstrap)")
    data: LiDPDataSettings = option(default_factory=LiDPDataSettings, help="data")
    canaries: LiDPCanarySettings = option(default_factory=LiDPCanarySettings, help="canaries")
    training: LiDPTrainingSettings = option(default_factory=LiDPTrainingSettings, help="DP-SGD")
    audit: LiDPAuditSettings = option(default_factory=LiDPAuditSettings, help="audit")
    execution: ExecutionSettings = option(default_factory=ExecutionSettings, help="execution")

    def __post_init__(self) -> None:
        _settings.check_sections(self)
        counts = self.canaries.counts
        self.audit.check_counts(counts)
        kmax = max(counts)
        if not self.canaries.synthetic and 2 * kmax - 1 > self.data.canary_pool:
            raise ValueError(
                f"a null run draws 2k - 1 = {2 * kmax - 1} distinct canaries (k = {kmax}) but "
                f"data.canary_pool holds {self.data.canary_pool} examples"
            )
        if self.training.sampling_rate is None and self.training.batch_size > self.nominal_size:
            raise ValueError(
                f"training.batch_size={self.training.batch_size} exceeds the nominal dataset "
                f"size num_train + max k = {self.nominal_size} (set sampling_rate instead)"
            )

    @property
    def nominal_size(self) -> int:
        """``num_train + max k``: the size that fixes q for every run, before any draw."""
        return self.data.num_train + max(self.canaries.counts)

    @property
    def batch_size(self) -> int:
        """The expected batch size: ``round(q · nominal size)`` or ``training.batch_size``."""
        q = self.training.sampling_rate
        if q is None:
            return self.training.batch_size
        return max(1, round(q * self.nominal_size))

    @property
    def system_cell(self) -> DPSGDCell:
        """The settings cell of ``"dp-sgd"``: the nominal size ``num_train + max k`` and the
        batch size ``q · nominal size`` (σ given or calibrated)."""
        training = dataclasses.replace(self.training, batch_size=self.batch_size)
        return DPSGDCell(training, self.nominal_size)

    @property
    def pool_examples(self) -> int:
        """Examples the layout takes from the dataset: D, plus the canary pool if used."""
        return self.data.num_train + (0 if self.canaries.synthetic else self.data.canary_pool)
