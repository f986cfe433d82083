"""Benchmark: ``dpaudit monitor`` on the demo's deployment (issue 41, item 4).

The deployment is the demo's system — PATE on scikit-learn's digits, 30 teachers, σ = 4 —
served by :class:`dpaudit.serve.PredictionService` with its answer cache off (a repeated
query gets fresh noise), every answer recorded in its ledger with its vote histogram. Client
traffic: requests of 250 digits test images drawn uniformly (seeded per stream); the
:class:`dpaudit.serve.monitor.LedgerMonitor` polls the ledger after every request.

1. **Honest deployment**: ``--streams`` streams of ``LENGTH`` answers each; the number of
   streams that ever alarm at the default β = 10⁻⁴ (target: none), and — from each stream's
   running maximum of the e-value — how many would have alarmed at β = 0.05 and 0.01
   (Ville: at most β of them in expectation).
2. **σ/2**: the same deployment whose noise source draws standard normals of standard deviation
   1/2 (it claims and charges σ = 4, answers with σ = 2): answers until the alarm over
   ``--bug-streams`` streams, at β = 10⁻⁴ and β = 0.05 (target: median ≤ 2,000).
3. The ε confidence sequence (one answer, if the noise is Gaussian): on every honest stream its
   lower bound must stay below the exact ε of one answer at the claim.

Run: ``python benchmarks/bench_monitor.py`` (``--quick`` or ``DPAUDIT_BENCH_QUICK=1``: 40
honest and 20 σ/2 streams; ``--streams N``, ``--bug-streams N``); writes
``benchmarks/results/monitor.json``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np

from dpaudit.data import load_subset
from dpaudit.serve import MemoryLedger, PredictionService, ServeSettings, build_service
from dpaudit.serve.monitor import CONFIDENCE_LEVEL, LedgerMonitor, TopProbabilities, noise_grid

LENGTH = 10_000
BATCH = 250
SIGMA = 4.0


class HalfNoise(np.random.Generator):
    """The planted bug: standard normals of standard deviation 1/2."""

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return 0.5 * super().standard_normal(size)


def _deployment():
    s = ServeSettings.of(teachers=30, sigma=SIGMA, dataset="digits", ledger=":memory:",
                         cache=False, epsilon=1e12, client_epsilon=1e11)  # fmt: skip
    svc = build_service(s)
    return svc.interface, svc.ledger.config, load_subset("digits", seed=0).X_test


def _stream(dep, top, seed, *, bug, levels):
    interface, config, X = dep
    led = MemoryLedger(config, global_budget=1e12)
    noise_seed, traffic_seed = seed.spawn(2)
    rng = HalfNoise(np.random.PCG64(noise_seed)) if bug else np.random.default_rng(noise_seed)
    svc = PredictionService(interface, led, noise_rng=rng)
    client = svc.authenticate(led.add_client("traffic", 1e11))
    monitors = [LedgerMonitor(led, probabilities=top, confidence_level=c, name=f"m{i}")
                for i, c in enumerate(levels)]  # fmt: skip
    g = np.random.default_rng(traffic_seed)
    statuses = []
    for _ in range(LENGTH // BATCH):
        svc.predict(client, X[g.integers(0, len(X), size=BATCH)])
        statuses = [m.poll() for m in monitors]
        if bug and all(s.alarm for s in statuses):
            break
    return statuses


def main() -> None:
    from _cli import bench_parser, parse, quick

    ap = bench_parser(__doc__, quick_option=True)
    ap.add_argument("--streams", type=int, default=None, help="honest streams (200; quick 40)")
    ap.add_argument("--bug-streams", type=int, default=None, help="sigma/2 streams (100; 20)")
    args = parse(ap)
    is_quick = quick(args)
    streams = args.streams or (40 if is_quick else 200)
    bug_streams = args.bug_streams or (20 if is_quick else 100)
    t0 = time.perf_counter()
    dep = _deployment()
    top = TopProbabilities(noise_grid(SIGMA))
    root = np.random.SeedSequence(20260412)
    honest_seeds, bug_seeds = root.spawn(2)

    t = time.perf_counter()
    honest = [_stream(dep, top, s, bug=False, levels=[CONFIDENCE_LEVEL])[0]
              for s in honest_seeds.spawn(streams)]  # fmt: skip
    honest_s = time.perf_counter() - t
    max_log = np.array([s.max_log_e_value for s in honest])
    would = {str(b): int((max_log >= math.log(1 / b)).sum()) for b in (0.05, 0.01, 1e-4)}

    t = time.perf_counter()
    levels = [CONFIDENCE_LEVEL, 0.95]
    bug = [_stream(dep, top, s, bug=True, levels=levels) for s in bug_seeds.spawn(bug_streams)]
    bug_s = time.perf_counter() - t
    at = {}
    for i, c in enumerate(levels):
        hits = [s[i].alarm_at for s in bug]
        done = [h for h in hits if h is not None]
        at[str(round(1 - c, 6))] = {
            "alarmed": len(done),
            "streams": len(hits),
            "median_answers_to_alarm": float(np.median(done)) if done else None,
            "quartiles": [float(q) for q in np.percentile(done, [25, 75])] if done else None,
            "max": int(max(done)) if done else None,
        }

    answers = streams * LENGTH
    out = {
        "deployment": "PATE on digits (scikit-learn), 30 teachers, sigma=4, cache off",
        "traffic": f"requests of {BATCH} digits test images, uniform; monitor polls after each",
        "honest": {
            "streams": streams,
            "answers_per_stream": LENGTH,
            "alarms_at_default_beta": sum(s.alarm for s in honest),
            "default_beta": round(1 - CONFIDENCE_LEVEL, 6),
            "would_alarm_at_beta": would,
            "max_log_e_value_quantiles": [float(q) for q in np.percentile(max_log, [50, 90, 99])],
            "max_log_e_value_max": float(max_log.max()),
            "sigma_upper_median": float(np.median([s.sigma_upper or np.inf for s in honest])),
            "sigma_upper_min": float(min(s.sigma_upper or np.inf for s in honest)),
            "epsilon_exact_claimed": honest[0].epsilon_exact_claimed,
            "epsilon_lower_max": max((s.epsilon_lower or 0.0) for s in honest),
            "epsilon_lower_covers": all(
                (s.epsilon_lower or 0.0) <= s.epsilon_exact_claimed for s in honest
            ),
            "seconds": honest_s,
            "answers_per_second_end_to_end": answers / honest_s,
        },
        "half_sigma": {
            "streams": bug_streams,
            "by_beta": at,
            "sigma_upper_median_at_alarm": float(
                np.median([s[0].sigma_upper or np.inf for s in bug])
            ),
            "epsilon_lower_median_at_alarm": float(
                np.median([s[0].epsilon_lower or 0.0 for s in bug])
            ),
            "seconds": bug_s,
        },
        "targets": {"honest_alarms": 0, "half_sigma_median_answers": 2000},
        "quick": is_quick,
        "seconds": time.perf_counter() - t0,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    path = Path(__file__).parent / "results" / "monitor.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
