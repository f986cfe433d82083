"""Bring your own model: every dpaudit bound from canary scores you computed elsewhere.

The use case of JAX-Privacy's ``CanaryScoreAuditor(in_scores, out_scores)``: you trained a
model (any framework) with canaries, scored each canary (larger = more likely trained on, or
pass ``negate``) and want lower bounds on ε, with every data-dependent choice paid for.
Inputs: the scores of the included ("in") and excluded ("out") canaries, or all scores and an
inclusion mask; CSV (one number per row, an optional header, or a named column) or NPY.

Bounds (one :class:`~dpaudit._results.AuditEntry` each):

* ``"clopper-pearson"`` — ε at δ from the rejection set ``{score ≥ t}``: exact one-sided
  Clopper–Pearson bounds on TPR and FPR (Jagielski, Ullman & Oprea 2020, arXiv:2006.07709;
  :func:`dpaudit.bounds.epsilon_from_scores`), the threshold chosen on a random half
  (``split``) or paid for by Bonferroni over a grid of candidate thresholds.
* ``"gdp"`` — the Gaussian-DP μ the same two Clopper–Pearson bounds imply,
  ``μ ≥ Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi)`` (a μ-GDP test has ``TPR ≤ Φ(Φ⁻¹(FPR) + μ)``, Dong, Roth &
  Su 2022, arXiv:1905.02383, Def. 2.6), and ε at δ of that μ (Cor. 2.13) — for mechanisms
  whose trade-off curve is Gaussian (the premise of Nasr et al. 2023, arXiv:2302.07956;
  :func:`dpaudit.bounds.gdp_from_error_rates`).
* ``"or"``, ``"or-fdp"``, ``"max"`` — the one-run bounds of Steinke, Nasr & Jagielski 2023
  (arXiv:2305.08846) and Mahloujifar, Melis & Chaudhuri 2024 (arXiv:2410.22235) over the
  guess-count sweep, and their paid-for maximum (:func:`dpaudit.bounds.one_run_bounds`).

Which are valid depends on how the scores were produced (``design``):

* ``"one-run"`` — all canaries in one training run, each included independently with
  probability ½: the one-run bounds are valid; the Clopper–Pearson and GDP bounds treat the
  canaries as independent trials, which one run does not give (the canaries share the
  model), so they are reported with ``epsilon_is_valid = False``.
* ``"independent"`` — each score from its own training run (one canary per run, the
  classical multi-run audit): every bound is valid (the one-run bounds if each canary was
  included with probability ½ independently).

Example:
    >>> import numpy as np
    >>> g = np.random.default_rng(0)
    >>> res = audit_canary_scores(g.normal(1, 1, 1000), g.normal(0, 1, 1000), rng=0)
    >>> [e.adversary for e in res.entries]
    ['clopper-pearson', 'gdp', 'or', 'or-fdp', 'max']
"""

from __future__ import annotations

import csv
import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    LowerBound,
    ResultMixin,
    package_versions,
)
from dpaudit._rng import child_seed
from dpaudit._settings import option
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_delta,
    check_flag,
    check_in_range,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.bounds import (
    SELECTION_NAMES,
    EpsDeltaAudit,
    GDPBound,
    OneRunBounds,
    check_membership_scores,
    epsilon_from_scores,
    gdp_from_error_rates,
    one_run_bounds,
    selection_from_name,
)

__all__ = [
    "DESIGNS",
    "WORKFLOW",
    "ScoresAuditSettings",
    "audit_canary_scores",
    "audit_scores",
    "read_mask",
    "read_scores",
]

WORKFLOW = "scores"
DESIGNS: tuple[str, ...] = ("one-run", "independent")
_NOT_ONE_RUN = (
    "NOT a valid lower bound for canaries of one training run (it treats them as independent "
    "trials); valid when each score comes from its own run (design='independent')"
)


# ---------------------------------------------------------------------------------------------
# Reading scores
# ---------------------------------------------------------------------------------------------


def _is_value(cell: str, words: tuple[str, ...]) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell.strip().lower() in words
    return True


def _csv_column(path: Path, column: str | None, words: tuple[str, ...] = ()) -> list[str]:
    """One column of a CSV file; a first row that is not all values is the header."""
    with path.open(newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"{path} holds no rows")
    header = None
    if not all(_is_value(c, words) for c in rows[0]):
        header, rows = [c.strip() for c in rows[0]], rows[1:]
    if column is not None:
        if header is None or column not in header:
            raise ValueError(f"column {column!r} not found in {path} (header: {header})")
        j = header.index(column)
    elif len(rows[0]) == 1:
        j = 0
    else:
        raise ValueError(f"{path} has {len(rows[0])} columns: name one with column=")
    return [r[j].strip() for r in rows]


