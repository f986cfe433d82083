"""The federated audit (``dpaudit audit federated``): one DP-FedAvg run with canary clients.

1. **data** — the clients' data (:func:`load_clients`): generated Gaussian classes or an
   offline dataset, split across N clients with Dirichlet(α) label proportions; or a shipped
   text corpus whose clients are its sources (movies of the movie reviews, documents of the
   WordNet glosses), as hashed bags of words;
2. **canaries** — k canary clients (Andrew et al. 2024, arXiv:2302.03098, §4): directions
   uniform on the sphere of the model's R^d, each inserted independently with probability
   ``inclusion`` (½: the one-run games' premise);
3. **train** — one run of the system (the settings' cell; a sampler or slot count that cannot
   serve the clients, or a claim for another sampler, was refused when the settings were
   built, and the system checks its inputs before the first round);
4. **observe** — every canary's cosine with every round's model delta and with the final
   model (:func:`dpaudit.attacks.canary_cosines`);
5. **per threat model** (all iterates: the sum or maximum of the per-round cosines; final
   model: the final cosine) —

   * the valid lower bound: the one-run games of Steinke, Nasr & Jagielski 2023
     (arXiv:2305.08846) and Mahloujifar, Melis & Chaudhuri 2024 (arXiv:2410.22235) with the
     canary clients as canaries, the number of guesses paid for by ``selection`` and the
     choice of procedure by Bonferroni (:func:`dpaudit.bounds.one_run_bounds`);
   * beside it, Andrew et al.'s ε **estimate** from the inserted canaries' statistics
     against the closed-form null (or, for the maximum, the canaries left out) — an
     estimate under a Gaussian assumption, not a bound (:func:`dpaudit.attacks.andrew_estimate`);
   * the claim: the system's user-level accountant; beside it, for comparison, what an
     example-level accountant would report for the same run; and, under full participation,
     the exact ε of the composed Gaussian mechanism.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    LowerBound,
    ResultMixin,
    package_versions,
)
from dpaudit._rng import as_generator, child_seed
from dpaudit.attacks import (
    AndrewEstimate,
    CanaryCosines,
    andrew_estimate,
    canary_cosines,
    draw_canary_clients,
)
from dpaudit.bounds import OneRunBounds, one_run_bounds
from dpaudit.data import TEXT_SOURCES
from dpaudit.experiments.federated.settings import FederatedDataSettings, FederatedSettings
from dpaudit.systems import SYSTEMS, FederatedData
from dpaudit.systems.federated import dirichlet_split

__all__ = ["WORKFLOW", "FederatedDetail", "RunSummary", "audit_federated", "load_clients"]

WORKFLOW = "federated"
#: The threat models: what the adversary sees, and the statistic it computes.
THREATS: tuple[tuple[str, str | None], ...] = (("all-iterates", None), ("final-model", "final"))


@dataclasses.dataclass(frozen=True)
class RunSummary(ResultMixin):
    """The training run behind every entry.

    Attributes:
        dimension: d, the model's parameter count.
        real_clients: N.
        canaries: k; ``inserted`` of them were.
        inserted: canary clients inserted.
        mean_participation: mean rounds a canary slot was sampled in.
        mean_participants: mean clients per round.
        test_accuracy: of the final model on the held-out examples (None without them).
        variant: the implementation trained.
        bug: what the variant gets wrong (None for the correct one).
    """

    dimension: int
    real_clients: int
    canaries: int
    inserted: int
    mean_participation: float
    mean_participants: float
    test_accuracy: float | None
    variant: str
    bug: str | None


@dataclasses.dataclass(frozen=True)
class FederatedDetail(ResultMixin):
    """One threat model's statistics.

    Attributes:
        threat_model: ``"all-iterates"`` or ``"final-model"``.
        statistic: ``"sum"``, ``"max"`` or ``"final"``.
        estimate: Andrew et al.'s ε estimate (NOT a lower bound).
        bounds: the one-run bounds (Steinke et al., f-DP, their paid-for maximum).
        mean_in, mean_out: the statistic's mean over inserted / left-out canaries.
        exact_epsilon: the composed Gaussian's exact ε (full participation only).
        run: the training run.
    """

    threat_model: str
    statistic: str
    estimate: AndrewEstimate
    bounds: OneRunBounds
    mean_in: float
    mean_out: float
    exact_epsilon: float | None
    run: RunSummary


def load_clients(settings: FederatedDataSettings, *, rng: Any = None) -> tuple[FederatedData, Any]:
    """The clients' data and the held-out ``(X_test, y_test)`` (module docstring, step 1)."""
    s = settings
    g = as_generator(rng)
    if s.dataset == "generated":
        means = g.normal(size=(s.num_classes, s.features))
        y = g.integers(0, s.num_classes, s.examples + s.examples // 4)
        X = (means[y] + g.normal(size=(y.size, s.features))) / math.sqrt(s.features)
        X_train, y_train, test = (
            X[: s.examples],
            y[: s.examples],
            (X[s.examples :], y[s.examples :]),
        )
    elif s.dataset in TEXT_SOURCES:
        return _source_clients(s, g)
    else:
        from dpaudit.data import load_dataset

        ds = load_dataset(s.dataset, **({} if s.path is None else {"path": s.path}))
        if not np.issubdtype(np.asarray(ds.X_train).dtype, np.number):
            raise ValueError(
                f"dataset={s.dataset!r} holds raw text, not features: use an embedded variant "
                f"(e.g. {s.dataset}-minilm), or a corpus split by source "
                f"({', '.join(sorted(TEXT_SOURCES))})"
            )
        rows = g.permutation(ds.y_train.size)[: s.examples]
        X_train, y_train, test = ds.X_train[rows], ds.y_train[rows], (ds.X_test, ds.y_test)
    data = dirichlet_split(X_train, y_train, s.num_clients, alpha=s.alpha, rng=g)
    return data, test


#: Most held-out texts in the test set of a corpus split by source.
MAX_TEXT_TEST = 2000


def _source_clients(s: FederatedDataSettings, g: np.random.Generator):
    """Clients = sources of a shipped text corpus (:func:`dpaudit.data.load_text_sources`):
    ``num_clients`` sources drawn at random, each client holding its source's texts as hashed
    bags of words of ``features`` coordinates; the test set is up to :data:`MAX_TEXT_TEST`
    texts of the other sources (no client's)."""
    from dpaudit.data import hashed_features, load_text_sources

    ts = load_text_sources(s.dataset, path=s.path)
    if s.num_clients >= ts.num_sources:
        raise ValueError(
            f"num_clients={s.num_clients} must be below the {ts.num_sources} sources of "
            f"dataset={s.dataset!r} (the rest hold the test set)"
        )
    order = g.permutation(ts.num_sources)
    owner = np.full(ts.num_sources, -1, dtype=np.int64)
    owner[order[: s.num_clients]] = np.arange(s.num_clients)
    client = owner[ts.sources]
    train = np.flatnonzero(client >= 0)
    held = np.flatnonzero(client < 0)
    test = np.sort(g.permutation(held)[:MAX_TEXT_TEST])
    X = hashed_features(ts.texts[np.concatenate([train, test])].tolist(), s.features)
    X_train, X_test = X[: train.size], X[train.size :]
    parts = [np.flatnonzero(client[train] == c) for c in range(s.num_clients)]
    data = FederatedData(tuple(X_train[p] for p in parts),
                         tuple(ts.labels[train][p] for p in parts), ts.num_classes)  # fmt: skip
    return data, (X_test, ts.labels[test])


def _entry(system, s: FederatedSettings, cos: CanaryCosines, inc, threat, stat, run, seed):
    a = s.audit
    scores = cos.statistic(stat)
    null_sd = cos.null_sd(stat)
    null = {"unseen": scores[~inc]} if null_sd is None else {"null_sd": null_sd}
    est = andrew_estimate(scores[inc], delta=a.delta, statistic=stat, **null)
    bounds = one_run_bounds(scores, inc, delta=a.delta, confidence_level=a.confidence_level,
                            selection=a.selection, rng=seed)  # fmt: skip
    exact = system.exact_claim(a.delta) if system.variant.bug is None else None
    detail = FederatedDetail(threat, stat, est, bounds, float(scores[inc].mean()),
                             float(scores[~inc].mean()), None if exact is None else exact.epsilon,
                             run)  # fmt: skip
    lower = LowerBound(
        "one-run games with canaries: max of Steinke et al. 2023 and f-DP (Mahloujifar "
        "et al. 2024), Bonferroni over the two", a.confidence_level, bounds.max_valid, a.delta,
        note=f"Andrew et al. estimate beside it (not a bound): {est.epsilon:.3g} (fitted "
        f"variance), {est.epsilon_null_variance:.3g} (null variance)",
    )  # fmt: skip
    sel = (bounds.steinke.selection, bounds.max_selection)
    adversary = f"{system.canary_label(inc.size)}, {threat} ({stat})"
    return AuditEntry(f"{system.name} ({system.variant.name})", adversary, lower,
                      (system.claim(delta=a.delta), *system.comparison_claims(a.delta)),
                      exact=exact, selections=sel,
                      detail=detail)  # fmt: skip


def audit_federated(
    settings: FederatedSettings | None = None,
    *,
    data: tuple[FederatedData, Any] | None = None,
    progress: Any = None,
    checkpoint: Any = None,
) -> AuditResult:
    """Audit a federated system with canary clients in one training run (module docstring).

    Args:
        settings: :class:`FederatedSettings` (default: generated data, 100 clients, 1,000
            canary clients, 20 Poisson-sampled rounds).
        data: preloaded ``(FederatedData, (X_test, y_test) or None)`` instead of
            ``settings.data``.
        progress: unused (one run).
        checkpoint: unused (one run, nothing to resume).

    Returns:
        :class:`~dpaudit.AuditResult` (workflow ``"federated"``): one entry per threat model.

    Example:
        >>> from dpaudit.experiments.federated import (
        ...     FederatedCanarySettings, FederatedTrainingSettings)
        >>> s = FederatedSettings(canaries=FederatedCanarySettings(count=200),
        ...                       training=FederatedTrainingSettings(rounds=3))
        >>> r = audit_federated(s)
        >>> [e.adversary for e in r.entries]
        ['200 canary clients, all-iterates (sum)', '200 canary clients, final-model (final)']
    """
    s = settings if settings is not None else FederatedSettings()
    t0 = time.perf_counter()
    fed, test = data if data is not None else load_clients(s.data, rng=child_seed(s.seed, 0))
    if not isinstance(fed, FederatedData):
        raise TypeError(f"data must be (FederatedData, test), got {type(fed).__name__}")
    system = SYSTEMS.get(s.system)(s.cell(mean_examples=fed.mean_examples))
    c = s.canaries
    td = time.perf_counter()
    can = draw_canary_clients(c.count, system.dimension(fed), inclusion=c.inclusion,
                              rng=child_seed(s.seed, 1))  # fmt: skip
    draw = time.perf_counter() - td
    system.check_inputs(fed, can.directions, can.included, c.scale)
    t1 = time.perf_counter()
    run = system.train(fed, can.directions, can.included, canary_scale=c.scale,
                       rng=child_seed(s.seed, 2))  # fmt: skip
    t2 = time.perf_counter()
    t3 = time.perf_counter()
    cos = canary_cosines(can.directions, run.deltas, run.final_delta)
    t4 = time.perf_counter()
    acc = None if test is None else system.accuracy(run.final, *test, fed.num_classes)
    summary = RunSummary(system.dimension(fed), fed.num_clients, can.count, int(can.included.sum()),
                         float(run.participation.mean()), float(run.participants.mean()), acc,
                         system.variant.name, system.variant.bug)  # fmt: skip
    entries = tuple(
        _entry(system, s, cos, can.included, threat, stat or c.all_iterates, summary,
               child_seed(s.seed, 3, i))
        for i, (threat, stat) in enumerate(THREATS)
    )  # fmt: skip
    timings = {"setup": t1 - t0, "training": t2 - t1, "audit": time.perf_counter() - t2,
               "canary_draw": draw, "canary_updates": run.seconds["canaries"],
               "canary_cosines": t4 - t3}  # fmt: skip
    return AuditResult(
        WORKFLOW, entries, s, s.seed, timings,
        {**package_versions("dp-accounting"), **run.versions}, detail=summary,
        note=f"One {system.name} run with {system.canary_label(can.count)}. Each lower bound is "
        "valid at its confidence (the canaries' inclusion is randomised); the Andrew et al. ε "
        "beside it is an estimate under a Gaussian assumption, not a bound; the claim is the "
        "system's user-level accountant, the valid claims of other units beside it.",
    )  # fmt: skip
