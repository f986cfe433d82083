"""Benchmark PromptPATE (issue 19): teacher votes per second and the paper-scale audit.

1. **Votes per second**, vote cache off, rotten-tomatoes prompts cut to 16 words. (a) The same
   (teacher, query) pairs through the plain loop (one full forward pass of the causal LM per
   pair) and the KV-cached path
   (:class:`dpaudit.systems.private_prediction._llm_voter.PromptVoter`: prefix keys and
   values once per teacher, several teachers' queries pooled into length batches, label
   logits only), one torch thread each; the answers are compared on every pair (target: all
   equal on ≥ 200 pairs) and the speed-up is the target's ≥ 5×. (b) The KV-cached path on a
   block of every teacher × 200 queries, as in the training phase: one thread, two threads
   in one process (on an eighth of the block: OpenMP threads stall when the other core is
   busy), two worker processes of one thread; the projected wall time of the paper's
   40,000 training votes per dataset from the best two-core rate (target ≤ 30 min). (c) The
   opt-in ``dtype="bfloat16"`` path on the same block: its speed and the fraction of answers
   that differ from float32's (the reference).
2. **The paper-scale audit** (Chadha et al. 2024, arXiv:2402.09403, §5.3, App. D.2): the
   shipped configs ``prompt-pate-rotten-tomatoes`` and ``prompt-pate-wordnet-nouns-4``
   (200 teachers × 200 queries, all six PromptPATE adversaries, 10^8 experiments per query)
   with a cold vote cache (a fresh directory), its wall time per stage (target ≤ 30 min per
   dataset on 2 cores); then the four Pois-NatQ prompts again at level 1 − β/4 (votes from
   the now warm cache) for the valid best-of-four bound (:func:`dpaudit.attacks.best_of`).
   Writes the results and plots under ``docs/results/prompt-pate/<dataset>/``.

The machine's load average is recorded at the start and end of every part: on a shared
machine the wall times are upper bounds of what a quiet one gives (CPU seconds are recorded
too: this process's, or the finished worker processes').

Usage: ``python benchmarks/bench_prompt_pate.py [--quick] [--skip-audit] [--one-process]
[--no-bf16] [--datasets rotten-tomatoes,wordnet-nouns-4]``. Quick: 4 teachers × 10 queries
(block: × 80) for part 1 and no paper-scale audit. Writes ``benchmarks/results/prompt_pate.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import platform
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "prompt_pate.json"
DOCS = ROOT / "docs" / "results" / "prompt-pate"
NATQ = (
    "prompt-pois-natq-confident",
    "prompt-pois-natq-unconfident",
    "prompt-pois-natq-all-same",
    "prompt-pois-natq-mapping",
)
SUMMARY_ORDERS = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ----------------------------------------------------------------------------- throughput


#: The paper's training phase per dataset: 200 teachers × 200 queries (Chadha et al. 2024).
PAPER_VOTES = 40_000
#: Its target wall time per dataset on this 2-core machine, minutes.
TARGET_MINUTES = 30.0


def _timed(out: dict, label: str, pairs: int, fn, *, children: bool = False):
    """Run ``fn``; record wall and CPU seconds (this process, or its finished worker
    processes with ``children``), votes per second and the load average around it."""
    import resource

    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    r0, l0, w0 = resource.getrusage(who), load(), time.perf_counter()
    table = fn()
    wall, r1 = time.perf_counter() - w0, resource.getrusage(who)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    out[label] = {
        "pairs": pairs,
        "seconds": wall,
        "cpu_seconds": cpu,
        "votes_per_second": pairs / wall,
        "votes_per_cpu_second": pairs / cpu if cpu > 0 else None,
        "load_average_start": l0,
        "load_average_end": load(),
    }
    return table


def worker_start_seconds(voter, workers: int = 2) -> float:
    """Wall seconds until ``workers`` spawned processes have imported torch and transformers
    and loaded the model: what a parallel ``PromptVoter.votes`` call pays once, whatever its
    size (each submits an empty job)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    from dpaudit.systems.private_prediction._llm_voter import _worker_logits

    start = time.perf_counter()
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        for fut in [pool.submit(_worker_logits, voter._worker_spec(), []) for _ in range(workers)]:
            fut.result()
    return time.perf_counter() - start