def read_scores(path: str | Path, *, column: str | None = None) -> np.ndarray:
    """A 1-d score vector from a ``.npy`` file or a CSV (one column, or ``column`` by name).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not numbers, NaN/inf, not 1-d, empty.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"score file {str(p)!r} does not exist")
    if p.suffix == ".npy":
        data = np.load(p, allow_pickle=False)
    else:
        cells = _csv_column(p, column)
        try:
            data = np.array([float(c) for c in cells])
        except ValueError as exc:
            raise ValueError(f"{p} must hold numbers: {exc}") from None
    if data.ndim == 2 and 1 in data.shape:  # a column or row vector
        data = np.ravel(data)
    return check_array(f"scores in {p.name}", data, ndim=1)


def read_mask(path: str | Path, *, column: str | None = None) -> np.ndarray:
    """A boolean inclusion mask from ``.npy`` or CSV (0/1 or true/false).

    Raises:
        FileNotFoundError, ValueError: as :func:`read_scores`; values other than 0/1.
    """
    p = Path(path)
    if p.suffix != ".npy" and p.is_file():
        cells = [c.lower() for c in _csv_column(p, column, ("true", "false"))]
        mapped = {"true": "1", "false": "0"}
        cells = [mapped.get(c, c) for c in cells]
        try:
            vals = np.array([float(c) for c in cells])
        except ValueError as exc:
            raise ValueError(f"{p} must hold 0/1 or true/false: {exc}") from None
    else:
        vals = read_scores(p, column=column)
    if not np.all((vals == 0) | (vals == 1)):
        raise ValueError(f"the inclusion mask in {p.name} must hold 0/1 or true/false")
    return vals.astype(bool)


# ---------------------------------------------------------------------------------------------
# Bounds
# ---------------------------------------------------------------------------------------------


def _threshold_selection(name: str, fraction: float, pos: np.ndarray, neg: np.ndarray, points):
    grid = None
    if name == "bonferroni":  # candidate thresholds: quantiles of the pooled scores
        pooled = np.concatenate([pos, neg])
        grid = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, min(points, pooled.size))))
        grid = tuple(grid.tolist())
    return selection_from_name(name, fraction=fraction, candidates=grid)


@dataclasses.dataclass(frozen=True)
class ScoreBounds(ResultMixin):
    """Every bound of one score set (the ``detail`` of the scores audit).

    Attributes:
        num_in, num_out: canaries included / excluded.
        design: ``"one-run"`` or ``"independent"``.
        clopper_pearson: the threshold audit.
        gdp: the GDP bound at the same threshold.
        one_run: the one-run sweeps and their maximum.
    """

    num_in: int
    num_out: int
    design: str
    clopper_pearson: EpsDeltaAudit
    gdp: GDPBound
    one_run: OneRunBounds


def _entries(b: ScoreBounds, level: float, delta: float, claims) -> list[AuditEntry]:
    one_run_ok = "the one-run games assume each canary was included independently with p = 1/2"
    cp_valid = b.design == "independent"
    cp = b.clopper_pearson
    out = [
        AuditEntry("canary-scores", "clopper-pearson",
                   LowerBound("Clopper-Pearson threshold audit", level, cp.epsilon, delta,
                              epsilon_is_valid=cp_valid, note="" if cp_valid else _NOT_ONE_RUN),
                   claims, selections=(cp.selection,), detail=cp),
        AuditEntry("canary-scores", "gdp",
                   LowerBound("Gaussian-DP from Clopper-Pearson error rates", level,
                              b.gdp.epsilon, delta, epsilon_is_valid=cp_valid,
                              note=("assumes a Gaussian trade-off curve; " if cp_valid else
                                    _NOT_ONE_RUN + "; ") + f"mu >= {b.gdp.mu:.4f}"),
                   claims, selections=(cp.selection,), detail=b.gdp),
    ]  # fmt: skip
    r = b.one_run
    for name, eps, unc, sel, method in (
        ("or", r.steinke.epsilon, r.steinke.uncorrected_max_epsilon, (r.steinke.selection,),
         "one-run (Steinke et al. 2023), guess-count sweep"),
        ("or-fdp", r.fdp.epsilon, r.fdp.uncorrected_max_epsilon, (r.fdp.selection,),
         "f-DP one-run, K=2 (Mahloujifar et al. 2024), guess-count sweep"),
        ("max", r.max_valid, r.uncorrected_max,
         (r.steinke.selection, r.fdp.selection, r.max_selection),
         "max of the two one-run procedures at beta/2 each (Bonferroni)"),
    ):  # fmt: skip
        note = f"{one_run_ok}; uncorrected maximum {unc:.4f} is NOT a valid lower bound"
        out.append(AuditEntry("canary-scores", name, LowerBound(method, level, eps, delta,
                              note=note), claims, selections=sel, detail=r))  # fmt: skip
    return out


def audit_canary_scores(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    design: str = "one-run",
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    selection: str = "split",
    split_fraction: float = 0.5,
    max_points: int = 500,
    claimed_epsilon: float | None = None,
    refine: bool | None = None,
    rng: RngLike = None,
) -> AuditResult:
    """Every bound from the scores of included and excluded canaries (module docstring).

    Args:
        in_scores: scores of the canaries that were trained on (larger = member).
        out_scores: scores of the canaries that were not.
        design: ``"one-run"`` or ``"independent"`` (which bounds are valid).
        delta: δ in (0, 1).
        confidence_level: 1 − β of every bound.
        selection: ``"split"``, ``"bonferroni"`` or ``"multi-split"`` (thresholds and guess
            counts; :func:`dpaudit.bounds.selection_from_name`, 100 splits).
        split_fraction: share used to choose (split).
        max_points: most candidate thresholds / guess counts.
        claimed_epsilon: the ε the system claims at δ (becomes the entries' claim).
        refine: refine the one-run sweeps' best number of guesses on a fine grid around
            the coarse optimum (:func:`dpaudit.bounds.one_run_bounds`; chosen on the
            selection part, so still valid). Default (``None``): on, except with
            ``selection="bonferroni"``, whose union bound covers the coarse grid only.
        rng: randomness of the splits (keyword-only).

    Returns:
        :class:`~dpaudit._results.AuditResult` (workflow ``"scores"``).

    Raises:
        ValueError: empty, NaN or infinite scores; bad δ, level, design or selection.
    """
    pos = check_array("in_scores", in_scores, ndim=1)
    neg = check_array("out_scores", out_scores, ndim=1)
    design = check_choice("design", design, DESIGNS)
    d = check_delta(delta, allow_zero=False)
    level = check_confidence_level(confidence_level)
    check_choice("selection", selection, SELECTION_NAMES)
    points = check_positive_int("max_points", max_points)
    refine = selection != "bonferroni" if refine is None else check_flag("refine", refine)
    if refine and selection == "bonferroni":
        raise ValueError("refine=True needs selection 'split' or 'multi-split', got 'bonferroni'")
    claims = ()
    if claimed_epsilon is not None:
        eps_claim = check_positive("claimed_epsilon", claimed_epsilon)
        claims = (Claim("user claim", "given by the user", eps_claim, d),)
    seed = child_seed(rng if rng is not None else np.random.SeedSequence(), 0)
    cp_seq, run_seq = seed.spawn(2)
    t0 = time.perf_counter()
    sel = _threshold_selection(selection, split_fraction, pos, neg, points)
    cp = epsilon_from_scores(pos, neg, selection=sel, delta=d, confidence_level=level,
                             rng=np.random.default_rng(cp_seq))  # fmt: skip
    gdp = gdp_from_error_rates(cp.tpr_lower, cp.fpr_upper, d)
    scores = np.concatenate([pos, neg])
    included = np.concatenate([np.ones(pos.size, bool), np.zeros(neg.size, bool)])
    one_run = one_run_bounds(scores, included, delta=d, confidence_level=level,
                             selection=selection, split_fraction=split_fraction,
                             max_points=points, rng=run_seq, refine=refine)  # fmt: skip
    bounds = ScoreBounds(pos.size, neg.size, design, cp, gdp, one_run)
    return AuditResult(
        workflow=WORKFLOW,
        entries=tuple(_entries(bounds, level, d, claims)),
        settings={
            "design": design,
            "delta": d,
            "confidence_level": level,
            "selection": selection,
            "split_fraction": split_fraction,
            "max_points": points,
            "refine": refine,
            "claimed_epsilon": claimed_epsilon,
        },
        seed=seed.entropy if isinstance(rng, (int, np.integer)) else None,
        timings={"bounds": time.perf_counter() - t0},
        versions=package_versions(),
        detail=bounds,
        note=f"design={design!r}: " + (_NOT_ONE_RUN if design == "one-run" else "all valid"),
    )


# ---------------------------------------------------------------------------------------------
# Files and settings (the CLI's entry point)
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ScoresAuditSettings:
    """Lower bounds from canary scores computed elsewhere (``dpaudit audit scores``)."""

    in_scores: str | None = option(None, help="scores of included canaries (.csv/.npy)")
    out_scores: str | None = option(None, help="scores of excluded canaries (.csv/.npy)")
    scores: str | None = option(None, help="all canary scores (with --included)")
    included: str | None = option(None, help="inclusion mask 0/1 of --scores (.csv/.npy)")
    column: str | None = option(None, help="CSV column name (files with several columns)")
    negate: bool = option(False, help="lower scores mean 'member' (e.g. losses)")
    design: str = option("one-run", help="one-run | independent (which bounds are valid)")
    delta: float = option(1e-5, help="δ of every bound")
    confidence_level: float = option(0.95, help="confidence 1 − β")
    selection: str = option(
        "split", help="split | bonferroni | multi-split (thresholds, guess counts)"
    )
    split_fraction: float = option(0.5, help="share used to choose (split)")
    max_points: int = option(500, help="most candidate thresholds / guess counts")
    claimed_epsilon: float | None = option(None, help="the system's claimed ε at δ")
    refine: bool = option(
        True, help="refine the best number of guesses near the coarse optimum (not bonferroni)"
    )
    seed: int = option(0, help="seed of the random splits")

    def __post_init__(self) -> None:
        check_choice("design", self.design, DESIGNS)
        check_delta(self.delta, allow_zero=False)
        check_confidence_level(self.confidence_level)
        check_choice("selection", self.selection, SELECTION_NAMES)
        check_in_range("split_fraction", self.split_fraction, 0.0, 1.0)
        check_positive_int("max_points", self.max_points)
        if self.claimed_epsilon is not None:
            check_positive("claimed_epsilon", self.claimed_epsilon)
        check_nonneg_int("seed", self.seed)


def _check_inputs(s: ScoresAuditSettings) -> None:
    """Exactly one way of giving the scores (checked before any file is read)."""
    pair = s.in_scores is not None or s.out_scores is not None
    single = s.scores is not None or s.included is not None
    if pair == single:
        raise ValueError("give either --in-scores and --out-scores, or --scores and --included")
    if pair and (s.in_scores is None or s.out_scores is None):
        raise ValueError("--in-scores and --out-scores go together")
    if single and (s.scores is None or s.included is None):
        raise ValueError("--scores and --included go together")


def _load(settings: ScoresAuditSettings) -> tuple[np.ndarray, np.ndarray]:
    _check_inputs(settings)
    if settings.in_scores is not None:
        pos = read_scores(settings.in_scores, column=settings.column)
        neg = read_scores(settings.out_scores, column=settings.column)
    else:
        s = read_scores(settings.scores, column=settings.column)
        s, inc = check_membership_scores(s, read_mask(settings.included))
        pos, neg = s[inc], s[~inc]
        if pos.size == 0 or neg.size == 0:
            raise ValueError("the inclusion mask must mark some canaries in and some out")
    sign = -1.0 if settings.negate else 1.0
    return sign * pos, sign * neg


def audit_scores(
    settings: ScoresAuditSettings,
    *,
    data: tuple[ArrayLike, ArrayLike] | None = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Read the score files of ``settings`` (or take ``data``) and run
    :func:`audit_canary_scores`.

    Args:
        settings: :class:`ScoresAuditSettings`.
        data: ``(in_scores, out_scores)`` arrays, used instead of the settings' files.
        progress, checkpoint: unused (the bounds take seconds); accepted for the workflow
            signature.

    Raises:
        FileNotFoundError: a missing file. ValueError: bad files, data or settings.
    """
    if data is None:
        pos, neg = _load(settings)
    else:
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise TypeError(f"data must be a pair (in_scores, out_scores), got {data!r:.80}")
        sign = -1.0 if settings.negate else 1.0
        pos = sign * check_array("data[0]", data[0], ndim=1)
        neg = sign * check_array("data[1]", data[1], ndim=1)
    result = audit_canary_scores(
        pos, neg, design=settings.design, delta=settings.delta,
        confidence_level=settings.confidence_level, selection=settings.selection,
        split_fraction=settings.split_fraction, max_points=settings.max_points,
        claimed_epsilon=settings.claimed_epsilon, rng=settings.seed,
        refine=settings.refine and settings.selection != "bonferroni",
    )  # fmt: skip
    return dataclasses.replace(result, settings=settings, seed=settings.seed)
