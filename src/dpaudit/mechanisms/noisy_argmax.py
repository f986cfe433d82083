"""The Gaussian noisy argmax (GNMax): exact output distribution and samplers.

Every private-prediction system in the spec (PATE, CaPC, PromptPATE, Private-kNN; papers 000,
003, 004) answers a query with ``argmax_c (H_c + Z_c)``, ``Z_c ~ N(0, σ²)`` i.i.d., over a vote
histogram ``H``. Its output distribution is (paper 000 Eq. 4; paper 003 Thm 1)

    Q_c(H) = ∫ φ(x − v_c) ∏_{i≠c} Φ(x − v_i) dx,     v = H/σ.

**Quadrature and why it is accurate.** Each integrand is strongly log-concave with curvature
≥ 1 (log Φ is concave), its mode lies right of ``(v_c + v_max)/2`` and it is entire with
Gaussian decay. We integrate with the trapezoidal rule on one shared grid per histogram
(C·N evaluations of log Φ for all C classes at once), with

* tails bounded *rigorously*: left of each mode the integrand is below a Gaussian of unit
  curvature, so starting 8.5 s.d. left of the lower bound on the mode leaves < 1e-16 relative
  mass; right of the grid the tangent bound of a log-concave function is checked explicitly;
* discretisation error controlled a posteriori: the trapezoidal rule converges
  super-geometrically for such integrands (Trefethen & Weideman 2014), and we accept a class
  only if the step-h and step-2h rules agree to 1e-7 *and* the peak is resolved by ≥ 8 nodes
  (which alone gives error ≤ e^-35 for a Gaussian shape); the h error is then far below 1e-12.

Classes that fail a check (very unequal histograms, tiny probabilities, large C) are
recomputed on a grid centred at their own mode (found by a globally convergent Newton
iteration) and scaled by their own curvature, refined until the same checks pass. All sums
are done in log space, so log-probabilities keep ~1e-12 relative accuracy down to 1e-300 and
beyond. Tests compare with mpmath at 50 digits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

from dpaudit._rng import block_seeds
from dpaudit._typing import ArrayLike, FloatArray, RngLike
from dpaudit._validate import (
    check_choice,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_votes,
)
from dpaudit.mechanisms import _quadrature as quad

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "argmax_probabilities",
    "argmax_probabilities_jacobian",
    "log_argmax_probabilities",
    "sample_argmax_block",
    "sample_argmax_counts",
    "sample_argmax_counts_exact",
    "sample_argmax_counts_from",
]

#: Draws per block in the Monte-Carlo samplers. Each block owns one child of
#: ``SeedSequence(seed).spawn``, so results depend only on (seed, n, block_size).
DEFAULT_BLOCK_SIZE = 2**20


def _standardise(votes: ArrayLike, sigma: float) -> tuple[np.ndarray, tuple[int, ...]]:
    arr = check_votes("votes", votes)
    s = check_positive("sigma", sigma)
    shape = arr.shape
    v = (arr / s).reshape(-1, shape[-1])
    # Shift invariance (paper 003 Thm 2): centring at the max keeps the numbers small.
    v = v - v.max(axis=1, keepdims=True)
    return v, shape


def _log_q_standardised(v: np.ndarray) -> np.ndarray:
    _b, c = v.shape
    if c == 2:
        # Closed form: Q_0 = Φ((v_0 − v_1)/√2) (difference of two independent normals).
        diff = (v[:, 0] - v[:, 1]) / math.sqrt(2)
        return np.stack([quad.log_ndtr_fast(diff), quad.log_ndtr_fast(-diff)], axis=1)
    log_q, ok = quad.shared_grid_log_q(v)
    if not ok.all():
        rows, cols = np.nonzero(~ok)
        d = _offsets(v, rows, cols)
        log_q[rows, cols], _ = quad.per_class_log_q(d)
    return log_q


def _offsets(v: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """d[m, :] = v_i − v_j over j ≠ i for the (row, class) pairs given."""
    c = v.shape[1]
    vi = v[rows, cols]
    others = np.ones((rows.size, c), dtype=bool)
    others[np.arange(rows.size), cols] = False
    vj = v[rows][others].reshape(rows.size, c - 1)
    return vi[:, None] - vj


def log_argmax_probabilities(votes: ArrayLike, sigma: float) -> FloatArray:
    """Natural log of the noisy-argmax output probabilities ``log Q(H)``.

    Args:
        votes: a histogram ``(C,)`` or a batch ``(..., C)`` of real-valued votes, C ≥ 2.
        sigma: standard deviation σ > 0 of the Gaussian noise added to each count.

    Returns:
        Array of the same shape as ``votes``; relative error ≤ 1e-9 (in practice ~1e-13)
        for probabilities down to 1e-300, finite further down.

    Raises:
        ValueError: σ ≤ 0 or NaN, non-finite votes, fewer than two classes, empty input.
        TypeError: non-numeric input.

    Example:
        >>> lq = log_argmax_probabilities([200, 30, 20], sigma=40)
        >>> round(float(np.exp(lq[0])), 10)
        0.9979943883
    """
    v, shape = _standardise(votes, sigma)
    return _log_q_standardised(v).reshape(shape)


def argmax_probabilities(votes: ArrayLike, sigma: float) -> FloatArray:
    """Exact output distribution ``Q(H)`` of ``argmax(H + N(0, σ²I))`` (paper 000 Eq. 4).

    Args:
        votes: a histogram ``(C,)`` or a batch ``(..., C)``, C ≥ 2, real-valued.
        sigma: noise standard deviation σ > 0.

    Returns:
        Probabilities of the same shape as ``votes`` (absolute error ≤ 1e-12; each row sums
        to 1 within that error). Ties (equal votes) get equal probability.

    Raises:
        ValueError, TypeError: as :func:`log_argmax_probabilities`.

    Example:
        >>> np.round(argmax_probabilities([10, 10, 0], sigma=1e-3), 6)
        array([0.5, 0.5, 0. ])
    """
    return np.exp(log_argmax_probabilities(votes, sigma))


def argmax_probabilities_jacobian(votes: ArrayLike, sigma: float) -> tuple[FloatArray, FloatArray]:
    """``Q(H)`` and its Jacobian ``J[..., i, k] = ∂Q_i/∂H_k``.

    For k ≠ i, differentiating Eq. 4 under the integral gives
    ``∂Q_i/∂H_k = −(1/σ) ∫ φ(x − v_i) φ(x − v_k) ∏_{j≠i,k} Φ(x − v_j) dx``, computed as
    ``−(Q_i/σ)·E_i[λ(x − v_k)]`` on the per-class grid (λ = φ/Φ); shift invariance (paper
    003 Thm 2) gives ``∂Q_i/∂H_i = −Σ_{k≠i} ∂Q_i/∂H_k``, so every row of ``J`` sums to 0
    and every column sums to 0 (Σ_i Q_i = 1). Relative accuracy ~1e-10.

    Returns:
        ``(q, jac)`` with shapes ``(..., C)`` and ``(..., C, C)``.
    """
    v, shape = _standardise(votes, sigma)
    s = float(sigma)
    b, c = v.shape
    rows = np.repeat(np.arange(b), c)
    cols = np.tile(np.arange(c), b)
    d = _offsets(v, rows, cols)
    log_q, ratio = quad.per_class_log_q(d, weights_mills=True)
    q = np.exp(log_q).reshape(b, c)
    off = -(q.reshape(-1)[:, None] * ratio) / s  # (B·C, C−1): ∂Q_i/∂H_k for k ≠ i
    jac = np.zeros((b * c, c))
    others = np.ones((b * c, c), dtype=bool)
    others[np.arange(b * c), cols] = False
    jac[others] = off.reshape(-1)
    jac[np.arange(b * c), cols] = -off.sum(axis=1)
    return q.reshape(shape), jac.reshape(*shape, c)


# ----------------------------------------------------------------------------------------
# Samplers
# ----------------------------------------------------------------------------------------

_BACKENDS = ("numpy", "torch")


def _block_sizes(n: int, block_size: int) -> list[int]:
    full, rest = divmod(n, block_size)
    return [block_size] * full + ([rest] if rest else [])


# Thinning split of the Monte-Carlo kernel (see _numpy_block). The threshold τ = max v − gap
# and the explicit set are chosen per histogram by a cost model (nanoseconds per draw,
# measured on numpy 2.x, sorting and bookkeeping included): a Gaussian for an explicit
# class costs ~_COST_NORMAL, a threshold crossing of a thinned class ~_COST_THIN, and
# filling in a thinned class in a draw whose explicit maximum fell below τ ~_COST_FILL.
# The choice affects speed only, never the law.
_GAPS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.33, 3.0)
_COST_NORMAL = 12.0
_COST_THIN = 400.0
_COST_FILL = 200.0


def _thinning_plan(v: np.ndarray) -> tuple[float, np.ndarray] | None:
    """Threshold and explicit-class mask minimising the modelled cost (None: plain argmax)."""
    c = v.size
    best_cost = _COST_NORMAL * c
    plan = None
    top = v == v.max()
    for gap in _GAPS:
        tau = v.max() - gap
        p = special.ndtr(v - tau)
        explicit = (p * _COST_THIN >= _COST_NORMAL) | top
        if explicit.all():
            continue
        p_low = float(np.prod(special.ndtr(tau - v[explicit])))
        cost = (
            _COST_NORMAL * explicit.sum()
            + _COST_THIN * p[~explicit].sum()
            + _COST_FILL * p_low * (~explicit).sum()
            + 10.0  # bookkeeping of the thinned path
        )
        if cost < best_cost:
            best_cost, plan = cost, (tau, explicit)
    return plan


def sample_argmax_block(
    v: np.ndarray, size: int, seed: np.random.SeedSequence, *, backend: str = "numpy", device=None
) -> np.ndarray:
    """Counts of ``size`` noisy-argmax draws for standardised histograms ``v`` (B, C).

    One block of the Monte-Carlo sampler: the draws come from the generator seeded by
    ``seed`` only, so a block's counts are the same wherever and whenever it runs.
    Peak memory (numpy): at most ``size·C`` float64 noise values plus ``size`` winner
    indices per histogram, 8·size·(C+1) bytes (≈ 92 MB for the default block and C = 10);
    with thinning (below) only the explicitly sampled classes take ``size`` columns.
    """
    b, c = v.shape
    out = np.zeros((b, c), dtype=np.int64)
    if size == 0:
        return out
    if backend == "torch":
        return _torch_block(v, size, seed, device=device)
    for row in range(b):
        out[row] = _numpy_block(v[row], size, _row_generator(seed, row, b))
    return out


def _row_generator(seed: np.random.SeedSequence, row: int, num_rows: int) -> np.random.Generator:
    """The stream of histogram ``row`` in one block: the child key ``(row,)`` of the block's
    seed, so a histogram's counts do not depend on which others share the batch (as long as
    it keeps its row index)."""
    del num_rows
    child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, row))
    return np.random.Generator(np.random.PCG64(child))


def _numpy_block(v: np.ndarray, size: int, gen: np.random.Generator) -> np.ndarray:
    """Exact noisy-argmax counts for one standardised histogram, with thinning.

    Write ``Y_j = v_j + Z_j``. Fix a threshold τ and split the classes into an explicit set E
    (always containing the top class) and the rest R (both chosen by a cost model,
    :func:`_thinning_plan`).
    Y_E is sampled in full. For j ∈ R, the draws where ``Y_j > τ`` form an i.i.d.
    Bernoulli(p_j) process, ``p_j = Φ̄(τ − v_j)``, sampled by geometric gaps, with values
    from the normal truncated to ``(τ, ∞)`` (inverse CDF). When ``max Y_E ≥ τ`` a class of R
    that did not clear τ cannot win, so nothing more is needed; in the draws where
    ``max Y_E < τ`` (≈1% for high-consensus histograms) the remaining ``Y_j`` are drawn from
    the normal truncated to
    ``(−∞, τ]``. Every ``Y_j`` is thereby drawn from its exact law (a two-component
    mixture), so the counts are exact in distribution; only rarely-needed values are
    generated. When R is empty this is the plain ``argmax(v + Z)``.
    """
    c = v.size
    plan = _thinning_plan(v)
    if plan is None:
        noise = gen.standard_normal((size, c))
        noise += v
        return np.bincount(noise.argmax(axis=1), minlength=c)
    tau, explicit = plan
    p_exceed = special.ndtr(v - tau)  # P(Y_j > τ)
    e_idx = np.flatnonzero(explicit)
    r_idx = np.flatnonzero(~explicit)
    y_e = gen.standard_normal((size, e_idx.size))
    y_e += v[e_idx]
    local = y_e.argmax(axis=1)
    best = y_e[np.arange(size), local]
    winner = e_idx[local]
    del y_e
    exceeded = np.zeros((size, r_idx.size), dtype=bool) if size * r_idx.size <= 2**26 else None
    pos_list, val_list, cls_list = [], [], []
    for k, j in enumerate(r_idx):
        pj = float(p_exceed[j])
        pos = _bernoulli_positions(gen, size, pj)
        if pos.size:
            # Y_j | Y_j > τ: τ − v_j + Φ̄⁻¹(U·Φ̄(τ − v_j)) as v_j − Φ⁻¹(U·p_j).
            vals = v[j] - special.ndtri(gen.random(pos.size) * pj)
            pos_list.append(pos)
            val_list.append(vals)
            cls_list.append(np.full(pos.size, j))
            if exceeded is not None:
                exceeded[pos, k] = True
    if pos_list:
        pos = np.concatenate(pos_list)
        vals = np.concatenate(val_list)
        cls = np.concatenate(cls_list)
        order = np.lexsort((vals, pos))  # by position, then value ascending
        pos, vals, cls = pos[order], vals[order], cls[order]
        last = np.r_[pos[1:] != pos[:-1], True]  # largest exceedance at each position
        pos, vals, cls = pos[last], vals[last], cls[last]
        better = vals > best[pos]
        best[pos[better]] = vals[better]
        winner[pos[better]] = cls[better]
    low = np.flatnonzero(best < tau)
    if low.size:
        if exceeded is None:
            exceeded_low = np.zeros((low.size, r_idx.size), dtype=bool)
            if pos_list:
                all_pos = np.concatenate(pos_list)
                all_cls = np.concatenate(cls_list)
                col = np.searchsorted(r_idx, all_cls)
                hit = np.isin(all_pos, low)
                exceeded_low[np.searchsorted(low, all_pos[hit]), col[hit]] = True
        else:
            exceeded_low = exceeded[low]
        # Y_j | Y_j ≤ τ for the classes that did not clear τ in these draws.
        cdf_below = special.ndtr(tau - v[r_idx])  # P(Y_j ≤ τ)
        u = gen.random((low.size, r_idx.size))
        vals = v[r_idx] + special.ndtri(u * cdf_below)
        vals[exceeded_low] = -np.inf  # already accounted for (and above τ > best)
        k = vals.argmax(axis=1)
        top = vals[np.arange(low.size), k]
        better = top > best[low]
        winner[low[better]] = r_idx[k[better]]
    return np.bincount(winner, minlength=c)


def _bernoulli_positions(gen: np.random.Generator, size: int, p: float) -> np.ndarray:
    """Indices of successes among ``size`` i.i.d. Bernoulli(p) trials (geometric gaps)."""
    if p <= 0.0:
        return np.empty(0, dtype=np.int64)
    expected = size * p
    chunk = int(expected + 6 * math.sqrt(expected + 1) + 16)
    gaps = gen.geometric(p, size=chunk)
    pos = np.cumsum(gaps) - 1
    while pos[-1] < size:
        more = np.cumsum(gen.geometric(p, size=chunk)) + pos[-1]
        pos = np.concatenate([pos, more])
    return pos[pos < size]


def _torch_block(
    v: np.ndarray, size: int, seed: np.random.SeedSequence, *, device=None
) -> np.ndarray:
    from dpaudit.errors import require

    torch = require("torch", "torch")
    dev = torch.device(device) if device is not None else torch.device("cpu")
    b, c = v.shape
    out = np.zeros((b, c), dtype=np.int64)
    vt = torch.as_tensor(v, dtype=torch.float64, device=dev)
    for row in range(b):
        child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, row))
        gen = torch.Generator(device=dev)
        gen.manual_seed(int(child.generate_state(1, dtype=np.uint64)[0] % (2**63)))
        z = torch.randn((size, c), generator=gen, dtype=torch.float64, device=dev)
        z += vt[row]
        counts = torch.bincount(z.argmax(dim=1), minlength=c)
        out[row] = counts.cpu().numpy()
    return out


def sample_argmax_counts(
    votes: ArrayLike,
    sigma: float,
    n: int,
    *,
    rng: RngLike = None,
    backend: str = "numpy",
    block_size: int = DEFAULT_BLOCK_SIZE,
    device: str | None = None,
) -> np.ndarray:
    """Per-class counts of ``n`` independent noisy-argmax draws (Monte Carlo).

    Draws are made in fixed-size blocks; block ``b`` uses the ``b``-th child of
    ``SeedSequence(rng).spawn``, so the counts are a function of ``(rng, n, block_size)``
    only — the same whether blocks run here, in another process or on another backend's
    schedule (each backend has its own generator, so numpy and torch differ in value but
    agree in distribution). Peak memory is that of one block (see :func:`sample_argmax_block`).

    Args:
        votes: histogram ``(C,)`` or batch ``(..., C)``.
        sigma: noise standard deviation σ > 0.
        n: number of draws per histogram, ≥ 0.
        rng: seed or generator (see :mod:`dpaudit._rng`).
        backend: ``"numpy"`` or ``"torch"`` (CPU or CUDA; install the ``torch`` extra).
        block_size: draws per block, ≥ 1.
        device: torch device string (e.g. ``"cuda"``); torch backend only.

    Returns:
        int64 counts of shape ``votes.shape``; each histogram's counts sum to ``n``.

    Raises:
        ValueError, TypeError: bad votes, σ, n, block size or backend.

    Example:
        >>> sample_argmax_counts([200, 30, 20], 40, 1000, rng=0).sum()
        np.int64(1000)
    """
    v, shape = _standardise(votes, sigma)
    n = check_nonneg_int("n", n)
    block_size = check_positive_int("block_size", block_size)
    check_choice("backend", backend, _BACKENDS)
    sizes = _block_sizes(n, block_size)
    seeds = block_seeds(rng, len(sizes))
    total = np.zeros(v.shape, dtype=np.int64)
    for size, seed in zip(sizes, seeds, strict=True):
        total += sample_argmax_block(v, size, seed, backend=backend, device=device)
    return total.reshape(shape)


def sample_argmax_counts_from(
    histogram_sampler: Callable[[np.random.Generator, int], ArrayLike],
    sigma: float,
    n: int,
    *,
    rng: RngLike = None,
    block_size: int = 2**18,
) -> np.ndarray:
    """Counts of ``n`` noisy-argmax draws, each on a fresh random histogram.

    For the parametric models of paper 000 §5: experiment ``t`` draws its own histogram
    ``H_t ~ histogram_sampler`` and answers ``argmax(H_t + N(0, σ²I))``.

    Args:
        histogram_sampler: ``f(gen, size) -> (size, C)`` array of histograms drawn with the
            generator given (it must use no other randomness).
        sigma: noise standard deviation σ > 0.
        n: number of experiments, ≥ 0.
        rng: seed or generator.
        block_size: experiments per block (each block has its own seeded generator, used
            first by the histogram sampler, then for the noise).

    Returns:
        int64 counts ``(C,)`` summing to ``n``.

    Raises:
        TypeError: ``histogram_sampler`` is not callable.
        ValueError: the sampler returns the wrong shape or non-finite values.
    """
    if not callable(histogram_sampler):
        raise TypeError(
            f"histogram_sampler must be callable, got {type(histogram_sampler).__name__}"
        )
    s = check_positive("sigma", sigma)
    n = check_nonneg_int("n", n)
    block_size = check_positive_int("block_size", block_size)
    sizes = _block_sizes(n, block_size)
    seeds = block_seeds(rng, len(sizes))
    total: np.ndarray | None = None
    for size, seed in zip(sizes, seeds, strict=True):
        gen = np.random.Generator(np.random.PCG64(seed))
        hists = np.asarray(histogram_sampler(gen, size), dtype=np.float64)
        if hists.ndim != 2 or hists.shape[0] != size or hists.shape[1] < 2:
            raise ValueError(
                f"histogram_sampler must return an array of shape ({size}, C) with C >= 2, "
                f"got {hists.shape}"
            )
        if not np.all(np.isfinite(hists)):
            raise ValueError("histogram_sampler returned non-finite votes")
        noisy = gen.standard_normal(hists.shape)
        noisy *= s
        noisy += hists
        counts = np.bincount(noisy.argmax(axis=1), minlength=hists.shape[1])
        total = counts if total is None else total + counts
    if total is None:
        hists = np.asarray(histogram_sampler(np.random.default_rng(0), 1), dtype=np.float64)
        return np.zeros(hists.shape[-1], dtype=np.int64)
    return total.astype(np.int64)


def sample_argmax_counts_exact(
    votes: ArrayLike, sigma: float, n: int, *, rng: RngLike = None
) -> np.ndarray:
    """Counts ~ Multinomial(n, Q(H)) with Q from :func:`argmax_probabilities`.

    Exact in distribution for fixed histograms (n i.i.d. draws of the noisy argmax have
    multinomial counts) and O(C) per histogram whatever n. Probabilities are renormalised
    to sum to 1 (they do within 1e-12).

    Example:
        >>> sample_argmax_counts_exact([200, 30, 20], 40, 10**8, rng=0).sum()
        np.int64(100000000)
    """
    from dpaudit._rng import as_generator

    q = argmax_probabilities(votes, sigma)
    n = check_nonneg_int("n", n)
    gen = as_generator(rng)
    p = q / q.sum(axis=-1, keepdims=True)
    return gen.multinomial(n, p).astype(np.int64)
