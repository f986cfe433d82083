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

__all__ = [
    "AUTO_FIRST_SCALE",
    "BASE_SIZES",
    "FIT_BUDGET",
    "MODES",
    "SAMPLE_BUDGET",
    "SEQUENTIAL_BUDGET",
    "STAGE_GROWTH",
    "MechanismAuditSettings",
]

#: (training, selection, fresh) samples per input of a fixed run and of the first stage of
#: the automatic sizing; each later stage multiplies all three by :data:`STAGE_GROWTH`.
BASE_SIZES = (20_000, 20_000, 200_000)
STAGE_GROWTH = 4
#: The automatic sizing's first stage, as a fraction of :data:`BASE_SIZES`.
AUTO_FIRST_SCALE = 0.25
#: The automatic sizing's budgets, counted in samples so that a seed gives the same stages and
#: the same bound on any machine: output values drawn per input (samples × output width, all
#: stages) and training entries (rows × features) fitted by logistic regression. Calibrated
#: on one core so that DP-Sniper's costliest mechanisms per sample stay under 3 minutes:
#: SVT3 and SVT34-parallel (logistic scores on 10 and 20 outputs, ~11 and ~30 µs per
#: training sample) stop at ~160 CPU-s, the fit budget ending them after their fifth and
#: fourth stage; the cheap ones (exact counts, closed-form ratios) run all six stages.
SAMPLE_BUDGET = 2_000_000_000
FIT_BUDGET = 850_000_000
#: Samples per input a sequential audit may draw (pilot, exploration and stream: all output
#: draws / 2) before it stops without a rejection.
SEQUENTIAL_BUDGET = 1_000_000
MODES = ("auto", "fixed", "sequential")


@dataclasses.dataclass(frozen=True)
class MechanismAuditSettings:
    """One mechanism, audited DP-Sniper style (Bichsel et al. 2021, IEEE S&P).

    ``mode="auto"`` (the default) with no size given chooses the sizes itself: stages of
    growing size (:data:`AUTO_FIRST_SCALE` × :data:`BASE_SIZES`, then ×:data:`STAGE_GROWTH`
    each; once a stage shows a bound, the next ones audit the pair of the best look so far,
    and the first stage with ``screen_samples / 2`` training samples also searches every pair
    again as a second look), every look a fresh, independent audit at confidence
    ``1 − β/(max_stages + 1)`` (Bonferroni over the looks fixed in advance), until two stages
    in a row fail to improve the bound by 2 %, ``max_stages`` are
    done or the next look would overrun ``sample_budget`` (output values drawn) or
    ``fit_budget`` (entries fitted), both counted in samples, so a seed gives the same bound
    on any machine; the best stage's bound is reported. With
    any size given, ``"auto"`` runs one audit at those sizes (the others at their base), as
    ``"fixed"`` does. ``"sequential"`` streams pairs through an anytime-valid test of the
    claim (:class:`dpaudit.bounds.DPClaimEProcess`) and stops at the first rejection
    (:mod:`dpaudit.experiments.mechanism.sequential`: ``train_samples + select_samples``,
    if given, is its pilot per input, 200 otherwise; ``samples`` its budget).

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
    mode: str = option(
        "auto",
        help="auto: sizes not given are chosen by the tool (stages of growing size, looks "
        "paid) | fixed: one run at the given or base sizes | sequential: stream pairs until "
        "the claim is rejected (anytime-valid)",
    )
    train_samples: int | None = option(
        None, help=f"samples per input to fit the attack (base {BASE_SIZES[0]:,})"
    )
    select_samples: int | None = option(
        None, help=f"samples per input to choose pair and threshold (base {BASE_SIZES[1]:,})"
    )
    samples: int | None = option(
        None,
        help=f"fresh samples per input for the bound (base {BASE_SIZES[2]:,}; sequential: the "
        f"samples per input it may draw in all, default {SEQUENTIAL_BUDGET:,})",
    )
    sample_budget: int = option(
        SAMPLE_BUDGET,
        help="output values per input (samples × output width) the automatic sizing may draw "
        "over all its stages",
    )
    fit_budget: int = option(
        FIT_BUDGET,
        help="training entries (rows × features) the automatic sizing's logistic fits may "
        "take over all its stages",
    )
    max_stages: int = option(
        6, help="most stages of the automatic sizing (each look at 1 − β/(stages + 1))"
    )
    screen_pairs: int = option(4, help="pairs kept after screening (0: no screening)")
    screen_samples: int = option(
        100_000, help="samples per input to screen the pairs (when select_samples is larger)"
    )
    block_size: int = option(2**16, help="samples per engine block (checkpoint granularity)")
    confidence_level: float = option(0.95, help="confidence 1 − β of the bound")
    seed: int = option(0, help="root seed")

    @property
    def sized_by_user(self) -> bool:
        """Whether any of the three sample sizes was given."""
        return any(x is not None for x in (self.train_samples, self.select_samples, self.samples))

    def sizes(self, scale: int = 1) -> tuple[int, int, int]:
        """(training, selection, fresh) samples per input: the given ones, the base otherwise,
        times ``scale``."""
        given = (self.train_samples, self.select_samples, self.samples)
        pairs = zip(given, BASE_SIZES, strict=True)
        return tuple(scale * (b if g is None else g) for g, b in pairs)

    def __post_init__(self) -> None:
        for name in ("train_samples", "select_samples", "samples"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        check_choice("mode", self.mode, MODES)
        check_positive_int("sample_budget", self.sample_budget)
        check_positive_int("fit_budget", self.fit_budget)
        check_positive_int("max_stages", self.max_stages, maximum=20)
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
