"""Tables 1–2 of Liu et al. at the scale of a small CPU machine, on Fashion-MNIST.

Liu, Boglioni, Fu, Hu, Thaker & Wu (*Enhancing One-run Privacy Auditing with Quantile
Regression-Based Membership Inference*, Tables 1–2) audit Wide-ResNets trained with DP-SGD on
CIFAR-10 (JAX-Privacy, De et al. 2022, arXiv:2204.13650) in one run: baseline vs
quantile-regression scores, ε_or (Steinke et al. 2023), ε_or-fdp (Mahloujifar et al. 2024)
and their maximum, averaged over 5 runs. CIFAR-10 and those models are out of reach on 2 CPU
cores; here the same layouts run on Fashion-MNIST with the small CNN of
:mod:`dpaudit.systems._torch_nets`, the base settings of the shipped config
``dp-sgd-fashion-mnist.toml`` (ε = 8 at δ = 1e-5, PRV), and — next to the papers' uncorrected
numbers — valid bounds with every choice paid for.

Layouts (n = r + m/2 examples trained on, on average):

* Table 2: n ∈ {5000, 10000, 20000} with r = 0, m = 2n and r = n/2, m = n; 20,000 holdout
  non-members for the regressor (as the paper);
* Table 1: r = 45,000, m = 5,000 (n = 47,500) with 10,000 holdout non-members.

:func:`run_layouts` writes ``DIR/<layout>/results.json`` per layout (a finished layout is
skipped, so an interrupted reproduction resumes; ``dpaudit report`` or
:func:`dpaudit.report.dpsgd.plot_guess_sweep` draws any of them),
:func:`reproduction_markdown` puts the measured means beside the paper's and
:func:`reproduction_summary` condenses the results files (megabytes of per-canary scores) into
a small JSON-ready mapping: per layout the mechanism, the claims, wall times, training
diagnostics, the per-run bounds and the rank AUC of each score. Run
``python -m dpaudit.experiments.dpsgd.reproduction --out DIR [--layouts ...]
[--repetitions 5] [--canary-kind data] [--summary FILE]``.

Example:
    >>> LAYOUTS["table2-n5000-r0"]
    Layout(n=5000, num_non_canaries=0, num_canaries=10000, num_holdout=20000, table='2')
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpaudit import _settings
from dpaudit._settings import find_config
from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings

__all__ = [
    "LAYOUTS",
    "PAPER",
    "Layout",
    "layout_settings",
    "main",
    "reproduction_markdown",
    "reproduction_summary",
    "run_layouts",
]


@dataclasses.dataclass(frozen=True)
class Layout:
    """One data layout of Liu et al.'s tables: n, r, m, holdout size and the table."""

    n: int
    num_non_canaries: int
    num_canaries: int
    num_holdout: int
    table: str


