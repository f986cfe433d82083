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
* :class:`MultiSplit` — ``B`` independent random splits, each a :class:`Split` at failure
  probability ``β/2``; the median of the ``B`` bounds is reported (Meinshausen, Meier &
  Bühlmann 2009, arXiv:0811.2177, Thm 3.1; the ``MultiSplit`` threshold strategy of
  JAX-Privacy's auditing library).

The strategies are plain values (frozen dataclasses, no randomness inside): the randomness
of a split comes from the bound's ``rng`` argument, and its seed is recorded in the result.
Each result carries a :class:`dpaudit._results.SelectionRecord` built by
:meth:`Selection.record`. One parser, :func:`selection_from_name`, maps the names in
:data:`SELECTION_NAMES` (``"split"``, ``"bonferroni"``, ``"multi-split"``) to strategies;
every bound also accepts those names as shorthands for the default strategies.
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
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_in_range,
    check_positive_int,
    check_real,
)

__all__ = [
    "DEFAULT_BONFERRONI",
    "DEFAULT_NUM_SPLITS",
    "DEFAULT_SPLIT",
    "MAX_NUM_SPLITS",
    "SELECTION_NAMES",
    "Bonferroni",
    "Explicit",
    "MultiSplit",
    "Selection",
    "Split",
    "as_selection",
    "median_of_splits",
    "multi_split_level",
    "multi_split_seeds",
    "selection_from_name",
    "selection_generator",
    "split_indices",
]

#: The names :func:`selection_from_name` understands (and every bound accepts as shorthand).
SELECTION_NAMES: tuple[str, ...] = ("split", "bonferroni", "multi-split")
#: Splits of a :class:`MultiSplit` unless given (JAX-Privacy's default ``num_samples``).
DEFAULT_NUM_SPLITS = 100
#: Most splits a :class:`MultiSplit` may ask for (each split re-runs the whole bound).
MAX_NUM_SPLITS = 100_000


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


