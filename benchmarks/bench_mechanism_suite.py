"""Benchmark: the DP-Sniper suite audited by ``dpaudit audit mechanism`` (issue 31).

For every mechanism of the suite (Bichsel et al. 2021, IEEE S&P, at ε = 0.1) and the naive
floating-point Laplace (Mironov 2012): the bound, its samples and wall time, next to DP-Sniper's
published bound and the true ε where known. Baseline (same run, same machine): the same audit
written the way research code does it — a plain Python loop over samples calling the mechanism
one output at a time (``mechanism(database, rng)``) and scikit-learn's ``LogisticRegression``
(DP-Sniper's default classifier) on the same pair, the same sample sizes and the same
threshold rule, then the same exact Clopper–Pearson bound. The baseline runs on a few
mechanisms (its loops are slow). To compare at the same bound, dpaudit audits the same pair at
the baseline's sample sizes, doubled until its bound is at least the baseline's; the speed-up
is the ratio of the wall times. StatDP's list (Ding et al. 2018, CCS; claimed ε = 0.7) is
audited after the suite.

Targets (issue 31): ≥ 10× faster than the baseline at the same bound; the whole suite in
≤ 30 min on 2 cores.

Run: ``python benchmarks/bench_mechanism_suite.py`` (writes
``benchmarks/results/mechanism_suite.json``); ``DPAUDIT_BENCH_QUICK=1`` for a smaller run.
``python benchmarks/bench_mechanism_suite.py --diffprivlib`` then adds the diffprivlib part
(needs ``make venv-diffprivlib``: diffprivlib and scikit-learn < 1.7 in an environment of
its own).
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy import stats

from dpaudit.attacks import output_features
from dpaudit.experiments import MechanismAuditSettings, audit_mechanism
from dpaudit.systems import MECHANISMS
from dpaudit.systems.dp_mechanisms import library_versions, naive_laplace_producible

QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
TRAIN = 20_000 if QUICK else 100_000
SAMPLES = 200_000 if QUICK else 10_000_000
# Per mechanism (training, selection, fresh) samples per input where the defaults
# (TRAIN, TRAIN, SAMPLES) are not enough. The sparse vector variants svt1-4 have best
# events of a few per cent (more samples to rank outputs — svt1 and svt2 rank 11 outputs
# whose log-ratios differ by less than their training noise at 10^6 samples; for svt2, whose
# two best events are close, a larger selection set to choose between them);
# report-noisy-max1's best pairs differ by 0.0025 in ε (report-noisy-max3 at 10^7 samples
# came out at 0.94-0.98x DP-Sniper's bound, depending on the noise stream); the 20 parallel
# Laplace mechanisms at ε = 0.005 each need a million training samples before the weights of
# their 20 indicator features are above their noise, and a large selection set to place a
# threshold in the tail.
# Selection sets above 2^24 output values are drawn in chunks (only their scores are kept);
# selection sets above the settings' screen_samples (100,000) are reached only by the 4 pairs
# that screening on 100,000 outputs per input ranks best.
# RAPPOR, one-time RAPPOR, prefix sum and the parallel Laplace mechanisms are scored by their
# closed-form log-likelihood ratio (nothing is fitted, their training size is not drawn);
# their best events hold under 1 % of the outputs, so a larger selection set places the
# threshold in that tail.
SIZES = {} if QUICK else {
    **{n: (1_000_000, 1_000_000, 50_000_000) for n in ("svt3", "svt4")},
    "svt1": (4_000_000, 2_000_000, 50_000_000),
    "svt2": (4_000_000, 5_000_000, 50_000_000),
    **{n: (100_000, 1_000_000, 50_000_000) for n in ("report-noisy-max1", "report-noisy-max3")},
    "laplace-parallel": (1_000_000, 5_000_000, 20_000_000),
    **{n: (TRAIN, 2_000_000, SAMPLES) for n in ("rappor", "one-time-rappor")},
    "prefix-sum": (TRAIN, 1_000_000, 20_000_000),
}  # fmt: skip
# StatDP's list (claimed ε = 0.7): its violations are large, a smaller run suffices.
STATDP_SIZES = (20_000, 20_000, 200_000) if QUICK else (100_000, 100_000, 2_000_000)
# Baseline: (training = selection, fresh) samples per input of the loop + scikit-learn audit.
BASELINE = {
    "laplace": (100_000, 200_000),
    "report-noisy-max1": (100_000, 200_000),
    "svt1": (100_000, 1_000_000),
}
if QUICK:
    BASELINE = {k: (20_000, 20_000) for k in BASELINE}
OUT = Path(__file__).parent / "results" / "mechanism_suite.json"


def run_dpaudit(name: str, sizes=None, pair=None) -> dict:
    train, select, samples, *screen = sizes or SIZES.get(name, (TRAIN, TRAIN, SAMPLES))
    given = {} if pair is None else {"pair_a": tuple(pair[0]), "pair_b": tuple(pair[1])}
    if screen:  # a 4th size: the screening samples per input (default 100,000)
        given["screen_samples"] = screen[0]
    s = MechanismAuditSettings(mechanism=name, train_samples=train, select_samples=select,
                               samples=samples, block_size=2**18, seed=0, **given)  # fmt: skip
    t0 = time.perf_counter()
    e = audit_mechanism(s).entries[0]
    wall = time.perf_counter() - t0
    spec, w = MECHANISMS.get(name), e.detail
    return {
        "mechanism": name, "claim": e.claim.epsilon, "true_epsilon": spec.true_epsilon,
        "published_dp_sniper": spec.published_lower, "bound": e.lower_bound.epsilon,
        "refutes_claim": e.gap.refutes_claim, "private": spec.private, "attack": w.attack,
        "pair": [list(w.database_a), list(w.database_b)], "event": w.event[:300],
        "count_a": w.count_a, "count_b": w.count_b, "train_samples": train,
        "select_samples": select, "samples": samples, "screen_samples": s.screen_samples,
        "wall_s": wall,
    }  # fmt: skip


def _loop(mech, db, n, rng):
    return np.array([np.atleast_1d(mech(db, rng)) for _ in range(n)], dtype=float)


def _cp_epsilon(k_b, k_a, n, beta=0.05):
    t = beta / 2
    lo_b = stats.beta.ppf(t, k_b, n - k_b + 1) if k_b > 0 else 0.0
    hi_a = stats.beta.ppf(1 - t, k_a + 1, n - k_a) if k_a < n else 1.0
    fwd = np.log(lo_b / hi_a) if lo_b > 0 else 0.0
    bwd = np.log((1 - hi_a) / (1 - lo_b)) if lo_b < 1 and hi_a < 1 else 0.0
    return max(fwd, bwd, 0.0)


def run_baseline(name: str, pair, n: int, eval_n: int) -> dict:
    """Research-code audit of one pair: loop sampling, sklearn logistic regression, the
    threshold with the best point estimate on the selection samples, CP on fresh samples."""
    from sklearn.linear_model import LogisticRegression

    spec = MECHANISMS.get(name)
    a, b = np.asarray(pair[0]), np.asarray(pair[1])
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    fa, fb = (output_features(_loop(spec, x, n, rng), spec.flags) for x in (a, b))
    clf = LogisticRegression(C=1.0 / (1e-3 * 2 * n)).fit(np.vstack([fa, fb]),
                                                        np.r_[np.zeros(n), np.ones(n)])  # fmt: skip
    sa, sb = (clf.decision_function(output_features(_loop(spec, x, n, rng), spec.flags))
              for x in (a, b))  # fmt: skip
    cands = np.quantile(np.r_[sa, sb], np.linspace(0, 1, 256))
    best = max(cands, key=lambda t: _cp_epsilon(int((sb >= t).sum()), int((sa >= t).sum()), n))
    ea = clf.decision_function(output_features(_loop(spec, a, eval_n, rng), spec.flags))
    eb = clf.decision_function(output_features(_loop(spec, b, eval_n, rng), spec.flags))
    bound = _cp_epsilon(int((eb >= best).sum()), int((ea >= best).sum()), eval_n)
    return {"mechanism": name, "bound": bound, "wall_s": time.perf_counter() - t0,
            "samples": eval_n, "train_samples": n}  # fmt: skip


def same_bound(name: str, pair, target: float, n: int, eval_n: int) -> dict:
    """dpaudit on the baseline's pair at the baseline's sizes, doubled until its bound is at
    least the baseline's (at most 6 doublings): samples and wall time at the same bound."""
    for k in range(7):
        f = 2**k
        ours = run_dpaudit(name, sizes=(n * f, n * f, eval_n * f), pair=pair)
        if ours["bound"] >= target:
            break
    ours["factor"] = f
    return ours


