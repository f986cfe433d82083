"""The mechanism audit's sequential mode (``mode="sequential"``): an anytime-valid test of
the claim that stops at its rejection.

González, Dulce-Rubio, Ramdas & Ribero 2025 ("Sequentially Auditing Differential Privacy",
arXiv:2509.07055) test a DP claim by betting on paired outputs ``(M(a′), M(a))`` through an
event chosen from the past; :class:`dpaudit.bounds.DPClaimEProcess` holds the bets (aGRAPA,
Waudby-Smith & Ramdas 2023, arXiv:2010.09686) and the ε confidence sequence.

**Inputs, not pairs, are sampled.** The candidate pairs (StatDP's patterns in both orders,
:func:`~dpaudit.experiments.mechanism.pipeline._pairs`) share their inputs (16 ordered pairs
of 10 inputs for SVT-style mechanisms), and the two orders of a pair are one test: the event
``S`` for ``a′`` or its complement for ``a`` (the two sides of the DP inequality). So every
output drawn is kept in a pool per *input*, and each unordered pair is judged on its two
inputs' pools.

**Everything is chosen predictably.** A pilot of :data:`PILOT` outputs per input fills the
pools. Then the stream runs in epochs, each as long as the chosen pair's smaller pool (at
least :data:`FIRST_EPOCH` pairs), so that it doubles that pool: an epoch that only explores
costs what the pair has had so far, not a length doubling with every epoch whatever pair it
explores — and only :data:`EXPLORE_EPOCH` of it when the epoch does not bet (no event is
credible yet), so that the choice is revisited after every quarter-growth of the pool: a
pool stops growing soon after its event turns credible (by a quarter, not a doubling, past
that point), and a pair that loses later has cost less. Before each epoch the pair, the
score (the fixed audit's attacks: logistic regression with and without median indicators —
without them when every output column takes two values, where they would repeat the
columns —, and with one indicator per value of each
column that takes few (:data:`LEVELS`), exact counts, or the closed-form log-likelihood
ratio; :func:`~dpaudit.experiments.mechanism.pipeline._attacks`), the
threshold and the side are chosen from the pools alone — all drawn before the epoch: the
pilot and the earlier epochs' streamed outputs, which join their inputs' pools — the first
half of each pool (at most its first :data:`FIT_ROWS` outputs, and at most
:data:`FIT_PER_COLUMN` per output column: a score on few columns needs few rows, and the rest
then choose and estimate the event) fitting the scores, refitted
only once those rows have grown :data:`REFIT` times; those rows and the first half of the
rest choosing among them the one whose bet grows fastest (:func:`growth_event`; the score's
own training rows may choose its threshold too — the choice's bias, theirs included, is what
the fresh estimate corrects — so the choice sees three quarters of the pool, not one), the
second half, untouched by the fit and the choice, estimating the chosen event's drift
afresh: the epoch bets only if
that estimate, less :data:`PENALTY` standard errors, is positive (``_Choice.credible``), and
otherwise only adds to the pools; when no event beats its noise anywhere, the epoch explores
the pair whose unpenalised growth is best (among pairs that tie — none shows any violation —
the least explored: the one whose smaller pool is smallest, so that an exploring epoch is
never stuck on the first pair listed). The witness bet on is the event, or a *ramp*
``clip((score − t)/w, 0, 1)`` between two of the event search's thresholds when its
estimated growth is larger, if :data:`RAMPS` is set (:mod:`._ramps`: any witness with
values in [0, 1] is valid, and on the exact output laws the best ramp needs 1.04–1.79× fewer
pairs than the best event; in the audit, where finding the pair and event and learning the
bet cost 7–10× the oracle's pairs, ramps saved 5 ± 5 % of the samples for a fifth more CPU,
so they are off), judged, estimated afresh and seeded the same way. A pair is judged on
all of its smaller pool and at most :data:`BALANCE` times as many outputs of its larger one
(the first drawn): SVT's and report noisy max's base input is in 7 of their 8 pairs, and its
pool grows with every epoch, while the variance of a drift estimate, ``v⁺/n⁺ +
e^{2ε}v⁻/n⁻``, is set mostly by the smaller side (for similar ``v``, the whole larger pool
would cut it by at most a factor ``1 + e^{2ε}/BALANCE``); the rest would only cost time. The
test bets only on the epoch's new pairs, its aGRAPA bets restarted for the new event (the
wealth kept; :meth:`DPClaimEProcess.restart_bets`), seeded with the event's fresh rates as
:data:`SEED_WEIGHT` × as many pseudo-observations as they were estimated on, the drift they
imply lowered by :data:`SEED_PENALTY` standard errors (an event that barely beat its noise
starts from a cautious bet); under the claim each of its observations has conditional mean ≤
0 whatever was chosen from the past, so the product of the bets is a test supermartingale
(Ville's inequality: the rejection and the confidence sequence hold at any stopping time,
with no correction for the choices). While a pool is short of the chosen pair's, the inputs
of the :data:`RUNNERS_UP` best other pairs get exploration draws (never bet on) so that a
better pair can overtake.

Samples are counted as the fixed audit counts them: output draws per input (all draws /2),
the pilot and the exploration included.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    ConfidenceInterval,
    LowerBound,
    SelectionRecord,
    package_versions,
)
from dpaudit._rng import child_seed
from dpaudit.attacks import MechanismAttack, fit_mechanism_attack, output_features
from dpaudit.bounds import DPClaimEProcess
from dpaudit.experiments.mechanism._inputs import (
    _FIT_ENTRIES,
    WORKFLOW,
    _attacks,
    _draw,
    _fit,
    _pairs,
    _probe,
    _uses_llr,
)
from dpaudit.experiments.mechanism._ramps import best_ramp, fresh_moments, ramp_growth, ramp_values
from dpaudit.experiments.mechanism.settings import SEQUENTIAL_BUDGET

__all__ = [
    "EXPLORE_EPOCH",
    "FIRST_EPOCH",
    "PILOT",
    "audit_sequential",
    "growth_event",
    "input_pools",
]

PILOT = 200  # outputs per input of the pilot (half fit the scores, half choose)
FIRST_EPOCH = 128  # fewest pairs of an epoch (otherwise the chosen pair's smaller pool)
EXPLORE_EPOCH = 0.25  # an epoch that does not bet: this fraction of the pair's smaller pool
LOOK = 32  # pairs between two looks (the test may look after each)
FIT_ROWS = 20_000  # most outputs per input a logistic fit trains on (the first drawn)
FIT_PER_COLUMN = 4_000  # ... and at most this many per output column
EXPLORE = 0.25  # runner-up inputs' pools are kept to ≥ this fraction of the chosen pair's
RUNNERS_UP = 2  # pairs besides the chosen one whose inputs get exploration draws
MIN_EVENTS = 4  # outputs needed in (and out of) an event for its rates to be judged
PENALTY = 1.0  # standard errors taken off an estimated drift (growth_event)
BALANCE = 8  # a pair is judged on at most this many times its smaller pool from the larger
SEED_WEIGHT = 0.25  # an epoch's bets start from its event's fresh estimate, weighted this
# fraction of the outputs it was estimated on (pseudo-observations: DPClaimEProcess.restart_bets)
SEED_PENALTY = 1.0  # standard errors taken off the drift of the rates an epoch's bets start from
LEVELS = 16  # an output column with 3 to this many distinct values is also one-hot encoded
REFIT = 2.0  # a pair's scores are refitted once its training rows have grown this much
#: bet on ramps clip((score − t)/w, 0, 1) too, not only on events (_ramps). Off: over 300
#: audits (the five closest mechanisms, seeds 0–59) they saved 5 ± 5 % of the samples and
#: cost about a fifth more CPU (the ramp search), so the event alone stays the audit.
RAMPS = False


@dataclasses.dataclass
class _Choice:
    pair: int
    attack: MechanismAttack
    forward: bool
    growth: float
    credible: bool
    fresh: tuple  # (p⁺, p⁻, n⁺, n⁻[, q⁺, q⁻]) of the witness on outputs the choice did not use
    high: float | None = None  # a ramp from attack.threshold up to this score; None: an event


def input_pools(pairs) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """The distinct inputs of ``pairs`` and the unordered pairs among them (by index), in
    the order the pairs first name them; a pair and its reverse are one test (two sides).

    Example:
        >>> a, b, c = np.zeros(2), np.ones(2), np.full(2, 2.0)
        >>> inputs, upairs = input_pools([(a, b), (b, a), (a, c)])
        >>> len(inputs), upairs
        (3, [(0, 1), (0, 2)])
    """
    inputs, index, upairs = [], {}, []
    for a, b in pairs:
        ends = []
        for db in (a, b):
            key = np.asarray(db, float).tobytes()
            if key not in index:
                index[key] = len(inputs)
                inputs.append(np.asarray(db, float))
            ends.append(index[key])
        pair = tuple(ends)
        if pair not in upairs and pair[::-1] not in upairs:
            upairs.append(pair)
    return inputs, upairs


def growth_event(
    attack: MechanismAttack,
    out_a,
    out_b,
    claimed_epsilon: float,
    delta: float,
    penalty: float = 1.0,
):
    """The threshold and side whose bet on the claim grows fastest, judged on outputs the
    test will not bet on (the first half of ``out_a`` and ``out_b``), and that event's rates
    estimated afresh on the second half. For ``S = {score ≥ t}`` (or its complement with the
    roles of the inputs swapped: the two sides of the DP inequality) the criterion is the
    drift ``m = p⁺ − e^ε p⁻ − δ`` of the claim's statistic, less ``penalty`` standard errors
    of its estimate (a lucky threshold on few outputs is not preferred), over the
    statistic's variance: ``max(m − penalty·se, 0)²/v``, the growth rate of the log-wealth
    of a bet near Kelly's (Waudby-Smith & Ramdas 2023, arXiv:2010.09686, §B.3). Candidates:
    256 quantiles of the pooled scores; rates shrunk as :func:`_rates` does.

    Events only; the audit also weighs ramps on the same thresholds (:func:`_split_event`).

    Returns:
        ``(attack with its threshold, forward, growth, fresh)``: ``growth`` judged on the
        first half, ``fresh = (p⁺, p⁻, n⁺, n⁻)`` on the second (unbiased for the event
        chosen).
    """
    score_a, score_b = attack.scores(out_a), attack.scores(out_b)
    ha, hb = score_a.size // 2, score_b.size // 2
    return _split_event(attack, score_a[:ha], score_b[:hb], score_a[ha:], score_b[hb:],
                        claimed_epsilon, delta, penalty, ramps=False)[:4]  # fmt: skip


def _split_event(attack, choose_a, choose_b, fresh_a, fresh_b, claimed_epsilon: float,
                 delta: float, penalty: float, ramps: bool = True):  # fmt: skip
    """The event of :func:`growth_event` chosen on the scores ``choose_a``, ``choose_b`` and
    its rates estimated on ``fresh_a``, ``fresh_b`` (scores the choice did not see); with
    ``ramps`` (and :data:`RAMPS`), the ramp of :func:`~._ramps.best_ramp` on the same
    thresholds instead when its growth is larger. Returns :func:`growth_event`'s tuple and
    the ramp's upper end (None: the event), ``fresh`` then ``(p⁺, p⁻, n⁺, n⁻, q⁺, q⁻)``."""
    sa, sb = np.sort(choose_a), np.sort(choose_b)
    both = np.sort(np.concatenate([sa, sb]), kind="stable")  # a merge of two sorted runs
    ts = np.unique(_sorted_quantiles(both, _LEVELS))
    f = math.exp(claimed_epsilon)
    best = None
    for forward in (True, False):
        growth = _growth(*_rates(sa, sb, ts, forward), f, delta, penalty)
        i = int(np.argmax(growth))
        if best is None or growth[i] > best[0]:
            best = (float(growth[i]), i, forward)
    growth, i, forward = best
    ramp = best_ramp(sa, sb, ts, claimed_epsilon, delta, penalty) if ramps and RAMPS else None
    if ramp is not None and ramp[0] > growth:
        growth, low, high, forward = ramp
        fresh = fresh_moments(fresh_a, fresh_b, low, high, forward)
        return dataclasses.replace(attack, threshold=low), forward, growth, fresh, high
    t = ts[i]  # one threshold: the fresh outputs are counted, not sorted
    ka, kb = (np.array([x.size - np.count_nonzero(x < t)]) for x in (fresh_a, fresh_b))
    fresh = _shrunk(ka, fresh_a.size, kb, fresh_b.size, forward)
    fresh = tuple(float(np.atleast_1d(x)[0]) for x in fresh)
    return dataclasses.replace(attack, threshold=float(t)), forward, growth, fresh, None


