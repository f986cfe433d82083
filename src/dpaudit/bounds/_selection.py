"""How an audit pays for a choice it makes on the data: one vocabulary for every bound.

An audit that picks a threshold, an output set, a partition, a number of guesses or an
abstention threshold on the very samples it then bounds reports a maximum over many
tests as if it were one test, and its confidence is overstated. Every bound in
:mod:`dpaudit.bounds` that chooses anything takes ``selection=`` one of three strategies:

* :class:`Explicit` — the value was fixed before seeing the data; nothing to pay.
* :class:`Split` — the samples (scores, counts or canaries) are split at random with the
  bound's ``rng``; the candidate with the best bound on the selection part is bounded on
  the held-out part only. Valid because the held-out samples are independent of the choice.
* :class:`Bonferroni` — every one of ``m`` candidates is bounded on all samples at
  failure probability ``β/m`` and the best is reported (union bound).

The strategies are plain values (frozen dataclasses, no randomness inside): the randomness
of a split comes from the bound's ``rng`` argument, and its seed is recorded in the result.
Each result carries a :class:`dpaudit._results.SelectionRecord` built by
:meth:`Selection.record`. The strings ``"split"`` and ``"bonferroni"`` are accepted as
shorthands for ``Split()`` and ``Bonferroni()``.
"""

from __future__ import annotations

import abc
import dataclasses
import numbers
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from dpaudit._results import SelectionRecord
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import RngLike
from dpaudit._validate import check_array, check_in_range, check_real

__all__ = [
    "DEFAULT_BONFERRONI",
    "DEFAULT_SPLIT",
    "Bonferroni",
    "Explicit",
    "Selection",
    "Split",
    "as_selection",
    "selection_generator",
    "split_indices",
]


class Selection(abc.ABC):
    """Base class of the selection strategies: how a data-dependent choice is paid for."""

    strategy: ClassVar[str] = "none"

    @abc.abstractmethod
    def describe(
        self, *, n_candidates: int | None = None, seed: int | None = None, chosen: Any = None
    ) -> str:
        """One line saying how the choice was made and paid for (for a ``SelectionRecord``).

        Args:
            n_candidates: number of candidates considered (None: not counted).
            seed: seed of a random split, where one was used.
            chosen: the value chosen, where there is one.
        """

    def record(
        self,
        choice: str,
        *,
        n_candidates: int | None = None,
        seed: int | None = None,
        chosen: Any = None,
    ) -> SelectionRecord:
        """The :class:`~dpaudit._results.SelectionRecord` of ``choice`` made this way.

        Example:
            >>> Bonferroni((0.5, 1.0)).record("threshold", chosen=1.0)
            SelectionRecord(choice='threshold', strategy='bonferroni', detail='best of 2 \
candidates (1.0), each bounded at failure probability beta/2 (union bound)')
        """
        detail = self.describe(n_candidates=n_candidates, seed=seed, chosen=chosen)
        return SelectionRecord(choice=choice, strategy=self.strategy, detail=detail)


def _chosen(chosen: Any) -> str:
    return "" if chosen is None else f" ({chosen!r})"


@dataclasses.dataclass(frozen=True)
class Explicit(Selection):
    """The value was fixed before seeing the data (a threshold, output set, guess count …).

    Attributes:
        value: the value used; a real number must be finite. Each bound checks that it is
            a valid threshold, output set, partition or guess count.
    """

    value: Any
    strategy: ClassVar[str] = "explicit"

    def __post_init__(self) -> None:
        if self.value is None or isinstance(self.value, (str, bytes)):
            raise TypeError(f"Explicit value must be a number or a collection, got {self.value!r}")
        if isinstance(self.value, numbers.Integral) and not isinstance(self.value, bool):
            object.__setattr__(self, "value", int(self.value))
        elif isinstance(self.value, (numbers.Real, np.bool_)):
            object.__setattr__(self, "value", check_real("value", self.value))
        else:
            object.__setattr__(self, "value", _frozen(self.value))

    def describe(
        self, *, n_candidates: int | None = None, seed: int | None = None, chosen: Any = None
    ) -> str:
        """``"fixed in advance: <value>"``."""
        return f"fixed in advance: {self.value!r}"


