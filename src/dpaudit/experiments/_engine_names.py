"""Where the sampling engine lives (it is moving to the base layer, :mod:`dpaudit.engine`)."""

from __future__ import annotations

import types

__all__ = ["engine_api", "executor_names"]


def engine_api() -> types.SimpleNamespace:
    """``run_blocks``, ``MultinomialBlock``, ``NoisyArgmaxBlock``, ``probabilities_key``."""
    try:
        from dpaudit import engine as eng
        from dpaudit import mechanisms as mech

        return types.SimpleNamespace(
            run_blocks=eng.run_blocks,
            MultinomialBlock=mech.MultinomialBlock,
            NoisyArgmaxBlock=mech.NoisyArgmaxBlock,
            probabilities_key=getattr(eng, "probabilities_key", None) or mech.probabilities_key,
        )
    except (ImportError, AttributeError):
        from dpaudit.experiments import engine as old

        return types.SimpleNamespace(
            run_blocks=old.run_blocks,
            MultinomialBlock=old.MultinomialBlock,
            NoisyArgmaxBlock=old.NoisyArgmaxBlock,
            probabilities_key=old.probabilities_key,
        )


def executor_names() -> tuple[str, ...]:
    """The registered executor names of the sampling engine."""
    try:
        from dpaudit.engine import EXECUTORS
    except ImportError:
        from dpaudit.experiments.engine import EXECUTORS
    names = EXECUTORS.names() if hasattr(EXECUTORS, "names") else tuple(EXECUTORS)
    return tuple(names)