_LEVELS = np.linspace(0.0, 1.0, 257)  # the quantiles whose scores are the candidate thresholds


def _sorted_quantiles(v: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``np.quantile(v, q)`` (its default, linear method: Hyndman & Fan's seventh) of an
    already sorted ``v``, by numpy's own arithmetic — the same bits — without the partial
    sort of a copy that ``np.quantile`` makes (on long pools the event search's largest
    cost; tested against ``np.quantile``)."""
    n = v.size
    if np.isnan(v[-1]):  # NaN sorts last; numpy's quantiles of such a slice are NaN
        return np.full(q.shape, np.nan)
    virtual = (n - 1) * q
    prev, nxt = np.floor(virtual), np.floor(virtual) + 1
    prev[virtual >= n - 1], nxt[virtual >= n - 1] = -1, -1
    prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
    gamma = virtual - prev
    a, b = v[prev], v[nxt]
    diff = b - a
    out = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def _rates(sa, sb, ts, forward: bool):
    """``(p⁺, p⁻, n⁺, n⁻)`` per threshold: the rates of the side's positive and negative
    outputs (sorted scores of a and of b), each shrunk by two pseudo-outputs at the pooled
    rate ``p₀ = (k⁺ + k⁻ + 1)/(n⁺ + n⁻ + 2)``: ``(k + 2p₀)/(n + 2)``, so that an event no
    output fell in is not taken for one of probability 0 with no variance, and two inputs
    with few outputs in the event, or none, show no difference."""
    ka = sa.size - np.searchsorted(sa, ts, side="left")  # outputs of a with score ≥ t
    kb = sb.size - np.searchsorted(sb, ts, side="left")
    return _shrunk(ka, sa.size, kb, sb.size, forward)


def _shrunk(ka, na: int, kb, nb: int, forward: bool):
    """:func:`_rates` from the counts ``ka``, ``kb`` of the outputs of a and b with score
    ≥ t (of ``na``, ``nb``)."""
    if not forward:
        ka, kb = na - ka, nb - kb
    kpos, npos, kneg, nneg = (kb, nb, ka, na) if forward else (ka, na, kb, nb)
    pooled = (kpos + kneg + 1) / (npos + nneg + 2)
    ppos, pneg = (kpos + 2 * pooled) / (npos + 2), (kneg + 2 * pooled) / (nneg + 2)
    rare = (kpos + kneg < MIN_EVENTS) | (npos + nneg - kpos - kneg < MIN_EVENTS)
    return np.where(rare, pooled, ppos), np.where(rare, pooled, pneg), npos, nneg


def _growth(pos, neg, npos, nneg, f: float, delta: float, penalty: float):
    """``max(m − penalty·se, 0)²/v`` for the drift ``m = p⁺ − f p⁻ − δ``."""
    var_pos, var_neg = pos * (1.0 - pos), f * f * neg * (1.0 - neg)
    drift = pos - f * neg - delta - penalty * np.sqrt(var_pos / npos + var_neg / nneg)
    return np.where(drift > 0, drift * drift / (var_pos + var_neg + 1e-12), 0.0)


def _fresh_growth(fresh: tuple, f: float, delta: float):
    """:func:`_growth` of a choice's fresh estimate less :data:`PENALTY` standard errors
    (an event's rates, or a ramp's means and second moments: :func:`~._ramps.ramp_growth`)."""
    if len(fresh) == 4:
        return _growth(*fresh, f, delta, PENALTY)
    p_pos, p_neg, n_pos, n_neg, q_pos, q_neg = fresh
    return ramp_growth(p_pos, p_neg, n_pos, n_neg, q_pos, q_neg, f, delta, PENALTY)


@dataclasses.dataclass
class _Fitted:
    """What :func:`_choose` keeps of one pair across the epochs of an audit: its scores, the
    training rows they were fitted on, their values on the pools' rows (from the first,
    extended as the pools grow) and the events of the current rows."""

    rows: tuple[int, int] | None = None
    attacks: list | None = None
    fit: int = 0
    values: list = dataclasses.field(default_factory=list)
    events: dict = dataclasses.field(default_factory=dict)


def _choose(spec, s, inputs, upairs, pools, penalty: float, cache=None):
    """The pair, score, threshold and side of the next epoch, from the pools only (drawn
    before it): each pair's scores fitted on the first half of its inputs' pools (at most
    the first :data:`FIT_ROWS` outputs, :func:`_fit_rows`), those rows and half the rest
    choosing by :func:`growth_event`; whether to bet on the choice is judged on the other
    half of the rest, which neither the fit nor the choice saw (``_Choice.credible``).
    Returns the choice and every pair's best growth, best first.

    Each pair is judged on the outputs :func:`_balanced` gives it (the first ones of each
    pool). ``cache`` (a dict kept across the calls of one audit, :class:`_Fitted` per pair)
    keeps each pair's events while those outputs are the same (pools only grow, at their
    end), and its fitted scores until a refit would train on :data:`REFIT` times as many
    rows (the rows they were fitted on stay in the first part of the pools, so the events
    are still estimated on outputs they were not fitted on; once both inputs have
    :data:`FIT_ROWS` they are never refitted), with their values on every output scored
    so far: the same numbers, not computed again. The ranking puts ties (pairs with no
    growth) least explored first; the choice is its head."""
    cache = {} if cache is None else cache
    best, ranking, whole = [], [], {}
    f = math.exp(spec.claimed_epsilon)
    for k, (i, j) in enumerate(upairs):
        rows = _balanced(_size(pools[i]), _size(pools[j]))
        c = cache.setdefault(k, _Fitted())
        if c.rows != rows:  # new outputs: new events; new scores once REFIT× the rows
            c.rows, c.events = rows, {}
            if _fit_rows(rows[0], _width(pools[i])) + _fit_rows(rows[1], _width(pools[j])) >= (
                REFIT * c.fit
            ):
                c.attacks = None
        if penalty not in c.events:
            for d in (i, j):
                if d not in whole:
                    whole[d] = np.concatenate(pools[d])
            c.events[penalty] = _pair_events(spec, s, inputs, (i, j), whole, c, penalty)
        pair_best = None
        for att, forward, growth, fresh, high in c.events[penalty]:
            if pair_best is None or growth > pair_best.growth:
                credible = float(_fresh_growth(fresh, f, s.delta)) > 0
                pair_best = _Choice(k, att, forward, growth, credible, fresh, high)
        ranking.append((pair_best.growth, min(rows), k))
        best.append(pair_best)
    ranking.sort(key=lambda r: (-r[0], r[1], r[2]))  # ties (no growth): least explored first
    return best[ranking[0][2]], [(g, k) for g, _, k in ranking]


def _pair_events(spec, s, inputs, pair, whole, c: _Fitted, penalty: float) -> list:
    """:func:`_split_event` of each of a pair's scores on its current rows, fitting the
    scores first if ``c`` has none, and scoring only the outputs not scored before. Each
    input's rows up to its fitting rows (:func:`_fit_rows`) and half of the rest choose the
    event; the other half of the rest, which neither the fit nor the choice saw, estimates
    its rates (``_Choice.fresh``)."""
    (i, j), rows = pair, c.rows
    fit = (_fit_rows(rows[0], whole[i].shape[1]), _fit_rows(rows[1], whole[j].shape[1]))
    if c.attacks is None:
        c.attacks = _scores(spec, s, inputs[i], inputs[j], whole[i][: fit[0]], whole[j][: fit[1]])
        c.fit = sum(fit)
        c.values = [[np.empty(0), np.empty(0)] for _ in c.attacks]
    cut = [h + (n - h) // 2 for h, n in zip(fit, rows, strict=True)]
    events = []
    for attack, values in zip(c.attacks, c.values, strict=True):
        for side, d in enumerate(pair):
            if rows[side] > values[side].size:
                new = attack.scores(whole[d][values[side].size : rows[side]])
                values[side] = np.concatenate([values[side], new])
        (va, vb), (ka, kb) = values, cut
        events.append(_split_event(attack, va[:ka], vb[:kb], va[ka : rows[0]], vb[kb : rows[1]],
                                   spec.claimed_epsilon, s.delta, penalty))  # fmt: skip
    return events


def _scores(spec, s, a, b, train_a, train_b):
    """The candidate scores of a pair (:func:`~dpaudit.experiments.mechanism._inputs._attacks`),
    without the median-indicator variant when every output column takes at most two values
    in training: its indicators ``1{x > median}`` are then constant or the columns themselves,
    the same linear score fitted twice. When the scores are logistic and an output column
    takes 3 to :data:`LEVELS` distinct values in training (a count or an index: iSVT4's
    number of "below" answers), one more logistic score with one indicator per value of each
    such column (:class:`_OneHot`): a linear score is monotone in the column and cannot
    single out a middle range of it (iSVT4's inputs differ most at 5 and 6 answers below,
    not at 10); the median-indicator variant splits it only once."""
    both = np.vstack([train_a, train_b])
    two = np.all((both == both.min(axis=0)) | (both == both.max(axis=0)))
    if _uses_llr(spec, s) or spec.features is not None or not two:
        attacks = _attacks(spec, s, a, b, train_a, train_b)
    else:
        attacks = [_fit(spec, train_a, train_b, s, indicators=False)]
    levels = tuple((c, tuple(v.tolist())) for c in range(both.shape[1])
                   if 2 < (v := np.unique(both[:, c])).size <= LEVELS)  # fmt: skip
    if levels and attacks[0].kind == "logistic" and spec.features is None:
        hot = _OneHot(tuple(spec.flags), levels)
        attacks.append(fit_mechanism_attack(train_a, train_b, kind="logistic", flags=spec.flags,
                                            features=hot, max_outputs=s.max_outputs,
                                            max_entries=_FIT_ENTRIES))  # fmt: skip
    return attacks


@dataclasses.dataclass(frozen=True)
class _OneHot:
    """DP-Sniper's features (:func:`~dpaudit.attacks.output_features`) followed by one
    indicator per value of each listed column: ``levels = ((column, values), ...)``."""

    flags: tuple
    levels: tuple

    def __call__(self, outputs):
        fx = output_features(outputs, self.flags)
        outputs = np.asarray(outputs, dtype=float)
        hot = [(outputs[:, [c]] == np.asarray(v)[None, :]).astype(float) for c, v in self.levels]
        return np.hstack([fx, *hot])


def _fit_rows(n: int, width: int) -> int:
    """The outputs of a pool of ``n`` (of ``width`` columns) that fit the scores: the first
    half, at most :data:`FIT_ROWS` and :data:`FIT_PER_COLUMN` per column; they and half the
    rest choose the event, the other half estimates it afresh. A score fitted on one or two
    columns (report noisy max's value; iSVT4's flag and value) is about as good on a few
    thousand outputs as on 20,000, and the rest then pin its threshold down
    (docs/workflows/mechanism.md: samples to rejection)."""
    return min(n // 2, FIT_ROWS, FIT_PER_COLUMN * width)


def _width(pool) -> int:
    return pool[0].shape[1]


def _balanced(na: int, nb: int) -> tuple[int, int]:
    """The outputs of each pool a pair is judged on: all of the smaller pool's, at most
    :data:`BALANCE` times as many of the larger's (the first drawn)."""
    most = BALANCE * min(na, nb)
    return min(na, most), min(nb, most)


