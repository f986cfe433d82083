"""Audit the catalogue of DP-SGD implementations (``dpaudit audit dp-sgd-bugs``).

For each bug (:data:`.audits.BUG_AUDITS`): build the crafted pair ``(D, D′)``, train the
variant — the real library, configured as the bug's reporter did — many times on each with
fresh seeds, score every white-box transcript with the audit's statistic, and bound ε:

1. **pilot** (``pilot_runs`` per dataset, their own seeds): choose the threshold whose
   Clopper–Pearson bound on the pilot runs is largest;
2. **evaluate** (``runs`` per dataset, fresh seeds, engine tasks resumable from a
   checkpoint): count how many D′ and D runs score above it and bound ε at the audit's δ
   with exact one-sided Clopper–Pearson intervals (Jagielski, Ullman & Oprea 2020,
   arXiv:2006.07709; :func:`dpaudit.bounds.epsilon_from_scores`). The runs are independent,
   so the bound is valid at the stated confidence; the threshold was fixed on the pilot runs,
   so it needs no further correction.

The claim is what the library's own accountant reports after a run (the larger of D's and
D′'s when the two differ). The correct implementation (``poisson``) is audited with the same
pair, statistic and setting as each bug's control.
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
from dpaudit.attacks import BUG_STATISTICS, bug_pair
from dpaudit.bounds import Explicit, epsilon_from_scores
from dpaudit.engine import journal_in, run_tasks
from dpaudit.experiments._sequential_runs import (
    SEQUENTIAL_CHUNK,
    choose_threshold,
    stream_claim_test,
    stream_selections,
    witness_direction,
)
from dpaudit.experiments.dpsgd_bugs.audits import BUG_AUDITS, BugAudit
from dpaudit.experiments.dpsgd_bugs.settings import DPSGDBugsSettings
from dpaudit.systems.dpsgd_variants import DPSGD_VARIANTS, Session

__all__ = ["WORKFLOW", "BugAuditDetail", "RunPair", "audit_bug", "audit_dpsgd_bugs", "run_pair"]

WORKFLOW = "dp-sgd-bugs"
CONTROL = "poisson"

_SESSIONS: dict[tuple, tuple[Session, Session]] = {}


def _sessions(variant: str, audit: BugAudit) -> tuple[Session, Session]:
    """The variant's sessions on D and D′ (built once per process)."""
    key = (variant, audit)
    if key not in _SESSIONS:
        out, inn = bug_pair(audit.pair, audit.fillers, audit.setting)
        v = DPSGD_VARIANTS.get(variant)
        _SESSIONS[key] = (v.session(out, audit.setting), v.session(inn, audit.setting))
    return _SESSIONS[key]


def _rate(audit: BugAudit) -> float:
    return min(1.0, audit.setting.batch_size / audit.fillers)


@dataclasses.dataclass(frozen=True)
class RunPair:
    """One engine task: a run on D′ and a run on D (seeds from the task's seed) → their two
    scores. Runs are grouped into executor calls by the engine's ``chunk_size``, which never
    changes a result.

    Attributes:
        variant: the variant trained.
        audit: the bug's audit (pair, statistic, setting).
    """

    variant: str
    audit: BugAudit

    def __call__(self, index: int, seed: np.random.SeedSequence) -> np.ndarray:
        return run_pair(self.variant, self.audit, seed)


def run_pair(variant: str, audit: BugAudit, seed: Any) -> np.ndarray:
    """A run on D′ and one on D with seeds drawn from ``seed`` → ``[score D′, score D]``."""
    out, inn = _sessions(variant, audit)
    stat = BUG_STATISTICS.get(audit.statistic)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s_in, s_out = (int(x) for x in seq.generate_state(2, dtype=np.uint32))
    q = _rate(audit)
    return np.array([stat.score(inn.run(s_in), audit.setting, q),
                     stat.score(out.run(s_out), audit.setting, q)])  # fmt: skip


def _scores(variant, audit, runs, root, s: DPSGDBugsSettings, journal, progress, label):
    run = run_tasks(RunPair(variant, audit), runs, rng=root, executor=s.executor,
                    workers=s.workers, checkpoint=journal, key=f"{WORKFLOW}:{variant}:{label}",
                    progress=progress, description=f"{variant} {label} runs",
                    chunk_size=s.block_size)  # fmt: skip
    res = run.stacked()
    return res[:, 0], res[:, 1], run.wall_seconds


