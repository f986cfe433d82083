"""Benchmark: the private-prediction audit's sampling engine and the paper-scale wall time.

Measures, on this machine:

1. experiments per second per query through the engine (:func:`run_blocks`) for
   * the exact shortcut (``MultinomialBlock`` on ``p̄ = E[Q(H)]``: counts ~ Multinomial), and
   * the direct simulation (``NoisyArgmaxBlock``: a PATE histogram Mult(250, P) per
     experiment, N(0, 40²) noise, argmax), serial and over 2 local processes,
   next to the named baseline: a plain numpy loop without the engine (per block of 2^18 a
   seeded generator, the histograms, the noise, the argmax; one process), which is what
   ``sample_argmax_counts_from`` was before it ran on the engine; and the engine's own
   overhead: blocks per second with tiny blocks, without and with a checkpoint written after
   every block, next to the same blocks in a plain loop;
2. the per-query costs of the audit that do not depend on T (exact output distributions of
   the parametric model, data-dependent mixture bound, 2-cut audit) and teacher training /
   retraining throughput on Fashion-MNIST;
3. the wall time of the paper-scale audit (paper 000 App. D: 1000 queries × 10^8 experiments
   under S and S′, three adversaries, PATE and CaPC) extrapolated from these measurements,
   with the exact sampler and with direct simulation.

The torch backend (``NoisyArgmaxBlock(backend="torch", device="cuda")`` through the engine,
and the mechanisms layer's fixed-histogram torch sampler) is measured only when a CUDA GPU is
present (``torch.cuda.is_available()``); otherwise the JSON says why it was not.

5. with ``--models`` (issue 14): the models stage's kernels next to their baselines in the
   same run (exact PATE output distributions: one dual-number pass vs one product per added
   vote; the claim's multinomial support: only kept histograms built vs every candidate).

4. with ``--paper`` (issue 14): the wall time of the paper-scale Fashion-MNIST audit with the
   shipped resolving config (``paper-fashion-mnist``: ridge teachers, N_g = 4, R = 100,
   shortlist 50, R_c = 400), next to the named baseline in the same run: the config the
   README's command used before (logistic teachers refitted per retraining, N_g = 2, R = 4,
   every candidate modelled, no confirmation), both with all cores (``n_jobs = -1``); each
   with the load average before and after.

Writes ``benchmarks/results/audit.json`` and prints a summary. ``DPAUDIT_BENCH_QUICK=1``
shrinks the measured fractions.
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from dpaudit._rng import block_seeds
from dpaudit.accounting import DEFAULT_ORDERS
from dpaudit.attacks._multinomial import clear_output_cache
from dpaudit.attacks.parametric import CaPCHistogramModel, PATEHistogramModel
from dpaudit.engine import run_blocks
from dpaudit.experiments.private_prediction import PrivatePredictionSettings, audit_distributions
from dpaudit.experiments.private_prediction.stages import data_dependent_claim
from dpaudit.mechanisms import MultinomialBlock, NoisyArgmaxBlock
from dpaudit.systems import SYSTEMS

QUICK = os.environ.get("DPAUDIT_BENCH_QUICK") == "1"
OUT = Path(__file__).parent / "results" / "audit.json"
SIGMA = 40.0
TEACHERS = 250
# Realistic per-query vote distributions of 250 Fashion-MNIST logistic teachers (votes / 250
# from the first test images of one instantiation).
P_QUERIES = [
    np.array([0, 0, 0, 0, 0, 14, 0, 45, 0, 191]) / 250,
    np.array([0, 0, 241, 0, 3, 0, 6, 0, 0, 0]) / 250,
    np.array([0, 250, 0, 0, 0, 0, 0, 0, 0, 0]) / 250,
    np.array([35, 0, 47, 0, 3, 0, 165, 0, 0, 0]) / 250,
]
PAPER = {"queries": 1000, "experiments": 10**8, "adversaries": 3, "algorithms": 2}


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def plain_direct_simulation(sampler, sigma: float, n: int, block: int, seed: int) -> np.ndarray:
    """The baseline: the direct simulation as a plain loop over seeded blocks, no engine."""
    sizes = [block] * (n // block) + ([n % block] if n % block else [])
    total = None
    for size, ss in zip(sizes, block_seeds(seed, len(sizes)), strict=True):
        gen = np.random.Generator(np.random.PCG64(ss))
        hists = np.asarray(sampler(gen, size), dtype=np.float64)
        noisy = gen.standard_normal(hists.shape)
        noisy *= sigma
        noisy += hists
        counts = np.bincount(noisy.argmax(axis=1), minlength=hists.shape[1])
        total = counts if total is None else total + counts
    return total


def engine_overhead(pbar: np.ndarray) -> dict:
    """Blocks per second with tiny blocks (16 experiments): engine, engine + checkpoint after
    every block, and the same multinomial draws in a plain loop."""
    import tempfile

    n_blocks = 2**10 if QUICK else 2**12
    blk = MultinomialBlock(pbar)

    def plain():
        total = 0
        for ss in block_seeds(0, n_blocks):
            total = total + np.random.Generator(np.random.PCG64(ss)).multinomial(16, pbar)
        return total

    t_plain = timed(plain, repeat=3)
    t_engine = timed(lambda: run_blocks(blk, 16 * n_blocks, rng=0, block_size=16), repeat=3)
    with tempfile.TemporaryDirectory() as tmp:
        ck = Path(tmp) / "ck.npz"
        kw = {"rng": 0, "block_size": 16, "checkpoint": ck, "checkpoint_interval": 0}
        t_ck = timed(lambda: run_blocks(blk, 16 * n_blocks // 8, **kw))
    return {
        "blocks": n_blocks,
        "plain_loop_blocks_per_second": n_blocks / t_plain,
        "engine_blocks_per_second": n_blocks / t_engine,
        "engine_checkpoint_every_block_blocks_per_second": n_blocks / 8 / t_ck,
        "note": "MultinomialBlock(p̄) on blocks of 16 experiments, C = 10, serial; the "
        "checkpoint run rewrites the file (all finished blocks) after every block",
    }


def engine_rates() -> dict:
    p = P_QUERIES[3]
    q = p.copy()
    q[2] += 0.004
    q[6] -= 0.004
    model = PATEHistogramModel(p, q, TEACHERS, TEACHERS)
    pbar = model.output_distributions(SIGMA)
    out: dict = {}
    # Exact shortcut: one query, S and S', T = 10^8 each.
    t_exact = timed(
        lambda: run_blocks(MultinomialBlock(pbar), 10**8, rng=0, block_size=2**26), repeat=3
    )
    out["exact_multinomial"] = {
        "experiments": 10**8,
        "seconds_for_S_and_S_prime": t_exact,
        "experiments_per_second_per_query": 2 * 10**8 / t_exact,
    }
    n_mc = 2**19 if QUICK else 2**21
    block = NoisyArgmaxBlock(model.sampler(), SIGMA)
    t_serial = timed(lambda: run_blocks(block, n_mc, rng=1, block_size=2**18))
    t_proc = timed(
        lambda: run_blocks(block, n_mc, rng=1, block_size=2**18, executor="processes", workers=2)
    )
    t_base = timed(lambda: plain_direct_simulation(model.sampler(), SIGMA, n_mc, 2**18, 1))
    out["direct_simulation"] = {
        "experiments": n_mc,
        "engine_serial_per_second": n_mc / t_serial,
        "engine_processes_2_per_second": n_mc / t_proc,
        "baseline_plain_loop_per_second": n_mc / t_base,
        "note": "PATE histogram Mult(250, P) + N(0, 40^2) noise + argmax per experiment, "
        "C = 10; the process pool includes its start-up (spawn) in the time.",
    }
    same = np.array_equal(
        run_blocks(block, 2**16, rng=5, block_size=2**14).counts,
        run_blocks(block, 2**16, rng=5, block_size=2**14, executor="joblib", workers=2).counts,
    )
    out["same_counts_serial_vs_joblib"] = bool(same)
    out["overhead"] = engine_overhead(pbar[0])
    return out


def per_query_costs() -> dict:
    orders = np.asarray(DEFAULT_ORDERS)
    settings = PrivatePredictionSettings.of(dataset="fashion-mnist", teachers=TEACHERS, sigma=SIGMA)
    system = SYSTEMS.get("pate")(settings.system)
    out: dict = {}
    # Exact output distributions (the A_y evaluations of one adversarial query).
    clear_output_cache()
    t = []
    for p in P_QUERIES:
        q = np.roll(p, 1) * 0.1 + 0.9 * p
        m = PATEHistogramModel(p, q / q.sum(), TEACHERS, TEACHERS)
        t.append(timed(lambda m=m: m.output_distributions(SIGMA)))
    out["exact_output_distributions_seconds_per_query"] = float(np.mean(t))
    cache: dict = {}
    t = []
    for p in P_QUERIES:
        m = PATEHistogramModel(p, p, TEACHERS, TEACHERS)
        t.append(timed(lambda m=m: data_dependent_claim(system, m, orders, settings.audit, cache)))
    out["data_dependent_mixture_seconds_per_query"] = float(np.mean(t))
    # CaPC: with the default (deterministic, L-BFGS) logistic teachers every instantiation of
    # the fixed parties trains the same teachers, so each P_q^i is a point mass. The teachers
    # vote the query's vote counts (250·P), and the affected teacher 0 flips to the runner-up.
    t_out, t_dd = [], []
    for p in P_QUERIES:
        labels = np.repeat(np.arange(p.size), np.round(p * TEACHERS).astype(int))[:TEACHERS]
        tp = np.eye(p.size)[labels]
        runner_up = int(np.argsort(-p, kind="stable")[1])
        m = CaPCHistogramModel(tp, np.eye(p.size)[runner_up], 0, TEACHERS)
        t_out.append(timed(lambda m=m: m.output_distributions(SIGMA)))
        t_dd.append(timed(lambda m=m: data_dependent_claim(system, m, orders, settings.audit, {})))
    out["capc_exact_output_distributions_seconds_per_query"] = float(np.mean(t_out))
    out["capc_data_dependent_seconds_per_query"] = float(np.mean(t_dd))
    n = 32
    gen = np.random.default_rng(0)
    pb = gen.dirichlet(np.ones(10), size=n)
    counts = np.stack([[gen.multinomial(10**8, r), gen.multinomial(10**8, r)] for r in pb])
    t_audit = timed(
        lambda: audit_distributions(
            counts, orders, composition="queries", num_composed=n, confidence_level=0.95, rng=0
        )
    )
    out["two_cut_audit_seconds_per_query"] = t_audit / n
    return out


def training_costs() -> dict:
    from dpaudit.data import load_dataset
    from dpaudit.systems import TeacherEnsemble

    try:
        ds = load_dataset("fashion-mnist")
    except Exception as exc:
        return {"skipped": f"Fashion-MNIST not available: {exc}"}
    m_meas = 10 if QUICK else 25
    idx = np.random.default_rng(0).permutation(ds.num_train)[: m_meas * 240]
    t_fit = timed(
        lambda: TeacherEnsemble.fit(ds.X_train[idx], ds.y_train[idx], num_teachers=m_meas, rng=0)
    )
    ens = TeacherEnsemble.fit(ds.X_train[idx], ds.y_train[idx], num_teachers=m_meas, rng=0)
    r = 10 if QUICK else 20
    t_re = timed(lambda: [ens.with_point(ds.X_test[i], 0, partition=i % m_meas) for i in range(r)])
    return {
        "teachers_measured": m_meas,
        "points_per_teacher": 240,
        "teachers_per_second": m_meas / t_fit,
        "retrainings_per_second": r / t_re,
        "note": "default estimator LogisticRegression(max_iter=50), one process",
    }


def extrapolate(engine: dict, costs: dict, training: dict) -> dict:
    nq, t_exp = PAPER["queries"], PAPER["experiments"]
    runs = PAPER["adversaries"] * PAPER["algorithms"]
    sampling_exact = (
        runs * nq * 2 * t_exp / engine["exact_multinomial"]["experiments_per_second_per_query"]
    )
    rate_mc = engine["direct_simulation"]["engine_serial_per_second"]
    sampling_mc = runs * nq * 2 * t_exp / rate_mc
    # Per algorithm: 3 adversaries × n_Q models (exact p̄) and 2-cut audits; the
    # data-dependent mixture depends on H_S only, so the pipeline computes it once per query
    # and algorithm (cached across adversaries).
    per_run = PAPER["adversaries"] * nq
    modelling = (
        per_run
        * (
            costs["exact_output_distributions_seconds_per_query"]
            + costs["capc_exact_output_distributions_seconds_per_query"]
            + 2 * costs["two_cut_audit_seconds_per_query"]
        )
        + nq * costs["data_dependent_mixture_seconds_per_query"]
        + nq * costs["capc_data_dependent_seconds_per_query"]
    )
    out = {
        "setting": "1000 queries x 1e8 experiments under S and S', 3 adversaries, PATE and CaPC",
        "sampling_seconds_exact": sampling_exact,
        "sampling_seconds_direct_simulation_serial": sampling_mc,
        "sampling_days_direct_simulation_serial": sampling_mc / 86400,
        "models_and_audit_seconds": modelling,
    }
    if "teachers_per_second" in training:
        # N_g = 2 instantiations of 250 teachers per algorithm; R = 4 retrainings per
        # adversarial query (1000 candidates, 2 adversarial adversaries) + 4 for Pois-NatQ.
        train = PAPER["algorithms"] * 2 * TEACHERS / training["teachers_per_second"]
        retrain = PAPER["algorithms"] * (2 * nq * 4 + 4) / training["retrainings_per_second"]
        out["training_seconds"] = train
        out["retraining_seconds"] = retrain
        out["total_seconds_exact_sampler"] = train + retrain + modelling + sampling_exact
        out["total_seconds_direct_simulation"] = train + retrain + modelling + sampling_mc
    return out


def torch_figure() -> dict:
    """The direct simulation through the engine with the torch backend on a CUDA GPU.

    ``NoisyArgmaxBlock(..., backend="torch", device="cuda")``: the PATE histograms
    Mult(250, P) are drawn by numpy on the CPU, the noise, argmax and counting run on the
    GPU. Also the fixed-histogram sampler of the mechanisms layer on the GPU, for reference.
    """
    try:
        import torch
    except ImportError:
        return {"measured": False, "reason": "torch not installed"}
    if not torch.cuda.is_available():
        return {
            "measured": False,
            "reason": "no CUDA GPU on this machine; the torch backend figure is not measured",
        }
    from dpaudit.mechanisms import sample_argmax_counts

    model = PATEHistogramModel(P_QUERIES[3], P_QUERIES[3], TEACHERS, TEACHERS)
    block = NoisyArgmaxBlock(model.sampler(), SIGMA, chunk=2**20, backend="torch", device="cuda")
    run_blocks(block, 2**18, rng=0, block_size=2**18)  # warm-up: CUDA context, kernels
    n_mc = 2**21 if QUICK else 2**23
    t_engine = timed(lambda: run_blocks(block, n_mc, rng=1, block_size=2**21))
    votes = (P_QUERIES[3] * TEACHERS).astype(float)
    n = 2**26
    sample_argmax_counts(votes, SIGMA, 2**20, rng=0, backend="torch", device="cuda")
    t = timed(
        lambda: sample_argmax_counts(
            votes, SIGMA, n, rng=0, backend="torch", device="cuda", block_size=2**24
        )
    )
    rate = n_mc / t_engine
    nq, t_exp = PAPER["queries"], PAPER["experiments"]
    runs = PAPER["adversaries"] * PAPER["algorithms"]
    return {
        "measured": True,
        "device": torch.cuda.get_device_name(0),
        "engine_direct_simulation_per_second": rate,
        "paper_scale_sampling_days_direct_simulation": runs * nq * 2 * t_exp / rate / 86400,
        "fixed_histogram_experiments_per_second": n / t,
        "note": "engine: PATE histograms by numpy on the CPU, noise + argmax on the GPU",
    }


BASELINE_OVERRIDES = {
    "estimator": "logistic",
    "instantiations": 2,
    "retrainings": 4,
    "shortlist": 1000,  # every candidate (None would be ignored as an override)
    "confirmations": 0,
}


def paper_scale_runs() -> dict:
    """Wall time of the resolving paper-scale audit and of the baseline config, same run."""
    from dpaudit.experiments.private_prediction import audit_private_prediction
    from dpaudit.experiments.private_prediction.config import find_config, load_config

    out = {}
    for label, overrides in (("resolving", {}), ("baseline_R4_logistic", BASELINE_OVERRIDES)):
        settings = load_config(find_config("paper-fashion-mnist"), overrides=overrides)
        before = list(os.getloadavg())
        start = time.perf_counter()
        result = audit_private_prediction(settings)
        wall = time.perf_counter() - start
        findings = result.detail.findings
        out[label] = {
            "overrides": {k: v for k, v in overrides.items()},
            "wall_seconds": wall,
            "load_before": before,
            "load_after": list(os.getloadavg()),
            "stage_seconds": result.timings,
            "distinct_retrainings": result.detail.retrainings,
            "verdicts": {f.name: f.verdict for f in findings.findings},
        }
    return out


def retraining_rates() -> dict:
    """Retrainings per second of one Fashion-MNIST teacher (240 rows) with one added point:
    the ridge teacher's exact update (``RidgeTeacher.with_rows``) vs a cold ridge refit vs a
    cold refit of the default logistic teacher, same run, one BLAS thread; and how far the
    update's coefficients are from the cold refit's."""
    from threadpoolctl import threadpool_limits

    from dpaudit.data import load_dataset
    from dpaudit.systems.private_prediction._estimators import make_estimator
    from dpaudit.systems.private_prediction._ridge import RidgeTeacher

    try:
        ds = load_dataset("fashion-mnist")
    except Exception as exc:
        return {"skipped": f"Fashion-MNIST not available: {exc}"}
    gen = np.random.default_rng(0)
    rows = gen.permutation(ds.num_train)[:240]
    X, y = ds.X_train[rows], ds.y_train[rows]
    points = ds.X_test[:40]
    labels = (ds.y_test[:40] + 1) % 10
    r = 10 if QUICK else 40
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs stopped at max_iter=50: the default teacher
        base = RidgeTeacher().fit(X, y)
        t_warm = timed(lambda: [base.with_rows(X, points[i : i + 1], labels[i : i + 1])
                                for i in range(r)], repeat=3)  # fmt: skip
        t_ridge = timed(lambda: [RidgeTeacher().fit(np.vstack([X, points[i : i + 1]]),
                                                    np.append(y, labels[i]))
                                 for i in range(r)], repeat=3)  # fmt: skip
        logistic = [make_estimator("logistic", seed=0) for _ in range(r)]
        t_logit = timed(lambda: [logistic[i].fit(np.vstack([X, points[i : i + 1]]),
                                                 np.append(y, labels[i]))
                                 for i in range(r)])  # fmt: skip
        gaps = []
        for i in range(min(r, 10)):
            warm = base.with_rows(X, points[i : i + 1], labels[i : i + 1])
            cold = RidgeTeacher().fit(np.vstack([X, points[i : i + 1]]), np.append(y, labels[i]))
            gaps.append(float(np.max(np.abs(warm.coef_ - cold.coef_)) / np.max(np.abs(cold.coef_))))
    return {
        "teacher_rows": 240,
        "retrainings": r,
        "ridge_update_per_s": r / t_warm,
        "ridge_cold_refit_per_s": r / t_ridge,
        "logistic_cold_refit_per_s": r / t_logit,
        "update_vs_ridge_refit": t_ridge / t_warm,
        "update_vs_logistic_refit": t_logit / t_warm,
        "max_relative_coefficient_gap": max(gaps),
        "load_average": list(os.getloadavg()),
    }


def _support_all_candidates(p: np.ndarray, k: int, max_support: int) -> tuple:
    """The baseline of :func:`models_stage`: the multinomial support's binomial chain as it
    was before (every candidate histogram built, then the beam), returning the same
    ``(votes, probabilities, dropped)``."""
    from scipy import stats

    c = p.size
    order = [int(i) for i in np.argsort(-p, kind="stable") if p[i] > 0]
    hist, prob = np.zeros((1, c), dtype=np.int64), np.ones(1)
    left, dropped, mass_left = np.full(1, k, dtype=np.int64), 0.0, 1.0
    for pos, i in enumerate(order):
        if pos == len(order) - 1:
            hist[:, i] = left
            break
        cond = min(1.0, p[i] / mass_left) if mass_left > 0 else 1.0
        mass_left -= p[i]
        lefts = np.unique(left)
        mean = lefts * cond
        half = 10.0 * np.sqrt(lefts * cond * (1.0 - cond)) + 10.0
        lo = np.maximum(np.floor(mean - half), 0).astype(np.int64)
        hi = np.minimum(np.ceil(mean + half), lefts).astype(np.int64)
        width = int((hi - lo).max()) + 1
        h_tab = lo[:, None] + np.arange(width)[None, :]
        pmf = np.where(h_tab <= lefts[:, None], stats.binom.pmf(h_tab, lefts[:, None], cond), 0)
        row = np.searchsorted(lefts, left)
        cand = prob[:, None] * pmf[row]
        rows, cols = np.nonzero(cand > 0)
        new_prob = cand[rows, cols]
        dropped += float(prob.sum() - new_prob.sum())
        new_hist = hist[rows].copy()
        new_hist[:, i] = h_tab[row[rows], cols]
        keep = new_prob > 0
        if new_prob.size > max_support:
            cut = np.argpartition(-new_prob, max_support - 1)[:max_support]
            mask = np.zeros(new_prob.size, dtype=bool)
            mask[cut] = True
            keep &= mask
        dropped += float(new_prob[~keep].sum())
        hist, prob = new_hist[keep], new_prob[keep]
        left = k - hist.sum(axis=1)
    return hist, prob, dropped


def models_stage() -> dict:
    """The models stage's two kernels (issue 14), each next to its baseline in the same run:

    * exact PATE output distributions of an adversarial query (P′ = the affected teacher's
      vote on one class): the one-pass dual computation vs one Poissonised product per added
      vote (``multinomial_output_probabilities`` for every class y, then ``p·A`` and ``q·A``);
    * the data-dependent claim's multinomial support (2^14 histograms): building only the
      kept histograms vs building every candidate before the beam (the code before).
    """
    from dpaudit.attacks import multinomial_output_probabilities
    from dpaudit.attacks._histograms import _multinomial_support
    from dpaudit.attacks._multinomial import _multinomial_pair_output

    reps = 1 if QUICK else 3
    rows = []
    for p in [*P_QUERIES, np.array([19, 7, 31, 7, 78, 4, 90, 10, 3, 1]) / 250]:
        if np.count_nonzero(p) < 2:
            continue
        q = np.eye(p.size)[int(np.argsort(-p, kind="stable")[1])]

        def one_pass(p=p, q=q):
            _multinomial_pair_output.cache_clear()
            return _multinomial_pair_output(tuple(p), tuple(q), TEACHERS - 1, SIGMA)

        def per_offset(p=p, q=q):
            a = np.stack(
                [
                    multinomial_output_probabilities(p, TEACHERS - 1, SIGMA, offset=np.eye(10)[y])
                    if p[y] > 0 or q[y] > 0
                    else np.zeros(10)
                    for y in range(10)
                ]
            )
            clear_output_cache()
            return np.stack([p @ a, q @ a])

        gap = float(np.abs(one_pass() - per_offset()).max())
        t_new, t_old = timed(one_pass, reps), timed(per_offset, reps)
        new_s = _multinomial_support(p, TEACHERS, 2**14)
        old_s = _support_all_candidates(p, TEACHERS, 2**14)
        same = bool(
            np.array_equal(new_s.votes, old_s[0]) and np.array_equal(new_s.probabilities, old_s[1])
        )
        t_sup = timed(lambda p=p: _multinomial_support(p, TEACHERS, 2**14), reps)
        t_sup_old = timed(lambda p=p: _support_all_candidates(p, TEACHERS, 2**14), reps)
        rows.append(
            {
                "votes": (p * TEACHERS).round().astype(int).tolist(),
                "one_pass_seconds": t_new,
                "per_offset_seconds": t_old,
                "speedup": t_old / t_new,
                "max_abs_difference": gap,
                "support_seconds": t_sup,
                "support_all_candidates_seconds": t_sup_old,
                "support_speedup": t_sup_old / t_sup,
                "support_identical": same,
            }
        )
    return {"queries": rows, "load_average": list(os.getloadavg()), "k": TEACHERS, "sigma": SIGMA}


def main(argv: list[str] | None = None) -> None:
    from _cli import bench_parser, parse

    parser = bench_parser(__doc__)
    stage = parser.add_mutually_exclusive_group()
    stage.add_argument("--models", action="store_true", help="only the models stage timings")
    stage.add_argument("--retraining", action="store_true", help="only the retraining rates")
    stage.add_argument("--paper", action="store_true", help="only the paper-scale runs")
    args = parse(parser, argv)
    if args.models:
        res = models_stage()
        old = json.loads(OUT.read_text()) if OUT.exists() else {}
        old["models_stage"] = res
        OUT.write_text(json.dumps(old, indent=2) + "\n")
        for r in res["queries"]:
            print(
                f"votes {r['votes']}: exact p̄ {r['one_pass_seconds'] * 1e3:.0f} ms one pass vs "
                f"{r['per_offset_seconds'] * 1e3:.0f} ms per offset ({r['speedup']:.1f}×, "
                f"|Δ| ≤ {r['max_abs_difference']:.1e}); support {r['support_seconds'] * 1e3:.0f}"
                f" vs {r['support_all_candidates_seconds'] * 1e3:.0f} ms "
                f"({r['support_speedup']:.1f}×, identical {r['support_identical']})"
            )
        print(f"load average {res['load_average']}")
        return
    if args.retraining:
        rates = retraining_rates()
        old = json.loads(OUT.read_text()) if OUT.exists() else {}
        old["retraining"] = rates
        OUT.write_text(json.dumps(old, indent=2) + "\n")
        print(json.dumps(rates, indent=1))
        return
    if args.paper:
        runs = paper_scale_runs()
        old = json.loads(OUT.read_text()) if OUT.exists() else {}
        old["paper_scale_runs"] = runs
        OUT.write_text(json.dumps(old, indent=2) + "\n")
        for label, r in runs.items():
            print(
                f"{label}: {r['wall_seconds'] / 60:.1f} min wall (load {r['load_before'][0]:.1f}"
                f" -> {r['load_after'][0]:.1f}); verdicts {r['verdicts']}"
            )
        return
    engine = engine_rates()
    costs = per_query_costs()
    training = training_costs()
    result = {
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "quick": QUICK,
        "engine": engine,
        "per_query": costs,
        "training": training,
        "paper_scale": extrapolate(engine, costs, training),
        "torch": torch_figure(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    ex = engine["exact_multinomial"]["experiments_per_second_per_query"]
    ds = engine["direct_simulation"]
    ps = result["paper_scale"]
    print(f"exact shortcut: {ex:.3g} experiments/s per query (S and S')")
    print(
        f"direct simulation: engine {ds['engine_serial_per_second']:.3g}/s serial, "
        f"{ds['engine_processes_2_per_second']:.3g}/s on 2 processes; baseline "
        f"plain loop {ds['baseline_plain_loop_per_second']:.3g}/s"
    )
    ov = engine["overhead"]
    print(
        f"engine overhead, blocks of 16: {ov['engine_blocks_per_second']:.3g} blocks/s "
        f"(plain loop {ov['plain_loop_blocks_per_second']:.3g}/s; checkpoint after every "
        f"block {ov['engine_checkpoint_every_block_blocks_per_second']:.3g}/s)"
    )
    print(
        f"per query: exact p̄ {costs['exact_output_distributions_seconds_per_query'] * 1e3:.1f} ms,"
        f" data-dependent {costs['data_dependent_mixture_seconds_per_query'] * 1e3:.1f} ms, "
        f"2-cut audit {costs['two_cut_audit_seconds_per_query'] * 1e3:.1f} ms"
    )
    if "teachers_per_second" in training:
        print(
            f"training: {training['teachers_per_second']:.1f} teachers/s, "
            f"{training['retrainings_per_second']:.1f} retrainings/s (Fashion-MNIST)"
        )
    print(
        f"paper scale: sampling {ps['sampling_seconds_exact']:.3g} s exact vs "
        f"{ps['sampling_days_direct_simulation_serial']:.3g} days direct simulation; "
        + (
            f"total ≈ {ps['total_seconds_exact_sampler'] / 60:.1f} min with the exact sampler"
            if "total_seconds_exact_sampler" in ps
            else ""
        )
    )
    print(f"torch: {result['torch'].get('reason', result['torch'])}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
