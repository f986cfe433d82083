"""The label-DP audit: train label-DP systems on real data with flipped-label canaries, attack
them, and put the empirical ε_m next to each claim (Malek et al. 2021, arXiv:2106.03408).

Malek, Mironov, Prasad, Shilov & Tramèr 2021, "Antipodes of Label Differential Privacy: PATE
and ALIBI", §6–7, Tables 1 and 6, App. B–C. :func:`run_label_dp` reads as its stages:

1. :func:`load_label_data` — the dataset and its seeded subset, checked against the settings;
2. :func:`plant_canaries` — Game 3: N rows get a wrong label y′ (and a second y″ to weigh it
   against); one canaried training set for every model of the run;
3. ``SYSTEMS.get(mechanism)(settings.system_cell(mechanism, level, C))`` — the system of a
   (level, mechanism) cell from its settings cell; :func:`check_before_training` validates
   devices, image data and budgets before any model is trained;
4. :func:`train_cell` — one model per cell (PATE-FM teachers shared between levels with the
   same number of teachers);
5. :func:`attack_cell` — the memorization attack on the canaries
   (:func:`dpaudit.attacks.label_memorization_attack`), τ chosen on held-out canaries or paid
   for by Bonferroni;
6. :func:`make_entry` — one :class:`~dpaudit._results.AuditEntry` per mechanism × level: the
   lower bound (ε_m with its interval and the threshold selection), the claims (primary:
   the mechanism's own ε), the accuracy;
7. :func:`validate_heuristic` — App. C: one run with N canaries against ``runs`` runs with
   N/runs canaries each, pooled.

The result is the shared :class:`~dpaudit._results.AuditResult` (``workflow="label-dp"``).

Example:
    >>> from dpaudit.experiments.label_dp.settings import from_mapping  # doctest: +SKIP
    >>> s = from_mapping(LabelDPSettings, {"data": {"dataset": "digits", "n_train": None,
    ...     "n_test": None}, "mechanisms": ["alibi"], "levels": {"names": ["high"]},
    ...     "alibi": {"epsilons": [8.0]}, "canaries": {"count": 100},
    ...     "training": {"epochs": 5}})  # doctest: +SKIP
    >>> run_label_dp(s).entries[0].system  # doctest: +SKIP
    'alibi'
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    LowerBound,
    package_versions,
)
from dpaudit._rng import child_seed
from dpaudit._typing import ProgressLike
from dpaudit._validate import check_progress
from dpaudit.attacks import (
    CanaryConfidences,
    LabelCanaries,
    LabelMemorizationAttack,
    canary_confidences,
    label_memorization_attack,
    plant_label_canaries,
)
from dpaudit.bounds import selection_from_name
from dpaudit.experiments.label_dp.settings import LabelDPSettings
from dpaudit.systems import SYSTEMS

__all__ = [
    "LabelDPData",
    "attack_cell",
    "check_before_training",
    "load_label_data",
    "make_entry",
    "plant_canaries",
    "run_label_dp",
    "train_cell",
    "validate_heuristic",
]

_NOTE = (
    "Lower bound: the label-memorization attack of Malek et al. 2021 (arXiv:2106.03408, "
    "App. B): ε ≥ log(CGR/(1−CGR)) (Thm B.1), a pure-ε bound, with the abstention threshold "
    "chosen on held-out canaries or paid for by Bonferroni; the canaries of one model are "
    "treated as independent games (the paper's heuristic, checked in App. C). For claims at "
    "δ > 0 the comparison ignores δ, as the paper does. 'uncorrected' is the authors' best of "
    "seven thresholds on the same canaries: NOT a valid bound, shown for comparison."
)
_IMAGE_SHAPES = {"digits": (8, 8), "mnist-5k": (28, 28), "fashion-mnist": (28, 28)}


@dataclasses.dataclass(frozen=True, eq=False)
class LabelDPData:
    """The data of a run: the dataset, the canaries and the canaried training labels.

    Attributes:
        dataset: the :class:`~dpaudit.data.Dataset` (true labels).
        canaries: the :class:`~dpaudit.attacks.LabelCanaries`.
        y_train: training labels with every canary set to its y′.
        image_shape: ``(H, W)`` of image rows, or None.
    """

    dataset: Any
    canaries: LabelCanaries
    y_train: np.ndarray
    image_shape: tuple[int, int] | None

    @property
    def num_classes(self) -> int:
        """C."""
        return int(self.dataset.num_classes)


# --------------------------------------------------------------------------- stages


def load_label_data(settings: LabelDPSettings, dataset: Any = None) -> Any:
    """The dataset of ``settings.data`` (or ``dataset``), checked against the settings.

    Raises:
        ValueError: another dataset's name, fewer than 3 classes, more canaries than training
            rows, PATE budgets larger than the training set.
        MissingDatasetError: the dataset is not installed.
    """
    from dpaudit.data import load_dataset

    d = settings.data
    if dataset is None:
        kwargs: dict[str, Any] = {"seed": settings.seed}
        if d.dataset == "fashion-mnist":
            kwargs.update(n_train=d.n_train, n_test=d.n_test)
        dataset = load_dataset(d.dataset, **kwargs)
        if d.dataset != "fashion-mnist":
            dataset = _subset(dataset, d.n_train, d.n_test, settings.seed)
    if dataset.name != d.dataset:
        raise ValueError(f"dataset must be {d.dataset!r}, got {dataset.name!r}")
    n = dataset.num_train
    if settings.canaries.count > n:
        raise ValueError(
            f"canaries.count={settings.canaries.count} is larger than the training set ({n} rows)"
        )
    if dataset.num_classes < 3:
        raise ValueError(
            f"the memorization game needs at least 3 classes; {dataset.name} has "
            f"{dataset.num_classes}"
        )
    return dataset


def _subset(ds: Any, n_train: int | None, n_test: int | None, seed: int) -> Any:
    from dpaudit.data import Dataset

    gen = np.random.default_rng(seed)
    tr = np.arange(ds.num_train) if n_train is None else _pick(gen, ds.num_train, n_train)
    te = np.arange(ds.num_test) if n_test is None else _pick(gen, ds.num_test, n_test)
    return Dataset(
        name=ds.name, X_train=ds.X_train[tr], y_train=ds.y_train[tr], X_test=ds.X_test[te],
        y_test=ds.y_test[te], num_classes=ds.num_classes, class_names=ds.class_names,
        image_shape=ds.image_shape, source=ds.source, split=f"{ds.split}, subset(seed={seed})",
    )  # fmt: skip


def _pick(gen: np.random.Generator, n: int, k: int) -> np.ndarray:
    if k > n:
        raise ValueError(f"asked for {k} rows of a split with {n}")
    return np.sort(gen.choice(n, size=k, replace=False))


def plant_canaries(settings: LabelDPSettings, dataset: Any, *, count: int | None = None, key=(1,)):
    """Game 3's canaries in the training labels (one set for every model of the run)."""
    canaries = plant_label_canaries(
        dataset.y_train, settings.canaries.count if count is None else count,
        num_classes=dataset.num_classes, rng=child_seed(settings.seed, *key),
    )  # fmt: skip
    shape = dataset.image_shape or _IMAGE_SHAPES.get(dataset.name)
    return LabelDPData(dataset, canaries, canaries.apply(dataset.y_train), shape)


