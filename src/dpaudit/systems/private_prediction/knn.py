"""Private-kNN as a system under audit (Zhu, Yu, Chandraker, Wang 2020; Chadha et al. 2024,
"Auditing Private Prediction", arXiv:2402.09403, §6, App. D.3).

Every training point is a teacher whose vote is its label. For each query the system draws a
fresh **Poisson subsample** of the training set (each point kept independently with
probability γ — exactly the sampling the accountant assumes), takes the k nearest kept
points in a feature space (squared Euclidean distance, ties by training index), and answers
with the Gaussian noisy argmax (GNMax, σ) of their label histogram.

**Claim** (data-independent only, as in the paper): per answered query, the RDP of the
Poisson-subsampled Gaussian mechanism with rate γ and noise multiplier z = σ/√2 (the vote
histogram has L2 sensitivity √2 given the sample: an added point displaces the k-th voter),
Mironov, Talwar, Zhang 2019 (arXiv:1908.10530), via
:func:`dpaudit.accounting.subsampled_gaussian_rdp`.
It holds for this system: given the sample of the other points, S′ answers from
``(1−γ)·N(H) + γ·N(H + e_{y′} − e_{y_k})`` against S's ``N(H)``, a subsampled-Gaussian pair
with shift ≤ √2; joint convexity over the sample and post-processing by the argmax do the rest.
The data-dependent analysis of PATE does not apply; ``query_rdp`` returns the
data-independent claim for both analyses.

**Audit plumbing** (:class:`dpaudit.systems.PrivatePredictionSystem`): ``train`` ranks the R
nearest training points of every query once (:func:`ranked_neighbours`, R from
:func:`rank_horizon`) and records N_g draws of the k voters' labels; ``retrain`` finds the rank
r_q of each crafted point for its evaluation queries (no model is retrained: adding a point
*is* the training phase) and draws R subsamples with the point to count how often it changed
the votes. The histogram models are :mod:`dpaudit.attacks.knn` (``"knn-multinomial"``, the
paper's, and ``"knn-subsample"``, the exact law of the subsampled votes).

``sampling="with-replacement"`` reproduces the reference implementation, which draws
``round(γ·n)`` teachers with replacement but claims the Poisson-subsampling guarantee (a
point can vote several times): a planted bug for audits, not a recommended setting.

Example:
    >>> from dpaudit.mechanisms import GNMax
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)); y = (X[:, 0] > 0).astype(int)
    >>> knn = PrivateKNN(GNMax(2.0), PrivateKNNOptions(k=20, sampling_rate=0.5))
    >>> knn.fit(X, y).predict([[2.0, 0.0], [-2.0, 0.0]], rng=0).tolist()
    [1, 0]
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import threading
import weakref
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from dpaudit._results import Claim, Curve, ResultMixin
from dpaudit._rng import as_generator, block_seeds
from dpaudit._settings import from_mapping, option
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import check_choice, check_nonneg_int, check_positive_int
from dpaudit.mechanisms.values import GNMax
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.private_prediction._cell import PrivatePredictionCell
from dpaudit.systems.private_prediction._knn_core import (
    RANK_TAIL,
    SAMPLINGS,
    RankedNeighbours,
    check_features,
    check_sampling_rate,
    draw_votes,
    histograms,
    knn_votes_loop,
    kth_neighbour_probabilities,
    poison_ranks,
    poisson_topk_ranks,
    rank_horizon,
    ranked_neighbours,
    replacement_topk_ranks,
    short_sample_probability,
    topk_inclusion_probability,
)

__all__ = [
    "FEATURE_TRANSFORMS",
    "KNN_MODELS",
    "RANK_TAIL",
    "SAMPLINGS",
    "AffineFeatures",
    "FittedKNN",
    "KNNInstantiations",
    "KNNNeighbourhood",
    "PrivateKNN",
    "PrivateKNNOptions",
    "RankedNeighbours",
    "draw_votes",
    "histograms",
    "knn_context",
    "knn_votes_loop",
    "kth_neighbour_probabilities",
    "poison_ranks",
    "poisson_topk_ranks",
    "rank_horizon",
    "ranked_neighbours",
    "replacement_topk_ranks",
    "subsampled_gaussian_claim",
    "topk_inclusion_probability",
]

#: Feature transforms fitted on the training rows (affine, so weighted averages of inputs map
#: to the same weighted averages of features).
FEATURE_TRANSFORMS: tuple[str, ...] = ("identity", "standardize", "pca")
#: Histogram models (option ``model``) and their names in ``dpaudit.attacks.HISTOGRAM_MODELS``.
KNN_MODELS: dict[str, str] = {"subsample": "knn-subsample", "paper": "knn-multinomial"}


@dataclasses.dataclass(frozen=True)
class PrivateKNNOptions:
    """Private-kNN's own settings (TOML ``[system.options.private-knn]``).

    The shared system settings give σ (``system.sigma``); ``teachers`` and
    ``teachers_per_query`` do not apply (every training point is a teacher, k votes).
    """

    k: int = option(200, help="nearest kept neighbours that vote per query")
    sampling_rate: float = option(0.2, help="Poisson subsampling rate gamma in (0, 1]")
    features: str = option("identity", help="feature transform: identity, standardize or pca")
    pca_components: int = option(64, help="components kept by features = 'pca'")
    sampling: str = option(
        "poisson",
        help="poisson (what the accountant assumes) or with-replacement (the reference code: "
        "round(gamma n) teachers drawn with replacement; a planted bug)",
    )
    model: str = option(
        "subsample",
        help="histogram model: subsample (exact law of the subsampled votes, Monte Carlo over "
        "subsamples) or paper (multinomial, Chadha et al. 2024 sec. 6)",
    )
    model_draws: int = option(2048, help="subsample draws per query of the histogram models")

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_positive_int("k", self.k))
        object.__setattr__(self, "sampling_rate", check_sampling_rate(self.sampling_rate))
        check_choice("features", self.features, FEATURE_TRANSFORMS)
        check_positive_int("pca_components", self.pca_components)
        check_choice("sampling", self.sampling, SAMPLINGS)
        check_choice("model", self.model, tuple(KNN_MODELS))
        check_positive_int("model_draws", self.model_draws)
        if self.sampling == "with-replacement" and self.model == "paper":
            raise ValueError(
                "model='paper' assumes Poisson subsampling; use model='subsample' with "
                "sampling='with-replacement'"
            )


# =============================================================================================
# Feature transform
# =============================================================================================


@dataclasses.dataclass(frozen=True, eq=False)
class AffineFeatures:
    """``x ↦ (x − shift)·matrix``, fitted on the training rows (identity, z-score or PCA).

    Attributes:
        kind: ``"identity"``, ``"standardize"`` or ``"pca"``.
        shift: ``(d,)`` (zeros for identity).
        matrix: ``(d, d′)`` or None (identity).
    """

    kind: str
    shift: FloatArray
    matrix: FloatArray | None

    @classmethod
    def fit(cls, X: np.ndarray, kind: str, components: int = 64) -> AffineFeatures:
        """Fit on training features ``X`` (float64, finite)."""
        d = X.shape[1]
        if kind == "identity":
            return cls(kind, np.zeros(d), None)
        mean = X.mean(axis=0)
        if kind == "standardize":
            sd = X.std(axis=0)
            return cls(kind, mean, np.diag(np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1), 1.0)))
        c = min(components, d, X.shape[0])
        _, _, vt = np.linalg.svd(X - mean, full_matrices=False)
        return cls(kind, mean, vt[:c].T.copy())

    def __call__(self, X: np.ndarray) -> np.ndarray:
        if self.matrix is None:
            return X
        return (X - self.shift) @ self.matrix


# =============================================================================================
# Training-phase records
# =============================================================================================


@dataclasses.dataclass(frozen=True, eq=False)
class KNNInstantiations:
    """What Private-kNN's training phase gives the audit (``PrivateKNN.train``).

    Attributes:
        features: transformed training features ``(n, d′)``.
        labels: training labels ``(n,)``.
        inputs: the training rows as given (input space; crafters combine them).
        query_inputs: the query rows as given.
        queries: transformed query features ``(n_q, d′)``.
        neighbours: the queries' ranked neighbours (:class:`RankedNeighbours`).
        predictions: ``(N_g, n_q, k)`` labels of the k voters in N_g subsample draws.
        num_classes: C.
        k: voters per query.
        sampling_rate: γ.
        sampling: ``"poisson"`` or ``"with-replacement"``.
        transform: the fitted :class:`AffineFeatures`.
        model_draws: subsample draws per query of the histogram models.
        seed: the seed the models' draws derive from (one stream per query column).
        model_cache: what the histogram models share per query column (the S-side output
            estimate, the same for every added point).
    """

    features: FloatArray
    labels: IntArray
    inputs: np.ndarray
    query_inputs: np.ndarray
    queries: FloatArray
    neighbours: RankedNeighbours
    predictions: IntArray
    num_classes: int
    k: int
    sampling_rate: float
    sampling: str
    transform: AffineFeatures
    model_draws: int
    seed: np.random.SeedSequence
    model_cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def num_points(self) -> int:
        """n, the training-set size (number of teachers)."""
        return int(self.features.shape[0])

    @property
    def depth(self) -> int:
        """R, ranked neighbours per query."""
        return self.neighbours.depth


@dataclasses.dataclass(frozen=True, eq=False)
class KNNNeighbourhood(ResultMixin):
    """An added point and the evaluation queries it may enter (``PrivateKNN.retrain``).

    Attributes:
        point: its transformed features ``(d′,)``.
        label: its label y′.
        ranks: its rank r_q among the training points for each evaluation query, ``(n_eval,)``.
        neighbour_labels: the evaluation queries' ranked neighbour labels ``(n_eval, R)``.
        changed: ``(R_draws, n_eval)`` whether it changed the votes in each simulated draw.
    """

    point: FloatArray
    label: int
    ranks: IntArray
    neighbour_labels: IntArray
    changed: np.ndarray


# =============================================================================================
# Context for crafters that need the training set (see dpaudit.attacks.knn)
# =============================================================================================

_CONTEXTS: dict[bytes, weakref.ref] = {}
_CONTEXT_LOCK = threading.Lock()


def _row_key(row: ArrayLike) -> bytes:
    """Identity of a row's values (float32 and float64 copies of one row share a key)."""
    a = np.ascontiguousarray(np.asarray(row, dtype=np.float64))
    return hashlib.sha256(str(a.shape).encode() + a.tobytes()).digest()


