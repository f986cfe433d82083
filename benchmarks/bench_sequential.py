"""Benchmark: the anytime-valid layer (issue 41) — e-process throughput, type-I error looking
after every observation, and samples to rejection against the fixed-sample audit.

1. **Throughput**: :class:`dpaudit.bounds.BettingEProcess` updates per second on one column
   (aGRAPA, vectorised; ONS, sequential), target ≥ 10⁷ observations/s.
2. **Type-I error**: null streams at the boundary of the claim, looked at after every
   observation — Laplace (b = 1/ε, its tightest event {x ≥ 1}: P(X ≥ 1 | a′ = 1) =
   e^ε P(Y ≥ 1 | a = 0)) and the Gaussian mechanism at (ε, δ(ε)) (event {x ≥ t} at the
   likelihood-ratio threshold, where the DP inequality is an equality; Balle & Wang 2018,
   arXiv:1805.06530, Thm. 8): the fraction of streams that ever reject, against β + 3 SE;
   and the mechanisms as sampled — report-noisy-max1 and svt1 (correct at their claim), each
   on the pair and event a fixed audit on other seeds found, every stream drawing fresh
   outputs of the real sampler. **White-box DP-SGD** (part ``type-one-white-box``): STREAMS
   honest runs of the idealised white-box model (canary gradients Poisson-sampled at q, plus
   N(0, σ²) noise at the claimed σ; the test's setting q = 0.068, T = 200, σ = 1.411, which
   is ε = 4 at δ = 10⁻⁵; 2,000 canaries), each through :class:`dpaudit.attacks.StepClaimTest`
   looked at after every step.
3. **Power**: every mechanism of the DP-Sniper and StatDP suites whose claim is known to be
   wrong (``MechanismSpec.private`` false), audited with ``mode="sequential"`` (seeds 0–4;
   ``--seeds``): the median samples per input to rejection (all output draws / 2: pilot,
   exploration and the pairs streamed up to the rejection; ``inf``: not rejected within the
   budget), against the samples the fixed-sample audit uses *for the same conclusion*: the
   default ``audit mechanism`` (automatic sizing, seed 0), counted up to and including the
   first of its looks whose bound refutes the claim — every look before it included, each
   drawing its own training, selection and fresh samples for every pair it searches
   (screening included; the looks' output values over the output width). That is what the
   default audit has drawn when it first holds the conclusion: it cannot know in advance
   which look will refute, and its Bonferroni correction over the looks makes stopping at
   that look valid; the refuting look's own samples are kept too (``fixed_look_samples``).
   A fixed audit at the base sizes is no fair denominator: on SVT3, SVT4 and SVT34-parallel
   it does not reach the conclusion at all. Wall and CPU time of both are recorded, in the
   same process; the docs' table shows the sequential audit's median wall time next to the
   default audit's wall time up to and including its refuting look.
   ``--keep-default`` reuses the stored default audits (they do not depend on the
   sequential mode and take most of the time); ``--workers`` runs mechanisms in parallel.

4. **Oracle** (issue 41): on the exact output laws of the subtle broken mechanisms
   (:data:`ORACLE`; each checked against its sampler by total variation), the ε of the best
   of StatDP's pairs and the fewest pairs a sequential test at level β needs on it, knowing
   it: any test, ``log(1/β)/KL_inf`` (:func:`_kl_inf`), and a bet on the best single event
   with the best constant bet, ``log(1/β)`` over its Kelly growth
   (:func:`_best_event_growth`); the docs' table sets them beside 1/20 of the default
   audit's samples.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sequential.py`` (``--quick``: fewer
streams and seeds; ``--budget``: the samples per input a sequential audit may draw, 300,000;
``--parts``: run only some of throughput, type-one, type-one-white-box, power, oracle, the
others kept from the stored results; ``--mechanisms``: the power part on these only, the
other rows kept); writes ``benchmarks/results/sequential.json``. With
``--workers 2`` and several BLAS threads per worker the threads spin against each other:
the power part's CPU times then mean little.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy import stats

from dpaudit.bounds import BettingEProcess
from dpaudit.bounds._sequential_kernel import compiled_agrapa
from dpaudit.experiments import MechanismAuditSettings, audit_mechanism
from dpaudit.experiments.mechanism.pipeline import _draw, _pairs
from dpaudit.systems import MECHANISMS

STREAMS, LENGTH, SEEDS, BUDGET = 1000, 10**6, 5, 300_000  # --quick: 200, 10⁵, 3
PARTS = ("throughput", "type-one", "type-one-white-box", "power", "oracle")
#: The white-box null streams' setting (the white-box tests' idealised DP-SGD run).
WHITE_BOX = {"canaries": 2000, "steps": 200, "sampling_rate": 0.068, "noise_multiplier": 1.411}
BETA = 0.05


class _NumPyBets(BettingEProcess):
    """The e-process with aGRAPA's NumPy version (what runs without numba): the baseline."""

    _agrapa = BettingEProcess._agrapa_numpy


