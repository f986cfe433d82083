"""The LiDP training runs with the batched trainer: many runs of one engine group at once.

:class:`BatchedDPSGDCanaryRuns` is :class:`~dpaudit.experiments.lidp_dpsgd.pipeline.DPSGDCanaryRuns`
(same canaries from the same seeds, same statistic) whose training goes through
:func:`dpaudit.systems.train_dpsgd_batched` (DP-SGD of Abadi et al. 2016, arXiv:1607.00133;
the Lifted-DP protocol of Pillutla et al. 2023, arXiv:2305.18447). It tells the engine
(:func:`dpaudit.engine.run_tasks`) to hand it ``group_size`` consecutive runs at a time
(``run_group``); every group is always computed whole and padded to the nominal size, so a
run's arithmetic — hence every statistic — does not depend on the executor, the chunking,
the number of workers or a resume. Run r agrees with the per-run trainer for the same seed
to float32 rounding (same initial weights, batches and noise tensors); the two trainers are
two settings of the audit (``training.trainer``), recorded in the run's identity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from dpaudit._rng import child_seed
from dpaudit.attacks import draw_canaries, membership_score
from dpaudit.systems.dpsgd import DPSGDSettings, LabelledData, train_dpsgd_batched

__all__ = ["BatchedDPSGDCanaryRuns"]


@dataclasses.dataclass(frozen=True, eq=False)
class BatchedDPSGDCanaryRuns:
    """LiDP canary runs trained ``group_size`` at a time (module notes); picklable.

    Attributes:
        train, canary_pool, kind, statistic, settings, nominal_size: as
            :class:`~dpaudit.experiments.lidp_dpsgd.pipeline.DPSGDCanaryRuns`.
        group_size: runs trained together (the engine's group).
        extras: ``("final_loss",)``.
    """

    train: LabelledData
    canary_pool: LabelledData | None
    kind: str
    statistic: str
    settings: DPSGDSettings
    nominal_size: int
    group_size: int = 64
    extras: tuple[str, ...] = ("final_loss",)

    def _draw(self, alternative: bool, k: int, seed: np.random.SeedSequence):
        m = k if alternative else 2 * k - 1
        source = self.canary_pool if self.canary_pool is not None else self.train
        drawn = draw_canaries(source.X, source.y, m, num_classes=self.train.num_classes,
                              kind=self.kind, rng=child_seed(seed, 0))  # fmt: skip
        order = np.random.default_rng(child_seed(seed, 1)).permutation(m)
        canaries = dataclasses.replace(self.train, X=drawn.X[order], y=drawn.labels[order])
        included = np.arange(m) < (k if alternative else k - 1)
        tested = slice(0, k) if alternative else slice(k - 1, m)
        return canaries, included, tested

    def run_group(
        self,
        alternative: Sequence[bool],
        num_canaries: Sequence[int],
        seeds: Sequence[np.random.SeedSequence],
    ) -> list[np.ndarray]:
        """Per run: ``(k + 1,)`` — the k tested canaries' statistics, then the final loss."""
        drawn = [
            self._draw(bool(a), int(k), s)
            for a, k, s in zip(alternative, num_canaries, seeds, strict=True)
        ]
        trained = train_dpsgd_batched(
            self.train, [d[0] for d in drawn], [d[1] for d in drawn], self.settings,
            rngs=[child_seed(s, 2) for s in seeds], nominal_size=self.nominal_size,
            width=max(self.nominal_size, *(len(self.train) + int(d[1].sum()) for d in drawn)),
        )  # fmt: skip
        tested = [c.X[t] for c, _, t in drawn]
        logits = trained.logits(tested, num_threads=self.settings.num_threads)
        out = []
        for r, (c, _, t) in enumerate(drawn):
            scores = membership_score(logits[r], c.y[t], self.statistic)
            out.append(np.append(scores, trained.final_loss[r]))
        return out

    def __call__(
        self, alternative: bool, num_canaries: int, seed: np.random.SeedSequence
    ) -> np.ndarray:
        """One run alone (a group of one; the engine calls :meth:`run_group`)."""
        return self.run_group([alternative], [num_canaries], [seed])[0]