def _register_context(queries: np.ndarray, inst: KNNInstantiations) -> None:
    with _CONTEXT_LOCK:
        for key, ref in list(_CONTEXTS.items()):
            if ref() is None:
                del _CONTEXTS[key]
        _CONTEXTS[_row_key(queries[-1])] = weakref.ref(inst)


def knn_context(source_row: ArrayLike) -> KNNInstantiations | None:
    """The most recent Private-kNN training phase whose last query row is ``source_row``.

    The private-prediction pipeline hands a crafter only the source query; crafters that
    search the training set for a poison (Chadha et al. 2024 App. D.3) find the training
    phase through the source row, which is the last row of the queries ``train`` received.
    Held by weak reference.
    """
    with _CONTEXT_LOCK:
        ref = _CONTEXTS.get(_row_key(source_row))
    return None if ref is None else ref()


# =============================================================================================
# The system
# =============================================================================================


def _check_labels(y: ArrayLike, n: int, num_classes: int | None) -> tuple[np.ndarray, int]:
    arr = np.asarray(y)
    if arr.shape != (n,):
        raise ValueError(f"y must have shape ({n},) (one label per training row), got {arr.shape}")
    if arr.size and (arr.dtype.kind not in "iub" or arr.min() < 0):
        raise ValueError("y must hold non-negative integer labels")
    c = (
        int(arr.max()) + 1
        if num_classes is None
        else check_positive_int("num_classes", num_classes)
    )
    if c < 2 or (arr.size and arr.max() >= c):
        raise ValueError(f"y must hold labels in 0..num_classes-1 with num_classes >= 2, got {c}")
    return arr.astype(np.int64), c


