"""A bootstrap for functionals of counts (Chadha et al. 2024, *Auditing Private Prediction*,
arXiv:2402.09403, App. B, bootstrap audits): percentile, basic and BCa intervals (Efron &
Tibshirani 1993) of a statistic of one or more count vectors, through scipy's bootstrap or an
exact multinomial resampling of the counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from scipy import stats

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_counts,
    check_memory,
    check_positive_int,
    check_rng,
    check_work,
)

__all__ = ["MAX_BOOTSTRAP_WORK", "SCIPY_BOOTSTRAP_MAX_N", "BootstrapInterval", "bootstrap_counts"]


_BOOT_METHODS = ("percentile", "basic", "BCa")
_BOOT_ENGINES = ("auto", "scipy", "multinomial")
_BOOT_ALTERNATIVES = ("two-sided", "greater", "less")
_TINY = float(np.finfo(np.float64).tiny)
#: Largest total number of observations that ``engine="auto"`` expands for scipy.
SCIPY_BOOTSTRAP_MAX_N = 20_000
#: Largest resampling work of :func:`bootstrap_counts`: ``n_resamples ×`` the observations
#: (scipy engine) or the categories (multinomial engine), ~10 ns each. Raise
#: ``dpaudit.bounds._bootstrap.MAX_BOOTSTRAP_WORK`` to allow more.
MAX_BOOTSTRAP_WORK = 2 * 10**9


@dataclasses.dataclass(frozen=True)
class BootstrapInterval(ResultMixin):
    """A bootstrap confidence interval for a (vector) functional of multinomial counts.

    Attributes:
        estimate: the statistic on the observed counts, shape ``(S,)`` (or ``()``).
        low: lower confidence limits (``-inf`` for ``alternative="less"``).
        high: upper confidence limits (``inf`` for ``alternative="greater"``).
        confidence_level: nominal level (per component; not simultaneous over components).
        method: ``"percentile"``, ``"basic"`` or ``"BCa"``.
        alternative: ``"two-sided"``, ``"greater"`` (lower bound) or ``"less"`` (upper bound).
        n_resamples: bootstrap resamples drawn.
        engine: ``"scipy"`` (``scipy.stats.bootstrap`` on the expanded observations) or
            ``"multinomial"`` (resampled counts drawn as Multinomial(n, counts/n)).
        seed: the integer seed used, when one was given.
        asymptotic: always True: bootstrap intervals are only asymptotically valid
            (Chadha et al. 2024 App. B; invalid on the boundary of the parameter space,
            Andrews 2000).
    """

    estimate: FloatArray
    low: FloatArray
    high: FloatArray
    confidence_level: float
    method: str
    alternative: str
    n_resamples: int
    engine: str
    seed: int | None
    asymptotic: bool = True


def _bootstrap_quantiles(
    dist: np.ndarray, estimate: np.ndarray, level: float, method: str, alternative: str
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile / basic limits from a bootstrap distribution (last axis = resamples)."""
    beta = 1.0 - level
    tail = beta / 2 if alternative == "two-sided" else beta
    q_lo = np.quantile(dist, tail, axis=-1, method="lower")
    q_hi = np.quantile(dist, 1 - tail, axis=-1, method="higher")
    if method == "percentile":
        low, high = q_lo, q_hi
    else:  # basic: reflect around the estimate
        with np.errstate(invalid="ignore"):
            low, high = 2 * estimate - q_hi, 2 * estimate - q_lo
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    if alternative == "greater":
        high = np.full_like(high, np.inf)
    elif alternative == "less":
        low = np.full_like(low, -np.inf)
    return low, high


