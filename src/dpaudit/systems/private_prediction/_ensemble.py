"""Teacher ensembles of the private-prediction framework (Chadha et al. 2024, "Auditing
Private Prediction", arXiv:2402.09403, Alg. 1, training phase).

``TeacherEnsemble.fit`` partitions the training set into m parts (random for PATE, §5.1;
fixed per party for CaPC, §5.2), trains one teacher per part with any
scikit-learn-compatible estimator (in parallel over local processes with joblib), and answers
``votes(X)``: the per-query histogram of teacher predictions (Alg. 1 lines 11–12, with CHOOSE
picking k of the m teachers per query when asked). ``with_point`` builds the ensemble of a
neighbouring dataset S' = S ∪ {(x', y')} by retraining only the teacher whose part receives the
new point, which is what the adversaries of Chadha et al. 2024 §4.1 need.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import numpy as np

from dpaudit._rng import as_generator, as_seed_sequence, block_seeds
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_choice, check_nonneg_int, check_positive_int
from dpaudit.errors import require
from dpaudit.systems.private_prediction._estimators import (
    DEFAULT_ESTIMATOR,
    ESTIMATOR_NAMES,
    Classifier,
    EstimatorSpec,
    _as_features,
    _as_labels,
    _fit_teacher,
    _one_blas_thread,
    estimator_is_deterministic,
    fit_teacher,
    make_estimator,
    updatable,
)

__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATOR_NAMES",
    "Classifier",
    "TeacherEnsemble",
    "estimator_is_deterministic",
    "fit_teacher",
    "make_estimator",
    "make_partition",
    "updatable",
]

PartitionScheme = Literal["random", "contiguous"]
# --------------------------------------------------------------------------- partitions


def make_partition(
    num_points: int,
    num_parts: int,
    *,
    scheme: PartitionScheme = "random",
    rng: RngLike = None,
) -> tuple[IntArray, ...]:
    """Split ``range(num_points)`` into ``num_parts`` disjoint, covering, near-equal parts.

    ``"random"`` is PATE's partition (Chadha et al. 2024 §5.1: a uniformly random permutation
    cut into parts whose sizes differ by at most one); ``"contiguous"`` cuts
    ``0..num_points-1`` into consecutive blocks, the fixed parties of CaPC (§5.2) when rows
    are ordered by party.

    Args:
        num_points: number of training rows n.
        num_parts: number of parts m, 1 ≤ m ≤ n.
        scheme: ``"random"`` or ``"contiguous"``.
        rng: randomness of the ``"random"`` scheme (ignored by ``"contiguous"``).

    Returns:
        Tuple of m sorted, read-only int64 index arrays.

    Raises:
        ValueError: ``num_parts`` > ``num_points``, non-positive sizes, unknown ``scheme``.

    Example:
        >>> [p.tolist() for p in make_partition(5, 2, scheme="contiguous")]
        [[0, 1, 2], [3, 4]]
    """
    n = check_positive_int("num_points", num_points)
    m = check_positive_int("num_parts", num_parts)
    check_choice("scheme", scheme, ("random", "contiguous"))
    if m > n:
        raise ValueError(f"num_parts must be at most num_points={n}, got {m}")
    order = as_generator(rng).permutation(n) if scheme == "random" else np.arange(n)
    parts = []
    for part in np.array_split(order, m):
        part = np.sort(part).astype(np.int64)
        part.setflags(write=False)
        parts.append(part)
    return tuple(parts)


def _check_explicit_partition(parts: Sequence[ArrayLike], n: int) -> tuple[IntArray, ...]:
    if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or len(parts) == 0:
        raise ValueError(
            "partition must be 'random', 'contiguous' or a non-empty sequence of index arrays, "
            f"got {parts!r}"
        )
    out = []
    seen = np.zeros(n, dtype=bool)
    for i, part in enumerate(parts):
        arr = np.asarray(part)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"partition[{i}] must be a non-empty 1-d array of integer row indices, got "
                f"dtype {arr.dtype} and shape {arr.shape}"
            )
        if arr.min() < 0 or arr.max() >= n:
            raise ValueError(
                f"partition[{i}] has indices outside [0, {n}), got range [{arr.min()}, {arr.max()}]"
            )
        arr = np.sort(arr.astype(np.int64))
        if np.any(np.diff(arr) == 0) or np.any(seen[arr]):
            raise ValueError(f"partition must be disjoint: partition[{i}] repeats a row index")
        seen[arr] = True
        arr.setflags(write=False)
        out.append(arr)
    return tuple(out)


def _progress(items: Iterable[Any], total: int, description: str, enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield from items
        return
    rp = require("rich.progress", "cli")
    columns = (
        rp.TextColumn("[progress.description]{task.description}"),
        rp.BarColumn(),
        rp.MofNCompleteColumn(),
        rp.TimeElapsedColumn(),
        rp.TimeRemainingColumn(),
    )
    with rp.Progress(*columns) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            bar.advance(task)
            yield item


def _check_n_jobs(n_jobs: object) -> int:
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs must be an integer, got {n_jobs!r}")
    if int(n_jobs) == 0:
        raise ValueError(
            "n_jobs must be a positive count or negative (joblib: -1 = all cores), got 0"
        )
    return int(n_jobs)


def _train_many(
    spec: EstimatorSpec,
    data: _TrainingData,
    parts: Sequence[np.ndarray],
    seeds: Sequence[int],
    *,
    n_jobs: int,
    progress: bool,
) -> list[Any]:
    jobs = [(data.rows(p), data.labels(p), s) for p, s in zip(parts, seeds, strict=True)]
    if n_jobs == 1 or len(jobs) == 1:
        with _one_blas_thread():
            results: Iterable[Any] = (_fit_teacher(spec, X, y, s) for X, y, s in jobs)
            return list(_progress(results, len(jobs), "training teachers", progress))
    joblib = require("joblib", "ml")
    with joblib.parallel_config(backend="loky", inner_max_num_threads=1):
        results = joblib.Parallel(n_jobs=n_jobs, return_as="generator")(
            joblib.delayed(_fit_teacher)(spec, X, y, s) for X, y, s in jobs
        )
        return list(_progress(results, len(jobs), "training teachers", progress))


@dataclasses.dataclass(frozen=True, eq=False)
class _TrainingData:
    """The training set S plus points appended by ``with_points`` (no copy of S is made)."""

    X: np.ndarray
    y: np.ndarray
    X_extra: np.ndarray
    y_extra: np.ndarray

    @property
    def num_base(self) -> int:
        return int(self.X.shape[0])

    @property
    def num_points(self) -> int:
        return self.num_base + int(self.X_extra.shape[0])

    def rows(self, idx: np.ndarray) -> np.ndarray:
        nb = self.num_base
        base, extra = idx[idx < nb], idx[idx >= nb] - nb
        if extra.size == 0:
            return self.X[base]
        return np.concatenate([self.X[base], self.X_extra[extra].astype(self.X.dtype)])

    def labels(self, idx: np.ndarray) -> np.ndarray:
        nb = self.num_base
        base, extra = idx[idx < nb], idx[idx >= nb] - nb
        return np.concatenate([self.y[base], self.y_extra[extra]])

    def append(self, X_new: np.ndarray, y_new: np.ndarray) -> _TrainingData:
        return _TrainingData(
            self.X,
            self.y,
            np.concatenate([self.X_extra, X_new.astype(self.X_extra.dtype)]),
            np.concatenate([self.y_extra, y_new]),
        )


def _unique_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of X and the inverse map (repeated queries are predicted once)."""
    if X.shape[0] == 1:
        return X, np.zeros(1, dtype=np.int64)
    contiguous = np.ascontiguousarray(X)
    keys = contiguous.view(np.dtype((np.void, contiguous.dtype.itemsize * contiguous.shape[1])))
    _, first, inverse = np.unique(keys.ravel(), return_index=True, return_inverse=True)
    return contiguous[first], inverse.ravel()


