"""Seeds and generators (layer 1).

All randomness in dpaudit flows through :func:`as_generator` and :func:`spawn_seeds`:
functions that draw take a keyword-only ``rng`` (``Generator | int | SeedSequence | None``).
Block-parallel work derives one independent stream per block from
``SeedSequence(seed).spawn`` so results do not depend on chunking, backend or executor.
"""

from __future__ import annotations

import numpy as np

from dpaudit._typing import RngLike

__all__ = ["as_generator", "as_seed_sequence", "block_seeds", "seed_entropy"]


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