def check_before_training(settings: LabelDPSettings, data: LabelDPData, systems: list) -> None:
    """Devices, image data and every system's budgets against the data, before training.

    Raises:
        ValueError: an unavailable device, a CNN or consistency without images, PATE budgets
            larger than the training set.
    """
    from dpaudit.systems._torch_nets import resolve_device

    resolve_device(settings.training.device)
    if data.image_shape is None and settings.training.model == "cnn":
        raise ValueError(f"training.model='cnn' needs images; {data.dataset.name} has none")
    for system in systems:
        system.check_data(
            data.dataset.X_train, data.y_train, data.num_classes,
            images=data.image_shape is not None,
        )  # fmt: skip


def train_cell(
    system: Any,
    data: LabelDPData,
    *,
    rng: Any,
    progress: ProgressLike = None,
    teachers: dict | None = None,
    teacher_rng: Any = None,
) -> Any:
    """Train one system on the canaried data (PATE-FM: teachers from ``teachers`` by m)."""
    X = data.dataset.X_train
    common = {"num_classes": data.num_classes, "image_shape": data.image_shape}
    if not hasattr(system, "train_teachers"):  # one network, no teacher ensemble
        return system.fit(X, data.y_train, rng=rng, progress=progress, **common)
    cache = {} if teachers is None else teachers
    m = system.num_teachers
    if m not in cache:
        cache[m] = system.train_teachers(
            X, data.y_train, rng=child_seed(teacher_rng, m), progress=progress, **common
        )
    return system.fit(X, data.y_train, rng=rng, progress=progress, teachers=cache[m], **common)


