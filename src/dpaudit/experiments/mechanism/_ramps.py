"""Ramp witnesses for the sequential mechanism audit (issue 41): bets on ``h(o) =
clip((score(o) − t)/w, 0, 1)`` instead of only on events ``{score ≥ t}``.

**Why a ramp is a valid witness.** For any ``h`` with values in ``[0, 1]``, an (ε, δ)-DP
mechanism has ``E h(M(a′)) ≤ e^ε E h(M(a)) + δ``: write ``h`` as the integral of its level
sets, ``h(o) = ∫₀¹ 1{h(o) > u} du`` (layer cake), and integrate the DP inequality of each
event ``{h > u}`` over ``u``. So the claim's statistic ``h(X) − e^ε h(Y) − δ`` has
conditional mean ≤ 0 for a witness chosen from the past, as for an event, and
:class:`dpaudit.bounds.DPClaimEProcess` bets on it unchanged (its witness may be any
function into [0, 1]; the sequential test of González, Dulce-Rubio, Ramdas & Ribero 2025,
arXiv:2509.07055; testing by betting, Waudby-Smith & Ramdas 2023, arXiv:2010.09686). On the
exact output laws a Kelly bet on the best ramp of the log-likelihood ratio needs 1.04–1.79×
fewer pairs than one on the best event (``benchmarks/bench_sequential.py --parts oracle``):
where the likelihood ratio rises gradually, a ramp weighs the outputs by how much they say,
an event counts them all alike.

**The candidates.** The ramps start and end at the candidate thresholds of the event search
(quantiles of the pooled scores): from ``ts[i]`` to ``ts[i + d]`` for ``d`` in
:data:`RAMP_STEPS`, on both sides of the DP inequality (forward: ``h`` for ``a′``; backward:
``1 − h`` for ``a``). Their moments on sorted scores come from prefix sums, so the whole
grid costs one binary search per threshold. Each is judged as an event is (the drift less
``penalty`` standard errors, squared, over the statistic's variance), with its mean and
second moment shrunk toward the pooled ones by two pseudo-outputs, as the event rates are.

**Measured** (seeds 0–59 of the five broken mechanisms closest to the issue's target,
``samples`` 500,000): median samples to rejection after/before 0.85 (StatDP's iSVT4), 1.08
(report noisy max 3), 1.02 (iSVT3), 0.78 (report noisy max 4), 0.83 (SVT6); the mean
log-ratio over all 300 audits −0.05 ± 0.05. The audits' samples vary several-fold between
seeds, so a 20-seed median moves by ±20 % with the seeds alone.
"""

from __future__ import annotations

import math

import numpy as np

#: Ramp widths, in steps of the (up to 257) candidate thresholds: ``ts[i]`` to ``ts[i + d]``.
RAMP_STEPS = (1, 2, 4, 8, 16, 32, 64, 128)
MIN_MASS = 4  # the mass of h (and of 1 − h) needed over both inputs to judge a ramp's moments


def ramp_values(scores, low: float, high: float, forward: bool) -> np.ndarray:
    """The witness on outputs of the positive side: ``clip((s − low)/(high − low), 0, 1)``
    forward, one minus it backward (the witness for ``a`` is ``1 − h``)."""
    h = np.clip((np.asarray(scores, dtype=float) - low) / (high - low), 0.0, 1.0)
    return h if forward else 1.0 - h