@dataclasses.dataclass(frozen=True)
class Split(Selection):
    """Choose on a random part of the samples, bound on the held-out rest.

    The samples (each class of scores, each query's counts, or the canaries) are split at
    random with the bound's ``rng``: ``round(fraction·n)`` form the selection part. The
    candidate with the best bound there is bounded on the held-out part, whose counts alone
    give the reported bound, at the full confidence level.

    Attributes:
        fraction: share of the samples used for selection, in (0, 1).
    """

    fraction: float = 0.5
    strategy: ClassVar[str] = "split"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", check_in_range("fraction", self.fraction, 0.0, 1.0))

    def describe(
        self, *, n_candidates: int | None = None, seed: int | None = None, chosen: Any = None
    ) -> str:
        """Which share chose, which was bounded, and the seed."""
        among = "" if n_candidates is None else f" among {n_candidates} candidates"
        seed_text = "" if seed is None else f", seed {seed}"
        return (
            f"chosen{_chosen(chosen)}{among} on a random {self.fraction:.0%} of the samples"
            f"{seed_text}; bounded on the held-out {1.0 - self.fraction:.0%} only"
        )


@dataclasses.dataclass(frozen=True)
class Bonferroni(Selection):
    """Bound every candidate at failure probability ``β/m`` on all samples; keep the best.

    Attributes:
        candidates: the m candidates, fixed before seeing the data (thresholds, output sets,
            partitions, guess counts …), or None for the bound's own candidate set (all
            output sets of :func:`~dpaudit.bounds.rdp_audit`, the grid of a sweep).
    """

    candidates: tuple[Any, ...] | None = None
    strategy: ClassVar[str] = "bonferroni"

    def __post_init__(self) -> None:
        if self.candidates is None:
            return
        if isinstance(self.candidates, (str, bytes)) or not isinstance(
            self.candidates, (Sequence, np.ndarray)
        ):
            raise TypeError(f"candidates must be a sequence, got {self.candidates!r}")
        items = list(self.candidates)
        if items and all(isinstance(x, numbers.Real) for x in items):
            arr = check_array("candidates", items, ndim=1)
            object.__setattr__(self, "candidates", tuple(float(x) for x in arr))
            return
        if not items:
            raise ValueError("candidates must not be empty")
        object.__setattr__(self, "candidates", tuple(_frozen(x) for x in items))

    def describe(
        self, *, n_candidates: int | None = None, seed: int | None = None, chosen: Any = None
    ) -> str:
        """How many candidates were paid for."""
        m = len(self.candidates) if n_candidates is None and self.candidates else n_candidates
        return (
            f"best of {m} candidates{_chosen(chosen)}, each bounded at failure probability "
            f"beta/{m} (union bound)"
        )


def _frozen(value: Any) -> Any:
    """Nested lists and arrays as nested tuples (hashable, comparable)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


#: The default selection of the bounds that choose: a random half chooses, the other bounds.
DEFAULT_SPLIT = Split()
#: The default selection of the sweeps: every grid point paid for by a union bound.
DEFAULT_BONFERRONI = Bonferroni()
_SHORTHANDS = {"split": Split, "bonferroni": Bonferroni}


def as_selection(value: object, name: str = "selection") -> Selection:
    """A :class:`Selection` from a strategy object or the shorthand ``"split"``/``"bonferroni"``.

    Raises:
        ValueError: an unknown string.
        TypeError: anything else that is not a strategy.

    Example:
        >>> as_selection("split")
        Split(fraction=0.5)
    """
    if isinstance(value, (Explicit, Split, Bonferroni)):
        return value
    if isinstance(value, str):
        if value not in _SHORTHANDS:
            raise ValueError(
                f"{name} must be Explicit(value), Split(fraction) or Bonferroni(candidates) "
                f"(or the shorthand 'split' / 'bonferroni'), got {value!r}"
            )
        return _SHORTHANDS[value]()
    raise TypeError(
        f"{name} must be Explicit(value), Split(fraction) or Bonferroni(candidates), "
        f"got {type(value).__name__}"
    )


def selection_generator(rng: RngLike) -> tuple[np.random.Generator, int | None]:
    """The generator of a random split and the seed to record (fresh entropy for ``None``)."""
    if rng is None:
        root = np.random.SeedSequence()
        return np.random.default_rng(root), int(root.entropy)
    return as_generator(rng), seed_entropy(rng)


def split_indices(
    n: int, fraction: float, gen: np.random.Generator, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Random ``(selection, held-out)`` index parts of ``range(n)``, ``round(fraction·n)`` first.

    Raises:
        ValueError: a part would be empty (``what`` names the samples in the message).
    """
    k = round(fraction * n)
    if k < 1 or k > n - 1:
        raise ValueError(
            f"Split(fraction={fraction}) leaves the selection or the held-out part empty for "
            f"{what} ({n} samples)"
        )
    perm = gen.permutation(n)
    return perm[:k], perm[k:]