@dataclasses.dataclass(frozen=True)
class PrivateKNN:
    """Private-kNN (module notes): Poisson subsample, k nearest kept points, GNMax.

    Attributes:
        mechanism: the noisy argmax it runs, :class:`dpaudit.mechanisms.GNMax` (σ > 0).
        options: :class:`PrivateKNNOptions` (k, γ, features, sampling, model).

    Raises:
        TypeError: a mechanism other than GNMax, options of another type.
    """

    mechanism: GNMax
    options: PrivateKNNOptions = dataclasses.field(default_factory=PrivateKNNOptions)

    name: ClassVar[str] = "private-knn"
    placement: ClassVar[str] = "random"
    stream_id: ClassVar[int | None] = 3
    claim_analysis: ClassVar[str] = "data-independent"
    num_teachers: ClassVar[int] = 0  # every training point: known once trained

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, GNMax):
            raise TypeError(f"mechanism must be GNMax, got {type(self.mechanism).__name__}")
        if not isinstance(self.options, PrivateKNNOptions):
            raise TypeError(f"options must be PrivateKNNOptions, got {type(self.options).__name__}")

    @property
    def k(self) -> int:
        """Voters per query."""
        return self.options.k

    @property
    def sampling_rate(self) -> float:
        """γ."""
        return self.options.sampling_rate

    @property
    def histogram_model(self) -> str:
        """Name in :data:`dpaudit.attacks.HISTOGRAM_MODELS`: knn-subsample or knn-multinomial."""
        return KNN_MODELS[self.options.model]

    def check_num_points(self, num_points: int) -> None:
        """Raise ValueError unless a γ-sample of ``num_points`` holds k points (module notes).

        k must not exceed the expected sample γ·n, and the sample must hold fewer than k
        points with probability at most 1e-12 (so the k voters exist).
        """
        n = check_positive_int("num_points", num_points)
        k, g = self.k, self.sampling_rate
        if k > g * n:
            raise ValueError(
                f"k={k} is larger than the expected subsample gamma*n = {g}*{n} = {g * n:g}; "
                "lower k or raise sampling_rate"
            )
        p = short_sample_probability(k, g, n)
        if self.options.sampling == "poisson" and p > RANK_TAIL:
            raise ValueError(
                f"k={k} is too close to the expected subsample gamma*n = {g * n:g}: a sample "
                f"has fewer than k points with probability {p:.3g} (> {RANK_TAIL:g}); lower k "
                "or raise sampling_rate"
            )

    # --------------------------------------------------------------------------- training

    def _prepare(self, X: ArrayLike, y: ArrayLike, num_classes: int | None):
        x_in = np.asarray(X)
        x = check_features("X", x_in)
        labels, c = _check_labels(y, x.shape[0], num_classes)
        self.check_num_points(x.shape[0])
        transform = AffineFeatures.fit(x, self.options.features, self.options.pca_components)
        return x_in, transform(x), labels, c, transform

    def _depth(self, n: int) -> int:
        g = self.sampling_rate
        if self.options.sampling == "with-replacement":
            g = min(1.0, max(1, round(g * n)) / n)
        return rank_horizon(self.k, g, n)

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
    ) -> KNNInstantiations:
        """Rank every query's nearest training points and draw N_g sets of k voters.

        Args:
            X: training features ``(n, d)`` (embeddings, pixels, …).
            y: labels ``(n,)``.
            queries: query rows ``(n_q, d)`` (the pipeline's last row is the poisoning source).
            instantiations: N_g ≥ 1 subsample draws recorded in ``predictions``.
            num_classes: C (default ``max(y) + 1``).
            rng: seed.
            progress: unused (kept for the protocol).

        Returns:
            :class:`KNNInstantiations`.

        Raises:
            ValueError, TypeError: NaN/inf or non-numeric features, widths that differ, bad
                labels, k too large for the subsample, N_g < 1 — before any work.
        """
        ng = check_positive_int("instantiations", instantiations)
        x_in, feats, labels, c, transform = self._prepare(X, y, num_classes)
        q_in = np.asarray(queries)
        if q_in.ndim == 1:
            q_in = q_in[None, :]
        q = transform(check_features("queries", q_in, width=x_in.shape[1]))
        draw_seed, model_seed = block_seeds(rng, 2)
        depth = self._depth(feats.shape[0])
        ranked = ranked_neighbours(feats, labels, q, depth)
        gen = as_generator(draw_seed)
        preds = np.stack(
            [self._draw_voter_labels(ranked.labels, feats.shape[0], gen) for _ in range(ng)]
        )
        inst = KNNInstantiations(
            features=feats,
            labels=labels,
            inputs=x_in,
            query_inputs=q_in,
            queries=q,
            neighbours=ranked,
            predictions=preds,
            num_classes=c,
            k=self.k,
            sampling_rate=self.sampling_rate,
            sampling=self.options.sampling,
            transform=transform,
            model_draws=self.options.model_draws,
            seed=model_seed,
        )
        _register_context(q_in, inst)
        return inst

    def _draw_voter_labels(self, labels: IntArray, n: int, gen: np.random.Generator) -> IntArray:
        b, depth = labels.shape
        if self.options.sampling == "poisson":
            ranks = poisson_topk_ranks(b, self.k, self.sampling_rate, depth, gen)
        else:
            m = max(1, round(self.sampling_rate * n))
            ranks = replacement_topk_ranks(b, self.k, m, n, depth, gen)
        return np.take_along_axis(labels, ranks - 1, axis=1)

    def retrain(
        self,
        trained: KNNInstantiations,
        points: ArrayLike,
        labels: ArrayLike,
        *,
        retrainings: int,
        eval_rows: Sequence[ArrayLike] | None = None,
        teachers: ArrayLike | None = None,
        rng: RngLike = None,
        progress: Any = None,
    ) -> list[KNNNeighbourhood]:
        """The rank of each added point for its evaluation queries, and R simulated draws.

        Adding a point is Private-kNN's whole training phase, so nothing is refitted: for
        each point and evaluation query, r_q = 1 + the training points at distance ≤ the
        point's; ``retrainings`` subsample draws with the point record whether it changed
        the votes (the flip estimate of the audit).

        Args:
            trained: from :meth:`train`.
            points: added rows in the input space ``(P, d)``.
            labels: their labels ``(P,)``.
            retrainings: simulated draws R ≥ 1 per point.
            eval_rows: per point, its evaluation query rows (default: the point itself, the
                repeated query of an adversarial distinguisher).
            teachers: must be None (a point is its own teacher).
            rng: seed.
            progress: unused.

        Returns:
            One :class:`KNNNeighbourhood` per point.
        """
        if teachers is not None:
            raise ValueError("teachers must be None for private-knn (each point is a teacher)")
        r_count = check_positive_int("retrainings", retrainings)
        width = trained.inputs.shape[1]
        pts = check_features("points", np.atleast_2d(np.asarray(points)), width=width)
        labs = np.atleast_1d(np.asarray(labels, dtype=np.int64))
        if labs.shape != (pts.shape[0],) or labs.min() < 0 or labs.max() >= trained.num_classes:
            raise ValueError(
                f"labels must hold one label in 0..{trained.num_classes - 1} per point"
            )
        if eval_rows is not None and len(eval_rows) != pts.shape[0]:
            raise ValueError(f"eval_rows must have one entry per point ({pts.shape[0]})")
        seeds = block_seeds(rng, pts.shape[0])
        out = []
        for i in range(pts.shape[0]):
            rows = np.atleast_2d(
                np.asarray(points)[i : i + 1] if eval_rows is None else eval_rows[i]
            )
            ranked, rows_f = _ranked_for(trained, rows)
            point = trained.transform(pts[i : i + 1])[0]
            ranks = poison_ranks(ranked, rows_f, point)
            gen = as_generator(seeds[i])
            changed = np.stack(
                [
                    self._changed(trained, ranked.labels, ranks, int(labs[i]), gen)
                    for _ in range(r_count)
                ]
            )
            out.append(KNNNeighbourhood(point, int(labs[i]), ranks, ranked.labels, changed))
        return out

    def _changed(self, trained, labels, ranks, label, gen) -> np.ndarray:
        h, h2 = draw_votes(
            labels,
            k=self.k,
            sampling_rate=self.sampling_rate,
            num_classes=trained.num_classes,
            gen=gen,
            sampling=self.options.sampling,
            num_points=trained.num_points,
            point_rank=ranks,
            point_label=label,
        )
        return np.any(h != h2, axis=1)

    # ------------------------------------------------------------------------------ claim

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
        """Claimed RDP of one answered query: the Poisson-subsampled Gaussian with rate γ and
        noise multiplier σ/√2 (Mironov, Talwar, Zhang 2019, arXiv:1908.10530; Zhu et al.
        2020), for either analysis (Private-kNN has no data-dependent analysis; the
        histograms are ignored). See :func:`subsampled_gaussian_claim`."""
        check_choice("analysis", analysis, ("data-independent", "data-dependent"))
        lam = np.asarray(orders, dtype=np.float64)
        return subsampled_gaussian_claim(
            self.sampling_rate, self.mechanism.sigma / np.sqrt(2.0), tuple(lam.ravel().tolist())
        ).reshape(lam.shape)

    def claim(self, orders: ArrayLike | None = None, *, delta: float | None = None) -> Claim:
        """The data-independent claim of one answered query (RDP curve, ε at ``delta``).

        Example:
            >>> knn = PrivateKNN(GNMax(30.0))
            >>> round(float(knn.claim([2.0]).rdp.epsilons[0]), 8)
            8.898e-05
        """
        from dpaudit.accounting import DEFAULT_ORDERS, RDPCurve

        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=np.float64)
        rdp = self.query_rdp(lam)
        eps = None if delta is None else float(RDPCurve(lam, rdp).to_dp(delta).epsilon)
        return Claim(
            analysis="data-independent",
            source="Poisson-subsampled Gaussian, Mironov, Talwar, Zhang 2019, arXiv:1908.10530 "
            "(Private-kNN, Zhu et al. 2020)",
            epsilon=eps,
            delta=delta,
            rdp=Curve(lam, rdp),
            conversion=None if delta is None else "balle2020",
        )

    # ------------------------------------------------------------------------- deployment

    def fit(self, X: ArrayLike, y: ArrayLike, *, num_classes: int | None = None) -> FittedKNN:
        """The deployable interface on training set (X, y) (validated, transform fitted)."""
        x_in, feats, labels, c, transform = self._prepare(X, y, num_classes)
        return FittedKNN(self, feats, labels, c, transform, x_in.shape[1])


