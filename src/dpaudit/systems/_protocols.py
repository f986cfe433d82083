"""What a system under audit is: the protocols every system implements, and their registry.

A *system* is a DP machine-learning system as users deploy it (PATE, CaPC, Private-kNN,
PromptPATE, label-DP trainers, DP-SGD …). Every system carries the *mechanism value* it runs
(:mod:`dpaudit.mechanisms.values`) and states its *claim* from that value through
:mod:`dpaudit.accounting`, so the audit compares the implementation with the analysis of the
same object.

* :class:`System` — the minimum: a ``name``, a ``mechanism`` and ``claim(...)``.
* :class:`PrivatePredictionSystem` — systems that answer queries with a noisy argmax over
  teacher votes (Chadha et al. 2024, "Auditing Private Prediction", arXiv:2402.09403, Alg. 1):
  what the private-prediction audit needs to train N_g instantiations, retrain the teacher
  that receives a crafted point, and state the per-query claim.
* :data:`SYSTEMS` — the registry: ``SYSTEMS.register("name", factory)``. Every factory has one
  signature, ``factory(settings) -> System``, where ``settings`` is the system's own *settings
  cell* (a frozen dataclass of the systems layer, :class:`SystemFactory`): a workflow builds
  the cell from its settings and calls ``SYSTEMS.get(name)(cell)``. A new system is one module
  and one registry entry; nothing in :mod:`dpaudit.experiments` branches on a system's name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import Claim
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike

__all__ = [
    "SYSTEMS",
    "Instantiations",
    "PrivatePredictionSystem",
    "System",
    "SystemFactory",
    "check_teacher_ensemble",
    "noisy_argmax_query_rdp",
]

SYSTEMS: Registry[Any] = Registry("system")
"""Registered systems: name → factory ``(settings) -> System`` (a :class:`SystemFactory`)."""


@dataclasses.dataclass(frozen=True)
class SystemFactory:
    """A :data:`SYSTEMS` entry: builds a system from its own settings cell.

    Attributes:
        cell: the settings-cell dataclass the system is built from. A value of that type is
            accepted, and so is any object that has every field of it (the private-prediction
            workflow passes its ``[system]`` section, which has the fields of
            :class:`~dpaudit.systems.private_prediction.PrivatePredictionCell`).
        build: ``build(cell) -> System``.

    Calling the factory with anything else raises ``TypeError`` naming ``settings``.

    Example:
        >>> @dataclasses.dataclass(frozen=True)
        ... class ToyCell:
        ...     sigma: float
        >>> factory = SystemFactory(ToyCell, lambda cell: ("toy", cell.sigma))
        >>> factory(ToyCell(2.0))
        ('toy', 2.0)
        >>> factory({"sigma": 2.0})
        Traceback (most recent call last):
        ...
        TypeError: settings must be a ToyCell (or have its fields ('sigma',)), got dict
    """

    cell: type
    build: Callable[[Any], Any]

    def __call__(self, settings: Any) -> Any:
        """The system of the settings cell ``settings``."""
        if not isinstance(settings, self.cell):
            names = tuple(f.name for f in dataclasses.fields(self.cell))
            if not all(hasattr(settings, name) for name in names):
                raise TypeError(
                    f"settings must be a {self.cell.__name__} (or have its fields {names}), "
                    f"got {type(settings).__name__}"
                )
        return self.build(settings)


def noisy_argmax_query_rdp(
    mechanism: Any,
    orders: ArrayLike,
    *,
    analysis: str = "data-independent",
    votes: np.ndarray | None = None,
    probabilities: np.ndarray | None = None,
    dropped_mass: float = 0.0,
    q: str = "union",
) -> FloatArray:
    """Claimed RDP of one answered query of a noisy-argmax ensemble (PATE, CaPC, PromptPATE).

    ``"data-independent"``: :func:`dpaudit.accounting.mechanism_rdp` of the mechanism
    (Papernot et al. 2018, arXiv:1802.08908, Prop. 8 for GNMax). ``"data-dependent"``: its
    Thm 6 in expectation over the histograms ``votes`` with ``probabilities`` (and
    ``dropped_mass`` charged data-independently),
    :func:`dpaudit.accounting.expected_data_dependent_rdp`.

    Raises:
        ValueError: an unknown ``analysis``, or the data-dependent one without histograms.
    """
    from dpaudit._validate import check_choice
    from dpaudit.accounting import expected_data_dependent_rdp, mechanism_rdp

    check_choice("analysis", analysis, ("data-independent", "data-dependent"))
    if analysis == "data-independent":
        return mechanism_rdp(mechanism, orders)
    if votes is None or probabilities is None:
        raise ValueError("the data-dependent claim needs histograms and their probabilities")
    return expected_data_dependent_rdp(mechanism, votes, probabilities, dropped_mass, orders, q=q)


def check_teacher_ensemble(
    num_teachers: object, mechanism: object, teachers_per_query: object = None
) -> tuple[int, int | None]:
    """``(m, k)`` of a teacher-ensemble system (PATE, CaPC, PromptPATE), checked: m ≥ 2
    teachers, a GNMax or Confident-GNMax aggregator, and 1 ≤ k ≤ m teachers per query (None:
    all of them).

    Raises:
        ValueError: m < 2 or k > m.
        TypeError: another mechanism, or non-integer m / k.
    """
    from dpaudit._validate import check_positive_int
    from dpaudit.mechanisms.values import ConfidentGNMax, GNMax

    m = check_positive_int("num_teachers", num_teachers)
    if m < 2:
        raise ValueError(f"num_teachers must be at least 2, got {m}")
    if not isinstance(mechanism, (GNMax, ConfidentGNMax)):
        raise TypeError(
            f"mechanism must be GNMax or ConfidentGNMax, got {type(mechanism).__name__}"
        )
    if teachers_per_query is None:
        return m, None
    k = check_positive_int("teachers_per_query", teachers_per_query)
    if k > m:
        raise ValueError(f"teachers_per_query (k) must be at most num_teachers (m={m}), got k={k}")
    return m, k


@runtime_checkable
class System(Protocol):
    """A system under audit: its name, the mechanism it runs, and the claim it makes."""

    @property
    def name(self) -> str:
        """The registered name (``"pate"``, ``"capc"``, …)."""
        ...

    @property
    def mechanism(self) -> Any:
        """The mechanism value it runs (e.g. :class:`dpaudit.mechanisms.GNMax`)."""
        ...

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The system's own (primary) claimed guarantee, from its mechanism value."""
        ...


