"""Argument checks used at every public boundary (layer 1).

Each helper raises ``TypeError`` or ``ValueError`` whose message names the argument and the
offending value, so that users see at once what to fix. :func:`check_progress` normalises a
``progress`` argument (:data:`dpaudit._typing.ProgressLike`) to one callback, and
:func:`track` reports a loop through it.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

import numpy as np

from dpaudit._typing import ArrayLike, FloatArray, Progress, ProgressLike

__all__ = [
    "DEFAULT_MEMORY_CAP",
    "MAX_COUNT",
    "MAX_INT",
    "SCALE_RANGE",
    "check_array",
    "check_at_most",
    "check_choice",
    "check_confidence_level",
    "check_count",
    "check_counts",
    "check_delta",
    "check_flag",
    "check_in_range",
    "check_mask",
    "check_memory",
    "check_nonneg_int",
    "check_orders",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "check_progress",
    "check_real",
    "check_rng",
    "check_scale",
    "check_votes",
    "check_work",
    "memory_cap",
    "no_progress",
    "track",
]

_T = TypeVar("_T")

#: The largest integer a numpy int64 holds: the default upper limit of integer arguments.
MAX_INT = 2**63 - 1
#: The largest count accepted (counts are int64; the statistics evaluate them as float64).
MAX_COUNT = MAX_INT
#: Noise scales (σ, a Laplace scale b, a noise multiplier) accepted by :func:`check_scale`: their
#: squares and inverse squares stay normal float64 numbers, so ``λ/σ²``, ``Δ/σ`` and the
#: data-dependent bounds built from them are finite (or the exact limit) for every order.
SCALE_RANGE = (1e-100, 1e100)
#: Default cap on the memory one request may allocate (see :func:`memory_cap`).
DEFAULT_MEMORY_CAP = 8 * 2**30


def _fmt(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _to_float(name: str, value: numbers.Real) -> float:
    try:
        return float(value)
    except OverflowError as exc:  # a Python int beyond the float64 range
        raise ValueError(f"{name} must fit a float64 (|x| < 1.8e308), got {_fmt(value)}") from exc


def check_real(name: str, value: object) -> float:
    """A finite real scalar (bools, strings, complex and None rejected with ``TypeError``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_fmt(value)}")
    out = _to_float(name, value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out}")
    return out


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """A real scalar > 0 (NaN rejected; +inf only when ``allow_inf``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {_fmt(value)}")
    out = _to_float(name, value)
    if math.isnan(out) or out <= 0 or (math.isinf(out) and not allow_inf):
        raise ValueError(f"{name} must be a positive finite number, got {out}")
    return out


def check_scale(name: str, value: object) -> float:
    """A noise scale in the supported range :data:`SCALE_RANGE` (``[1e-100, 1e100]``).

    Raises:
        TypeError: not a real number.
        ValueError: not positive and finite, or outside the supported range.

    Example:
        >>> check_scale("sigma", 40)
        40.0
    """
    out = check_positive(name, value)
    low, high = SCALE_RANGE
    if not low <= out <= high:
        raise ValueError(
            f"{name} must be in [{low:g}, {high:g}] (the supported range of noise scales), "
            f"got {out:g}"
        )
    return out


def check_in_range(
    name: str,
    value: object,
    low: float,
    high: float,
    *,
    low_inclusive: bool = False,
    high_inclusive: bool = False,
) -> float:
    """A real scalar in the interval given (inclusivity per bound)."""
    out = check_real(name, value)
    ok_low = out >= low if low_inclusive else out > low
    ok_high = out <= high if high_inclusive else out < high
    if not (ok_low and ok_high):
        lb = "[" if low_inclusive else "("
        rb = "]" if high_inclusive else ")"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}, got {out}")
    return out


def check_confidence_level(value: object, name: str = "confidence_level") -> float:
    """A confidence level in the open interval (0, 1)."""
    return check_in_range(name, value, 0.0, 1.0)


def check_probability(name: str, value: object) -> float:
    """A probability in [0, 1]."""
    return check_in_range(name, value, 0.0, 1.0, low_inclusive=True, high_inclusive=True)


def check_delta(value: object, name: str = "delta", *, allow_zero: bool = True) -> float:
    """δ in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    return check_in_range(name, value, 0.0, 1.0, low_inclusive=allow_zero)