def attack_cell(settings: LabelDPSettings, fit: Any, data: LabelDPData, *, rng: Any):
    """The memorization attack on the canaries of one trained model."""
    probs = fit.network.predict_proba(data.dataset.X_train[data.canaries.indices])
    a = settings.attack
    return label_memorization_attack(
        probs, data.canaries, thresholds=a.thresholds,
        selection=selection_from_name(a.selection, fraction=a.split_fraction),
        confidence_level=a.confidence_level, rng=rng,
    )  # fmt: skip


def make_entry(
    settings: LabelDPSettings, level: str, fit: Any, attack: LabelMemorizationAttack, **extra
) -> AuditEntry:
    """One entry: ε_m (the chosen variant) with its interval and threshold selection, the
    claims, the accuracy and both variants with the uncorrected numbers beside."""
    bound = attack.bound(settings.attack.variant)
    lower = LowerBound(
        method=bound.method,
        confidence_level=bound.confidence_level,
        epsilon=bound.epsilon,
        delta=0.0,
        interval=bound.interval,
        note=(
            f"τ = {bound.threshold:g} ({bound.selection.strategy}); interval: two-sided at "
            f"{bound.per_test_confidence_level:g} on {bound.num_canaries} canaries; "
            f"uncorrected best of 7 on all canaries: {bound.uncorrected_epsilon:.3g}"
        ),
    )
    detail = {"level": level, "cgr": attack.cgr, "acgr": attack.acgr, **fit.detail, **extra}
    return AuditEntry(
        system=fit.system, adversary=f"label-memorization/{level}", lower_bound=lower,
        claims=fit.claims, selections=(bound.selection,), detail=detail,
    )  # fmt: skip


def _interval(bound: Any) -> dict[str, Any]:
    return {
        "epsilon": bound.epsilon,
        "interval": bound.interval,
        "threshold": bound.threshold,
        "num_canaries": bound.num_canaries,
        "num_guesses": bound.num_guesses,
        "correct_guess_rate": bound.correct_guess_rate,
    }


def validate_heuristic(
    settings: LabelDPSettings,
    dataset: Any,
    one_run: LabelMemorizationAttack,
    *,
    progress: ProgressLike = None,
) -> dict[str, Any]:
    """App. C: ``runs`` independent runs with N/runs canaries each, pooled, beside one run.

    Each run plants its own canaries and trains its own model (fresh seeds); the pooled
    confidences are attacked exactly as the one run's were.
    """
    v = settings.validation
    level = settings.levels.names.index(v.level)
    per_run = settings.canaries.count // v.runs
    parts = []
    for r in range(v.runs):
        data = plant_canaries(settings, dataset, count=per_run, key=(5, r, 0))
        cell = settings.system_cell(v.mechanism, level, data.num_classes)
        system = SYSTEMS.get(v.mechanism)(cell)
        fit = train_cell(system, data, rng=child_seed(settings.seed, 5, r, 1), progress=progress,
                         teacher_rng=child_seed(settings.seed, 5, r, 2))  # fmt: skip
        probs = fit.network.predict_proba(dataset.X_train[data.canaries.indices])
        parts.append(canary_confidences(probs, data.canaries))
    a = settings.attack
    pooled = label_memorization_attack(
        CanaryConfidences.concatenate(parts), thresholds=a.thresholds,
        selection=selection_from_name(a.selection, fraction=a.split_fraction),
        confidence_level=a.confidence_level,
        rng=child_seed(settings.seed, 5, v.runs),
    )  # fmt: skip
    return {
        "mechanism": v.mechanism,
        "level": v.level,
        "runs": v.runs,
        "canaries_per_run": per_run,
        "one_run": {"cgr": _interval(one_run.cgr), "acgr": _interval(one_run.acgr)},
        "pooled": {"cgr": _interval(pooled.cgr), "acgr": _interval(pooled.acgr)},
    }


