"""Settings of the federated audit (``dpaudit audit federated``): one tree, TOML and CLI derived.

Sections:

* ``[data]`` — the clients' data: ``generated`` (Gaussian classes in ``features``
  dimensions) or an offline dataset of :data:`dpaudit.data.DATASET_NAMES` (Fashion-MNIST
  from the Debian package), split across ``num_clients`` clients non-IID, label proportions
  ~ Dirichlet(α) (Hsu, Qi & Brown 2019, arXiv:1909.06335); or a text corpus of
  :data:`dpaudit.data.TEXT_SOURCES` (``rotten-tomatoes``: clients are movies;
  ``wordnet-nouns``: clients are glosses), each client a source, its texts hashed bags of
  words in ``features`` coordinates;
* ``[training]`` — the system's hyperparameters: rounds, sampler, slots, clipping, noise,
  learning rates and the implementation (``variant``: the correct one or a planted bug of
  :data:`dpaudit.systems.FEDAVG_VARIANTS` for ``dp-fedavg``, of
  :data:`dpaudit.systems.USER_DPSGD_VARIANTS` for ``user-dp-sgd``);
* ``[canaries]`` — k canary clients (Andrew et al. 2024, arXiv:2302.03098) or canary users
  holding ``examples`` examples each (``user-dp-sgd``), each inserted with probability
  ``inclusion`` (the one-run games' ½), their update (per-example gradient) norm in units of
  C, and the all-iterates statistic (``sum`` or ``max`` of the per-round cosines);
* ``[audit]`` — δ, confidence and how the one-run bounds pay for the number of guesses;
* ``name``, ``seed`` and ``system`` (a registered system tagged ``federated``:
  ``dp-fedavg``, ``user-dp-sgd`` or ``flower-dp``) at the top.

The system's settings cell is derived from these (:meth:`FederatedSettings.cell`): the fields
of the registered system's cell are filled from the sections by name (a setting the system
has no field for is refused unless left at its default); its population P is the real
clients plus the canary slots, so a sampler that cannot serve them (``sampling = "all"`` with
fewer ``clients_per_round`` slots than clients), a claim for another sampler or an unknown
variant is refused when the settings are built, before any data is loaded.

Example:
    >>> s = FederatedSettings()
    >>> s.cell(mean_examples=20.0).population, s.cell(mean_examples=20.0).sampling
    (1100, 'poisson')
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.bounds import SELECTION_NAMES
from dpaudit.data import DATASET_NAMES
from dpaudit.systems import FEDAVG_VARIANTS, SYSTEMS, USER_DPSGD_VARIANTS
from dpaudit.systems.federated import FLOWER_WRAPPERS, SAMPLERS, WEIGHTINGS

__all__ = [
    "DATA_SOURCES",
    "FederatedAuditSettings",
    "FederatedCanarySettings",
    "FederatedDataSettings",
    "FederatedSettings",
    "FederatedTrainingSettings",
]

#: Where the clients' data come from: generated Gaussian classes, or an offline dataset.
DATA_SOURCES: tuple[str, ...] = ("generated", *DATASET_NAMES)
#: The tag a system registers to be audited by this workflow.
_SYSTEM_TAG = "federated"
#: Cell fields only some federated systems have: field -> (section, setting).
_SYSTEM_SPECIFIC: dict[str, tuple[str, str]] = {
    "server_learning_rate": ("training", "server_learning_rate"),
    "client_learning_rate": ("training", "client_learning_rate"),
    "local_steps": ("training", "local_steps"),
    "hidden": ("training", "hidden"),
    "learning_rate": ("training", "learning_rate"),
    "max_examples": ("training", "max_examples"),
    "canary_examples": ("canaries", "examples"),
    "variant": ("training", "variant"),
    "wrapper": ("training", "wrapper"),
    "weighting": ("training", "weighting"),
    "target_clipped_quantile": ("training", "target_clipped_quantile"),
    "clip_norm_lr": ("training", "clip_norm_lr"),
    "clipped_count_stddev": ("training", "clipped_count_stddev"),
}
#: Every federated system's variants (the system's own cell refuses the others).
_VARIANT_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys((*FEDAVG_VARIANTS.names(), *USER_DPSGD_VARIANTS.names()))
)
#: The all-iterates statistics (the final-model one is the final cosine).
ALL_ITERATES: tuple[str, ...] = ("sum", "max")


@dataclasses.dataclass(frozen=True)
class FederatedDataSettings:
    """The clients' data and its non-IID split."""

    dataset: str = option("generated", help=f"data: {' | '.join(DATA_SOURCES)}")
    path: str | None = option(None, help="directory of an offline dataset (default: installed)")
    num_clients: int = option(100, help="real clients N (text: sources drawn at random)",
                              flag="--clients")  # fmt: skip
    alpha: float = option(0.5, help="Dirichlet α of the clients' label proportions (not text)")
    examples: int = option(
        2000, help="examples used (generated: drawn; images: a seeded subset; text: whole sources)"
    )
    features: int = option(1000, help="features of the generated data or of hashed text")
    num_classes: int = option(10, help="classes of the generated data")

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATA_SOURCES)
        n = check_positive_int("num_clients", self.num_clients)
        check_positive("alpha", self.alpha)
        e = check_positive_int("examples", self.examples)
        if e < n:
            raise ValueError(f"examples={e} must be at least num_clients={n}")
        check_positive_int("features", self.features)
        if check_positive_int("num_classes", self.num_classes) < 2:
            raise ValueError(f"num_classes must be at least 2, got {self.num_classes}")


