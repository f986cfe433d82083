"""Settings of the DP-SGD bug catalogue audit (``dpaudit audit dp-sgd-bugs``)."""

from __future__ import annotations

import dataclasses

from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)

__all__ = ["DPSGDBugsSettings"]


@dataclasses.dataclass(frozen=True)
class DPSGDBugsSettings:
    """Which bugs of the catalogue to audit, and how many runs.

    Each bug's audit (:data:`dpaudit.experiments.dpsgd_bugs.BUG_AUDITS`) fixes its setting,
    pair, statistic and run counts; ``runs_scale`` scales the run counts (a reduced audit for
    a quick check; the stated settings use 1).

    ``mode="sequential"`` streams the evaluation runs (chunks of ``SEQUENTIAL_CHUNK`` pairs,
    each chunk a seeded engine job of its own) through an anytime-valid test of the
    accountant's claim (:class:`dpaudit.bounds.DPClaimEProcess`) and stops at the first
    rejection, or after the audit's ``runs``; its bound is the ε confidence sequence, valid
    at that stopping time. ``"fixed"`` stays the default: with all the runs, the exact
    Clopper–Pearson bound is tighter than the confidence sequence.
    """

    name: str = option("dp-sgd-bugs", help="run name")
    bugs: tuple[str, ...] = option((), help="bugs to audit (empty: the whole catalogue)")
    control: bool = option(True, help="also audit the correct implementation in each setting")
    runs_scale: float = option(1.0, help="multiply every audit's run counts by this")
    block_size: int | None = option(None, help="runs per executor call (None: the engine sizes it)")
    executor: str = option("serial", help="engine executor (serial | processes | joblib | ray)")
    workers: int = option(1, help="workers of the executor")
    confidence_level: float = option(0.95, help="confidence 1 − β of each bound")
    mode: str = option(
        "fixed",
        help="fixed: every evaluation run, then Clopper-Pearson | sequential: stream the "
        "evaluation runs through an anytime-valid test, stop at the claim's rejection",
    )
    seed: int = option(0, help="root seed")

    def __post_init__(self) -> None:
        from dpaudit.experiments.dpsgd_bugs.audits import BUG_AUDITS

        for b in self.bugs:
            if b not in BUG_AUDITS:
                raise ValueError(f"unknown bug audit {b!r}; the catalogue has {BUG_AUDITS.names()}")
        check_positive("runs_scale", self.runs_scale)
        if self.block_size is not None:
            check_positive_int("block_size", self.block_size)
        check_positive_int("workers", self.workers)
        check_confidence_level(self.confidence_level)
        check_choice("mode", self.mode, ("fixed", "sequential"))
        check_nonneg_int("seed", self.seed)
