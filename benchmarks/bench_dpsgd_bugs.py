"""Benchmark: the DP-SGD bug catalogue at its stated settings (issue 25).

For every audit of :data:`dpaudit.experiments.dpsgd_bugs.BUG_AUDITS`: the library's claim,
dpaudit's valid lower bound, the counts and the wall time, for the buggy variant and for the
correct implementation in the same setting; then the correct implementation under every
audit over 20 seeds (how often it is refuted: it must be 0). Baseline (same run, same
machine): the audit's runs written the way a one-off script does it — a fresh
``PrivacyEngine.make_private`` per training run — against dpaudit's session, which builds
the Opacus objects once per dataset and reseeds them; the speed-up is the ratio of the
per-run times.

Targets (issue 25): each bug refuted within 10 min on 2 cores; the whole catalogue in
≤ 60 min on 2 cores; the correct implementation refuted in 0 of ≥ 20 seeds.

Run: ``python benchmarks/bench_dpsgd_bugs.py`` (writes ``benchmarks/results/dpsgd_bugs.json``);
``DPAUDIT_BENCH_QUICK=1`` for a smaller run (a tenth of the runs, 5 control seeds).
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from dpaudit.attacks import BUG_STATISTICS, bug_pair
from dpaudit.experiments.dpsgd_bugs import BUG_AUDITS, DPSGDBugsSettings, audit_bug
from dpaudit.systems import DPSGD_VARIANTS

QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
SCALE = 0.1 if QUICK else 1.0
SEEDS = 5 if QUICK else 20
#: Run counts of the 20-seed controls, as a fraction of the audit's (the two audits with
#: thousands of runs are repeated at a tenth / a quarter of them: 20 full repetitions of the
#: shuffled audit alone would take about 2.5 h on this machine).
CONTROL_SCALE = {"shuffle": 0.1, "batch-clipping": 0.25}
OUT = Path(__file__).parent / "results" / "dpsgd_bugs.json"


def _settings(seed: int = 0, scale: float = 1.0) -> DPSGDBugsSettings:
    return DPSGDBugsSettings(runs_scale=SCALE * scale, executor="processes", workers=2, seed=seed)


def _row(e) -> dict:
    d = e.detail
    return {
        "audit": d.bug, "variant": d.variant, "system": e.system, "defect": d.defect,
        "source": d.source, "runs_what": d.runs_what, "pair": d.pair, "fillers": d.fillers,
        "statistic": d.statistic, "setting": {
            "dimension": d.setting.dimension, "batch_size": d.setting.batch_size,
            "epochs": d.setting.epochs, "noise_multiplier": d.setting.noise_multiplier,
            "max_grad_norm": d.setting.max_grad_norm, "accountant": d.setting.accountant},
        "delta": d.delta, "claim": e.claim.epsilon, "claim_out": d.claim_out,
        "claim_in": d.claim_in, "bound": e.lower_bound.epsilon,
        "refutes_claim": e.gap.refutes_claim, "tp": d.tp, "fp": d.fp, "runs": d.runs,
        "pilot_runs": d.pilot_runs, "threshold": d.threshold, "wall_s": d.wall_seconds,
        "published": d.published,
    }  # fmt: skip


def catalogue() -> list[dict]:
    rows = []
    for name in BUG_AUDITS.names():
        a = BUG_AUDITS.get(name)
        for variant in (a.bug, "poisson"):
            rows.append(_row(audit_bug(name, variant, _settings())))
            r = rows[-1]
            print(f"{r['system']:42s} claim {r['claim']:.3f}  bound {r['bound']:.3f}  "
                  f"refuted {r['refutes_claim']!s:5s} {r['wall_s']:.0f} s", flush=True)  # fmt: skip
    return rows


def controls() -> dict:
    out = {}
    for name in BUG_AUDITS.names():
        bounds, claims, scale = [], [], CONTROL_SCALE.get(name, 1.0)
        for seed in range(1, SEEDS + 1):
            e = audit_bug(name, "poisson", _settings(seed, scale))
            bounds.append(e.lower_bound.epsilon)
            claims.append(e.claim.epsilon)
        refuted = int(sum(b > c for b, c in zip(bounds, claims, strict=True)))
        out[name] = {"seeds": SEEDS, "refuted": refuted, "claim": claims[0],
                     "runs": e.detail.runs, "pilot_runs": e.detail.pilot_runs,
                     "bound_max": max(bounds), "bound_mean": float(np.mean(bounds))}  # fmt: skip
        print(f"control under {name:22s} ({e.detail.runs} runs) refuted {refuted}/{SEEDS}, "
              f"bound max {max(bounds):.3f} vs claim {claims[0]:.3f}", flush=True)  # fmt: skip
    return out


def baseline(runs: int = 100) -> dict:
    """Per-run time: a fresh ``make_private`` per run against one reused session."""
    a = BUG_AUDITS.get("shuffle")
    out, _ = bug_pair(a.pair, a.fillers, a.setting)
    v, stat = DPSGD_VARIANTS.get("shuffle"), BUG_STATISTICS.get(a.statistic)
    t0 = time.perf_counter()
    for seed in range(runs):
        stat.score(v.session(out, a.setting).run(seed), a.setting, 0.25)
    fresh = (time.perf_counter() - t0) / runs
    session = v.session(out, a.setting)
    session.run(0)
    t0 = time.perf_counter()
    for seed in range(runs):
        stat.score(session.run(seed), a.setting, 0.25)
    reused = (time.perf_counter() - t0) / runs
    print(f"per run: fresh make_private {fresh * 1e3:.1f} ms, reused session "
          f"{reused * 1e3:.1f} ms ({fresh / reused:.1f}x)", flush=True)  # fmt: skip
    return {"fresh_make_private_s": fresh, "reused_session_s": reused, "speedup": fresh / reused}


def main() -> None:
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    base = baseline()
    rows = catalogue()
    t1 = time.perf_counter()
    ctl = controls()
    import opacus
    import torch

    result = {
        "quick": QUICK, "opacus": opacus.__version__, "torch": torch.__version__,
        "machine": platform.machine(), "cpus": os.cpu_count(),
        "executor": "processes", "workers": 2, "catalogue": rows,
        "catalogue_wall_s": t1 - t0, "controls": ctl, "baseline": base,
        "load_before": load0, "load_after": os.getloadavg(),
        "total_wall_s": time.perf_counter() - t0,
    }  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"catalogue {t1 - t0:.0f} s; total {time.perf_counter() - t0:.0f} s -> {OUT}")


if __name__ == "__main__":
    main()
