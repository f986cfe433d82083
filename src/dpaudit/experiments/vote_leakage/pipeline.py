"""The vote-leakage reproduction end to end (Wang et al. 2022, arXiv:2209.10732).

Reproduces the evaluation of Wang, Schuster, Shumailov, Lie & Papernot 2022, "In Differential
Privacy, There is Truth: On Vote Leakage in Ensemble Private Learning" (NeurIPS 2022,
arXiv:2209.10732) as a short list of stages, one module per part:

* **Query-limited attack** (§4.1–§4.2, Fig. 6; :mod:`dpaudit.experiments.vote_leakage.extraction`):
  the 15 MNIST vote histograms of a 250-teacher PATE (:mod:`dpaudit.data`),
  σ ∈ {40, 60, 80, 100}, M = 10⁴ exact answers per histogram, reconstructed by maximum
  likelihood, by the L2 objective and by the paper's own procedure.
* **Budget-limited attack** (§4.1, Fig. 4a; :mod:`.budget_limited`): the
  canonical MNIST PATE of Papernot et al. 2018 (arXiv:1802.08908) queried until its ledger
  refuses, and the released scripts' expected-cost model.
* **More noise helps the attacker** (§4.2, Fig. 5; :mod:`.noise_sweep`).
* **Attribute inference** (§2, App. E; :mod:`.attribute_inference`): PhD
  holders in UCI Adult flagged by low consensus, directly and end to end.

:func:`run_vote_leakage` returns a :class:`dpaudit._results.AuditResult` (workflow
``"vote-leakage"``): one entry per part, whose claims are the privacy cost the defender's
accountant charged for the attack's queries and whose lower bound states that extraction
error is not an ε lower bound; the parts' own results hang off it as
:class:`VoteLeakageResult` (``detail``). The plots and ``results.json`` are written by
:func:`dpaudit.report.write_vote_leakage_report`.

Every random stream is keyed from the config's seed (:func:`dpaudit._rng.child_seed` with
``(part, …)``, one key per histogram, σ and repetition), so any single number can be
recomputed on its own.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from dpaudit._results import AuditResult, ResultMixin, package_versions
from dpaudit._typing import ProgressLike
from dpaudit._validate import check_progress
from dpaudit.data import VoteHistograms, load_mnist_vote_histograms
from dpaudit.experiments.vote_leakage.attribute_inference import (
    AttributeInferenceExperiment,
    run_attribute_inference,
)
from dpaudit.experiments.vote_leakage.budget_limited import BudgetLimitedResult, run_budget_limited
from dpaudit.experiments.vote_leakage.entries import (
    attribute_inference_entry,
    budget_limited_entry,
    noise_sweep_entry,
    query_limited_entry,
)
from dpaudit.experiments.vote_leakage.extraction import QueryLimitedResult, run_query_limited
from dpaudit.experiments.vote_leakage.noise_sweep import NoiseSweepResult, run_noise_sweep
from dpaudit.experiments.vote_leakage.settings import (
    VoteLeakageConfig,
    load_vote_leakage_config,
)

__all__ = [
    "VoteLeakageConfig",
    "VoteLeakageResult",
    "load_vote_leakage_config",
    "run_vote_leakage",
]

#: Where a part reports a short message (the workflow maps it onto its Progress callback).
Messages = Callable[[str], None] | None


@dataclasses.dataclass(frozen=True, eq=False)
class VoteLeakageResult(ResultMixin):
    """Everything the reproduction produced (the ``detail`` of its :class:`AuditResult`).

    Attributes:
        config: the settings.
        histograms: the histograms attacked.
        query_limited, budget_limited, noise_sweep, attribute_inference: each part's result
            (None when the part is disabled).
        seconds: wall time of the whole run.
        method: what was reproduced.
    """

    config: VoteLeakageConfig
    histograms: VoteHistograms
    query_limited: QueryLimitedResult | None
    budget_limited: BudgetLimitedResult | None
    noise_sweep: NoiseSweepResult | None
    attribute_inference: AttributeInferenceExperiment | None
    seconds: float
    method: str = (
        "reproduction of Wang et al. 2022, arXiv:2209.10732 (dpaudit.experiments.vote_leakage)"
    )


def _query_limited(cfg: VoteLeakageConfig, hs: VoteHistograms, progress: Messages) -> Any:
    qc = cfg.query_limited
    return run_query_limited(
        hs,
        sigmas=qc.sigmas,
        num_queries=qc.num_queries,
        repetitions=qc.repetitions,
        estimators=qc.estimators,
        intervals=qc.intervals,
        paper_threshold=qc.paper_threshold,
        paper_sigma1=qc.paper_sigma1,
        delta=cfg.delta,
        rng=cfg.seed,
        progress=progress,
    )


def _budget_limited(cfg: VoteLeakageConfig, hs: VoteHistograms, progress: Messages) -> Any:
    bc = cfg.budget_limited
    return run_budget_limited(
        hs,
        threshold=bc.threshold,
        sigma1=bc.sigma1,
        sigma2=bc.sigma2,
        budget=bc.budget,
        delta=cfg.delta,
        repetitions=bc.repetitions,
        batch_size=bc.batch_size,
        rng=cfg.seed,
        progress=progress,
    )


def _noise_sweep(cfg: VoteLeakageConfig, hs: VoteHistograms, progress: Messages) -> Any:
    nc = cfg.noise_sweep
    return run_noise_sweep(
        hs,
        sigmas=nc.sigmas,
        num_queries=nc.num_queries,
        repetitions=nc.repetitions,
        delta=cfg.delta,
        rng=cfg.seed,
        progress=progress,
    )


def _attribute_inference(cfg: VoteLeakageConfig, hs: VoteHistograms, progress: Messages) -> Any:
    del hs  # UCI Adult, not the MNIST histograms
    ac = cfg.attribute_inference
    if progress is not None:
        progress("attribute inference: training teachers")
    return run_attribute_inference(
        num_teachers=ac.num_teachers,
        n_estimators=ac.n_estimators,
        test_fraction=ac.test_fraction,
        threshold=ac.threshold,
        sigma=ac.sigma,
        queries_per_individual=ac.queries_per_individual,
        max_members=ac.max_members,
        end_to_end=ac.end_to_end,
        delta=cfg.delta,
        n_jobs=ac.n_jobs,
        rng=cfg.seed,
    )


#: The stages in order: (name, runner, entry builder).
_STAGES = (
    ("query_limited", _query_limited, query_limited_entry),
    ("budget_limited", _budget_limited, budget_limited_entry),
    ("noise_sweep", _noise_sweep, noise_sweep_entry),
    ("attribute_inference", _attribute_inference, attribute_inference_entry),
)


def run_vote_leakage(
    config: VoteLeakageConfig,
    *,
    data: VoteHistograms | None = None,
    progress: ProgressLike = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Run every enabled part of the reproduction (module notes).

    Args:
        config: :class:`VoteLeakageConfig` (e.g. :func:`load_vote_leakage_config`).
        data: the vote histograms to attack (default: the 15 MNIST histograms shipped with
            dpaudit, subset to ``config.histograms``).
        progress: a :class:`~dpaudit._typing.Progress` callback (``True``: rich bars); each
            part reports its messages as the description, ``done`` counting the parts.
        checkpoint: unused (every part is short); accepted for the workflow signature.

    Returns:
        :class:`~dpaudit._results.AuditResult` with workflow ``"vote-leakage"``: one entry per
        enabled part (system ``"pate"``; adversaries ``"query-limited extraction"``,
        ``"budget-limited extraction"``, ``"noise sweep (MLE extraction)"``,
        ``"attribute inference (consensus threshold)"``), ``timings`` in seconds per part and
        the :class:`VoteLeakageResult` as ``detail``.

    Raises:
        TypeError: ``config`` is not a :class:`VoteLeakageConfig`.

    Example:
        >>> cfg = VoteLeakageConfig.from_dict({
        ...     "histograms": ["H1"],
        ...     "query_limited": {"enabled": False},
        ...     "budget_limited": {"enabled": False},
        ...     "noise_sweep": {"sigmas": [40], "repetitions": 1},
        ...     "attribute_inference": {"enabled": False}})
        >>> res = run_vote_leakage(cfg)
        >>> entry = res.entry("pate", "noise sweep (MLE extraction)")
        >>> entry.lower_bound.epsilon is None, entry.claims[0].conversion
        (True, 'balle2020')
    """
    if not isinstance(config, VoteLeakageConfig):
        raise TypeError(f"config must be a VoteLeakageConfig, got {type(config).__name__}")
    report = check_progress(progress)
    t0 = time.perf_counter()
    hs = load_mnist_vote_histograms() if data is None else data
    if config.histograms is not None:
        hs = hs.subset(config.histograms)
    parts: dict[str, Any] = {}
    timings: dict[str, float] = {}
    entries = []
    enabled = [stage for stage in _STAGES if getattr(config, stage[0]).enabled]
    for i, (name, run, make_entry) in enumerate(enabled):
        start = time.perf_counter()
        parts[name] = run(config, hs, lambda msg, i=i: report(i, len(enabled), msg))
        timings[name] = time.perf_counter() - start
        entries.append(make_entry(parts[name]))
    report(len(enabled), len(enabled), "vote leakage")
    for name, _, _ in _STAGES:
        parts.setdefault(name, None)
    timings["total"] = time.perf_counter() - t0
    detail = VoteLeakageResult(config=config, histograms=hs, seconds=timings["total"], **parts)
    extra = ("scikit-learn",) if config.attribute_inference.enabled else ()
    return AuditResult(
        workflow="vote-leakage",
        entries=tuple(entries),
        settings=config,
        seed=config.seed,
        timings=timings,
        versions=package_versions(*extra),
        detail=detail,
        note=(
            "Vote extraction and attribute inference (Wang et al. 2022, arXiv:2209.10732) "
            "measure recovered votes, not a privacy loss: no entry carries an ε lower bound; "
            "each entry's claims are the privacy cost the defender's accountant charged for "
            "the attack's queries."
        ),
    )