def _table2(n: int, half: bool) -> Layout:
    r, m = (n // 2, n) if half else (0, 2 * n)
    return Layout(n, r, m, 20000, "2")


LAYOUTS: dict[str, Layout] = {
    "table2-n5000-r0": _table2(5000, False),
    "table2-n5000-rhalf": _table2(5000, True),
    "table2-n10000-r0": _table2(10000, False),
    "table2-n10000-rhalf": _table2(10000, True),
    "table2-n20000-r0": _table2(20000, False),
    "table2-n20000-rhalf": _table2(20000, True),
    "table1": Layout(47500, 45000, 5000, 10000, "1"),
}

#: Liu et al.'s reported averages over 5 runs (uncorrected maxima; CIFAR-10, WRN-16-4):
#: layout → attack → (ε_or, ε_or-fdp, ε_max). Reference data for the comparison table only.
PAPER: dict[str, dict[str, tuple[float, float, float]]] = {
    "table1": {"baseline": (0.159, 0.147, 0.208), "qmia": (0.210, 0.134, 0.253)},
    "table2-n5000-r0": {"baseline": (0.181, 0.175, 0.237), "qmia": (0.280, 0.240, 0.364)},
    "table2-n5000-rhalf": {"baseline": (0.299, 0.234, 0.393), "qmia": (0.279, 0.486, 0.503)},
    "table2-n10000-r0": {"baseline": (0.202, 0.172, 0.216), "qmia": (0.201, 0.339, 0.364)},
    "table2-n10000-rhalf": {"baseline": (0.227, 0.115, 0.241), "qmia": (0.341, 0.217, 0.356)},
    "table2-n20000-r0": {"baseline": (0.055, 0.086, 0.098), "qmia": (0.146, 0.246, 0.268)},
    "table2-n20000-rhalf": {"baseline": (0.128, 0.191, 0.204), "qmia": (0.165, 0.313, 0.324)},
}


def layout_settings(
    base: DPSGDAuditSettings,
    name: str,
    *,
    repetitions: int | None = None,
    canary_kind: str | None = None,
) -> DPSGDAuditSettings:
    """The base settings with one layout's r, m and holdout (and ``repetitions``, and the
    canaries' ``kind``: ``"data"`` keeps their true labels as Liu et al. do, §4: "we do not
    flip the canary labels"; the shipped base config flips them).

    Raises:
        KeyError: an unknown layout.
        ValueError: an unknown canary kind.
    """
    lay = LAYOUTS[name]
    overrides: dict[str, Any] = {
        "name": f"{base.name}-{name}",
        "data.num_non_canaries": lay.num_non_canaries,
        "data.num_holdout": lay.num_holdout,
        "canaries.num_canaries": lay.num_canaries,
    }
    if repetitions is not None:
        overrides["repetitions"] = repetitions
    if canary_kind is not None:
        overrides["canaries.kind"] = canary_kind
    return _settings.apply_overrides(base, overrides)


def run_layouts(
    base: DPSGDAuditSettings,
    layouts: Sequence[str],
    out_dir: str | Path,
    *,
    repetitions: int | None = None,
    canary_kind: str | None = None,
    log: Any = print,
) -> dict[str, Path]:
    """Run each layout's audit and write ``out_dir/<layout>/results.json`` (resumable).

    Returns:
        layout → the results file.
    """
    from dpaudit.experiments.dpsgd.threat_models import audit_dpsgd

    unknown = [name for name in layouts if name not in LAYOUTS]
    if unknown:
        raise ValueError(f"unknown layouts {unknown}; known: {sorted(LAYOUTS)}")
    out = Path(out_dir)
    paths = {}
    for name in layouts:
        target = out / name / "results.json"
        if not target.is_file():
            start = time.perf_counter()
            settings = layout_settings(base, name, repetitions=repetitions, canary_kind=canary_kind)
            audit_dpsgd(settings).write_json(target)
            log(f"{name}: done in {time.perf_counter() - start:.0f} s")
        paths[name] = target
    return paths


def _summaries(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    return {(s["attack"], s["bound"]): s for s in data["detail"]["summaries"]}


def _cells(summ: dict, attack: str, kind: str) -> str:
    return " / ".join(
        f"{summ[(attack, b)][kind + '_mean']:.3f}±{summ[(attack, b)][kind + '_std']:.3f}"
        for b in ("or", "or-fdp", "max")
    )


def reproduction_markdown(out_dir: str | Path, layouts: Sequence[str] | None = None) -> str:
    """A markdown table: per layout and attack, the paper's ε_or / ε_or-fdp / ε_max (CIFAR-10,
    uncorrected) beside the measured uncorrected and valid means ± sd (Fashion-MNIST)."""
    out = Path(out_dir)
    names = [n for n in (layouts or LAYOUTS) if (out / n / "results.json").is_file()]
    head = (
        "| layout | n | r | m | attack | paper ε_or / ε_or-fdp / ε_max | measured, uncorrected "
        "ε_or / ε_or-fdp / ε_max | measured, valid ε_or / ε_or-fdp / ε_max | runs |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for name in names:
        lay = LAYOUTS[name]
        summ = _summaries(out / name / "results.json")
        for attack in ("baseline", "qmia"):
            if (attack, "or") not in summ:
                continue
            unc = _cells(summ, attack, "uncorrected")
            val = _cells(summ, attack, "valid")
            paper = " / ".join(f"{x:.3f}" for x in PAPER[name][attack])
            runs = len(summ[(attack, "or")]["valid"])
            rows.append(
                f"| {name} | {lay.n} | {lay.num_non_canaries} | {lay.num_canaries} | {attack} "
                f"| {paper} | {unc} | {val} | {runs} |"
            )
    return head + "\n".join(rows) + "\n"


def rank_auc(scores: Any, included: Any) -> float:
    """Area under the ROC curve of ``scores`` for ``included`` (Mann–Whitney U / (n₁ n₀)).

    Ties count ½ (mid-ranks). 0.5 means the score carries no membership signal.

    Example:
        >>> rank_auc([0.1, 0.4, 0.5, 0.8], [False, True, False, True])
        0.75
    """
    import numpy as np
    from scipy.stats import rankdata

    s = np.asarray(scores, dtype=float)
    inc = np.asarray(included, dtype=bool)
    n1, n0 = int(inc.sum()), int((~inc).sum())
    if s.shape != inc.shape or n1 == 0 or n0 == 0:
        raise ValueError(f"need matching scores and a mask with both classes; got {s.shape}")
    ranks = rankdata(s)
    return float((ranks[inc].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _run_summary(rep: dict[str, Any]) -> dict[str, Any]:
    scores = rep["scores"]
    return {
        "num_members": rep["num_members"],
        "training_seconds": rep["training_seconds"],
        "examples_per_second": rep["examples_per_second"],
        "final_loss": rep["final_loss"],
        "holdout_accuracy_as_scored": scores.get("holdout_accuracy"),
        "test_accuracy": scores.get("test_accuracy"),
        "qmia_seconds": scores.get("qmia_seconds"),
        "timings": rep["timings"],
        "auc": {a: rank_auc(v, rep["included"]) for a, v in scores["values"].items()},
    }


def _layout_summary(name: str, path: Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    detail = data["detail"]
    runs = [_run_summary(rep) for rep in detail["repetitions"]]
    attacks: dict[str, Any] = {}
    for summ in detail["summaries"]:
        entry = attacks.setdefault(summ["attack"], {"paper": {}, "measured": {}})
        if summ["attack"] in PAPER[name]:
            paper = dict(zip(("or", "or-fdp", "max"), PAPER[name][summ["attack"]], strict=True))
            entry["paper"] = paper
        entry["measured"][summ["bound"]] = {
            k: summ[k] for k in summ if k not in ("attack", "bound")
        }
    for attack, entry in attacks.items():
        aucs = [run["auc"][attack] for run in runs]
        entry["auc_mean"] = sum(aucs) / len(aucs)
    return {
        "layout": dataclasses.asdict(LAYOUTS[name]),
        "mechanism": detail["mechanism"],
        "claims": {c["source"]: c["epsilon"] for c in data["entries"][0]["claims"]},
        "timings": data["timings"],
        "wall_seconds": sum(data["timings"].values()),
        "attacks": attacks,
        "runs": runs,
    }


def reproduction_summary(
    out_dir: str | Path, layouts: Sequence[str] | None = None
) -> dict[str, Any]:
    """A compact, JSON-ready summary of the stored results of the reproduction.

    Per layout found under ``out_dir``: its n, r, m and holdout, the mechanism (q, σ, steps),
    the claims (ε at δ of each accountant), wall times, and per attack the paper's triple, the
    measured uncorrected and valid ε_or / ε_or-fdp / ε_max (per run, mean, sd) and the rank
    AUC of the score per run (0.5: no membership signal); per run the training diagnostics.

    Returns:
        ``{"settings": ..., "settings_note": ..., "layouts": {name: ...}, "not_run": [...]}``.
    """
    out = Path(out_dir)
    names = [n for n in (layouts or LAYOUTS) if (out / n / "results.json").is_file()]
    summaries = {name: _layout_summary(name, out / name / "results.json") for name in names}
    settings = None
    if names:
        settings = json.loads((out / names[0] / "results.json").read_text())["settings"]
    return {
        "settings": settings,
        "settings_note": (
            "the settings of the first layout; every layout overrides name, "
            "data.num_non_canaries, data.num_holdout and canaries.num_canaries"
        ),
        "layouts": summaries,
        "not_run": [n for n in LAYOUTS if n not in summaries],
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: run the layouts (resumable) and print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--config", default=None, help="base TOML (default: shipped config)")
    parser.add_argument("--layouts", nargs="*", default=list(LAYOUTS), help="layouts to run")
    parser.add_argument("--repetitions", type=int, default=None, help="runs per layout")
    parser.add_argument("--canary-kind", default=None,
                        help='canary kind, e.g. "data" (true labels, as Liu et al.) or '
                             '"flipped" (the base config\'s)')  # fmt: skip
    parser.add_argument("--summary", default=None, help="also write a compact summary JSON")
    parser.add_argument("--no-run", action="store_true", help="only tabulate stored results")
    args = parser.parse_args(argv)
    if not args.no_run:
        config = args.config or find_config("dp-sgd-fashion-mnist")
        base = _settings.load_toml(config, DPSGDAuditSettings)
        run_layouts(base, args.layouts, args.out, repetitions=args.repetitions,
                    canary_kind=args.canary_kind)  # fmt: skip
    print(reproduction_markdown(args.out, args.layouts))
    if args.summary:
        summary = reproduction_summary(args.out, args.layouts)
        Path(args.summary).write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":  # pragma: no cover - command line
    main()