@dataclasses.dataclass(frozen=True, eq=False)
class FittedKNN:
    """Private-kNN fitted on a training set: votes and noisy answers per query.

    ``votes`` and ``predict`` rank the queries' neighbours (exact), then draw a fresh
    subsample per query (Poisson, or with replacement as configured).
    """

    system: PrivateKNN
    features: FloatArray
    labels: IntArray
    num_classes: int
    transform: AffineFeatures
    input_width: int

    def _ranked(self, queries: ArrayLike) -> RankedNeighbours:
        q = check_features("queries", np.atleast_2d(np.asarray(queries)), width=self.input_width)
        n = self.features.shape[0]
        return ranked_neighbours(
            self.features, self.labels, self.transform(q), self.system._depth(n)
        )

    def votes(self, queries: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """One subsample draw per query: the k voters' histograms ``(n_q, C)``."""
        ranked = self._ranked(queries)
        lab = self.system._draw_voter_labels(
            ranked.labels, self.features.shape[0], as_generator(rng)
        )
        return histograms(lab, self.num_classes)

    def predict(self, queries: ArrayLike, *, rng: RngLike = None) -> IntArray:
        """Noisy-argmax answers (GNMax with the system's σ) to each query."""
        gen = as_generator(rng)
        h = self.votes(queries, rng=gen).astype(np.float64)
        noisy = h + self.system.mechanism.sigma * gen.standard_normal(h.shape)
        return noisy.argmax(axis=1).astype(np.int64)

    def with_point(self, x: ArrayLike, label: int) -> FittedKNN:
        """The interface on S ∪ {(x, label)} (the point is appended: last index)."""
        p = check_features("x", np.atleast_2d(np.asarray(x)), width=self.input_width)
        lab = check_nonneg_int("label", label)
        if lab >= self.num_classes:
            raise ValueError(f"label must be in 0..{self.num_classes - 1}, got {label}")
        return dataclasses.replace(
            self,
            features=np.vstack([self.features, self.transform(p)]),
            labels=np.append(self.labels, lab),
        )


def _ranked_for(
    trained: KNNInstantiations, rows: np.ndarray
) -> tuple[RankedNeighbours, np.ndarray]:
    """Ranked neighbours and transformed features of query rows (input space), reusing the
    training phase's where the rows are its queries."""
    width = trained.inputs.shape[1]
    rows = np.asarray(rows)
    index = {_row_key(r): i for i, r in enumerate(trained.query_inputs)}
    match = [index.get(_row_key(r)) for r in rows]
    if all(m is not None for m in match):
        sel = np.array(match, dtype=np.int64)
        return trained.neighbours.rows(sel), trained.queries[sel]
    rows_f = trained.transform(check_features("eval_rows", rows, width=width))
    return ranked_neighbours(trained.features, trained.labels, rows_f, trained.depth), rows_f


@functools.lru_cache(maxsize=64)
def _subsampled_curve(rate: float, z: float, orders: tuple[float, ...]) -> np.ndarray:
    from dpaudit.accounting import subsampled_gaussian_rdp

    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)  # dp-accounting logs non-convergence; handled below
    try:
        curve = subsampled_gaussian_rdp(rate, z, np.asarray(orders))
    finally:
        absl.setLevel(level)
    return np.asarray(curve.epsilons, dtype=np.float64)


