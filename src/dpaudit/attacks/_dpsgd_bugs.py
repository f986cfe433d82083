"""White-box adversaries against DP-SGD implementations: crafted pairs and their statistics.

Each adversary (Jagielski, Ullman & Oprea 2020, arXiv:2006.07709; Nasr et al. 2021,
arXiv:2101.04535) chooses a neighbouring pair of probe datasets — ``D`` and ``D′ = D ∪
{canary}`` (add/remove, the relation Opacus' accountants analyse) — and a statistic of the
white-box transcript (every privatised gradient) that is large when the canary was there.
Every statistic uses only public hyperparameters (B, C, σ, the public rate q), never the
seed or the batches.

Pairs (``d`` coordinates; the signal lives in coordinate 1):

* ``opposed``: n fillers with gradient ``−C·e₁`` and a canary ``+C·e₁``. Under shuffled
  fixed-size batches the canary *displaces* a filler from its batch, which moves that batch's
  sum by 2C; under Poisson sampling it adds C (Chua et al. 2024, arXiv:2403.17673, §3 build
  their shuffling lower bound on such opposed inputs).
* ``heavy``: the fillers of ``opposed`` and a canary ``+1000·C·e₁``: clipping the batch
  gradient, not each example's, lets it flip the clipped sum from −C to +C.
* ``dirac``: zero fillers and a canary ``+C·e₁`` (group 1, a class of its own).
* ``identical``: n + 1 identical records ``C·e₁``: only the dataset size differs.

Statistics (``z`` is the coordinate-1 gradient rescaled to the noise's standard units):

* ``shuffle-llr``: per epoch, the log-likelihood ratio of "one of the epoch's k steps moved
  by 2C" against "none", ``log mean_t exp(μ z_t − μ²/2)`` with ``μ = 2/σ``, summed over epochs.
* ``poisson-llr``: per step, ``log(1 − q + q·exp(μ z_t − μ²/2))`` summed (Nasr et al. 2023,
  arXiv:2302.07956, §4), with the shift μ of the pair.
* ``noise-scale``: ``−log`` of the mean square of the noise-only coordinates 2…d: the update's
  scale (Opacus issue #819: the normaliser depends on the private n).
* ``update-size``: ``log`` of the mean square of every update, for d = 1 (Opacus issue #571).
* ``step-count``: how many steps the run took.
* ``canary-sum``: the canary coordinate's total, in units of C/B.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy.special import logsumexp

from dpaudit._registry import Registry
from dpaudit._validate import check_positive_int
from dpaudit.systems.dpsgd_variants import ProbeData, ProbeSetting, Transcript

__all__ = ["BUG_PAIRS", "BUG_STATISTICS", "BugStatistic", "bug_pair"]

#: The most record values (n · d) a crafted pair may hold.
MAX_RECORD_VALUES = 10**8

BUG_PAIRS: Registry[Callable[[int, ProbeSetting], tuple[ProbeData, ProbeData]]] = Registry(
    "DP-SGD bug pair"
)


def _pair(fillers: np.ndarray, canary: np.ndarray, n: int) -> tuple[ProbeData, ProbeData]:
    out = ProbeData(fillers, np.zeros(n, dtype=np.int64), n)
    inn = ProbeData(np.vstack([fillers, canary[None, :]]), np.r_[np.zeros(n), 1], n)
    return out, inn


def _basis(d: int, scale: float) -> np.ndarray:
    e = np.zeros(d)
    e[0] = scale
    return e


def _opposed(n: int, s: ProbeSetting) -> tuple[ProbeData, ProbeData]:
    c = s.max_grad_norm
    return _pair(np.tile(_basis(s.dimension, -c), (n, 1)), _basis(s.dimension, c), n)


def _heavy(n: int, s: ProbeSetting) -> tuple[ProbeData, ProbeData]:
    c = s.max_grad_norm
    return _pair(np.tile(_basis(s.dimension, -c), (n, 1)), _basis(s.dimension, 1000 * c), n)


def _dirac(n: int, s: ProbeSetting) -> tuple[ProbeData, ProbeData]:
    return _pair(np.zeros((n, s.dimension)), _basis(s.dimension, s.max_grad_norm), n)


def _identical(n: int, s: ProbeSetting) -> tuple[ProbeData, ProbeData]:
    e = _basis(s.dimension, s.max_grad_norm)
    out = ProbeData(np.tile(e, (n, 1)), np.zeros(n, dtype=np.int64), n)
    inn = ProbeData(np.tile(e, (n + 1, 1)), np.zeros(n + 1, dtype=np.int64), n)
    return out, inn


BUG_PAIRS.register("opposed", _opposed)
BUG_PAIRS.register("heavy", _heavy)
BUG_PAIRS.register("dirac", _dirac)
BUG_PAIRS.register("identical", _identical)


def bug_pair(name: str, n: int, setting: ProbeSetting) -> tuple[ProbeData, ProbeData]:
    """The pair ``(D, D′)`` of a registered kind with n fillers.

    Raises:
        TypeError: ``setting`` is not a :class:`~dpaudit.systems.dpsgd_variants.ProbeSetting`.
        ValueError: unknown pair name, n < 1, or n · d above :data:`MAX_RECORD_VALUES`.
    """
    if not isinstance(setting, ProbeSetting):
        raise TypeError(f"setting must be a ProbeSetting, got {type(setting).__name__}")
    if name not in BUG_PAIRS:
        raise ValueError(f"name must be one of {BUG_PAIRS.names()}, got {name!r}")
    n = check_positive_int("n", n)
    if n * setting.dimension > MAX_RECORD_VALUES:
        raise ValueError(
            f"n={n} records of dimension {setting.dimension} exceed the probe's cap of "
            f"{MAX_RECORD_VALUES:,} values"
        )
    return BUG_PAIRS.get(name)(n, setting)


@dataclasses.dataclass(frozen=True)
class BugStatistic:
    """A white-box statistic: ``score(transcript, setting, q) -> float``, large under D′.

    Attributes:
        name: registry name.
        description: one line.
        score: the function (public inputs only).
    """

    name: str
    description: str
    score: Callable[[Transcript, ProbeSetting, float], float]


def _z(t: Transcript, s: ProbeSetting, offset: float) -> np.ndarray:
    """Coordinate 1 in noise units: ``(g·B/C + offset)/σ`` (the filler-only step at 0)."""
    g = t.gradients[:, 0] * s.batch_size / s.max_grad_norm
    return (g + offset) / s.noise_multiplier


def _shuffle_llr(t: Transcript, s: ProbeSetting, q: float) -> float:
    z, mu = _z(t, s, s.batch_size), 2.0 / s.noise_multiplier
    total = 0.0
    for e in np.unique(t.epoch):
        ze = z[t.epoch == e]
        total += float(logsumexp(mu * ze - mu * mu / 2) - np.log(ze.size))
    return total


def _poisson_llr(offset: Callable[[ProbeSetting], float], shift: float):
    def score(t: Transcript, s: ProbeSetting, q: float) -> float:
        z, mu = _z(t, s, offset(s)), shift / s.noise_multiplier
        q = min(float(q), 1.0)
        return float(np.sum(np.logaddexp(np.log1p(-q) if q < 1 else -np.inf,
                                         np.log(q) + mu * z - mu * mu / 2)))  # fmt: skip

    return score


def _noise_scale(t: Transcript, s: ProbeSetting, q: float) -> float:
    if t.gradients.shape[1] < 2:
        raise ValueError("the noise-scale statistic needs dimension ≥ 2")
    return float(-np.log(np.mean(t.gradients[:, 1:] ** 2)))


def _update_size(t: Transcript, s: ProbeSetting, q: float) -> float:
    return float(np.log(np.mean(t.gradients**2)))


def _step_count(t: Transcript, s: ProbeSetting, q: float) -> float:
    return float(t.steps)


def _canary_sum(t: Transcript, s: ProbeSetting, q: float) -> float:
    return float(np.sum(t.gradients[:, 0]) * s.batch_size / s.max_grad_norm)


BUG_STATISTICS: Registry[BugStatistic] = Registry("DP-SGD bug statistic")
BUG_STATISTICS.register("shuffle-llr", BugStatistic(
    "shuffle-llr", "per-epoch LLR of one displaced step (shift 2C) among the epoch's steps",
    _shuffle_llr))  # fmt: skip
BUG_STATISTICS.register("clipped-llr", BugStatistic(
    "clipped-llr", "per-step Poisson LLR of the clipped batch sum flipping from −C to +C",
    _poisson_llr(lambda s: 1.0, 2.0)))  # fmt: skip
BUG_STATISTICS.register("noise-scale", BugStatistic(
    "noise-scale", "−log mean square of the noise-only coordinates (the update's scale)",
    _noise_scale))  # fmt: skip
BUG_STATISTICS.register("update-size", BugStatistic(
    "update-size", "log mean square of every update (scale and data together; any d)",
    _update_size))  # fmt: skip
BUG_STATISTICS.register("step-count", BugStatistic(
    "step-count", "the number of steps the run took", _step_count))  # fmt: skip
BUG_STATISTICS.register("canary-sum", BugStatistic(
    "canary-sum", "the canary coordinate's total over all steps", _canary_sum))  # fmt: skip