def throughput() -> dict:
    """Best of 3 runs each (the first also pays for page faults and numba's compilation)."""
    z = np.random.default_rng(0).uniform(-1, 1, 10**7)[None]

    def rate(strategy: str, n: int, kind: type = BettingEProcess) -> float:
        best = math.inf
        for _ in range(3):
            e = kind([-1.0], strategy=strategy)
            t = time.perf_counter()
            e.update(z[:, :n])
            best = min(best, time.perf_counter() - t)
        return n / best

    return {"agrapa_per_s": rate("agrapa", 10**7),
            "agrapa_numpy_per_s": rate("agrapa", 10**7, _NumPyBets),
            "compiled": compiled_agrapa() is not None,
            "ons_per_s": rate("ons", 10**5), "target_per_s": 1e7}  # fmt: skip


def _null_rate(p_pos: float, p_neg: float, factor: float, delta: float, seed: int) -> float:
    """Fraction of STREAMS null streams (indicators with the given rates) that ever reach
    1/β, looking after every one of LENGTH observations."""
    rng = np.random.default_rng(seed)
    e = BettingEProcess(np.full(STREAMS, -(factor + delta)))
    ever = np.zeros(STREAMS, bool)
    for _ in range(LENGTH // 10**4):
        pos = rng.random((STREAMS, 10**4)) < p_pos
        neg = rng.random((STREAMS, 10**4)) < p_neg
        first = e.update(pos - factor * neg - delta, threshold=math.log(1 / BETA))
        ever |= first >= 0
    return float(ever.mean())


#: Correct mechanisms whose type-I error is measured on their own samplers.
NULL_MECHANISMS = ("report-noisy-max1", "svt1")


def _mechanism_null_rate(name: str, seed: int) -> dict:
    """Null streams of a correct mechanism as sampled: the pair and event of a fixed audit
    (seed 1000 + seed, never reused), then STREAMS streams of LENGTH fresh output pairs, the
    claim's e-process looked at after every observation."""
    spec = MECHANISMS.get(name)
    t0 = time.perf_counter()
    fixed = audit_mechanism(MechanismAuditSettings(mechanism=name, mode="fixed", seed=1000 + seed))
    w = fixed.entries[0].detail
    attack = dataclasses.replace(w.model, features=spec.features)
    if attack.kind == "llr":
        attack = dataclasses.replace(attack, llr=spec.log_likelihood_ratio)
    a, b = np.asarray(w.database_a), np.asarray(w.database_b)
    factor, delta = math.exp(spec.claimed_epsilon), spec.claimed_delta
    rng = np.random.default_rng(seed)
    e = BettingEProcess(np.full(STREAMS, -(factor + delta)))
    ever = np.zeros(STREAMS, bool)
    chunk = max(1, min(LENGTH, 2 * 10**6 // STREAMS))
    hits = np.zeros(2)
    for _ in range(LENGTH // chunk):
        pos = attack.contains(spec.sample(b, STREAMS * chunk, rng)).reshape(STREAMS, chunk)
        neg = attack.contains(spec.sample(a, STREAMS * chunk, rng)).reshape(STREAMS, chunk)
        hits += pos.sum(), neg.sum()
        first = e.update(pos - factor * neg - delta, threshold=math.log(1 / BETA))
        ever |= first >= 0
    p_pos, p_neg = hits / (STREAMS * (LENGTH // chunk) * chunk)
    return {"mechanism": f"{name} as sampled (ε = {spec.claimed_epsilon:g}; event of a fixed "
            f"audit: P = {p_pos:.4f} vs {p_neg:.4f}, ratio {p_pos / p_neg:.4f} ≤ e^ε = "
            f"{factor:.4f})", "rate": float(ever.mean()),
            "seconds": time.perf_counter() - t0}  # fmt: skip


def type_one_white_box() -> dict:
    """Fraction of STREAMS honest white-box runs whose per-step claim test ever rejects."""
    from dpaudit.attacks import StepClaimTest, simulate_canary_gradients

    t0 = time.perf_counter()
    w = WHITE_BOX
    ever = 0
    for seed in np.random.SeedSequence(41).spawn(STREAMS):
        q, sigma = w["sampling_rate"], w["noise_multiplier"]
        y, inc = simulate_canary_gradients(
            w["canaries"], w["steps"], sampling_rate=q, noise_multiplier=sigma, rng=seed
        )
        test = StepClaimTest(inc, sampling_rate=q, noise_multiplier=sigma,
                             confidence_level=1 - BETA)  # fmt: skip
        for t in range(w["steps"]):
            r = test.update(y[:, t])
        ever += r.rejects_claim
    limit = BETA + 3 * math.sqrt(BETA * (1 - BETA) / STREAMS)
    rate = ever / STREAMS
    return {"mechanism": f"white-box DP-SGD, honest (q = {w['sampling_rate']}, T = {w['steps']}, "
            f"σ = {w['noise_multiplier']}, {w['canaries']:,} canaries; a look after every step)",
            "rate": rate, "streams": STREAMS, "length": w["steps"], "limit": limit,
            "met": rate <= limit, "seconds": time.perf_counter() - t0}  # fmt: skip


def type_one() -> list[dict]:
    out = []
    eps = 1.0  # Laplace, b = 1/ε, event {x ≥ 1}, a′ = 1 against a = 0
    q = 0.5 * math.exp(-eps)
    t0 = time.perf_counter()
    rate = _null_rate(0.5, q, math.exp(eps), 0.0, 1)
    out.append({"mechanism": "laplace (ε = 1, event x ≥ 1)", "rate": rate,
                "seconds": time.perf_counter() - t0})  # fmt: skip
    sigma, eps = 1.0, 1.0  # Gaussian, sensitivity 1: δ(ε) and the event at the LLR threshold
    thr = eps * sigma + 1 / (2 * sigma)  # LLR(x) = (x − 1/2)/σ² ≥ ε
    p_pos, p_neg = stats.norm.sf(thr - 1, scale=sigma), stats.norm.sf(thr, scale=sigma)
    delta = p_pos - math.exp(eps) * p_neg  # Balle & Wang 2018, Thm. 8: the tight δ(ε)
    t0 = time.perf_counter()
    rate = _null_rate(p_pos, p_neg, math.exp(eps), delta, 2)
    out.append({"mechanism": f"gaussian (σ = 1, ε = 1, δ = {delta:.4g})", "rate": rate,
                "seconds": time.perf_counter() - t0})  # fmt: skip
    for name in NULL_MECHANISMS:
        out.append(_mechanism_null_rate(name, 3))
    limit = BETA + 3 * math.sqrt(BETA * (1 - BETA) / STREAMS)
    for row in out:
        row.update(streams=STREAMS, length=LENGTH, limit=limit, met=row["rate"] <= limit)
    return out


def _sequential_runs(name: str) -> dict:
    """SEEDS sequential audits of one mechanism: samples per input to rejection (all draws
    counted: pilot, exploration, stream; ``inf`` when not rejected within BUDGET), bounds,
    CPU and wall seconds."""
    used, walls, cpus, bounds = [], [], [], []
    for seed in range(SEEDS):
        t0, c0 = time.perf_counter(), time.process_time()
        res = audit_mechanism(MechanismAuditSettings(mechanism=name, mode="sequential",
                                                     seed=seed, samples=BUDGET))  # fmt: skip
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        e = res.entries[0]
        used.append(res.timings["samples_per_input"] if e.detail.rejects_claim else math.inf)
        bounds.append(e.lower_bound.epsilon)
    return {"used": used, "walls": walls, "cpus": cpus, "bounds": bounds}


def _default_audit(name: str) -> dict:
    """The default ``audit mechanism`` (automatic sizing, seed 0) and the first of its looks
    whose bound refutes the claim: the samples per input it has drawn by then (every look up
    to and including that one: each look's training, selection and fresh samples of every
    pair it searched, screening included — its output values over the output width), and
    the wall seconds of those looks."""
    spec = MECHANISMS.get(name)
    settings = MechanismAuditSettings(mechanism=name)
    t0, c0 = time.perf_counter(), time.process_time()
    res = audit_mechanism(settings)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    pairs = _pairs(settings, spec)
    width = _draw(spec, pairs[0][0], 1, 0).shape[1]
    samples, seconds, first = 0, 0.0, None
    for k, st in enumerate(res.timings["stages"]):
        samples += st["values"] // width
        seconds += st["seconds"]
        if st["epsilon"] > spec.claimed_epsilon:
            first = k
            break
    return {"first_refuting_look": first, "looks": len(res.timings["stages"]),
            "samples": samples if first is not None else math.inf,
            "look_samples": res.timings["stages"][first]["values"] // width
            if first is not None else math.inf,
            "wall_to_conclusion_s": seconds if first is not None else math.inf,
            "bound": res.entries[0].lower_bound.epsilon, "wall_s": wall, "cpu_s": cpu}  # fmt: skip


#: Default audits kept from the stored results (``--keep-default``): they do not depend on
#: the sequential mode, and take most of the power part's time.
KEPT: dict = {}


def _power_row(name: str) -> dict:
    spec = MECHANISMS.get(name)
    seq = _sequential_runs(name)
    fixed = KEPT[name] if name in KEPT else _default_audit(name)
    med = float(np.median(seq["used"]))
    ratio = med / fixed["samples"] if math.isfinite(fixed["samples"]) else math.nan
    return {
        "mechanism": name, "claim": spec.claimed_epsilon,
        "sequential_median_samples": med,
        "sequential_rejected": int(np.isfinite(seq["used"]).sum()),
        "sequential_samples": seq["used"],
        "sequential_median_wall_s": float(np.median(seq["walls"])),
        "sequential_cpu_s": float(np.sum(seq["cpus"])),
        "sequential_median_bound": float(np.median(seq["bounds"])),
        "fixed_samples": fixed["samples"], "fixed_look": fixed["first_refuting_look"],
        "fixed_look_samples": fixed["look_samples"], "fixed_looks": fixed["looks"],
        "fixed_wall_to_conclusion_s": fixed["wall_to_conclusion_s"],
        "fixed_wall_s": fixed["wall_s"], "fixed_cpu_s": fixed["cpu_s"],
        "fixed_bound": fixed["bound"], "fixed_refutes": fixed["first_refuting_look"] is not None,
        "ratio": ratio, "met": bool(ratio <= 1 / 20), "default_audit": fixed,
    }  # fmt: skip


def power_names() -> list[str]:
    """The broken mechanisms of the two suites, in the power table's order."""
    return [n for n in MECHANISMS.names() if not MECHANISMS.get(n).private
            and not n.startswith(("opendp", "pydp", "diffprivlib"))]  # fmt: skip


def power(workers: int = 1, names: list[str] | None = None) -> list[dict]:
    """One row per broken mechanism of the two suites, or per one of ``names``
    (``workers`` processes)."""
    names = power_names() if names is None else names
    if workers > 1:
        from multiprocessing import get_context

        with get_context("spawn").Pool(workers, initializer=_set_globals,
                                       initargs=(SEEDS, BUDGET, KEPT)) as pool:  # fmt: skip
            rows = pool.map(_power_row, names, chunksize=1)
    else:
        rows = [_power_row(n) for n in names]
    for r in rows:
        print(f"  {r['mechanism']:24s} sequential {r['sequential_median_samples']:>10,.0f} "
              f"samples/input  default audit {r['fixed_samples']:>12,.0f} (look "
              f"{r['fixed_look']})  ratio {r['ratio']:.4f}", flush=True)  # fmt: skip
    return rows


def _set_globals(seeds: int, budget: int, kept: dict) -> None:
    global SEEDS, BUDGET
    SEEDS, BUDGET = seeds, budget
    KEPT.update(kept)


def power_table(results: dict) -> str:
    """The docs' Markdown table of the power rows (docs/workflows/mechanism.md; a test checks
    the page holds exactly this table for the stored JSON)."""

    def samples(x: float) -> str:
        return "not within the budget" if not math.isfinite(x) else f"{x:,.0f}"

    lines = ["| mechanism | claim | sequential: samples per input to rejection (median) | "
             "rejected (seeds) | default audit: first look that refutes | its samples per "
             "input by then | ratio | ≤ 1/20 | sequential: wall s (median) | default audit: "
             "wall s to that look |",
             "|---|---:|---:|---:|---:|---:|---:|:---:|---:|---:|"]  # fmt: skip
    seeds = results.get("seeds", 3 if results["quick"] else 5)
    for r in results["power"]:
        ratio = r["ratio"]
        look = "none" if r["fixed_look"] is None else f"{r['fixed_look'] + 1} of {r['fixed_looks']}"
        lines.append(
            f"| {r['mechanism']} | {r['claim']:g} | {samples(r['sequential_median_samples'])} | "
            f"{r['sequential_rejected']} of {seeds} | {look} | {samples(r['fixed_samples'])} | "
            + (f"{ratio:.4f} |" if math.isfinite(ratio) else "— |")
            + (" yes |" if r["met"] else " no |")
            + f" {_seconds(r['sequential_median_wall_s'])} |"
            + f" {_seconds(r['fixed_wall_to_conclusion_s'])} |"
        )
    return "\n".join(lines)


def _seconds(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:.3f}" if x < 10 else f"{x:.1f}"


# ------------------------------------------------------------------ oracle (issue 41)
# How many pairs a sequential test needs at least, on the exact output distributions of the
# subtle broken mechanisms (their noise as defined in dpaudit.systems.dp_mechanisms._suite
# and ._statdp; each checked against the real sampler by total variation on 200,000 draws).
ORACLE = ("report-noisy-max3", "report-noisy-max4", "statdp-isvt3", "statdp-isvt4", "svt6",
          "svt4", "svt3")  # fmt: skip
_RHO = np.linspace(-3000.0, 3000.0, 300_001)  # threshold-noise grid (scales ≤ 40)


def _lap_cdf(x, b):
    return np.where(
        x < 0, 0.5 * np.exp(np.minimum(x, 0) / b), 1 - 0.5 * np.exp(-np.maximum(x, 0) / b)
    )


def _lap_pdf(x, b):
    return np.exp(-np.abs(x) / b) / (2 * b)


def _first_above(db, rho_b: float, nu_b: float, t: float, grid=None) -> np.ndarray:
    """Sparse vector with c = 1 (threshold noise Lap(rho_b), query noise Lap(nu_b)): the
    probabilities of "query k is the first above" (k < d) and of "none" (last); with ``grid``,
    of (k, the noisy value's bin): ``f_ν(v − q_k)·P(ρ ≤ v − t, the queries before below)``."""
    w = _lap_pdf(_RHO, rho_b)
    w /= w.sum()
    out, run = [], np.ones_like(_RHO)
    for q in db:
        below = _lap_cdf(_RHO + t - q, nu_b)
        if grid is None:
            out.append([np.sum(w * run * (1 - below))])
        else:
            g = np.interp(grid - t, _RHO, np.cumsum(w * run))
            out.append(_lap_pdf(grid - q, nu_b) * g * (grid[1] - grid[0]))
        run = run * below
    return np.concatenate([*out, [np.sum(w * run)]])


def _svt6_bits(db, eps: float = 0.1, t: float = 1.0) -> np.ndarray:
    """SVT6 (no cut-off): P(bits) for all 2^d answer vectors, in binary order (bit 0 first)."""
    rho = np.linspace(-600.0, 600.0, 12_001)  # Lap(20): tails below e^−30
    w = _lap_pdf(rho, 2 / eps)
    w /= w.sum()
    above = np.array([1 - _lap_cdf(rho + t - q, 2 / eps) for q in db])
    bits = (np.arange(2 ** len(db))[:, None] >> np.arange(len(db))) & 1
    return np.exp(bits @ np.log(above) + (1 - bits) @ np.log1p(-above)) @ w


def _noisy_max_value(db, laplace: bool, grid) -> np.ndarray:
    """Report noisy max releasing the value (scale 20): bins of ``grid`` from the CDF
    ``Π_i F(x − q_i)``, plus the two tails."""
    if laplace:
        cdf = np.prod([_lap_cdf(grid - q, 20.0) for q in db], axis=0)
    else:
        cdf = np.prod([np.where(grid > q, -np.expm1(-np.maximum(grid - q, 0) / 20.0), 0.0)
                       for q in db], axis=0)  # fmt: skip
    return np.diff(np.r_[0.0, cdf, 1.0])


def _isvt3_hamming(db, eps: float = 0.7, t: float = 1.0) -> np.ndarray:
    p, d = _first_above(db, 4 / eps, 4 / (3 * eps), t), len(db)
    out = np.zeros(d + 1)
    for k in range(d + 1):  # StatDP's Hamming distance to the pattern (first half above)
        answered, answers = np.arange(d) <= k, np.arange(d) == k
        out[np.where(answered, answers != (np.arange(d) < d // 2), True).sum()] += p[k]
    return out


def _isvt4_answers(out):
    """iSVT4's (below count k, value) as SVT3's answer vector: k "below" flags, then the value."""
    d = 10
    k = out[:, 0].astype(int)
    ans = np.full((out.shape[0], d), -1000.0)
    hit = k < d
    ans[np.flatnonzero(hit), k[hit]] = out[hit, 1]
    return ans


_V3, _V4 = np.arange(-400.0, 400.0, 0.25), np.arange(-60.0, 60.0, 0.02)
_RNM3, _RNM4 = np.arange(-400.0, 400.0, 0.1), np.arange(-20.0, 600.0, 0.1)


def _oracle_mechanism(name: str):
    """(exact distribution of an input, its bin of each sampled output row)."""

    def k_of(out, below):  # index of the first query above (d: none)
        hit = ~np.isin(out, below)
        return np.where(hit.any(axis=1), hit.argmax(axis=1), out.shape[1])

    def value_bin(out, grid, below):
        k = k_of(out, below)
        v = out[np.arange(out.shape[0]), np.minimum(k, out.shape[1] - 1)]
        i = np.clip(np.searchsorted(grid, v, side="right") - 1, 0, grid.size - 1)
        return np.where(k < out.shape[1], k * grid.size + i, out.shape[1] * grid.size)

    table = {
        "report-noisy-max3": (lambda db: _noisy_max_value(db, True, _RNM3),
                              lambda o: np.searchsorted(_RNM3, o[:, 0])),
        "report-noisy-max4": (lambda db: _noisy_max_value(db, False, _RNM4),
                              lambda o: np.searchsorted(_RNM4, o[:, 0])),
        "statdp-isvt3": (_isvt3_hamming, lambda o: o[:, 0].astype(int)),
        "statdp-isvt4": (lambda db: _first_above(db, 2 / 0.7, 2 / 0.7, 1.0, _V4),
                         lambda o: value_bin(_isvt4_answers(o), _V4, (-1000.0,))),
        "svt6": (_svt6_bits, lambda o: (o.astype(int) << np.arange(o.shape[1])).sum(axis=1)),
        "svt4": (lambda db: _first_above(db, 40.0, 1 / 0.075, 1.0),
                 lambda o: k_of(o, (0.0, -1.0))),
        "svt3": (lambda db: _first_above(db, 20.0, 20.0, 1.0, _V3),
                 lambda o: value_bin(o, _V3, (-1000.0, -2000.0))),
    }  # fmt: skip
    return table[name]


def _kl_inf(pa: np.ndarray, pb: np.ndarray, eps: float) -> float:
    """``min KL(P_a′‖P′) + KL(P_a‖Q′)`` over the pairs ``(P′, Q′)`` the claim allows on this
    pair (pure ε-DP: ``e^−ε ≤ P′(o)/Q′(o) ≤ e^ε`` for every output ``o``), by its concave dual
    in the two normalisation multipliers (per output the minimiser is closed-form: the
    unconstrained ``(p/λ, q/μ)`` or, where its ratio leaves ``[e^−ε, e^ε]``, the boundary
    point). A sequential test at level β needs, in expectation, at least ``log(1/β)`` over
    this many pairs to reject with probability → 1 (Wald's change of measure; Garivier &
    Kaufmann 2016, "Optimal Best Arm Identification with Fixed Confidence", COLT,
    arXiv:1602.04589, Lemma 1)."""
    p, q, f = pb, pa, math.exp(eps)

    def neg_dual(v):
        lam, mu = np.exp(v)
        x, y = p / lam, q / mu
        hi, lo = x > f * y, y > f * x
        y = np.where(hi, (p + q) / (lam * f + mu), y)
        x = np.where(hi, f * y, np.where(lo, (p + q) / (lam + mu * f), x))
        y = np.where(lo, f * x, y)
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = np.where(p > 0, p * np.log(p / x), 0.0) + np.where(q > 0, q * np.log(q / y), 0.0)
        return -(kl.sum() + lam * (x.sum() - 1) + mu * (y.sum() - 1))

    from scipy import optimize

    res = optimize.minimize(neg_dual, [0.0, 0.0], method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-15, "maxiter": 4000})  # fmt: skip
    return float(-res.fun)


def _kelly_growth(p_pos: float, p_neg: float, factor: float) -> float:
    """``max_λ E log(1 + λZ)`` for ``Z = 1{X ∈ S} − e^ε 1{Y ∈ S}`` (δ = 0), X, Y independent:
    the log-wealth per pair of the best constant bet on a known event (Kelly; Shafer 2021,
    "Testing by betting", JRSS-A, arXiv:1909.12225): about ``log(1/β)`` over it pairs."""
    from scipy import optimize

    if p_pos - factor * p_neg <= 0:
        return 0.0
    z = np.array([1 - factor, 1.0, -factor, 0.0])
    w = np.array([p_pos * p_neg, p_pos * (1 - p_neg), (1 - p_pos) * p_neg,
                  (1 - p_pos) * (1 - p_neg)])  # fmt: skip
    res = optimize.minimize_scalar(lambda lam: -np.sum(w * np.log1p(lam * z)),
                                   bounds=(0.0, 0.9999 / factor), method="bounded")  # fmt: skip
    return float(-res.fun)


def _best_event_growth(pa: np.ndarray, pb: np.ndarray, eps: float) -> float:
    """The largest Kelly growth over the events ``{LLR ≥ t}`` (and their complements with the
    inputs' roles swapped), ``t`` among the 40 with the largest drift."""
    f = math.exp(eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        order = np.argsort(-(np.log(pb) - np.log(pa)), kind="stable")
    cb, ca = np.cumsum(pb[order]), np.cumsum(pa[order])
    rest_a, rest_b = 1 - np.r_[0.0, ca[:-1]], 1 - np.r_[0.0, cb[:-1]]
    drift = np.maximum(cb - f * ca, rest_a - f * rest_b)
    return max(max(_kelly_growth(cb[k], ca[k], f), _kelly_growth(rest_a[k], rest_b[k], f))
               for k in np.argsort(-drift)[:40])  # fmt: skip


def _witness_growth(g: np.ndarray, pos: np.ndarray, neg: np.ndarray, factor: float,
                    levels: int = 101) -> float:  # fmt: skip
    """``max_λ E log(1 + λZ)`` for ``Z = g(X) − e^ε g(Y)`` (δ = 0), X ~ ``pos`` and Y ~ ``neg``
    independent, for a witness ``g`` with values in [0, 1] (one per output), rounded to
    ``levels`` equally spaced values — the rounded ``g`` is itself such a witness, so this is
    exactly its growth. Under the claim ``E g(M(a′)) ≤ e^ε E g(M(a)) + δ`` (``g`` is a mixture
    of its level sets ``{g > s}``, each an event), so ``Z`` has mean ≤ 0 and the bet is
    valid; an event is the witness with values 0 and 1 (:func:`_kelly_growth`)."""
    from scipy import optimize

    k = np.rint(np.clip(g, 0.0, 1.0) * (levels - 1)).astype(int)
    hx = np.bincount(k, weights=pos, minlength=levels)
    hy = np.bincount(k, weights=neg, minlength=levels)
    v = np.linspace(0.0, 1.0, levels)
    z, w = v[:, None] - factor * v[None, :], hx[:, None] * hy[None, :]
    keep = w > 0
    z, w = z[keep], w[keep]
    if np.sum(w * z) <= 0:
        return 0.0
    res = optimize.minimize_scalar(lambda lam: -np.sum(w * np.log1p(lam * z)),
                                   bounds=(0.0, 0.9999 / factor), method="bounded")  # fmt: skip
    return float(-res.fun)


def _best_ramp_growth(pa: np.ndarray, pb: np.ndarray, eps: float) -> tuple[float, dict]:
    """The largest :func:`_witness_growth` over ramps of the log-likelihood ratio,
    ``g = clip((LLR − t)/w, 0, 1)`` (``w = 0``: the step ``1{LLR ≥ t}``, an event), ``t`` at
    25 quantiles (2 %–98 %) of the LLR under the positive input, ``w`` in {0, 0.1, 0.3, 1, 3},
    on both sides of the DP inequality; no less than the best event's growth
    (:func:`_best_event_growth`, itself such a witness). Returns the growth and the ramp."""
    f = math.exp(eps)
    best = (max(_best_event_growth(pa, pb, eps), _best_event_growth(pb, pa, eps)),
            {"side": None, "t": None, "w": 0.0})  # fmt: skip
    for side, (pos, neg) in enumerate(((pb, pa), (pa, pb))):
        with np.errstate(divide="ignore", invalid="ignore"):
            llr = np.clip(np.nan_to_num(np.log(pos) - np.log(neg), nan=0.0), -30.0, 30.0)
        for t in np.quantile(llr[pos > 1e-12], np.linspace(0.02, 0.98, 25)):
            for w in (0.0, 0.1, 0.3, 1.0, 3.0):
                g = (llr >= t).astype(float) if w == 0 else np.clip((llr - t) / w, 0.0, 1.0)
                growth = _witness_growth(g, pos, neg, f)
                if growth > best[0]:
                    best = (growth, {"side": side, "t": float(t), "w": w})
    return best


def _pair_epsilon(pa: np.ndarray, pb: np.ndarray) -> float:
    """``max_o |log P_a′(o)/P_a(o)|`` (∞ when one input has outputs the other never gives)."""
    both = (pa > 1e-300) & (pb > 1e-300)
    if np.any((pa > 1e-300) != (pb > 1e-300)):
        return math.inf
    return float(np.max(np.abs(np.log(pb[both] / pa[both]))))


def _oracle_row(name: str) -> dict:
    spec = MECHANISMS.get(name)
    dist, binned = _oracle_mechanism(name)
    best, seen = None, set()
    for a, b in _pairs(MechanismAuditSettings(mechanism=name), spec):
        if frozenset((a.tobytes(), b.tobytes())) in seen:
            continue
        seen.add(frozenset((a.tobytes(), b.tobytes())))
        pa, pb = dist(a), dist(b)
        pa, pb = pa / pa.sum(), pb / pb.sum()
        kl = _kl_inf(pa, pb, spec.claimed_epsilon)
        if best is None or kl > best[0]:
            best = (kl, a, b, pa, pb)
    kl, a, b, pa, pb = best
    rng, tv = np.random.default_rng(0), 0.0
    for db, p in ((a, pa), (b, pb)):  # the exact law against the real sampler, on ≤ 64 bins
        edges = np.searchsorted(np.cumsum(p), np.linspace(0, 1, 65)[1:-1])
        group = np.searchsorted(edges, np.arange(p.size), side="right")
        exact = np.bincount(group, weights=p)
        drawn = np.bincount(group[binned(spec.sample(db.copy(), 200_000, rng))],
                            minlength=exact.size) / 200_000  # fmt: skip
        tv = max(tv, 0.5 * float(np.abs(drawn - exact).sum()))
    growth = max(_best_event_growth(pa, pb, spec.claimed_epsilon),
                 _best_event_growth(pb, pa, spec.claimed_epsilon))  # fmt: skip
    ramp, shape = _best_ramp_growth(pa, pb, spec.claimed_epsilon)
    level = math.log(1 / BETA)
    return {"mechanism": name, "claim": spec.claimed_epsilon, "pair": [a.tolist(), b.tolist()],
            "pair_epsilon": _pair_epsilon(pa, pb), "kl_per_pair": kl,
            "min_pairs": level / kl, "event_growth": growth, "event_pairs": level / growth,
            "ramp_growth": ramp, "ramp_pairs": level / ramp, "ramp": shape,
            "sampler_tv": tv, "outputs": int(pa.size)}  # fmt: skip


def oracle() -> list[dict]:
    """One row per mechanism of :data:`ORACLE`: its best pair (largest ``KL_inf``), the ε of
    that pair, and the pairs a sequential test needs at least (any test: ``log 20/KL_inf``;
    a bet on one known event with the best constant bet: ``log 20`` over its growth; the
    same with a ramp of the log-likelihood ratio as the witness, :func:`_best_ramp_growth`)."""
    return [_oracle_row(n) for n in ORACLE]


def oracle_table(results: dict) -> str:
    """The docs' Markdown table of the oracle rows next to the power rows."""
    power = {r["mechanism"]: r for r in results.get("power", [])}
    lines = ["| mechanism | claim | best pair's ε | any test: pairs at least | best event, "
             "Kelly bet: pairs | best ramp witness, Kelly bet: pairs | 1/20 of the default "
             "audit's samples | sequential (median) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in results["oracle"]:
        p = power.get(r["mechanism"], {})
        target = p.get("fixed_samples", math.inf) / 20
        eps = "∞" if not math.isfinite(r["pair_epsilon"]) else f"{r['pair_epsilon']:.3f}"
        seq = p.get("sequential_median_samples", math.nan)
        lines.append(f"| {r['mechanism']} | {r['claim']:g} | {eps} | {r['min_pairs']:,.0f} | "
                     f"{r['event_pairs']:,.0f} | {r['ramp_pairs']:,.0f} | {target:,.0f} | "
                     + ("not within the budget" if not math.isfinite(seq) else f"{seq:,.0f}")
                     + " |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    global STREAMS, LENGTH, SEEDS, BUDGET
    from _cli import bench_parser, parse, quick

    ap = bench_parser(__doc__, quick_option=True)
    ap.add_argument("--budget", type=int, default=BUDGET,
                    help="samples per input a sequential audit may draw")  # fmt: skip
    ap.add_argument(
        "--seeds", type=int, default=None, help="sequential seeds (default 5; --quick 3)"
    )
    ap.add_argument("--workers", type=int, default=1, help="processes for the power part")
    ap.add_argument(
        "--mechanisms",
        nargs="+",
        default=None,
        help="power: audit only these mechanisms, the other rows kept from the stored results "
        "(power_cpu_s then counts only these)",
    )
    ap.add_argument(
        "--keep-default",
        action="store_true",
        help="power: reuse the stored default audits (run only the sequential ones)",
    )
    ap.add_argument(
        "--parts",
        nargs="+",
        default=list(PARTS),
        choices=PARTS,
        help="which parts to run (the others are kept from the stored results)",
    )
    args = parse(ap)
    unknown = sorted(set(args.mechanisms or ()) - set(power_names()))
    if unknown:
        ap.error(f"--mechanisms: not a broken mechanism of the suites: {unknown}")
    is_quick = quick(args)
    if is_quick:
        STREAMS, LENGTH, SEEDS = 200, 10**5, 3
    BUDGET = args.budget
    SEEDS = args.seeds or SEEDS
    t0 = time.perf_counter()
    out = Path(__file__).resolve().parent / "results" / "sequential.json"
    kept = json.loads(out.read_text()) if out.exists() and set(args.parts) != set(PARTS) else {}
    results = {**kept, "machine": platform.machine(), "load": os.getloadavg()[0]}
    parts = results.setdefault("parts", {})
    if "throughput" in args.parts:
        results["throughput"] = throughput()
        rate = results["throughput"]
        print(f"e-process updates: aGRAPA {rate['agrapa_per_s']:.3g}/s (NumPy's version "
              f"{rate['agrapa_numpy_per_s']:.3g}/s), ONS {rate['ons_per_s']:.3g}/s "
              f"(target ≥ 1e7/s)", flush=True)  # fmt: skip
    if "type-one" in args.parts:
        results["type_one"] = type_one()
        for row in results["type_one"]:
            print(f"type-I {row['mechanism']}: {row['rate']:.3f} of {STREAMS} streams × "
                  f"{LENGTH:,} looks (limit {row['limit']:.3f})", flush=True)  # fmt: skip
    if "type-one-white-box" in args.parts:
        row = results["type_one_white_box"] = type_one_white_box()
        print(f"type-I {row['mechanism']}: {row['rate']:.3f} of {STREAMS} runs "
              f"(limit {row['limit']:.3f})", flush=True)  # fmt: skip
    if "power" in args.parts:
        results.update(quick=is_quick, sequential_budget=BUDGET, seeds=SEEDS)
        c0 = time.process_time()
        if args.keep_default:
            KEPT.update({r["mechanism"]: r["default_audit"] for r in kept.get("power", [])
                         if "default_audit" in r})  # fmt: skip
        if args.mechanisms:
            new = {r["mechanism"]: r for r in power(args.workers, args.mechanisms)}
            old = {r["mechanism"]: r for r in kept.get("power", [])}
            results["power"] = [new.get(n, old.get(n)) for n in power_names()
                                if n in new or n in old]  # fmt: skip
        else:
            results["power"] = power(args.workers)
        results["power_cpu_s"] = (
            time.process_time()
            - c0
            + sum(r["sequential_cpu_s"] + r["fixed_cpu_s"] for r in results["power"])
            * (args.workers > 1)
        )
    if "oracle" in args.parts:
        results["oracle"] = oracle()
        print(oracle_table(results), flush=True)
    for part in args.parts:
        parts[part] = {"quick": is_quick, "load": os.getloadavg()[0]}
    results["seconds"] = time.perf_counter() - t0
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    if "power" not in results:
        return
    met = sum(r["met"] for r in results["power"])
    print(power_table(results))
    seeds = results["seeds"]
    print(f"power: {met} of {len(results['power'])} broken mechanisms rejected with ≤ 1/20 of "
          f"the default audit's samples for the same conclusion (median of {seeds} seeds); "
          f"wrote {out}")  # fmt: skip


if __name__ == "__main__":
    main()
