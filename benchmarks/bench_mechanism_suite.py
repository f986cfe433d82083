"""Benchmark: the DP-Sniper suite audited by ``dpaudit audit mechanism`` (issue 31).

For every mechanism of the suite (Bichsel et al. 2021, IEEE S&P, at ε = 0.1) and the naive
floating-point Laplace (Mironov 2012): the bound, its samples and wall time, next to DP-Sniper's
published bound and the true ε where known. Baseline (same run, same machine): the same audit
written the way research code does it — a plain Python loop over samples calling the mechanism
one output at a time (``mechanism(database, rng)``) and scikit-learn's ``LogisticRegression``
(DP-Sniper's default classifier) on the same pair, the same sample sizes and the same
threshold rule, then the same exact Clopper–Pearson bound. The baseline runs on a few
mechanisms (its loops are slow); the speed-up is the ratio of wall times at those.

Targets (issue 31): ≥ 10× faster than the baseline at the same bound; the whole suite in
≤ 30 min on 2 cores.

Run: ``python benchmarks/bench_mechanism_suite.py`` (writes
``benchmarks/results/mechanism_suite.json``); ``DPAUDIT_BENCH_QUICK=1`` for a smaller run.
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

QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
TRAIN = 20_000 if QUICK else 100_000
SAMPLES = 200_000 if QUICK else 10_000_000
# Mechanisms whose best events have probabilities of a few per cent: ten times the training
# and selection samples (to rank the outputs) and five times the fresh ones (DP-Sniper's
# published bounds for them come from more samples than 10^7).
LARGE = () if QUICK else ("svt1", "svt2", "svt3", "svt4", "prefix-sum")
BASELINE = ("laplace", "report-noisy-max1", "svt1")
BASELINE_EVAL = 20_000 if QUICK else 200_000  # the baseline's loop, timed and compared
OUT = Path(__file__).parent / "results" / "mechanism_suite.json"


def run_dpaudit(name: str, samples: int = SAMPLES, pair=None, train: int = TRAIN) -> dict:
    given = {} if pair is None else {"pair_a": tuple(pair[0]), "pair_b": tuple(pair[1])}
    s = MechanismAuditSettings(mechanism=name, train_samples=train, select_samples=train,
                               samples=samples, block_size=2**18, seed=0, **given)  # fmt: skip
    t0 = time.perf_counter()
    e = audit_mechanism(s).entries[0]
    wall = time.perf_counter() - t0
    spec, w = MECHANISMS.get(name), e.detail
    return {
        "mechanism": name, "claim": e.claim.epsilon, "true_epsilon": spec.true_epsilon,
        "published_dp_sniper": spec.published_lower, "bound": e.lower_bound.epsilon,
        "refutes_claim": e.gap.refutes_claim, "attack": w.attack,
        "pair": [list(w.database_a), list(w.database_b)], "event": w.event[:300],
        "count_a": w.count_a, "count_b": w.count_b, "train_samples": train,
        "select_samples": train, "samples": samples, "wall_s": wall,
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


def run_baseline(name: str, pair, eval_n: int) -> dict:
    """Research-code audit of one pair: loop sampling, sklearn logistic regression, the
    threshold with the best point estimate on the selection samples, CP on fresh samples."""
    from sklearn.linear_model import LogisticRegression

    spec = MECHANISMS.get(name)
    a, b = np.asarray(pair[0]), np.asarray(pair[1])
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    n = TRAIN
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


def main() -> None:
    names = [*MECHANISMS.names("dp-sniper"), "naive-float-laplace"]
    rows, t_all = [], time.perf_counter()
    for name in names:
        large = name in LARGE
        row = run_dpaudit(name, samples=SAMPLES * (5 if large else 1),
                          train=TRAIN * (10 if large else 1))  # fmt: skip
        rows.append(row)
        print(f"{name:22s} claim {row['claim']:.3f}  bound {row['bound']:.4f}  "
              f"published {row['published_dp_sniper']}  true {row['true_epsilon']}  "
              f"{row['wall_s']:.1f} s", flush=True)  # fmt: skip
    suite_wall = time.perf_counter() - t_all
    base = []
    for name in BASELINE:
        row = next(r for r in rows if r["mechanism"] == name)
        # same pair, same sample sizes as the baseline
        ours = run_dpaudit(name, samples=BASELINE_EVAL, pair=row["pair"])
        theirs = run_baseline(name, row["pair"], BASELINE_EVAL)
        base.append({"mechanism": name, "dpaudit_bound": ours["bound"],
                     "dpaudit_wall_s": ours["wall_s"], "baseline_bound": theirs["bound"],
                     "baseline_wall_s": theirs["wall_s"],
                     "speedup": theirs["wall_s"] / ours["wall_s"],
                     "note": "both audit the pair the suite run chose, with the same "
                             "train/select/evaluation sizes"})  # fmt: skip
        print(f"baseline {name:18s} dpaudit {ours['bound']:.4f} in {ours['wall_s']:.1f} s; "
              f"loop+sklearn {theirs['bound']:.4f} in {theirs['wall_s']:.1f} s "
              f"({base[-1]['speedup']:.0f}x)", flush=True)  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "benchmark": "mechanism_suite", "quick": QUICK, "machine": platform.platform(),
        "cpus": os.cpu_count(), "suite_wall_s": suite_wall, "rows": rows, "baseline": base,
    }, indent=2, default=float))  # fmt: skip
    print(f"suite: {len(rows)} mechanisms in {suite_wall / 60:.1f} min -> {OUT}")


if __name__ == "__main__":
    main()
