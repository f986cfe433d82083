"""Clients of a federated system: a labelled dataset split across users, and their model.

* :class:`FederatedData` — one labelled array per client (a user's examples), the class count.
* :func:`dirichlet_split` — the non-IID split of Hsu, Qi & Brown 2019 (arXiv:1909.06335,
  §3): each client's label proportions are drawn from ``Dirichlet(α · 1)``; small α gives
  clients dominated by one or two labels, large α approaches an IID split.
* :func:`local_update` — a client's local training: full-batch gradient steps on the mean
  cross-entropy from the server's parameters; the update it returns is ``θ_local − θ``
  (McMahan et al. 2017, arXiv:1602.05629, Alg. 1, ClientUpdate).
* :func:`initial_parameters`, :func:`predict_logits` — the model's starting point and its
  outputs.

Two models, their parameters a flat float64 vector: softmax regression over ``f`` features and
``K`` classes (``hidden = 0``; ``d = fK + K``, weights row-major, then the biases; it starts
at 0), or a multilayer perceptron with one hidden layer of ``h`` ReLU units (``hidden = h``;
``d = fh + h + hK + K``: W₁ row-major, b₁, W₂ row-major, b₂; W₁ and W₂ start He-normal, He,
Zhang, Ren & Sun 2015, arXiv:1502.01852, the biases at 0).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import check_array, check_positive, check_positive_int

__all__ = [
    "FederatedData",
    "dirichlet_split",
    "initial_parameters",
    "local_update",
    "num_parameters",
    "predict_logits",
]


@dataclasses.dataclass(frozen=True)
class FederatedData:
    """Examples held by each client.

    Attributes:
        features: one ``(n_i, f)`` float64 array per client (``n_i ≥ 1``).
        labels: one ``(n_i,)`` int64 array per client, in ``0..num_classes-1``.
        num_classes: K.
    """

    features: tuple[np.ndarray, ...]
    labels: tuple[np.ndarray, ...]
    num_classes: int

    def __post_init__(self) -> None:
        k = check_positive_int("num_classes", self.num_classes)
        if k < 2:
            raise ValueError(f"num_classes must be at least 2, got {k}")
        if len(self.features) != len(self.labels) or not self.features:
            raise ValueError(
                f"features and labels must list the same clients (at least one), got "
                f"{len(self.features)} and {len(self.labels)}"
            )
        xs, ys, width = [], [], None
        for i, (x, y) in enumerate(zip(self.features, self.labels, strict=True)):
            x = check_array(f"features[{i}]", x, ndim=2)
            y = np.asarray(y)
            if width is None:
                width = x.shape[1]
            if x.shape[1] != width or x.shape[0] < 1 or y.shape != (x.shape[0],):
                raise ValueError(
                    f"features[{i}] must be (n, {width}) with n >= 1 and labels[{i}] (n,), got "
                    f"{x.shape} and {y.shape}"
                )
            if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= k:
                raise ValueError(f"labels[{i}] must be integers in 0..{k - 1}")
            xs.append(np.ascontiguousarray(x, dtype=np.float64))
            ys.append(y.astype(np.int64))
        object.__setattr__(self, "features", tuple(xs))
        object.__setattr__(self, "labels", tuple(ys))

    @property
    def num_clients(self) -> int:
        """N, the number of clients."""
        return len(self.features)

    @property
    def num_features(self) -> int:
        """f, the feature count."""
        return int(self.features[0].shape[1])

    @property
    def dimension(self) -> int:
        """d = fK + K, the softmax-regression parameter count."""
        return num_parameters(self.num_features, self.num_classes)

    @property
    def mean_examples(self) -> float:
        """The mean number of examples per client."""
        return float(np.mean([y.size for y in self.labels]))


def num_parameters(num_features: int, num_classes: int, hidden: int = 0) -> int:
    """d = fK + K of softmax regression (``hidden = 0``), or fh + h + hK + K of the MLP."""
    f, k, h = int(num_features), int(num_classes), int(hidden)
    return f * k + k if h == 0 else f * h + h + h * k + k


def initial_parameters(
    num_features: int, num_classes: int, hidden: int = 0, *, rng: RngLike = None
) -> np.ndarray:
    """The model's starting parameters: 0 for softmax regression (no draw); for the MLP,
    W₁ ~ N(0, 2/f) and W₂ ~ N(0, 2/h) (He et al. 2015, arXiv:1502.01852, Eq. 10), biases 0.

    Example:
        >>> initial_parameters(3, 2).tolist()
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        >>> initial_parameters(3, 2, 4, rng=0).shape  # 3·4 + 4 + 4·2 + 2
        (26,)
    """
    f, k, h = int(num_features), int(num_classes), int(hidden)
    theta = np.zeros(num_parameters(f, k, h))
    if h:
        g = as_generator(rng)
        theta[: f * h] = g.normal(0.0, np.sqrt(2.0 / f), f * h)
        start = f * h + h
        theta[start : start + h * k] = g.normal(0.0, np.sqrt(2.0 / h), h * k)
    return theta


def _mlp_views(theta: np.ndarray, f: int, k: int, h: int) -> tuple[np.ndarray, ...]:
    """``(W₁, b₁, W₂, b₂)`` as views of the flat vector."""
    w1 = theta[: f * h].reshape(f, h)
    b1 = theta[f * h : f * h + h]
    w2 = theta[f * h + h : f * h + h + h * k].reshape(h, k)
    b2 = theta[f * h + h + h * k :]
    return w1, b1, w2, b2


def predict_logits(theta: ArrayLike, X: ArrayLike, num_classes: int, hidden: int = 0) -> np.ndarray:
    """The model's logits on ``X`` (softmax regression, or the MLP when ``hidden`` > 0)."""
    x = np.asarray(X, dtype=np.float64)
    t = np.asarray(theta, dtype=np.float64)
    f, k, h = x.shape[1], int(num_classes), int(hidden)
    if h == 0:
        return x @ t[: f * k].reshape(f, k) + t[f * k :]
    w1, b1, w2, b2 = _mlp_views(t, f, k, h)
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def dirichlet_split(
    X: ArrayLike, y: ArrayLike, num_clients: int, *, alpha: float, rng: RngLike = None
) -> FederatedData:
    """Split ``(X, y)`` across ``num_clients`` clients, label proportions ~ Dirichlet(α).

    For each class, its examples are shuffled and dealt to the clients in proportions drawn
    from ``Dirichlet(α · 1_N)`` (Hsu, Qi & Brown 2019, arXiv:1909.06335, §3). A client left
    empty receives one example from the largest client, so every client holds data.

    Args:
        X: ``(n, f)`` features.
        y: ``(n,)`` integer labels ``0..K-1``.
        num_clients: N ≤ n.
        alpha: concentration α > 0.
        rng: seed of the split.

    Returns:
        :class:`FederatedData`.

    Raises:
        ValueError: N > n, α ≤ 0, or mismatched shapes.

    Example:
        >>> g = np.random.default_rng(0)
        >>> data = dirichlet_split(g.normal(size=(100, 3)), g.integers(0, 2, 100), 5,
        ...                        alpha=0.5, rng=0)
        >>> data.num_clients, sum(y.size for y in data.labels)
        (5, 100)
    """
    X = check_array("X", X, ndim=2)
    y = np.asarray(y)
    if y.shape != (X.shape[0],) or not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
        raise ValueError(f"y must hold ({X.shape[0]},) non-negative integer labels, got {y.shape}")
    n = check_positive_int("num_clients", num_clients)
    if n > X.shape[0]:
        raise ValueError(f"num_clients={n} exceeds the {X.shape[0]} examples")
    a = check_positive("alpha", alpha)
    g = as_generator(rng)
    owners = np.empty(y.size, dtype=np.int64)
    for label in np.unique(y):
        rows = g.permutation(np.flatnonzero(y == label))
        share = g.dirichlet(np.full(n, a))
        cuts = np.floor(np.cumsum(share)[:-1] * rows.size).astype(np.int64)
        for client, part in enumerate(np.split(rows, cuts)):
            owners[part] = client
    for client in range(n):  # every client holds at least one example
        if not np.any(owners == client):
            donor = int(np.argmax(np.bincount(owners, minlength=n)))
            owners[np.flatnonzero(owners == donor)[0]] = client
    parts = [np.flatnonzero(owners == c) for c in range(n)]
    return FederatedData(tuple(X[p] for p in parts), tuple(y[p] for p in parts),
                         int(y.max()) + 1)  # fmt: skip