@dataclasses.dataclass(frozen=True)
class BugAuditDetail(ResultMixin):
    """How one variant fared under one bug's audit.

    Attributes:
        bug: the audit's name (the bug, or the reported issue it reproduces).
        variant: the variant trained (the bug, or the correct control).
        title, defect, source, runs_what: the variant's catalogue entry.
        pair, fillers, statistic: the adversary.
        setting: the Opacus hyperparameters.
        delta: δ of claim and bound.
        claim_out, claim_in: the accountant's ε on D and on D′.
        threshold: chosen on the pilot runs.
        projected: the pilot runs' own bound at that threshold.
        tp, fp: D′ and D runs scoring ≥ threshold, of ``runs`` each.
        runs, pilot_runs: runs per dataset.
        wall_seconds: training and scoring time of the audit.
        published: the published figure, if any.
    """

    bug: str
    variant: str
    title: str
    defect: str | None
    source: str
    runs_what: str
    pair: str
    fillers: int
    statistic: str
    setting: Any
    delta: float
    claim_out: float
    claim_in: float
    threshold: float
    projected: float
    tp: int
    fp: int
    runs: int
    pilot_runs: int
    wall_seconds: float
    published: str


def audit_bug(
    bug: str | BugAudit,
    variant: str,
    settings: DPSGDBugsSettings,
    *,
    checkpoint: Any = None,
    progress: Any = None,
) -> AuditEntry:
    """Run ``bug``'s audit against ``variant`` (the bug itself, or the control).

    Args:
        bug: a name in :data:`~.audits.BUG_AUDITS`, or a :class:`~.audits.BugAudit` (e.g. a
            registered one with other run counts or δ).
        variant: a name in :data:`~dpaudit.systems.DPSGD_VARIANTS`.
        settings: the workflow settings (``runs_scale``, executor, confidence, seed).
        checkpoint: a directory for the evaluation runs' journal.
        progress: truthy for progress bars.

    Returns:
        an :class:`~dpaudit.AuditEntry`: the bound, the accountant's claim, the threshold's
        selection record and a :class:`BugAuditDetail`.
    """
    audit = bug if isinstance(bug, BugAudit) else BUG_AUDITS.get(bug)
    v = DPSGD_VARIANTS.get(variant)
    runs = max(1, round(audit.runs * settings.runs_scale))
    pilot = max(1, round(audit.pilot_runs * settings.runs_scale))
    level = settings.confidence_level
    t0 = time.perf_counter()
    out, inn = _sessions(variant, audit)
    claim_out, claim_in = out.claim(audit.delta), inn.claim(audit.delta)
    key = (_index(BUG_AUDITS.names(), audit.name), _index(DPSGD_VARIANTS.names(), variant))
    journal = journal_in(checkpoint, f"{audit.name}.{variant}.tasks")
    ppos, pneg, _ = _scores(variant, audit, pilot, child_seed(settings.seed, *key, 0), settings,
                           None, progress, "pilot")  # fmt: skip
    t, projected = choose_threshold(ppos, pneg, audit.delta, level)
    claim = max(claim_out, claim_in)
    if settings.mode == "sequential":
        each = (claim_out, claim_in)
        return _sequential_entry(variant, audit, settings, key, t, projected, claim, each,
                                 pilot, runs, checkpoint, progress, t0, ppos, pneg)  # fmt: skip
    pos, neg, _ = _scores(variant, audit, runs, child_seed(settings.seed, *key, 1), settings,
                         journal, progress, "evaluation")  # fmt: skip
    b = epsilon_from_scores(pos, neg, selection=Explicit(t), delta=audit.delta,
                            confidence_level=level)  # fmt: skip
    wall = time.perf_counter() - t0
    detail = BugAuditDetail(
        audit.name, variant, v.title, v.bug, v.source, v.runs, audit.pair, audit.fillers,
        audit.statistic, audit.setting, audit.delta, claim_out, claim_in, t, projected,
        b.tp, b.fp, runs, pilot, wall, audit.published,
    )  # fmt: skip
    lower = LowerBound(
        "white-box multi-run threshold test, exact Clopper-Pearson (Jagielski et al. 2020)",
        level, b.epsilon, audit.delta, interval=ConfidenceInterval(b.epsilon, math.inf),
        note=f"{runs} runs on D′ and on D; {b.tp} and {b.fp} scored ≥ the pilot's threshold",
    )  # fmt: skip
    claims = _claims(audit, claim)
    sel = SelectionRecord("threshold", "split",
                          f"chosen on {pilot} held-out pilot runs per dataset")  # fmt: skip
    system = _system(variant, audit)
    return AuditEntry(system, f"{audit.pair}+{audit.statistic}", lower, claims,
                      selections=(sel,), detail=detail)  # fmt: skip