# --------------------------------------------------------------------------- the ensemble


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class TeacherEnsemble:
    """m teachers trained on disjoint parts of a training set (Chadha et al. 2024,
    arXiv:2402.09403, Alg. 1, lines 4–8).

    Build with :meth:`fit`; an instance is immutable (``with_point``/``without_point`` return
    new ensembles that share the unchanged teachers).

    Attributes:
        teachers: the m fitted estimators (do not refit them in place).
        partitions: m sorted read-only index arrays into the training rows (rows appended by
            ``with_point`` get indices ``n, n+1, …``).
        teacher_seeds: the seed each teacher was trained with (kept on retraining so that a
            retrained teacher differs from the original only through its data).
        num_classes: number of classes C (labels are ``0..C-1``).
        scheme: ``"random"`` (PATE), ``"contiguous"`` or ``"explicit"`` (CaPC parties).
        estimator: the estimator spec the teachers were built from.
        modified: teachers retrained relative to the ensemble this one was derived from
            (empty for a freshly fitted ensemble).
    """

    teachers: tuple[Any, ...]
    partitions: tuple[IntArray, ...]
    teacher_seeds: tuple[int, ...]
    num_classes: int
    scheme: str
    estimator: EstimatorSpec
    modified: tuple[int, ...]
    _data: _TrainingData

    # ----------------------------------------------------------------- construction

    @classmethod
    def fit(
        cls,
        X: ArrayLike,
        y: ArrayLike,
        *,
        num_teachers: int | None = None,
        partition: PartitionScheme | Sequence[ArrayLike] = "random",
        estimator: EstimatorSpec = None,
        num_classes: int | None = None,
        rng: RngLike = None,
        n_jobs: int = 1,
        progress: bool = False,
    ) -> TeacherEnsemble:
        """Partition the training set and train one teacher per part.

        All arguments are validated before any teacher is trained.

        Args:
            X: training features, shape (n, d) (float32 is kept as float32).
            y: integer labels ``0..C-1``, shape (n,).
            num_teachers: m; required for ``"random"``/``"contiguous"``, optional (must match)
                for an explicit partition.
            partition: ``"random"`` (PATE: a seeded uniformly random equal split),
                ``"contiguous"`` (CaPC with parties = consecutive blocks of rows) or a sequence
                of m disjoint index arrays (CaPC parties given by the caller; they need not
                cover every row).
            estimator: the teacher model: ``None`` (default ``"logistic"``:
                ``LogisticRegression(max_iter=50)``, the fastest sane choice for image teachers,
                see the module notes), a name in :data:`ESTIMATOR_NAMES`, an estimator instance
                (cloned per teacher) or a ``factory(seed)``.
            num_classes: C (default ``max(y) + 1``).
            rng: seed of the random partition and of the teachers' own randomness.
            n_jobs: joblib workers (local processes); 1 trains in this process, -1 uses all cores.
            progress: show a rich progress bar.

        Returns:
            The fitted :class:`TeacherEnsemble`.

        Raises:
            ValueError: ``num_teachers`` missing, < 1 or > n, bad labels, overlapping explicit
                partition, unknown estimator name, ``n_jobs`` = 0.
            TypeError: wrongly typed arguments.

        Example:
            >>> from dpaudit.data import load_digits
            >>> ds = load_digits(seed=0)
            >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=10, rng=0)
            >>> ens.votes(ds.X_test[:2]).sum(axis=1).tolist()
            [10, 10]
        """
        Xa = _as_features("X", X)
        ya, C = _as_labels("y", y, Xa.shape[0], num_classes)
        n = Xa.shape[0]
        n_jobs = _check_n_jobs(n_jobs)
        if isinstance(estimator, str):
            check_choice("estimator", estimator, ESTIMATOR_NAMES)
        elif isinstance(estimator, type):
            make_estimator(estimator)  # raises the TypeError that explains what to pass
        root = as_seed_sequence(rng)
        part_seed, teacher_seed = block_seeds(root, 2)
        if isinstance(partition, str):
            check_choice("partition", partition, ("random", "contiguous"))
            if num_teachers is None:
                raise ValueError(f"num_teachers is required with partition={partition!r}")
            m = check_positive_int("num_teachers", num_teachers)
            if m > n:
                raise ValueError(
                    f"num_teachers must be at most the number of training rows {n}, got {m}"
                )
            parts = make_partition(n, m, scheme=partition, rng=part_seed)
            scheme = partition
        else:
            parts = _check_explicit_partition(partition, n)
            if num_teachers is not None and check_positive_int("num_teachers", num_teachers) != len(
                parts
            ):
                raise ValueError(
                    f"num_teachers must equal the number of explicit parts {len(parts)}, "
                    f"got {num_teachers}"
                )
            scheme = "explicit"
        seeds = tuple(int(s.generate_state(1)[0]) for s in block_seeds(teacher_seed, len(parts)))
        data = _TrainingData(Xa, ya, Xa[:0], ya[:0])
        teachers = _train_many(estimator, data, parts, seeds, n_jobs=n_jobs, progress=progress)
        return cls(
            teachers=tuple(teachers),
            partitions=parts,
            teacher_seeds=seeds,
            num_classes=C,
            scheme=scheme,
            estimator=estimator,
            modified=(),
            _data=data,
        )

    # ----------------------------------------------------------------- neighbouring datasets

    def with_points(
        self,
        X_new: ArrayLike,
        y_new: ArrayLike,
        *,
        partition: int | None = None,
        rng: RngLike = None,
        exact_update: bool = True,
    ) -> TeacherEnsemble:
        """The ensemble trained on S' = S ∪ {new points}, all added to one part.

        Only the teacher of that part is retrained (same seed as before), so every other
        teacher is the very same fitted object — exactly the training phase on S' when the
        partition of S is kept (CaPC; PATE conditioned on its partition). A teacher that
        retrains by an exact update
        (:class:`~dpaudit.systems.private_prediction._ridge.RidgeTeacher`) is updated from its
        fitted state instead of refitted, which gives the same teacher up to rounding;
        ``exact_update=False`` forces the refit (to compare the two).

        Args:
            X_new: the added rows, shape (r, d) (or (d,) for one row).
            y_new: their labels, shape (r,) (or a scalar).
            partition: the part (teacher index) that receives the points; ``None`` draws it
                uniformly at random with ``rng`` (PATE: the new point lands in a random part).
            rng: randomness for ``partition=None``.

        Returns:
            A new :class:`TeacherEnsemble`; ``modified`` names the retrained teacher.

        Raises:
            ValueError: ``partition`` out of range, wrong feature count, bad labels.

        Example:
            >>> from dpaudit.data import load_digits
            >>> ds = load_digits(seed=0)
            >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=5, rng=0)
            >>> ens.with_points(ds.X_test[:1], [3], partition=2).modified
            (2,)
        """
        Xn = np.asarray(X_new)
        if Xn.ndim == 1:
            Xn = Xn[None, :]
        Xn = _as_features("X_new", Xn, num_features=self.num_features)
        yn = np.atleast_1d(np.asarray(y_new))
        yn, _ = _as_labels("y_new", yn, Xn.shape[0], self.num_classes)
        j = self._check_partition_index(partition, rng)
        start = self._data.num_points
        data = self._data.append(Xn, yn)
        new_part = np.concatenate([self.partitions[j], np.arange(start, start + Xn.shape[0])])
        new_part.setflags(write=False)
        teacher = self.teachers[j]
        if exact_update and updatable(teacher):
            with _one_blas_thread():
                new = teacher.with_rows(self._data.rows(self.partitions[j]), Xn, yn)
            return self._with_teacher(j, new, new_part, data)
        return self._replace_part(j, new_part, data)

    def with_point(
        self,
        x: ArrayLike,
        y: int,
        *,
        partition: int | None = None,
        rng: RngLike = None,
        exact_update: bool = True,
    ) -> TeacherEnsemble:
        """One added point (x, y) in part ``partition``: :meth:`with_points` for a single row.

        Example:
            >>> from dpaudit.data import load_digits
            >>> ds = load_digits(seed=0)
            >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=5, rng=0)
            >>> ens.with_point(ds.X_test[0], 3, partition=1).partitions[1].size
            271
        """
        return self.with_points(x, [y], partition=partition, rng=rng, exact_update=exact_update)

    def without_point(self, index: int) -> TeacherEnsemble:
        """The ensemble trained on S minus training row ``index`` (removal neighbour).

        Only the teacher whose part held the row is retrained.

        Args:
            index: a row index held by some part.

        Returns:
            A new :class:`TeacherEnsemble`; ``modified`` names the retrained teacher.

        Raises:
            ValueError: no part holds ``index``, or its part would become empty.
        """
        i = check_nonneg_int("index", index)
        j = self.partition_of(i)
        if j is None:
            raise ValueError(f"index must be a training row held by some part, got {index}")
        part = self.partitions[j]
        if part.size == 1:
            raise ValueError(f"index {index} is the only row of part {j}; it cannot be removed")
        new_part = part[part != i]
        new_part.setflags(write=False)
        return self._replace_part(j, new_part, self._data)

    def partition_of(self, index: int) -> int | None:
        """The part (teacher index) holding training row ``index``, or None."""
        for j, part in enumerate(self.partitions):
            k = np.searchsorted(part, index)
            if k < part.size and part[k] == index:
                return j
        return None

    def _check_partition_index(self, partition: int | None, rng: RngLike) -> int:
        m = self.num_teachers
        if partition is None:
            return int(as_generator(rng).integers(m))
        if isinstance(partition, (bool, np.bool_)) or not isinstance(partition, numbers.Integral):
            raise TypeError(f"partition must be a teacher index or None, got {partition!r}")
        if not 0 <= int(partition) < m:
            raise ValueError(f"partition must be in [0, {m}), got {partition}")
        return int(partition)

    def _replace_part(self, j: int, new_part: np.ndarray, data: _TrainingData) -> TeacherEnsemble:
        new_part = np.sort(new_part)
        new_part.setflags(write=False)
        with _one_blas_thread():
            teacher = _fit_teacher(
                self.estimator, data.rows(new_part), data.labels(new_part), self.teacher_seeds[j]
            )
        return self._with_teacher(j, teacher, new_part, data)

    def _with_teacher(
        self, j: int, teacher: Any, new_part: np.ndarray, data: _TrainingData
    ) -> TeacherEnsemble:
        teachers = list(self.teachers)
        teachers[j] = teacher
        parts = list(self.partitions)
        parts[j] = new_part
        return dataclasses.replace(
            self, teachers=tuple(teachers), partitions=tuple(parts), modified=(j,), _data=data
        )

    # ----------------------------------------------------------------- prediction phase

    @property
    def num_teachers(self) -> int:
        """Number of teachers m."""
        return len(self.teachers)

    @property
    def num_features(self) -> int:
        """Number of feature columns d."""
        return int(self._data.X.shape[1])

    @property
    def num_points(self) -> int:
        """Rows in the training set, including rows appended by ``with_point``."""
        return self._data.num_points

    def training_rows(self, index: ArrayLike) -> tuple[np.ndarray, IntArray]:
        """Features and labels of training rows (including appended ones) by index."""
        idx = np.atleast_1d(np.asarray(index, dtype=np.int64))
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_points):
            raise ValueError(f"index must lie in [0, {self.num_points}), got {index!r}")
        return self._data.rows(idx), self._data.labels(idx)

    def teacher_predictions(self, X: ArrayLike) -> IntArray:
        """Every teacher's label for every query (Alg. 1 GETPREDICTIONS, all m teachers).

        Repeated query rows are predicted once.

        Args:
            X: queries, shape (n, d) (or (d,) for one query).

        Returns:
            int64 array of shape (n, m): entry [j, i] is teacher i's label for query j.

        Raises:
            ValueError: wrong feature count, non-finite values.
        """
        Xa = np.asarray(X)
        if Xa.ndim == 1:
            Xa = Xa[None, :]
        Xa = _as_features("X", Xa, num_features=self.num_features)
        unique, inverse = _unique_rows(Xa)
        out = np.empty((unique.shape[0], self.num_teachers), dtype=np.int64)
        with _one_blas_thread():
            for i, teacher in enumerate(self.teachers):
                out[:, i] = np.asarray(teacher.predict(unique)).astype(np.int64)
        if out.size and (out.min() < 0 or out.max() >= self.num_classes):
            raise ValueError(f"a teacher predicted a label outside 0..{self.num_classes - 1}")
        return out[inverse]

    def votes(
        self,
        X: ArrayLike,
        *,
        teachers: int | ArrayLike | None = None,
        rng: RngLike = None,
    ) -> IntArray:
        """Vote histograms H(q) of the (chosen) teachers (Alg. 1 lines 11–12).

        Args:
            X: queries, shape (n, d) (or (d,) for one query).
            teachers: which teachers vote (Alg. 1 CHOOSE): ``None`` all m; an int k, a fresh
                uniformly random subset of k of the m teachers per query drawn with ``rng``; a
                1-d array of teacher indices used for every query; or an (n, k) array of
                indices per query.
            rng: randomness of the per-query subsets (only used when ``teachers`` is an int).

        Returns:
            int64 array (n, C); each row sums to the number of chosen teachers.

        Raises:
            ValueError: k > m or k < 1, indices out of range or repeated, shape mismatch.

        Example:
            >>> from dpaudit.data import load_digits
            >>> ds = load_digits(seed=0)
            >>> ens = TeacherEnsemble.fit(ds.X_train, ds.y_train, num_teachers=10, rng=0)
            >>> ens.votes(ds.X_test[:3], teachers=4, rng=1).sum(axis=1).tolist()
            [4, 4, 4]
        """
        mask = None if teachers is None else self._teacher_mask(teachers, X, rng)
        preds = self.teacher_predictions(X)
        return _histograms(preds, self.num_classes, mask)

    def _teacher_mask(self, teachers: int | ArrayLike, X: ArrayLike, rng: RngLike) -> np.ndarray:
        m = self.num_teachers
        n = 1 if np.ndim(X) == 1 else int(np.shape(X)[0])
        if isinstance(teachers, numbers.Integral) and not isinstance(teachers, (bool, np.bool_)):
            k = int(teachers)
            if not 1 <= k <= m:
                raise ValueError(f"teachers (k, teachers per query) must be in [1, m={m}], got {k}")
            mask = np.zeros((n, m), dtype=bool)
            if k == m:
                mask[:] = True
                return mask
            keys = as_generator(rng).random((n, m))
            chosen = np.argpartition(keys, k - 1, axis=1)[:, :k]
            np.put_along_axis(mask, chosen, True, axis=1)
            return mask
        ids = np.asarray(teachers)
        if ids.dtype.kind not in "iu" or ids.ndim not in (1, 2) or ids.size == 0:
            raise ValueError(
                "teachers must be None, an int k, or a non-empty 1-d/2-d array of teacher "
                f"indices, got {teachers!r}"
            )
        if ids.min() < 0 or ids.max() >= m:
            raise ValueError(
                f"teachers must hold indices in [0, {m}), got range [{ids.min()}, {ids.max()}]"
            )
        if ids.ndim == 1:
            ids = np.broadcast_to(ids, (n, ids.size))
        elif ids.shape[0] != n:
            raise ValueError(
                f"teachers as a 2-d array must have one row per query ({n}), got shape {ids.shape}"
            )
        if np.any(np.diff(np.sort(ids, axis=1), axis=1) == 0):
            raise ValueError("teachers must not repeat a teacher index within a query")
        mask = np.zeros((n, m), dtype=bool)
        np.put_along_axis(mask, ids, True, axis=1)
        return mask

    def teacher_accuracy(self, X: ArrayLike, y: ArrayLike) -> FloatArray:
        """Accuracy of each teacher on labelled rows, shape (m,)."""
        preds = self.teacher_predictions(X)
        ya, _ = _as_labels("y", y, preds.shape[0], self.num_classes)
        return (preds == ya[:, None]).mean(axis=0)

    def plurality_accuracy(self, X: ArrayLike, y: ArrayLike) -> float:
        """Accuracy of the noiseless plurality vote (ties to the lowest label)."""
        h = self.votes(X)
        ya, _ = _as_labels("y", y, h.shape[0], self.num_classes)
        return float(np.mean(np.argmax(h, axis=1) == ya))

    def __repr__(self) -> str:
        sizes = [p.size for p in self.partitions]
        return (
            f"TeacherEnsemble(num_teachers={self.num_teachers}, num_classes={self.num_classes}, "
            f"scheme={self.scheme!r}, estimator={self.estimator!r}, part sizes {min(sizes)}–"
            f"{max(sizes)}, modified={self.modified})"
        )


def _histograms(preds: np.ndarray, num_classes: int, mask: np.ndarray | None) -> IntArray:
    n = preds.shape[0]
    flat = preds + num_classes * np.arange(n, dtype=np.int64)[:, None]
    if mask is not None:
        flat = flat[mask]
    return (
        np.bincount(flat.ravel(), minlength=n * num_classes)
        .reshape(n, num_classes)
        .astype(np.int64)
    )
