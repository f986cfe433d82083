"""Auditing DP-SGD in one training run, black-box: canaries, scores, QMIA, one-run bounds.

The workflow of Liu, Boglioni, Fu, Hu, Thaker & Wu (*Enhancing One-run Privacy Auditing with
Quantile Regression-Based Membership Inference*), on the game of Steinke, Nasr & Jagielski
2023 (arXiv:2305.08846, Alg. 1):

1. :func:`load_pool` — an offline dataset (train and test rows) as one pool.
2. :func:`draw_layout` — r non-canaries, m canaries (each included independently with
   probability ½), and a disjoint holdout of non-members, dealt from the pool by a seeded
   permutation.
3. ``SYSTEMS.get("dp-sgd")(settings.system_cell)`` — the DP-SGD system
   (:class:`dpaudit.systems.DPSGD`) from its settings cell: its noise multiplier (given or
   calibrated) and claims, fixed before training; the sampling rate uses the expected
   training-set size n = r + m/2.
4. ``system.train`` — one DP-SGD run on the non-canaries and the included canaries.
5. :func:`score_canaries` — the final model's logits on every canary (black box) give the
   baseline score (logit margin by default); the quantile regressor, fitted on the holdout
   non-members only, turns it into the QMIA score z = Φ⁻¹(q) (Bertran et al. 2023,
   arXiv:2307.03694).
6. :func:`bound_scores` — for each score, ε_or (Steinke et al.), ε_or-fdp (Mahloujifar,
   Melis & Chaudhuri 2024, arXiv:2410.22235, K = 2) over the guess-count sweep with the
   choice paid for, their paid-for maximum, and the papers' uncorrected ε_max beside it
   (:mod:`dpaudit.bounds._one_run_max`).

:func:`audit_black_box` (the ``"black-box"`` entry of
:data:`~dpaudit.experiments.dpsgd.settings.THREAT_MODELS`, run by
:func:`~dpaudit.experiments.dpsgd.threat_models.audit_dpsgd` after steps 1 and 3) runs steps
2 and 4–6 ``repetitions`` times with independent child seeds and returns an
:class:`~dpaudit._results.AuditResult` (workflow ``"dp-sgd"``): one entry per score × bound
(``"baseline:or"``, ``"qmia:or-fdp"``, ``"qmia:max"``, …) whose lower bound is repetition 0's
valid bound (one training run), with the claims of the system
(Opacus' accountant first); per-repetition values, their mean and standard deviation are in
each entry's ``detail`` and the run's ``detail``. A system object can be passed in (e.g. a
copy that trains with less noise than it claims: the planted-bug test).

Example:
    >>> s = DPSGDAuditSettings()
    >>> s.canaries.num_canaries, s.training.model
    (5000, 'cnn')
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from dpaudit._results import AuditEntry, AuditResult, LowerBound, ResultMixin, package_versions
from dpaudit._rng import child_seed
from dpaudit._typing import ProgressLike
from dpaudit.attacks import (
    SYNTHETIC_KINDS,
    CanaryGame,
    draw_canaries,
    fit_qmia,
    membership_score,
    one_run_game,
    split_pool,
)
from dpaudit.bounds._one_run_max import OneRunBounds, one_run_bounds
from dpaudit.data import load_dataset
from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings
from dpaudit.systems import LabelledData

__all__ = [
    "BOUND_NAMES",
    "WORKFLOW",
    "CanaryScores",
    "DPSGDAuditDetail",
    "EntrySummary",
    "Repetition",
    "RunLayout",
    "audit_black_box",
    "bound_scores",
    "draw_layout",
    "load_pool",
    "score_canaries",
]

WORKFLOW = "dp-sgd"
#: Entry bound names: Steinke et al. (ε_or), f-DP (ε_or-fdp), their paid-for max (ε_max).
BOUND_NAMES: tuple[str, ...] = ("or", "or-fdp", "max")
_METHODS = {
    "or": "one-run (Steinke et al. 2023), guess-count sweep",
    "or-fdp": "f-DP one-run, Gaussian-DP family, K=2 (Mahloujifar et al. 2024), guess-count sweep",
    "max": "max of the two one-run procedures at beta/2 each (Bonferroni)",
}


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def load_pool(dataset: str, path: str | None = None) -> LabelledData:
    """Train and test rows of an offline dataset, concatenated, as one pool.

    Raises:
        ValueError: unknown dataset. MissingDatasetError: not installed.
    """
    kwargs = {} if path is None else {"path": path}
    ds = load_dataset(dataset, **kwargs)
    return LabelledData(
        np.concatenate([ds.X_train, ds.X_test]),
        np.concatenate([ds.y_train, ds.y_test]),
        ds.num_classes,
        ds.image_shape,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class RunLayout:
    """One run's data: non-canaries, the canary game, and the non-member holdout.

    Attributes:
        members: the r non-canary training examples.
        game: the canaries and which were included.
        canaries: the canaries as :class:`~dpaudit.systems.LabelledData` (training labels).
        holdout: non-members for the quantile regressor (never trained on, never canaries).
        holdout_true_labels: the holdout's labels before any flipping (= ``holdout.y`` for
            data canaries; None for synthetic inputs, which have no true class).
    """

    members: LabelledData
    game: CanaryGame
    canaries: LabelledData
    holdout: LabelledData
    holdout_true_labels: np.ndarray | None = None


def check_layout(settings: DPSGDAuditSettings, pool: LabelledData) -> None:
    """The layout fits the pool and the model fits the data (before any training).

    Raises:
        ValueError: r + m + holdout exceeds the pool; a CNN on non-image data.
    """
    r, m = settings.data.num_non_canaries, settings.canaries.num_canaries
    h = settings.data.num_holdout if settings.attack.use_qmia else 0
    if settings.canaries.kind in SYNTHETIC_KINDS:
        m = h = 0  # generated, not drawn from the pool
    if r + m + h > len(pool):
        raise ValueError(
            f"the layout needs {r + m + h} examples (r={r}, m={m}, holdout={h}) but "
            f"{settings.data.dataset} has {len(pool)}"
        )
    if settings.training.model == "cnn" and pool.image_shape is None:
        raise ValueError(f"model='cnn' needs image data; {settings.data.dataset} is tabular")


def draw_layout(
    pool: LabelledData, settings: DPSGDAuditSettings, *, rng: np.random.SeedSequence
) -> RunLayout:
    """Deal the pool into non-canaries, canaries and holdout; draw the inclusions.

    The holdout non-members are made like the canaries (same kind: flipped labels, or
    synthetic inputs), so the regressor learns the non-member scores of canary-like
    examples; they are never trained on.
    """
    fresh = np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key)
    layout_seq, game_seq, holdout_seq = fresh.spawn(3)
    r, m = settings.data.num_non_canaries, settings.canaries.num_canaries
    h = settings.data.num_holdout if settings.attack.use_qmia else 0
    kind = settings.canaries.kind
    synthetic = kind in SYNTHETIC_KINDS
    sizes = {"members": r, "holdout": 0 if synthetic else h, "canaries": 0 if synthetic else m}
    parts = split_pool(len(pool), sizes, rng=layout_seq)
    source = pool if synthetic else pool.subset(parts["canaries"])
    game = one_run_game(
        source.X, source.y, m, num_classes=pool.num_classes, kind=kind,
        inclusion_probability=settings.canaries.inclusion_probability, rng=game_seq,
    )  # fmt: skip
    canaries = dataclasses.replace(pool, X=game.canaries.X, y=game.canaries.labels)
    holdout = pool.subset(parts["holdout"])
    true_labels = None if synthetic else holdout.y
    if h > 0 and kind != "data":
        hold_source = pool if synthetic else holdout
        made = draw_canaries(hold_source.X, hold_source.y, h, num_classes=pool.num_classes,
                             kind=kind, rng=holdout_seq)  # fmt: skip
        holdout = dataclasses.replace(pool, X=made.X, y=made.labels)
    return RunLayout(pool.subset(parts["members"]), game, canaries, holdout, true_labels)


# ---------------------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CanaryScores(ResultMixin):
    """The canaries' scores under each attack and what the attack learned.

    Attributes:
        base_score: the base score's name (``"margin"``, ``"logit-sum"``, ``"neg-loss"``).
        values: attack name (``"baseline"``, ``"qmia"``) → (m,) scores, larger = member.
        holdout_accuracy: the model's accuracy on the holdout's labels as scored (flipped
            for flipped canaries; None without holdout).
        test_accuracy: the model's accuracy on the holdout's true labels (None without
            holdout or for synthetic canaries): the accuracy of the DP model.
        qmia_regressor: the regressor (None without QMIA).
        qmia_best_epoch: the early-stopping epoch kept.
        qmia_validation_losses: validation loss per epoch.
        qmia_num_train: holdout examples fitted on.
        qmia_seconds: wall time of the regressor's fit.
    """

    base_score: str
    values: dict[str, np.ndarray]
    holdout_accuracy: float | None = None
    test_accuracy: float | None = None
    qmia_regressor: str | None = None
    qmia_best_epoch: int | None = None
    qmia_validation_losses: tuple[float, ...] = ()
    qmia_num_train: int | None = None
    qmia_seconds: float | None = None


def score_canaries(
    trained: Any, layout: RunLayout, settings: DPSGDAuditSettings, *, rng: np.random.SeedSequence
) -> CanaryScores:
    """Black-box scores of the canaries; QMIA fitted on the holdout non-members only."""
    attack = settings.attack
    threads = settings.training.num_threads
    base = membership_score(trained.logits(layout.canaries.X, num_threads=threads),
                            layout.canaries.y, attack.score)  # fmt: skip
    values = {"baseline": base}
    if not attack.use_qmia or len(layout.holdout) == 0:
        return CanaryScores(attack.score, values)
    hold = layout.holdout
    hold_logits = trained.logits(hold.X, num_threads=threads)
    hold_scores = membership_score(hold_logits, hold.y, attack.score)
    fit = fit_qmia(
        hold.X, hold.y, hold_scores, num_classes=hold.num_classes, settings=attack.qmia,
        image_shape=hold.image_shape, channels=hold.channels, rng=rng,
    )  # fmt: skip
    values["qmia"] = fit.membership(layout.canaries.X, layout.canaries.y, base).z
    return CanaryScores(
        attack.score,
        values,
        holdout_accuracy=float(np.mean(np.argmax(hold_logits, axis=1) == hold.y)),
        test_accuracy=_accuracy(hold_logits, layout.holdout_true_labels),
        qmia_regressor=fit.regressor,
        qmia_best_epoch=fit.best_epoch,
        qmia_validation_losses=fit.validation_losses,
        qmia_num_train=fit.num_train,
        qmia_seconds=fit.seconds,
    )


def _accuracy(logits: np.ndarray, labels: np.ndarray | None) -> float | None:
    return None if labels is None else float(np.mean(np.argmax(logits, axis=1) == labels))


def bound_scores(
    scores: CanaryScores,
    included: np.ndarray,
    settings: DPSGDAuditSettings,
    *,
    rng: np.random.SeedSequence,
) -> dict[str, OneRunBounds]:
    """The one-run bounds of every attack's scores (the same split seed for each)."""
    a = settings.audit
    return {
        name: one_run_bounds(
            values,
            included,
            delta=settings.training.delta,
            confidence_level=a.confidence_level,
            selection=a.selection,
            split_fraction=a.split_fraction,
            max_points=a.max_guess_points,
            rng=rng,
        )
        for name, values in scores.values.items()
    }