def throughput(quick: bool, one_process: bool = False, bf16: bool = True) -> dict:
    """Part 1: the plain loop and the KV-cached path on the same pairs (answers compared),
    then the KV-cached path on a training-phase-sized block (``teachers × queries_rate``)
    with 1 thread, 2 threads in one process and 2 worker processes of 1 thread, and the
    opt-in bfloat16 path (speed, and its answers against float32's)."""
    import torch

    from dpaudit.data import load_dataset
    from dpaudit.mechanisms import GNMax
    from dpaudit.systems.private_prediction._llm import load_language_model
    from dpaudit.systems.private_prediction._llm_voter import _MIN_PARALLEL_PAIRS, PromptVoter
    from dpaudit.systems.private_prediction.prompt_pate import (
        PromptPATE,
        PromptPATEOptions,
        TeacherPrompt,
    )

    ds = load_dataset("rotten-tomatoes")
    pp = PromptPATE(2, GNMax(1.0), PromptPATEOptions(task="rotten-tomatoes", max_words=16))
    t = pp.template
    m, q, q_rate = (4, 10, 80) if quick else (8, 25, 200)
    prompts = [TeacherPrompt(((pp._text(ds.X_train[i]), int(ds.y_train[i])),)) for i in range(m)]
    prefixes = [t.prefix(p) for p in prompts]
    all_suffixes = [t.query(pp._text(x)) for x in ds.X_test[:q_rate].tolist()]
    suffixes = all_suffixes[:q]
    start = time.perf_counter()
    lm = load_language_model()
    load_s = time.perf_counter() - start
    out: dict = {
        "teachers": m,
        "queries": q,
        "pairs": m * q,
        "queries_rate": q_rate,
        "pairs_rate": m * q_rate,
        "load_average_start": load(),
        "torch_threads_default": torch.get_num_threads(),
        "model_load_seconds": load_s,
        "query_tokens_mean": float(np.mean([len(lm.encode(s)) for s in all_suffixes])),
        "prefix_tokens_mean": float(np.mean([len(lm.encode(p)) for p in prefixes])),
    }

    def voter(threads: int, workers: int = 1, dtype: str = "float32") -> PromptVoter:
        return PromptVoter(
            lm,
            t.label_words,
            t.answer_prefix,
            label_tokens="single",
            batch_size=32,
            threads=threads,
            workers=workers,
            dtype=dtype,
        )

    one, two = voter(1), voter(2)
    one.votes(prefixes[:1], suffixes[:4])  # warm-up (first calls allocate)
    # (a) the same pairs: plain loop vs KV-cached, one thread each, answers compared
    plain = _timed(out, "plain_loop_1_thread", m * q, lambda: one.votes_plain(prefixes, suffixes))
    kv = _timed(out, "kv_cached_1_thread", m * q, lambda: one.votes(prefixes, suffixes))
    out["speedup_1_thread"] = (
        out["kv_cached_1_thread"]["votes_per_second"]
        / out["plain_loop_1_thread"]["votes_per_second"]
    )
    out["answers_equal"] = int(np.sum(kv.votes == plain.votes))
    out["max_abs_logit_difference"] = float(np.max(np.abs(kv.logits - plain.logits)))
    out["min_margin"] = float(np.min(plain.margins))
    # (b) a training-phase block: every teacher on q_rate queries
    n = m * q_rate
    ref = _timed(out, "kv_rate_1_thread", n, lambda: one.votes(prefixes, all_suffixes))
    # two OpenMP threads stall when the other core is busy: an eighth of the block bounds it
    m2 = max(1, m // 8)
    two_t = _timed(
        out, "kv_rate_2_threads", m2 * q_rate, lambda: two.votes(prefixes[:m2], all_suffixes)
    )
    out["answers_equal_2_threads"] = int(np.sum(two_t.votes == ref.votes[:, :m2]))
    if not one_process:
        w2 = voter(1, workers=2)
        two_w = _timed(
            out,
            "kv_rate_2_workers",
            n,
            lambda: w2.votes(prefixes, all_suffixes),
            children=True,
        )
        out["answers_equal_2_workers"] = int(np.sum(two_w.votes == ref.votes))
        # the workers' start-up is paid once per call: the rate of a long call excludes it
        # (a call of fewer than _MIN_PARALLEL_PAIRS pairs runs in this process instead)
        w = out["kv_rate_2_workers"]
        w["in_workers"] = n >= _MIN_PARALLEL_PAIRS
        if w["in_workers"]:
            start_s = worker_start_seconds(w2)
            w["worker_start_seconds"] = start_s
            w["votes_per_second_after_start"] = n / max(w["seconds"] - start_s, 1e-9)
    # the shipped configs' setting (2 workers of 1 thread) where measured
    best = "kv_rate_2_workers" if "kv_rate_2_workers" in out else "kv_rate_2_threads"
    rate = out[best].get("votes_per_second_after_start", out[best]["votes_per_second"])
    start_s = out[best].get("worker_start_seconds", 0.0)
    out["projected_paper_training_phase"] = {
        "votes": PAPER_VOTES,
        "from": best,
        "votes_per_second": rate,
        "worker_start_seconds": start_s,
        "minutes": (start_s + PAPER_VOTES / rate) / 60,
        "target_minutes": TARGET_MINUTES,
        "votes_per_second_needed": PAPER_VOTES / (TARGET_MINUTES * 60),
        "load_average_during": out[best]["load_average_end"],
    }
    if bf16:  # opt-in reduced precision: its speed and how often its answer differs
        b1 = voter(1, dtype="bfloat16")
        b1.votes(prefixes[:1], suffixes[:4])  # builds the bfloat16 copy of the weights
        bt = _timed(out, "kv_rate_1_thread_bfloat16", n, lambda: b1.votes(prefixes, all_suffixes))
        bp = b1.votes(prefixes, suffixes)
        out["bfloat16"] = {
            "pairs": n,
            "answers_differing_from_float32": int(np.sum(bt.votes != ref.votes)),
            "fraction_differing": float(np.mean(bt.votes != ref.votes)),
            "max_abs_logit_difference": float(np.max(np.abs(bt.logits - ref.logits))),
            "answers_differing_from_plain_loop": int(np.sum(bp.votes != plain.votes)),
            "pairs_plain_loop": m * q,
            "speedup_vs_float32_1_thread": out["kv_rate_1_thread_bfloat16"]["votes_per_second"]
            / out["kv_rate_1_thread"]["votes_per_second"],
        }
        if not one_process:
            bw = voter(1, workers=2, dtype="bfloat16")
            _timed(
                out,
                "kv_rate_2_workers_bfloat16",
                n,
                lambda: bw.votes(prefixes, all_suffixes),
                children=True,
            )
    out["load_average_end"] = load()
    return out


# ----------------------------------------------------------------------------- the audit


def settings_for(name: str, cache_dir: str, workers: int | None = None, **audit):
    """The shipped config ``prompt-pate-<name>`` with the vote cache in ``cache_dir`` (and
    ``workers`` voting processes when given), and the dataset to pass (``wordnet-nouns-4`` is
    passed as a Dataset until it is registered)."""
    import tomllib

    from dpaudit.data import DATASET_NAMES
    from dpaudit.experiments.private_prediction.config import find_config, parse_config

    raw = tomllib.loads(find_config(f"prompt-pate-{name}").read_text())
    raw["system"]["options"]["prompt-pate"]["cache_dir"] = cache_dir
    if workers is not None:
        raw["system"]["options"]["prompt-pate"]["workers"] = workers
    dataset = None
    if name == "wordnet-nouns-4" and name not in DATASET_NAMES:
        from dpaudit.data import load_wordnet_nouns_4

        raw["data"]["dataset"] = "wordnet-nouns"
        dataset = dataclasses.replace(load_wordnet_nouns_4(), name="wordnet-nouns")
    for key, value in audit.items():
        section, leaf = key.split(".")
        raw.setdefault(section, {})[leaf] = value
    return parse_config(raw), dataset


def _at(orders, curve, order):
    return float(np.asarray(curve)[int(np.argmin(np.abs(np.asarray(orders) - order)))])


def entry_summary(e) -> dict:
    d = e.detail
    return {
        "adversary": e.adversary,
        "confidence_level": float(e.lower_bound.confidence_level),
        "epsilon_at_delta": {
            "delta": d.epsilon.delta,
            "audit (display only)": d.epsilon.audit,
            "exact": d.epsilon.exact,
            "data_dependent": d.epsilon.data_dependent,
            "data_independent": d.epsilon.data_independent,
        },
        "rdp": {
            str(a): {
                "audit": _at(d.orders, d.audit, a),
                "exact": _at(d.orders, d.exact, a),
                "data_dependent": _at(d.orders, d.data_dependent, a),
                "data_independent": _at(d.orders, d.data_independent, a),
            }
            for a in SUMMARY_ORDERS
        },
        "audit_over_exact_at_10": (
            _at(d.orders, d.audit, 10.0) / _at(d.orders, d.exact, 10.0)
            if _at(d.orders, d.exact, 10.0) > 0
            else None
        ),
        "flips": int(np.sum(d.queries.flips)),
        "worst_query_test_index": d.worst_query_test_index,
        "ordering": d.ordering.to_dict(),
    }


def teacher_stats(system_result_votes) -> dict:
    """How the teachers vote: the copy bias of one-shot prompts."""
    v = system_result_votes
    preds = v.predictions[0]
    labels = np.array([p.examples[0][1] for p in v.prompts])
    return {
        "vote_share_per_class": (np.bincount(preds.ravel(), minlength=v.num_classes) / preds.size)
        .round(4)
        .tolist(),
        "example_share_per_class": (np.bincount(labels, minlength=v.num_classes) / labels.size)
        .round(4)
        .tolist(),
        "share_of_votes_equal_to_own_example_label": float(np.mean(preds == labels[None, :])),
    }


def paper_audit(
    name: str,
    tiny: bool = False,
    vote_cache: str | None = None,
    reduced: tuple[int, int, float] | None = None,
    workers: int | None = None,
    report_dir: pathlib.Path | None = None,
) -> dict:
    """The audit of ``prompt-pate-<name>``: at the paper's scale, ``tiny`` (a smoke test), or
    ``reduced = (teachers, queries, sigma)`` (a reproduction that fits a small machine)."""
    from dpaudit.attacks import best_of
    from dpaudit.experiments.private_prediction import audit_private_prediction, stages
    from dpaudit.report.private_prediction import write_private_prediction_report
    from dpaudit.systems import SYSTEMS

    cache = vote_cache or tempfile.mkdtemp(prefix="prompt-pate-votes-")
    pathlib.Path(cache).mkdir(parents=True, exist_ok=True)
    cold = not any(pathlib.Path(cache).iterdir())
    shrink: dict = (
        {"system.teachers": 6, "adversary.queries": 4, "engine.experiments": 10**6} if tiny else {}
    )
    if reduced is not None:
        m, nq, sigma = reduced
        shrink = {"system.teachers": m, "adversary.queries": nq, "system.sigma": sigma}
    s, dataset = settings_for(name, cache, workers, **shrink)
    out: dict = {"config": f"prompt-pate-{name}", "vote_cache": cache, "load_average_start": load()}
    out["overrides"] = {**shrink, **({} if workers is None else {"workers": workers})}
    out["settings"] = {
        "teachers": s.system.teachers,
        "queries": s.adversary.queries,
        "sigma": s.system.sigma,
        "experiments": s.engine.experiments,
        "confidence_level": s.audit.confidence_level,
        "delta": s.audit.delta,
        "seed": s.seed,
    }
    t0 = time.perf_counter()
    res = audit_private_prediction(s, data=dataset)
    out["wall_seconds_cold_cache" if cold else "wall_seconds_warm_or_partial_cache"] = (
        time.perf_counter() - t0
    )
    out["timings"] = res.timings
    out["load_average_after_cold"] = load()
    out["accuracy_noiseless_plurality"] = res.detail.plurality_accuracy["prompt-pate"]
    out["entries"] = [entry_summary(e) for e in res.entries]
    if report_dir is None:
        report_dir = (DOCS / name) if not tiny else pathlib.Path(cache)
    write_private_prediction_report(res, report_dir)
    out["report_dir"] = str(report_dir)
    # teacher statistics (votes come back from the warm cache)
    system = SYSTEMS.get("prompt-pate")(s.system)
    data = stages.load_data(s, dataset)
    queries = stages.choose_queries(
        data, s.adversary.queries, rng=np.random.SeedSequence(s.seed).spawn(3)[0]
    )
    trained = system.train(
        data.X_train,
        data.y_train,
        queries.X,
        num_classes=data.num_classes,
        rng=stages.child_seed(np.random.SeedSequence(s.seed).spawn(3)[1], 3),
    )
    out["teachers"] = teacher_stats(trained)
    out["teachers"]["votes_recomputed_for_stats"] = trained.computed
    # the valid best of the four Pois-NatQ prompts: each at 1 - beta/4 (warm cache)
    level = 1.0 - (1.0 - s.audit.confidence_level) / len(NATQ)
    s4, _ = settings_for(
        name,
        cache,
        workers,
        **shrink,
        **{"audit.confidence_level": level, "adversary.adversaries": list(NATQ)},
    )
    t1 = time.perf_counter()
    res4 = audit_private_prediction(s4, data=dataset)
    out["wall_seconds_bonferroni_rerun_warm"] = time.perf_counter() - t1
    natq = [e for e in res.entries if e.adversary in NATQ]
    out["best_of_four"] = {
        "none (paper, not valid)": best_of(natq, strategy="none").to_dict(),
        "exact (chosen before sampling, valid at 0.95)": best_of(natq, strategy="exact").to_dict(),
        "bonferroni (valid at 0.95)": best_of(
            res4.entries, strategy="bonferroni", confidence_level=s.audit.confidence_level
        ).to_dict(),
    }
    out["bonferroni_entries"] = [entry_summary(e) for e in res4.entries]
    out["load_average_end"] = load()
    return out


def reproduce(args: argparse.Namespace) -> None:
    """A reduced reproduction of the paper's PromptPATE audit (one file per run, merged by
    dataset into ``prompt_pate_reproduction.json``)."""
    m, nq, sigma = args.reduced.split(",")
    reduced = (int(m), int(nq), float(sigma))
    out = HERE / "results" / "prompt_pate_reproduction.json"
    result = json.loads(out.read_text()) if out.exists() else {}
    result["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
    runs = result.setdefault("runs", {})
    for name in args.datasets.split(","):
        cache = None if args.vote_cache is None else f"{args.vote_cache}/{name}"
        report = ROOT / "runs" / f"prompt-pate-{name}-m{m}-q{nq}-s{sigma}"
        t0 = time.perf_counter()
        a = paper_audit(
            name, vote_cache=cache, reduced=reduced, workers=args.workers, report_dir=report
        )
        a["wall_seconds_total"] = time.perf_counter() - t0
        runs[f"{name}-m{m}-q{nq}-s{sigma}"] = a
        out.write_text(json.dumps(result, indent=2, default=str))
        print(f"{name} m={m} n_Q={nq} sigma={sigma}: {a['wall_seconds_total'] / 60:.1f} min")
        for e in a["entries"]:
            r = e["rdp"]["10.0"]
            print(
                f"  {e['adversary']:30s} RDP@10 audit {r['audit']:.4g} exact {r['exact']:.4g} "
                f"dd {r['data_dependent']:.4g} di {r['data_independent']:.4g}"
            )
        for k, v in a["best_of_four"].items():
            print(f"  best of four, {k}: {v['adversary']} valid={v['valid']} {v['candidates']}")


LABELS = {
    "prompt-nat-advq": "Nat-AdvQ",
    "prompt-pois-advq": "Pois-AdvQ",
    "prompt-pois-natq-confident": "Pois-NatQ Confident",
    "prompt-pois-natq-unconfident": "Pois-NatQ Unconfident",
    "prompt-pois-natq-all-same": "Pois-NatQ All same",
    "prompt-pois-natq-mapping": "Pois-NatQ Mapping",
}


def markdown_tables(
    path: pathlib.Path = HERE / "results" / "prompt_pate_reproduction.json", key: str = "runs"
) -> str:
    """The README tables of the reduced reproduction (``key="runs"``) or of the paper-scale
    audits (``path=OUT, key="audits"``), from their stored JSON."""
    runs = json.loads(path.read_text())[key]
    lines = []
    for key, a in runs.items():
        st = a["settings"]
        lines += [
            f"**{key}** (m = {st['teachers']}, n_Q = {st['queries']}, σ = {st['sigma']:g}; "
            f"noiseless plurality accuracy {a['accuracy_noiseless_plurality']:.3f}):",
            "",
            "| adversary | flips | RDP α=10: audit | exact | data-dep. | data-indep. "
            "| ε audit* | ε exact | ε data-dep. | ε data-indep. |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for e in a["entries"]:
            r, x = e["rdp"]["10.0"], e["epsilon_at_delta"]
            n = st["queries"]
            lines.append(
                f"| {LABELS.get(e['adversary'], e['adversary'])} | {e['flips']}/{n} "
                f"| {r['audit']:.3g} | {r['exact']:.3g} | {r['data_dependent']:.3g} "
                f"| {r['data_independent']:.3g} | {x['audit (display only)']:.3g} "
                f"| {x['exact']:.3g} | {x['data_dependent']:.3g} | {x['data_independent']:.3g} |"
            )
        b = a["best_of_four"]
        rows = []
        for label, v in b.items():
            rdp = dict(zip(v["audit"]["orders"], v["audit"]["epsilons"], strict=True))
            at10 = min(rdp, key=lambda o: abs(float(o) - 10.0))
            rows.append(
                f"{label.split(' ')[0]}: {LABELS[v['adversary']]}, RDP lower bound at α = 10 "
                f"{rdp[at10]:.3g} ({'valid at 95 %' if v['valid'] else 'not valid'})"
            )
        lines += ["", "Best of the four Pois-NatQ prompts: " + "; ".join(rows) + ".", ""]
    return "\n".join(lines)


SHORT = {
    "prompt-nat-advq": "Nat-AdvQ",
    "prompt-pois-advq": "Pois-AdvQ",
    "prompt-pois-natq-confident": "Confident",
    "prompt-pois-natq-unconfident": "Unconfident",
    "prompt-pois-natq-all-same": "All same",
    "prompt-pois-natq-mapping": "Mapping",
}
FIGURE = ROOT / "docs" / "figures" / "prompt-pate-reproduction.png"


def figure(
    path: pathlib.Path = HERE / "results" / "prompt_pate_reproduction.json",
    out: pathlib.Path = FIGURE,
) -> pathlib.Path:
    """One panel per reduced run: RDP at α = 10 of the audit (95 % lower bound), the exact
    curve and both claims, per adversary (the paper's Fig. 3-4 layout, in RDP)."""
    from dpaudit.errors import require

    require("matplotlib", "plot")
    from matplotlib.figure import Figure

    runs = json.loads(path.read_text())["runs"]
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    curves = (
        ("audit", "audit (95 % lower bound)", "#c0392b"),
        ("exact", "exact", "#2e86c1"),
        ("data_dependent", "data-dependent claim", "#27ae60"),
        ("data_independent", "data-independent claim", "#7f8c8d"),
    )
    for ax, (key, a) in zip(axes, runs.items(), strict=False):
        names = [e["adversary"] for e in a["entries"]]
        x = np.arange(len(names))
        for i, (curve, label, colour) in enumerate(curves):
            values = [e["rdp"]["10.0"][curve] for e in a["entries"]]
            ax.bar(x + (i - 1.5) * 0.2, values, 0.2, label=label, color=colour)
        st = a["settings"]
        ax.set_title(
            f"{key.split('-m')[0]}: m = {st['teachers']}, n_Q = {st['queries']}, "
            f"σ = {st['sigma']:g}"
        )
        ax.set_xticks(x, [SHORT.get(n, n) for n in names], rotation=20, fontsize=8)
        ax.set_ylabel("RDP at α = 10")
        ax.set_yscale("symlog", linthresh=0.01)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=9)
    fig.suptitle("PromptPATE (SmolLM2-135M teachers): audit vs exact vs claims")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    return out


def main() -> None:
    from _cli import bench_parser

    ap = bench_parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-audit", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument(
        "--one-process",
        action="store_true",
        help="part 1 without the two-worker measurement (a machine shared with other jobs)",
    )
    ap.add_argument("--no-bf16", action="store_true", help="part 1 without the bfloat16 path")
    ap.add_argument("--datasets", default="rotten-tomatoes,wordnet-nouns-4")
    ap.add_argument("--tiny", action="store_true", help="smoke test of part 2 (not results)")
    ap.add_argument("--vote-cache", default=None, help="vote cache dir (default: a fresh one)")
    ap.add_argument(
        "--reduced",
        default=None,
        metavar="TEACHERS,QUERIES,SIGMA",
        help="a reduced reproduction (written to prompt_pate_reproduction.json, report to runs/)",
    )
    ap.add_argument("--workers", type=int, default=None, help="voting processes (config's)")
    ap.add_argument("--table", action="store_true", help="print the reproduction's tables")
    ap.add_argument(
        "--table-paper", action="store_true", help="print the paper-scale audits' tables"
    )
    args = ap.parse_args()
    if args.table_paper:
        print(markdown_tables(OUT, key="audits"))
        return
    if args.table:
        print(markdown_tables())
        print(f"figure: {figure()}")
        return
    if args.reduced is not None:
        reproduce(args)
        return
    quick = args.quick or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
    result: dict = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform()}}
    if OUT.exists():
        previous = json.loads(OUT.read_text())
        result.update({k: v for k, v in previous.items() if k in ("throughput", "audits")})
    if not args.skip_throughput:
        tp = throughput(quick, one_process=args.one_process, bf16=not args.no_bf16)
        result["throughput"] = tp
        pr = tp["projected_paper_training_phase"]
        print(
            f"votes/s, same {tp['pairs']} pairs, 1 thread: plain "
            f"{tp['plain_loop_1_thread']['votes_per_second']:.2f}, KV-cached "
            f"{tp['kv_cached_1_thread']['votes_per_second']:.2f} (x{tp['speedup_1_thread']:.1f}); "
            f"answers equal on {tp['answers_equal']}/{tp['pairs']}"
        )
        for key in (
            "kv_rate_1_thread",
            "kv_rate_2_threads",
            "kv_rate_2_workers",
            "kv_rate_1_thread_bfloat16",
            "kv_rate_2_workers_bfloat16",
        ):
            if key in tp:
                r = tp[key]
                print(
                    f"  {key}: {r['votes_per_second']:.2f} votes/s on {r['pairs']} pairs, "
                    f"load {r['load_average_start']} -> {r['load_average_end']}"
                )
        if "bfloat16" in tp:
            print(
                f"  bfloat16 answers differing from float32: "
                f"{tp['bfloat16']['answers_differing_from_float32']}/{tp['bfloat16']['pairs']}"
            )
        print(
            f"projected {pr['votes']} votes at {pr['votes_per_second']:.2f} votes/s "
            f"({pr['from']}): {pr['minutes']:.1f} min (target {pr['target_minutes']:.0f} min)"
        )

    def save() -> None:
        if not args.tiny:
            OUT.parent.mkdir(parents=True, exist_ok=True)
            OUT.write_text(json.dumps(result, indent=2, default=str))

    save()
    if not (args.skip_audit or quick):
        audits = result.setdefault("audits", {})
        for name in args.datasets.split(","):
            cache = None if args.vote_cache is None else f"{args.vote_cache}/{name}"
            audits[name] = paper_audit(name, tiny=args.tiny, vote_cache=cache)
            if args.tiny:
                print(json.dumps(audits.pop(name)["best_of_four"], default=str)[:2000])
                continue
            save()
            a = audits[name]
            print(
                f"{name}: {a.get('wall_seconds_cold_cache', float('nan')) / 60:.1f} min cold "
                f"(training {a['timings']['prompt-pate/training'] / 60:.1f} min), "
                f"accuracy {a['accuracy_noiseless_plurality']:.3f}"
            )
    save()


if __name__ == "__main__":
    main()
