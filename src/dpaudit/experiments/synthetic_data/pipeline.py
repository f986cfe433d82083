"""Audit DP synthetic-data generators as installed (``dpaudit audit synthetic-data``).

For each generator of the settings and each threat model, on a worst-case pair (D, D ∪ {t})
(:data:`dpaudit.attacks.WORST_CASE_DATASETS`; Annamalai, Ganev & De Cristofaro 2024,
arXiv:2405.10994):

1. **runs** — run pairs are engine tasks (resumable from a checkpoint): task ``i`` fits the
   generator once on D ∪ {t} and once on D, with library seeds drawn from the task's seed,
   and scores both runs with every threat model's statistic. A group of ``group_size`` tasks
   is one call of one worker process of the library (:mod:`dpaudit.systems._external`), so
   the library starts once per group;
2. **pilot** (``pilot_runs`` pairs, their own seeds): per threat model, the threshold whose
   Clopper–Pearson bound on the pilot runs themselves is largest (for a statistic with a
   tuning parameter, ``SyntheticThreatModel.tuned`` — the density ratio's bandwidth — the
   grid point and the threshold together: :func:`pilot_choice`);
3. **evaluate** (``runs`` pairs, fresh seeds): the runs on D ∪ {t} and on D scoring at least
   that threshold bound ε at δ with exact one-sided Clopper–Pearson intervals (Jagielski,
   Ullman & Oprea 2020, arXiv:2006.07709). The runs are independent and the threshold was
   fixed on held-out runs, so the bound is valid at the stated confidence (selection:
   split). From the same two interval ends, a **valid** Gaussian-DP bound μ ≥ Φ⁻¹(TPR_lo) −
   Φ⁻¹(FPR_hi) (Dong, Roth & Su 2022, arXiv:1905.02383; Nasr et al. 2023, arXiv:2302.07956);
4. beside it, the Gaussian-DP μ **estimate** of the two Gaussians fitted to the statistic on
   D ∪ {t} and on D over all runs (:func:`dpaudit.bounds.gaussian_pair_epsilon`; the
   white-box statistic is a sum of Gaussian log-likelihood ratios, for which the fit is
   the model), next to the μ the claim implies, √(2ρ) with the library's ρ.

The claim is the library's (ε, δ) (PrivBayes's: pure ε); the second claim is the ε at δ of
μ-GDP with the implied μ. A generator whose library environment is not built (or whose extra
is not installed) is refused before any run, with the make target (or the install command) to
run; so is a worst-case dataset outside the public domain.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    ConfidenceInterval,
    LowerBound,
    ResultMixin,
    SelectionRecord,
    package_versions,
)
from dpaudit._rng import child_seed
from dpaudit.attacks._synthetic import (
    PER_TARGET,
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    WorstCaseDataset,
)
from dpaudit.bounds import (
    Explicit,
    epsilon_from_scores,
    gaussian_pair_epsilon,
    gdp_from_error_rates,
)
from dpaudit.conversions import gdp_epsilon
from dpaudit.engine import journal_in, run_tasks
from dpaudit.experiments._sequential_runs import (
    SEQUENTIAL_CHUNK,
    choose_threshold,
    stream_claim_test,
    stream_selections,
    witness_direction,
)
from dpaudit.experiments.synthetic_data.one_run import audit_one_run, one_run_design
from dpaudit.experiments.synthetic_data.settings import SyntheticDataSettings
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import GENERATORS, GeneratorCell

__all__ = [
    "WORKFLOW",
    "SyntheticAuditDetail",
    "SyntheticRunPairs",
    "audit_synthetic_data",
    "pilot_choice",
    "pilot_threshold",
    "spans",
]

WORKFLOW = "synthetic-data"
_IMPLIED_MU = ("μ = √(2ρ) of the library's ρ (Bun & Steinke 2016, arXiv:1605.02065); ε at δ of "
               "μ-GDP (Dong, Roth & Su 2022, arXiv:1905.02383, Cor. 2.13)")  # fmt: skip
#: Extra values at the end of each task's result: in-worker seconds of the two runs, the
#: batch's wall seconds per pair, and the library's ρ.
_EXTRA = 4


_NAN_INTERVAL = ConfidenceInterval(math.nan, math.nan)


@dataclasses.dataclass(frozen=True)
class SyntheticRunPairs:
    """Engine task: run pair ``i`` → every threat model's statistic on D ∪ {t} and on D.

    Tasks run in groups of ``group_size`` (one worker process per group); a result is
    ``[s₁(D∪t), s₁(D), s₂(D∪t), s₂(D), …, seconds(D∪t), seconds(D), wall per pair, ρ]``.

    Attributes:
        cell: the generator's settings cell.
        dataset, rows, columns: the worst-case design.
        threat_models: names in :data:`~dpaudit.attacks.SYNTHETIC_THREAT_MODELS`.
        sample_rows: rows of each synthetic table (used when a threat model reads it).
        group_size: run pairs per worker process.
        grid: the tuned statistics' parameter grid (the density ratio's bandwidths); a tuned
            threat model fills ``2 × len(grid)`` values of the result, ``[s(D∪t), s(D)]`` per
            grid point, the others 2.
    """

    cell: GeneratorCell
    dataset: str
    rows: int
    columns: int
    threat_models: tuple[str, ...]
    sample_rows: int
    group_size: int
    grid: tuple[float, ...] = ()

    def pair(self) -> WorstCaseDataset:
        """The worst-case pair."""
        return WORST_CASE_DATASETS.get(self.dataset)(columns=self.columns, rows=self.rows)

    def __call__(self, index: int, seed: np.random.SeedSequence) -> np.ndarray:
        return self.run_group([index], [seed])[0]

    def run_group(self, indices, seeds) -> list[np.ndarray]:
        """The run pairs of ``seeds``, in one worker process."""
        pair = self.pair()
        gen = SYSTEMS.get(self.cell.generator)(self.cell)
        tms = [SYNTHETIC_THREAT_MODELS.get(t) for t in self.threat_models]
        observe = sorted({o for tm in tms for o in tm.observe})
        which, lib_seeds = [], []
        for s in seeds:
            seq = s if isinstance(s, np.random.SeedSequence) else np.random.SeedSequence(s)
            a, b = (int(x) for x in seq.generate_state(2, dtype=np.uint32))
            which += [1, 0]
            lib_seeds += [a, b]
        tables = [pair.D, pair.D_prime]
        target = pair.target if PER_TARGET & set(observe) else None  # read through t
        r = gen.fit_runs(tables, which, lib_seeds, domain=pair.domain, observe=observe,
                         sample_rows=self.sample_rows, target=target)  # fmt: skip
        syn = r.synthetic
        out = []
        for k in range(len(seeds)):
            row = []
            for tm in tms:
                vals = []
                for j in (2 * k, 2 * k + 1):
                    args = (r.runs[j], None if syn is None else syn[j], pair, tables[which[j]])
                    vals.append(tm.statistic(*args, self.grid) if tm.tuned
                                else [tm.statistic(*args)])  # fmt: skip
                row += [v for g in zip(*vals, strict=True) for v in g]
            row += [r.runs[2 * k]["seconds"], r.runs[2 * k + 1]["seconds"],
                    r.wall_seconds / len(seeds), r.rho]  # fmt: skip
            out.append(np.asarray(row, dtype=np.float64))
        return out


def spans(task: SyntheticRunPairs) -> list[slice]:
    """Each threat model's columns of the task's result (two per grid point when tuned)."""
    out, start = [], 0
    for t in task.threat_models:
        width = 2 * (len(task.grid) if SYNTHETIC_THREAT_MODELS.get(t).tuned else 1)
        out.append(slice(start, start + width))
        start += width
    return out


def pilot_choice(pilot: np.ndarray, delta: float, level: float) -> tuple[int, float, float]:
    """The grid point and threshold with the largest Clopper–Pearson bound on the pilot run
    pairs (ties: the larger TPR − FPR there, then the first grid point).

    Args:
        pilot: the pilot's columns of one threat model, ``[s(D∪t), s(D)]`` per grid point.
        delta, level: δ and confidence of the bound.

    Returns:
        ``(grid index, threshold, the pilot's own bound there)``.

    Example:
        >>> pos, neg = np.arange(20.0, 40), np.arange(0.0, 20)
        >>> pilot_choice(np.stack([neg, pos, pos, neg], axis=1), 1e-2, 0.95)[:2]
        (1, 20.0)
    """
    best, best_key = (0, 0.0, 0.0), (-math.inf, -math.inf)
    for g in range(pilot.shape[1] // 2):
        pos, neg = pilot[:, 2 * g], pilot[:, 2 * g + 1]
        t, e = pilot_threshold(pos, neg, delta, level)
        key = (e, float(np.mean(pos >= t) - np.mean(neg >= t)))
        if key > best_key:
            best, best_key = (g, t, e), key
    return best


def pilot_threshold(pos: np.ndarray, neg: np.ndarray, delta: float, level: float):
    """The threshold with the largest Clopper–Pearson bound on the pilot runs themselves
    (:func:`dpaudit.experiments._sequential_runs.choose_threshold`, shared with the other
    many-run audits).

    Returns:
        ``(threshold, the pilot's own bound there)``.

    Example:
        >>> t, e = pilot_threshold(np.arange(20.0, 40), np.arange(0.0, 20), 1e-2, 0.95)
        >>> t
        20.0
    """
    return choose_threshold(pos, neg, delta, level)


@dataclasses.dataclass(frozen=True)
class SyntheticAuditDetail(ResultMixin):
    """One generator under one threat model.

    Attributes:
        generator: the registered generator; ``bug`` what it gets wrong (None: as installed).
        library, version: the library's distribution and installed version.
        threat_model: the threat model's name.
        dataset: the worst-case design; ``rows`` of D, ``columns``.
        epsilon, delta: the claim.
        rho: the library's ρ for (ε, δ); ``implied_mu`` = √(2ρ).
        mu_lower: the valid Gaussian-DP lower bound at the confidence level (NaN in the
            sequential mode, whose stream stops at a data-dependent time).
        mu_estimate: the fitted two-Gaussian μ (an estimate, not a bound), over all runs (NaN
            when the statistic is constant on one dataset only: nothing to fit).
        mu_estimate_interval: its approximate 95 % interval, μ̂ ± 1.96·√(2/n + μ̂²/(4n))
            for n run pairs (the large-sample standard error of a standardised mean
            difference, Hedges & Olkin 1985, §5.B) — how precise the estimate is, not a bound.
        mu_ratio: ``mu_estimate / implied_mu``.
        threshold, projected: the pilot's threshold and its own bound there.
        tp, fp: evaluation runs on D ∪ {t} and on D scoring ≥ the threshold, of ``runs``.
        runs, pilot_runs: run pairs.
        seconds_per_run: mean in-worker fit time of one run.
        wall_seconds: the audit's wall time (both stages, all threat models).
        mean_shift: the statistic's mean on D ∪ {t} minus its mean on D over all run pairs,
            with ``mean_shift_interval``, ± 1.96 standard errors (approximate 95 %).
        llr_mu_estimate: for a statistic that is the log-likelihood ratio of the adversary's
            view (``SyntheticThreatModel.llr``), √(mean shift): the mean shift of an LLR is
            the symmetrised KL divergence KL(P′‖P) + KL(P‖P′) of that view, which is μ² for
            μ-GDP Gaussians and at most 2ρ = (implied μ)² for any post-processing of a
            ρ-zCDP mechanism (Bun & Steinke 2016, arXiv:1605.02065, Def. 1.1 at α → 1) —
            an estimate on the implied μ's scale whose spread is about half the fitted
            Gaussians' (it uses that the statistic is an LLR); ``llr_mu_interval`` is the
            square root of the mean shift's interval (clipped at 0). NaN otherwise.
        bandwidth: for a tuned statistic (``black-box-density``), the grid point chosen with
            the threshold on the pilot run pairs (the density's bandwidth λ); NaN otherwise.
    """

    generator: str
    bug: str | None
    library: str
    version: str | None
    threat_model: str
    dataset: str
    rows: int
    columns: int
    epsilon: float
    delta: float
    rho: float
    implied_mu: float
    mu_lower: float
    mu_estimate: float
    mu_estimate_interval: ConfidenceInterval
    mu_ratio: float
    threshold: float
    projected: float
    tp: int
    fp: int
    runs: int
    pilot_runs: int
    seconds_per_run: float
    wall_seconds: float
    mean_shift: float = math.nan
    mean_shift_interval: ConfidenceInterval = _NAN_INTERVAL
    llr_mu_estimate: float = math.nan
    llr_mu_interval: ConfidenceInterval = _NAN_INTERVAL
    bandwidth: float = math.nan


def _task(s: SyntheticDataSettings, generator: str) -> SyntheticRunPairs:
    opts = () if s.rounds is None or "aim" not in generator else (("rounds", s.rounds),)
    if GENERATORS.get(generator).library == "datasynthesizer":  # PrivBayes's degree; the
        # public row count its sensitivity fix uses
        opts = (("k", s.degree), ("public_rows", s.rows))
    if GENERATORS.get(generator).synth == "dpctgan":
        opts = s.dpctgan_settings()
    cell = GeneratorCell(generator, s.epsilon, s.delta, options=opts)
    rows = s.sample_rows if s.sample_rows is not None else s.rows + 1
    return SyntheticRunPairs(cell, s.dataset, s.rows, s.columns, s.threat_models_for(generator),
                             rows, s.group_size, tuple(s.bandwidths))  # fmt: skip


def _runs(task, n, seed, s, checkpoint, progress, label):
    run = run_tasks(task, n, rng=seed, executor=s.executor, workers=s.workers,
                    checkpoint=checkpoint, key=f"{WORKFLOW}:{task.cell.generator}:{label}",
                    progress=progress, description=f"{task.cell.generator} {label} run pairs",
                    chunk_size=1)  # fmt: skip
    return run.stacked()


def _pilot(task: SyntheticRunPairs, s: SyntheticDataSettings, key: int, checkpoint: Any,
           progress: Any) -> np.ndarray:  # fmt: skip
    """The pilot run pairs (their own seeds, ``child_seed(seed, key, 0)``), journalled beside
    the evaluation's: a resumed audit takes the finished ones from the checkpoint instead of
    fitting them again — the same pilot, so the same threshold, where the library's noise is
    not seedable (smartnoise's) and a rerun pilot would differ."""
    journal = journal_in(checkpoint, f"{task.cell.generator}.pilot.tasks")
    return _runs(task, s.pilot_runs, child_seed(s.seed, key, 0), s, journal, progress, "pilot")


def _stages(task: SyntheticRunPairs, s: SyntheticDataSettings, key: int, checkpoint: Any,
            progress: Any) -> tuple[np.ndarray, np.ndarray, float]:  # fmt: skip
    """The pilot and the evaluation run pairs, both journalled (:func:`_pilot`) → (pilot,
    evaluation, wall s)."""
    t0 = time.perf_counter()
    pilot = _pilot(task, s, key, checkpoint, progress)
    journal = journal_in(checkpoint, f"{task.cell.generator}.tasks")
    ev = _runs(task, s.runs, child_seed(s.seed, key, 1), s, journal, progress, "evaluation")
    return pilot, ev, time.perf_counter() - t0


def audit_generator(
    generator: str,
    settings: SyntheticDataSettings,
    *,
    checkpoint: Any = None,
    progress: Any = None,
) -> list[AuditEntry]:
    """Audit one generator under every threat model of ``settings`` (module docstring).

    Raises:
        MissingDependencyError: the generator's library environment is not built (names the
            make target), before any run.
        ValueError: the worst-case dataset lies outside the public domain, before any run.
    """
    s = settings
    key = s.generators.index(generator) if generator in s.generators else len(s.generators)
    task = _task(s, generator)
    if s.mode == "one-run":
        return audit_one_run(generator, s, task.cell, key)
    pair = task.pair()
    system = SYSTEMS.get(generator)(task.cell)
    system.check_inputs([pair.D, pair.D_prime], pair.domain)
    if s.mode == "sequential":
        return [_sequential_entry(task, system, s, key, checkpoint, progress)]
    pilot, ev, wall = _stages(task, s, key, checkpoint, progress)
    rho = float(ev[0, -1])
    implied = system.implied_mu(rho)
    seconds = float(np.mean(np.concatenate([pilot[:, -4:-2], ev[:, -4:-2]])))
    version = system.library.version()
    run = (system, version, rho, implied, seconds, wall)
    return [_entry(s, generator, tm, pilot[:, c], ev[:, c], run)
            for tm, c in zip(task.threat_models, spans(task), strict=True)]  # fmt: skip


def _sequential_entry(task: SyntheticRunPairs, system: Any, s: SyntheticDataSettings, key: int,
                      checkpoint: Any, progress: Any) -> AuditEntry:  # fmt: skip
    """``mode="sequential"``: the pilot run pairs fix the threshold and its event, then the
    evaluation run pairs stream in engine jobs of ``SEQUENTIAL_CHUNK`` (job k seeded by
    ``child_seed(seed, key, 2, k)``, journalled) through the anytime-valid test of the library's
    claim (:mod:`dpaudit.experiments._sequential_runs`), until it is rejected or ``runs`` pairs
    are spent. The bound is the ε confidence sequence at that stopping time."""
    t0 = time.perf_counter()
    pilot = _pilot(task, s, key, checkpoint, progress)
    rho = float(pilot[0, -1])
    claim = system.claim(rho=rho)
    g, t, projected = pilot_choice(pilot[:, spans(task)[0]], s.delta, s.confidence_level)
    cols = [2 * g, 2 * g + 1, -4, -3]  # the chosen statistic on D ∪ {t} and D; the seconds
    chunks = []

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(SEQUENTIAL_CHUNK, s.runs - k * SEQUENTIAL_CHUNK)
        journal = journal_in(checkpoint, f"{task.cell.generator}.seq{k}.tasks")
        ev = _runs(task, n, child_seed(s.seed, key, 2, k), s, journal, progress, f"stream {k}")
        chunks.append(ev[:, cols])
        return ev[:, 2 * g], ev[:, 2 * g + 1]

    streamed = stream_claim_test(
        draw, threshold=t, forward=witness_direction(pilot[:, 2 * g], pilot[:, 2 * g + 1], t),
        claimed_epsilon=claim.epsilon, delta=s.delta, confidence_level=s.confidence_level,
        max_chunks=-(-s.runs // SEQUENTIAL_CHUNK),
    )  # fmt: skip
    st, both = streamed.state, np.concatenate([pilot[:, cols], *chunks])
    mu_est, mu_ci = _mu_estimate(both[:, 0], both[:, 1], s.delta)
    implied = system.implied_mu(rho)
    tm = task.threat_models[0]
    detail = SyntheticAuditDetail(
        task.cell.generator, system.bug, system.library.distribution, system.library.version(),
        tm, s.dataset, s.rows, s.columns, s.epsilon, s.delta, rho, implied, math.nan, mu_est,
        mu_ci, mu_est / implied, t, projected, streamed.tp, streamed.fp, streamed.pairs,
        s.pilot_runs, float(np.mean(both[:, -2:])), time.perf_counter() - t0,
        **_mean_shift(both[:, 0], both[:, 1], tm), bandwidth=_chosen(s, tm, g),
    )  # fmt: skip
    lower = LowerBound(
        f"{tm} worst-case multi-run threshold test, anytime-valid confidence sequence (test "
        "supermartingales by betting)", s.confidence_level, st.epsilon, s.delta,
        interval=ConfidenceInterval(st.epsilon, math.inf),
        note=f"{streamed.stop_note(f'of at most {s.runs}')}; Gaussian-DP μ estimate "
        f"{mu_est:.3g} (fitted Gaussians, not a bound) against the implied μ = {implied:.3g}",
    )  # fmt: skip
    sel = stream_selections(f"{s.pilot_runs} held-out pilot run pairs")
    return AuditEntry(task.cell.generator, f"{tm} ({s.dataset}), sequential", lower, (claim,),
                      selections=sel, detail=detail)  # fmt: skip


def _mu_estimate(pos: np.ndarray, neg: np.ndarray, delta: float):
    """The fitted two-Gaussian μ and its approximate 95 % interval (see the detail)."""
    if np.ptp(pos) == 0 and np.ptp(neg) == 0:
        mu = 0.0 if pos[0] == neg[0] else math.inf
    elif np.ptp(pos) == 0 or np.ptp(neg) == 0:  # one side constant: no two Gaussians to fit
        return math.nan, ConfidenceInterval(math.nan, math.nan)
    else:
        mu = gaussian_pair_epsilon(pos, neg, delta).mu
    n = pos.size
    half = 1.96 * math.sqrt(2 / n + mu**2 / (4 * n)) if math.isfinite(mu) else 0.0
    return mu, ConfidenceInterval(max(0.0, mu - half), mu + half)


def _mean_shift(pos: np.ndarray, neg: np.ndarray, tm: str) -> dict[str, Any]:
    """The mean shift, its interval and, for an LLR statistic, √shift (see the detail)."""
    n = pos.size
    shift = float(pos.mean() - neg.mean())
    half = 1.96 * math.sqrt((pos.var(ddof=1) + neg.var(ddof=1)) / n) if n > 1 else math.inf
    out = {"mean_shift": shift,
           "mean_shift_interval": ConfidenceInterval(shift - half, shift + half)}  # fmt: skip
    if SYNTHETIC_THREAT_MODELS.get(tm).llr:
        lo, hi = (math.sqrt(max(v, 0.0)) for v in (shift - half, shift + half))
        out["llr_mu_estimate"] = math.sqrt(max(shift, 0.0))
        out["llr_mu_interval"] = ConfidenceInterval(lo, hi)
    return out


def _chosen(s: SyntheticDataSettings, tm: str, g: int) -> float:
    """The grid point ``g`` of a tuned threat model (NaN for the others)."""
    return float(s.bandwidths[g]) if SYNTHETIC_THREAT_MODELS.get(tm).tuned else math.nan


def _entry(s: SyntheticDataSettings, generator: str, tm: str, pilot, ev, run) -> AuditEntry:
    """One threat model's entry from its pilot and evaluation scores (columns: D ∪ {t}, D per
    grid point; the grid point is chosen on the pilot with the threshold)."""
    system, version, rho, implied, seconds, wall = run
    level = s.confidence_level
    g, t, projected = pilot_choice(pilot, s.delta, level)
    lam = _chosen(s, tm, g)
    pilot, ev = pilot[:, 2 * g : 2 * g + 2], ev[:, 2 * g : 2 * g + 2]
    b = epsilon_from_scores(ev[:, 0], ev[:, 1], selection=Explicit(t), delta=s.delta,
                            confidence_level=level)  # fmt: skip
    mu_lo = gdp_from_error_rates(b.tpr_lower, b.fpr_upper, s.delta).mu
    both = np.concatenate([pilot, ev])
    mu_est, mu_ci = _mu_estimate(both[:, 0], both[:, 1], s.delta)
    detail = SyntheticAuditDetail(
        generator, system.bug, system.library.distribution, version, tm, s.dataset,
        s.rows, s.columns, s.epsilon, s.delta, rho, implied, mu_lo, mu_est, mu_ci,
        mu_est / implied, t, projected, b.tp, b.fp, s.runs, s.pilot_runs, seconds, wall,
        **_mean_shift(both[:, 0], both[:, 1], tm), bandwidth=lam,
    )  # fmt: skip
    lower = LowerBound(
        f"{tm} worst-case multi-run threshold test, exact Clopper-Pearson (Jagielski et "
        "al. 2020)", level, b.epsilon, s.delta,
        interval=ConfidenceInterval(b.epsilon, math.inf),
        note=f"{s.runs} run pairs; {b.tp} runs on D ∪ {{t}} and {b.fp} on D scored ≥ the "
        f"pilot's threshold. Gaussian-DP μ: valid lower bound {mu_lo:.3g}; estimate "
        f"{mu_est:.3g} (fitted Gaussians, not a bound) against the implied μ = √(2ρ) = "
        f"{implied:.3g}",
    )  # fmt: skip
    claims = (
        system.claim(rho=rho),
        Claim("implied μ-GDP", getattr(system, "IMPLIED_MU_SOURCE", _IMPLIED_MU),
              gdp_epsilon(implied, s.delta), s.delta),
    )  # fmt: skip
    what = "threshold" if math.isnan(lam) else f"bandwidth λ = {lam:g} and threshold"
    sel = SelectionRecord(what, "split",
                          f"chosen on {s.pilot_runs} held-out pilot run pairs")  # fmt: skip
    return AuditEntry(generator, f"{tm} ({s.dataset})", lower, claims, selections=(sel,),
                      detail=detail)  # fmt: skip


_NOTE = (
    "Worst-case multi-run audits of DP synthetic-data generators run as installed, out of "
    "process: each ε bound and μ lower bound is valid at its confidence level against the pair "
    "(D, D ∪ {t}) shown; the μ estimate beside them is not a bound.",
    "One-run audits of DP synthetic-data generators run as installed: canary records each "
    "inserted with probability 1/2, one guess per canary from the release; each ε bound is "
    "valid at its confidence level (Steinke et al. 2023, arXiv:2305.08846).",
)


def audit_synthetic_data(
    settings: SyntheticDataSettings | None = None,
    *,
    data: Any = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Audit every generator of the settings under every threat model (module docstring).

    Args:
        settings: :class:`SyntheticDataSettings` (default: smartnoise MST and AIM at
            (ε, δ) = (1, 10⁻²), white-box, the tree-flip worst-case dataset).
        data: unused (the worst-case datasets are generated).
        progress: truthy for progress bars over the run pairs.
        checkpoint: a directory; finished pilot and evaluation run pairs are kept there and
            a rerun with the same settings resumes from them.

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"synthetic-data"``): one entry per
        generator and threat model.

    Raises:
        MissingDependencyError: a generator's library environment is not built (the message
            names the make target), before any run.
    """
    s = settings if settings is not None else SyntheticDataSettings()
    t0 = time.perf_counter()
    for g in s.generators:  # every environment and table checked before the first run
        task = _task(s, g)
        if s.mode == "one-run":
            c = one_run_design(s)
            tables, domain = [c.table(np.ones(s.canaries, dtype=bool))], c.domain
        else:
            pair = task.pair()
            tables, domain = [pair.D, pair.D_prime], pair.domain
        SYSTEMS.get(g)(task.cell).check_inputs(tables, domain)
    entries: list[AuditEntry] = []
    timings: dict[str, float] = {}
    versions = package_versions()
    for g in s.generators:
        es = audit_generator(g, s, checkpoint=checkpoint, progress=progress)
        entries += es
        timings[g] = es[0].detail.wall_seconds
        versions[es[0].detail.library] = es[0].detail.version
    timings["total"] = time.perf_counter() - t0
    return AuditResult(
        WORKFLOW, tuple(entries), s, s.seed, timings, versions,
        note=_NOTE[s.mode == "one-run"],
    )  # fmt: skip
