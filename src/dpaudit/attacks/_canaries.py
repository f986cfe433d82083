"""Canaries for auditing in one training run (or many): the game's layout and the canaries.

The one-run game of Steinke, Nasr & Jagielski 2023 (arXiv:2305.08846, Alg. 1; Algorithm 1
of Liu, Boglioni, Fu, Hu, Thaker & Wu, *Enhancing One-run Privacy Auditing with Quantile
Regression-Based Membership Inference*): m canaries, each included in the training set
independently with probability ½ (``S_i = ±1``), next to r non-canary examples that are
always included; one training run; the auditor knows ``S`` and scores every canary. The
same drawing code serves a multi-run audit (e.g. Lifted DP, Pillutla et al. 2023,
arXiv:2305.18447) that needs k fresh canaries per run: :func:`draw_canaries` and
:func:`draw_inclusions` are pure functions of their ``rng``.

Canary kinds (Steinke et al. 2023 §6.2 use data canaries with and without flipped labels;
mislabelled and out-of-distribution inputs make the black-box attack stronger):

* ``"data"`` — examples of the training distribution with their true labels (Liu et al.).
* ``"flipped"`` — examples of the training distribution with a label drawn uniformly from
  the *other* classes.
* ``"noise"`` — out-of-distribution inputs: i.i.d. uniform [0, 1) features with a uniformly
  random label.
* ``"signs"`` — out-of-distribution inputs: i.i.d. random signs ±1 per feature with a
  uniformly random label. Zero-mean and nearly orthogonal to each other and to the data
  (inner products ~√d against squared norms d), so each canary's own gradient dominates its
  score: the most powerful black-box canary here for small models.

:func:`split_pool` deals a pool of examples into disjoint parts (non-canaries, canaries,
holdout for the membership-inference attack) by a seeded permutation.

Example:
    >>> import numpy as np
    >>> X, y = np.zeros((10, 4), dtype=np.float32), np.arange(10) % 3
    >>> c = draw_canaries(X, y, 4, num_classes=3, kind="flipped", rng=0)
    >>> bool(np.all(c.labels != c.true_labels)), c.source.shape
    (True, (4,))
    >>> draw_inclusions(6, rng=0).tolist()
    [False, True, True, True, False, False]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_in_range,
    check_memory,
    check_nonneg_int,
    check_positive_int,
)

__all__ = [
    "CANARY_KINDS",
    "Canaries",
    "CanaryGame",
    "draw_canaries",
    "draw_inclusions",
    "one_run_game",
    "split_pool",
]

CANARY_KINDS: tuple[str, ...] = ("data", "flipped", "noise", "signs")
#: Kinds that are generated rather than drawn from the pool.
SYNTHETIC_KINDS: tuple[str, ...] = ("noise", "signs")


@dataclasses.dataclass(frozen=True, eq=False)
class Canaries:
    """m canaries: inputs, the labels they are trained with, and where they came from.

    Attributes:
        X: (m, d) float32 inputs.
        labels: (m,) int64 labels used in training (and by the scores).
        true_labels: (m,) int64 labels of the source examples (``labels`` unless flipped;
            for synthetic canaries, equal to ``labels``).
        source: (m,) int64 index into the pool each canary was drawn from (−1: synthetic).
        kind: one of :data:`CANARY_KINDS`.
    """

    X: np.ndarray
    labels: np.ndarray
    true_labels: np.ndarray
    source: np.ndarray
    kind: str

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@dataclasses.dataclass(frozen=True, eq=False)
class CanaryGame:
    """The one-run game: canaries and which of them were included (known to the auditor).

    Attributes:
        canaries: the :class:`Canaries`.
        included: (m,) booleans, ``S_i = +1``.
        inclusion_probability: the probability each canary was included with.
    """

    canaries: Canaries
    included: np.ndarray
    inclusion_probability: float

    @property
    def num_canaries(self) -> int:
        """m."""
        return len(self.canaries)

    @property
    def num_included(self) -> int:
        """Number of canaries in the training set."""
        return int(np.count_nonzero(self.included))


#: The largest magnitude a float32 holds: canaries are float32 inputs.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_pool(X: ArrayLike, y: ArrayLike, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    Xa = check_array("X", X, ndim=2)
    biggest = max(abs(float(Xa.max())), abs(float(Xa.min()))) if Xa.size else 0.0
    if biggest > _FLOAT32_MAX:  # (max |x| without an |X| copy of the pool)
        raise ValueError(
            f"X must hold values that fit a float32 (|x| <= {_FLOAT32_MAX:.4g}), got {biggest:g}"
        )
    ya = check_array("y", y, allow_empty=True)
    if ya.shape != (Xa.shape[0],):
        raise ValueError(
            f"y must have shape ({Xa.shape[0]},), one label per row of X (shape {Xa.shape}), "
            f"got {ya.shape}"
        )
    bad = (ya != np.round(ya)) | (ya < 0) | (ya >= num_classes)
    if np.any(bad):
        raise ValueError(
            f"y must hold integer labels in [0, {num_classes - 1}], got {ya[bad][0]:g}"
        )
    return Xa, ya.astype(np.int64)


def _check_draw(
    X: ArrayLike, y: ArrayLike, num_canaries: int, num_classes: int, kind: str
) -> tuple[int, int, str, np.ndarray, np.ndarray]:
    m = check_positive_int("num_canaries", num_canaries)
    k = check_positive_int("num_classes", num_classes)
    if k < 2:
        raise ValueError(f"num_classes must be at least 2, got {k}")
    kind = check_choice("kind", kind, CANARY_KINDS)
    Xa, ya = _check_pool(X, y, k)
    if kind in SYNTHETIC_KINDS:
        # m × d float64 uniforms and their float32 copy
        check_memory(
            12.0 * m * Xa.shape[1],
            f"{kind!r} canaries with num_canaries={m} and {Xa.shape[1]} features",
        )
    elif m > Xa.shape[0]:
        raise ValueError(f"num_canaries={m} exceeds the pool of {Xa.shape[0]} examples")
    return m, k, kind, Xa, ya


def draw_canaries(
    X: ArrayLike,
    y: ArrayLike,
    num_canaries: int,
    *,
    num_classes: int,
    kind: str = "data",
    rng: RngLike = None,
) -> Canaries:
    """Draw m canaries of a kind from a pool of examples (without replacement).

    Args:
        X: (N, d) pool inputs (``"noise"`` canaries only use d).
        y: (N,) pool labels.
        num_canaries: m ≥ 1 (≤ N for ``"data"``/``"flipped"``).
        num_classes: C ≥ 2.
        kind: ``"data"``, ``"flipped"``, ``"noise"`` or ``"signs"`` (module docstring).
        rng: randomness of the draw (keyword-only).

    Returns:
        :class:`Canaries`.

    Raises:
        TypeError, ValueError: m ≤ 0, m > N, bad kind or labels.
    """
    m, k, kind, Xa, ya = _check_draw(X, y, num_canaries, num_classes, kind)
    return _draw(m, k, kind, Xa, ya, as_generator(rng))


def _draw(m: int, k: int, kind: str, Xa: np.ndarray, ya: np.ndarray, gen) -> Canaries:
    """:func:`draw_canaries` on checked arguments."""
    if kind in SYNTHETIC_KINDS:
        d = Xa.shape[1]
        if kind == "noise":
            inputs = gen.random((m, d), dtype=np.float32)
        else:
            inputs = np.where(gen.random((m, d)) < 0.5, -1.0, 1.0).astype(np.float32)
        labels = gen.integers(0, k, size=m).astype(np.int64)
        return Canaries(inputs, labels, labels.copy(), np.full(m, -1, dtype=np.int64), kind)
    src = np.sort(gen.choice(Xa.shape[0], size=m, replace=False)).astype(np.int64)
    true = ya[src]
    labels = true.copy()
    if kind == "flipped":
        labels = (true + gen.integers(1, k, size=m)) % k
    return Canaries(Xa[src].astype(np.float32), labels, true, src, kind)


def draw_inclusions(
    num_canaries: int, *, inclusion_probability: float = 0.5, rng: RngLike = None
) -> np.ndarray:
    """Each of m canaries included independently with probability p (Steinke et al. 2023).

    Raises:
        ValueError: m ≤ 0, p outside (0, 1).
    """
    m = check_positive_int("num_canaries", num_canaries)
    p = check_in_range("inclusion_probability", inclusion_probability, 0.0, 1.0)
    check_memory(9.0 * m, f"draw_inclusions with num_canaries={m}")  # float64 uniforms + booleans
    return as_generator(rng).random(m) < p


def one_run_game(
    X: ArrayLike,
    y: ArrayLike,
    num_canaries: int,
    *,
    num_classes: int,
    kind: str = "data",
    inclusion_probability: float = 0.5,
    rng: RngLike = None,
) -> CanaryGame:
    """Canaries drawn from the pool and their inclusions (two independent child streams).

    Raises:
        TypeError, ValueError: as :func:`draw_canaries` and :func:`draw_inclusions`, before
            anything is drawn.
    """
    p = check_in_range("inclusion_probability", inclusion_probability, 0.0, 1.0)
    m, k, kind, Xa, ya = _check_draw(X, y, num_canaries, num_classes, kind)  # the pool once
    check_memory(9.0 * m, f"draw_inclusions with num_canaries={m}")
    streams = np.random.SeedSequence(as_generator(rng).integers(0, 2**63, size=2).tolist())
    s_canaries, s_inclusion = streams.spawn(2)
    canaries = _draw(m, k, kind, Xa, ya, as_generator(s_canaries))
    included = draw_inclusions(m, inclusion_probability=p, rng=s_inclusion)
    return CanaryGame(canaries, included, p)


def split_pool(
    pool_size: int, sizes: dict[str, int], *, rng: RngLike = None
) -> dict[str, np.ndarray]:
    """Deal ``range(pool_size)`` into disjoint named parts of the given sizes (sorted indices).

    Args:
        pool_size: N.
        sizes: part name → size ≥ 0 (in order; the rest of the pool is unused).
        rng: randomness of the permutation.

    Returns:
        part name → sorted int64 indices.

    Raises:
        ValueError: the parts need more than N examples.

    Example:
        >>> {k: v.size for k, v in split_pool(10, {"a": 3, "b": 5}, rng=0).items()}
        {'a': 3, 'b': 5}
    """
    n = check_positive_int("pool_size", pool_size)
    if not isinstance(sizes, Mapping):
        raise TypeError(f"sizes must be a mapping of part name to size, got {sizes!r:.80}")
    for name in sizes:
        if not isinstance(name, str):
            raise TypeError(f"sizes must have string part names, got {name!r:.80}")
    need = {name: check_nonneg_int(f"sizes[{name!r}]", s) for name, s in sizes.items()}
    if sum(need.values()) > n:
        raise ValueError(
            f"sizes: the parts {need} need {sum(need.values())} examples; "
            f"the pool has {n} (pool_size={n})"
        )
    check_memory(8.0 * n, f"split_pool with pool_size={n}")  # the int64 permutation
    perm = as_generator(rng).permutation(n)
    out, start = {}, 0
    for name, size in need.items():
        out[name] = np.sort(perm[start : start + size]).astype(np.int64)
        start += size
    return out