def library_samplers(n: int = 20_000) -> list[dict]:
    """Mironov's membership test (outputs the naive sampler can produce from input 0) on each
    Laplace sampler, inputs 0 and 1, and the power-of-two grid its outputs of input 0 lie on
    (the largest ``2^k`` dividing all of them) and whether input 1's outputs stay on it."""
    out = []
    for name in ("naive-float-laplace", "opendp-laplace", "pydp-laplace"):
        spec = MECHANISMS.get(name)
        try:
            o0, o1 = (spec.sample(np.array([x]), n, np.random.default_rng(0))[:, 0]
                      for x in (0.0, 1.0))  # fmt: skip
        except Exception as exc:  # a library that is not installed: say so
            out.append({"mechanism": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        rates = [float(naive_laplace_producible(o[:, None]).mean()) for o in (o0, o1)]
        v = o0[o0 != 0]
        mant, expo = np.frexp(v)
        m = np.abs(mant * 2.0**53).astype(np.int64)
        grid = float(np.min(np.ldexp(1.0, expo - 53 + np.log2((m & -m).astype(float)).astype(int))))
        out.append({"mechanism": name, "samples": n, "membership_rate_input0": rates[0],
                    "membership_rate_input1": rates[1], "grid_input0": grid,
                    "input1_on_grid": bool(np.all(np.mod(o1, grid) == 0))})  # fmt: skip
        print(f"sampler {name:20s} membership {rates[0]:.4f} / {rates[1]:.4f}, grid {grid:.3g}, "
              f"input 1 on it: {out[-1]['input1_on_grid']}", flush=True)  # fmt: skip
    return out


def diffprivlib_part(n: int = 1_000_000) -> dict:
    """IBM diffprivlib, out of process (``make venv-diffprivlib``), seeded through its
    ``random_state``: the black-box audits (as the other libraries'), the replay of their
    witnesses on fresh seeds, and Mironov's membership event — ``output − a`` is a value the
    naive inverse-CDF sampler can produce — on ``n`` fresh outputs of each input of three
    pairs, with its Clopper–Pearson bound (the event is fixed in advance: no selection)."""
    from dpaudit.bounds import epsilon_from_confusion
    from dpaudit.experiments import replay_witness
    from dpaudit.systems.dp_mechanisms._libraries import diffprivlib_version

    version = diffprivlib_version()
    if version is None:
        return {"error": "diffprivlib's environment is not built: make venv-diffprivlib"}
    audits = []
    for name in ("diffprivlib-laplace", "diffprivlib-geometric"):
        s = MechanismAuditSettings(mechanism=name, train_samples=20_000, select_samples=20_000,
                                   samples=200_000, seed=0)  # fmt: skip
        t0 = time.perf_counter()
        e = audit_mechanism(s).entries[0]
        w = e.detail
        replays = [replay_witness(w, samples=n, rng=r).epsilon for r in (1, 2)]
        audits.append({"mechanism": name, "claim": e.claim.epsilon,
                       "bound": e.lower_bound.epsilon, "refutes_claim": e.gap.refutes_claim,
                       "attack": w.attack, "pair": [list(w.database_a), list(w.database_b)],
                       "event": w.event, "count_a": w.count_a, "count_b": w.count_b,
                       "samples": 200_000, "wall_s": time.perf_counter() - t0,
                       "replays_1e6_seeds_1_2": replays})  # fmt: skip
        print(f"{name}: bound {e.lower_bound.epsilon:.4f} (refutes {e.gap.refutes_claim}); "
              f"replays {replays}", flush=True)  # fmt: skip
    spec = MECHANISMS.get("diffprivlib-laplace")
    membership = []
    for (x0, x1), seed in (((0.0, 1.0), 11), ((1.0, 2.0), 31), ((5.0, 6.0), 41)):
        k = []
        for x, sd in ((x0, seed), (x1, seed + 1)):
            o = spec.sample(np.array([x]), n, np.random.default_rng(sd))
            k.append(int(naive_laplace_producible(o - x0).sum()))
        b = epsilon_from_confusion(k[0], n - k[0], k[1], n - k[1], delta=0.0,
                                   confidence_level=0.95)  # fmt: skip
        membership.append({"pair": [x0, x1], "seeds": [seed, seed + 1], "samples": n,
                           "count_a": k[0], "count_b": k[1], "bound": b.epsilon,
                           "refutes_claim": b.epsilon > spec.claimed_epsilon})  # fmt: skip
        print(f"membership {x0} vs {x1}: {k[0]} / {k[1]} of {n}, bound {b.epsilon:.4f}",
              flush=True)  # fmt: skip
    return {"version": version, "audits": audits, "membership": membership}


def main(part: int = 0, only: tuple[str, ...] = ()) -> None:
    """The whole benchmark (``part`` 0), or parts run side by side, each written next to the
    results and joined by ``--merge``: 1, the first ten suite mechanisms and the baseline;
    2, the mechanisms ``only`` (default: the rest), StatDP's list and the samplers; 3 and up,
    the mechanisms ``only``."""
    names = [*MECHANISMS.names("dp-sniper"), "naive-float-laplace"]
    names = list(only) if only else {0: names, 1: names[:10], 2: names[10:]}[part]
    rows, t_all = [], time.perf_counter()
    for name in names:
        row = run_dpaudit(name)
        rows.append(row)
        print(f"{name:22s} claim {row['claim']:.3f}  bound {row['bound']:.4f}  "
              f"published {row['published_dp_sniper']}  true {row['true_epsilon']}  "
              f"{row['wall_s']:.1f} s", flush=True)  # fmt: skip
    suite_wall = time.perf_counter() - t_all
    statdp, t_statdp = [], time.perf_counter()
    for name in MECHANISMS.names("statdp") if part in (0, 2) else ():
        row = run_dpaudit(name, sizes=STATDP_SIZES)
        statdp.append(row)
        print(f"{name:22s} claim {row['claim']:.3f}  bound {row['bound']:.4f}  "
              f"true {row['true_epsilon']}  refutes {row['refutes_claim']}  "
              f"{row['wall_s']:.1f} s", flush=True)  # fmt: skip
    statdp_wall = time.perf_counter() - t_statdp
    samplers = library_samplers() if part in (0, 2) else []
    base = []
    for name, (n, eval_n) in BASELINE.items() if part in (0, 1) else ():
        row = next(r for r in rows if r["mechanism"] == name)
        theirs = run_baseline(name, row["pair"], n, eval_n)
        ours = same_bound(name, row["pair"], theirs["bound"], n, eval_n)
        base.append({"mechanism": name, "pair": row["pair"], "baseline_bound": theirs["bound"],
                     "baseline_wall_s": theirs["wall_s"], "baseline_train_samples": n,
                     "baseline_samples": eval_n, "dpaudit_bound": ours["bound"],
                     "dpaudit_wall_s": ours["wall_s"],
                     "dpaudit_train_samples": ours["train_samples"],
                     "dpaudit_samples": ours["samples"],
                     "same_bound": ours["bound"] >= theirs["bound"],
                     "speedup": theirs["wall_s"] / ours["wall_s"],
                     "note": "both audit the pair the suite run chose; dpaudit's sizes are "
                             "the baseline's, doubled until its bound is at least the "
                             "baseline's"})  # fmt: skip
        print(f"baseline {name:18s} loop+sklearn {theirs['bound']:.4f} in "
              f"{theirs['wall_s']:.1f} s; dpaudit {ours['bound']:.4f} in "
              f"{ours['wall_s']:.1f} s at {ours['factor']}x the samples "
              f"({base[-1]['speedup']:.0f}x)", flush=True)  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    (OUT if part == 0 else _part_path(part)).write_text(json.dumps({
        "benchmark": "mechanism_suite", "quick": QUICK, "machine": platform.platform(),
        "cpus": os.cpu_count(), "load_average": os.getloadavg(), "suite_wall_s": suite_wall,
        "statdp_wall_s": statdp_wall, "rows": rows, "statdp": statdp, "baseline": base,
        "library_samplers": samplers, "library_versions": library_versions(),
    }, indent=2, default=float))  # fmt: skip
    print(
        f"suite: {len(rows)} mechanisms in {suite_wall / 60:.1f} min, StatDP's "
        f"{len(statdp)} in {statdp_wall / 60:.1f} min -> {OUT}"
    )


def _part_path(part: int) -> Path:
    return OUT.with_name(f"mechanism_suite.part{part}.json")


def merge() -> None:
    """Join the parts (suite rows in registry order, wall times summed) into OUT."""
    parts = sorted(OUT.parent.glob("mechanism_suite.part*.json"))
    loaded = [json.loads(p.read_text()) for p in parts]
    order = [*MECHANISMS.names("dp-sniper"), "naive-float-laplace"]
    out = next(d for d in loaded if d["statdp"])
    out["rows"] = sorted((r for d in loaded for r in d["rows"]),
                         key=lambda r: order.index(r["mechanism"]))  # fmt: skip
    out["suite_wall_s"] = sum(d["suite_wall_s"] for d in loaded)
    out["baseline"] = [r for d in loaded for r in d["baseline"]]
    out["load_average"] = [d["load_average"] for d in loaded]
    out["note"] = (f"run as {len(parts)} parts side by side (--part); suite_wall_s is the sum of "
                   f"their suite times")  # fmt: skip
    OUT.write_text(json.dumps(out, indent=2, default=float))
    for p in parts:
        p.unlink()


def cli(argv: list[str] | None = None) -> None:
    """The command line: the whole suite, one ``--part N [NAMES]``, ``--merge`` or
    ``--diffprivlib`` (adds the diffprivlib part to the stored results)."""
    from _cli import bench_parser, parse

    parser = bench_parser(__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--diffprivlib", action="store_true", help="add the diffprivlib part")
    mode.add_argument(
        "--part", nargs="+", metavar="ARG", help="run part N (N [NAME,NAME…]) side by side"
    )
    mode.add_argument("--merge", action="store_true", help="merge the parts' results")
    args = parse(parser, argv)
    if args.diffprivlib:
        stored = json.loads(OUT.read_text())
        stored["diffprivlib"] = diffprivlib_part()
        OUT.write_text(json.dumps(stored, indent=2, default=float))
    elif args.part:
        if len(args.part) > 2 or not args.part[0].isdigit():
            parser.error(f"--part takes N [NAME,NAME…], got {' '.join(args.part)}")
        names = tuple(args.part[1].split(",")) if len(args.part) > 1 else ()
        main(int(args.part[0]), names)
    elif args.merge:
        merge()
    else:
        main()


if __name__ == "__main__":
    cli()