def _explore(spec, inputs, upairs, pools, choice, ranking, root, epoch, room: int) -> int:
    """Exploration draws (never bet on): the inputs of the :data:`RUNNERS_UP` best other
    pairs get their pools topped up to :data:`EXPLORE` of the chosen pair's smaller pool,
    at most ``room`` outputs in all. Returns the outputs drawn."""
    ci, cj = upairs[choice.pair]
    target = int(EXPLORE * min(_size(pools[ci]), _size(pools[cj])))
    others = [k for _, k in ranking if k != choice.pair][:RUNNERS_UP]
    drawn = 0
    for d in sorted({d for k in others for d in upairs[k]}):
        need = min(target - _size(pools[d]), room - drawn)
        if need > 0:
            pools[d].append(_draw(spec, inputs[d], need, child_seed(root, 8, epoch, d)))
            drawn += need
    return drawn


def _size(pool) -> int:
    return sum(x.shape[0] for x in pool)


def audit_sequential(spec, settings) -> AuditResult:
    """Stream pairs of outputs through an anytime-valid test of the claim (module docstring).
    The stream stops at the claim's rejection or when ``settings.samples`` output draws per
    input (default :data:`SEQUENTIAL_BUDGET`; pilot and exploration included) are spent."""
    t0 = time.perf_counter()
    pilot = _pilot_size(settings)
    budget = settings.samples or SEQUENTIAL_BUDGET
    root = np.random.SeedSequence(settings.seed)
    pairs = _pairs(settings, spec)
    _probe(spec, pairs, root)
    inputs, upairs = input_pools(pairs)
    pools = [[_draw(spec, db, pilot, child_seed(root, 7, d))] for d, db in enumerate(inputs)]
    drawn = pilot * len(inputs)
    process = _ClaimBets(spec.claimed_epsilon, settings.delta, settings.confidence_level)
    state, epoch, history, used = process.result(), 0, [], drawn / 2
    fitted: dict = {}  # each pair's scores and events while its pools are unchanged
    while not state.rejects_claim:
        left = int(budget - drawn / 2)
        if left <= 0:
            break
        choice, ranking = _choose(spec, settings, inputs, upairs, pools, PENALTY, fitted)
        if choice.growth <= 0:  # no event beats its noise: explore the likeliest, unpenalised
            choice, ranking = _choose(spec, settings, inputs, upairs, pools, 0.0, fitted)
        bet = choice.credible  # if not, the epoch only explores the most promising pair
        i, j = upairs[choice.pair]
        grow = 1.0 if bet else EXPLORE_EPOCH  # a betting epoch doubles the pair's pool
        size = min(max(FIRST_EPOCH, int(grow * min(_size(pools[i]), _size(pools[j])))), left)
        out_a = _draw(spec, inputs[i], size, child_seed(root, 6, epoch, 0))
        out_b = _draw(spec, inputs[j], size, child_seed(root, 6, epoch, 1))
        seen = state.observations
        if bet:
            state = _bet(process, choice, out_a, out_b)
        used = drawn / 2 + (state.rejected_at or state.observations) - seen
        drawn += 2 * size
        history.append({"pair": [inputs[i].tolist(), inputs[j].tolist()], "pairs": size,
                        "event": choice.attack.describe(), "forward": choice.forward,
                        "growth": choice.growth, "bet": bet, "ramp_to": choice.high,
                        "log_e_value": state.log_e_value})  # fmt: skip
        pools[i].append(out_a)
        pools[j].append(out_b)
        if not state.rejects_claim:
            room = int(2 * budget - drawn)
            drawn += _explore(spec, inputs, upairs, pools, choice, ranking, root, epoch, room)
            used = drawn / 2
        epoch += 1
    state = process.confidence_sequence()
    return _result(spec, settings, state, pilot, used, history, t0)