@dataclasses.dataclass(frozen=True)
class FederatedTrainingSettings:
    """The system's hyperparameters (fields of :class:`dpaudit.systems.FedAvgCell` or
    :class:`dpaudit.systems.UserDPSGDCell`, by name)."""

    rounds: int = option(20, help="rounds T")
    sampling: str = option("poisson", help=f"client sampler: {' | '.join(SAMPLERS)}")
    claim_sampling: str | None = option(None, help="sampler the claim assumes (default: sampling)")
    clients_per_round: int | None = option(
        100, help="slots m per round (Poisson: expected; all: default every client)"
    )
    clip_norm: float = option(1.0, help="clipping norm C of a client update")
    noise_multiplier: float = option(1.0, help="σ: noise std σC on the clipped sum")
    server_learning_rate: float = option(1.0, help="server learning rate")
    client_learning_rate: float = option(0.5, help="clients' local learning rate")
    local_steps: int = option(1, help="local full-batch steps per round")
    hidden: int = option(0, help="dp-fedavg: hidden ReLU units of an MLP (0: softmax regression)")
    learning_rate: float = option(0.5, help="user-dp-sgd: learning rate of the step")
    max_examples: int = option(64, help="user-dp-sgd: most examples a user contributes")
    variant: str = option("correct", help=f"implementation: {' | '.join(_VARIANT_NAMES)}")
    wrapper: str = option("server-side", help="flower-dp: server-side | client-side clipping, "
                          "fixed or -adaptive")  # fmt: skip
    weighting: str = option("uniform", help="flower-dp: example counts clients report: "
                            "uniform | examples")  # fmt: skip
    target_clipped_quantile: float = option(
        0.5, help="flower-dp adaptive clipping: target quantile γ of the clipping norm"
    )
    clip_norm_lr: float = option(0.2, help="flower-dp adaptive clipping: the norm's rate η")
    clipped_count_stddev: float | None = option(
        None, help="flower-dp adaptive clipping: the count's noise σ_b (default m/20)"
    )

    def __post_init__(self) -> None:
        check_positive_int("rounds", self.rounds)
        check_choice("sampling", self.sampling, SAMPLERS)
        if self.claim_sampling is not None and self.claim_sampling != self.sampling:
            raise ValueError(
                f"claim_sampling={self.claim_sampling!r} is not the sampler the system uses "
                f"(sampling={self.sampling!r}): the claim would not describe it"
            )
        if self.clients_per_round is not None:
            check_positive_int("clients_per_round", self.clients_per_round)
        elif self.sampling != "all":
            raise ValueError(f"clients_per_round is needed for sampling={self.sampling!r}")
        check_positive("learning_rate", self.learning_rate)
        check_positive_int("max_examples", self.max_examples)
        check_nonneg_int("hidden", self.hidden)
        check_choice("variant", self.variant, _VARIANT_NAMES)  # the system's cell checks again
        check_choice("wrapper", self.wrapper, FLOWER_WRAPPERS)
        check_choice("weighting", self.weighting, WEIGHTINGS)


@dataclasses.dataclass(frozen=True)
class FederatedCanarySettings:
    """k canary clients (Andrew et al. 2024) and the all-iterates statistic."""

    count: int = option(1000, help="canary clients k", flag="--canaries")
    examples: int = option(
        16,
        help="user-dp-sgd: examples each canary user holds; flower-dp: examples it reports",
        flag="--canary-examples",
    )
    inclusion: float = option(0.5, help="probability each canary client is inserted (0, 1)")
    scale: float = option(1.0, help="a canary update's norm, in units of C (>1: clipped)")
    all_iterates: str = option("sum", help="all-iterates statistic: sum | max of the cosines")

    def __post_init__(self) -> None:
        if check_positive_int("count", self.count) < 4:
            raise ValueError(f"count must be at least 4 canary clients, got {self.count}")
        p = check_positive("inclusion", self.inclusion)
        if p >= 1:
            raise ValueError(
                f"inclusion must be in (0, 1): the one-run bounds need canaries left out, "
                f"got {self.inclusion}"
            )
        check_positive("scale", self.scale)
        check_positive_int("examples", self.examples)
        check_choice("all_iterates", self.all_iterates, ALL_ITERATES)