# ---------------------------------------------------------------------------------------------
# One repetition and the whole audit
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Repetition(ResultMixin):
    """One training run of the audit.

    Attributes:
        index: repetition number (its seed is child ``index`` of the root seed).
        num_members: examples trained on (non-canaries + included canaries).
        num_included: canaries included.
        steps, sampling_rate, noise_multiplier: the DP-SGD run.
        training_seconds: wall time of the training loop.
        examples_per_second: DP-SGD throughput.
        final_loss: mean training loss of the last steps.
        scores: the canaries' scores and the QMIA fit.
        included: (m,) the inclusions.
        bounds: attack name → :class:`~dpaudit.bounds._one_run_max.OneRunBounds`.
        timings: seconds per stage.
    """

    index: int
    num_members: int
    num_included: int
    steps: int
    sampling_rate: float
    noise_multiplier: float
    training_seconds: float
    examples_per_second: float
    final_loss: float
    scores: CanaryScores
    included: np.ndarray
    bounds: dict[str, OneRunBounds]
    timings: dict[str, float]


def run_repetition(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    index: int,
    *,
    progress: ProgressLike = None,
) -> Repetition:
    """Layout, training, scores and bounds of repetition ``index``."""
    seq = child_seed(settings.seed, index)
    layout_seq, train_seq, attack_seq, bound_seq = seq.spawn(4)
    t0 = time.perf_counter()
    layout = draw_layout(pool, settings, rng=layout_seq)
    included = layout.game.included
    trained = system.train(layout.members, layout.canaries, included, rng=train_seq,
                           progress=progress)  # fmt: skip
    t1 = time.perf_counter()
    scores = score_canaries(trained, layout, settings, rng=attack_seq)
    t2 = time.perf_counter()
    bounds = bound_scores(scores, included, settings, rng=bound_seq)
    t3 = time.perf_counter()
    return Repetition(
        index=index,
        num_members=trained.num_members,
        num_included=layout.game.num_included,
        steps=trained.steps,
        sampling_rate=trained.sampling_rate,
        noise_multiplier=trained.noise_multiplier,
        training_seconds=trained.seconds,
        examples_per_second=trained.examples_per_second,
        final_loss=trained.final_loss,
        scores=scores,
        included=included,
        bounds=bounds,
        timings={"layout+train": t1 - t0, "scores+qmia": t2 - t1, "bounds": t3 - t2},
    )


