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

Run: ``python benchmarks/bench_sequential.py`` (``--quick``: fewer streams and seeds;
``--budget``: the samples per input a sequential audit may draw, 300,000; ``--parts``: run
only some of throughput, type-one, type-one-white-box, power, the others kept from the
stored results); writes ``benchmarks/results/sequential.json``.
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
PARTS = ("throughput", "type-one", "type-one-white-box", "power")
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


def power(workers: int = 1) -> list[dict]:
    """One row per broken mechanism of the two suites (``workers`` processes)."""
    names = [n for n in MECHANISMS.names() if not MECHANISMS.get(n).private
             and not n.startswith(("opendp", "pydp", "diffprivlib"))]  # fmt: skip
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
        results["power"] = power(args.workers)
        results["power_cpu_s"] = (
            time.process_time()
            - c0
            + sum(r["sequential_cpu_s"] + r["fixed_cpu_s"] for r in results["power"])
            * (args.workers > 1)
        )
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
