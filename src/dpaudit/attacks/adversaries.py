"""Adversaries against private prediction (Chadha et al. 2024, "Auditing Private Prediction",
arXiv:2402.09403, §4.1, §5.1–5.2).

An adversary is an object: a *crafter* (how S′ is made from S, one point apart) and a
*distinguisher* (which queries it asks, and so how its per-query bound composes):

* crafters — :class:`NaturalCrafter`: add an in-distribution point, the query with its true
  label; :class:`PoisoningCrafter`: add the query mislabelled with the second most common
  label among the teachers' votes on it (§5.1 "Experiment Setup");
* distinguishers — :class:`AdversarialQueries`: ask the same query over and over (privacy
  composes over the repetitions; the worst query is chosen); :class:`NaturalQueries`: ask the
  natural queries of a test set (privacy composes over the distinct queries).

The three adversaries of §4.1 are registered in :data:`ADVERSARIES`: **Nat-AdvQ** (natural
crafter, adversarial distinguisher), **Pois-AdvQ** (poisoning crafter, adversarial
distinguisher) and **Pois-NatQ** (poisoning crafter, natural distinguisher). A new adversary
is an :class:`Adversary` (any crafter with ``craft(...)`` and any distinguisher with
``targets(...)``) registered under a name.

When a system lets the adversary choose the receiving teacher (CaPC's fixed parties,
``placement = "chosen"``), :meth:`Adversary.choose_teacher` picks it (:func:`choose_party`);
otherwise the point lands in a random part.

Example:
    >>> adv = get_adversary("pois-advq")
    >>> adv.crafter.name, adv.distinguisher.name, adv.composition
    ('poisoning', 'adversarial', 'repetitions')
    >>> second_most_common_label([3, 240, 7])
    2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_counts,
    check_memory,
    check_nonneg_int,
    check_positive_int,
    check_rng,
)

__all__ = [
    "ADVERSARIES",
    "ADVERSARY_NAMES",
    "AdversarialQueries",
    "Adversary",
    "CraftedPoint",
    "Crafter",
    "Distinguisher",
    "NaturalCrafter",
    "NaturalQueries",
    "PoisoningCrafter",
    "Target",
    "adversarial_queries",
    "choose_party",
    "craft_natural",
    "craft_poison",
    "get_adversary",
    "natural_queries",
    "parse_adversaries",
    "second_most_common_label",
]


# ------------------------------------------------------------------------------- protocols


#: How a distinguisher's per-query bounds compose: over repetitions of one query, or over
#: distinct queries.
_COMPOSITIONS: tuple[str, ...] = ("repetitions", "queries")


@runtime_checkable
class Crafter(Protocol):
    """Makes the point that S′ adds to S from a source query."""

    name: str

    def craft(
        self, x: ArrayLike, true_label: int, votes: ArrayLike, *, source_index: int = -1
    ) -> CraftedPoint: ...


@dataclasses.dataclass(frozen=True)
class Target(ResultMixin):
    """One crafted point of a distinguisher and the query columns it is evaluated on.

    Attributes:
        source: the query column the point is crafted from (``num_queries`` = the poisoning
            source row kept outside the natural queries).
        columns: the natural-query columns whose answers the point may change.
    """

    source: int
    columns: tuple[int, ...]


@runtime_checkable
class Distinguisher(Protocol):
    """Which queries the adversary asks and how the per-query bounds compose."""

    name: str
    composition: str

    def targets(self, num_queries: int, num_candidates: int) -> tuple[Target, ...]: ...


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
    h = np.zeros(0, dtype=np.int64) if votes is None else _check_point_votes(votes, y)
    return CraftedPoint(xa, y, y, idx, "natural", h)


def _check_point_votes(votes: ArrayLike, true_label: int) -> np.ndarray:
    """One histogram ``(C,)`` of counts, C ≥ 2, with ``true_label`` one of its classes."""
    h = check_counts("votes", votes)
    if h.ndim != 1 or h.size < 2:
        raise ValueError(f"votes must be one histogram with at least 2 classes, got {h.shape}")
    if true_label >= h.size:
        raise ValueError(
            f"true_label must be a class of votes (0 to {h.size - 1}), got {true_label}"
        )
    return h


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
    h = _check_point_votes(votes, y)
    return CraftedPoint(xa, second_most_common_label(h), y, idx, "poisoning", h)


@dataclasses.dataclass(frozen=True)
class NaturalCrafter:
    """S′ = S ∪ {(x, true label)}: an in-distribution point (:func:`craft_natural`)."""

    name: str = "natural"

    def craft(
        self, x: ArrayLike, true_label: int, votes: ArrayLike, *, source_index: int = -1
    ) -> CraftedPoint:
        """The natural point made from query ``x``."""
        return craft_natural(x, true_label, source_index=source_index, votes=votes)


@dataclasses.dataclass(frozen=True)
class PoisoningCrafter:
    """S′ = S ∪ {(x, second most common label)}: a mislabelled point (:func:`craft_poison`)."""

    name: str = "poisoning"

    def craft(
        self, x: ArrayLike, true_label: int, votes: ArrayLike, *, source_index: int = -1
    ) -> CraftedPoint:
        """The poisoning point made from query ``x``."""
        return craft_poison(x, votes, true_label=true_label, source_index=source_index)


def choose_party(teacher_votes: ArrayLike, point: CraftedPoint) -> int:
    """CaPC: the party the adversary gives its point to (Chadha et al. 2024 §5.2, §5.4).

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
    label = getattr(point, "label", None)
    if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer)):
        raise TypeError(f"point must be a CraftedPoint (with an integer label), got {point!r:.80}")
    cand = np.flatnonzero(v != label)
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
        ValueError: more queries than available test points; ``exclude`` not a 1-d list of
            whole indices in ``[0, num_test)``.

    Example:
        >>> natural_queries(10, 3, rng=0).shape
        (3,)
    """
    n = check_positive_int("num_test", num_test)
    q = check_positive_int("num_queries", num_queries)
    ex = check_array("exclude", exclude, allow_empty=True, nonneg=True)
    if ex.ndim > 1:
        raise ValueError(f"exclude must be a 1-d list of test indices, got shape {ex.shape}")
    ex = ex.ravel()
    if np.any(ex != np.round(ex)):
        raise ValueError(f"exclude must hold integer indices, got {ex[ex != np.round(ex)][0]:g}")
    if np.any(ex >= n):  # an index outside the test set is a mistake, not a no-op
        raise ValueError(
            f"exclude must hold test indices below num_test={n}, got {ex[ex >= n][0]:g}"
        )
    check_rng(rng)
    check_memory(24.0 * n, f"natural_queries with num_test={n}")  # the index pool, twice
    excl = np.unique(ex.astype(np.int64))
    pool = np.setdiff1d(np.arange(n), excl)
    if q > pool.size:
        raise ValueError(
            f"num_queries must be at most the {pool.size} available test points, got {q}"
        )
    return np.sort(as_generator(rng).choice(pool, size=q, replace=False)).astype(np.int64)


def adversarial_queries(query_index: int, repetitions: int) -> IntArray:
    """Adversarial distinguisher: the same query ``repetitions`` times (Chadha et al. 2024 §4).

    Example:
        >>> adversarial_queries(7, 3).tolist()
        [7, 7, 7]
    """
    i = check_nonneg_int("query_index", query_index)
    r = check_positive_int("repetitions", repetitions)
    check_memory(8.0 * r, f"adversarial_queries with repetitions={r}")
    return np.full(r, i, dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class AdversarialQueries:
    """Repeat one query (Chadha et al. 2024 §4): one crafted point per candidate query,
    evaluated on that query; the worst query's bound composes over ``n_Q`` repetitions."""

    name: str = "adversarial"
    composition: str = "repetitions"

    def __post_init__(self) -> None:
        check_choice("composition", self.composition, _COMPOSITIONS)

    def targets(self, num_queries: int, num_candidates: int) -> tuple[Target, ...]:
        """``Target(q, (q,))`` for each of the first ``num_candidates`` queries."""
        check_positive_int("num_queries", num_queries)
        return tuple(
            Target(q, (q,)) for q in range(check_positive_int("num_candidates", num_candidates))
        )