def _pilot_size(settings) -> int:
    given = [x for x in (settings.train_samples, settings.select_samples) if x is not None]
    return sum(given) if given else PILOT


def _bet(process: _ClaimBets, choice: _Choice, out_a, out_b):
    """Bet on one epoch's pairs, looking every :data:`LOOK`, until the claim's rejection. The
    bets restart (the wealth kept) seeded with :data:`SEED_WEIGHT` × the outputs the event's
    rates were estimated on, at those rates (``_Choice.fresh``: outputs of the pools the
    choice did not use, all drawn before the epoch, so the bets stay predictable), their
    drift lowered by :data:`SEED_PENALTY` standard errors (:func:`_cautious`): aGRAPA then
    starts near the bet the estimate calls for instead of learning it afresh, at a cost each
    time the event changes. A ramp (``choice.high``) bets on its values in [0, 1], its bets
    seeded with its fresh means and second moments, the positive side's second moment
    lowered in proportion to its mean."""
    if choice.high is not None:
        return _bet_ramp(process, choice, out_a, out_b)
    in_a, in_b = choice.attack.contains(out_a), choice.attack.contains(out_b)
    pos, neg = (in_b, in_a) if choice.forward else (~in_a, ~in_b)
    p_pos, p_neg, n_pos, n_neg = choice.fresh  # a new event: its bets restart from its rates
    p_pos = _cautious(p_pos, p_neg, n_pos, n_neg, process.claimed_epsilon, process.delta)
    process.restart_bets(p_pos, p_neg, SEED_WEIGHT * min(n_pos, n_neg))  # on the pools
    return process.update_until_rejected(pos, neg, look=LOOK)


