"""The synthetic-data audit's one-run mode (``mode="one-run"``): many canaries per release.

Steinke, Nasr & Jagielski 2023 ("Privacy Auditing with One (1) Training Run", NeurIPS,
arXiv:2305.08846) audit with one run of the algorithm: m canaries, each inserted
independently with probability ½, and one guess per canary from the output. Here the
algorithm is a generator as installed, the canaries are records
(:func:`dpaudit.attacks.canary_table`: each alone in its cell of every marginal on the first
column) and the guess reads each threat model's statistic with that canary as the target of
the pair (D₀, D₀ ∪ {c}) (:class:`dpaudit.attacks.CanaryTable`): a function of the release,
the base table and the canaries only, never of which canaries went in.

1. **releases** — ``releases`` fits, all in one call of the library's worker: release ``r``
   draws its inclusions and its library seed from two streams of its own
   (``child_seed(seed, key, 3, r, 0)`` and ``(…, 1)``) and fits on
   D₀ plus its inserted canaries, its synthetic table ``sample_rows`` rows (default: the
   largest table's size, one size for every release, so the size says nothing of which
   canaries went in). The canaries of different releases are different records of
   independent fits, so together they are one game of ``releases × canaries`` canaries: a
   generator that is (ε, δ)-DP towards each record is so towards each canary of the
   composition (the other releases do not depend on it);
2. **bounds** — per threat model, the one-run bounds of
   :func:`dpaudit.bounds.one_run_bounds`: Steinke et al.'s and the f-DP game's (Mahloujifar,
   Melis & Chaudhuri 2024, arXiv:2410.22235), each maximised over the number of guesses with
   that choice made on a random half of the canaries and the bound taken on the other half
   (``selection="split"``), the larger of the two paid for by Bonferroni — valid at the
   confidence level as the multi-run bounds are. The uncorrected maximum is kept beside it,
   labelled as not a bound.

No pilot: a statistic with a tuning parameter (the density ratio's bandwidth) is refused by
the settings.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    ConfidenceInterval,
    LowerBound,
    ResultMixin,
    SelectionRecord,
)
from dpaudit._rng import child_seed
from dpaudit.attacks import (
    SYNTHETIC_THREAT_MODELS,
    CanaryTable,
    MembershipMetrics,
    canary_table,
    membership_metrics,
)
from dpaudit.bounds import OneRunBounds, one_run_bounds
from dpaudit.experiments.synthetic_data.settings import SyntheticDataSettings
from dpaudit.systems import SYSTEMS

__all__ = ["OneRunSyntheticDetail", "audit_one_run", "one_run_design"]


@dataclasses.dataclass(frozen=True)
class OneRunSyntheticDetail(ResultMixin):
    """One generator under one threat model, audited with one-run canaries.

    Attributes:
        generator, bug, library, version: the generator and its installed library.
        threat_model: the statistic read per canary.
        canaries: canaries per release; ``releases`` fits; ``included`` canaries inserted in
            all.
        rows: rows of the base table D₀; ``columns`` of every table.
        epsilon, delta: the claim; ``rho`` the library's ρ (NaN for a pure-ε generator).
        bounds: the one-run bounds (valid maximum, its selection, the uncorrected maximum).
        metrics: TPR at 1 % and 0.1 % FPR and AUC of the scores (descriptive).
        mean_in, mean_out: the mean score of inserted and of left-out canaries.
        seconds_per_release: mean in-worker fit time of one release.
        wall_seconds: the audit's wall time for this generator (every threat model).
    """

    generator: str
    bug: str | None
    library: str
    version: str | None
    threat_model: str
    canaries: int
    releases: int
    included: int
    rows: int
    columns: int
    epsilon: float
    delta: float
    rho: float
    bounds: OneRunBounds
    metrics: MembershipMetrics
    mean_in: float
    mean_out: float
    seconds_per_release: float
    wall_seconds: float


def one_run_design(s: SyntheticDataSettings) -> CanaryTable:
    """The base table, canaries and domain of ``s`` (:func:`dpaudit.attacks.canary_table`)."""
    return canary_table(canaries=s.canaries, rows=s.rows, columns=s.columns)


def _releases(system: Any, design: CanaryTable, s: SyntheticDataSettings, key: int, observe):
    """Every release's inclusions and the worker's runs (one call): module notes, step 1."""
    masks, tables, seeds = [], [], []
    for r in range(s.releases):  # the inclusions and the library's seed: separate streams
        inc = np.random.default_rng(child_seed(s.seed, key, 3, r, 0)).random(s.canaries) < 0.5
        masks.append(inc)
        tables.append(design.table(inc))
        lib = child_seed(s.seed, key, 3, r, 1).generate_state(1, dtype=np.uint32)
        seeds.append(int(lib[0]))
    rows = s.sample_rows or max(len(t) for t in tables)  # default: the largest table's size
    runs = system.fit_runs(tables, list(range(s.releases)), seeds, domain=design.domain,
                           observe=observe, sample_rows=rows)  # fmt: skip
    return masks, runs


def _scores(tm: Any, runs: Any, design: CanaryTable) -> np.ndarray:
    """``(releases × canaries,)`` scores: the statistic of each release with each canary as
    the target (release-major)."""
    out = []
    for j, run in enumerate(runs.runs):
        syn = None if runs.synthetic is None else runs.synthetic[j]
        try:
            out += [tm.statistic(run, syn, design.pair(i), None)
                    for i in range(len(design.canaries))]  # fmt: skip
        except ValueError as exc:
            raise ValueError(
                f"threat_models: {tm.name} cannot read release {j}: {exc}. The generator "
                "measured over a domain other than the public one (read from the private data "
                "— PrivBayes's support as installed — or compressed, as MST's): its black-box "
                "statistics still apply, and PrivBayes's public-support fix measures over the "
                "public domain"
            ) from exc
    return np.asarray(out, dtype=np.float64)


def audit_one_run(generator: str, s: SyntheticDataSettings, cell: Any, key: int) -> list:
    """One entry per threat model of ``s`` for ``generator`` (its settings ``cell``; ``key``:
    its index in the settings, which seeds its releases): module notes.

    Raises:
        MissingDependencyError: the library's environment is not built, before any fit.
        ValueError: the design lies outside the generator's public domain, before any fit.
    """
    t0 = time.perf_counter()
    design = one_run_design(s)
    system = SYSTEMS.get(generator)(cell)
    system.check_inputs([design.table(np.ones(s.canaries, dtype=bool))], design.domain)
    tms = [SYNTHETIC_THREAT_MODELS.get(t) for t in s.threat_models_for(generator)]
    observe = sorted({o for tm in tms for o in tm.observe})
    masks, runs = _releases(system, design, s, key, observe)
    included = np.concatenate(masks)
    seconds = float(np.mean([run["seconds"] for run in runs.runs]))
    version = system.library.version()
    wall = time.perf_counter() - t0
    entries = []
    for t, tm in enumerate(tms):
        scores = _scores(tm, runs, design)
        b = one_run_bounds(scores, included, delta=s.delta, confidence_level=s.confidence_level,
                           selection="split", rng=child_seed(s.seed, key, 4, t))  # fmt: skip
        m = membership_metrics(scores, included)
        detail = OneRunSyntheticDetail(
            generator, system.bug, system.library.distribution, version, tm.name, s.canaries,
            s.releases, int(included.sum()), s.rows, s.columns, s.epsilon, s.delta,
            float(runs.rho), b, m, float(scores[included].mean()),
            float(scores[~included].mean()), seconds, wall,
        )  # fmt: skip
        entries.append(_entry(s, system, tm.name, detail))
    return entries


def _entry(s: SyntheticDataSettings, system: Any, tm: str, d: OneRunSyntheticDetail):
    b, total = d.bounds, d.canaries * d.releases
    lower = LowerBound(
        f"{tm} one-run canaries: max of Steinke et al. 2023 and f-DP (Mahloujifar et al. "
        "2024), Bonferroni over the two", s.confidence_level, b.max_valid, s.delta,
        interval=ConfidenceInterval(b.max_valid, math.inf),
        note=f"{total} canaries ({d.included} inserted) in {d.releases} release(s); "
        f"uncorrected maximum {b.uncorrected_max:.3g} (not a bound); TPR "
        f"{d.metrics.tpr_at_1pct_fpr:.3f} at 1% FPR, AUC {d.metrics.auc:.3f} (descriptive)",
    )  # fmt: skip
    design = SelectionRecord("canaries", "fixed in advance",
                             "each inserted with probability 1/2 by the audit's seed")  # fmt: skip
    rho = None if math.isnan(d.rho) else d.rho
    return AuditEntry(d.generator, f"{tm} (one run: {d.canaries} canaries × {d.releases})",
                      lower, (system.claim(rho=rho),),
                      selections=(b.steinke.selection, b.max_selection, design),
                      detail=d)  # fmt: skip