@runtime_checkable
class Instantiations(Protocol):
    """N_g instantiations of a private-prediction system's training phase and their votes.

    ``predictions[g, q, i]`` is teacher i's label for query row q in instantiation g.
    """

    @property
    def predictions(self) -> IntArray: ...

    @property
    def num_classes(self) -> int: ...


@runtime_checkable
class PrivatePredictionSystem(System, Protocol):
    """A private-prediction system: teachers vote, a noisy argmax answers (Chadha et al. 2024,
    arXiv:2402.09403, Alg. 1).

    Attributes read by the audit:
        num_teachers: m.
        k: teachers voting per query (k ≤ m).
        placement: where a crafted point lands: ``"random"`` (a uniformly random teacher,
            PATE) or ``"chosen"`` (the adversary chooses the receiving teacher, CaPC).
        histogram_model: the name of the parametric histogram model of
            :data:`dpaudit.attacks.HISTOGRAM_MODELS` that describes its votes
            (``"multinomial"``: exchangeable teachers; ``"independent"``: fixed teachers);
            the modeller reads what ``train`` and ``retrain`` returned.
    """

    @property
    def num_teachers(self) -> int: ...

    @property
    def k(self) -> int: ...

    @property
    def placement(self) -> str: ...

    @property
    def histogram_model(self) -> str: ...

    def train(
        self,
        X: ArrayLike,
        y: ArrayLike,
        queries: ArrayLike,
        *,
        instantiations: int,
        num_classes: int | None = None,
        rng: RngLike = None,
        progress: Any = None,
    ) -> Instantiations:
        """Run the training phase ``instantiations`` times; record every teacher's votes."""
        ...

    def retrain(
        self,
        trained: Instantiations,
        points: ArrayLike,
        labels: ArrayLike,
        *,
        retrainings: int,
        eval_rows: Sequence[ArrayLike] | None = None,
        teachers: ArrayLike | None = None,
        rng: RngLike = None,
        progress: Any = None,
    ) -> list[Any]:
        """Paired votes (``before``, ``after``, ``teacher``: :class:`dpaudit.systems.PairedVotes`)
        of the receiving teacher for each crafted point."""
        ...

    def query_rdp(
        self,
        orders: ArrayLike,
        *,
        analysis: str = "data-independent",
        votes: np.ndarray | None = None,
        probabilities: np.ndarray | None = None,
        dropped_mass: float = 0.0,
        q: str = "union",
    ) -> FloatArray:
        """Claimed RDP of one answered query: data-independent, or data-dependent in
        expectation over a distribution of histograms (``votes`` with ``probabilities``)."""
        ...