def _bet_ramp(process: _ClaimBets, choice: _Choice, out_a, out_b):
    """:func:`_bet` on a ramp witness: ``h`` of a′'s outputs against ``h`` of a's forward,
    ``1 − h`` of a's against ``1 − h`` of a′'s backward (:func:`~._ramps.ramp_values`)."""
    low, high, fwd = choice.attack.threshold, choice.high, choice.forward
    h_a = ramp_values(choice.attack.scores(out_a), low, high, fwd)
    h_b = ramp_values(choice.attack.scores(out_b), low, high, fwd)
    pos, neg = (h_b, h_a) if fwd else (h_a, h_b)
    p_pos, p_neg, n_pos, n_neg, q_pos, q_neg = choice.fresh
    var = (max(q_pos - p_pos * p_pos, 0.0), max(q_neg - p_neg * p_neg, 0.0))
    low_pos = _cautious(p_pos, p_neg, n_pos, n_neg, process.claimed_epsilon, process.delta, var)
    q_pos = min(max(q_pos * low_pos / p_pos if p_pos > 0 else q_pos, low_pos**2), low_pos)
    process.restart_bets(low_pos, p_neg, SEED_WEIGHT * min(n_pos, n_neg), q_pos, q_neg)
    return process.update_until_rejected(pos, neg, look=LOOK)


