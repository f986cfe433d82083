"""Group adversaries against private prediction: many poisoned points at once (layer 6).

Chadha et al. 2024 (arXiv:2402.09403, App. C) sketch adversaries that change m training
points so as to move the votes on many *natural* queries, judged against the group-privacy
guarantee. Three are registered in :data:`GROUP_ADVERSARIES`:

* ``"pate-group"`` — m poisoned points placed in **one** PATE teacher, chosen (label and
  points) to flip that teacher's vote on as many proxy natural queries as possible. One
  teacher changes, so each query's histogram moves by at most one vote.
* ``"capc-teacher"`` — CaPC: one party's whole training set replaced (its labels permuted,
  the permutation that flips most proxy queries); ``"capc-group"``, m points in one party,
  is its single-point comparison at m = 1. The group is the party's data; the unit of
  CaPC's guarantee is the party, so the normalisation is the identity.
* ``"knn-group"`` — Private-kNN (without subsampling): m added points, greedily placed at
  proxy queries and labelled to maximise ``Σ_q s_q²`` (s_q: votes moved at proxy query q — the
  divergence of a small shift grows as its square), so a query's histogram moves by up to m.

Every choice is made on the noiseless votes of *proxy* queries (held-out rows, not the
audited ones) before any noisy answer is drawn, so the audit's lower bound stays valid.
The adversaries see a system through a :class:`GroupTarget` (:class:`EnsembleTarget`,
:class:`KNNTarget`).

Example:
    >>> sorted(GROUP_ADVERSARIES.names())
    ['capc-group', 'capc-teacher', 'knn-group', 'pate-group']
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike, FloatArray, IntArray
from dpaudit._validate import check_positive_int

__all__ = [
    "GROUP_ADVERSARIES",
    "EnsembleTarget",
    "GroupAdversary",
    "GroupPoisoning",
    "GroupTarget",
    "KNNTarget",
    "PlaceNeighbours",
    "PoisonOneTeacher",
    "ReplaceTeacher",
    "make_target",
]


@dataclasses.dataclass(frozen=True, eq=False)
class GroupPoisoning(ResultMixin):
    """What a group adversary changes in the training set.

    Attributes:
        adversary: the adversary's name.
        teacher: the teacher receiving the points (or replaced); None for Private-kNN.
        X: the points added (or the replaced teacher's new training rows), ``(r, d)``.
        y: their labels.
        group_size: training points changed (m; a replaced teacher's row count).
        unit: ``"points"`` or ``"teacher"`` (what the group is made of).
        distance: most votes one query histogram can move (1 for one teacher, m for kNN).
        proxy_effect: the crafter's objective on the proxy queries.
        description: how the points were chosen.
    """

    adversary: str
    teacher: int | None
    X: FloatArray
    y: IntArray
    group_size: int
    unit: str
    distance: int
    proxy_effect: float
    description: str


@runtime_checkable
class GroupTarget(Protocol):
    """A trained system as a group adversary sees it: votes on S and on the poisoned S′."""

    num_classes: int

    def votes(self, X: ArrayLike) -> IntArray:
        """Noiseless vote histograms ``(n, C)`` of the system trained on S."""

    def poisoned_votes(self, poisoning: GroupPoisoning, X: ArrayLike) -> IntArray:
        """Noiseless vote histograms of the system trained on S′."""


def _onehot(labels: np.ndarray, c: int) -> np.ndarray:
    return np.eye(c, dtype=np.int64)[labels]


@dataclasses.dataclass(frozen=True, eq=False)
class EnsembleTarget:
    """A fitted :class:`dpaudit.systems.TeacherEnsemble` (PATE, CaPC) as a group target.

    Added points retrain only the receiving teacher (``with_points``); a replaced teacher is
    trained on the new rows with the same estimator and seed (``fit_teacher``), every other
    teacher unchanged — CaPC's training phase on S′ with the parties fixed.
    """

    ensemble: Any

    @property
    def num_classes(self) -> int:
        """C."""
        return int(self.ensemble.num_classes)

    def votes(self, X: ArrayLike) -> IntArray:
        """All teachers' histograms on ``X``."""
        return self.ensemble.votes(X)

    def teacher_data(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Teacher j's training rows and labels."""
        return self.ensemble.training_rows(self.ensemble.partitions[j])

    def teacher_votes(self, poisoning: GroupPoisoning, X: ArrayLike) -> IntArray:
        """The poisoned teacher's labels on ``X`` (before and after are what flips count)."""
        from dpaudit.systems import fit_teacher

        j = int(poisoning.teacher)
        ens = self.ensemble
        if poisoning.unit == "teacher":
            t = fit_teacher(
                poisoning.X,
                poisoning.y,
                estimator=ens.estimator,
                seed=ens.teacher_seeds[j],
                num_classes=ens.num_classes,
            )
        else:
            t = ens.with_points(poisoning.X, poisoning.y, partition=j).teachers[j]
        return np.asarray(t.predict(np.asarray(X)), dtype=np.int64)

    def poisoned_votes(self, poisoning: GroupPoisoning, X: ArrayLike) -> IntArray:
        """Histograms with teacher j retrained on S′ (or replaced)."""
        j = int(poisoning.teacher)
        old = np.asarray(self.ensemble.teachers[j].predict(np.asarray(X)), dtype=np.int64)
        new = self.teacher_votes(poisoning, X)
        c = self.num_classes
        return self.votes(X) - _onehot(old, c) + _onehot(new, c)


@dataclasses.dataclass(frozen=True, eq=False)
class KNNTarget:
    """A fitted Private-kNN (:class:`dpaudit.systems.PrivateKNN` ``.fit``) with sampling
    rate 1, so every vote is deterministic: the k nearest points vote."""

    fitted: Any

    def __post_init__(self) -> None:
        rate = float(self.fitted.system.sampling_rate)
        if rate != 1.0:
            raise ValueError(f"KNNTarget needs sampling_rate = 1 (deterministic votes), got {rate}")

    @property
    def num_classes(self) -> int:
        """C."""
        return int(self.fitted.num_classes)

    @property
    def k(self) -> int:
        """Voters per query."""
        return int(self.fitted.system.k)

    def votes(self, X: ArrayLike) -> IntArray:
        """The k nearest training points' label histograms."""
        return self.fitted.votes(X, rng=0)

    def poisoned_votes(self, poisoning: GroupPoisoning, X: ArrayLike) -> IntArray:
        """Histograms with the poisoned points added."""
        f = self.fitted
        for x, label in zip(poisoning.X, poisoning.y, strict=True):
            f = f.with_point(x, int(label))
        return f.votes(X, rng=0)

    def kth_distances(self, X: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Per query: squared distance to its k-th neighbour and that neighbour's label."""
        f = self.fitted
        q = f.transform(np.atleast_2d(np.asarray(X, dtype=np.float64)))
        d = _sq_dists(q, f.features)
        kth = np.argsort(d, axis=1, kind="stable")[:, self.k - 1]
        return d[np.arange(q.shape[0]), kth], f.labels[kth]


def _sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum((a * a).sum(1)[:, None] - 2.0 * a @ b.T + (b * b).sum(1)[None, :], 0.0)


@dataclasses.dataclass(frozen=True)
class PoisonOneTeacher:
    """m poisoned points in one teacher, flipping its vote on most proxy queries.

    Candidates, for every target label l: the m pool rows whose label is not l that lie
    nearest the proxy queries' mean ("central"), m random such rows ("random"), and one
    central row repeated m times ("copies"), all labelled l. The teacher is retrained on each
    and the candidate that changes its vote on the most proxy queries is kept.
    """

    name: str = "pate-group"

    def craft(self, target: EnsembleTarget, size: int, pool: tuple[Any, Any], proxy: Any, *,
              rng: np.random.Generator) -> GroupPoisoning:  # fmt: skip
        """The best candidate (class notes) for a group of ``size`` points."""
        m = check_positive_int("size", size)
        Xp, yp = np.asarray(pool[0]), np.asarray(pool[1])
        if m > Xp.shape[0]:
            raise ValueError(f"size must be at most the {Xp.shape[0]} pool rows, got {m}")
        j = int(rng.integers(target.ensemble.num_teachers))
        before = np.asarray(target.ensemble.teachers[j].predict(proxy), dtype=np.int64)
        centre = np.asarray(proxy, dtype=np.float64).mean(axis=0)
        order = np.argsort(((Xp - centre) ** 2).sum(axis=1), kind="stable")
        best: GroupPoisoning | None = None
        for label in range(target.num_classes):
            eligible = order[yp[order] != label]
            if eligible.size < m:
                continue
            picks = {
                "central": eligible[:m],
                "random": rng.choice(eligible, size=m, replace=False),
                "copies": np.repeat(eligible[:1], m),
            }
            for how, idx in picks.items():
                cand = GroupPoisoning(
                    self.name, j, Xp[idx], np.full(m, label, dtype=np.int64), m, "points", 1,
                    0.0, f"{how} rows labelled {label}",
                )  # fmt: skip
                flips = int(np.sum(target.teacher_votes(cand, proxy) != before))
                if best is None or flips > best.proxy_effect:
                    best = dataclasses.replace(cand, proxy_effect=float(flips))
        if best is None:
            raise ValueError(f"no label has {m} pool rows of another label to poison with")
        return best


@dataclasses.dataclass(frozen=True)
class ReplaceTeacher:
    """CaPC: one party's whole training set replaced by its rows under a label shift
    ``y → (y + s) mod C``, the shift s that flips the party's vote on most proxy queries."""

    name: str = "capc-teacher"

    def craft(self, target: EnsembleTarget, size: int, pool: tuple[Any, Any], proxy: Any, *,
              rng: np.random.Generator) -> GroupPoisoning:  # fmt: skip
        """The replaced teacher (``size`` is ignored: the group is the party's data)."""
        check_positive_int("size", size)
        j = int(rng.integers(target.ensemble.num_teachers))
        X, y = target.teacher_data(j)
        before = np.asarray(target.ensemble.teachers[j].predict(proxy), dtype=np.int64)
        c = target.num_classes
        best: GroupPoisoning | None = None
        for shift in range(1, c):
            cand = GroupPoisoning(
                self.name, j, np.asarray(X), (np.asarray(y) + shift) % c, len(y),
                "teacher", 1, 0.0, f"party {j}'s rows with labels shifted by {shift}",
            )  # fmt: skip
            flips = int(np.sum(target.teacher_votes(cand, proxy) != before))
            if best is None or flips > best.proxy_effect:
                best = dataclasses.replace(cand, proxy_effect=float(flips))
        assert best is not None  # C ≥ 2
        return best


@dataclasses.dataclass(frozen=True)
class PlaceNeighbours:
    """Private-kNN: m added points placed greedily at proxy queries.

    A point at location p with label l enters the k nearest of every proxy query q with
    ``‖p − q‖² < r_q²`` (r_q: distance to q's k-th neighbour) and moves a vote there unless
    l is the displaced neighbour's label. Each step adds the (p, l) that most increases
    ``Σ_q s_q²`` (s_q: votes moved at q so far) — repeated points at one location move
    several votes of the same queries, spread points fewer votes of more queries.
    """

    name: str = "knn-group"

    def craft(self, target: KNNTarget, size: int, pool: tuple[Any, Any], proxy: Any, *,
              rng: np.random.Generator) -> GroupPoisoning:  # fmt: skip
        """Greedy placement (class notes) of ``size`` points."""
        m = check_positive_int("size", size)
        proxy = np.asarray(proxy, dtype=np.float64)
        r2, kth_label = target.kth_distances(proxy)
        f = target.fitted
        feats = f.transform(proxy)
        cover = _sq_dists(feats, feats) < r2[None, :]  # cover[p, q]: p enters q's k nearest
        c = target.num_classes
        moves = np.stack([cover & (kth_label[None, :] != lab) for lab in range(c)])  # (C, P, Q)
        s = np.zeros(proxy.shape[0])
        placed: list[tuple[int, int]] = []
        for _ in range(m):
            gain = ((s[None, None, :] + moves) ** 2 - s[None, None, :] ** 2).sum(axis=2)
            lab, p = np.unravel_index(int(np.argmax(gain)), gain.shape)
            placed.append((int(p), int(lab)))
            s = s + moves[lab, p]
        idx = np.array([p for p, _ in placed])
        labels = np.array([lab for _, lab in placed], dtype=np.int64)
        return GroupPoisoning(
            self.name, None, proxy[idx], labels, m, "points", m, float((s**2).sum()),
            f"{len(set(placed))} distinct (location, label) pairs for {m} points",
        )  # fmt: skip


def make_target(system: Any, X: ArrayLike, y: ArrayLike, *, num_classes: int, rng: Any) -> Any:
    """Train ``system`` once on (X, y) and wrap it for a group adversary.

    A teacher ensemble (PATE, CaPC: anything whose ``train`` returns instantiations with
    ``ensembles``) becomes an :class:`EnsembleTarget`; a system with ``fit`` and a sampling
    rate (Private-kNN) a :class:`KNNTarget` (its sampling rate must be 1).

    Raises:
        TypeError: a system of neither kind.
    """
    if hasattr(system, "fit") and hasattr(system, "sampling_rate"):
        return KNNTarget(system.fit(X, y, num_classes=num_classes))
    if not hasattr(system, "train"):
        raise TypeError(f"system must be a teacher ensemble or Private-kNN, got {system!r}")
    Xa = np.asarray(X)
    inst = system.train(Xa, y, Xa[:1], instantiations=1, num_classes=num_classes, rng=rng)
    return EnsembleTarget(inst.ensembles[0])


@dataclasses.dataclass(frozen=True)
class GroupAdversary:
    """A registered group adversary.

    Attributes:
        name: registry name.
        crafter: ``craft(target, size, pool, proxy, *, rng) -> GroupPoisoning``.
        system: the registered system it attacks (``dpaudit.systems.SYSTEMS``).
        normalisation: how its group bound returns to a single-point bound
            (:func:`dpaudit.mechanisms.normalise_group_bound`).
        description: one line.
        single_point: the adversary run at group size 1 as its single-point comparison (None:
            itself).
        fixed_group: the group is fixed by the system (a whole teacher), not by a size.
        within_teacher: all m points go to one teacher (m must not exceed its data).
    """

    name: str
    crafter: Any
    system: str
    normalisation: str
    description: str
    single_point: str | None = None
    fixed_group: bool = False
    within_teacher: bool = False

    def craft(self, target: Any, size: int, pool: tuple[Any, Any], proxy: Any, *,
              rng: np.random.Generator) -> GroupPoisoning:  # fmt: skip
        """Run the crafter."""
        return self.crafter.craft(target, size, pool, proxy, rng=rng)


#: Group adversaries by name (Chadha et al. 2024, arXiv:2402.09403, App. C).
GROUP_ADVERSARIES: Registry[GroupAdversary] = Registry("group adversary")

GROUP_ADVERSARIES.register(
    "pate-group",
    GroupAdversary(
        "pate-group", PoisonOneTeacher(), "pate", "gaussian",
        "m poisoned points in one teacher, flipping its vote on many natural queries",
        within_teacher=True,
    ),
)  # fmt: skip
GROUP_ADVERSARIES.register(
    "capc-group",
    GroupAdversary(
        "capc-group", PoisonOneTeacher("capc-group"), "capc", "gaussian",
        "m poisoned points in one CaPC party, flipping its vote on many natural queries",
        within_teacher=True,
    ),
)  # fmt: skip
GROUP_ADVERSARIES.register(
    "capc-teacher",
    GroupAdversary(
        "capc-teacher", ReplaceTeacher(), "capc", "teacher",
        "one party's whole training set replaced (labels shifted)", "capc-group", True,
    ),
)  # fmt: skip
GROUP_ADVERSARIES.register(
    "knn-group",
    GroupAdversary(
        "knn-group", PlaceNeighbours(), "private-knn", "gaussian",
        "m added points placed for the largest total squared vote shift on the queries",
    ),
)  # fmt: skip
