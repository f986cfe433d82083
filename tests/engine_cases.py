"""Seeded sampling calls whose counts must never change (see tests/test_engine.py).

``reference_cases(api)`` names one call per case; ``api`` provides ``run_blocks``,
``MultinomialBlock``, ``NoisyArgmaxBlock``, ``sample_argmax_counts``,
``sample_argmax_counts_from`` and ``sample_argmax_counts_exact``. The counts in
``tests/data/engine_reference.json`` were recorded with the two sampling loops that existed
before the engine moved to ``dpaudit.engine`` (``dpaudit.experiments.engine.run_blocks`` and
the block loop of ``dpaudit.mechanisms.noisy_argmax``), by calling ``reference_cases`` with
that API; the tests call it with today's. The histogram samplers live here (module level) so
that worker processes can unpickle them.

One deliberate change since: the nine fixed-histogram cases where the Monte-Carlo kernel now
draws from the joint law of (max, argmax) instead of thinning (``LOW`` and the batch's
second row at blocks of 50,000 and more, and ``sample/default``; see
``dpaudit.mechanisms._joint``) were re-recorded once, with the kernel of that change. Their
law is unchanged (χ² tests against Q(H) in tests/mechanisms/); every other case still holds
the counts of the loops the engine replaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

P = ((0.5, 0.3, 0.2), (0.1, 0.1, 0.8))
HIGH = (4, 7, 6, 8, 4, 2, 0, 214, 4, 1)
LOW = (19, 7, 31, 7, 78, 4, 90, 10, 3, 1)


@dataclasses.dataclass(frozen=True)
class MultinomialVotes:
    """``size`` histograms ``Mult(k, p)`` (a PATE-like vote model)."""

    probabilities: tuple[float, ...]
    k: int

    def __call__(self, gen: np.random.Generator, size: int) -> np.ndarray:
        return gen.multinomial(self.k, self.probabilities, size=size).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class FlipVotes:
    """A fixed histogram where one voter moves from class 0 to class 1 with probability 1/2."""

    votes: tuple[float, ...]

    def __call__(self, gen: np.random.Generator, size: int) -> np.ndarray:
        h = np.tile(np.asarray(self.votes, dtype=np.float64), (size, 1))
        flip = gen.random(size) < 0.5
        h[flip, 0] -= 1
        h[flip, 1] += 1
        return h


def rngs() -> dict[str, object]:
    """Fresh seeds of each kind: int, SeedSequence with a spawn key, Generator."""
    return {
        "int": 7,
        "ss": np.random.SeedSequence(123, spawn_key=(4, 2)),
        "gen": np.random.default_rng(99),
    }


def reference_cases(api) -> dict[str, Callable[[], np.ndarray]]:
    """Name → zero-argument call returning counts."""
    cases: dict[str, Callable[[], np.ndarray]] = {}
    pate = MultinomialVotes((0.6, 0.3, 0.1), 12)
    flips = FlipVotes((30.0, 25.0, 10.0))

    def add(name, fn):
        cases[name] = fn

    for bs in (1, 7, 1000, 4096, 2**20):
        n = 10_001 if bs > 1 else 300
        for rn in ("int", "ss", "gen"):
            add(
                f"run_multinomial/{bs}/{rn}",
                lambda bs=bs, n=n, rn=rn: (
                    api.run_blocks(api.MultinomialBlock(P), n, rng=rngs()[rn], block_size=bs).counts
                ),
            )
    for bs, chunk in ((1000, 2**16), (4096, 1000), (30_000, 2**16), (2**18, 5000)):
        for name, sampler in (("pate", pate), ("flips", flips)):
            add(
                f"run_noisy/{name}/{bs}/{chunk}",
                lambda bs=bs, chunk=chunk, s=sampler: (
                    api.run_blocks(
                        api.NoisyArgmaxBlock(s, 3.0, chunk=chunk), 50_000, rng=3, block_size=bs
                    ).counts
                ),
            )
        add(
            f"run_noisy_torch/{bs}/{chunk}",
            lambda bs=bs, chunk=chunk: (
                api.run_blocks(
                    api.NoisyArgmaxBlock(pate, 3.0, chunk=chunk, backend="torch"),
                    50_000,
                    rng=5,
                    block_size=bs,
                ).counts
            ),
        )
    for bs in (1, 999, 4096, 50_000, 2**20):
        n = 200_001 if bs > 1 else 500
        for rn in ("int", "ss", "gen"):
            for label, votes in (("high", HIGH), ("low", LOW)):
                add(
                    f"sample/{label}/{bs}/{rn}",
                    lambda bs=bs, n=n, rn=rn, v=votes: api.sample_argmax_counts(
                        v, 40.0, n, rng=rngs()[rn], block_size=bs
                    ),
                )
        add(
            f"sample/batch/{bs}",
            lambda bs=bs, n=n: api.sample_argmax_counts(
                [[4, 7, 214], [19, 31, 90]], 40.0, n, rng=3, block_size=bs
            ),
        )
        add(
            f"sample/torch/{bs}",
            lambda bs=bs, n=n: api.sample_argmax_counts(
                [[4, 7, 214], [19, 31, 90]],
                20.0,
                min(n, 100_001),
                rng=3,
                block_size=bs,
                backend="torch",
            ),
        )
    add("sample/default", lambda: api.sample_argmax_counts(LOW, 40.0, 3 * 2**20 + 5, rng=11))
    add("sample/n0", lambda: api.sample_argmax_counts(LOW, 40.0, 0, rng=11))
    for bs in (1, 999, 30_000, 2**18):
        n = 100_001 if bs > 1 else 400
        for name, sampler in (("pate", pate), ("flips", flips)):
            add(
                f"from/{name}/{bs}",
                lambda bs=bs, n=n, s=sampler: api.sample_argmax_counts_from(
                    s, 3.0, n, rng=1, block_size=bs
                ),
            )
    add("from/default", lambda: api.sample_argmax_counts_from(pate, 3.0, 2**19 + 3, rng=2))
    add("from/n0", lambda: api.sample_argmax_counts_from(pate, 3.0, 0, rng=2))
    for rn in ("int", "ss", "gen"):
        add(
            f"exact/{rn}",
            lambda rn=rn: api.sample_argmax_counts_exact(
                [[200, 30, 20], [1, 2, 3]], 40.0, 10**8, rng=rngs()[rn]
            ),
        )

    def after(fn, n):  # a Generator rng advances by the same draw as before, even for n = 0
        gen = np.random.default_rng(5)
        fn(n, gen)
        return gen.integers(0, 2**62, 3)

    for n in (0, 1000):
        add(
            f"generator_after/sample/{n}",
            lambda n=n: after(lambda m, g: api.sample_argmax_counts(LOW, 40.0, m, rng=g), n),
        )
        add(
            f"generator_after/from/{n}",
            lambda n=n: after(lambda m, g: api.sample_argmax_counts_from(flips, 3.0, m, rng=g), n),
        )
    return cases


@dataclasses.dataclass(frozen=True)
class SlowBlock:
    """A kernel that sleeps ``delay`` seconds before each block (to interrupt a run mid-way)."""

    inner: Callable[[int, np.random.SeedSequence], np.ndarray]
    delay: float

    def __call__(self, size: int, seed: np.random.SeedSequence) -> np.ndarray:
        import time

        time.sleep(self.delay)
        return self.inner(size, seed)