class _ClaimBets:
    """The audit's :class:`DPClaimEProcess`, streamed on the claim's own e-process (the
    claim and the grid point just above it) while the audit runs, and its ε confidence
    sequence computed once, at the end, by feeding the same bets to the grid's columns.

    Each column of the grid bets on its own statistic with its own sums, so a column's wealth
    is the same number whichever other columns are updated beside it: the stream's rejection
    and e-value are the full process's, and so is the bound, read off a prefix of the grid
    long enough to hold the first column not rejected (doubled until it does). Streaming
    every column cost a quarter of an SVT6 audit's time; the prefix is usually the grid below
    the claim. Tested against the full process on the same bets."""

    def __init__(self, claimed_epsilon: float, delta: float, confidence_level: float):
        self.args = (claimed_epsilon, delta, confidence_level)
        self.grid = DPClaimEProcess(claimed_epsilon, delta).epsilons
        self.claim = DPClaimEProcess(claimed_epsilon, delta, epsilons=[claimed_epsilon],
                                     confidence_level=confidence_level)  # fmt: skip
        self.record: list = []  # (restart_bets' arguments, the pairs fed) in time order

    @property
    def claimed_epsilon(self) -> float:
        return self.claim.claimed_epsilon

    @property
    def delta(self) -> float:
        return self.claim.delta

    def result(self):
        return self.claim.result()

    def restart_bets(self, p_pos: float, p_neg: float, weight: float,
                     q_pos: float | None = None, q_neg: float | None = None) -> None:  # fmt: skip
        seed = (p_pos, p_neg, weight) if q_pos is None else (p_pos, p_neg, weight, q_pos, q_neg)
        self.claim.restart_bets(*seed)
        self.record.append([seed, [], []])

    def update_until_rejected(self, pos, neg, *, look: int):
        seen = self.claim.observations
        state = self.claim.update_until_rejected(pos, neg, look=look)
        fed = state.observations - seen
        self.record[-1][1].append(np.asarray(pos[:fed]))
        self.record[-1][2].append(np.asarray(neg[:fed]))
        return state

    def confidence_sequence(self):
        """The full process's state after the recorded bets (its bound, its grid's top)."""
        claimed, delta, level = self.args
        top = int(np.searchsorted(self.grid, self.claim.epsilons[-1])) + 1  # past "above"
        k = min(self.grid.size, max(2 * top, 16))
        while True:
            e = DPClaimEProcess(claimed, delta, epsilons=self.grid[:k], confidence_level=level)
            for seed, pos, neg in self.record:
                e.restart_bets(*seed)
                if pos:
                    e.update(np.concatenate(pos), np.concatenate(neg))
            state = e.result()
            if k == self.grid.size or state.epsilon < self.grid[k - 1]:
                return dataclasses.replace(state, grid_top=float(self.grid[-1]))
            k = min(self.grid.size, 2 * k)