@dataclasses.dataclass(frozen=True)
class MultiSplit(Selection):
    """Many independent random splits; the median of their bounds, each at failure ``β/2``.

    The ``MultiSplit`` threshold strategy of JAX-Privacy's auditing library (Google
    DeepMind, ``jax_privacy.auditing``, 2025), after Meinshausen, Meier & Bühlmann 2009
    (*P-values for high-dimensional regression*, JASA 104:1671–1681, arXiv:0811.2177,
    Thm 3.1 with γ = ½, where ``2·median(p_b)`` is a valid p-value): the samples are split
    ``num_splits`` times, independently and at random; each split is exactly a
    :class:`Split` ``(fraction)`` run at confidence ``1 − β/2`` (choose on the selection
    part, bound on the held-out part), and the reported bound is the median of the
    ``B = num_splits`` bounds (``numpy.median``: the mean of the two middle bounds for even
    B). The randomness of split ``b`` is the ``b``-th of ``B`` integer seeds drawn from the
    bound's ``rng`` (:func:`multi_split_seeds`).

    Valid at confidence 1 − β: each split's bound exceeds the truth with probability at most
    β/2, and the median exceeds it only if at least B/2 of the B splits do, so by Markov's
    inequality ``P(median > truth) ≤ E[N]/(B/2) ≤ (B·β/2)/(B/2) = β`` (N the number of
    splits whose bound exceeds the truth). The median is far less sensitive to the luck of
    one split than a single :class:`Split`; a bound's details (the chosen value, the counts)
    are those of the split at the lower middle of the B bounds.

    Attributes:
        num_splits: B, the number of independent splits, in ``[1, MAX_NUM_SPLITS]``.
        fraction: share of the samples used for selection in each split, in (0, 1).
    """

    num_splits: int = DEFAULT_NUM_SPLITS
    fraction: float = 0.5
    strategy: ClassVar[str] = "multi-split"

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "num_splits",
            check_positive_int("num_splits", self.num_splits, maximum=MAX_NUM_SPLITS),
        )
        object.__setattr__(self, "fraction", check_in_range("fraction", self.fraction, 0.0, 1.0))

    def describe(
        self, *, n_candidates: int | None = None, seed: int | None = None, chosen: Any = None
    ) -> str:
        """How many splits, which share chose, the level of each split and the seed."""
        among = "" if n_candidates is None else f" among {n_candidates} candidates"
        seed_text = "" if seed is None else f", seed {seed}"
        median = "" if chosen is None else f"; median split's choice{_chosen(chosen)}"
        return (
            f"median of {self.num_splits} random splits{seed_text}, each chosen{among} on a "
            f"random {self.fraction:.0%} of the samples and bounded on the held-out "
            f"{1.0 - self.fraction:.0%} at failure probability beta/2 (Meinshausen, Meier & "
            f"Buhlmann 2009){median}"
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
_STRATEGIES = (Explicit, Split, Bonferroni, MultiSplit)


def selection_from_name(
    selection: str,
    *,
    fraction: float = 0.5,
    num_splits: int = DEFAULT_NUM_SPLITS,
    candidates: Sequence[Any] | None = None,
    what: str = "selection",
) -> Selection:
    """The :class:`Selection` a name stands for: the one parser of strategy names.

    * ``"split"`` → ``Split(fraction)``;
    * ``"bonferroni"`` → ``Bonferroni(candidates)`` (None: the bound's own candidates);
    * ``"multi-split"`` → ``MultiSplit(num_splits, fraction)``.

    Args:
        selection: the name, one of :data:`SELECTION_NAMES`.
        fraction: share of the samples that chooses (``"split"``, ``"multi-split"``).
        num_splits: number of splits (``"multi-split"``).
        candidates: the candidates paid for (``"bonferroni"``).
        what: the name of the setting, for error messages.

    Raises:
        ValueError, TypeError: an unknown name, a bad fraction or number of splits — every
            argument is checked, whichever name uses it, so a bad value is never ignored.

    Example:
        >>> selection_from_name("multi-split", fraction=0.3, num_splits=20)
        MultiSplit(num_splits=20, fraction=0.3)
    """
    check_choice(what, selection, SELECTION_NAMES)
    MultiSplit(num_splits, fraction)  # checks both, whether or not this name uses them
    if candidates is not None:
        Bonferroni(candidates)
    if selection == "split":
        return Split(fraction)
    if selection == "multi-split":
        return MultiSplit(num_splits, fraction)
    return Bonferroni(candidates)


def as_selection(value: object, name: str = "selection") -> Selection:
    """A :class:`Selection` from a strategy object or a name (:func:`selection_from_name`).

    Raises:
        ValueError: an unknown string.
        TypeError: anything else that is not a strategy.

    Example:
        >>> as_selection("split")
        Split(fraction=0.5)
    """
    if isinstance(value, _STRATEGIES):
        return value
    if isinstance(value, str):
        if value not in SELECTION_NAMES:
            raise ValueError(
                f"{name} must be Explicit(value), Split(fraction), Bonferroni(candidates) or "
                f"MultiSplit(num_splits, fraction) (or one of the names {SELECTION_NAMES}), "
                f"got {value!r}"
            )
        return selection_from_name(value, what=name)
    raise TypeError(
        f"{name} must be Explicit(value), Split(fraction), Bonferroni(candidates) or "
        f"MultiSplit(num_splits, fraction), got {type(value).__name__}"
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


def multi_split_level(confidence_level: float) -> float:
    """The confidence of each split of a :class:`MultiSplit`: ``1 − β/2``."""
    return 1.0 - (1.0 - confidence_level) / 2.0


def multi_split_seeds(num_splits: int, rng: RngLike) -> tuple[list[int], int | None]:
    """One integer seed per split of a :class:`MultiSplit`, and the seed to record.

    The seeds are ``num_splits`` draws of ``[0, 2**63 − 1)`` from the generator of ``rng``
    (:func:`selection_generator`), as JAX-Privacy draws the seeds of its splits; split ``b``
    is then an ordinary :class:`Split` with ``rng=seeds[b]``.
    """
    gen, seed = selection_generator(rng)
    draws = gen.integers(np.iinfo(np.int64).max, size=num_splits)
    return [int(x) for x in draws], seed


def median_of_splits(bounds: ArrayLike) -> tuple[Any, Any]:
    """The median of the splits' bounds (axis 0) and the split at its lower middle.

    Returns ``(numpy.median(bounds, axis=0), index)``: for each element, ``index`` is the
    split whose bound is the ``⌈B/2⌉``-th smallest (ties by split order) — the median itself
    for odd B, the lower of the two middle bounds for even B. Scalars for 1-d ``bounds``.

    Example:
        >>> median_of_splits([0.5, 0.1, 0.9, 0.3])
        (0.4, 3)
    """
    arr = np.asarray(bounds, dtype=np.float64)
    med = np.median(arr, axis=0)
    idx = np.argsort(arr, axis=0, kind="stable")[(arr.shape[0] - 1) // 2]
    if arr.ndim == 1:
        return float(med), int(idx)
    return med, idx
