"""Fingerprints: a stable digest of a block function and its parameters (engine, layer 1)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import pickle
import types
from collections.abc import Sequence

import numpy as np

__all__ = ["fingerprint", "probabilities_key"]


class _Unkeyable(TypeError):
    pass


def fingerprint(obj: object) -> str:
    """A stable digest of a block function and its parameters (for checkpoint identity).

    Objects with a ``key()`` method are identified by its string. Otherwise the digest is
    structural: dataclass instances by their type and every field, numpy arrays by dtype,
    shape and bytes, functions by their code, defaults and closure, ``functools.partial``,
    bound methods, containers, scalars and strings by their content, any other object by its
    type and pickled state. Two block functions with equal digests produce the same counts
    from the same seed (unless they read global state).

    Args:
        obj: the block function (or any value).

    Returns:
        A 32-character hex digest.

    Raises:
        TypeError: ``obj`` holds something that cannot be identified by content (an object
            that cannot be pickled, a ``key()`` that returns no string); pass ``key=`` to
            :func:`run_blocks` instead.

    Example:
        >>> fingerprint((1, 2.5, "a")) == fingerprint((1, 2.5, "a"))
        True
        >>> fingerprint(np.array([1.0, 2.0])) == fingerprint(np.array([1.0, 2.5]))
        False
    """
    h = hashlib.sha256()
    _feed(h, obj, [])
    return h.hexdigest()[:32]


def _qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _feed(h, obj: object, stack: list[int]) -> None:
    def tag(label: str, text: str = "") -> None:
        h.update(f"<{label}:{len(text)}:{text}>".encode())

    if obj is None or isinstance(obj, (bool, int, float, complex, str)):
        tag(type(obj).__name__, repr(obj))
        return
    if isinstance(obj, (bytes, bytearray)):
        tag("bytes", str(len(obj)))
        h.update(bytes(obj))
        return
    if isinstance(obj, (np.ndarray, np.generic)):
        arr = np.asarray(obj)
        if arr.dtype.hasobject:
            tag("object-array", str(arr.shape))
            for item in arr.reshape(-1).tolist():
                _feed(h, item, stack)
            return
        tag("array", f"{arr.dtype.str}{arr.shape}")
        h.update(np.ascontiguousarray(arr).tobytes())
        return
    if id(obj) in stack:  # a cycle (e.g. a recursive closure): name its depth
        tag("cycle", str(stack.index(id(obj))))
        return
    if len(stack) > 64:
        raise _Unkeyable(f"{type(obj).__name__} nests too deeply to fingerprint")
    stack.append(id(obj))
    try:
        _feed_object(h, obj, stack, tag)
    finally:
        stack.pop()


def _feed_object(h, obj: object, stack: list[int], tag) -> None:
    key = getattr(obj, "key", None)
    if callable(key) and not isinstance(obj, type) and not isinstance(obj, dict):
        value = key()
        if not isinstance(value, str):
            raise _Unkeyable(f"{type(obj).__name__}.key() must return a string")
        tag("key", f"{_qualname(type(obj))}:{value}")
    elif isinstance(obj, (tuple, list, frozenset, set)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        tag(type(obj).__name__, str(len(items)))
        for item in items:
            _feed(h, item, stack)
    elif isinstance(obj, dict):
        tag("dict", str(len(obj)))
        for k in sorted(obj, key=repr):
            _feed(h, k, stack)
            _feed(h, obj[k], stack)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        tag("dataclass", _qualname(type(obj)))
        for f in dataclasses.fields(obj):
            tag("field", f.name)
            _feed(h, getattr(obj, f.name), stack)
    elif isinstance(obj, functools.partial):
        tag("partial")
        _feed(h, (obj.func, obj.args, obj.keywords), stack)
    elif isinstance(obj, types.MethodType):
        tag("method", obj.__func__.__name__)
        _feed(h, (obj.__func__, obj.__self__), stack)
    elif isinstance(obj, types.FunctionType):
        tag("function", _qualname(obj))
        _feed(h, obj.__code__, stack)
        cells = tuple(c.cell_contents for c in obj.__closure__ or ())
        _feed(h, (obj.__defaults__, obj.__kwdefaults__, cells), stack)
    elif isinstance(obj, types.CodeType):
        tag("code", obj.co_name)
        h.update(obj.co_code)
        _feed(h, (obj.co_consts, obj.co_names), stack)
    elif isinstance(obj, (type, types.BuiltinFunctionType, types.ModuleType)):
        tag(type(obj).__name__, getattr(obj, "__name__", "") + "@" + _qualname(obj))
    elif isinstance(obj, np.random.SeedSequence):
        tag("seed-sequence")
        _feed(h, (obj.entropy, obj.spawn_key, obj.pool_size, obj.n_children_spawned), stack)
    elif isinstance(obj, np.random.Generator):
        tag("generator")
        _feed(h, obj.bit_generator.state, stack)
    else:  # anything else by its pickled state (what the parallel executors ship)
        try:
            state = pickle.dumps(obj, protocol=4)
        except Exception as exc:
            raise _Unkeyable(f"cannot fingerprint a {type(obj).__name__} by content") from exc
        tag("pickle", _qualname(type(obj)))
        h.update(state)


def probabilities_key(probabilities: Sequence[float] | np.ndarray) -> str:
    """A short content hash of a probability array (a label for :func:`run_blocks`'s ``key``).

    Example:
        >>> probabilities_key([0.5, 0.5]) == probabilities_key(np.array([0.5, 0.5]))
        True
    """
    arr = np.ascontiguousarray(np.asarray(probabilities, dtype=np.float64))
    return hashlib.sha256(arr.tobytes() + str(arr.shape).encode()).hexdigest()[:16]