def _cautious(p_pos: float, p_neg: float, n_pos: float, n_neg: float, epsilon: float,
              delta: float, variances: tuple | None = None) -> float:  # fmt: skip
    """``p⁺`` lowered so that the drift ``p⁺ − e^ε p⁻ − δ`` of the rates a restart seeds the
    bets with is the estimate's less :data:`SEED_PENALTY` standard errors (not below 0):
    aGRAPA's first bets are then sized for what the estimate shows beyond its noise. A
    function of the pools only, so the bets stay predictable. ``variances``: those of the
    witness on the two sides (a ramp's); default ``p(1 − p)`` (an event's)."""
    if min(n_pos, n_neg) <= 0:
        return p_pos
    f = math.exp(epsilon)
    if variances is None:
        se = math.sqrt(p_pos * (1 - p_pos) / n_pos + f * f * p_neg * (1 - p_neg) / n_neg)
    else:
        se = math.sqrt(variances[0] / n_pos + f * f * variances[1] / n_neg)
    drift = max(p_pos - f * p_neg - delta - SEED_PENALTY * se, 0.0)
    return min(f * p_neg + delta + drift, 1.0)


def _result(spec, settings, state, pilot, used, history, t0) -> AuditResult:
    claims = (Claim("claimed", spec.source, spec.claimed_epsilon, settings.delta),)
    exact = None
    if spec.true_epsilon is not None:
        exact = Claim("true epsilon (closed form)", spec.source, spec.true_epsilon, 0.0)
    lower = LowerBound(
        "anytime-valid confidence sequence (test supermartingales by betting, "
        f"{state.strategy})", settings.confidence_level, state.epsilon, settings.delta,
        interval=ConfidenceInterval(state.epsilon, math.inf),
        note=(f"claim rejected after {state.rejected_at} streamed pairs" if state.rejects_claim
              else f"claim not rejected in {state.observations} streamed pairs")
        + f" ({used:,.0f} samples per input in all, a pilot of {pilot} per input included)",
    )  # fmt: skip
    selections = (
        SelectionRecord("input pair", "predictable", "re-chosen before each epoch from the "
                        "outputs drawn before it (pilot, exploration, earlier epochs)"),
        SelectionRecord("event", "predictable", "score, threshold and side re-chosen before "
                        "each epoch from the earlier outputs only; the test bets on later pairs"),
        SelectionRecord("stopping time", "anytime-valid", "Ville's inequality: the bound and "
                        "the test hold at any stopping time"),
    )  # fmt: skip
    entry = AuditEntry(spec.name, "sequential", lower, claims, exact, selections, detail=state)
    timings = {"total": time.perf_counter() - t0, "samples_per_input": used, "epochs": history}
    return AuditResult(WORKFLOW, (entry,), settings, settings.seed, timings,
                       package_versions(), detail=state)  # fmt: skip
