"""Quantile-regression membership inference (Bertran et al. 2023, arXiv:2307.03694).

A regressor g is trained *only on examples known to be non-members* (a public holdout, never
the canaries) to predict, for each input x (and its label y), the distribution of the target
model's score s(x, y) on non-members. A member's score is then unusually high *for its own
x*: the per-example threshold replaces the single global threshold of the sort-and-rank
attack (Liu, Boglioni, Fu, Hu, Thaker & Wu, *Enhancing One-run Privacy Auditing with
Quantile Regression-Based Membership Inference*, §3).

Heads and losses:

* ``"gaussian"`` — outputs ``(μ(x), log σ(x))``, loss ``log σ + (s − μ)²/(2σ²)`` (the
  negative log-likelihood of Liu et al. Def. 3.2 up to a constant); quantile τ is
  ``μ + σ·Φ⁻¹(τ)``; membership score ``q(x) = Φ((s(x) − μ(x))/σ(x))`` (Liu et al. Fig. 1).
* ``"pinball"`` — outputs ``q̂_τ(x)`` at levels τ_j (default
  ``sort(1 − logspace(−4, 0, 41))`` without the level 0), loss
  ``τ·max(s − q, 0) + (1 − τ)·max(q − s, 0)`` averaged over levels (Bertran et al. 2023,
  Eq. 2); quantiles are made monotone by sorting at prediction; membership score: the level
  τ with ``q̂_τ(x) = s(x)``, interpolated linearly between levels.

For ranking canaries the audit uses ``z = Φ⁻¹(q)`` (:attr:`MembershipScores.z`): the same
order as q, without the ties where q rounds to 1 in floating point; beyond the outermost
pinball quantiles z is extrapolated linearly from the end segments in normal-quantile units.

Regressors: a small torch network (:func:`dpaudit.systems._torch_nets.build_cnn` for images,
``build_mlp`` otherwise) with one output block per class, the block of the example's label
being used (the label conditions the prediction), trained with Adam and early stopping on a
second non-member split; or, for the pinball head, any scikit-learn regressor that takes a
``quantile`` parameter (``HistGradientBoostingRegressor(loss="quantile")``; one fit per level
on the features and the one-hot label), so the attack runs without torch.

Example:
    >>> round(gaussian_nll(0.5, -0.3, 1.2), 10), round(gaussian_member_score(1.2, 0.5, -0.3), 10)
    (0.1464191061, 0.8276453317)
    >>> round(pinball_loss(0.4, 1.0, 0.9), 12), round(pinball_loss(1.5, 1.0, 0.9), 12)
    (0.54, 0.05)
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from dpaudit._rng import as_seed_sequence
from dpaudit._settings import option
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import (
    check_array,
    check_choice,
    check_in_range,
    check_memory,
    check_positive,
    check_positive_int,
)
from dpaudit.errors import require
from dpaudit.systems._torch_nets import build_cnn, build_mlp, torch_context

__all__ = [
    "QMIA_HEADS",
    "QMIA_REGRESSORS",
    "FittedQMIA",
    "MembershipScores",
    "QMIASettings",
    "default_quantile_levels",
    "fit_qmia",
    "gaussian_member_score",
    "gaussian_nll",
    "gaussian_quantile",
    "pinball_loss",
    "pinball_membership",
]

QMIA_HEADS: tuple[str, ...] = ("gaussian", "pinball")
QMIA_REGRESSORS: tuple[str, ...] = ("auto", "cnn", "mlp", "hgb")
_LOG_SIGMA_CLAMP = 8.0


def default_quantile_levels(num_levels: int = 41) -> FloatArray:
    """``sort(1 − logspace(−4, 0, num_levels))`` without the level 0 (Bertran et al. 2023).

    Example:
        >>> lv = default_quantile_levels(); lv.size, float(lv[0] > 0), round(float(lv[-1]), 4)
        (40, 1.0, 0.9999)
    """
    n = check_positive_int("num_levels", num_levels)
    check_memory(3 * 8 * n, f"default_quantile_levels with num_levels={n}")
    levels = np.sort(1.0 - np.logspace(-4, 0, n))
    return levels[(levels > 0) & (levels < 1)]


# ---------------------------------------------------------------------------------------------
# Losses and scores (numpy; the torch losses below are the same formulas)
# ---------------------------------------------------------------------------------------------


def _real_arrays(**arrays: ArrayLike) -> tuple[np.ndarray, ...]:
    """Each argument checked by :func:`check_array` (finite reals), then broadcast together."""
    out = tuple(check_array(name, a, allow_empty=True) for name, a in arrays.items())
    try:
        np.broadcast_shapes(*(a.shape for a in out))
    except ValueError:
        shapes = ", ".join(f"{name} {a.shape}" for name, a in zip(arrays, out, strict=True))
        raise ValueError(f"{' and '.join(arrays)} must broadcast together, got {shapes}") from None
    return out


def _scaled_difference(a: np.ndarray, b: np.ndarray, log_scale: np.ndarray) -> np.ndarray:
    """``(a − b)·exp(log_scale)`` without overflow on the way: ``±inf`` only if it is ±inf-large.

    ``0`` where ``a = b`` whatever the scale (no ``0·inf``).
    """
    half = a / 2 - b / 2  # never overflows
    with np.errstate(over="ignore", divide="ignore"):
        magnitude = np.exp(np.log(np.abs(half)) + math.log(2.0) + log_scale)
    return np.where(half == 0, 0.0, np.sign(half) * magnitude)


def _ret(out: np.ndarray) -> Any:
    return float(out) if out.ndim == 0 else out


def gaussian_nll(mu: ArrayLike, log_sigma: ArrayLike, score: ArrayLike) -> Any:
    """``log σ + (s − μ)²/(2σ²)``: the Gaussian negative log-likelihood without ``½log 2π``.

    Finite (or +inf where the true value exceeds the float range) for all finite inputs.

    Raises:
        TypeError: non-real input (strings, bools, complex, None).
        ValueError: non-finite values, or shapes that do not broadcast.
    """
    mu, ls, s = _real_arrays(mu=mu, log_sigma=log_sigma, score=score)
    with np.errstate(over="ignore", invalid="ignore"):
        out = ls + 0.5 * (s - mu) ** 2 * np.exp(-2.0 * ls)
    bad = ~np.isfinite(out)
    if np.any(bad):  # overflow or 0·inf on the way: the same value term by term
        with np.errstate(over="ignore"):
            z = _scaled_difference(s, mu, -ls)
            out = np.where(bad, ls + 0.5 * z * z, out)
    return _ret(out)


def gaussian_member_score(score: ArrayLike, mu: ArrayLike, log_sigma: ArrayLike) -> Any:
    """``q = Φ((s − μ)/σ)``: the membership score of Liu et al. (§3, Fig. 1).

    Raises:
        TypeError: non-real input (strings, bools, complex, None).
        ValueError: non-finite values, or shapes that do not broadcast.
    """
    s, m, ls = _real_arrays(score=score, mu=mu, log_sigma=log_sigma)
    with np.errstate(over="ignore", invalid="ignore"):
        z = (s - m) * np.exp(-ls)
    bad = np.isnan(z)
    if np.any(bad):
        z = np.where(bad, _scaled_difference(s, m, -ls), z)
    return _ret(special.ndtr(z))


def gaussian_quantile(mu: ArrayLike, log_sigma: ArrayLike, level: float) -> Any:
    """``μ + σ·Φ⁻¹(τ)``: the τ-quantile of the Gaussian head.

    Raises:
        TypeError: non-real input (strings, bools, complex, None).
        ValueError: non-finite values, shapes that do not broadcast, ``level`` outside (0, 1).

    Example:
        >>> round(gaussian_quantile(0.5, -0.3, 0.99), 10)
        2.2234008927
    """
    tau = check_in_range("level", level, 0.0, 1.0)
    m, ls = _real_arrays(mu=mu, log_sigma=log_sigma)
    z = float(special.ndtri(tau))
    with np.errstate(over="ignore", invalid="ignore"):
        out = m + np.exp(ls) * z
    bad = np.isnan(out)
    if np.any(bad):  # σ overflows while Φ⁻¹(τ) = 0: the quantile is μ
        out = np.where(bad, m, out)
    return _ret(out)


def pinball_loss(prediction: ArrayLike, target: ArrayLike, level: ArrayLike) -> Any:
    """``τ·max(s − q, 0) + (1 − τ)·max(q − s, 0)`` (Koenker & Bassett 1978), elementwise.

    Raises:
        TypeError: non-real input (strings, bools, complex, None).
        ValueError: non-finite values, shapes that do not broadcast, a level outside (0, 1).
    """
    q, s, tau = _real_arrays(prediction=prediction, target=target, level=level)
    outside = (tau <= 0) | (tau >= 1)
    if np.any(outside):
        raise ValueError(f"level must lie in (0, 1), got {tau[outside][0]:g}")
    with np.errstate(over="ignore"):  # |s − q| beyond the float range: the loss is +inf
        out = tau * np.maximum(s - q, 0.0) + (1.0 - tau) * np.maximum(q - s, 0.0)
    return _ret(out)


@dataclasses.dataclass(frozen=True)
class MembershipScores:
    """Per-example membership scores of a quantile-regression attack.

    Attributes:
        probability: q(x) ∈ [0, 1]: the non-member CDF (Gaussian head) or interpolated quantile
            level (pinball head) at the observed score.
        z: ``Φ⁻¹(q)``, extrapolated beyond the outermost pinball quantiles; rank by this.
    """

    probability: FloatArray
    z: FloatArray


def pinball_membership(
    quantiles: ArrayLike, levels: ArrayLike, score: ArrayLike
) -> MembershipScores:
    """Membership level τ with ``q̂_τ(x) = s(x)`` per row (quantiles sorted to be monotone).

    Inside the predicted range τ is interpolated linearly between levels; outside it q is the
    outermost level and z is extrapolated linearly in ``Φ⁻¹(τ)`` from the end segment.

    Example:
        >>> r = pinball_membership([[0.0, 1.0, 2.0]], [0.25, 0.5, 0.75], [1.5])
        >>> r.probability.tolist()
        [0.625]
    """
    q = np.sort(check_array("quantiles", quantiles, ndim=2), axis=1)
    tau = check_array("levels", levels, ndim=1)
    s = check_array("score", score, ndim=1)
    if q.shape != (s.size, tau.size) or tau.size < 2:
        raise ValueError(f"quantiles must have shape ({s.size}, {tau.size}) with ≥ 2 levels")
    if np.any((tau <= 0) | (tau >= 1)) or np.any(np.diff(tau) <= 0):
        raise ValueError("levels must be strictly increasing in (0, 1)")
    k = tau.size
    pos = np.clip((q <= s[:, None]).sum(axis=1), 1, k - 1)  # segment [pos-1, pos]
    rows = np.arange(s.size)
    lo, hi = q[rows, pos - 1], q[rows, pos]
    width = np.maximum(hi - lo, 1e-12 * np.maximum(1.0, np.abs(hi)))
    t = (s - lo) / width
    zt = special.ndtri(tau)
    z_lin = zt[pos - 1] + t * (zt[pos] - zt[pos - 1])
    tau_in = tau[pos - 1] + np.clip(t, 0.0, 1.0) * (tau[pos] - tau[pos - 1])
    inside = (t >= 0.0) & (t <= 1.0)
    z = np.where(inside, special.ndtri(tau_in), z_lin)
    return MembershipScores(probability=tau_in, z=z)


# ---------------------------------------------------------------------------------------------
# Settings and the fitted attack
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class QMIASettings:
    """The quantile-regression attack: head, regressor and its training."""

    head: str = option("gaussian", help="gaussian (μ, log σ) | pinball (quantile levels)")
    regressor: str = option(
        "auto", help="auto (cnn for images, else mlp) | cnn | mlp | hgb (scikit-learn, pinball)"
    )
    hidden: tuple[int, ...] = option((256, 256), help="MLP regressor widths", flag="--qmia-hidden")
    epochs: int = option(30, help="maximum epochs", flag="--qmia-epochs")
    batch_size: int = option(256, help="minibatch size", flag="--qmia-batch-size")
    learning_rate: float = option(1e-3, help="Adam learning rate", flag="--qmia-lr")
    weight_decay: float = option(1e-4, help="Adam weight decay", flag="--qmia-weight-decay")
    patience: int = option(5, help="early stopping: epochs without validation improvement")
    validation_fraction: float = option(0.2, help="share of the holdout kept for early stopping")
    num_levels: int = option(41, help="pinball levels: sort(1 − logspace(−4, 0, n)) without 0")
    num_threads: int = option(1, help="torch threads", flag="--qmia-threads")

    def __post_init__(self) -> None:
        check_choice("head", self.head, QMIA_HEADS)
        check_choice("regressor", self.regressor, QMIA_REGRESSORS)
        if self.regressor == "hgb" and self.head != "pinball":
            raise ValueError("regressor='hgb' fits quantiles: it needs head='pinball'")
        for h in self.hidden:
            check_positive_int("hidden", h)
        for name in ("epochs", "batch_size", "patience", "num_threads"):
            check_positive_int(name, getattr(self, name))
        check_positive("learning_rate", self.learning_rate)
        check_in_range("weight_decay", self.weight_decay, 0.0, math.inf, low_inclusive=True)
        check_in_range("validation_fraction", self.validation_fraction, 0.0, 1.0)
        if check_positive_int("num_levels", self.num_levels) < 3:
            raise ValueError(f"num_levels must be at least 3, got {self.num_levels}")


@dataclasses.dataclass(frozen=True, eq=False)
class FittedQMIA:
    """A trained quantile regressor and how it was trained.

    Attributes:
        head: ``"gaussian"`` or ``"pinball"``.
        regressor: the regressor used (``"cnn"``, ``"mlp"``, ``"hgb"`` or a class name).
        levels: pinball levels (empty for the Gaussian head).
        num_train: holdout examples fitted on.
        num_validation: holdout examples used for early stopping / validation.
        validation_losses: validation loss after each epoch (torch) or at the end (sklearn).
        best_epoch: epoch whose weights were kept (1-based; 0 for sklearn).
        seconds: wall time of the fit.
    """

    head: str
    regressor: str
    levels: FloatArray
    num_train: int
    num_validation: int
    validation_losses: tuple[float, ...]
    best_epoch: int
    seconds: float
    _predict: Callable[[np.ndarray, np.ndarray], np.ndarray] = dataclasses.field(repr=False)

    def predict(self, X: ArrayLike, labels: ArrayLike) -> FloatArray:
        """(n, 2) ``(μ, log σ)`` (Gaussian head) or (n, K) sorted quantiles (pinball head)."""
        x = check_array("X", X, ndim=2).astype(np.float32)
        y = np.array(labels, dtype=np.int64)  # a writable copy: torch refuses read-only arrays
        if y.shape != (x.shape[0],):
            raise ValueError(
                f"labels must have shape ({x.shape[0]},), one per row of X (shape {x.shape}), "
                f"got {y.shape}"
            )
        out = self._predict(x, y)
        return np.sort(out, axis=1) if self.head == "pinball" else out

    def membership(self, X: ArrayLike, labels: ArrayLike, scores: ArrayLike) -> MembershipScores:
        """Membership scores of examples with observed target-model ``scores``."""
        s = check_array("scores", scores, ndim=1)
        params = self.predict(X, labels)
        if params.shape[0] != s.size:
            raise ValueError(f"scores must have one entry per row of X ({params.shape[0]})")
        if self.head == "pinball":
            return pinball_membership(params, self.levels, s)
        z = (s - params[:, 0]) * np.exp(-params[:, 1])
        return MembershipScores(probability=special.ndtr(z), z=z)


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Holdout:
    X: np.ndarray
    y: np.ndarray
    t: np.ndarray  # standardised target
    train: np.ndarray
    val: np.ndarray
    loc: float
    scale: float


def _prepare(X, labels, scores, num_classes, settings, gen) -> _Holdout:
    x = check_array("X", X, ndim=2).astype(np.float32)
    s = check_array("scores", scores, ndim=1)
    y = np.asarray(labels)
    if y.shape != (x.shape[0],) or s.shape != (x.shape[0],):
        raise ValueError(
            f"labels and scores must have shape ({x.shape[0]},), one per row of X (shape "
            f"{x.shape}), got labels {y.shape} and scores {s.shape}"
        )
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= num_classes:
        raise ValueError(f"labels must be integers in [0, {num_classes - 1}]")
    n_val = round(settings.validation_fraction * x.shape[0])
    if n_val < 1 or x.shape[0] - n_val < 2:
        raise ValueError(f"the holdout of {x.shape[0]} examples is too small to split")
    perm = gen.permutation(x.shape[0])
    loc, scale = float(np.mean(s)), float(np.std(s))
    scale = scale if scale > 0 else 1.0
    return _Holdout(
        x, y.astype(np.int64), (s - loc) / scale, perm[n_val:], perm[:n_val], loc, scale
    )


def _network(kind: str, num_features: int, num_classes: int, k: int, image, channels, hidden):
    if kind == "cnn":
        return build_cnn(channels, num_classes * k)
    return build_mlp(num_features, num_classes * k, hidden)


def _torch_loss(torch, head: str, out, t, levels_t):
    if head == "gaussian":
        mu, ls = out[:, 0], out[:, 1].clamp(-_LOG_SIGMA_CLAMP, _LOG_SIGMA_CLAMP)
        return (ls + 0.5 * (t - mu) ** 2 * torch.exp(-2.0 * ls)).mean()
    diff = t[:, None] - out
    return torch.maximum(levels_t * diff, (levels_t - 1.0) * diff).mean()


@dataclasses.dataclass
class _TorchFit:
    net: Any
    fold: Callable[[Any], Any]
    k: int
    num_classes: int

    def forward(self, torch, xb, yb):
        out = self.net(self.fold(xb)).reshape(-1, self.num_classes, self.k)
        return out[torch.arange(out.shape[0]), yb]


def _epoch(torch, fit: _TorchFit, opt, h: _Holdout, tensors, settings, levels_t) -> float:
    X, y, t = tensors
    fit.net.train()
    order = h.train[torch.randperm(h.train.size).numpy()]
    for start in range(0, order.size, settings.batch_size):
        ix = torch.from_numpy(order[start : start + settings.batch_size])
        opt.zero_grad(set_to_none=True)
        loss = _torch_loss(torch, settings.head, fit.forward(torch, X[ix], y[ix]), t[ix], levels_t)
        loss.backward()
        opt.step()
    fit.net.eval()
    with torch.no_grad():
        iv = torch.from_numpy(h.val)
        return float(
            _torch_loss(torch, settings.head, fit.forward(torch, X[iv], y[iv]), t[iv], levels_t)
        )


def _fit_torch(h: _Holdout, kind, num_classes, image_shape, channels, settings, levels, seed):
    k = 2 if settings.head == "gaussian" else levels.size
    with torch_context(seed, num_threads=settings.num_threads) as torch:
        net = _network(kind, h.X.shape[1], num_classes, k, image_shape, channels, settings.hidden)
        if kind == "cnn":
            height, width = image_shape

            def fold(xb):
                return xb.reshape(-1, channels, height, width)
        else:

            def fold(xb):
                return xb

        fit = _TorchFit(net, fold, k, num_classes)
        opt = torch.optim.Adam(
            net.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        tensors = (
            torch.from_numpy(h.X),
            torch.from_numpy(h.y),
            torch.from_numpy(h.t.astype(np.float32)),
        )
        levels_t = torch.from_numpy(levels.astype(np.float32))
        losses, best, best_state, stale = [], math.inf, None, 0
        for _ in range(settings.epochs):
            loss = _epoch(torch, fit, opt, h, tensors, settings, levels_t)
            losses.append(loss)
            if loss < best - 1e-6:
                best, best_state, stale = loss, copy.deepcopy(net.state_dict()), 0
            else:
                stale += 1
                if stale >= settings.patience:
                    break
        net.load_state_dict(best_state)
        net.eval()
    best_epoch = int(np.argmin(losses)) + 1
    return fit, tuple(losses), best_epoch


def _torch_predictor(fit: _TorchFit, h: _Holdout, head: str, num_threads: int):
    def predict(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with torch_context(0, num_threads=num_threads) as torch, torch.no_grad():
            out = [
                fit.forward(
                    torch, torch.from_numpy(x[i : i + 4096]), torch.from_numpy(y[i : i + 4096])
                )
                .double()
                .numpy()
                for i in range(0, x.shape[0], 4096)
            ]
        p = np.concatenate(out) if out else np.zeros((0, fit.k))
        if head == "gaussian":
            ls = np.clip(p[:, 1], -_LOG_SIGMA_CLAMP, _LOG_SIGMA_CLAMP)
            return np.stack([p[:, 0] * h.scale + h.loc, ls + math.log(h.scale)], axis=1)
        return p * h.scale + h.loc

    return predict


def _features(x: np.ndarray, y: np.ndarray, num_classes: int) -> np.ndarray:
    return np.concatenate([x, np.eye(num_classes, dtype=np.float32)[y]], axis=1)


def _fit_sklearn(h: _Holdout, estimator, num_classes, levels, seed, num_threads):
    """One scikit-learn fit per level (OpenMP threads pinned: oversubscribing a busy machine
    slows histogram gradient boosting down by an order of magnitude)."""
    sk_base = require("sklearn.base", "ml")
    limits = require("threadpoolctl", "ml").threadpool_limits
    if estimator is None:
        ensemble = require("sklearn.ensemble", "ml")
        estimator = ensemble.HistGradientBoostingRegressor(
            loss="quantile", random_state=seed % 2**32
        )
    feats = _features(h.X, h.y, num_classes)
    models = []
    with limits(num_threads):
        for tau in levels:
            est = sk_base.clone(estimator).set_params(quantile=float(tau))
            models.append(est.fit(feats[h.train], h.t[h.train]))
        val = np.stack([m.predict(feats[h.val]) for m in models], axis=1)
    loss = float(np.mean(pinball_loss(np.sort(val, axis=1), h.t[h.val, None], levels[None, :])))

    def predict(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        f = _features(x, y, num_classes)
        with limits(num_threads):
            out = np.stack([m.predict(f) for m in models], axis=1)
        return out * h.scale + h.loc

    return predict, (loss,), type(estimator).__name__


def fit_qmia(
    X: ArrayLike,
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    num_classes: int,
    settings: QMIASettings | None = None,
    image_shape: tuple[int, int] | None = None,
    channels: int = 1,
    estimator: Any = None,
    rng: RngLike = None,
) -> FittedQMIA:
    """Fit the quantile regressor on non-member examples and their target-model scores.

    The holdout is split at random (``validation_fraction``): the regressor is fitted on one
    part and early-stopped on the other (the epoch with the lowest validation loss is kept).
    Never pass canaries or members here: the attack's validity does not depend on it (the
    audit's bounds hold for any score), but its power does.

    Args:
        X: (n, d) non-member inputs (images flattened).
        labels: (n,) their labels.
        scores: (n,) the target model's scores s(x, y) on them (members would score higher).
        num_classes: C.
        settings: :class:`QMIASettings` (default ``QMIASettings()``).
        image_shape: (height, width) for the CNN regressor (``regressor="auto"`` picks the CNN
            when given).
        channels: image channels.
        estimator: a scikit-learn regressor with a ``quantile`` parameter for the pinball head
            (overrides ``settings.regressor``); default for ``"hgb"``:
            ``HistGradientBoostingRegressor(loss="quantile")``.
        rng: seed of the split, the initialisation and the minibatches (keyword-only).

    Returns:
        :class:`FittedQMIA`.

    Raises:
        TypeError, ValueError: bad shapes, labels, settings (the Gaussian head with a
            scikit-learn regressor), a holdout too small to split — before any fitting.
    """
    s = QMIASettings() if settings is None else settings
    if not isinstance(s, QMIASettings):
        raise TypeError(f"settings must be QMIASettings, got {type(s).__name__}")
    k = check_positive_int("num_classes", num_classes)
    if estimator is not None and s.head != "pinball":
        raise ValueError("a scikit-learn estimator fits quantiles: it needs head='pinball'")
    kind = s.regressor
    if kind == "auto":
        kind = "cnn" if image_shape is not None else "mlp"
    if kind == "cnn" and image_shape is None:
        raise ValueError("regressor='cnn' needs image_shape")
    root = as_seed_sequence(rng)
    split_seq, fit_seq = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key).spawn(2)
    h = _prepare(X, labels, scores, k, s, np.random.default_rng(split_seq))
    levels = default_quantile_levels(s.num_levels) if s.head == "pinball" else np.zeros(0)
    seed = int(fit_seq.generate_state(1, dtype=np.uint64)[0] % (2**63))
    start = time.perf_counter()
    if estimator is not None or kind == "hgb":
        predict, losses, name = _fit_sklearn(h, estimator, k, levels, seed, s.num_threads)
        best_epoch = 0
    else:
        require("torch", "torch")
        fit, losses, best_epoch = _fit_torch(h, kind, k, image_shape, channels, s, levels, seed)
        predict, name = _torch_predictor(fit, h, s.head, s.num_threads), kind
    return FittedQMIA(
        head=s.head,
        regressor=name,
        levels=levels,
        num_train=int(h.train.size),
        num_validation=int(h.val.size),
        validation_losses=losses,
        best_epoch=best_epoch,
        seconds=time.perf_counter() - start,
        _predict=predict,
    )
