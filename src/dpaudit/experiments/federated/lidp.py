"""The Lifted-DP bound with canary clients (Pillutla, Andrew, Kairouz, McMahan, Oprea & Oh
2023, "Unleashing the Power of Randomization in Auditing Differentially Private ML",
arXiv:2305.18447), beside the one-run bounds of :mod:`.pipeline`.

n **alternative** training runs insert k fresh canary clients each and test those k; n
**null** runs insert k canary clients and test k *other* fresh directions that were never
inserted. A canary's test is its all-iterates statistic standardised by the closed-form null
(``Σ_t cos(c, Δ_t) / (‖Σ_t Δ_t/‖Δ_t‖‖/√d)``, N(0, 1) for a canary independent of the run)
against a threshold τ fixed before any run; the (n × k) 0/1 outcomes of each side go to
:func:`dpaudit.bounds.lidp_epsilon`, whose Wilson intervals use the correlation between the
k canaries of a run. The runs are independent (their own seeds) and τ is not chosen on them,
so the bound is valid at its confidence with nothing to pay for.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._results import AuditEntry, LowerBound, ResultMixin, SelectionRecord
from dpaudit._rng import child_seed
from dpaudit._validate import check_positive_int, check_real
from dpaudit.attacks import canary_cosines, draw_canary_clients
from dpaudit.bounds import LiDPResult, lidp_epsilon
from dpaudit.experiments.federated.pipeline import load_clients
from dpaudit.experiments.federated.settings import FederatedSettings
from dpaudit.systems import SYSTEMS, FederatedData

__all__ = ["LiDPCanaryDetail", "lidp_canary_clients"]


@dataclasses.dataclass(frozen=True)
class LiDPCanaryDetail(ResultMixin):
    """The Lifted-DP audit with canary clients.

    Attributes:
        trials: n runs per side.
        canaries: k canary clients per run.
        threshold: τ of the standardised statistic.
        lidp: the interval result (TPR lower, FPR upper bounds, ε).
        mean_alternative, mean_null: the standardised statistic's mean on each side.
        seconds: wall time of the 2n runs.
    """

    trials: int
    canaries: int
    threshold: float
    lidp: LiDPResult
    mean_alternative: float
    mean_null: float
    seconds: float


def _side(system, fed, s: FederatedSettings, trials: int, k: int, threshold: float, side: int):
    """The (n × k) outcomes and standardised statistics of one side (1: alternative)."""
    outcomes, stats = np.zeros((trials, k)), np.zeros((trials, k))
    for i in range(trials):
        seeds = [child_seed(s.seed, 10, side, i, j) for j in range(3)]
        inserted = draw_canary_clients(k, system.dimension(fed), inclusion=1.0, rng=seeds[0])
        run = system.train(fed, inserted.directions, inserted.included,
                           canary_scale=s.canaries.scale, rng=seeds[1])  # fmt: skip
        if side:
            tested = inserted.directions
        else:
            d = system.dimension(fed)
            tested = draw_canary_clients(k, d, inclusion=1.0, rng=seeds[2]).directions
        cos = canary_cosines(tested, run.deltas, run.final_delta)
        stats[i] = cos.sum / cos.null_sd_sum
        outcomes[i] = stats[i] >= threshold
    return outcomes, stats


def lidp_canary_clients(
    settings: FederatedSettings,
    *,
    trials: int,
    threshold: float = 1.0,
    method: str = "wilson4",
    data: tuple[FederatedData, Any] | None = None,
) -> AuditEntry:
    """The Lifted-DP lower bound of ``settings``' system with its ``canaries.count`` canary
    clients per run (module docstring).

    Args:
        settings: the federated settings (``canaries.count`` is k per run).
        trials: n runs per side (2n runs in all).
        threshold: τ, fixed in advance, on the standardised all-iterates statistic.
        method: the interval of :func:`dpaudit.bounds.lidp_epsilon` (``"wilson4"``: k ≥ 4).
        data: preloaded ``(FederatedData, test)``.

    Returns:
        an :class:`~dpaudit.AuditEntry` with the bound, the system's claim (and the exact ε
        under full participation) and a :class:`LiDPCanaryDetail`.

    Raises:
        ValueError: ``trials`` < 1, a non-finite threshold, an unknown method or too few
            canaries for it (before any run).
    """
    n = check_positive_int("trials", trials)
    tau = check_real("threshold", threshold)
    if not math.isfinite(tau):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    k, a = settings.canaries.count, settings.audit
    lidp_epsilon(np.ones((1, k)), np.zeros((1, k)), method=method)  # method and k, before any run
    if data is None:
        data = load_clients(settings.data, rng=child_seed(settings.seed, 0))
    fed = data[0]
    system = SYSTEMS.get(settings.system)(settings.cell(mean_examples=fed.mean_examples))
    t0 = time.perf_counter()
    alt, alt_stats = _side(system, fed, settings, n, k, tau, 1)
    null, null_stats = _side(system, fed, settings, n, k, tau, 0)
    res = lidp_epsilon(alt, null, delta=a.delta, confidence_level=a.confidence_level,
                       method=method)  # fmt: skip
    detail = LiDPCanaryDetail(n, k, tau, res, float(alt_stats.mean()), float(null_stats.mean()),
                              time.perf_counter() - t0)  # fmt: skip
    note = f"{n} alternative and {n} null runs, {k} canary clients each"
    lower = LowerBound(f"Lifted DP (Pillutla et al. 2023), {method} intervals",
                       a.confidence_level, res.epsilon, a.delta, note=note)  # fmt: skip
    sel = SelectionRecord("threshold", "explicit", f"τ = {tau:g} fixed before the runs")
    exact = system.exact_claim(a.delta) if system.variant.bug is None else None
    return AuditEntry(f"{system.name} ({system.variant.name})",
                      f"{k} canary clients per run, all-iterates (sum), Lifted DP",
                      lower, (system.claim(delta=a.delta),), exact=exact, selections=(sel,),
                      detail=detail)  # fmt: skip
