"""Black-box audit of a DP mechanism, DP-Sniper style (``dpaudit audit mechanism``).

Bichsel, Steffen, Bogunovic & Vechev 2021 ("DP-Sniper", IEEE S&P): for each neighbouring
pair (given, or StatDP's input patterns, Ding et al. 2018, CCS), fit a score that tells
M(a′) from M(a) — logistic regression on the outputs' features, or the exact log-ratio of
counts for outputs with few values — and take the event ``S = {score ≥ t}``. Three
independent sample sets per input keep every choice honest:

1. **train** (``train_samples``): fit the score — for continuous outputs two of them,
   logistic regression on the raw features and on the features plus one median indicator per
   output column (``fit_mechanism_attack(..., indicators=True)``);
2. **select** (``select_samples``): choose the pair, the score and the threshold ``t`` whose
   bound, projected to the evaluation size, is best (:func:`dpaudit.attacks.choose_event`;
   large selection sets are drawn in chunks and only their scores kept,
   :func:`dpaudit.attacks.choose_threshold`);
3. **evaluate** (``samples``, fresh, drawn in seeded engine blocks and resumable from a
   checkpoint): count ``M(a) ∈ S`` and ``M(a′) ∈ S`` and bound ε with exact one-sided
   Clopper–Pearson intervals (:func:`dpaudit.bounds.epsilon_from_confusion`; Chadha et al.
   2024, arXiv:2402.09403, §2.2). The pair and the event are fixed before these samples are
   drawn, so the bound needs no further correction (selection strategy ``"split"``).

A mechanism whose spec gives its log-likelihood ratio in closed form
(``MechanismSpec.log_likelihood_ratio``) is scored by it instead of a fitted classifier
(Neyman–Pearson: its level sets are the most powerful events for the pair); with many pairs
and a large selection set, the pairs are first screened on a smaller training and selection
set of their own (``screen_pairs``, ``screen_samples``), all on samples the bound never sees.

The result's witness (:class:`MechanismWitness`) is the pair and the event in words, with the
counts; :func:`replay_witness` draws new samples and recomputes the bound with the same event.

Example:
    >>> s = MechanismAuditSettings(mechanism="svt5", train_samples=2000,
    ...                            select_samples=2000, samples=20_000)
    >>> e = audit_mechanism(s).entries[0]
    >>> e.gap.refutes_claim, e.lower_bound.epsilon > 1.0
    (True, True)
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
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
from dpaudit.attacks import (
    EventCounts,
    MechanismAttack,
    batch_sampler,
    choose_event,
    choose_threshold,
)
from dpaudit.bounds import EpsDeltaAudit, epsilon_from_confusion
from dpaudit.engine import run_blocks
from dpaudit.experiments.mechanism._inputs import (
    WORKFLOW,
    _attacks,
    _draw,
    _pairs,
    _probe,
    _uses_llr,
)
from dpaudit.experiments.mechanism.sequential import audit_sequential
from dpaudit.experiments.mechanism.settings import (
    AUTO_FIRST_SCALE,
    STAGE_GROWTH,
    MechanismAuditSettings,
)
from dpaudit.systems import MECHANISMS, MechanismSpec

__all__ = ["WORKFLOW", "MechanismWitness", "audit_mechanism", "replay_witness", "resolve_mechanism"]

# Above this many output values per input (samples × output width), the search draws its
# selection samples in chunks of this size and keeps only their scores (memory stays bounded
# for large selection sets); below it, training and selection come from one draw.
_CHUNK_VALUES = 2**24


@dataclasses.dataclass(frozen=True)
class MechanismWitness(ResultMixin):
    """What refutes (or supports) the claim, in a form a person can read and rerun.

    Attributes:
        mechanism: the mechanism's name.
        database_a, database_b: the neighbouring pair (``b`` is the one the event signals).
        event: the event ``S`` in words (the outputs it holds, or the linear score and
            threshold).
        attack: ``"counts"`` or ``"logistic"``.
        count_a, count_b: fresh runs on a / b whose output fell in ``S``.
        samples: fresh runs per input.
        projected_epsilon: the bound the selection split projected for this event.
        seed: the root seed (the evaluation's samples are its child stream 2).
        model: the fitted attack (its mechanism-specific feature and log-likelihood ratio
            functions left out; see :func:`replay_witness`).
    """

    mechanism: str
    database_a: tuple[float, ...]
    database_b: tuple[float, ...]
    event: str
    attack: str
    count_a: int
    count_b: int
    samples: int
    projected_epsilon: float
    seed: int
    model: MechanismAttack = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True)
class _Candidate:
    a: np.ndarray
    b: np.ndarray
    attack: MechanismAttack
    projected: float


# ------------------------------------------------------------------------- stages


def resolve_mechanism(settings: MechanismAuditSettings, data: Any = None) -> MechanismSpec:
    """The mechanism to audit: ``data`` (a :class:`MechanismSpec` or a plain callable
    ``mechanism(database, rng)``) or the registered ``settings.mechanism``; the settings'
    ``claimed_epsilon`` overrides the claim.

    Raises:
        TypeError: ``data`` is neither a spec nor callable.
        ValueError: a callable without ``claimed_epsilon``, or an unknown name.
    """
    if data is None:
        spec = MECHANISMS.get(settings.mechanism)
    elif isinstance(data, MechanismSpec):
        spec = data
    elif callable(data):
        if settings.claimed_epsilon is None:
            raise ValueError("a mechanism given as a callable needs settings.claimed_epsilon")
        dims = len(settings.pair_a) or 1
        name = getattr(data, "__name__", type(data).__name__)
        spec = MechanismSpec(name, batch_sampler(data), settings.claimed_epsilon, dims,
                             "given by the user")  # fmt: skip
    else:
        raise TypeError(f"data must be a MechanismSpec or mechanism(database, rng), got {data!r}")
    if settings.claimed_epsilon is not None:
        spec = dataclasses.replace(spec, claimed_epsilon=settings.claimed_epsilon)
    return spec


def _search(spec, pairs, s: MechanismAuditSettings, root, width: int = 1, log=None) -> _Candidate:
    """Fit the attacks on the training samples of every pair, choose on the selection ones:
    the pair, the score (logistic regression with and without median-indicator features,
    unless the outputs are few or the mechanism brings its own features) and the threshold.
    A mechanism with a closed-form log-likelihood ratio (``spec.log_likelihood_ratio``) is
    scored with it under ``attack="auto"``: nothing is fitted, the training samples are not
    drawn, and the pair and threshold are still chosen on the selection samples.

    With more than ``s.screen_pairs`` pairs and more than ``s.screen_samples`` selection
    samples, the pairs are screened first (:func:`_screened_search`). ``log`` (a
    :class:`_SearchLog`, optional) receives each pair's best projected bound and the
    training entries fitted."""
    screen = 0 < s.screen_pairs < len(pairs) and s.select_samples > s.screen_samples
    if screen:
        return _screened_search(spec, pairs, s, root, width, log)
    best = None
    use_llr = _uses_llr(spec, s)
    for i, (a, b) in enumerate(pairs):
        t = 0 if use_llr else s.train_samples
        n = t + s.select_samples
        chunked = n * width > _CHUNK_VALUES
        if not chunked:
            out_a = _draw(spec, a, n, child_seed(root, 1, i, 0))
            out_b = _draw(spec, b, n, child_seed(root, 1, i, 1))
            attacks = _attacks(spec, s, a, b, out_a[:t], out_b[:t])
        else:
            attacks = _attacks(spec, s, a, b, *_training(spec, s, a, b, root, i))
        if chunked:
            scores = _chunked_scores(spec, attacks, a, b, s.select_samples, width,
                                     child_seed(root, 3, i))  # fmt: skip
        pair_best = -math.inf
        for k, attack in enumerate(attacks):
            if not chunked:
                attack, proj = choose_event(attack, out_a[t:], out_b[t:], n_eval=s.samples,
                                            confidence_level=s.confidence_level)  # fmt: skip
            else:
                attack, proj = choose_threshold(attack, *scores[k], n_eval=s.samples,
                                                confidence_level=s.confidence_level)  # fmt: skip
            pair_best = max(pair_best, proj)
            if best is None or proj > best.projected:
                best = _Candidate(a, b, attack, proj)
        if log is not None:
            log.note(i, attacks, 0 if use_llr else t, pair_best)
    return best


@dataclasses.dataclass
class _SearchLog:
    """What a search saw, for the automatic sizing: ``ranking`` holds ``(projected, full,
    index)`` per pair (``full``: scored on the full selection set, not only screened), and
    ``fit_entries`` the training entries (rows × (features + 1)) its logistic fits took."""

    ranking: list = dataclasses.field(default_factory=list)
    fit_entries: int = 0

    def note(self, i: int, attacks, rows: int, projected: float, full: bool = True) -> None:
        for att in attacks:
            if att.kind == "logistic":
                self.fit_entries += 2 * rows * (att.weights.size + 1)
        self.ranking.append((projected, full, i))


def _screened_search(spec, pairs, s: MechanismAuditSettings, root, width: int,
                     log=None) -> _Candidate:  # fmt: skip
    """:func:`_search` in two stages. Screening: every pair's attacks are fitted on
    ``min(train_samples, screen_samples)`` training outputs per input and scored on
    ``screen_samples`` selection outputs, all of their own. Then only the ``screen_pairs``
    pairs with the best projected bound are fitted on the full training set and scored on
    the full selection set (independent draws): the training and selection budget goes to
    the pairs that can win. Every draw here is one the bound never sees, so the bound stays
    valid with no correction."""
    ranked = []
    small = min(s.train_samples, s.screen_samples)
    for i, (a, b) in enumerate(pairs):
        train = _training(spec, s, a, b, root, i, size=small, stream=5)
        attacks = _attacks(spec, s, a, b, *train)
        del train
        scores = _chunked_scores(spec, attacks, a, b, s.screen_samples, width,
                                 child_seed(root, 4, i))  # fmt: skip
        proj = max(choose_threshold(att, *sc, n_eval=s.samples,
                                    confidence_level=s.confidence_level)[1]
                   for att, sc in zip(attacks, scores, strict=True))  # fmt: skip
        ranked.append((proj, i, a, b))
        if log is not None:
            log.note(i, attacks, 0 if _uses_llr(spec, s) else small, proj, full=False)
    ranked.sort(key=lambda r: (-r[0], r[1]))
    best = None
    for _, i, a, b in ranked[: s.screen_pairs]:
        attacks = _attacks(spec, s, a, b, *_training(spec, s, a, b, root, i))
        scores = _chunked_scores(spec, attacks, a, b, s.select_samples, width,
                                 child_seed(root, 3, i))  # fmt: skip
        pair_best = -math.inf
        for attack, sc in zip(attacks, scores, strict=True):
            attack, proj = choose_threshold(attack, *sc, n_eval=s.samples,
                                            confidence_level=s.confidence_level)  # fmt: skip
            pair_best = max(pair_best, proj)
            if best is None or proj > best.projected:
                best = _Candidate(a, b, attack, proj)
        if log is not None:
            log.note(i, attacks, 0 if _uses_llr(spec, s) else s.train_samples, pair_best)
    return best


def _training(spec, s: MechanismAuditSettings, a, b, root, i: int, size=None, stream=1):
    """The training outputs of pair ``i`` (none for a closed-form log-likelihood ratio)."""
    if _uses_llr(spec, s):
        return None, None
    size = s.train_samples if size is None else size
    return (_draw(spec, a, size, child_seed(root, stream, i, 0)),
            _draw(spec, b, size, child_seed(root, stream, i, 1)))  # fmt: skip


def _chunked_scores(spec, attacks, a, b, size: int, width: int, seed):
    """Each attack's scores of the same ``size`` selection outputs on a and on b, drawn in
    chunks (only the scores are kept)."""
    chunk = max(_CHUNK_VALUES // max(width, 1), 1)
    parts = [([], []) for _ in attacks]
    for j, start in enumerate(range(0, size, chunk)):
        m = min(chunk, size - start)
        out_a = _draw(spec, a, m, child_seed(seed, j, 0))
        out_b = _draw(spec, b, m, child_seed(seed, j, 1))
        for attack, (pa, pb) in zip(attacks, parts, strict=True):
            pa.append(attack.scores(out_a))
            pb.append(attack.scores(out_b))
    return [(np.concatenate(pa), np.concatenate(pb)) for pa, pb in parts]


def _evaluate(spec, cand: _Candidate, s: MechanismAuditSettings, root, checkpoint, progress):
    """Fresh samples in engine blocks: how many outputs of a and of a′ fall in the event."""
    path = None
    if checkpoint is not None:
        Path(checkpoint).mkdir(parents=True, exist_ok=True)
        path = Path(checkpoint) / f"{s.name}-{spec.name}-evaluation.npz"
    key = (f"{spec.name}|{cand.a.tolist()}|{cand.b.tolist()}|{cand.attack.describe()}|"
           f"{cand.attack.threshold!r}")  # fmt: skip
    run = run_blocks(EventCounts(spec.sample, cand.a, cand.b, cand.attack), s.samples,
                     rng=child_seed(root, 2), block_size=s.block_size, checkpoint=path, key=key,
                     progress=progress is True, description=f"sampling {spec.name}")  # fmt: skip
    count_a, count_b = (int(x) for x in run.counts)
    bound = epsilon_from_confusion(count_b, s.samples - count_b, count_a, s.samples - count_a,
                                   delta=s.delta, confidence_level=s.confidence_level)  # fmt: skip
    return bound, count_a, count_b


def _entry(spec, cand, bound: EpsDeltaAudit, witness, s: MechanismAuditSettings,
           npairs: int) -> AuditEntry:  # fmt: skip
    claims = (Claim("claimed", spec.source, spec.claimed_epsilon, s.delta),)
    exact = None
    if spec.true_epsilon is not None:
        exact = Claim("true epsilon (closed form)", spec.source, spec.true_epsilon, 0.0)
    n_pairs = "given pair" if s.pair_a else "StatDP input patterns"
    if not s.pair_a and spec.pairs:
        n_pairs += " and the mechanism's own pairs"
    if not s.pair_a and npairs < len(_pairs(s, spec)):
        n_pairs = f"{npairs} best of the {n_pairs} (ranked by an earlier stage, on its samples)"
    if 0 < s.screen_pairs < npairs and s.select_samples > s.screen_samples:
        n_pairs += (f" (screened on {min(s.train_samples, s.screen_samples)} training and "
                    f"{s.screen_samples} selection samples per input of their own; the best "
                    f"{s.screen_pairs} fitted and scored on the full sets)")  # fmt: skip
    if cand.attack.kind == "llr":
        score = "the mechanism's closed-form log-likelihood ratio (nothing fitted)"
    else:
        score = (f"{cand.attack.kind} score fitted on {s.train_samples} training samples per "
                 f"input")  # fmt: skip
    selections = (
        SelectionRecord("input pair", "split", f"best projected bound among the {n_pairs}, "
                        f"chosen on the selection samples; bounded on fresh samples only"),
        SelectionRecord("event", "split", f"{score}, threshold chosen on "
                        f"{s.select_samples} selection samples; bounded on {s.samples} fresh "
                        f"samples per input"),
    )  # fmt: skip
    note = spec.note
    if spec.published_lower is not None:
        note = f"{note}; DP-Sniper's published bound {spec.published_lower}".lstrip("; ")
    lower = LowerBound(
        "Clopper-Pearson on a fresh split (DP-Sniper event)", s.confidence_level, bound.epsilon,
        s.delta, interval=ConfidenceInterval(bound.epsilon, math.inf), note=note,
    )  # fmt: skip
    return AuditEntry(spec.name, f"dp-sniper-{cand.attack.kind}", lower, claims, exact,
                      selections, detail=witness)  # fmt: skip


def audit_mechanism(
    settings: MechanismAuditSettings,
    *,
    data: Any = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Audit one mechanism (module docstring): probe, search, evaluate, report — once at the
    sizes given, in stages of growing size chosen by the tool (``mode="auto"`` with no size
    given, the default), or as a stream (``mode="sequential"``).

    Args:
        settings: :class:`MechanismAuditSettings`.
        data: a :class:`~dpaudit.systems.MechanismSpec` or a plain callable
            ``mechanism(database, rng) -> output`` used instead of ``settings.mechanism``.
        progress: truthy for a progress bar over the evaluation's blocks.
        checkpoint: a directory; the evaluation's finished blocks are kept there and a rerun
            with the same settings resumes from them.

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"mechanism"``), one entry.

    Raises:
        TypeError: a mechanism whose output is not numeric, or changes width.
        ValueError: a mechanism that raises or returns NaN/inf (before any expensive work),
            a bad pair or claim.
    """
    spec = resolve_mechanism(settings, data)
    if settings.mode == "sequential":
        return audit_sequential(spec, settings)
    if settings.mode == "auto" and not settings.sized_by_user:
        return _audit_staged(spec, settings, progress, checkpoint)
    fixed = _fixed(settings, settings.sizes(), settings.confidence_level, settings.seed)
    return _audit_fixed(spec, fixed, progress, checkpoint, reported=settings)


def _fixed(settings, sizes, confidence_level: float, seed: int) -> MechanismAuditSettings:
    t, sel, n = sizes
    return dataclasses.replace(settings, mode="fixed", train_samples=t, select_samples=sel,
                               samples=n, confidence_level=confidence_level, seed=seed)  # fmt: skip


def _audit_fixed(spec, settings, progress, checkpoint, reported=None, pairs=None,
                 log=None) -> AuditResult:  # fmt: skip
    """One audit at the sizes of ``settings`` (all given), on ``pairs`` (default: all of
    :func:`_pairs`); ``log``: a :class:`_SearchLog` for the search."""
    t0 = time.perf_counter()
    root = np.random.SeedSequence(settings.seed)
    pairs = _pairs(settings, spec) if pairs is None else pairs
    width = _probe(spec, pairs, root)
    cand = _search(spec, pairs, settings, root, width, log)
    t1 = time.perf_counter()
    bound, count_a, count_b = _evaluate(spec, cand, settings, root, checkpoint, progress)
    t2 = time.perf_counter()
    witness = MechanismWitness(
        spec.name, tuple(cand.a.tolist()), tuple(cand.b.tolist()), cand.attack.describe(),
        cand.attack.kind, count_a, count_b, settings.samples, cand.projected, settings.seed,
        dataclasses.replace(cand.attack, features=None, llr=None),
    )  # fmt: skip
    entry = _entry(spec, cand, bound, witness, settings, len(pairs))
    return AuditResult(
        WORKFLOW, (entry,), reported or settings, settings.seed,
        {"search": t1 - t0, "evaluation": t2 - t1, "total": t2 - t0},
        package_versions(), detail=bound,
    )  # fmt: skip


def _audit_staged(spec, settings: MechanismAuditSettings, progress, checkpoint) -> AuditResult:
    """Stages of growing size, each an independent audit at ``1 − β/(max_stages + 1)`` on its
    own seed (``SeedSequence(seed).spawn``).

    Validity: every look's bound is a Clopper–Pearson bound on fresh samples of its own, and
    its pair and event are fixed by samples independent of them (its own training and
    selection samples, and what earlier looks showed, drawn from their own seeds). Each look's
    bound therefore holds at ``1 − β/(max_stages + 1)`` whatever the earlier ones showed, and
    the best of the looks run holds at ``1 − β`` by the union bound over the
    ``max_stages + 1`` looks fixed in advance (Bonferroni: one per stage, and the second
    look below), however many are run and whatever stopped them; the same argument as
    for a fixed audit's split (Bichsel et al. 2021, IEEE S&P; Lu et al. 2022,
    arXiv:2210.16049, on selecting the test on a held-out split).

    Plan: stage ``k`` uses :data:`AUTO_FIRST_SCALE` × :data:`STAGE_GROWTH` ``** k`` of the
    base sizes. Every pair is searched until a stage shows a bound above 0; from then on each
    stage audits only the pair of the best look so far (a stage's search among all pairs,
    made on its own selection samples, can favour a worse pair over the one an earlier stage
    found and a fresh audit confirmed: SVT1 and SVT2 at 80,000 samples). A search on few
    training samples misjudges the pairs whose score needs a richer fit (SVT3's good pairs
    rank last at 20,000), so if the pair was locked before any stage had ``screen_samples /
    2`` training samples per input, the first stage that has them also searches every pair,
    on samples of its own (the second look), and the better of its two looks decides the pair
    of the later stages. The stages stop when two in a row fail to raise the bound by 2 %,
    after ``max_stages``, or when the next look does not fit in what is left of the budgets,
    counted in samples, not seconds (:func:`_stage_cost`), so that a seed gives the same looks
    and the same bound on any machine."""
    t0, n_looks = time.perf_counter(), settings.max_stages + 1
    level = 1.0 - (1.0 - settings.confidence_level) / n_looks
    seeds = np.random.SeedSequence(settings.seed).spawn(n_looks)
    pairs = _pairs(settings, spec)
    width = _probe(spec, pairs, np.random.SeedSequence(settings.seed))
    stages, best, locked, rate, spent, stale = [], None, False, 0.0, [0, 0], 0
    all_pairs, searched_big = pairs, False

    def look(k, seed, sizes, in_play, cost, tag=""):
        nonlocal spent, rate
        sized = _fixed(settings, sizes, level, int(seed.generate_state(1)[0]))
        where = None if checkpoint is None else Path(checkpoint) / f"stage-{k}{tag}"
        log, start = _SearchLog(), time.perf_counter()
        res = _audit_fixed(spec, sized, progress, where, pairs=in_play, log=log)
        eps = res.entries[0].lower_bound.epsilon
        spent = [spent[0] + cost[0], spent[1] + log.fit_entries]
        rate = log.fit_entries / max(_stage_cost(spec, sized, len(in_play), 1, 1.0)[1], 1)
        stages.append({"stage": k, "sizes": sized.sizes(), "pairs": len(in_play),
                       "epsilon": eps, "seconds": time.perf_counter() - start,
                       "values": cost[0], "fit_entries": log.fit_entries})  # fmt: skip
        return res, eps

    for k in range(settings.max_stages):
        scale = STAGE_GROWTH**k * AUTO_FIRST_SCALE
        sizes = tuple(max(1, round(x * scale)) for x in settings.sizes())
        sized = _fixed(settings, sizes, level, 0)
        big = sized.train_samples >= settings.screen_samples // 2
        if locked:  # the pair of the best look so far
            pairs = (_witness_pair(best),)
        plan = _plan_stage(spec, sized, pairs, width, rate, spent)
        if plan is None and k:  # not even one pair fits in what is left of the budgets
            break
        res, eps = look(k, seeds[k], sizes, *(plan or (pairs, _stage_cost(spec, sized,
                        len(pairs), width, rate))))  # fmt: skip
        previous = best.entries[0].lower_bound.epsilon if best is not None else None
        if locked and big and not searched_big:  # the second look: every pair, searched on
            plan = _plan_stage(spec, sized, all_pairs, width, rate, spent)  # enough samples
            if plan:
                wide, eps_wide = look(k, seeds[-1], sizes, *plan, tag="-every-pair")
                res, eps = (wide, eps_wide) if eps_wide > eps else (res, eps)
        searched_big = searched_big or big
        locked = locked or eps > 0
        stale = 0 if previous is None or eps >= 1.02 * previous else stale + 1
        if best is None or eps > previous:
            best = res
        if stale >= 2:  # two stages in a row without a 2 % gain
            break
    return _staged_result(settings, best, stages, level, spent, t0)


def _witness_pair(result: AuditResult) -> tuple[np.ndarray, np.ndarray]:
    """The neighbouring pair an audit's bound came from."""
    w = result.entries[0].detail
    return np.asarray(w.database_a, float), np.asarray(w.database_b, float)


def _plan_stage(spec, s: MechanismAuditSettings, pairs, width, rate, spent):
    """The pairs the stage searches (every pair, or the one :func:`_audit_staged` locked) and
    its cost, or ``None`` when it does not fit in what is left of the budgets."""
    cost = _stage_cost(spec, s, len(pairs), width, rate)
    if spent[0] + cost[0] <= s.sample_budget and spent[1] + cost[1] <= s.fit_budget:
        return pairs, cost
    return None


def _stage_cost(spec, s: MechanismAuditSettings, npairs: int, width: int, rate: float):
    """A stage's cost counted in samples, before it runs: ``(values, fit entries)`` — the
    output values drawn per input (samples × output width: every searched pair's training
    and selection samples, screened as :func:`_search` does, and the fresh samples), and the
    training entries its logistic fits will take (``rate``, the entries per training sample
    and pair of the stage before, × pairs × training samples)."""
    t = 0 if _uses_llr(spec, s) else s.train_samples
    search, fitted = npairs * (t + s.select_samples), npairs * t
    if 0 < s.screen_pairs < npairs and s.select_samples > s.screen_samples:
        small = min(t, s.screen_samples)
        search = npairs * (small + s.screen_samples) + s.screen_pairs * (t + s.select_samples)
        fitted = npairs * small + s.screen_pairs * t
    return width * (search + s.samples), round(rate * fitted)


def _staged_result(settings, best: AuditResult, stages, level, spent, t0) -> AuditResult:
    entry = best.entries[0]
    used = best.settings
    looks = SelectionRecord(
        "sample sizes", "bonferroni",
        f"{len(stages)} looks in at most {settings.max_stages} stages of growing size (×"
        f"{STAGE_GROWTH} each, from {stages[0]['sizes']}), each a fresh audit at "
        f"{level:.4g}; every pair until a stage shows a bound, then the best pair so far, and "
        f"every pair again on the first stage with {settings.screen_samples // 2:,} training "
        f"samples (pairs per look: {[st['pairs'] for st in stages]}); "
        f"{spent[0]:,} output values and {spent[1]:,} fitted entries per input of the budgets "
        f"{settings.sample_budget:,} and {settings.fit_budget:,}; the best reported: sizes "
        f"{used.sizes()}",
    )  # fmt: skip
    lower = dataclasses.replace(
        entry.lower_bound, confidence_level=settings.confidence_level,
        method=f"{entry.lower_bound.method}, best of {len(stages)} looks (Bonferroni over "
        f"{settings.max_stages + 1})",
    )  # fmt: skip
    entry = dataclasses.replace(entry, lower_bound=lower,
                                selections=(*entry.selections, looks))  # fmt: skip
    timings = {"total": time.perf_counter() - t0, "stages": stages}
    return AuditResult(WORKFLOW, (entry,), settings, settings.seed, timings,
                       package_versions(), detail=best.detail)  # fmt: skip


def replay_witness(
    witness: MechanismWitness,
    *,
    samples: int = 100_000,
    rng: Any = None,
    mechanism: MechanismSpec | None = None,
    delta: float = 0.0,
    confidence_level: float = 0.95,
) -> EpsDeltaAudit:
    """Rerun a witness: new samples on its pair, the same event, a new bound.

    Args:
        witness: from an audit's entry (``entry.detail``).
        samples: fresh runs per input.
        rng: seed of the new samples.
        mechanism: the spec to run (default: the registered mechanism of that name).
        delta, confidence_level: of the new bound.

    Example:
        >>> s = MechanismAuditSettings(mechanism="svt5", train_samples=2000,
        ...                            select_samples=2000, samples=20_000)
        >>> w = audit_mechanism(s).entries[0].detail
        >>> replay_witness(w, samples=20_000, rng=1).epsilon > 1.0
        True
    """
    spec = mechanism if mechanism is not None else MECHANISMS.get(witness.mechanism)
    attack = dataclasses.replace(witness.model, features=spec.features)
    if attack.kind == "llr":
        attack = dataclasses.replace(attack, llr=spec.log_likelihood_ratio)
    a, b = np.asarray(witness.database_a), np.asarray(witness.database_b)
    counter = EventCounts(spec.sample, a, b, attack)
    count_a, count_b = counter(samples, np.random.SeedSequence(rng))
    return epsilon_from_confusion(int(count_b), samples - int(count_b), int(count_a),
                                  samples - int(count_a), delta=delta,
                                  confidence_level=confidence_level)  # fmt: skip