def _candidates(ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The indices ``(i, i + d)`` into ``ts`` of every ramp, ``d`` in :data:`RAMP_STEPS`,
    both ends finite."""
    ok = np.isfinite(ts)
    lows, highs = [np.empty(0, np.intp)], [np.empty(0, np.intp)]
    for d in RAMP_STEPS:
        if d < ts.size:
            i = np.flatnonzero(ok[:-d] & ok[d:])
            lows.append(i)
            highs.append(i + d)
    return np.concatenate(lows), np.concatenate(highs)


def _sums(x: np.ndarray, ts: np.ndarray, lows: np.ndarray, highs: np.ndarray):
    """``Σ h`` and ``Σ h²`` over the sorted scores ``x`` for each ramp from ``ts[lows]`` to
    ``ts[highs]``, from prefix sums of the centred scores (their cancellation clamped to
    what ``h ∈ [0, 1]`` allows) and one binary search per threshold."""
    c = x[x.size // 2] if x.size else 0.0
    y = x - c
    s1, s2 = np.r_[0.0, np.cumsum(y)], np.r_[0.0, np.cumsum(y * y)]
    i = np.searchsorted(x, ts, side="right")[lows]  # first score > low
    j = np.searchsorted(x, ts, side="left")[highs]  # first score ≥ high: h = 1 from here
    m = (j - i).astype(float)
    low = ts[lows]
    lo, w = low - c, ts[highs] - low
    mid1 = (s1[j] - s1[i]) - m * lo
    mid2 = (s2[j] - s2[i]) - 2.0 * lo * (s1[j] - s1[i]) + m * lo * lo
    h1 = np.clip(mid1 / w, 0.0, m)
    h2 = np.clip(mid2 / (w * w), 0.0, h1)
    top = x.size - j
    return h1 + top, h2 + top


def ramp_moments(sums_a, n_a: int, sums_b, n_b: int, forward: bool):
    """``(p⁺, p⁻, n⁺, n⁻, q⁺, q⁻)``: the witness's mean ``p`` and second moment ``q`` on the
    positive and negative side, from the sums ``(Σ h, Σ h²)`` of ``h`` on the outputs of a
    and of b. Backward the witness is ``1 − h`` (``Σ(1 − h) = n − Σh``,
    ``Σ(1 − h)² = n − 2Σh + Σh²``). Each moment is shrunk by two pseudo-outputs at the
    pooled one, ``(S + 2·s₀)/(n + 2)`` with ``s₀ = (S⁺ + S⁻ + 1)/(n⁺ + n⁻ + 2)``, as the
    event rates are; when ``h`` (or ``1 − h``) has mass below :data:`MIN_MASS` over both
    inputs, both sides get the pooled moments (no difference shown)."""
    (ha, qa), (hb, qb) = sums_a, sums_b
    if not forward:
        ha, qa = n_a - ha, n_a - 2.0 * ha + qa
        hb, qb = n_b - hb, n_b - 2.0 * hb + qb
    hpos, qpos, npos, hneg, qneg, nneg = (hb, qb, n_b, ha, qa, n_a) if forward else (
        ha, qa, n_a, hb, qb, n_b)  # fmt: skip
    total = npos + nneg
    pooled_h, pooled_q = (hpos + hneg + 1) / (total + 2), (qpos + qneg + 1) / (total + 2)
    ppos, pneg = (hpos + 2 * pooled_h) / (npos + 2), (hneg + 2 * pooled_h) / (nneg + 2)
    spos, sneg = (qpos + 2 * pooled_q) / (npos + 2), (qneg + 2 * pooled_q) / (nneg + 2)
    rare = (hpos + hneg < MIN_MASS) | (total - hpos - hneg < MIN_MASS)
    return (np.where(rare, pooled_h, ppos), np.where(rare, pooled_h, pneg), npos, nneg,
            np.where(rare, pooled_q, spos), np.where(rare, pooled_q, sneg))  # fmt: skip


def ramp_growth(pos, neg, npos, nneg, qpos, qneg, f: float, delta: float, penalty: float):
    """``max(m − penalty·se, 0)²/v`` for the drift ``m = p⁺ − f p⁻ − δ`` of a witness with
    means ``p`` and second moments ``q`` (variances ``q − p²``); for an event (``q = p``) the
    criterion of the event search."""
    var_pos = np.maximum(qpos - pos * pos, 0.0)
    var_neg = f * f * np.maximum(qneg - neg * neg, 0.0)
    drift = pos - f * neg - delta - penalty * np.sqrt(var_pos / npos + var_neg / nneg)
    return np.where(drift > 0, drift * drift / (var_pos + var_neg + 1e-12), 0.0)


def best_ramp(sa: np.ndarray, sb: np.ndarray, ts: np.ndarray, claimed_epsilon: float,
              delta: float, penalty: float):  # fmt: skip
    """The ramp among :func:`_candidates` of ``ts`` whose bet grows fastest on the sorted
    scores ``sa`` (of a) and ``sb`` (of a′), either side: ``(growth, low, high, forward)``,
    or None when there is no candidate."""
    lows, highs = _candidates(ts)
    if lows.size == 0:
        return None
    f = math.exp(claimed_epsilon)
    sums_a, sums_b = _sums(sa, ts, lows, highs), _sums(sb, ts, lows, highs)
    low, high = ts[lows], ts[highs]
    best = None
    for forward in (True, False):
        m = ramp_moments(sums_a, sa.size, sums_b, sb.size, forward)
        growth = ramp_growth(*m, f, delta, penalty)
        k = int(np.argmax(growth))
        if best is None or growth[k] > best[0]:
            best = (float(growth[k]), float(low[k]), float(high[k]), forward)
    return best


def fresh_moments(fresh_a, fresh_b, low: float, high: float, forward: bool) -> tuple:
    """:func:`ramp_moments` of one ramp on scores the choice did not see (``_Choice.fresh``)."""
    sums = []
    for x in (fresh_a, fresh_b):
        h = ramp_values(x, low, high, True)
        sums.append((float(h.sum()), float((h * h).sum())))
    m = ramp_moments(sums[0], fresh_a.size, sums[1], fresh_b.size, forward)
    return tuple(float(np.asarray(x)) for x in m)