def bootstrap_counts(
    statistic: Callable[..., ArrayLike],
    counts: Sequence[ArrayLike],
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    method: str = "percentile",
    alternative: str = "greater",
    engine: str = "auto",
    rng: RngLike = None,
) -> BootstrapInterval:
    """Bootstrap interval for a functional of one or more independent multinomial samples.

    Chadha et al. 2024 App. B ("Bootstrap based methods", after Efron & Tibshirani 1994): resample
    each sample's observations with replacement, recompute the statistic, read the interval
    off the bootstrap distribution. For categorical data a resample of ``n`` observations is
    exactly a Multinomial(n, counts/n) draw, so two engines give the same distribution:

    * ``"scipy"``: expand the counts into labels and call ``scipy.stats.bootstrap``
      (independent resampling of each sample, ``paired=False``); memory and time O(n) per
      resample, so only for small totals.
    * ``"multinomial"``: draw the resampled counts directly, O(K) per resample whatever n;
      percentile and basic intervals as scipy defines them.
    * ``"auto"``: scipy when the total number of observations is at most
      :data:`SCIPY_BOOTSTRAP_MAX_N`, else multinomial.

    Args:
        statistic: ``f(*counts_batch) -> values``; each argument has shape ``(R, K_j)`` (R
            resamples of sample j's counts) and the result shape ``(R,)`` or ``(R, S)``.
        counts: sequence of 1-d count vectors, one per independent sample.
        confidence_level: in (0, 1).
        n_resamples: number of bootstrap resamples, ≥ 1.
        method: ``"percentile"`` (default), ``"basic"`` or ``"BCa"`` (scipy engine only).
        alternative: ``"greater"`` (default: a one-sided lower bound), ``"less"`` or
            ``"two-sided"``.
        engine: ``"auto"``, ``"scipy"`` or ``"multinomial"``.
        rng: seed or generator for the resampling.

    Returns:
        :class:`BootstrapInterval` (flagged ``asymptotic``).

    Raises:
        TypeError: ``statistic`` not callable, or returning something other than numbers.
        ValueError: bad counts (or count vectors of different lengths), level, method,
            alternative, engine, BCa with the multinomial engine, or a statistic that
            returns NaN on the observed counts or the wrong shape.

    Example:
        >>> def diff(a, b):
        ...     return a[:, 0] / a.sum(1) - b[:, 0] / b.sum(1)
        >>> res = bootstrap_counts(diff, [[60, 40], [45, 55]], rng=0, n_resamples=2000)
        >>> round(float(res.estimate), 2), bool(res.low > 0)
        (0.15, True)
    """
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    samples = _check_samples(counts)
    level = check_confidence_level(confidence_level)
    n_resamples = check_positive_int("n_resamples", n_resamples)
    check_choice("method", method, _BOOT_METHODS)
    check_choice("alternative", alternative, _BOOT_ALTERNATIVES)
    check_choice("engine", engine, _BOOT_ENGINES)
    check_rng(rng)
    total = int(sum(int(s.sum()) for s in samples))
    if engine == "auto":
        engine = "scipy" if total <= SCIPY_BOOTSTRAP_MAX_N else "multinomial"
    if method == "BCa" and engine == "multinomial":
        raise ValueError("method='BCa' needs engine='scipy' (jackknife on the observations)")
    per = total if engine == "scipy" else sum(s.size for s in samples)
    check_work(
        float(n_resamples) * per,
        MAX_BOOTSTRAP_WORK,
        f"bootstrap_counts with n_resamples={n_resamples} over "
        + (
            f"{total} observations (engine='scipy')"
            if engine == "scipy"
            else f"{per} categories (engine='multinomial')"
        ),
        "resampled values",
        "lower n_resamples, use engine='multinomial', or raise "
        "dpaudit.bounds._bootstrap.MAX_BOOTSTRAP_WORK",
    )
    seed = seed_entropy(rng)
    gen = as_generator(rng)
    estimate = _call_statistic(statistic, [s[None, :] for s in samples])[0]
    if np.any(np.isnan(estimate)):
        raise ValueError(
            f"statistic must return numbers, not NaN, on the observed counts; got {estimate!r}"
        )
    if engine == "multinomial":
        check_memory(
            16.0 * n_resamples * sum(s.size for s in samples),
            f"bootstrap_counts with n_resamples={n_resamples}",
        )
        draws = [
            gen.multinomial(int(s.sum()), s / s.sum(), size=n_resamples).astype(np.int64)
            for s in samples
        ]
        dist = _call_statistic(statistic, draws)  # (R,) or (R, S)
        dist = np.moveaxis(dist, 0, -1)
        with np.errstate(invalid="ignore"):
            low, high = _bootstrap_quantiles(dist, estimate, level, method, alternative)
    else:
        res = stats.bootstrap(
            tuple(np.repeat(np.arange(s.shape[0]), s) for s in samples),
            _on_labels(statistic, [s.shape[0] for s in samples]),
            n_resamples=n_resamples,
            batch=max(1, int(2e7 // max(total, 1))),
            vectorized=True,
            paired=False,
            confidence_level=level,
            alternative=alternative,
            method=method,
            rng=gen,
        )
        low = np.asarray(res.confidence_interval.low, dtype=np.float64)
        high = np.asarray(res.confidence_interval.high, dtype=np.float64)
    return BootstrapInterval(
        estimate=estimate,
        low=low,
        high=high,
        confidence_level=level,
        method=method,
        alternative=alternative,
        n_resamples=n_resamples,
        engine=engine,
        seed=seed,
    )


def _call_statistic(statistic: Callable[..., ArrayLike], batch: list[np.ndarray]) -> np.ndarray:
    """``statistic(*batch)`` as float64 of shape ``(R,)`` or ``(R, S)``; a failure or a
    result of another type or shape is reported as an error naming ``statistic``."""
    r = batch[0].shape[0]
    shapes = [b.shape for b in batch]
    try:
        raw = statistic(*batch)
    except (TypeError, ValueError, IndexError, ArithmeticError) as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(
            f"statistic {getattr(statistic, '__name__', statistic)!r:.60} failed on count "
            f"batches of shapes {shapes}: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        val = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"statistic must return real numbers, got {type(raw).__name__} {raw!r:.60}"
        ) from exc
    if val.ndim not in (1, 2) or val.shape[0] != r:
        raise ValueError(
            f"statistic must return shape ({r},) or ({r}, S) for count batches of shapes "
            f"{shapes}, got shape {val.shape}"
        )
    return val


def _check_samples(counts: Sequence[ArrayLike]) -> list[np.ndarray]:
    """One 1-d count vector with a positive total per sample."""
    if isinstance(counts, (str, bytes)) or not isinstance(counts, Iterable):
        raise TypeError(
            f"counts must be a sequence of count vectors (one per sample), got {counts!r:.80}"
        )
    if isinstance(counts, np.ndarray) and counts.ndim == 1:
        raise ValueError(
            "counts must be a sequence of count vectors (one per sample), got 1-d array"
        )
    samples = [check_counts(f"counts[{j}]", c, ndim_min=1) for j, c in enumerate(counts)]
    if not samples:
        raise ValueError("counts must contain at least one sample")
    for j, s in enumerate(samples):
        if s.ndim != 1:
            raise ValueError(f"counts[{j}] must be 1-d, got shape {s.shape}")
        if s.sum() == 0:
            raise ValueError(f"counts[{j}] must have a positive total, got {s.tolist()!r}")
        if s.shape != samples[0].shape:
            raise ValueError(
                f"counts must all have the same number of categories (one outcome space), "
                f"got {samples[0].size} in counts[0] and {s.size} in counts[{j}]"
            )
    return samples


def _on_labels(statistic: Callable[..., ArrayLike], sizes: list[int]) -> Callable[..., np.ndarray]:
    """``statistic`` of counts as a vectorised statistic of label resamples (scipy's form)."""

    def wrapped(*xs, axis=-1):
        batch = []
        for x, k in zip(xs, sizes, strict=True):
            x = np.moveaxis(np.asarray(x), axis, -1)
            lead = x.shape[:-1]
            flat = x.reshape(-1, x.shape[-1]).astype(np.int64)
            offs = (np.arange(flat.shape[0]) * k)[:, None]
            cnt = np.bincount((flat + offs).ravel(), minlength=flat.shape[0] * k)
            batch.append(cnt.reshape(flat.shape[0], k))
        val = _call_statistic(statistic, batch)  # (B,) or (B, S)
        val = np.moveaxis(val, 0, -1)  # (S, B) or (B,)
        return val.reshape(val.shape[:-1] + lead)

    return wrapped