def local_update(
    theta: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    num_classes: int,
    *,
    steps: int,
    lr: float,
    hidden: int = 0,
) -> np.ndarray:
    """``θ_local − θ`` after ``steps`` full-batch gradient steps (softmax regression, or the
    MLP when ``hidden`` > 0).

    The loss is the mean cross-entropy of the client's examples; the gradient of the weights
    is ``Xᵀ(softmax(XW + b) − onehot(y)) / n`` and of the biases the column means of the
    residual (McMahan et al. 2017, arXiv:1602.05629, Alg. 1); the MLP back-propagates that
    residual through W₂ and the ReLU (Rumelhart, Hinton & Williams 1986).
    """
    if hidden:
        return _mlp_update(theta, X, y, num_classes, int(hidden), steps=steps, lr=lr)
    f = X.shape[1]
    k = int(num_classes)
    w = theta[: f * k].reshape(f, k).copy()
    b = theta[f * k :].copy()
    onehot = np.zeros((y.size, k))
    onehot[np.arange(y.size), y] = 1.0
    for _ in range(steps):
        z = X @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        r = (p - onehot) / y.size
        w -= lr * (X.T @ r)
        b -= lr * r.sum(axis=0)
    return np.concatenate([w.ravel(), b]) - theta


def _mlp_update(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, k: int, h: int, *, steps: int, lr: float
) -> np.ndarray:
    f = X.shape[1]
    local = theta.copy()
    w1, b1, w2, b2 = _mlp_views(local, f, k, h)  # views: the steps update ``local`` in place
    rows = np.arange(y.size)
    for _ in range(steps):
        a = X @ w1 + b1
        z = np.maximum(a, 0.0)
        logits = z @ w2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        p[rows, y] -= 1.0
        r = p * (lr / y.size)  # the step size folded into the residual: no (f, h) scaling
        dz = r @ w2.T
        dz[a <= 0] = 0.0
        w2 -= z.T @ r
        b2 -= r.sum(axis=0)
        w1 -= X.T @ dz
        b1 -= dz.sum(axis=0)
    return local - theta