@dataclasses.dataclass(frozen=True)
class FederatedAuditSettings:
    """The bounds: δ, confidence, and how the number of guesses is paid for."""

    delta: float = option(1e-5, help="δ of the claim, the bounds and the estimates")
    confidence_level: float = option(0.95, help="confidence 1 − β of each bound")
    selection: str = option("split", help=f"guess-count choice: {' | '.join(SELECTION_NAMES)}")
    lidp_trials: int = option(
        0,
        help="Lifted-DP bound beside the one-run bounds: n alternative and n null training "
        "runs with the canary clients (0: off)",
    )
    lidp_threshold: float = option(
        1.0, help="the Lifted-DP test's τ on the standardised statistic, fixed in advance"
    )

    def __post_init__(self) -> None:
        check_delta(self.delta, allow_zero=False)
        check_confidence_level(self.confidence_level)
        check_choice("selection", self.selection, SELECTION_NAMES)
        check_nonneg_int("lidp_trials", self.lidp_trials)
        if not math.isfinite(check_real("lidp_threshold", self.lidp_threshold)):
            raise ValueError(f"lidp_threshold must be finite, got {self.lidp_threshold!r}")


@dataclasses.dataclass(frozen=True)
class FederatedSettings:
    """The federated audit: data, DP-FedAvg, canary clients and the bounds."""

    name: str = option("federated", help="run name")
    system: str = option("dp-fedavg", help="registered federated system")
    seed: int = option(0, help="root seed")
    data: FederatedDataSettings = option(default_factory=FederatedDataSettings)
    training: FederatedTrainingSettings = option(default_factory=FederatedTrainingSettings)
    canaries: FederatedCanarySettings = option(default_factory=FederatedCanarySettings)
    audit: FederatedAuditSettings = option(default_factory=FederatedAuditSettings)

    def __post_init__(self) -> None:
        if _SYSTEM_TAG not in SYSTEMS.tags(self.system):
            raise ValueError(f"system must be a federated system, got {self.system!r}")
        check_nonneg_int("seed", self.seed)
        self.cell(mean_examples=1.0)  # a sampler that cannot serve the clients fails here
        if self.audit.lidp_trials and self.canaries.count < 4:
            raise ValueError(
                f"the Lifted-DP bound's Wilson intervals need at least 4 canary clients per run, "
                f"got canaries.count = {self.canaries.count} (or set audit.lidp_trials = 0)"
            )

    @property
    def population(self) -> int:
        """P: the real clients plus the canary slots."""
        return self.data.num_clients + self.canaries.count

    def cell(self, *, mean_examples: float) -> Any:
        """The registered system's settings cell, its fields filled by name
        (``mean_examples``: n̄ of the loaded clients, for a cell that has
        ``examples_per_client``).

        Raises:
            ValueError: a setting left off its default that the system has no field for, or
                a value its cell refuses.
        """
        t, c = self.training, self.canaries
        m = self.population if t.clients_per_round is None else t.clients_per_round
        values = {
            "rounds": t.rounds, "clients_per_round": m, "population": self.population,
            "sampling": t.sampling, "claim_sampling": t.claim_sampling,
            "clip_norm": t.clip_norm, "noise_multiplier": t.noise_multiplier,
            "server_learning_rate": t.server_learning_rate,
            "client_learning_rate": t.client_learning_rate, "local_steps": t.local_steps,
            "hidden": t.hidden,
            "learning_rate": t.learning_rate, "max_examples": t.max_examples,
            "examples_per_client": mean_examples, "canary_examples": c.examples,
            "variant": t.variant, "wrapper": t.wrapper, "weighting": t.weighting,
            "target_clipped_quantile": t.target_clipped_quantile,
            "clip_norm_lr": t.clip_norm_lr, "clipped_count_stddev": t.clipped_count_stddev,
        }  # fmt: skip
        cell_type = SYSTEMS.get(self.system).cell
        fields = {f.name for f in dataclasses.fields(cell_type)}
        for name, (section, setting) in _SYSTEM_SPECIFIC.items():
            part = getattr(self, section)
            value = getattr(part, setting)
            default = {f.name: f.default for f in dataclasses.fields(part)}[setting]
            if name not in fields and value != default:
                raise ValueError(
                    f"{section}.{setting}={value!r} does not apply to system={self.system!r} "
                    f"(its cell {cell_type.__name__} has no {name!r}); leave it at its "
                    f"default {default!r}"
                )
        return cell_type(**{k: v for k, v in values.items() if k in fields})
