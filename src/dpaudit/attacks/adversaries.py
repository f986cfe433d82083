"""Adversaries against private prediction (paper 000 §4.1, §5.1–5.2).

An adversary is a *crafter* (how S′ is made from S, one point apart) and a *distinguisher*
(which queries it asks, §4):

* crafters — **natural**: add an in-distribution point, the query with its true label;
  **poisoning**: add the query mislabelled with the second most common label among the
  teachers' votes on it (§5.1 "Experiment Setup");
* distinguishers — **adversarial**: ask the same query over and over (privacy composes over
  the repetitions); **natural**: ask the natural queries of a test set (privacy composes
  over the distinct queries).

The three adversaries of §4.1: **Nat-AdvQ** (natural crafter, adversarial distinguisher),
**Pois-AdvQ** (poisoning crafter, adversarial distinguisher) and **Pois-NatQ** (poisoning
crafter, natural distinguisher).

In CaPC the parties are fixed, so the adversary chooses the party that receives its point
(:func:`choose_party`); in PATE the point lands in a random part.

Example:
    >>> adv = get_adversary("pois-advq")
    >>> adv.crafter, adv.distinguisher, adv.composition
    ('poisoning', 'adversarial', 'repetitions')
    >>> second_most_common_label([3, 240, 7])
    2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_counts,
    check_nonneg_int,
    check_positive_int,
)

__all__ = [
    "ADVERSARIES",
    "ADVERSARY_NAMES",
    "CRAFTERS",
    "DISTINGUISHERS",
    "Adversary",
    "CraftedPoint",
    "adversarial_queries",
    "choose_party",
    "craft",
    "craft_natural",
    "craft_poison",
    "get_adversary",
    "natural_queries",
    "parse_adversaries",
    "second_most_common_label",
]

CRAFTERS: tuple[str, ...] = ("natural", "poisoning")
DISTINGUISHERS: tuple[str, ...] = ("adversarial", "natural")


@dataclasses.dataclass(frozen=True)
class Adversary(ResultMixin):
    """A crafter and a distinguisher (paper 000 §4.1).

    Attributes:
        name: ``"nat-advq"``, ``"pois-advq"`` or ``"pois-natq"``.
        crafter: ``"natural"`` or ``"poisoning"``.
        distinguisher: ``"adversarial"`` (repeated query) or ``"natural"`` (test set).
        description: one line from the paper.
    """

    name: str
    crafter: str
    distinguisher: str
    description: str

    @property
    def composition(self) -> str:
        """``"repetitions"`` (adversarial queries) or ``"queries"`` (natural queries)."""
        return "repetitions" if self.distinguisher == "adversarial" else "queries"

    @property
    def label(self) -> str:
        """The paper's name, e.g. ``"Pois-AdvQ"``."""
        return {"nat-advq": "Nat-AdvQ", "pois-advq": "Pois-AdvQ", "pois-natq": "Pois-NatQ"}[
            self.name
        ]


ADVERSARIES = MappingProxyType(
    {
        "nat-advq": Adversary(
            "nat-advq",
            "natural",
            "adversarial",
            "membership inference of an in-distribution point with adversarially chosen "
            "(repeated) queries",
        ),
        "pois-advq": Adversary(
            "pois-advq",
            "poisoning",
            "adversarial",
            "a worst-case poisoning point, then repeated queries",
        ),
        "pois-natq": Adversary(
            "pois-natq",
            "poisoning",
            "natural",
            "static poisoning of S, then only natural (test-set) queries",
        ),
    }
)
ADVERSARY_NAMES: tuple[str, ...] = tuple(ADVERSARIES)