@dataclasses.dataclass(frozen=True)
class NaturalQueries:
    """Ask the natural test queries (Chadha et al. 2024 §4): one point crafted from a source
    outside the queries, evaluated on every query; the bounds add up over the queries."""

    name: str = "natural"
    composition: str = "queries"

    def __post_init__(self) -> None:
        check_choice("composition", self.composition, _COMPOSITIONS)

    def targets(self, num_queries: int, num_candidates: int) -> tuple[Target, ...]:
        """One ``Target(num_queries, (0, …, num_queries − 1))``."""
        n = check_positive_int("num_queries", num_queries)
        return (Target(n, tuple(range(n))),)


@dataclasses.dataclass(frozen=True)
class Adversary:
    """A crafter and a distinguisher (Chadha et al. 2024 §4.1).

    Attributes:
        name: the registered name (``"nat-advq"``, …).
        crafter: a :class:`Crafter`.
        distinguisher: a :class:`Distinguisher`.
        description: one line.
        label: the display name (``"Pois-AdvQ"``).
        stream_id: index of the adversary's random streams (None: derived from the name), so
            an audit of a subset of adversaries reproduces the same numbers.
    """

    name: str
    crafter: Any
    distinguisher: Any
    description: str = ""
    label: str = ""
    stream_id: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.crafter, Crafter):
            raise TypeError(
                f"crafter must be a Crafter (a .name and a .craft method), got {self.crafter!r:.80}"
            )
        if not isinstance(self.distinguisher, Distinguisher):
            raise TypeError(
                "distinguisher must be a Distinguisher (.name, .composition and a .targets "
                f"method), got {self.distinguisher!r:.80}"
            )
        check_choice("distinguisher.composition", self.distinguisher.composition, _COMPOSITIONS)
        if self.stream_id is not None:
            object.__setattr__(self, "stream_id", check_nonneg_int("stream_id", self.stream_id))

    @property
    def composition(self) -> str:
        """``"repetitions"`` or ``"queries"`` (from the distinguisher)."""
        return self.distinguisher.composition

    def targets(self, num_queries: int, num_candidates: int) -> tuple[Target, ...]:
        """The crafted points' sources and evaluation columns (from the distinguisher)."""
        return tuple(self.distinguisher.targets(num_queries, num_candidates))

    def craft(
        self, x: ArrayLike, true_label: int, votes: ArrayLike, *, source_index: int = -1
    ) -> CraftedPoint:
        """The point S′ adds (from the crafter)."""
        return self.crafter.craft(x, true_label, votes, source_index=source_index)

    def choose_teacher(self, teacher_votes: ArrayLike, point: CraftedPoint) -> int:
        """The receiving teacher, where the system lets the adversary choose it
        (:func:`choose_party`)."""
        return choose_party(teacher_votes, point)

    def to_dict(self) -> dict[str, Any]:
        """Names and description (for results)."""
        return {
            "name": self.name,
            "crafter": self.crafter.name,
            "distinguisher": self.distinguisher.name,
            "composition": self.composition,
            "description": self.description,
        }


