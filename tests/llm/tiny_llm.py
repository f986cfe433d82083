"""The tiny GPT the LLM tests fine-tune (trained here from a few sentences; seconds), shared
by the test modules of this directory so that each worker pre-trains it once."""

from __future__ import annotations

import functools

from dpaudit.systems.llm import CausalLM, tiny_gpt

TEXTS = [
    "a quiet film about a loud family",
    "the plot wanders but the actors hold it together",
    "funny, sharp and far too short",
    "a dull remake of a dull original",
    "the music is the best thing in it",
    "every scene feels like a rehearsal",
] * 10


@functools.lru_cache(maxsize=1)
def tiny_lm() -> CausalLM:
    """A one-layer GPT of 300 tokens pre-trained for 5 steps on :data:`TEXTS` (seed 0)."""
    return tiny_gpt(TEXTS, vocab_size=300, layers=1, hidden=16, heads=2, context=16,
                    pretrain_steps=5, batch_size=8, rng=0)  # fmt: skip
