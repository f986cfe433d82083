"""The catalogue's audits: per bug, the setting, the adversary and the run counts.

Each :class:`BugAudit` names a registered variant (:data:`dpaudit.systems.DPSGD_VARIANTS`),
a crafted pair and a white-box statistic (:mod:`dpaudit.attacks` ``BUG_PAIRS`` /
``BUG_STATISTICS``) and the Opacus setting in which the audit refutes the variant's claim.
The same pair, statistic and setting are run against the correct implementation
(``poisson``) as the control. Settings are chosen for a refutation within minutes on two
cores; the δ of each claim is stated with it (δ ≤ 1/(10 n) for the n records of the pair).
"""

from __future__ import annotations

import dataclasses

from dpaudit._registry import Registry
from dpaudit.systems.dpsgd_variants import ProbeSetting

__all__ = ["BUG_AUDITS", "BugAudit"]


@dataclasses.dataclass(frozen=True)
class BugAudit:
    """How one bug of the catalogue is caught.

    Attributes:
        name: the audit's registry name (the bug's name, or the issue a reproduction follows).
        bug: the variant's registry name.
        pair: the crafted pair (``BUG_PAIRS``).
        fillers: n, the records of D (D′ adds the canary).
        statistic: the white-box statistic (``BUG_STATISTICS``).
        setting: the Opacus hyperparameters (identical for D, D′ and the control).
        delta: δ of the claim and of the bound.
        runs: evaluation runs per dataset.
        pilot_runs: held-out runs per dataset that choose the threshold.
        published: the published figure beside which the result is shown ("" if none).
    """

    name: str
    bug: str
    pair: str
    fillers: int
    statistic: str
    setting: ProbeSetting
    delta: float
    runs: int
    pilot_runs: int
    published: str = ""


BUG_AUDITS: Registry[BugAudit] = Registry("DP-SGD bug audit")

BUG_AUDITS.register("shuffle", BugAudit(
    "shuffle", "shuffle", "opposed", 100, "shuffle-llr",
    ProbeSetting(dimension=1, batch_size=25, epochs=8, noise_multiplier=2.0),
    delta=1e-3, runs=4000, pilot_runs=1000,
    published="Chua et al. 2024 (arXiv:2403.17673): ε of shuffled batches well above the "
    "Poisson accountant's at σ ≤ 2; Annamalai et al. 2024 (arXiv:2411.10614): guarantees "
    "overstated by up to 4×",
))  # fmt: skip
BUG_AUDITS.register("shuffle-last-batch", BugAudit(
    "shuffle-last-batch", "shuffle-last-batch", "dirac", 100, "step-count",
    ProbeSetting(dimension=1, batch_size=25, epochs=1, noise_multiplier=2.0),
    delta=1e-5, runs=300, pilot_runs=50,
))  # fmt: skip
BUG_AUDITS.register("floored-batch-size", BugAudit(
    "floored-batch-size", "floored-batch-size", "identical", 11, "noise-scale",
    ProbeSetting(dimension=1000, batch_size=4, epochs=2, noise_multiplier=2.0),
    delta=1e-5, runs=300, pilot_runs=50,
    published="Opacus #819: neighbouring datasets 'almost fully distinguishable' in "
    "small-data, high-dimensional settings",
))  # fmt: skip
BUG_AUDITS.register("weighted-sampler", BugAudit(
    "weighted-sampler", "weighted-sampler", "dirac", 100, "canary-sum",
    ProbeSetting(dimension=1, batch_size=25, epochs=1, noise_multiplier=2.0),
    delta=1e-5, runs=300, pilot_runs=50,
))  # fmt: skip
BUG_AUDITS.register("batch-clipping", BugAudit(
    "batch-clipping", "batch-clipping", "heavy", 25, "clipped-llr",
    ProbeSetting(dimension=1, batch_size=25, epochs=4, noise_multiplier=4.0),
    delta=1e-3, runs=4000, pilot_runs=1000,
))  # fmt: skip
BUG_AUDITS.register("noise-scaled-twice", BugAudit(
    "noise-scaled-twice", "noise-scaled-twice", "dirac", 100, "canary-sum",
    ProbeSetting(dimension=1, batch_size=25, epochs=1, noise_multiplier=2.0),
    delta=1e-5, runs=300, pilot_runs=50,
))  # fmt: skip
BUG_AUDITS.register("opacus-571", BugAudit(
    "opacus-571", "floored-batch-size", "identical", 2, "update-size",
    ProbeSetting(dimension=1, batch_size=2, epochs=1, noise_multiplier=3.5),
    delta=1e-5, runs=2000, pilot_runs=500,
    published="Opacus #571 (Cebere, 2023): one-dimensional DP-SGD on 2-3 records, Opacus "
    "reports ε ≈ 1.2, a best-threshold estimate (not a confidence bound) leaks ≈ 2.5",
))  # fmt: skip