def get_adversary(name: str) -> Adversary:
    """The adversary called ``name`` (case-insensitive).

    Raises:
        ValueError: unknown name (the message lists the names).

    Example:
        >>> get_adversary("Nat-AdvQ").crafter
        'natural'
    """
    if not isinstance(name, str):
        raise TypeError(f"adversary must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    check_choice("adversary", key, ADVERSARY_NAMES)
    return ADVERSARIES[key]


def parse_adversaries(spec: str | Sequence[str]) -> tuple[Adversary, ...]:
    """Adversaries from ``"nat-advq,pois-advq"`` or a sequence of names (order kept, no repeats).

    Raises:
        ValueError: empty list or an unknown name.

    Example:
        >>> [a.name for a in parse_adversaries("pois-natq, nat-advq")]
        ['pois-natq', 'nat-advq']
    """
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if isinstance(n, str) and n.strip()] if names else []
    if not names:
        raise ValueError(f"adversaries must name at least one of {ADVERSARY_NAMES}, got {spec!r}")
    out: list[Adversary] = []
    for n in names:
        adv = get_adversary(n)
        if adv not in out:
            out.append(adv)
    return tuple(out)


# ------------------------------------------------------------------------------------ crafters


@dataclasses.dataclass(frozen=True)
class CraftedPoint(ResultMixin):
    """The point that S′ adds to S.

    Attributes:
        x: its features.
        label: the label it is added with.
        true_label: the true label of the source point.
        source_index: index of the source point in the test set (−1 if unknown).
        crafter: ``"natural"`` or ``"poisoning"``.
        votes: the teachers' histogram on the point that the crafter looked at (empty if none).
    """

    x: FloatArray
    label: int
    true_label: int
    source_index: int
    crafter: str
    votes: IntArray

    @property
    def mislabelled(self) -> bool:
        """Whether the point is added with a label other than its true one."""
        return self.label != self.true_label


def second_most_common_label(votes: ArrayLike) -> int:
    """The class with the second-largest vote count (ties: the lower class index).

    Args:
        votes: one histogram ``(C,)``, non-negative counts, C ≥ 2.

    Returns:
        The class index.

    Raises:
        ValueError: not a 1-d histogram of counts with at least 2 classes.

    Example:
        >>> second_most_common_label([5, 5, 1])
        1
    """
    h = check_counts("votes", votes)
    if h.ndim != 1 or h.size < 2:
        raise ValueError(f"votes must be one histogram with at least 2 classes, got {h.shape}")
    order = np.lexsort((np.arange(h.size), -h))
    return int(order[1])


def _check_point(x: ArrayLike, true_label: int, source_index: int) -> tuple[np.ndarray, int, int]:
    xa = check_array("x", x, ndim=1)
    xa.setflags(write=False)
    y = check_nonneg_int("true_label", true_label)
    if isinstance(source_index, (bool, np.bool_)) or not isinstance(
        source_index, (int, np.integer)
    ):
        raise TypeError(f"source_index must be an integer, got {source_index!r}")
    if source_index < -1:
        raise ValueError(f"source_index must be >= -1, got {source_index}")
    return xa, y, int(source_index)


def craft_natural(
    x: ArrayLike, true_label: int, *, source_index: int = -1, votes: ArrayLike | None = None
) -> CraftedPoint:
    """Natural crafter: S′ = S ∪ {(x, true label)} (an in-distribution point; §4, §5.1).

    Args:
        x: the point (a test query), shape ``(d,)``.
        true_label: its label.
        source_index: its index in the test set.
        votes: the teachers' histogram on it (recorded only).

    Returns:
        :class:`CraftedPoint` with ``label == true_label``.

    Example:
        >>> craft_natural([0.1, 0.2], 3).label
        3
    """
    xa, y, idx = _check_point(x, true_label, source_index)
    h = np.zeros(0, dtype=np.int64) if votes is None else check_counts("votes", votes)
    return CraftedPoint(xa, y, y, idx, "natural", h)