def check_nonneg_int(name: str, value: object, *, maximum: int = MAX_INT) -> int:
    """An integer in ``[0, maximum]`` (integral floats such as ``1e8`` accepted, bools rejected).

    The default ``maximum`` is ``2**63 − 1`` (what a numpy int64 holds); counts that enter
    floating-point statistics use :data:`MAX_COUNT` (``2**53``, exact in a float64).
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {_fmt(value)}")
    if isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real)
        and math.isfinite(float(value))
        and float(value).is_integer()
    ):
        out = int(value)
    else:
        raise TypeError(f"{name} must be an integer, got {_fmt(value)}")
    if out < 0:
        raise ValueError(f"{name} must be non-negative, got {out}")
    if out > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {_fmt(out)}")
    return out


def check_positive_int(name: str, value: object, *, maximum: int = MAX_INT) -> int:
    """An integer in ``[1, maximum]``."""
    out = check_nonneg_int(name, value, maximum=maximum)
    if out < 1:
        raise ValueError(f"{name} must be a positive integer, got {out}")
    return out


def check_count(name: str, value: object) -> int:
    """A count: an integer in ``[0, 2**63 − 1]`` (:data:`MAX_COUNT`, what an int64 holds)."""
    return check_nonneg_int(name, value, maximum=MAX_COUNT)


def memory_cap() -> int:
    """The memory a single request may allocate, in bytes.

    :data:`DEFAULT_MEMORY_CAP` (8 GiB) unless the environment variable
    ``DPAUDIT_MAX_MEMORY_GB`` sets another number of GiB (read at each call).
    """
    raw = os.environ.get("DPAUDIT_MAX_MEMORY_GB")
    if raw is None:
        return DEFAULT_MEMORY_CAP
    try:
        gib = float(raw)
    except ValueError as exc:
        raise ValueError(f"DPAUDIT_MAX_MEMORY_GB must be a number, got {raw!r}") from exc
    if not (math.isfinite(gib) and gib > 0):
        raise ValueError(f"DPAUDIT_MAX_MEMORY_GB must be a positive number, got {raw!r}")
    return int(gib * 2**30)


def check_memory(nbytes: float, what: str) -> None:
    """Refuse, before allocating, a request estimated to need more than :func:`memory_cap`.

    Args:
        nbytes: the estimated peak allocation in bytes.
        what: what would be allocated, for the message (e.g. ``"argmax_probabilities on
            1000000 classes"``).

    Raises:
        ValueError: the estimate exceeds the cap; the message gives both.

    Example:
        >>> try:
        ...     check_memory(1e15, "a test")
        ... except ValueError as exc:
        ...     print(str(exc)[:43])
        a test would need about 909.5 TiB of memory
    """
    cap = memory_cap()
    if nbytes > cap:
        raise ValueError(
            f"{what} would need about {_fmt_bytes(nbytes)} of memory, more than the cap of "
            f"{_fmt_bytes(cap)} (set DPAUDIT_MAX_MEMORY_GB to change it)"
        )


def check_work(estimate: float, cap: float, what: str, unit: str, how_to_raise: str) -> None:
    """Refuse, before any work, a request estimated to cost more than ``cap`` units.

    Args:
        estimate: the estimated work (in ``unit``, e.g. series terms or quadrature nodes).
        cap: the largest work accepted (a module constant of the caller).
        what: the request, naming the argument(s) and value(s) that set the work.
        unit: the unit of ``estimate`` and ``cap``, for the message.
        how_to_raise: how a user allows more (e.g. ``"raise dpaudit.x.MAX_Y"``).

    Raises:
        ValueError: ``estimate > cap``; the message gives the estimate, the cap and
            ``how_to_raise``.

    Example:
        >>> try:
        ...     check_work(1e12, 1e9, "f with n=10**12", "draws", "raise m.MAX_N")
        ... except ValueError as exc:
        ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
        f with n=10**12 would take about 1e+12 draws, more than the cap of 1e+09 draws
        (raise m.MAX_N to allow it)
    """
    if estimate > cap:
        raise ValueError(
            f"{what} would take about {float(estimate):.3g} {unit}, more than the cap of "
            f"{float(cap):.3g} {unit} ({how_to_raise} to allow it)"
        )


def _fmt_bytes(nbytes: float) -> str:
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    if value >= 1e6:
        return f"{value:.3g} {unit}"
    return f"{value:.1f} {unit}"


def check_at_most(name: str, value: int, bound: int, bound_name: str) -> int:
    """``value ≤ bound`` for two already-checked integers (a count within its total).

    Raises:
        ValueError: ``value > bound``, naming both arguments.
    """
    if value > bound:
        raise ValueError(f"{name} must be <= {bound_name}={bound}, got {value}")
    return value


def check_flag(name: str, value: object) -> bool:
    """A ``bool`` (or ``numpy.bool_``); anything else (``"yes"``, 1, None) is a ``TypeError``.

    Example:
        >>> check_flag("cache", True)
        True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_fmt(value)}")
    return bool(value)