@dataclasses.dataclass(frozen=True)
class EntrySummary(ResultMixin):
    """One attack × bound over the repetitions.

    Attributes:
        attack: ``"baseline"`` or ``"qmia"``.
        bound: ``"or"``, ``"or-fdp"`` or ``"max"``.
        valid: per-repetition valid lower bounds.
        uncorrected: per-repetition uncorrected maxima (the papers' numbers; NOT valid).
        valid_mean, valid_std, uncorrected_mean, uncorrected_std: over repetitions
            (std with ddof = 1; 0 for one repetition).
    """

    attack: str
    bound: str
    valid: tuple[float, ...]
    uncorrected: tuple[float, ...]
    valid_mean: float
    valid_std: float
    uncorrected_mean: float
    uncorrected_std: float


def _pick(b: OneRunBounds, bound: str) -> tuple[float, float]:
    if bound == "or":
        return b.steinke.epsilon, b.steinke.uncorrected_max_epsilon
    if bound == "or-fdp":
        return b.fdp.epsilon, b.fdp.uncorrected_max_epsilon
    return b.max_valid, b.uncorrected_max


def _std(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1)) if x.size > 1 else 0.0


def summarise(reps: list[Repetition], attack: str, bound: str) -> EntrySummary:
    """Mean and spread of one attack × bound over the repetitions."""
    pairs = np.array([_pick(r.bounds[attack], bound) for r in reps], dtype=float)
    v, u = pairs[:, 0], pairs[:, 1]
    return EntrySummary(
        attack, bound, tuple(v.tolist()), tuple(u.tolist()),
        float(v.mean()), _std(v), float(u.mean()), _std(u),
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class DPSGDAuditDetail(ResultMixin):
    """The whole run: system, repetitions and summaries.

    Attributes:
        dataset: the dataset.
        num_canaries, num_non_canaries, num_holdout: m, r and the holdout size.
        nominal_size: n = r + m/2 (fixes q).
        mechanism: the claimed ``SubsampledGaussian(q, σ, T)``.
        summaries: one per attack × bound.
        repetitions: every repetition.
    """

    dataset: str
    num_canaries: int
    num_non_canaries: int
    num_holdout: int
    nominal_size: int
    mechanism: Any
    summaries: tuple[EntrySummary, ...]
    repetitions: tuple[Repetition, ...]

    def summary(self, attack: str, bound: str) -> EntrySummary:
        """The summary of one attack × bound (KeyError if absent)."""
        for s in self.summaries:
            if s.attack == attack and s.bound == bound:
                return s
        raise KeyError(f"no summary for attack={attack!r}, bound={bound!r}")


def _entry(rep0: Repetition, summary: EntrySummary, claims, level: float, delta: float):
    b = rep0.bounds[summary.attack]
    valid, uncorrected = _pick(b, summary.bound)
    selections = {
        "or": (b.steinke.selection,),
        "or-fdp": (b.fdp.selection,),
        "max": (b.steinke.selection, b.fdp.selection, b.max_selection),
    }[summary.bound]
    note = (
        f"repetition 0 (one training run); uncorrected maximum {uncorrected:.4f} is NOT a "
        f"valid lower bound; over {len(summary.valid)} repetitions: valid "
        f"{summary.valid_mean:.4f} ± {summary.valid_std:.4f}"
    )
    if summary.bound != "or":
        note += "; the f-DP bound at delta > 0 assumes a Gaussian trade-off curve"
    lower = LowerBound(_METHODS[summary.bound], level, valid, delta, note=note)
    return AuditEntry("dp-sgd", f"{summary.attack}:{summary.bound}", lower, claims,
                      selections=selections, detail=summary)  # fmt: skip


def audit_black_box(
    settings: DPSGDAuditSettings,
    system: Any,
    pool: LabelledData,
    claims: tuple,
    *,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> AuditResult:
    """The black-box threat model: ``repetitions`` runs of steps 2–6 (module docstring)."""
    t1 = time.perf_counter()
    reps = [
        run_repetition(settings, system, pool, i, progress=progress)
        for i in range(settings.repetitions)
    ]
    attacks = tuple(reps[0].bounds)
    summaries = tuple(summarise(reps, a, b) for a in attacks for b in BOUND_NAMES)
    level, delta = settings.audit.confidence_level, settings.training.delta
    entries = [_entry(reps[0], s, claims, level, delta) for s in summaries]
    detail = DPSGDAuditDetail(
        settings.data.dataset, settings.canaries.num_canaries, settings.data.num_non_canaries,
        settings.data.num_holdout, settings.nominal_size, system.mechanism, summaries,
        tuple(reps),
    )  # fmt: skip
    return AuditResult(
        workflow=WORKFLOW,
        entries=tuple(entries),
        settings=settings,
        seed=settings.seed,
        timings={"repetitions": time.perf_counter() - t1},
        versions=package_versions("torch", "opacus", "dp-accounting", "scikit-learn"),
        detail=detail,
        note=(
            "Each lower bound is valid at its confidence level for one training run "
            "(repetition 0), with the choice of the number of guesses (and, for 'max', of the "
            "procedure) paid for. The uncorrected maxima are the papers' numbers: NOT valid "
            f"lower bounds. Claims: {claims[0].analysis} first. Mean ± sd over "
            f"{settings.repetitions} repetition(s) in detail.summaries."
        ),
    )