def craft_poison(
    x: ArrayLike, votes: ArrayLike, *, true_label: int, source_index: int = -1
) -> CraftedPoint:
    """Poisoning crafter: the query mislabelled with the second most common label (§5.1).

    Args:
        x: the point (a test query), shape ``(d,)``.
        votes: the teachers' histogram on it under S, shape ``(C,)``.
        true_label: its true label.
        source_index: its index in the test set.

    Returns:
        :class:`CraftedPoint` with ``label = second_most_common_label(votes)``.

    Example:
        >>> craft_poison([0.0], [1, 200, 49], true_label=1).label
        2
    """
    xa, y, idx = _check_point(x, true_label, source_index)
    h = check_counts("votes", votes)
    return CraftedPoint(xa, second_most_common_label(h), y, idx, "poisoning", h)


def craft(
    crafter: str, x: ArrayLike, true_label: int, votes: ArrayLike, *, source_index: int = -1
) -> CraftedPoint:
    """Dispatch to :func:`craft_natural` or :func:`craft_poison` by name.

    Raises:
        ValueError: unknown crafter.
    """
    check_choice("crafter", crafter, CRAFTERS)
    if crafter == "natural":
        return craft_natural(x, true_label, source_index=source_index, votes=votes)
    return craft_poison(x, votes, true_label=true_label, source_index=source_index)


def choose_party(teacher_votes: ArrayLike, point: CraftedPoint) -> int:
    """CaPC: the party the adversary gives its point to (paper 000 §5.2, §5.4).

    Adding (x, y′) can only change the vote of a teacher that does not already vote y′, so
    candidates are those teachers; among them the adversary prefers one voting the most
    common label (moving a vote away from the plurality changes the output distribution
    most), then the lowest index. If every teacher already votes y′ no vote can change and
    teacher 0 is returned (the audit then finds no leakage, as it should).

    Args:
        teacher_votes: each teacher's label on the query under S, shape ``(m,)``.
        point: the crafted point.

    Returns:
        The teacher (party) index.

    Example:
        >>> pt = craft_natural([0.0], 1)
        >>> choose_party([1, 0, 2, 0], pt)
        1
    """
    v = check_counts("teacher_votes", teacher_votes)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"teacher_votes must be a non-empty 1-d array, got shape {v.shape}")
    cand = np.flatnonzero(v != point.label)
    if cand.size == 0:
        return 0
    counts = np.bincount(v, minlength=int(v.max()) + 1)
    best = np.lexsort((cand, -counts[v[cand]]))
    return int(cand[best[0]])


# ------------------------------------------------------------------------------- distinguishers


def natural_queries(
    num_test: int, num_queries: int, *, rng: RngLike = None, exclude: ArrayLike = ()
) -> IntArray:
    """Natural distinguisher: ``num_queries`` distinct test-set indices drawn at random.

    Args:
        num_test: size of the test set.
        num_queries: n_Q ≥ 1.
        rng: seed of the draw.
        exclude: indices never drawn (e.g. the poisoning point's source).

    Returns:
        int64 indices, shape ``(num_queries,)``.

    Raises:
        ValueError: more queries than available test points.

    Example:
        >>> natural_queries(10, 3, rng=0).shape
        (3,)
    """
    n = check_positive_int("num_test", num_test)
    q = check_positive_int("num_queries", num_queries)
    excl = np.unique(np.asarray(exclude, dtype=np.int64))
    pool = np.setdiff1d(np.arange(n), excl)
    if q > pool.size:
        raise ValueError(
            f"num_queries must be at most the {pool.size} available test points, got {q}"
        )
    return np.sort(as_generator(rng).choice(pool, size=q, replace=False)).astype(np.int64)


def adversarial_queries(query_index: int, repetitions: int) -> IntArray:
    """Adversarial distinguisher: the same query ``repetitions`` times (paper 000 §4).

    Example:
        >>> adversarial_queries(7, 3).tolist()
        [7, 7, 7]
    """
    i = check_nonneg_int("query_index", query_index)
    r = check_positive_int("repetitions", repetitions)
    return np.full(r, i, dtype=np.int64)