def check_rng(value: object, name: str = "rng") -> object:
    """Check an ``rng`` argument without drawing from it (validated even where unused).

    Accepts ``None``, a non-negative int seed, a ``SeedSequence`` or a ``Generator``, as
    :func:`dpaudit._rng.as_generator` does, and returns it unchanged.

    Raises:
        TypeError: another type (a float, a string, a bool, a legacy ``RandomState``).
        ValueError: a negative seed.

    Example:
        >>> check_rng(7)
        7
    """
    if value is None or isinstance(value, (np.random.SeedSequence, np.random.Generator)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value < 0:
            raise ValueError(f"{name} seed must be non-negative, got {value}")
        return value
    raise TypeError(
        f"{name} must be a numpy Generator, int seed, SeedSequence or None, got {_fmt(value)}"
    )


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """One of a fixed set of strings."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {_fmt(value)}")
    return value


def _real_array(name: str, value: object) -> np.ndarray:
    """``value`` as a float64 array of real numbers, never casting strings, bools or complex.

    numpy would turn ``["1", "2"]``, ``[True, False]`` or ``[1 + 0j]`` into numbers; here they
    are a ``TypeError``, as are ``None`` and other objects. Python integers too large for int64
    (an object array) are accepted as long as they fit a float64.
    """
    if value is None or isinstance(value, (str, bytes, bool, np.bool_, complex, dict, set)):
        raise TypeError(f"{name} must be array-like of real numbers, got {_fmt(value)}")
    try:
        raw = np.asarray(value)
    except ValueError as exc:
        raise ValueError(
            f"{name} must be a rectangular array of numbers (ragged or non-numeric input): {exc}"
        ) from exc
    except TypeError as exc:
        raise TypeError(f"{name} must be array-like of real numbers, got {_fmt(value)}") from exc
    kind = raw.dtype.kind
    if kind == "O":
        for item in raw.flat:
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
                raise TypeError(
                    f"{name} must contain only real numbers, got {_fmt(item)} in {_fmt(value)}"
                )
        try:
            return raw.astype(np.float64)
        except OverflowError as exc:
            raise ValueError(
                f"{name} must contain numbers that fit a float64 (|x| < 1.8e308), got {_fmt(value)}"
            ) from exc
    if kind not in "iuf":
        what = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(
            kind, f"dtype {raw.dtype}"
        )
        raise TypeError(f"{name} must contain real numbers, not {what}: got {_fmt(value)}")
    return raw.astype(np.float64, copy=False)


def check_array(
    name: str,
    value: ArrayLike,
    *,
    ndim_min: int = 0,
    ndim: int | None = None,
    allow_empty: bool = False,
    finite: bool = True,
    nonneg: bool = False,
) -> FloatArray:
    """Convert to a float64 array and check type, shape, emptiness, finiteness and sign.

    Only real numbers are accepted: strings (even numeric ones), bools, complex numbers and
    ``None`` raise ``TypeError`` instead of being cast. Ragged input (lists of unequal length)
    raises ``ValueError``.

    Example:
        >>> check_array("votes", [1, 2])
        array([1., 2.])
        >>> check_array("votes", ["1", "2"])
        Traceback (most recent call last):
        ...
        TypeError: votes must contain real numbers, not strings: got ['1', '2']
    """
    arr = _real_array(name, value)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.ndim < ndim_min:
        raise ValueError(
            f"{name} must have at least {ndim_min} dimension(s), got shape {arr.shape}"
        )
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN/inf), got {_fmt(value)}")
    if nonneg and np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {_fmt(value)}")
    return arr


def check_mask(name: str, value: ArrayLike) -> np.ndarray:
    """A boolean mask: booleans, or numbers that are all 0 or 1; returned as a bool array.

    Strings, complex numbers and ``None`` raise ``TypeError``; other numbers ``ValueError``.

    Example:
        >>> check_mask("included", [1, 0, 1]).tolist()
        [True, False, True]
    """
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return value
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an array of booleans or 0/1, got {_fmt(value)}")
    try:
        raw = np.asarray(value)
    except ValueError as exc:
        raise ValueError(f"{name} must be a rectangular array of booleans or 0/1: {exc}") from exc
    if raw.dtype == bool:
        return raw
    arr = check_array(name, raw, allow_empty=True)
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must be boolean or 0/1, got values {np.unique(arr)[:5]}")
    return arr.astype(bool)


def check_votes(
    name: str, value: ArrayLike, *, min_classes: int = 2, nonneg: bool = False
) -> FloatArray:
    """A vote histogram or a batch of them: shape (..., C) with C ≥ ``min_classes``, finite."""
    arr = check_array(name, value, ndim_min=1, nonneg=nonneg)
    if arr.shape[-1] < min_classes:
        raise ValueError(
            f"{name} must have at least {min_classes} classes in its last axis, "
            f"got shape {arr.shape}"
        )
    return arr


def check_counts(name: str, value: ArrayLike, *, ndim_min: int = 1) -> np.ndarray:
    """Non-negative integer counts below 2**63 (integral floats accepted), as int64."""
    arr = check_array(name, value, ndim_min=ndim_min, nonneg=True)
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must contain integer counts, got {_fmt(value)}")
    if arr.size and float(arr.max()) >= 2.0**63:
        raise ValueError(f"{name} must contain counts below 2**63 (int64), got {_fmt(value)}")
    return arr.astype(np.int64)


def check_orders(
    value: ArrayLike,
    name: str = "orders",
    *,
    allow_one: bool = False,
    allow_inf: bool = False,
    maximum: float | None = None,
) -> FloatArray:
    """Rényi orders: a non-empty 1-d array of α > 1 (α = 1 and α = ∞ only where allowed).

    ``maximum``, where given, is the largest finite order the computation supports.
    """
    arr = np.atleast_1d(check_array(name, value, finite=False, allow_empty=False))
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or 1-d array, got shape {arr.shape}")
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} must not contain NaN, got {_fmt(value)}")
    if not allow_inf and np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite, got {_fmt(value)}")
    bad = arr < 1 if allow_one else arr <= 1
    if np.any(bad):
        rule = ">= 1" if allow_one else "> 1"
        raise ValueError(f"{name} must all be {rule}, got {_fmt(value)}")
    if maximum is not None and np.any(np.isfinite(arr) & (arr > maximum)):
        raise ValueError(
            f"{name} must be <= {maximum:g} (the largest order supported here), got {_fmt(value)}"
        )
    return arr


# ---------------------------------------------------------------------------------------------
# progress: one protocol (dpaudit._typing.Progress), normalised here
# ---------------------------------------------------------------------------------------------


def no_progress(done: int, total: int, description: str) -> None:
    """The :class:`~dpaudit._typing.Progress` that reports nothing."""


class _RichBar:
    """The default progress bar (rich, extra ``cli``): one task per description.

    Created lazily on the first call; the bar stops when a stage reports ``done == total``.
    """

    def __init__(self) -> None:
        self._bar = None
        self._task = None
        self._description: str | None = None

    def __call__(self, done: int, total: int, description: str) -> None:
        if self._bar is None or description != self._description:
            self._start(total, description)
        self._bar.update(self._task, completed=done, total=total)
        if done >= total:
            self._bar.stop()
            self._bar = None

    def _start(self, total: int, description: str) -> None:
        from dpaudit.errors import require

        if self._bar is not None:
            self._bar.stop()
        rp = require("rich.progress", "cli")
        self._bar = rp.Progress(
            rp.TextColumn("[progress.description]{task.description}"),
            rp.BarColumn(),
            rp.MofNCompleteColumn(),
            rp.TimeElapsedColumn(),
            rp.TimeRemainingColumn(),
        )
        self._bar.start()
        self._task = self._bar.add_task(description, total=total)
        self._description = description


def check_progress(value: ProgressLike, name: str = "progress") -> Progress:
    """Normalise a ``progress`` argument to a :class:`~dpaudit._typing.Progress` callback.

    ``None`` or ``False``: :func:`no_progress`; ``True``: a rich progress bar (extra ``cli``,
    imported on first use); a callable ``progress(done, total, description)``: itself.

    Raises:
        TypeError: anything else.

    Example:
        >>> seen = []
        >>> report = check_progress(lambda done, total, what: seen.append((done, total, what)))
        >>> report(1, 2, "queries"); seen
        [(1, 2, 'queries')]
        >>> check_progress(None) is no_progress
        True
    """
    if value is None or value is False:
        return no_progress
    if value is True:
        return _RichBar()
    if isinstance(value, (bool, np.bool_)) or not callable(value):
        raise TypeError(
            f"{name} must be a callable progress(done, total, description), True (rich bar), "
            f"False or None, got {_fmt(value)}"
        )
    return value


def track(items: Iterable[_T], total: int, description: str, progress: Progress) -> Iterator[_T]:
    """Yield ``items``, reporting ``0`` before the first and ``i`` after the i-th to ``progress``.

    Example:
        >>> seen = []
        >>> list(track("ab", 2, "letters", lambda d, t, s: seen.append(d))), seen
        (['a', 'b'], [0, 1, 2])
    """
    progress(0, total, description)
    for done, item in enumerate(items, start=1):
        yield item
        progress(done, total, description)
