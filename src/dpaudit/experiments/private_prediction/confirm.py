"""Confirmation of the worst adversarial query on fresh retrainings.

An adversarial distinguisher audits the candidate query whose model looks leakiest
(Chadha et al. 2024, "Auditing Private Prediction", arXiv:2402.09403, §5.4: "the queries
leaking most privacy"). Its model was estimated from the same retrainings that made it look
leakiest, so its flips are biased upwards and their interval is not valid for it. With
``adversary.confirmations = R_c > 0`` the chosen query's point is retrained R_c more times
with fresh seeds, its model is estimated from those alone, and its experiments are sampled
and bounded afresh: the composed bound, the exact and claimed curves and the flip interval
of the entry then rest on data independent of the choice (the screening's numbers are kept
in :class:`Confirmation`). Retrainings repeated from the screening cost nothing (the
retraining cache), so a confirmation of a deterministic teacher (CaPC's chosen party with a
seed-independent estimator) is free.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import block_seeds
from dpaudit._typing import FloatArray, IntArray
from dpaudit.experiments.private_prediction import stages
from dpaudit.experiments.private_prediction.bound import QueryAudit
from dpaudit.experiments.private_prediction.settings import PrivatePredictionSettings

__all__ = ["Confirmation", "Confirmed", "confirm_worst"]


@dataclasses.dataclass(frozen=True)
class Confirmation(ResultMixin):
    """The worst adversarial query re-estimated on fresh retrainings.

    Attributes:
        query: its position among the candidates.
        retrainings: R_c, the fresh retrainings.
        flips: the affected teacher's flips on them (Clopper–Pearson interval).
        screening_flips: its flips among the screening retrainings (biased by the choice).
        output_probabilities: ``p̄, p̄′`` of the confirmed model, ``(2, C)``.
        counts: the fresh experiments' counts, ``(2, C)``.
        output_set: the 2-cut output set chosen on half of them.
        screening_audit: the screening's composed lower bound (per order).
        screening_exact: the screening's composed exact RDP.
    """

    query: int
    retrainings: int
    flips: Any
    screening_flips: Any
    output_probabilities: FloatArray
    counts: IntArray
    output_set: tuple[int, ...]
    screening_audit: FloatArray
    screening_exact: FloatArray


@dataclasses.dataclass(frozen=True, eq=False)
class Confirmed:
    """What the confirmation stage returns to the pipeline.

    Attributes:
        record: the :class:`Confirmation` for the result.
        neighbours: the fresh retrainings as :class:`stages.Neighbours` (one target).
        modelled: the confirmed model (one column).
        audited: its held-out audit (the composed bound).
        curves: its composed exact and claimed curves.
        engine_seconds: sampling time.
    """

    record: Confirmation
    neighbours: stages.Neighbours
    modelled: stages.Modelled
    audited: QueryAudit
    curves: stages.ComposedCurves
    engine_seconds: float


def confirm_worst(
    system: Any,
    trained: stages.Trained,
    neighbours: stages.Neighbours,
    modelled: stages.Modelled,
    audited: QueryAudit,
    adversary: Any,
    settings: PrivatePredictionSettings,
    *,
    num_classes: int,
    rng: np.random.SeedSequence,
    cache: dict[Any, Any],
    screening_curves: stages.ComposedCurves,
    progress: bool = False,
) -> Confirmed:
    """Retrain the chosen worst query's point R_c times afresh, then model, sample and bound
    it again (module notes)."""
    w = int(audited.worst)
    retrain_seed, sample_seed, audit_seed = block_seeds(rng, 3)
    target, point = neighbours.targets[w], neighbours.points[w]
    teachers = None if neighbours.teachers is None else (neighbours.teachers[w],)
    paired = system.retrain(
        trained.instantiations,
        np.asarray(point.x)[None, :],
        np.array([point.label]),
        retrainings=settings.adversary.confirmations,
        eval_rows=None,
        teachers=teachers,
        rng=retrain_seed,
        progress=progress,
    )
    fresh = stages.Neighbours((target,), (point,), teachers, tuple(paired))
    conf_model = stages.model_queries(
        system, trained, fresh, settings, num_classes=num_classes, cache=cache
    )
    counts, seconds = stages.sample_counts(
        conf_model, settings, sigma=system.mechanism.sigma, rng=sample_seed
    )
    conf_audit = stages.bound(counts, adversary, settings, rng=audit_seed)
    curves = stages.claim(system, conf_model, conf_audit, fresh, adversary, settings)
    record = Confirmation(
        query=w,
        retrainings=settings.adversary.confirmations,
        flips=conf_model.models[0].estimation.flips,
        screening_flips=modelled.models[w].estimation.flips,
        output_probabilities=conf_model.output_probabilities[0],
        counts=counts[0],
        output_set=conf_audit.output_sets[0],
        screening_audit=np.asarray(audited.curve.epsilons),
        screening_exact=screening_curves.exact,
    )
    return Confirmed(record, fresh, conf_model, conf_audit, curves, seconds)
