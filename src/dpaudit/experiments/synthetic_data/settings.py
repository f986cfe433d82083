"""Settings of the synthetic-data audit (``dpaudit audit synthetic-data``).

One flat section: which generators (:data:`dpaudit.systems.synthetic.GENERATORS`) at which
(ε, δ), under which threat models (:data:`dpaudit.attacks.SYNTHETIC_THREAT_MODELS`), on which
worst-case dataset (:data:`dpaudit.attacks.WORST_CASE_DATASETS`), with how many runs.

Example:
    >>> s = SyntheticDataSettings(generators=("smartnoise-mst",), runs=40, pilot_runs=20)
    >>> s.generators, s.threat_models, s.dataset
    (('smartnoise-mst',), ('auto',), 'tree-flip')
    >>> s.threat_models_for("smartnoise-mst"), s.threat_models_for("datasynthesizer-privbayes")
    (('white-box',), ('white-box-laplace',))
    >>> SyntheticDataSettings(generators=("nope",))
    Traceback (most recent call last):
    ...
    ValueError: unknown synthetic-data generator 'nope'; ...
"""

from __future__ import annotations

import dataclasses

from dpaudit._settings import option
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.attacks._synthetic import PER_TARGET, SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import GENERATORS, SYSTEM_TAG

__all__ = ["AUTO", "SyntheticDataSettings"]

_DPCTGAN_OPTIONS = ("sigma", "max_per_sample_grad_norm", "batch_size", "epochs", "embedding_dim",
                    "discriminator_lr", "generator_lr", "generator_dim",
                    "discriminator_dim")  # fmt: skip

