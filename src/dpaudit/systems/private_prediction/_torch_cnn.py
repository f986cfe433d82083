"""A small PyTorch CNN teacher with the scikit-learn estimator interface (``torch`` extra).

torch is imported only inside :meth:`TorchCNNClassifier.fit` / ``predict``, so importing
``dpaudit.systems`` does not need it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._typing import ArrayLike, FloatArray, IntArray
from dpaudit._validate import check_positive, check_positive_int
from dpaudit.errors import require
from dpaudit.systems._torch_nets import build_cnn, manual_seed

__all__ = ["TorchCNNClassifier"]

_PARAMS = (
    "image_shape",
    "channels",
    "epochs",
    "batch_size",
    "lr",
    "weight_decay",
    "random_state",
    "num_threads",
    "device",
)


class TorchCNNClassifier:
    """A LeNet-style CNN (2 conv layers + 2 dense) trained with Adam; sklearn-compatible.

    A CPU-sized stand-in for the paper's teachers (Chadha et al. 2024 App. D.1 uses LeNet-5 for
    MNIST,
    Adam, batch size 16). Rows are flattened images; ``image_shape`` (height, width) says how to
    fold them (default: a square of side √d). Works for 8×8 digits and 28×28 (Fashion-)MNIST.

    Args:
        image_shape: (height, width) of one channel, or None for a square.
        channels: image channels (rows hold channels × height × width values, channel first).
        epochs: passes over the teacher's data.
        batch_size: minibatch size (Chadha et al. 2024 App. D.1: 16).
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        random_state: seed of the initialisation and of the minibatch order.
        num_threads: torch intra-op threads during fit/predict (1: parallelism comes from
            training teachers in separate processes).
        device: torch device string.

    Example:
        >>> from dpaudit.data import load_digits  # doctest: +SKIP
        >>> ds = load_digits()  # doctest: +SKIP
        >>> clf = TorchCNNClassifier(epochs=5, random_state=0)  # doctest: +SKIP
        >>> clf = clf.fit(ds.X_train, ds.y_train)  # doctest: +SKIP
        >>> clf.predict(ds.X_test[:3]).shape  # doctest: +SKIP
        (3,)
    """

    def __init__(
        self,
        image_shape: tuple[int, int] | None = None,
        channels: int = 1,
        epochs: int = 10,
        batch_size: int = 16,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        random_state: int | None = None,
        num_threads: int = 1,
        device: str = "cpu",
    ) -> None:
        self.image_shape = image_shape
        self.channels = channels
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.random_state = random_state
        self.num_threads = num_threads
        self.device = device

    # sklearn's estimator protocol (clone() uses these)
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters."""
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params: Any) -> TorchCNNClassifier:
        """Set constructor parameters; unknown names raise ValueError."""
        for name, value in params.items():
            if name not in _PARAMS:
                raise ValueError(f"TorchCNNClassifier has no parameter {name!r}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in _PARAMS)
        return f"TorchCNNClassifier({args})"

    def _shape(self, num_features: int) -> tuple[int, int, int]:
        c = check_positive_int("channels", self.channels)
        if self.image_shape is None:
            side = math.isqrt(num_features // c)
            if c * side * side != num_features:
                raise ValueError(
                    f"image_shape is needed: {num_features} features are not {c} square channel(s)"
                )
            return c, side, side
        h, w = (check_positive_int("image_shape", v) for v in self.image_shape)
        if c * h * w != num_features:
            raise ValueError(
                f"image_shape {self.image_shape} × channels {c} does not match "
                f"{num_features} features"
            )
        return c, h, w

    def fit(self, X: ArrayLike, y: ArrayLike) -> TorchCNNClassifier:
        """Train on rows X (flattened images) with integer labels y.

        Raises:
            ValueError: bad hyper-parameters, or features that do not fold into images.
        """
        torch = require("torch", "torch")
        epochs = check_positive_int("epochs", self.epochs)
        batch = check_positive_int("batch_size", self.batch_size)
        lr = check_positive("lr", self.lr)
        # a private writable copy: torch cannot wrap read-only arrays (the datasets' are)
        Xa = np.array(X, dtype=np.float32, copy=True)
        ya = np.asarray(y)
        self.classes_, codes = np.unique(ya, return_inverse=True)
        self.n_features_in_ = Xa.shape[1]
        shape = self._shape(Xa.shape[1])
        seed = 0 if self.random_state is None else int(self.random_state)
        old_threads = torch.get_num_threads()
        torch.set_num_threads(check_positive_int("num_threads", self.num_threads))
        try:
            with torch.random.fork_rng(devices=[]):
                manual_seed(torch, seed)
                net = build_cnn(shape[0], len(self.classes_)).to(self.device)
                opt = torch.optim.Adam(
                    net.parameters(), lr=lr, weight_decay=float(self.weight_decay)
                )
                xt = torch.from_numpy(Xa.reshape(-1, *shape)).to(self.device)
                yt = torch.from_numpy(codes.astype(np.int64)).to(self.device)
                order_rng = np.random.default_rng(seed)
                loss_fn = torch.nn.CrossEntropyLoss()
                net.train()
                for _ in range(epochs):
                    perm = order_rng.permutation(len(yt))
                    for start in range(0, len(perm), batch):
                        idx = torch.from_numpy(perm[start : start + batch]).to(self.device)
                        opt.zero_grad()
                        loss = loss_fn(net(xt[idx]), yt[idx])
                        loss.backward()
                        opt.step()
            net.eval()
            self.net_ = net.cpu()
            self.image_shape_ = shape
        finally:
            torch.set_num_threads(old_threads)
        return self

    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """Softmax class probabilities, shape (n, len(classes_))."""
        torch = require("torch", "torch")
        if not hasattr(self, "net_"):
            raise ValueError("TorchCNNClassifier is not fitted; call fit first")
        Xa = np.array(X, dtype=np.float32, copy=True).reshape(-1, *self.image_shape_)
        old_threads = torch.get_num_threads()
        torch.set_num_threads(check_positive_int("num_threads", self.num_threads))
        try:
            with torch.no_grad():
                out = [
                    torch.softmax(self.net_(torch.from_numpy(Xa[s : s + 4096])), dim=1).numpy()
                    for s in range(0, Xa.shape[0], 4096)
                ]
        finally:
            torch.set_num_threads(old_threads)
        return np.concatenate(out).astype(np.float64)

    def predict(self, X: ArrayLike) -> IntArray:
        """Most probable class per row."""
        if not hasattr(self, "classes_"):
            raise ValueError("TorchCNNClassifier is not fitted; call fit first")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
