"""The group-privacy audit end to end (Chadha et al. 2024, arXiv:2402.09403, App. C).

Per group adversary and group size m: train the system once (fixed seed), let the adversary
craft S′ on proxy queries and a poisoning pool, record the noiseless histograms of the
audited natural queries on S and S′, sample T noisy answers per changed query from the exact
output distributions (at ``sigma·noise_factor``), and bound the RDP of the n_Q answers from
below: the larger of the held-out per-query 2-cut audit summed over the audited queries and
one joint 2-cut over all changed queries (:func:`.stages.joint_bound`), each at 1 − β/2.
Next to it: the exact RDP of the pair, the group claims, the normalisation back to one
point, and the exact group functional of the noisy argmax at the most moved query. The
summary compares each normalised group bound with the single-point (m = 1) adversary on the
same system — the paper's open question.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    Curve,
    LowerBound,
    ResultMixin,
    SelectionRecord,
    package_versions,
)
from dpaudit._rng import block_seeds, child_seed
from dpaudit._typing import ProgressLike
from dpaudit.experiments.group_privacy import stages
from dpaudit.experiments.group_privacy.claims import claims as group_claims
from dpaudit.experiments.group_privacy.claims import normalise, worst_case_functional
from dpaudit.experiments.group_privacy.settings import GroupPrivacySettings

__all__ = ["GroupPrivacyDetail", "GroupRun", "audit_group_privacy"]

WORKFLOW = "group-privacy"
NOTE = (
    "audit = valid RDP lower bound on the group guarantee (all n_Q answers); normalised = a "
    "single-point lower bound through the group functional ('generic': Mironov 2017 Prop. 2, "
    "valid for any mechanism; 'gaussian': /m^2, valid for the Gaussian release the claim "
    "analyses; 'teacher': a CaPC party is the unit). epsilon values at delta are displays."
)


@dataclasses.dataclass(frozen=True)
class GroupRun(ResultMixin):
    """One (adversary, m) run: what was changed and what it leaked.

    Attributes:
        adversary: the group adversary.
        system: the system attacked.
        size: m (training points changed; a replaced party's row count for ``"teacher"``).
        unit: ``"points"`` or ``"teacher"``.
        changed_queries: audited queries whose histogram moved.
        max_shift: most votes moved at one query.
        proxy_effect: the crafter's objective on the proxy queries.
        description: how the points were chosen.
        normalised: single-point lower-bound curves by rule.
        functional: the exact group functional at the most moved query (may be empty).
        per_query: the per-query bound summed over the audited queries.
        joint: the joint 2-cut bound over every changed query (None when not run).
        joint_threshold: its log-likelihood-ratio threshold t.
    """

    adversary: str
    system: str
    size: int
    unit: str
    changed_queries: int
    max_shift: int
    proxy_effect: float
    description: str
    normalised: dict[str, Curve]
    functional: dict[str, Any]
    per_query: Curve
    joint: Curve | None
    joint_threshold: float | None


@dataclasses.dataclass(frozen=True)
class GroupPrivacyDetail(ResultMixin):
    """The answer table: per run, RDP at ``order`` of the group bound, its normalisations
    and the single-point (m = 1) bound on the same system.

    Attributes:
        order: the Rényi order of the table.
        rows: one dict per run (``system``, ``adversary``, ``m``, ``changed``, ``group``,
            ``normalised``, ``generic``, ``single_point``, ``exact``, ``leaks_more``; and the
            same comparison on exact values: ``exact_normalised`` (exact / m², or exact for a
            party), ``exact_single_point``, ``exact_leaks_more``).
        dataset: the dataset's name.
        noise_factor: the planted-bug factor of the noise (1: none).
    """

    order: float
    rows: tuple[dict[str, Any], ...]
    dataset: str
    noise_factor: float


def audit_group_privacy(
    settings: GroupPrivacySettings,
    *,
    data: Any = None,
    progress: ProgressLike = None,
    checkpoint: str | Path | None = None,
) -> AuditResult:
    """Run the group-privacy audit (module notes); ``checkpoint`` is unused (nothing long to
    resume: each run is one retraining and one multinomial draw per query).

    Raises:
        TypeError: settings of another type.
        ValueError: sizes the dataset cannot hold — checked before any training.

    Example:
        >>> s = GroupPrivacySettings(dataset="digits", adversaries=("capc-teacher",),
        ...     teachers=10, sigma=4.0, queries=40, proxy_queries=40, pool=40,
        ...     experiments=10**6)
        >>> r = audit_group_privacy(s)
        >>> [e.adversary for e in r.entries]
        ['capc-group m=1', 'capc-teacher']
        >>> e = r.entries[1]
        >>> bool(np.all(e.lower_bound.rdp.epsilons <= e.exact.rdp.epsilons + 1e-12))
        True
    """
    if not isinstance(settings, GroupPrivacySettings):
        raise TypeError(f"settings must be GroupPrivacySettings, got {type(settings).__name__}")
    from dpaudit.attacks import GROUP_ADVERSARIES

    start = time.perf_counter()
    ds = stages.load_data(settings, data)
    stages.check_sizes(settings, ds)
    root = np.random.SeedSequence(settings.seed)
    rows = stages.split_rows(ds, settings, rng=np.random.default_rng(child_seed(root, 0)))
    entries: list[AuditEntry] = []
    targets: dict[str, Any] = {}
    for a, name in enumerate(settings.adversaries):
        for adv, m in stages.group_runs(GROUP_ADVERSARIES.get(name), settings):
            if adv.system not in targets:  # one training per system, shared by its runs
                seed = child_seed(root, 1, len(targets))
                targets[adv.system] = stages.build_target(adv, settings, ds, rng=seed)
            key = child_seed(root, 2, a, len(entries))
            entries.append(_run(adv, m, targets[adv.system], ds, rows, settings, key))
    detail = GroupPrivacyDetail(
        settings.report_order, _table(entries, settings), ds.name, settings.noise_factor
    )
    return AuditResult(
        workflow=WORKFLOW,
        entries=tuple(entries),
        settings=settings,
        seed=settings.seed,
        timings={"total": time.perf_counter() - start},
        versions=package_versions("scikit-learn"),
        detail=detail,
        note=NOTE,
    )


def _run(
    adv: Any,
    m: int,
    target: Any,
    data: Any,
    rows: stages.Rows,
    settings: GroupPrivacySettings,
    key: np.random.SeedSequence,
) -> AuditEntry:
    """One (adversary, m): poison, sample, bound, exact, claims, normalise."""
    craft_seed, sample_seed, audit_seed, joint_seed = block_seeds(key, 4)
    pair = stages.poison(adv, target, m, data, rows, rng=np.random.default_rng(craft_seed))
    orders = settings.order_grid()
    actual = settings.sigma * settings.noise_factor
    audited = stages.select_queries(pair, actual, settings)
    per_query, joint, threshold = _bounds(pair, audited, actual, settings, sample_seed,
                                          audit_seed, joint_seed)  # fmt: skip
    lower = per_query if joint is None else np.maximum(per_query, joint)
    exact = stages.exact_curve(pair, actual, orders)
    gc = group_claims(
        adv, m, sigma=settings.sigma, num_queries=settings.queries, orders=orders,
        delta=settings.delta,
    )  # fmt: skip
    functional = worst_case_functional(pair, actual, orders, max_distance=settings.exact_distance)
    run = GroupRun(
        adv.name, adv.system, int(pair.poisoning.group_size), pair.poisoning.unit,
        int(pair.changed.size), int(pair.shifts.max(initial=0)),
        float(pair.poisoning.proxy_effect), pair.poisoning.description,
        normalise(adv, m, orders, lower),
        functional, Curve(orders, per_query),
        None if joint is None else Curve(orders, joint), threshold,
    )  # fmt: skip
    return _entry(adv, m, run, orders, lower, exact, gc.claims, settings, audited.changed.size)


def _bounds(pair, audited, sigma, settings, sample_seed, audit_seed, joint_seed):
    """The per-query bound (summed over the audited queries) and the joint 2-cut over all
    changed queries, each at ``1 − β/2`` when both are computed (their maximum is then valid
    at ``1 − β`` by a union bound)."""
    orders = settings.order_grid()
    use_joint = settings.joint_experiments > 0 and pair.changed.size > 0
    level = 1.0 - (1.0 - settings.confidence_level) / (2.0 if use_joint else 1.0)
    per_query = np.zeros(orders.size)
    if audited.changed.size:
        counts = stages.sample_counts(
            audited, sigma, settings.experiments, rng=np.random.default_rng(sample_seed)
        )
        per_query = np.asarray(
            stages.bound(counts, settings, rng=audit_seed, confidence_level=level).curve.epsilons
        )
    if not use_joint:
        return per_query, None, None
    joint, t = stages.joint_bound(pair, sigma, settings, rng=joint_seed, confidence_level=level)
    return per_query, joint, t


def _entry(adv, m, run, orders, lower, exact, claims, settings, bounded) -> AuditEntry:
    from dpaudit.accounting import RDPCurve

    label = adv.name if adv.fixed_group else f"{adv.name} m={m}"
    lb = LowerBound(
        "max of two 2-cut RDP audits (Clopper-Pearson, 1 - beta/2 each): per query with a "
        "held-out output set, summed; and one joint 2-cut on the summed log-likelihood ratio",
        settings.confidence_level,
        float(RDPCurve(orders, lower).to_dp(settings.delta).epsilon),
        settings.delta,
        epsilon_is_valid=False,
        rdp=Curve(orders, lower),
        note=f"{run.changed_queries} of {settings.queries} queries changed, {bounded} "
        f"bounded; group of {run.size} {run.unit}",
    )
    ex = Claim(
        "exact", "exact noisy-argmax output distributions (Chadha et al. 2024, Eq. 4)",
        float(RDPCurve(orders, exact).to_dp(settings.delta).epsilon), settings.delta,
        Curve(orders, exact), "balle2020",
    )  # fmt: skip
    sel = (
        SelectionRecord("output set", "split", "chosen on a random half of each query's counts"),
        SelectionRecord("poison", "explicit", "chosen on proxy queries' noiseless votes"),
        SelectionRecord(
            "audited queries", "explicit", "largest exact divergence of the noiseless pair"
        ),
    )
    return AuditEntry(adv.system, label, lb, claims, ex, sel, run)


def _at(curve: Curve, order: float) -> float | None:
    hit = np.flatnonzero(np.isclose(curve.orders, order))
    return float(curve.epsilons[hit[0]]) if hit.size else None


def _table(entries: list[AuditEntry], settings: GroupPrivacySettings) -> tuple[dict, ...]:
    """Per run at ``report_order``: group bound, normalised bounds, single-point bound."""
    a = settings.report_order
    single: dict[str, float] = {}
    single_exact: dict[str, float] = {}
    for e in entries:
        if e.detail.size == 1 and e.detail.unit == "points":
            single.setdefault(e.system, _at(e.lower_bound.rdp, a) or 0.0)
            single_exact.setdefault(e.system, _at(e.exact.rdp, a) or 0.0)
    out = []
    for e in entries:
        r = e.detail
        own = next(iter(r.normalised.values()))
        norm, gen = _at(own, a), _at(r.normalised["generic"], a)
        one, one_exact = single.get(e.system), single_exact.get(e.system)
        best = max(v for v in (norm, gen, 0.0) if v is not None)
        scale = 1.0 if r.unit == "teacher" else float(r.size) ** 2
        ex = _at(e.exact.rdp, a)
        ex_norm = None if ex is None else ex / scale
        out.append({
            "system": e.system, "adversary": e.adversary, "m": r.size, "unit": r.unit,
            "changed": r.changed_queries, "max_shift": r.max_shift,
            "group": _at(e.lower_bound.rdp, a), "exact": _at(e.exact.rdp, a),
            "normalised": norm, "generic": gen, "single_point": one,
            "leaks_more": None if one is None else bool(best > one),
            "exact_normalised": ex_norm, "exact_single_point": one_exact,
            "exact_leaks_more": None if one_exact is None or ex_norm is None
            else bool(ex_norm > one_exact),
        })  # fmt: skip
    return tuple(out)