#: The threat model that stands for each generator's fullest view: the first of
#: :data:`FULLEST` that the generator serves (its white-box records, else its table; in the
#: one-run mode, which reads no per-target records, the first that reads none of
#: :data:`~dpaudit.attacks._synthetic.PER_TARGET`).
AUTO = "auto"
FULLEST = ("white-box", "white-box-mwem", "white-box-laplace", "white-box-measurements",
           "white-box-dpsgd", "white-box-student", "white-box-votes", "black-box")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SyntheticDataSettings:
    """The synthetic-data audit: generators, claim, threat models, worst-case pair, runs."""

    name: str = option("synthetic-data", help="run name")
    generators: tuple[str, ...] = option(
        ("smartnoise-mst", "smartnoise-aim"), help="registered generators to audit"
    )
    epsilon: float = option(1.0, help="ε each generator is configured with (its claim)")
    delta: float = option(1e-2, help="δ of the claim and of the bounds")
    threat_models: tuple[str, ...] = option(
        (AUTO,),
        help="auto (each generator's fullest view: white-box for MST and AIM, white-box-mwem, "
        "white-box-laplace for PrivBayes, white-box-measurements for dpmm, white-box-dpsgd for "
        "DPCTGAN, white-box-student for PATECTGAN) | white-box | white-box-measurements | "
        "white-box-selections | white-box-domain | black-box | black-box-rows | "
        "white-box-laplace | white-box-network | black-box-unseen | black-box-dcr | "
        "black-box-density | white-box-mwem | white-box-mwem-choices | white-box-dpsgd | "
        "white-box-student",
    )
    dataset: str = option(
        "tree-flip",
        help="worst-case dataset: tree-flip | unique-record | binary-flip | twin-record; or the "
        "average-case adult-categorical (UCI Adult, its first `columns` categorical columns, "
        "`rows` records)",
    )
    rows: int = option(1000, help="rows of the worst-case D")
    columns: int = option(3, help="columns of D (binary in the worst-case designs)")
    runs: int = option(300, help="evaluation run pairs (a run on D ∪ {t} and one on D)")
    pilot_runs: int = option(100, help="held-out run pairs that choose each threshold")
    rounds: int | None = option(None, help="AIM's rounds (library setting; None: 16 × columns)")
    degree: int = option(1, help="PrivBayes's degree k (DataSynthesizer's setting)")
    dpctgan_options: tuple[str, ...] = option(
        (),
        help="DPCTGAN's library settings, name=value: sigma, max_per_sample_grad_norm, "
        "batch_size, epochs, embedding_dim, discriminator_lr, generator_lr (numbers), "
        "generator_dim, discriminator_dim (layer widths joined by '/', empty: no hidden layer)",
    )
    sample_rows: int | None = option(
        None, help="rows of each synthetic table (black-box; None: |D| + 1)"
    )
    bandwidths: tuple[float, ...] = option(
        (0.01, 0.05, 0.2, 0.4),
        help="black-box-density: the kernel bandwidths λ the pilot run pairs choose from (each "
        "in (0, (k − 1)/k] for every column's k categories)",
    )
    group_size: int = option(25, help="run pairs per worker process (one library start-up)")
    confidence_level: float = option(0.95, help="confidence 1 − β of each bound")
    mode: str = option(
        "fixed",
        help="fixed: every evaluation run pair, then Clopper-Pearson | sequential (one threat "
        "model): stream the evaluation run pairs through an anytime-valid test of the claim "
        "and stop at its rejection | one-run: `releases` fits on the base table plus "
        "`canaries` canary records each inserted with probability 1/2, one-run bounds",
    )
    canaries: int = option(1000, help="one-run: canary records per release")
    releases: int = option(1, help="one-run: independent fits, each with canaries of its own")
    executor: str = option("serial", help="engine executor (serial | processes | joblib | ray)")
    workers: int = option(1, help="workers of the executor")
    seed: int = option(0, help="root seed")

    def __post_init__(self) -> None:
        if not self.generators:
            raise ValueError("generators must name at least one generator, got ()")
        for g in self.generators:
            GENERATORS.get(g)
            if SYSTEM_TAG not in SYSTEMS.tags(g):
                raise ValueError(f"generators holds {g!r}, not a synthetic-data system")
        check_positive("epsilon", self.epsilon)
        check_delta(self.delta, allow_zero=False)
        if not self.threat_models:
            raise ValueError("threat_models must name at least one, got ()")
        for t in self.threat_models:
            if t != AUTO:
                SYNTHETIC_THREAT_MODELS.get(t)
        self._check_served()
        pair = WORST_CASE_DATASETS.get(self.dataset)(columns=self.columns, rows=self.rows)
        if not self.bandwidths:
            raise ValueError("bandwidths must hold at least one bandwidth, got ()")
        top = min((k - 1) / k for k in pair.domain.cardinalities)
        for b in self.bandwidths:
            if not 0 < check_positive("bandwidths", b) <= top:
                raise ValueError(f"bandwidths must lie in (0, {top:g}] for this dataset's "
                                 f"domain, got {b}")  # fmt: skip
        check_positive_int("runs", self.runs)
        check_positive_int("pilot_runs", self.pilot_runs)
        if self.rounds is not None:
            check_positive_int("rounds", self.rounds)
        check_positive_int("degree", self.degree)
        self.dpctgan_settings()
        if self.sample_rows is not None:
            check_positive_int("sample_rows", self.sample_rows)
        check_positive_int("group_size", self.group_size)
        check_confidence_level(self.confidence_level)
        check_choice("mode", self.mode, ("fixed", "sequential", "one-run"))
        check_positive_int("releases", self.releases)
        if check_positive_int("canaries", self.canaries) < 2:
            raise ValueError(f"canaries must be at least 2, got {self.canaries}")
        tuned = [t for t in self.threat_models
                 if t != AUTO and SYNTHETIC_THREAT_MODELS.get(t).tuned]  # fmt: skip
        if self.mode == "one-run" and tuned:
            raise ValueError(
                f"mode='one-run' has no pilot runs to tune {tuned} on: give threat models "
                "without a tuning parameter"
            )
        per_target = [t for t in self.threat_models if t != AUTO
                      and PER_TARGET & set(SYNTHETIC_THREAT_MODELS.get(t).observe)]  # fmt: skip
        if self.mode == "one-run" and per_target:
            raise ValueError(
                f"mode='one-run' reads every canary from one release, but {per_target} reads "
                "what a run records for one target: give another threat model"
            )  # fmt: skip
        if self.mode == "sequential" and len(self.threat_models) != 1:
            raise ValueError(
                f"mode='sequential' tests the claim with one statistic: give one threat model, "
                f"got threat_models={self.threat_models!r}"
            )
        check_positive_int("workers", self.workers)
        check_nonneg_int("seed", self.seed)

    def dpctgan_settings(self) -> tuple[tuple[str, object], ...]:
        """:attr:`dpctgan_options` as ``(name, value)`` pairs for the library.

        Example:
            >>> SyntheticDataSettings(dpctgan_options=("sigma=2", "discriminator_dim=",
            ...                       "generator_dim=8/8")).dpctgan_settings()
            (('sigma', 2.0), ('discriminator_dim', ()), ('generator_dim', (8, 8)))
        """
        out: list[tuple[str, object]] = []
        for item in self.dpctgan_options:
            name, eq, value = str(item).partition("=")
            if not eq or name not in _DPCTGAN_OPTIONS:
                raise ValueError(f"dpctgan_options holds {item!r}: give name=value with name "
                                 f"one of {' | '.join(_DPCTGAN_OPTIONS)}")  # fmt: skip
            try:
                if name in ("generator_dim", "discriminator_dim"):
                    v: object = tuple(int(w) for w in value.split("/") if w)
                elif name in ("batch_size", "epochs", "embedding_dim"):
                    v = int(value)
                else:
                    v = float(value)
            except ValueError as exc:
                raise ValueError(f"dpctgan_options holds {item!r}, whose value is not "
                                 f"{'widths joined by /' if name.endswith('r_dim') else 'a number'}"
                                 ) from exc  # fmt: skip
            out.append((name, v))
        return tuple(out)

    def threat_models_for(self, generator: str) -> tuple[str, ...]:
        """The threat models ``generator`` is audited under: :attr:`threat_models` with
        :data:`AUTO` replaced by the first of :data:`FULLEST` that the generator serves
        (:meth:`~dpaudit.attacks.SyntheticThreatModel.serves`), each named once."""
        spec = GENERATORS.get(generator)
        out: list[str] = []
        for t in self.threat_models:
            if t == AUTO:
                get = SYNTHETIC_THREAT_MODELS.get
                t = next(n for n in FULLEST if get(n).serves(spec.synth, spec.white_box)
                         and not (self.mode == "one-run"
                                  and PER_TARGET & set(get(n).observe)))  # fmt: skip
            if t not in out:
                out.append(t)
        return tuple(out)

    def _check_served(self) -> None:
        """Each generator serves each of its threat models (what its algorithm records and
        its worker reports: :meth:`~dpaudit.attacks.SyntheticThreatModel.serves`)."""
        for g in self.generators:
            spec = GENERATORS.get(g)
            for t in self.threat_models_for(g):
                if not SYNTHETIC_THREAT_MODELS.get(t).serves(spec.synth, spec.white_box):
                    fits = [
                        n
                        for n in SYNTHETIC_THREAT_MODELS.names()
                        if SYNTHETIC_THREAT_MODELS.get(n).serves(spec.synth, spec.white_box)
                    ]
                    raise ValueError(
                        f"threat_models holds {t!r}, which generator {g!r} ({spec.synth}, "
                        f"white-box views: {list(spec.white_box)}) cannot serve; its threat "
                        f"models: {' | '.join(fits)}"
                    )  # fmt: skip
