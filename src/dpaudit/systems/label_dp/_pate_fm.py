"""PATE-FM: PATE with semi-supervised teachers and student for label DP.

Malek, Mironov, Prasad, Shilov & Tramèr 2021, "Antipodes of Label Differential Privacy"
(arXiv:2106.03408), §4, Alg. 1–2. Under label DP the features are public, so

1. (Alg. 1) the training set is split into m disjoint parts; teacher i is trained
   semi-supervised on part i's labels plus the *whole* unlabelled pool (every training row);
2. (Alg. 2) the student queries random training rows (without their labels), one at a time;
   Confident GNMax (Papernot et al. 2018, arXiv:1802.08908, Alg. 1) answers a query only if
   ``max_j v_j + N(0, σ1²) ≥ T`` — noise on the *maximum* vote only, as the analysis
   assumes, through :meth:`dpaudit.mechanisms.ConfidentGNMax.answer` (the authors' code adds
   it to every class, a different mechanism from the one it accounts for) — and then with
   ``argmax_j (v_j + N(0, σ2²))``; querying stops after ``answers`` answers (K) or ``queries``
   queries, whichever comes first;
3. the student is trained semi-supervised on its answered queries plus the unlabelled pool.

The semi-supervised learner is the FixMatch-style objective of
:func:`dpaudit.systems.label_dp._training.train_semi_supervised` (a CPU-sized stand-in for
FixMatch with RandAugment; it can be switched off).

**Claim.** The data-dependent RDP of Confident GNMax (Papernot et al. 2018 Thm 6 for both
steps; the threshold step is charged for every query made, the argmax step for the answered
ones; :func:`dpaudit.accounting.confident_gnmax_cost`), released privately with the smooth
sensitivity of the cost and the GNSS mechanism (Papernot et al. 2018 App. B, Thm 23;
:func:`dpaudit.accounting.gnss_release`) at δ = 1e-5 with the standard RDP→DP conversion
(Mironov 2017, arXiv:1702.07476, Prop. 3). The order of the release is fixed by ``order`` or,
if unset, chosen as the optimum of the data-dependent curve, as in the reference scripts (a
data-dependent choice that is not accounted for; recorded in the claim's analysis name).
The un-released data-dependent ε and the data-independent ε (Prop. 8, same queries) are given
beside it.

Example:
    >>> from dpaudit.mechanisms import ConfidentGNMax
    >>> s = PATEFM(num_teachers=20, mechanism=ConfidentGNMax(10, 4.0, 2.0), queries=100)
    >>> round(s.claim().epsilon, 2) > 0
    True
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from dpaudit._results import Claim, Curve
from dpaudit._rng import as_generator, block_seeds
from dpaudit._typing import ArrayLike, IntArray, ProgressLike, RngLike
from dpaudit._validate import (
    check_delta,
    check_positive,
    check_positive_int,
    check_progress,
    track,
)
from dpaudit.accounting import (
    DEFAULT_ORDERS,
    RDPCurve,
    confident_gnmax_cost,
    gnss_release,
    mechanism_rdp,
    pate_local_sensitivity,
)
from dpaudit.mechanisms import ABSTAIN, ConfidentGNMax
from dpaudit.systems.label_dp._systems import DEFAULT_DELTA, LabelDPFit, check_label_data
from dpaudit.systems.label_dp._training import (
    ConsistencySettings,
    LabelTargets,
    TorchNetwork,
    TrainingSettings,
    train_semi_supervised,
)

__all__ = ["PATEFM", "PATETeachers", "StudentQueries"]

_PAPERNOT = "Papernot et al. 2018 (arXiv:1802.08908)"


@dataclasses.dataclass(frozen=True, eq=False)
class PATETeachers:
    """The teacher ensemble of PATE-FM (Alg. 1).

    Attributes:
        networks: one trained network per teacher.
        parts: the disjoint training-row indices of each teacher.
        num_classes: C.
    """

    networks: tuple[TorchNetwork, ...]
    parts: tuple[np.ndarray, ...]
    num_classes: int

    @property
    def num_teachers(self) -> int:
        """m."""
        return len(self.networks)

    def votes(self, X: ArrayLike) -> IntArray:
        """Vote histograms ``(n, C)``: how many teachers predict each class."""
        out = np.zeros((np.shape(X)[0], self.num_classes), dtype=np.int64)
        rows = np.arange(out.shape[0])
        for net in self.networks:
            np.add.at(out, (rows, net.predict(X)), 1)
        return out

    def accuracy(self, X: ArrayLike, y: ArrayLike) -> dict[str, float]:
        """Mean teacher accuracy and the noiseless plurality vote's accuracy."""
        labels = np.asarray(y)
        each = [net.accuracy(X, labels) for net in self.networks]
        plurality = float(np.mean(np.argmax(self.votes(X), axis=1) == labels))
        return {"teacher_mean": float(np.mean(each)), "plurality": plurality}