def subsampled_gaussian_claim(rate: float, z: float, orders: tuple[float, ...]) -> FloatArray:
    """RDP of the Poisson-subsampled Gaussian at ``orders``, made monotone from above.

    :func:`dpaudit.accounting.subsampled_gaussian_rdp` (dp-accounting) is exact at integer
    orders (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3); for fractional orders
    below 2 its series can fail to converge (it then logs a warning and returns a value above
    ρ(2), or ∞). RDP is non-decreasing in the order (Mironov 2017, arXiv:1702.07476,
    Prop. 9), so ``min_{β ≥ α} ρ(β)`` over the grid plus the next integer order is a valid
    upper bound at every α, equal to ρ wherever ρ is already monotone.

    Example:
        >>> subsampled_gaussian_claim(0.2, 30 / np.sqrt(2), (1.5, 2.0)).round(10).tolist()
        [8.89838e-05, 8.89838e-05]
    """
    lam = np.asarray(orders, dtype=np.float64)
    ceil = np.unique(np.ceil(lam))
    grid = np.unique(np.concatenate([lam, ceil]))
    rho = _subsampled_curve(float(rate), float(z), tuple(grid.tolist()))
    mono = np.minimum.accumulate(np.where(np.isnan(rho), np.inf, rho)[::-1])[::-1]
    return mono[np.searchsorted(grid, lam)].copy()


def _from_cell(cell: PrivatePredictionCell) -> PrivateKNN:
    """Private-kNN from its :class:`PrivatePredictionCell` (σ, ``options["private-knn"]``)."""
    opts = from_mapping(PrivateKNNOptions, dict(cell.options.get("private-knn", {})))
    return PrivateKNN(GNMax(cell.sigma), opts)


SYSTEMS.register(
    "private-knn",
    SystemFactory(PrivatePredictionCell, _from_cell),
    tags=("private-prediction",),
)
