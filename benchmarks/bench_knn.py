"""Benchmark Private-kNN (issue 18): vote draws, embedding throughput, paper-scale audit time.

1. **kNN votes per subsample draw** for 1,000 queries over the 60,000 Fashion-MNIST training
   images (features: the first 64 principal components of the pixels; k = 200, γ = 0.2):
   the vectorised draw (:func:`dpaudit.systems.private_prediction.knn.poisson_topk_ranks` on
   ranked lists: k geometric gaps per query, then a gather and a bincount) against the
   baseline, a plain per-query loop (keep each training point with probability γ, distances
   to the kept points, partial sort;
   :func:`dpaudit.systems.private_prediction.knn.knn_votes_loop`), same run, same data.
   The one-time ranking of the queries' nearest neighbours
   (:func:`dpaudit.systems.private_prediction.knn.ranked_neighbours`) is reported separately
   with the number of draws after which it has paid for itself. Target: ≥ 10× per draw.
2. **Embedding throughput**: texts/s of the int8 ONNX MiniLM (Rotten Tomatoes snippets) and
   images/s of the ViT-S/14 ONNX backbone (Fashion-MNIST), cache off.
3. **Paper-scale audit wall time**: read from the ``results.json`` of the reproduction runs
   (``dpaudit audit private-prediction --config private-knn-… --out DIR``) given with
   ``--audit DIR`` (repeatable), with the load average from ``DIR/load.json`` when the
   wrapper that ran the audit wrote one; target ≤ 30 min per dataset on 2 cores, embeddings
   cached.
4. **The reproduction table and the Fig. 5-style plot** of those runs (``--figure PNG``): per
   dataset and adversary, ε at δ = 1e-6 of the claim, of the exact RDP and of the audit as the
   pipeline computes them (direction D(M(S) ‖ M(S′))), and of the reverse direction
   D(M(S′) ‖ M(S)) recomputed from the stored counts and output distributions with the
   pipeline's own bound stage (its own held-out split, seed 0). Each direction is a valid
   95% bound on its own; taking the larger of the two would need β/2 each.

The machine is shared: the load average during the run is recorded next to the timings.

Usage: ``python benchmarks/bench_knn.py [--quick] [--audit DIR ...]`` (quick: 200 queries,
fewer texts and images). Writes ``benchmarks/results/knn.json``. ``--audits-only`` refreshes
only its audit wall times; ``--skip-timing [--figure PNG]`` writes the reproduction table
``benchmarks/results/knn_reproduction.json`` (item 4) instead.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import time

import numpy as np

from dpaudit.data import load_dataset
from dpaudit.errors import MissingDatasetError
from dpaudit.systems.private_prediction.knn import (
    AffineFeatures,
    histograms,
    knn_votes_loop,
    poisson_topk_ranks,
    rank_horizon,
    ranked_neighbours,
)

K, GAMMA = 200, 0.2


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench_votes(num_queries: int, loop_queries: int) -> dict:
    """Vectorised vs per-query loop, per subsample draw (module notes)."""
    ds = load_dataset("fashion-mnist")
    x = np.asarray(ds.X_train, dtype=np.float64)
    tf, t_pca = timed(lambda: AffineFeatures.fit(x, "pca", 64))
    feats = tf(x)
    q = tf(np.asarray(ds.X_test[:num_queries], dtype=np.float64))
    depth = rank_horizon(K, GAMMA, feats.shape[0])
    ranked, t_rank = timed(lambda: ranked_neighbours(feats, ds.y_train, q, depth))
    gen = np.random.default_rng(0)
    rows = np.arange(num_queries)[:, None]

    def vec_draw():
        ranks = poisson_topk_ranks(num_queries, K, GAMMA, depth, gen)
        return histograms(ranked.labels[rows, ranks - 1], 10)

    vec_draw()
    reps = 20
    _, t_vec_total = timed(lambda: [vec_draw() for _ in range(reps)])
    t_vec = t_vec_total / reps
    _, t_loop_part = timed(
        lambda: knn_votes_loop(
            feats, ds.y_train, q[:loop_queries], k=K, sampling_rate=GAMMA, num_classes=10, rng=1
        )
    )
    t_loop = t_loop_part * num_queries / loop_queries
    return {
        "num_train": int(feats.shape[0]),
        "num_queries": num_queries,
        "features": "pca-64 of the pixels",
        "k": K,
        "sampling_rate": GAMMA,
        "rank_depth": depth,
        "pca_fit_seconds": t_pca,
        "ranking_seconds": t_rank,
        "vectorised_seconds_per_draw": t_vec,
        "loop_seconds_per_draw": t_loop,
        "loop_timed_on_queries": loop_queries,
        "speedup_per_draw": t_loop / t_vec,
        "break_even_draws": t_rank / max(t_loop - t_vec, 1e-12),
    }


def bench_embeddings(num_texts: int, num_images: int) -> dict:
    """Texts/s (int8 MiniLM) and images/s (ViT-S/14), cache off."""
    from dpaudit.data.features import embed_images, embed_texts

    out: dict = {}
    try:
        texts = load_dataset("rotten-tomatoes").X_train[:num_texts].tolist()
        embed_texts(texts[:8], cache=False)  # session start-up
        _, t = timed(lambda: embed_texts(texts, cache=False))
        out["minilm_int8_texts_per_second"] = num_texts / t
        out["minilm_texts"] = num_texts
    except MissingDatasetError as exc:
        out["minilm_int8"] = f"skipped: {exc}"
    try:
        imgs = load_dataset("fashion-mnist", n_train=num_images, n_test=1).X_train
        embed_images(imgs[:2], image_shape=(28, 28), cache=False)
        _, t = timed(lambda: embed_images(imgs, image_shape=(28, 28), cache=False))
        out["vit_s14_images_per_second"] = num_images / t
        out["vit_images"] = num_images
    except MissingDatasetError as exc:
        out["vit_s14"] = f"skipped: {exc}"
    return out


def audit_times(dirs: list[str]) -> list[dict]:
    """Wall times of finished reproduction runs (their results.json)."""
    rows = []
    for d in dirs:
        f = pathlib.Path(d) / "results.json"
        if not f.is_file():
            rows.append({"dir": d, "missing": True})
            continue
        res = json.loads(f.read_text())
        timings = res.get("timings", {})
        row = {
            "dir": d,
            "name": res.get("settings", {}).get("name"),
            "queries": res.get("settings", {}).get("adversary", {}).get("queries"),
            "total_seconds": timings.get("total"),
            "stages": {k: round(v, 1) for k, v in timings.items()},
        }
        load = pathlib.Path(d) / "load.json"  # written by the wrapper that ran the audit
        row["load"] = json.loads(load.read_text()) if load.is_file() else "not recorded"
        rows.append(row)
    return rows


def _reverse(entry: dict, settings) -> dict:
    """The reverse direction D(S′ ‖ S) of one stored entry (module notes, item 4)."""
    from dpaudit.attacks import ADVERSARIES
    from dpaudit.divergence import renyi_divergence
    from dpaudit.experiments.private_prediction import stages
    from dpaudit.experiments.private_prediction.results import epsilon_display

    d = entry["detail"]
    orders = np.asarray(d["orders"], dtype=float)
    counts = np.asarray(d["queries"]["counts"], dtype=np.int64)
    pbar = np.asarray(d["queries"]["output_probabilities"], dtype=float)
    adv = ADVERSARIES.get(d["adversary"])
    audited = stages.bound(counts[:, ::-1], adv, settings, rng=0)
    per_query = renyi_divergence(pbar[:, 1], pbar[:, 0], orders)
    nq = settings.adversary.queries
    exact = nq * per_query[audited.worst] if audited.worst is not None else per_query.sum(0)
    di = np.asarray(d["data_independent"], dtype=float)
    eps = epsilon_display(audited.curve, exact, di, di, orders, settings.audit.delta)
    return {"audit": float(eps.audit), "exact": float(eps.exact)}


def reproduction(dirs: list[str]) -> list[dict]:
    """Per run and adversary: ε of claim, exact and audit, both directions."""
    from dpaudit import _settings
    from dpaudit.experiments.private_prediction import PrivatePredictionSettings

    rows = []
    for dd in dirs:
        f = pathlib.Path(dd) / "results.json"
        if not f.is_file():
            continue
        res = json.loads(f.read_text())
        settings = _settings.from_mapping(PrivatePredictionSettings, res["settings"])
        for e in res["entries"]:
            eps = e["detail"]["epsilon"]
            rev = _reverse(e, settings)
            opts = settings.system.options.get("private-knn", {})
            rows.append(
                {
                    "run": settings.name,
                    "dir": pathlib.Path(dd).name,
                    "seed": settings.seed,
                    "selection_order": settings.audit.selection_order,
                    "dataset": settings.data.dataset,
                    "queries": settings.adversary.queries,
                    "sigma": settings.system.sigma,
                    "k": opts.get("k"),
                    "sampling_rate": opts.get("sampling_rate"),
                    "experiments": settings.engine.experiments,
                    "adversary": e["adversary"],
                    "claim": eps["data_independent"],
                    "exact": eps["exact"],
                    "audit": eps["audit"],
                    "exact_reverse": rev["exact"],
                    "audit_reverse": rev["audit"],
                    "ordering_holds": bool(
                        e["detail"]["ordering"]["audit_le_exact"]
                        and e["detail"]["ordering"]["exact_le_data_dependent"]
                    ),
                }
            )
    return rows


def figure(rows: list[dict], path: str) -> None:
    """Fig. 5-style bars (Chadha et al. 2024): ε per adversary, one panel per run."""
    from dpaudit.errors import require

    plt = require("matplotlib.pyplot", "plot")
    runs = list(dict.fromkeys(r["dir"] for r in rows))
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 4.2), squeeze=False)
    keys = [("claim", "claim (subsampled Gaussian)"), ("exact", "exact D(S‖S′)"),
            ("audit", "audit D(S‖S′)"), ("exact_reverse", "exact D(S′‖S)"),
            ("audit_reverse", "audit D(S′‖S)")]  # fmt: skip
    for ax, run in zip(axes[0], runs, strict=True):
        sub = [r for r in rows if r["dir"] == run]
        x = np.arange(len(sub))
        for j, (key, label) in enumerate(keys):
            vals = [max(r[key], 1e-4) for r in sub]
            ax.bar(x + (j - 2) * 0.16, vals, 0.16, label=label)
        ax.set_yscale("log")
        ax.set_xticks(x, [r["adversary"].replace("pois-natq-", "natq-") for r in sub],
                      rotation=30, ha="right", fontsize=8)  # fmt: skip
        head = sub[0]
        title = head["run"].replace("private-knn-", "")
        title += f", n_Q = {head['queries']}, σ = {head['sigma']:g}"
        if head["selection_order"] != 10.0 or head["seed"] != 0:
            title += f"\nselection order {head['selection_order']:g}, seed {head['seed']}"
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("ε at δ = 1e-6")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    from _cli import bench_parser

    ap = bench_parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--audit", action="append", default=[])
    ap.add_argument("--figure", default=None)
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--audits-only", action="store_true")
    args = ap.parse_args()
    if args.audits_only:  # refresh the audit wall times of an existing knn.json only
        out = pathlib.Path(__file__).parent / "results" / "knn.json"
        result = json.loads(out.read_text())
        result["audits"] = audit_times(args.audit)
        out.write_text(json.dumps(result, indent=2) + "\n")
        for row in result["audits"]:
            print(f"  audit {row.get('name') or row['dir']}: {row.get('total_seconds')} s")
        return
    if args.skip_timing:
        rows = reproduction(args.audit)
        out = pathlib.Path(__file__).parent / "results" / "knn_reproduction.json"
        out.write_text(json.dumps({"rows": rows, "audits": audit_times(args.audit)}, indent=2))
        for r in rows:
            print(f"{r['run']:34s} {r['adversary']:22s} claim {r['claim']:.3g} exact "
                  f"{r['exact']:.3g} audit {r['audit']:.3g} | reverse exact "
                  f"{r['exact_reverse']:.3g} audit {r['audit_reverse']:.3g}")  # fmt: skip
        if args.figure:
            figure(rows, args.figure)
        return
    quick = args.quick or os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
    load0 = os.getloadavg()
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "load_average_start": load0,
        "votes": bench_votes(200 if quick else 1000, 20 if quick else 50),
        "embeddings": bench_embeddings(64 if quick else 256, 8 if quick else 32),
        "audits": audit_times(args.audit),
        "load_average_end": os.getloadavg(),
    }
    out = pathlib.Path(__file__).parent / "results" / "knn.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    v, e = result["votes"], result["embeddings"]
    print(f"kNN votes, {v['num_queries']} queries x {v['num_train']} points, k={K}, gamma={GAMMA}")
    print(f"  vectorised  {v['vectorised_seconds_per_draw'] * 1e3:9.1f} ms/draw")
    print(f"  loop        {v['loop_seconds_per_draw'] * 1e3:9.1f} ms/draw (baseline)")
    print(f"  speedup     {v['speedup_per_draw']:9.0f}x  (target >= 10x)")
    print(f"  ranking     {v['ranking_seconds']:9.2f} s once; pays off after "
          f"{v['break_even_draws']:.1f} draws")  # fmt: skip
    for key, val in e.items():
        print(f"  {key}: {val:.1f}" if isinstance(val, float) else f"  {key}: {val}")
    for row in result["audits"]:
        print(f"  audit {row.get('name') or row['dir']}: {row.get('total_seconds')} s")
    print(f"load average {load0[0]:.1f} -> {result['load_average_end'][0]:.1f}; wrote {out}")


if __name__ == "__main__":
    main()