# --------------------------------------------------------------------------- the workflow


def run_label_dp(
    settings: LabelDPSettings,
    *,
    data: Any = None,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Train every (level, mechanism) cell with canaries, attack it, compare with its claim.

    Args:
        settings: :class:`~dpaudit.experiments.label_dp.settings.LabelDPSettings`.
        data: a preloaded :class:`~dpaudit.data.Dataset` (its name must match).
        progress: progress callback (or ``True`` for rich bars) over training and cells.
        checkpoint: unused (a cell trains in minutes); accepted for the workflow signature.

    Returns:
        :class:`~dpaudit._results.AuditResult` with one entry per mechanism × level.

    Raises:
        TypeError: settings of another type.
        ValueError: invalid settings or data (before any training).
    """
    if not isinstance(settings, LabelDPSettings):
        raise TypeError(f"settings must be LabelDPSettings, got {type(settings).__name__}")
    report = check_progress(progress)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    dataset = load_label_data(settings, data)
    data = plant_canaries(settings, dataset)
    cells = settings.cells
    systems = [
        SYSTEMS.get(mech)(settings.system_cell(mech, i, data.num_classes)) for _, mech, i in cells
    ]
    check_before_training(settings, data, systems)
    timings["load"] = time.perf_counter() - start
    entries, attacks, teachers = [], {}, {}
    for k, ((level, mech, i), system) in enumerate(zip(cells, systems, strict=True)):
        t0 = time.perf_counter()
        fit = train_cell(system, data, rng=child_seed(settings.seed, 2, i, k), progress=report,
                         teachers=teachers, teacher_rng=child_seed(settings.seed, 4))  # fmt: skip
        accuracy = fit.network.accuracy(dataset.X_test, dataset.y_test)
        attacks[(level, mech)] = attack_cell(
            settings, fit, data, rng=child_seed(settings.seed, 3, k)
        )
        entries.append(make_entry(settings, level, fit, attacks[(level, mech)], accuracy=accuracy,
                                  train_seconds=fit.network.train_seconds,
                                  examples_per_second=fit.network.examples_per_second))  # fmt: skip
        timings[f"{level}/{mech}"] = time.perf_counter() - t0
    detail = _run_detail(settings, data)
    if settings.validation.runs:
        t0 = time.perf_counter()
        v = settings.validation
        detail["validation"] = validate_heuristic(
            settings, dataset, attacks[(v.level, v.mechanism)], progress=report
        )
        timings["validation"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - start
    return AuditResult(
        workflow="label-dp", entries=tuple(entries), settings=settings, seed=settings.seed,
        timings=timings, versions=package_versions("torch"), detail=detail, note=_NOTE,
    )  # fmt: skip


def _run_detail(settings: LabelDPSettings, data: LabelDPData) -> dict[str, Any]:
    ds = data.dataset
    return {
        "dataset": ds.name,
        "n_train": ds.num_train,
        "n_test": ds.num_test,
        "num_classes": ds.num_classes,
        "num_canaries": data.canaries.num_canaries,
        "levels": settings.levels.names,
        "mechanisms": settings.mechanisms,
        "model": settings.training.model,
        "source": ds.source,
    }
