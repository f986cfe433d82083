"""A validated description of a private-prediction system, built in one call.

:class:`PrivatePredictionSpec` holds everything paper 000 Alg. 1 needs besides the data —
algorithm (PATE: random partition; CaPC: fixed parties), m, k, the teacher estimator and the
aggregator — and checks it all at construction, so a bad configuration (k > m, σ ≤ 0, an
unknown estimator) fails before any teacher is trained. ``build`` then trains the teachers
and returns the :class:`PrivatePredictor`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import check_choice, check_positive_int
from dpaudit.mechanisms.values import ConfidentGNMax, GNMax
from dpaudit.systems._ensemble import ESTIMATOR_NAMES, EstimatorSpec, TeacherEnsemble
from dpaudit.systems._predictor import Ledger, PrivatePredictor

__all__ = ["ALGORITHMS", "PrivatePredictionSpec"]

ALGORITHMS: tuple[str, ...] = ("pate", "capc")


@dataclasses.dataclass(frozen=True)
class PrivatePredictionSpec:
    """PATE or CaPC, fully specified and validated (paper 000 Alg. 1, §5.1–5.2).

    Attributes:
        algorithm: ``"pate"`` (random partition, paper 000 §5.1) or ``"capc"`` (fixed
            parties, §5.2: the caller's parties, or consecutive blocks of rows).
        num_teachers: m ≥ 1.
        aggregator: :class:`GNMax` or :class:`ConfidentGNMax` (σ > 0 is checked there).
        teachers_per_query: k ∈ [1, m] teachers chosen per query, or None for all m.
        estimator: teacher estimator spec (see :func:`make_estimator`); None = default.

    Raises:
        ValueError: unknown algorithm or estimator name, m < 1, k ∉ [1, m].
        TypeError: aggregator of another type.

    Example:
        >>> spec = PrivatePredictionSpec("pate", num_teachers=20, aggregator=GNMax(sigma=2.0))
        >>> from dpaudit.systems.data import load_digits
        >>> ds = load_digits(seed=0)
        >>> api = spec.build(ds.X_train, ds.y_train, rng=0)
        >>> api.ensemble.num_teachers, api.ensemble.scheme
        (20, 'random')
    """

    algorithm: str
    num_teachers: int
    aggregator: GNMax | ConfidentGNMax
    teachers_per_query: int | None = None
    estimator: EstimatorSpec = None

    def __post_init__(self) -> None:
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        m = check_positive_int("num_teachers", self.num_teachers)
        object.__setattr__(self, "num_teachers", m)
        if not isinstance(self.aggregator, (GNMax, ConfidentGNMax)):
            raise TypeError(
                f"aggregator must be GNMax or ConfidentGNMax, got {type(self.aggregator).__name__}"
            )
        if self.teachers_per_query is not None:
            k = check_positive_int("teachers_per_query", self.teachers_per_query)
            if k > m:
                raise ValueError(f"teachers_per_query must be at most num_teachers={m}, got {k}")
            object.__setattr__(self, "teachers_per_query", k)
        if isinstance(self.estimator, str):
            check_choice("estimator", self.estimator, ESTIMATOR_NAMES)

    def check_num_points(self, num_points: int) -> None:
        """Raise ValueError if a training set of ``num_points`` rows cannot feed m teachers."""
        n = check_positive_int("num_points", num_points)
        if self.num_teachers > n:
            raise ValueError(
                f"num_teachers must be at most the number of training rows {n}, "
                f"got {self.num_teachers}"
            )

    def build(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        rng: RngLike = None,
        parties: Sequence[ArrayLike] | None = None,
        num_classes: int | None = None,
        ledger: Ledger | None = None,
        cache: bool = False,
        n_jobs: int = 1,
        progress: bool = False,
    ) -> PrivatePredictor:
        """Train the teachers and return the private prediction interface.

        Args:
            X: training features (n, d).
            y: integer labels (n,).
            rng: seed of the partition and the teachers.
            parties: CaPC only: the m parties' row indices (default: consecutive blocks).
            num_classes: C (default ``max(y) + 1``).
            ledger: privacy ledger for the interface (see :func:`make_ledger`).
            cache: answer caching (paper 000 §5.4).
            n_jobs: joblib workers for training.
            progress: rich progress bar.

        Returns:
            The :class:`PrivatePredictor`.

        Raises:
            ValueError: ``parties`` with PATE, a party count other than m, m > n, bad data.
        """
        partition: Any
        if self.algorithm == "pate":
            if parties is not None:
                raise ValueError("parties are for algorithm='capc'; PATE partitions at random")
            partition = "random"
        else:
            partition = "contiguous" if parties is None else list(parties)
        ensemble = TeacherEnsemble.fit(
            X,
            y,
            num_teachers=self.num_teachers,
            partition=partition,
            estimator=self.estimator,
            num_classes=num_classes,
            rng=rng,
            n_jobs=n_jobs,
            progress=progress,
        )
        return PrivatePredictor(
            ensemble,
            self.aggregator,
            ledger=ledger,
            cache=cache,
            teachers_per_query=self.teachers_per_query,
        )