def _sequential_entry(variant, audit, s, key, t, projected, claim, claims_each, pilot, runs,
                      checkpoint, progress, t0, ppos, pneg) -> AuditEntry:  # fmt: skip
    """The evaluation runs as a stream (:func:`~dpaudit.experiments._sequential_runs.
    stream_claim_test`): chunk ``k`` of :data:`SEQUENTIAL_CHUNK` run pairs is an engine job
    seeded by ``child_seed(seed, *key, 2, k)`` (resumable from its journal), and the stream
    stops after the chunk in which the claim is rejected."""

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        start = k * SEQUENTIAL_CHUNK
        n = min(SEQUENTIAL_CHUNK, runs - start)
        journal = journal_in(checkpoint, f"{audit.name}.{variant}.seq{k}.tasks")
        pos, neg, _ = _scores(variant, audit, n, child_seed(s.seed, *key, 2, k), s, journal,
                             progress, f"stream {start + 1}-{start + n}")  # fmt: skip
        return pos, neg

    streamed = stream_claim_test(
        draw, threshold=t, forward=witness_direction(ppos, pneg, t), claimed_epsilon=claim,
        delta=audit.delta, confidence_level=s.confidence_level,
        max_chunks=-(-runs // SEQUENTIAL_CHUNK),
    )  # fmt: skip
    state = streamed.state
    v = DPSGD_VARIANTS.get(variant)
    detail = BugAuditDetail(
        audit.name, variant, v.title, v.bug, v.source, v.runs, audit.pair, audit.fillers,
        audit.statistic, audit.setting, audit.delta, *claims_each, t, projected, streamed.tp,
        streamed.fp, streamed.pairs, pilot, time.perf_counter() - t0, audit.published,
    )  # fmt: skip
    lower = LowerBound(
        "white-box multi-run threshold test, anytime-valid confidence sequence (test "
        "supermartingales by betting)", s.confidence_level, state.epsilon, audit.delta,
        interval=ConfidenceInterval(state.epsilon, math.inf),
        note=f"{streamed.stop_note(f'of at most {runs}')}; {pilot} pilot runs per dataset "
        "before",
    )  # fmt: skip
    claims = _claims(audit, claim)
    sel = stream_selections(f"{pilot} held-out pilot runs per dataset")
    system = _system(variant, audit)
    return AuditEntry(system, f"{audit.pair}+{audit.statistic}", lower, claims,
                      selections=sel, detail=detail)  # fmt: skip


def _claims(audit: BugAudit, claim: float) -> tuple[Claim, ...]:
    """The library's own accountant, as the variant calls it, at the audit's δ."""
    acct = audit.setting.accountant.upper()
    return (Claim(f"Opacus accountant ({acct})", "Opacus' accountant as the variant calls it, "
                  "Mironov, Talwar & Zhang 2019 (arXiv:1908.10530) / Gopi et al. 2021 "
                  "(arXiv:2106.02848)", claim, audit.delta),)  # fmt: skip


def _system(variant: str, audit: BugAudit) -> str:
    return variant if variant == audit.bug else f"{variant} (control for {audit.name})"


def _index(names: tuple[str, ...], name: str) -> int:
    return names.index(name) if name in names else len(names)


def audit_dpsgd_bugs(
    settings: DPSGDBugsSettings | None = None,
    *,
    data: Any = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Audit every bug of the catalogue (module docstring) and, with ``settings.control``,
    the correct implementation in each bug's setting.

    Args:
        settings: :class:`DPSGDBugsSettings` (default: the whole catalogue).
        data: unused (the pairs are crafted).
        progress: truthy for progress bars over the runs.
        checkpoint: a directory; finished evaluation blocks are kept there and a rerun with
            the same settings resumes from them.

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"dp-sgd-bugs"``): per bug an entry for the
        bug and one for its control.

    Example:
        >>> s = DPSGDBugsSettings(bugs=("noise-scaled-twice",), runs_scale=0.2)
        >>> r = audit_dpsgd_bugs(s)
        >>> r.entries[0].gap.refutes_claim, r.entries[1].gap.refutes_claim
        (True, False)
    """
    s = settings if settings is not None else DPSGDBugsSettings()
    t0 = time.perf_counter()
    entries, timings = [], {}
    for bug in s.bugs or BUG_AUDITS.names():
        buggy = BUG_AUDITS.get(bug).bug
        for variant in (buggy, CONTROL) if s.control else (buggy,):
            e = audit_bug(bug, variant, s, checkpoint=checkpoint, progress=progress)
            entries.append(e)
            timings[e.system] = e.detail.wall_seconds
    timings["total"] = time.perf_counter() - t0
    return AuditResult(
        WORKFLOW, tuple(entries), s, s.seed, timings,
        package_versions("torch", "opacus", "dp-accounting"),
        note="White-box multi-run audits of DP-SGD implementations: each bound is valid at "
        "its confidence level against the add/remove neighbouring pair shown; the claim is "
        "the library's accountant's ε at the audit's δ.",
    )  # fmt: skip
