"""PATE and CaPC as systems: teacher ensembles answering with a noisy argmax.

The private-prediction framework of Chadha et al. 2024 ("Auditing Private Prediction",
arXiv:2402.09403, Alg. 1): a *training phase* trains m teachers on parts of the data; a
*prediction phase* answers a query with a noisy argmax (:class:`dpaudit.mechanisms.GNMax`)
over the teachers' votes.

* :class:`PATE` (Papernot et al. 2018, arXiv:1802.08908): a fresh uniformly random partition
  per training; a crafted point lands in a random part (``placement = "random"``); teachers
  are exchangeable, so a query's histogram is multinomial (``histogram_model =
  "multinomial"``, Chadha et al. 2024 §5.1).
* :class:`CaPC` (Choquette-Choo et al. 2021, arXiv:2102.05188): fixed parties; the adversary
  chooses the party that receives its point (``placement = "chosen"``); each teacher votes
  from its own distribution (``histogram_model = "independent"``, §5.2).

The training drivers used by the audit live here: :func:`train_instantiations` (N_g
instantiations of the training phase and every teacher's votes) and
:func:`retrain_with_points` (R retrainings of only the teacher that receives a crafted point).

Example:
    >>> from dpaudit.mechanisms import GNMax
    >>> from dpaudit.data import load_digits
    >>> ds = load_digits(seed=0)
    >>> api = PATE(num_teachers=20, mechanism=GNMax(2.0)).build(ds.X_train, ds.y_train, rng=0)
    >>> api.predict(ds.X_test[:3], rng=0).tolist()
    [2, 2, 3]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from dpaudit._results import Claim, Curve, ResultMixin
from dpaudit._rng import as_generator, as_seed_sequence, block_seeds, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_choice, check_positive_int
from dpaudit.mechanisms.values import ConfidentGNMax, GNMax
from dpaudit.systems._protocols import (
    SYSTEMS,
    SystemFactory,
    check_teacher_ensemble,
    noisy_argmax_query_rdp,
)
from dpaudit.systems.private_prediction._cell import PrivatePredictionCell
from dpaudit.systems.private_prediction._ensemble import (
    ESTIMATOR_NAMES,
    EstimatorSpec,
    TeacherEnsemble,
    estimator_is_deterministic,
    make_partition,
)
from dpaudit.systems.private_prediction._predictor import Ledger, PrivatePredictor
from dpaudit.systems.private_prediction._retrain import run_retrainings

PARTITIONS: tuple[str, ...] = ("random", "fixed")

__all__ = [
    "PARTITIONS",
    "PATE",
    "CaPC",
    "PairedVotes",
    "TeacherEnsembleSystem",
    "TrainingInstantiations",
    "retrain_with_points",
    "train_instantiations",
]


@dataclasses.dataclass(frozen=True, eq=False)
class TrainingInstantiations:
    """N_g instantiations of the training phase (Chadha et al. 2024, arXiv:2402.09403,
    Alg. 1 lines 4–8) and their votes.

    Attributes:
        partition: ``"random"`` (a fresh random partition each time, PATE) or ``"fixed"``
            (fixed parties; only the teachers' own training randomness changes, CaPC).
        ensembles: the fitted :class:`dpaudit.systems.TeacherEnsemble` of each instantiation.
        queries: the query rows, ``(n_q, d)``.
        predictions: int64 votes ``(N_g, n_q, m)``: entry ``[g, q, i]`` is teacher i's label
            for query q in instantiation g.
        num_classes: C.
        seed: integer entropy of the seed, if any.
        retrain_cache: votes of the retrainings done so far (:func:`retrain_with_points`
            reads and extends it, so retrainings repeated by another adversary cost nothing).
    """

    partition: str
    ensembles: tuple[Any, ...]
    queries: np.ndarray
    predictions: IntArray
    num_classes: int
    seed: int | None = None
    retrain_cache: dict[Any, Any] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def num_instantiations(self) -> int:
        """N_g."""
        return len(self.ensembles)

    @property
    def num_teachers(self) -> int:
        """m."""
        return int(self.predictions.shape[2])


def train_instantiations(
    X: ArrayLike,
    y: ArrayLike,
    queries: ArrayLike,
    *,
    partition: str,
    num_teachers: int,
    num_instantiations: int,
    estimator: Any = None,
    num_classes: int | None = None,
    parties: Sequence[ArrayLike] | None = None,
    rng: RngLike = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> TrainingInstantiations:
    """Run the training phase N_g times and record every teacher's vote on the queries.

    ``partition="random"`` draws a fresh random partition per instantiation (PATE, Chadha et
    al. 2024 §5.1). ``"fixed"`` keeps the parties fixed (``parties``, or one seeded random
    partition drawn once) and changes only the teachers' seeds (CaPC, §5.2).

    Args:
        X: training features ``(n, d)``.
        y: training labels ``(n,)``.
        queries: query rows ``(n_q, d)``.
        partition: ``"random"`` or ``"fixed"``.
        num_teachers: m.
        num_instantiations: N_g ≥ 1.
        estimator: teacher model spec (see :meth:`dpaudit.systems.TeacherEnsemble.fit`).
        num_classes: C (default ``max(y) + 1``).
        parties: the fixed parties (index arrays); default: a seeded random partition.
        rng: seed.
        n_jobs: joblib workers for teacher training.
        progress: rich progress bars.

    Returns:
        :class:`TrainingInstantiations`.

    Raises:
        ValueError: unknown partition, m > n, N_g < 1, bad data.
    """
    check_choice("partition", partition, PARTITIONS)
    m = check_positive_int("num_teachers", num_teachers)
    ng = check_positive_int("num_instantiations", num_instantiations)
    q = np.asarray(queries)
    if q.ndim == 1:
        q = q[None, :]
    root = as_seed_sequence(rng)
    party_seed, inst_seed = block_seeds(root, 2)
    n = int(np.shape(X)[0])
    if m > n:
        raise ValueError(f"num_teachers must be at most the number of training rows {n}, got {m}")
    parts: Any = "random"
    if partition == "fixed":
        parts = tuple(parties) if parties is not None else make_partition(n, m, rng=party_seed)
    ensembles: list[Any] = []
    preds = []
    # Fixed parts and a seed-independent estimator give the same teachers in every
    # instantiation: fit them once and share the ensemble (identical numbers, 1/N_g the work).
    shared = partition == "fixed" and estimator_is_deterministic(estimator)
    for g, seed in enumerate(block_seeds(inst_seed, ng)):
        if shared and ensembles:
            ensembles.append(ensembles[0])
            preds.append(preds[0])
            continue
        ens = TeacherEnsemble.fit(
            X,
            y,
            num_teachers=m,
            partition=parts,
            estimator=estimator,
            num_classes=num_classes,
            rng=seed,
            n_jobs=n_jobs,
            progress=progress,
        )
        ensembles.append(ens)
        preds.append(ens.teacher_predictions(q))
        del g
    predictions = np.stack(preds).astype(np.int64)
    return TrainingInstantiations(
        partition=partition,
        ensembles=tuple(ensembles),
        queries=q,
        predictions=predictions,
        num_classes=int(ensembles[0].num_classes),
        seed=seed_entropy(rng),
    )


@dataclasses.dataclass(frozen=True)
class PairedVotes(ResultMixin):
    """Votes of one teacher before and after retraining with an added point.

    Attributes:
        instantiation: which instantiation each retraining used, ``(R,)``.
        teacher: which teacher (part) received the point, ``(R,)``.
        before: that teacher's votes on the evaluation rows without the point, ``(R, n_eval)``.
        after: its votes after retraining with the point, ``(R, n_eval)``.
    """

    instantiation: IntArray
    teacher: IntArray
    before: IntArray
    after: IntArray


def retrain_with_points(
    instantiations: TrainingInstantiations,
    points: ArrayLike,
    labels: ArrayLike,
    *,
    num_retrainings: int,
    eval_rows: Sequence[ArrayLike] | None = None,
    teachers: ArrayLike | None = None,
    rng: RngLike = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> list[PairedVotes]:
    """Paired votes of the affected teacher for each crafted point (R retrainings each).

    Retraining r of point p uses instantiation ``r mod N_g`` and adds the point to one part:
    a uniformly random part (PATE: the point lands in a random part) or ``teachers[p]``
    (CaPC: the party the adversary gives it to). Only that teacher is retrained
    (:meth:`dpaudit.systems.TeacherEnsemble.with_point`).

    Args:
        instantiations: from :func:`train_instantiations`.
        points: crafted features, ``(P, d)``.
        labels: their labels, ``(P,)``.
        num_retrainings: R ≥ 1 per point.
        eval_rows: per point, the rows to read the teacher's votes on (default: the point
            itself, i.e. the repeated query of an adversarial distinguisher).
        teachers: per point, the receiving part (default: random parts).
        rng: seed of the random parts.
        n_jobs: joblib workers (each gets the ensembles once, then a share of the tasks).
        progress: rich progress bar over points.

    Returns:
        One :class:`PairedVotes` per point.

    Raises:
        ValueError: shapes, R < 1, teacher indices out of range.
    """
    pts = np.asarray(points)
    if pts.ndim == 1:
        pts = pts[None, :]
    labs = np.atleast_1d(np.asarray(labels, dtype=np.int64))
    if labs.shape != (pts.shape[0],):
        raise ValueError(f"labels must have shape ({pts.shape[0]},), got {labs.shape}")
    r_count = check_positive_int("num_retrainings", num_retrainings)
    ng = instantiations.num_instantiations
    m = instantiations.num_teachers
    if eval_rows is None:
        evals = [pts[i : i + 1] for i in range(pts.shape[0])]
    else:
        if len(eval_rows) != pts.shape[0]:
            raise ValueError(f"eval_rows must have one entry per point ({pts.shape[0]})")
        evals = [np.atleast_2d(np.asarray(e)) for e in eval_rows]
    gen = as_generator(rng)
    if teachers is None:
        parts = gen.integers(0, m, size=(pts.shape[0], r_count))
    else:
        t = np.asarray(teachers, dtype=np.int64).ravel()
        if t.shape != (pts.shape[0],) or t.min() < 0 or t.max() >= m:
            raise ValueError(
                f"teachers must hold one part index in [0, {m}) per point, got {teachers!r}"
            )
        parts = np.repeat(t[:, None], r_count, axis=1)
    inst = np.tile(np.arange(r_count) % ng, (pts.shape[0], 1))
    votes = run_retrainings(
        instantiations.ensembles,
        pts,
        labs,
        None if eval_rows is None else evals,
        inst,
        parts,
        cache=instantiations.retrain_cache,
        n_jobs=n_jobs,
        progress=progress,
    )
    return [
        PairedVotes(
            instantiation=inst[p].astype(np.int64),
            teacher=parts[p].astype(np.int64),
            before=before,
            after=after,
        )
        for p, (before, after) in enumerate(votes)
    ]


# =============================================================================================
# The systems
# =============================================================================================


@dataclasses.dataclass(frozen=True)
class TeacherEnsembleSystem:
    """m teachers on parts of the data, answering with a noisy argmax (base of PATE and CaPC).

    Attributes:
        num_teachers: m ≥ 2.
        mechanism: the noisy aggregator, :class:`dpaudit.mechanisms.GNMax` or
            :class:`dpaudit.mechanisms.ConfidentGNMax`.
        teachers_per_query: k ∈ [1, m] teachers chosen per query (None: all m).
        estimator: teacher model spec (``"logistic"``, ``"extra-trees"``, ``"random-forest"``,
            ``"cnn"``, an estimator or a factory; see :func:`dpaudit.systems.make_estimator`).
        n_jobs: joblib workers for training and retraining (non-zero; -1: all cores).

    Raises:
        ValueError: m < 2, k ∉ [1, m], unknown estimator name, n_jobs = 0.
        TypeError: a mechanism other than GNMax / Confident GNMax.
    """

    num_teachers: int
    mechanism: GNMax | ConfidentGNMax
    teachers_per_query: int | None = None
    estimator: EstimatorSpec = None
    n_jobs: int = 1

    name: ClassVar[str] = ""
    placement: ClassVar[str] = "random"
    histogram_model: ClassVar[str] = "multinomial"
    partition: ClassVar[str] = "random"
    stream_id: ClassVar[int | None] = None
    claim_analysis: ClassVar[str] = "data-dependent"

    def __post_init__(self) -> None:
        m, k = check_teacher_ensemble(self.num_teachers, self.mechanism, self.teachers_per_query)
        object.__setattr__(self, "num_teachers", m)
        object.__setattr__(self, "teachers_per_query", k)
        if isinstance(self.estimator, str):
            check_choice("estimator", self.estimator, ESTIMATOR_NAMES)
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero integer (joblib), got {self.n_jobs!r}")

    @property
    def k(self) -> int:
        """Teachers voting per query."""
        return self.num_teachers if self.teachers_per_query is None else self.teachers_per_query

    # ------------------------------------------------------------------ training phase

    def check_num_points(self, num_points: int) -> None:
        """Raise ValueError if ``num_points`` training rows cannot feed m teachers."""
        n = check_positive_int("num_points", num_points)
        if self.num_teachers > n:
            raise ValueError(
                f"num_teachers must be at most the number of training rows {n}, "
                f"got {self.num_teachers}"
            )

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
    ) -> TrainingInstantiations:
        """N_g instantiations of the training phase and every teacher's vote on ``queries``
        (:func:`train_instantiations` with this system's partition)."""
        return train_instantiations(
            X,
            y,
            queries,
            partition=self.partition,
            num_teachers=self.num_teachers,
            num_instantiations=instantiations,
            estimator=self.estimator,
            num_classes=num_classes,
            rng=rng,
            n_jobs=self.n_jobs,
            progress=bool(progress),
        )

    def retrain(
        self,
        trained: TrainingInstantiations,
        points: ArrayLike,
        labels: ArrayLike,
        *,
        retrainings: int,
        eval_rows: Sequence[ArrayLike] | None = None,
        teachers: ArrayLike | None = None,
        rng: RngLike = None,
        progress: Any = None,
    ) -> list[PairedVotes]:
        """Paired votes of the receiving teacher per crafted point (:func:`retrain_with_points`)."""
        return retrain_with_points(
            trained,
            points,
            labels,
            num_retrainings=retrainings,
            eval_rows=eval_rows,
            teachers=teachers,
            rng=rng,
            n_jobs=self.n_jobs,
            progress=bool(progress),
        )

    # ------------------------------------------------------------------------ the claim

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
        """Claimed RDP of one answered query:
        :func:`~dpaudit.systems._protocols.noisy_argmax_query_rdp` of this ensemble's mechanism
        (Papernot et al. 2018, arXiv:1802.08908, Prop. 8; Thm 6 for the data-dependent one)."""
        return noisy_argmax_query_rdp(
            self.mechanism, orders, analysis=analysis, votes=votes,
            probabilities=probabilities, dropped_mass=dropped_mass, q=q,
        )  # fmt: skip

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The data-independent claim of one answered query (RDP curve, ε at ``delta``).

        The data-dependent claim depends on the votes; the audit computes it per query with
        :meth:`query_rdp`.
        """
        from dpaudit.accounting import DEFAULT_ORDERS, RDPCurve

        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64)
        rdp = self.query_rdp(lam)
        eps = None if delta is None else float(RDPCurve(lam, rdp).to_dp(delta).epsilon)
        return Claim(
            analysis="data-independent",
            source="Papernot et al. 2018, arXiv:1802.08908, Prop. 8",
            epsilon=eps,
            delta=delta,
            rdp=Curve(lam, rdp),
            conversion=None if delta is None else "balle2020",
        )

    # ------------------------------------------------------------------- deployment

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
        progress: bool = False,
    ) -> PrivatePredictor:
        """Train the teachers once and return the private prediction interface.

        Args:
            X: training features ``(n, d)``.
            y: integer labels ``(n,)``.
            rng: seed of the partition and the teachers.
            parties: fixed-party systems only: the m parties' row indices (default:
                consecutive blocks of rows).
            num_classes: C (default ``max(y) + 1``).
            ledger: privacy ledger (:func:`dpaudit.systems.make_ledger`).
            cache: answer caching (Chadha et al. 2024 §5.4).
            progress: rich progress bar.

        Raises:
            ValueError: ``parties`` for a random-partition system, a party count other than m,
                m > n, bad data.
        """
        parts: Any
        if self.partition == "random":
            if parties is not None:
                raise ValueError(
                    f"parties are for fixed-party systems; {self.name} partitions at random"
                )
            parts = "random"
        else:
            parts = "contiguous" if parties is None else list(parties)
        ensemble = TeacherEnsemble.fit(
            X,
            y,
            num_teachers=self.num_teachers,
            partition=parts,
            estimator=self.estimator,
            num_classes=num_classes,
            rng=rng,
            n_jobs=self.n_jobs,
            progress=progress,
        )
        return PrivatePredictor(
            ensemble,
            self.mechanism,
            ledger=ledger,
            cache=cache,
            teachers_per_query=self.teachers_per_query,
        )


@dataclasses.dataclass(frozen=True)
class PATE(TeacherEnsembleSystem):
    """PATE's prediction interface (Papernot et al. 2018, arXiv:1802.08908): a fresh random
    partition; a crafted point lands in a uniformly random part."""

    name: ClassVar[str] = "pate"
    placement: ClassVar[str] = "random"
    histogram_model: ClassVar[str] = "multinomial"
    partition: ClassVar[str] = "random"
    stream_id: ClassVar[int | None] = 0


@dataclasses.dataclass(frozen=True)
class CaPC(TeacherEnsembleSystem):
    """CaPC (Choquette-Choo et al. 2021, arXiv:2102.05188): fixed parties, each training one
    teacher; the adversary chooses the party that receives its point."""

    name: ClassVar[str] = "capc"
    placement: ClassVar[str] = "chosen"
    histogram_model: ClassVar[str] = "independent"
    partition: ClassVar[str] = "fixed"
    stream_id: ClassVar[int | None] = 1


def _from_cell(cls: type[TeacherEnsembleSystem]) -> SystemFactory:
    """The :data:`SYSTEMS` factory of ``cls``: its :class:`PrivatePredictionCell`."""

    def build(cell: PrivatePredictionCell) -> TeacherEnsembleSystem:
        return cls(
            num_teachers=cell.teachers,
            mechanism=GNMax(cell.sigma),
            teachers_per_query=cell.teachers_per_query,
            estimator=cell.estimator,
            n_jobs=cell.n_jobs,
        )

    return SystemFactory(PrivatePredictionCell, build)


SYSTEMS.register("pate", _from_cell(PATE), tags=("private-prediction",))
SYSTEMS.register("capc", _from_cell(CaPC), tags=("private-prediction",))
