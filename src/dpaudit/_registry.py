"""Registries: plug-in points found by name (layer 1).

Systems, adversaries, executors and datasets are registered under a name, so a new one is a
module plus a registry entry and no pipeline branches on a name. A :class:`Registry` maps
lower-case names to objects (classes, factories or values) and refuses duplicates, so two
plug-ins cannot silently shadow each other.

Example:
    >>> reg = Registry("colour")
    >>> @reg.register("red")
    ... class Red:
    ...     pass
    >>> reg.get("RED") is Red
    True
    >>> reg.get("blue")
    Traceback (most recent call last):
    ...
    ValueError: unknown colour 'blue'; registered: ('red',)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")


def _key(kind: str, name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"{kind} name must be a non-empty string, got {name!r}")
    return name.strip().lower()


class Registry(Generic[T]):
    """A name → object table for one kind of plug-in.

    Args:
        kind: what is registered (``"system"``, ``"adversary"``, ``"executor"``, …); used in
            error messages.
    """

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._items: dict[str, T] = {}
        self._tags: dict[str, frozenset[str]] = {}

    @property
    def kind(self) -> str:
        """What this registry holds."""
        return self._kind

    def register(
        self, name: str, obj: T | None = None, *, replace: bool = False, tags: tuple[str, ...] = ()
    ):
        """Register ``obj`` under ``name``; without ``obj``, return a decorator.

        Args:
            name: the name users type (case-insensitive).
            obj: the object; omit to use ``@registry.register(name)`` as a decorator.
            replace: allow replacing an existing entry (tests, user overrides).
            tags: what the entry is for (e.g. the workflows that audit a system:
                ``("private-prediction",)``); see :meth:`tags` and :meth:`names`.

        Raises:
            ValueError: ``name`` is taken and ``replace`` is False.
        """
        key = _key(self._kind, name)

        def add(item: T) -> T:
            if key in self._items and not replace and self._items[key] is not item:
                raise ValueError(
                    f"{self._kind} {key!r} is already registered; pass replace=True to replace it"
                )
            self._items[key] = item
            self._tags[key] = frozenset(str(t) for t in tags)
            return item

        if obj is None:
            return add
        return add(obj)

    def unregister(self, name: str) -> T:
        """Remove and return the entry ``name`` (KeyError if absent)."""
        key = _key(self._kind, name)
        self._tags.pop(key, None)
        return self._items.pop(key)

    def get(self, name: str) -> T:
        """The entry registered as ``name``.

        Raises:
            TypeError: ``name`` is not a string.
            ValueError: nothing is registered under ``name`` (the message lists the names).
        """
        key = _key(self._kind, name)
        try:
            return self._items[key]
        except KeyError:
            raise ValueError(f"unknown {self._kind} {name!r}; registered: {self.names()}") from None

    def names(self, tag: str | None = None) -> tuple[str, ...]:
        """Registered names in registration order (with ``tag``: those tagged with it)."""
        if tag is None:
            return tuple(self._items)
        return tuple(k for k in self._items if tag in self._tags.get(k, ()))

    def tags(self, name: str) -> frozenset[str]:
        """The tags ``name`` was registered with (empty: untagged).

        Raises:
            ValueError: nothing is registered under ``name``.
        """
        self.get(name)
        return self._tags.get(_key(self._kind, name), frozenset())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self._kind!r}, {list(self._items)})"

    def items(self) -> tuple[tuple[str, T], ...]:
        """``(name, entry)`` pairs in registration order."""
        return tuple(self._items.items())

    def map(self, fn: Callable[[T], object]) -> dict[str, object]:
        """``{name: fn(entry)}`` (e.g. descriptions for ``--help``)."""
        return {k: fn(v) for k, v in self._items.items()}