@dataclasses.dataclass(frozen=True, eq=False)
class StudentQueries:
    """The student's queries to the ensemble and Confident GNMax's answers (Alg. 2).

    Attributes:
        rows: training-row index of each query made, in order.
        votes: ``(q, C)`` vote histograms of the queries made.
        labels: ``(q,)`` answers (:data:`~dpaudit.mechanisms.ABSTAIN` where not answered).
    """

    rows: IntArray
    votes: IntArray
    labels: IntArray

    @property
    def answered(self) -> np.ndarray:
        """Boolean mask of the answered queries."""
        return self.labels != ABSTAIN

    @property
    def num_queries(self) -> int:
        """Queries made (each spends privacy)."""
        return int(self.rows.size)

    @property
    def num_answered(self) -> int:
        """Queries answered (labels the student gets)."""
        return int(np.count_nonzero(self.answered))


def _optional_order(order: object) -> float | None:
    if order is None:
        return None
    lam = check_positive("order", order)
    if lam <= 1:
        raise ValueError(f"order must be > 1, got {lam}")
    return lam


@dataclasses.dataclass(frozen=True)
class PATEFM:
    """PATE-FM (Malek et al. 2021 Alg. 1–2) with Confident GNMax (module notes).

    Attributes:
        num_teachers: m ≥ 2 disjoint teachers.
        mechanism: :class:`~dpaudit.mechanisms.ConfidentGNMax` (T, σ1, σ2).
        queries: the student's query budget (queries made at most), ≥ 1.
        answers: K, stop after this many answers (None: make all ``queries``).
        teacher_steps: optimisation steps per teacher.
        student_steps: optimisation steps of the student.
        training: network and optimiser (its ``epochs`` is not used).
        consistency: the semi-supervised objective (switchable).
        delta: δ of the claims.
        order: Rényi order of the smooth-sensitivity release (None: the data-dependent
            optimum, as in the reference scripts).
    """

    num_teachers: int
    mechanism: ConfidentGNMax
    queries: int
    answers: int | None = None
    teacher_steps: int = 300
    student_steps: int = 1000
    training: TrainingSettings = dataclasses.field(default_factory=TrainingSettings)
    consistency: ConsistencySettings = dataclasses.field(default_factory=ConsistencySettings)
    delta: float = DEFAULT_DELTA
    order: float | None = None
    name: ClassVar[str] = "pate-fm"

    def __post_init__(self) -> None:
        m = check_positive_int("num_teachers", self.num_teachers)
        if m < 2:
            raise ValueError(f"num_teachers must be at least 2, got {m}")
        if not isinstance(self.mechanism, ConfidentGNMax):
            raise TypeError(
                f"mechanism must be a ConfidentGNMax, got {type(self.mechanism).__name__}"
            )
        q = check_positive_int("queries", self.queries)
        if self.answers is not None and check_positive_int("answers", self.answers) > q:
            raise ValueError(f"answers must be at most queries={q}, got {self.answers}")
        check_positive_int("teacher_steps", self.teacher_steps)
        check_positive_int("student_steps", self.student_steps)
        object.__setattr__(self, "delta", check_delta(self.delta, allow_zero=False))
        object.__setattr__(self, "order", _optional_order(self.order))

    # ------------------------------------------------------------------ claims

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """Data-independent claim before training: every one of ``queries`` answered.

        Papernot et al. 2018 Prop. 8 per step; Balle et al. 2020 (arXiv:1905.09982) Thm 20.
        """
        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64)
        d = self.delta if delta is None else check_delta(delta, allow_zero=False)
        curve = RDPCurve(lam, self.queries * mechanism_rdp(self.mechanism, lam))
        return Claim(
            "data-independent (all queries answered)",
            f"{_PAPERNOT} Prop. 8 per step of Confident GNMax; Balle et al. 2020 Thm 20",
            epsilon=float(curve.to_dp(d).epsilon),
            delta=d,
            rdp=Curve(curve.orders, curve.epsilons),
            conversion="balle2020",
        )

    def data_dependent_claims(self, queries: StudentQueries, *, rng: RngLike = None):
        """The claims of a run from its votes: GNSS release, un-released, data-independent.

        Returns:
            ``(released, data_dependent, data_independent)`` :class:`~dpaudit._results.Claim`.
        """
        m = self.mechanism
        lam = np.asarray(DEFAULT_ORDERS, dtype=np.float64)
        answered = queries.answered

        def realised(analysis: str, orders: np.ndarray) -> RDPCurve:
            cost = confident_gnmax_cost(
                queries.votes, threshold=m.threshold, sigma1=m.sigma1, sigma2=m.sigma2,
                orders=orders, analysis=analysis,
            )  # fmt: skip
            return cost.realised(answered.astype(np.float64))

        dd_curve = realised("data-dependent", lam)
        dd = dd_curve.to_dp(self.delta, conversion="standard")
        order = float(dd.order) if self.order is None else self.order
        rho = float(realised("data-dependent", np.array([order])).epsilons[0])
        ls = pate_local_sensitivity(
            queries.votes, num_teachers=self.num_teachers, sigma=m.sigma2, order=order,
            threshold=m.threshold, sigma1=m.sigma1, weights=answered.astype(np.float64),
        )  # fmt: skip
        rel = gnss_release(rho, ls, order, self.delta, rng=rng)
        chosen = "fixed order" if self.order is not None else "order of the dd optimum"
        di = realised("data-independent", lam)
        steps = f"{_PAPERNOT} Thm 6 per step of Confident GNMax (Alg. 1)"
        return (
            Claim(
                f"data-dependent, smooth-sensitivity release ({chosen} {order:g})",
                f"{steps}; GNSS release (App. B, Thm 23); standard RDP→DP conversion",
                epsilon=float(rel.epsilon_released), delta=self.delta,
                rdp=Curve(dd_curve.orders, dd_curve.epsilons), conversion="standard",
            ),
            Claim(
                "data-dependent (not released privately)", steps, epsilon=float(dd.epsilon),
                delta=self.delta, rdp=Curve(dd_curve.orders, dd_curve.epsilons),
                conversion="standard",
            ),
            Claim(
                "data-independent", f"{_PAPERNOT} Prop. 8 per step; standard RDP→DP",
                epsilon=float(di.to_dp(self.delta, conversion="standard").epsilon),
                delta=self.delta, rdp=Curve(di.orders, di.epsilons), conversion="standard",
            ),
        )  # fmt: skip

    # ------------------------------------------------------------------ stages

    def check_data(
        self,
        X: ArrayLike,
        y: ArrayLike,
        num_classes: int,
        *,
        images: bool = True,
    ):
        """Rows and labels, with m and the query budget checked against n (before training).

        ``images=False`` says the data has no image shape: the consistency objective (weak
        and strong augmentations of images) then must be disabled.
        """
        if self.consistency.enabled and not images:
            raise ValueError("consistency.enabled needs image data; set it to false")
        x, labels = check_label_data(X, y, num_classes)
        n = labels.size
        if self.num_teachers > n:
            raise ValueError(f"num_teachers={self.num_teachers} exceeds the {n} training rows")
        if self.queries > n:
            raise ValueError(f"queries={self.queries} exceeds the {n} training rows")
        return x, labels

    def train_teachers(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        num_classes: int,
        image_shape: tuple[int, int] | None = None,
        rng: RngLike = None,
        progress: ProgressLike = None,
    ) -> PATETeachers:
        """Alg. 1: a random partition into m parts, one semi-supervised teacher per part."""
        x, labels = self.check_data(X, y, num_classes)
        part_seed, *seeds = block_seeds(rng, self.num_teachers + 1)
        parts = np.array_split(as_generator(part_seed).permutation(labels.size), self.num_teachers)
        report = check_progress(progress)
        nets = []
        for part, seed in track(zip(parts, seeds, strict=True), len(parts),
                                f"{self.name}: teachers", report):  # fmt: skip
            nets.append(
                train_semi_supervised(
                    x[part],
                    LabelTargets.hard(labels[part], num_classes),
                    x,
                    steps=self.teacher_steps,
                    image_shape=image_shape,
                    training=self.training,
                    consistency=self.consistency,
                    rng=seed,
                )
            )
        return PATETeachers(tuple(nets), tuple(np.sort(p) for p in parts), num_classes)

    def query(self, teachers: PATETeachers, X: ArrayLike, *, rng: RngLike = None) -> StudentQueries:
        """Alg. 2's loop: random rows, Confident GNMax answers, stop at K answers."""
        order_seed, noise_seed = block_seeds(rng, 2)
        n = np.shape(X)[0]
        rows = as_generator(order_seed).permutation(n)[: self.queries]
        votes = teachers.votes(np.asarray(X)[rows])
        labels = self.mechanism.answer(votes, rng=noise_seed)
        if self.answers is not None:
            done = np.flatnonzero(np.cumsum(labels != ABSTAIN) >= self.answers)
            if done.size:
                stop = int(done[0]) + 1
                rows, votes, labels = rows[:stop], votes[:stop], labels[:stop]
        return StudentQueries(rows.astype(np.int64), votes, labels)

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        num_classes: int,
        image_shape: tuple[int, int] | None = None,
        rng: RngLike = None,
        progress: ProgressLike = None,
        teachers: PATETeachers | None = None,
    ) -> LabelDPFit:
        """Teachers (or the ``teachers`` given), queries, student, claims.

        ``teachers`` must have been trained by :meth:`train_teachers` on the same ``X, y``
        (the workflow shares one ensemble between settings that differ only in the noise).

        Raises:
            ValueError: bad data or budgets (before any training); no query answered (after
                the teachers voted: lower the threshold or raise the budget).
        """
        x, labels = self.check_data(X, y, num_classes)
        teacher_seed, query_seed, student_seed, release_seed = block_seeds(rng, 4)
        if teachers is None:
            teachers = self.train_teachers(
                x, labels, num_classes=num_classes, image_shape=image_shape, rng=teacher_seed,
                progress=progress,
            )  # fmt: skip
        elif teachers.num_teachers != self.num_teachers:
            raise ValueError(
                f"teachers has {teachers.num_teachers} teachers, the system {self.num_teachers}"
            )
        asked = self.query(teachers, x, rng=query_seed)
        if asked.num_answered == 0:
            raise ValueError(
                f"Confident GNMax answered none of {asked.num_queries} queries "
                f"(threshold {self.mechanism.threshold:g}): lower the threshold"
            )
        rows = asked.rows[asked.answered]
        student = train_semi_supervised(
            x[rows], LabelTargets.hard(asked.labels[asked.answered], num_classes), x,
            steps=self.student_steps, image_shape=image_shape, training=self.training,
            consistency=self.consistency, rng=student_seed, progress=progress,
            description=f"{self.name}: student",
        )  # fmt: skip
        claims = self.data_dependent_claims(asked, rng=release_seed)
        detail = _fit_detail(teachers, asked, labels)
        return LabelDPFit(self.name, student, claims, detail)


def _fit_detail(teachers: PATETeachers, asked: StudentQueries, labels: np.ndarray) -> dict:
    answered = asked.answered
    agree = asked.labels[answered] == labels[asked.rows[answered]]
    return {
        "num_teachers": teachers.num_teachers,
        "num_queries": asked.num_queries,
        "num_answered": asked.num_answered,
        "answered_label_agreement": float(np.mean(agree)),
        "mean_max_vote": float(np.mean(asked.votes.max(axis=1))),
    }
