"""Seeds and generators (layer 1).

All randomness in dpaudit flows through :func:`as_generator` and :func:`spawn_seeds`:
functions that draw take a keyword-only ``rng`` (``Generator | int | SeedSequence | None``).
Block-parallel work derives one independent stream per block from
``SeedSequence(seed).spawn`` so results do not depend on chunking, backend or executor.
"""

from __future__ import annotations

import numpy as np

from dpaudit._typing import RngLike

__all__ = [
    "as_generator",
    "as_seed_sequence",
    "block_seeds",
    "child_seed",
    "int_seed",
    "seed_entropy",
]


def as_seed_sequence(rng: RngLike) -> np.random.SeedSequence:
    """Return a ``SeedSequence`` for ``rng``.

    An int or ``SeedSequence`` is used as is; ``None`` draws fresh OS entropy; a
    ``Generator`` contributes one 128-bit draw (so the caller's generator advances and
    repeated calls give different but reproducible sequences).

    Raises:
        TypeError: ``rng`` is of another type.
        ValueError: ``rng`` is a negative int.
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if rng is None:
        return np.random.SeedSequence()
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError(
            f"rng must be a numpy Generator, int seed, SeedSequence or None, got {rng!r}"
        )
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise ValueError(f"rng seed must be non-negative, got {rng}")
        return np.random.SeedSequence(int(rng))
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=2).tolist())
    raise TypeError(
        f"rng must be a numpy Generator, int seed, SeedSequence or None, got {type(rng).__name__}"
    )


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` for ``rng`` (a Generator is returned unchanged)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(as_seed_sequence(rng))


def block_seeds(rng: RngLike, num_blocks: int) -> list[np.random.SeedSequence]:
    """One independent ``SeedSequence`` per block: ``SeedSequence(seed).spawn(num_blocks)``.

    Block ``b`` always receives the same stream for the same ``rng`` whatever the number of
    blocks requested later, because ``spawn`` children are indexed deterministically.
    """
    root = as_seed_sequence(rng)
    # spawn() advances the parent's child counter; use a fresh copy so the result is a pure
    # function of the root's entropy and spawn key.
    fresh = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key)
    return fresh.spawn(num_blocks)


def seed_entropy(rng: RngLike) -> int | None:
    """The integer entropy behind ``rng`` for recording in results (None for a bare Generator)."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return int(rng)
    if isinstance(rng, np.random.SeedSequence):
        ent = rng.entropy
        return int(ent) if isinstance(ent, (int, np.integer)) else None
    return None


def child_seed(rng: RngLike, *key: int) -> np.random.SeedSequence:
    """The keyed stream ``key`` under ``rng``: ``SeedSequence(entropy, spawn_key=(…, *key))``.

    The key extends the root's own spawn key, exactly as nested ``SeedSequence.spawn`` calls
    would (child ``i`` of child ``j`` has key ``(j, i)``), but without touching the parent's
    spawn counter, so an experiment cell keyed by ``(part, histogram, σ, repetition)`` can be
    recomputed on its own. An int seed ``s`` gives ``SeedSequence(s, spawn_key=key)``; a
    ``Generator`` contributes two draws (:func:`as_seed_sequence`).

    Raises:
        TypeError, ValueError: ``rng`` as in :func:`as_seed_sequence`.

    Example:
        >>> child_seed(7, 1, 2).spawn_key
        (1, 2)
        >>> a, b = child_seed(child_seed(7, 1), 2), child_seed(7, 1, 2)
        >>> bool(a.generate_state(1)[0] == b.generate_state(1)[0])
        True
    """
    root = as_seed_sequence(rng)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *(int(k) for k in key)))


def int_seed(rng: RngLike) -> int:
    """An int seed to record and to key streams from: the entropy of an int or a
    ``SeedSequence`` built from one, else one draw of ``[0, 2**63)`` from the generator
    behind ``rng`` (a ``Generator`` advances; ``None`` draws fresh entropy).

    Example:
        >>> int_seed(5), int_seed(np.random.SeedSequence(5))
        (5, 5)
    """
    ent = seed_entropy(rng)
    if ent is not None:
        return ent
    return int(as_generator(rng).integers(0, 2**63))