ADVERSARIES: Registry[Adversary] = Registry("adversary")
"""Registered adversaries (name → :class:`Adversary`)."""
ADVERSARIES.register(
    "nat-advq",
    Adversary(
        "nat-advq",
        NaturalCrafter(),
        AdversarialQueries(),
        "membership inference of an in-distribution point with adversarially chosen "
        "(repeated) queries",
        "Nat-AdvQ",
        0,
    ),
)
ADVERSARIES.register(
    "pois-advq",
    Adversary(
        "pois-advq",
        PoisoningCrafter(),
        AdversarialQueries(),
        "a worst-case poisoning point, then repeated queries",
        "Pois-AdvQ",
        1,
    ),
)
ADVERSARIES.register(
    "pois-natq",
    Adversary(
        "pois-natq",
        PoisoningCrafter(),
        NaturalQueries(),
        "static poisoning of S, then only natural (test-set) queries",
        "Pois-NatQ",
        2,
    ),
)
ADVERSARY_NAMES: tuple[str, ...] = ADVERSARIES.names()


def get_adversary(name: str) -> Adversary:
    """The adversary registered as ``name`` (case-insensitive).

    Raises:
        TypeError: not a string.
        ValueError: unknown name (the message lists the names).

    Example:
        >>> get_adversary("Nat-AdvQ").crafter.name
        'natural'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be an adversary name (a string), got {name!r:.80}")
    try:
        return ADVERSARIES.get(name)
    except ValueError as exc:
        raise ValueError(f"name: {exc}") from None


def parse_adversaries(spec: str | Sequence[str]) -> tuple[Adversary, ...]:
    """Adversaries from ``"nat-advq,pois-advq"`` or a sequence of names (order kept, no repeats).

    Raises:
        ValueError: empty list or an unknown name.

    Example:
        >>> [a.name for a in parse_adversaries("pois-natq, nat-advq")]
        ['pois-natq', 'nat-advq']
    """
    if isinstance(spec, str):
        names = spec.split(",")
    elif isinstance(spec, Sequence) and all(isinstance(n, str) for n in spec):
        names = list(spec)
    else:
        raise TypeError(f"spec must be a string or a sequence of strings, got {spec!r:.80}")
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValueError(
            f"spec must name at least one adversary of {ADVERSARIES.names()}, got {spec!r}"
        )
    out: list[Adversary] = []
    for n in names:
        try:
            adv = ADVERSARIES.get(n)
        except ValueError as exc:
            raise ValueError(f"spec: {exc}") from None
        if adv not in out:
            out.append(adv)
    return tuple(out)
