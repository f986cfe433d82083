"""Benchmark the white-box DP-SGD audit (issue 27).

1. **End to end** on the shipped config ``dp-sgd-white-box-fashion-mnist`` (the small CNN,
   r = 20,000 Fashion-MNIST examples, 5 epochs at ε = 8, δ = 1e-5, m = 10,000 canary
   gradients carrying the noise the optimizer added, read at 10,000 of the CNN's 38,282
   coordinates): wall time (target ≤ 5 min on 2 cores) and the canary bookkeeping's cost against
   the **same training without the auditor** (same seed, same run; target ≤ 10 %).
2. **No signal lost**: the valid bounds of that real run against the same statistic on the
   idealised simulation (:func:`dpaudit.attacks.simulate_canary_gradients`) with the same q,
   σ, T and m, mean of 5 seeds (target: real ≥ 0.9 × simulated).
3. **Planted bugs** on the issue's idealised setting (q = 0.068, T = 200, a claim of ε = 4;
   a softmax regression on 1,000 digits): the honest system, 0.7× and 0.5× its noise, one run
   each, m = 100,000 and, for 0.7×, m = 500,000 (more canaries than the model has
   coordinates: the canaries' noise is the auditor's, at the optimizer's σ); wall time and
   bounds.

Usage: ``python benchmarks/bench_whitebox_dpsgd.py [--quick]`` (quick: 1 epoch, fewer
canaries, no m = 500,000 run). Writes ``benchmarks/results/whitebox_dpsgd.json`` with the load
average around each part.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import platform
import time
import warnings

import numpy as np

from dpaudit.attacks import canary_gradient_scores, simulate_canary_gradients
from dpaudit.bounds import one_run_bounds
from dpaudit.experiments import WORKFLOWS
from dpaudit.experiments.dpsgd import (
    AuditBoundSettings,
    DataSettings,
    DPSGDAuditSettings,
    WhiteBoxSettings,
    audit_dpsgd,
    load_pool,
)
from dpaudit.systems import DPSGD, DPSGDSettings, train_dpsgd

OUT = pathlib.Path(__file__).parent / "results" / "whitebox_dpsgd.json"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Scaled(DPSGD):
    """DP-SGD training with ``factor`` × the noise it claims (factor < 1: a planted bug)."""

    factor = 1.0

    def train(self, data, canaries=None, included=None, *, rng, progress=None, instrument=None):
        s = dataclasses.replace(self.training_settings,
                                noise_multiplier=self.noise_multiplier * self.factor)  # fmt: skip
        return train_dpsgd(data, canaries, included, s, rng=rng, nominal_size=self.dataset_size,
                           progress=progress, instrument=instrument)  # fmt: skip


def end_to_end(quick: bool) -> dict:
    over = {"training.epochs": 1.0, "white_box.gradient_canaries": 2000} if quick else {}
    s = WORKFLOWS.get("dp-sgd").load_settings("dp-sgd-white-box-fashion-mnist", **over)
    before = _load()
    t0 = time.perf_counter()
    res = audit_dpsgd(s)
    wall = time.perf_counter() - t0
    d = res.detail
    # the same training without the auditor: same members, same seed
    pool = load_pool("fashion-mnist")
    from dpaudit._rng import child_seed
    from dpaudit.experiments.dpsgd.whitebox import draw_members

    layout_seq, train_seq = child_seed(s.seed, 0).spawn(2)
    members = draw_members(pool, s, rng=layout_seq)
    overhead = canary_overhead(s, members, train_seq)
    m = d.mechanism
    entries = {e.adversary: e.lower_bound.epsilon for e in res.entries}
    sim = simulated(m.sampling_rate, m.noise_multiplier, m.steps, s.white_box.gradient_canaries)
    return {
        "settings": "dp-sgd-white-box-fashion-mnist" + (" (quick)" if quick else ""),
        "sampling_rate": m.sampling_rate,
        "noise_multiplier": m.noise_multiplier,
        "steps": m.steps,
        "num_canaries": s.white_box.gradient_canaries,
        "claim": res.entries[0].claim.epsilon,
        "wall_seconds": wall,
        "timings": res.timings,
        "training_seconds": d.training_seconds[0],
        "bookkeeping_seconds": d.bookkeeping_seconds[0],
        "bookkeeping_share": d.bookkeeping_seconds[0] / d.training_seconds[0],
        "overhead_runs": overhead,
        "bounds": entries,
        "simulated_mean_of_5": sim,
        "real_over_simulated": {k: entries[k] / v for k, v in sim.items() if v > 0},
        "load_before": before,
        "load_after": _load(),
    }


def canary_overhead(s: DPSGDAuditSettings, members, seed, rounds: int = 4) -> dict:
    """The same 200 steps of training with and without the auditor, interleaved ``rounds``
    times in alternating order (the machine's load hits both alike); the overhead of the
    fastest of each, and the auditor's own timed share (its ``bookkeeping_seconds``)."""
    from dpaudit.integrations.opacus import CanaryAuditor

    training = dataclasses.replace(s.training, steps=200)
    system = DPSGD(training, s.data.num_non_canaries)

    def attach(opt, q):
        CanaryAuditor(opt, sample_rate=q, num_canaries=s.white_box.gradient_canaries, rng=0)

    with_, without = [], []
    for r in range(rounds):
        for audited in (False, True) if r % 2 == 0 else (True, False):
            run = system.train(members, rng=seed, instrument=attach if audited else None)
            (with_ if audited else without).append(run.seconds)
    return {"steps": 200, "with_auditor": with_, "without_auditor": without,
            "overhead": min(with_) / min(without) - 1.0}  # fmt: skip


def simulated(q: float, sigma: float, steps: int, m: int, seeds: int = 5) -> dict:
    """Mean valid bounds of the idealised model with the same q, σ, T, m (true σ in the LLR)."""
    out: dict[str, list[float]] = {}
    for seed in range(seeds):
        y, inc = simulate_canary_gradients(m, steps, sampling_rate=q, noise_multiplier=sigma,
                                           rng=seed)  # fmt: skip
        for stat in ("llr", "inner"):
            sc = canary_gradient_scores(y, statistic=stat, sampling_rate=q,
                                        noise_multiplier=sigma)  # fmt: skip
            b = one_run_bounds(sc, inc, delta=1e-5, rng=seed)
            for name, v in (("or", b.steinke.epsilon), ("or-fdp", b.fdp.epsilon),
                            ("max", b.max_valid)):  # fmt: skip
                out.setdefault(f"{stat}:{name}", []).append(v)
    return {k: float(np.mean(v)) for k, v in out.items()}


def planted(quick: bool) -> list[dict]:
    training = DPSGDSettings(model="mlp", hidden=(), steps=200, batch_size=68,
                             target_epsilon=4.0, accountant="rdp", learning_rate=0.5,
                             momentum=0.0)  # fmt: skip
    cases = [(1.0, 100_000), (0.7, 100_000), (0.5, 100_000)]
    if not quick:
        cases.append((0.7, 500_000))
    else:
        cases = [(f, 20_000) for f, _ in cases]
    rows = []
    for factor, m in cases:
        s = DPSGDAuditSettings(
            threat_model="white-box",
            data=DataSettings(dataset="digits", num_non_canaries=1000, num_holdout=0),
            white_box=WhiteBoxSettings(gradient_canaries=m, noise_source="auditor"),
            training=training,
            audit=AuditBoundSettings(max_guess_points=500),
        )  # fmt: skip
        system = type("Scaled", (Scaled,), {"factor": factor})(training, 1000)
        before = _load()
        t0 = time.perf_counter()
        res = audit_dpsgd(s, system=system)
        wall = time.perf_counter() - t0
        entries = {e.adversary: e.lower_bound.epsilon for e in res.entries}
        valid = {k: v for k, v in entries.items() if not k.endswith("gaussian-pair")}
        claim = res.entries[0].claim.epsilon
        rows.append({
            "noise_factor": factor, "num_canaries": m, "claim": claim, "wall_seconds": wall,
            "bounds": entries, "refuted": max(valid.values()) > claim,
            "sigma_estimated": res.detail.runs[0].noise_multipliers,
            "load_before": before, "load_after": _load(),
        })  # fmt: skip
    return rows


def main() -> None:
    from _cli import bench_parser

    ap = bench_parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    quick = args.quick or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
    warnings.filterwarnings("ignore", category=UserWarning)
    e2e = end_to_end(quick)
    bugs = planted(quick)
    out = {"machine": platform.platform(), "cpus": os.cpu_count(), "quick": quick,
           "end_to_end": e2e, "planted_bugs": bugs}  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2, default=float) + "\n")
    ov = e2e["overhead_runs"]
    print(
        f"white-box end to end: {e2e['wall_seconds']:.0f} s (target ≤ 300 s); the auditor's "
        f"bookkeeping {100 * e2e['bookkeeping_share']:.1f} % of the training time; 200 steps "
        f"with / without it (fastest of {len(ov['with_auditor'])}): "
        f"{min(ov['with_auditor']):.1f} / {min(ov['without_auditor']):.1f} s, overhead "
        f"{100 * ov['overhead']:.1f} % (target ≤ 10 %)"
    )
    for k in ("llr:or-fdp", "llr:max", "inner:or-fdp"):
        print(
            f"  {k}: real {e2e['bounds'][k]:.3f} vs simulated {e2e['simulated_mean_of_5'][k]:.3f}"
            f" (ratio {e2e['real_over_simulated'].get(k, float('nan')):.2f}; target ≥ 0.9); "
            f"claim {e2e['claim']:.2f}"
        )
    for r in bugs:
        b = r["bounds"]
        print(
            f"noise × {r['noise_factor']}, m = {r['num_canaries']}: llr:or-fdp "
            f"{b['llr:or-fdp']:.2f}, llr:max {b['llr:max']:.2f} vs claim {r['claim']:.2f} → "
            f"{'REFUTED' if r['refuted'] else 'not refuted'} in {r['wall_seconds']:.0f} s"
        )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
