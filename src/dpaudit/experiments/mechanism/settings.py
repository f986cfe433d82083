"""Settings of the black-box mechanism audit (``dpaudit audit mechanism``)."""

from __future__ import annotations

import dataclasses

from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.attacks import ATTACK_KINDS

__all__ = ["MechanismAuditSettings"]


@dataclasses.dataclass(frozen=True)
class MechanismAuditSettings:
    """One mechanism, audited DP-Sniper style (Bichsel et al. 2021, IEEE S&P).

    The samples come in three independent parts, each per input of a pair: ``train_samples``
    fit the attack's score, ``select_samples`` choose the input pair and the event's
    threshold, and ``samples`` fresh ones (drawn in the engine, resumable) give the bound.
    When ``select_samples`` exceeds ``screen_samples`` and there are more than
    ``screen_pairs`` candidate pairs, every pair is first screened (fitted on at most
    ``screen_samples`` training outputs and scored on ``screen_samples`` selection outputs
    per input, of its own) and only the ``screen_pairs`` best are fitted and scored on the
    full training and selection sets.
    """

    name: str = option("mechanism", help="run name")
    mechanism: str = option("laplace", help="a registered mechanism (dpaudit.systems.MECHANISMS)")
    claimed_epsilon: float | None = option(None, help="override the mechanism's claimed ε")
    delta: float = option(0.0, help="δ of the claim and of the bound")
    pair_a: tuple[float, ...] = option((), help="first database of a given pair (empty: search)")
    pair_b: tuple[float, ...] = option((), help="its neighbour (with --pair-a)")
    attack: str = option("auto", help="auto | logistic | counts (exact counts, discrete outputs)")
    max_outputs: int = option(1000, help="most distinct outputs for the exact-count attack")
    train_samples: int = option(20_000, help="samples per input to fit the attack")
    select_samples: int = option(20_000, help="samples per input to choose pair and threshold")
    samples: int = option(200_000, help="fresh samples per input for the bound")
    screen_pairs: int = option(4, help="pairs kept after screening (0: no screening)")
    screen_samples: int = option(
        100_000, help="samples per input to screen the pairs (when select_samples is larger)"
    )
    block_size: int = option(2**16, help="samples per engine block (checkpoint granularity)")
    confidence_level: float = option(0.95, help="confidence 1 − β of the bound")
    seed: int = option(0, help="root seed")

    def __post_init__(self) -> None:
        check_positive_int("train_samples", self.train_samples)
        check_positive_int("select_samples", self.select_samples)
        check_positive_int("samples", self.samples)
        check_positive_int("block_size", self.block_size)
        check_nonneg_int("screen_pairs", self.screen_pairs)
        check_positive_int("screen_samples", self.screen_samples)
        check_positive_int("max_outputs", self.max_outputs)
        check_choice("attack", self.attack, ATTACK_KINDS)
        check_confidence_level(self.confidence_level)
        check_delta(self.delta)
        check_nonneg_int("seed", self.seed)
        if self.claimed_epsilon is not None:
            check_positive("claimed_epsilon", self.claimed_epsilon)
        if bool(self.pair_a) != bool(self.pair_b) or len(self.pair_a) != len(self.pair_b):
            raise ValueError(
                f"pair_a and pair_b go together and have the same length, got "
                f"pair_a={self.pair_a!r}, pair_b={self.pair_b!r}"
            )
