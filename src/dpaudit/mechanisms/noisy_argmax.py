"""The Gaussian noisy argmax (GNMax): exact output distribution and samplers.

Every private-prediction system in the spec (PATE, CaPC, PromptPATE, Private-kNN; papers 000,
003, 004) answers a query with ``argmax_c (H_c + Z_c)``, ``Z_c ~ N(0, σ²)`` i.i.d., over a vote
histogram ``H``. Its output distribution is (paper 000 Eq. 4; paper 003 Thm 1)

    Q_c(H) = ∫ φ(x − v_c) ∏_{i≠c} Φ(x − v_i) dx,     v = H/σ.

**Quadrature and why it is accurate.** Write ``v = (H − max H)/σ`` (shift invariance, paper
003 Thm 2) and ``f_c = exp(ℓ_c)`` for the integrand of class c. What is *proved* and what is
*estimated* (facts (F1)–(F5) are stated in :mod:`dpaudit.mechanisms._quadrature`):

* (proof, F1) ``−ℓ_c'' = 1 + Σ_{i≠c} κ(x − v_i)`` with κ ∈ (0, 1) decreasing: every integrand
  is strongly log-concave, with curvature between 1 and C that decreases in x; (F2) its mode
  lies right of ``(v_c + v_max)/2``.
* **Shared grid.** One trapezoid grid per histogram serves all classes within 53 units of
  the top (a class further down has Q < 1e-300 and goes to the per-class path): from
  ``(v_min + v_max)/2 − 7.5`` (``SHARED_TAIL``) to at least ``v_max + 7.5``, step
  ``h = 0.3/√max(1, C/10)`` (``SHARED_STEP``; for integer votes the largest multiple of
  ``1/(σ·m)`` not above it, so that ``log Φ`` is tabulated once per lattice point).
  *Left tail, proof (F3):* the left end is ≥ 7.5 left of every mode, so the mass cut off is
  ≤ 2·Φ̄(7.5) = 6.4e-14 relative, for any C. *Right tail, checked bound (F4):* the tangent
  bound of a log-concave function at the last node must be ≤ 1e-13 relative.
  *Discretisation, estimates (F5):* the rule must agree with the step-2h rule to
  ``DISCRETISATION_RTOL = 1e-4`` relative, the local Trefethen–Weideman strip estimate
  (with an upper bound on the curvature) must be ≤ 1e-13 relative, ≥ 8 nodes must lie
  within e^-4.5 of the peak, and the peak must be interior. Why 1e-4 is enough: for a
  Gaussian-shaped integrand of curvature K the trapezoid error is ≈ 2·exp(−2π²/(K·h²))
  (Poisson summation), so the step-2h error is ≈ 2·(err_h/2)^{1/4}; a 2h error of 1e-4
  therefore means err_h ≈ 1e-17. The integrands are not exactly Gaussian, so this and the
  strip estimate are estimates, not bounds; the mpmath comparisons (50 digits) confirm
  them, with observed errors ≤ ~1e-13.
* **Per-class grid.** Entries that fail a check (very unequal histograms, tiny
  probabilities, large C) are recomputed on a grid centred at their own mode (Newton's
  method, globally convergent by convexity of ℓ'), starting 8.5 local standard deviations
  to the left (proof: ≤ 2·Φ̄(8.5) = 1.9e-17 relative lost), extended to the right until
  the tangent bound is ≤ 1e-16, and with the step halved from 0.5 local s.d. until the
  same h/2h (1e-4) and strip (1e-13) estimates pass.
  If that fails within 12 refinements a :class:`~dpaudit.errors.ConvergenceWarning` is
  issued; it never is for the probabilities below 1e-300 handled next.
* **Far tail.** A class more than 1e6 units below the top (``DEEP_GAP``) has
  ``log Q_c < −2.5e11``; Laplace's method at its mode is then bracketed rigorously (F1:
  curvature between 1 and C) within ½·log C, i.e. ≤ 1.4e-11 relative on ``log Q_c`` for
  C ≤ 1000. ``log Q_c = −inf`` only when the true value is below about −1e308 (the class is
  more than ~1e154 standard deviations below), where no double can hold it.

All sums are done in log space, so log-probabilities keep ~1e-13 absolute accuracy (i.e.
relative accuracy of Q) down to 1e-300, and ``log Q`` keeps ~1e-11 relative accuracy or
better further down. ``C = 2`` uses the closed form ``Q_0 = Φ((v_0 − v_1)/√2)``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import special

from dpaudit._rng import as_generator, as_seed_sequence, child_seed
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_array,
    check_memory,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_votes,
    check_work,
    memory_cap,
)
from dpaudit.engine import DEFAULT_ENGINE_BLOCK_SIZE, run_blocks
from dpaudit.mechanisms import _joint
from dpaudit.mechanisms import _quadrature as quad
from dpaudit.mechanisms._kernels import (
    NoisyArgmaxBlock,
    check_backend,
    numpy_generator,
    torch_generator,
)

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "ArgmaxBlock",
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
DEFAULT_BLOCK_SIZE = DEFAULT_ENGINE_BLOCK_SIZE

#: Largest shared-grid quadrature one call may take: histograms × classes × nodes per class
#: (at least ~50, more for many classes; ~10–25 ns each, so ~10–25 s). Raise
#: ``dpaudit.mechanisms.noisy_argmax.MAX_QUADRATURE_NODES`` to allow larger batches.
MAX_QUADRATURE_NODES = 10**9
#: Largest per-class quadrature (the exact fallback and the Jacobian): entries × (classes − 1)
#: offsets, ~5–10 µs each (~20 s). Raise
#: ``dpaudit.mechanisms.noisy_argmax.MAX_PER_CLASS_OFFSETS`` to allow more.
MAX_PER_CLASS_OFFSETS = 2 * 10**6
#: Largest Monte-Carlo work of :func:`sample_argmax_counts`: draws × histograms × classes
#: (~1–10 ns each). Raise ``dpaudit.mechanisms.noisy_argmax.MAX_SAMPLE_DRAWS`` to allow more.
MAX_SAMPLE_DRAWS = 4 * 10**9
#: What one block costs beyond its draws, in class draws: each block spawns its own seeded
#: generator and goes through the engine (~150–200 µs measured with ``block_size=1``, the
#: time of ~4·10⁴ class draws), so tiny blocks count towards :data:`MAX_SAMPLE_DRAWS` too.
BLOCK_OVERHEAD_DRAWS = 40_000


def shared_grid_nodes(num_classes: int) -> int:
    """A lower bound on the shared-grid quadrature nodes per class (see ``_quadrature``)."""
    h = quad.SHARED_STEP / math.sqrt(max(1.0, num_classes / 10.0))
    return 4 * math.ceil(2.0 * quad.SHARED_TAIL / (4.0 * h)) + 1


def check_quadrature_work(num_histograms: int, num_classes: int, what: str) -> None:
    """Refuse, before any allocation, noisy-argmax probabilities of too many histograms.

    The estimate is ``num_histograms × num_classes × nodes`` (:func:`shared_grid_nodes`),
    checked against :data:`MAX_QUADRATURE_NODES`; ``what`` names the argument.
    """
    check_work(
        float(num_histograms) * num_classes * shared_grid_nodes(num_classes),
        MAX_QUADRATURE_NODES,
        what,
        "quadrature nodes",
        "pass fewer histograms or classes, or raise "
        "dpaudit.mechanisms.noisy_argmax.MAX_QUADRATURE_NODES",
    )


def _check_per_class_work(num_entries: int, num_classes: int) -> None:
    check_work(
        float(num_entries) * max(num_classes - 1, 1),
        MAX_PER_CLASS_OFFSETS,
        f"the per-class noisy-argmax quadrature of votes with {num_entries} entries of "
        f"C={num_classes} classes",
        "class offsets",
        "pass fewer histograms or classes, or raise "
        "dpaudit.mechanisms.noisy_argmax.MAX_PER_CLASS_OFFSETS",
    )


def _check_draws(n: int, num_entries: int, what: str, block_size: int | None = None) -> None:
    """Refuse a Monte-Carlo request whose work (draws, plus a fixed cost for every block of
    ``block_size`` draws after the first: :data:`BLOCK_OVERHEAD_DRAWS`) is above
    :data:`MAX_SAMPLE_DRAWS`."""
    blocks = 0 if block_size is None else -(-n // block_size)
    extra = float(max(blocks - 1, 0)) * BLOCK_OVERHEAD_DRAWS
    work = float(n) * num_entries + extra
    hint = "draw fewer"
    if extra > float(n) * num_entries:
        what = f"{what} in {blocks} blocks of block_size={block_size}"
        hint = "raise block_size, draw fewer"
    check_work(
        work,
        MAX_SAMPLE_DRAWS,
        what,
        "class draws",
        f"{hint}, use sample_argmax_counts_exact (O(C) whatever n), or raise "
        "dpaudit.mechanisms.noisy_argmax.MAX_SAMPLE_DRAWS",
    )


def _check_batch(arr: np.ndarray) -> None:
    """Refuse, before the centred copies, a batch whose copies or quadrature are too large."""
    c = arr.shape[-1]
    b = arr.size // max(c, 1)
    what = f"noisy-argmax probabilities of votes with shape {arr.shape}"
    check_memory(24.0 * arr.size, what)  # the centred and standardised copies, the output
    if 32.0 * c * shared_grid_nodes(c) > memory_cap():
        # One histogram's grid is over the memory cap: the quadrature refuses it with the
        # exact (data-dependent) node count, after O(B·C) work on the copies checked above.
        return
    check_quadrature_work(b, c, what)


def _centre(votes: ArrayLike, sigma: float) -> tuple[np.ndarray, float, tuple[int, ...]]:
    """Validated ``(votes − max votes, σ, shape)`` with the differences as (B, C)."""
    arr = check_votes("votes", votes)
    s = check_positive("sigma", sigma)
    _check_batch(arr)
    return _centred(arr), s, arr.shape


def _centred(arr: np.ndarray) -> np.ndarray:
    """``votes − max votes`` per histogram of validated votes, as (B, C)."""
    flat = arr.reshape(-1, arr.shape[-1])
    with np.errstate(over="ignore"):
        return flat - flat.max(axis=1, keepdims=True)


def _standardise(votes: ArrayLike, sigma: float) -> tuple[np.ndarray, tuple[int, ...]]:
    """``v = (votes − max votes)/σ`` per histogram, shape (B, C): ``v ≤ 0``, 0 at the top.

    Shift invariance (paper 003 Thm 2) lets us centre at the maximum; doing it *before*
    dividing by σ keeps integer differences exact and never forms an overflowing ``votes/σ``.
    A difference whose standardised value overflows becomes ``−inf``: that class is more
    than ~1e308 standard deviations below the top, so its log-probability (< −1e616) is
    ``−inf`` to double precision and it cannot affect the other classes.
    """
    diff, s, shape = _centre(votes, sigma)
    with np.errstate(over="ignore"):
        return diff / s, shape


def _log_q_standardised(
    v: np.ndarray, lattice: tuple[np.ndarray, float] | None = None
) -> np.ndarray:
    _b, c = v.shape
    if c == 2:
        # Closed form: Q_0 = Φ((v_0 − v_1)/√2) (difference of two independent normals);
        # log Φ is evaluated accurately down to −inf.
        diff = (v[:, 0] - v[:, 1]) / math.sqrt(2)
        return np.stack([quad.log_ndtr_fast(diff), quad.log_ndtr_fast(-diff)], axis=1)
    deep = v < -quad.DEEP_GAP
    # Classes this far below the top cannot change the other classes' integrals in double
    # precision (Φ(x − v_j) rounds to 1 wherever those integrands live; see DEEP_GAP), so
    # they are clipped there and get their own bound-based value below.
    vc = np.maximum(v, -quad.DEEP_GAP) if deep.any() else v
    log_q, ok, _ = quad.shared_grid_log_q(vc, lattice)
    ok |= deep
    if not ok.all():
        rows, cols = np.nonzero(~ok)
        # Tied classes share offsets: each distinct row is integrated once (same bits per row)
        uniq, inverse = np.unique(_offsets(vc, rows, cols), axis=0, return_inverse=True)
        log_q[rows, cols] = quad.per_class_log_q(uniq)[0][inverse.ravel()]
    if deep.any():
        rows, cols = np.nonzero(deep)
        log_q[rows, cols] = -np.inf  # v = −inf: log Q below every double (_standardise)
        fin = np.isfinite(v[rows, cols])
        rows, cols = rows[fin], cols[fin]
        log_q[rows, cols] = quad.deep_log_q(v[rows, cols], _offsets(v, rows, cols))
    return log_q


def _offsets(v: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """d[m, :] = v_i − v_j over j ≠ i for the (row, class) pairs given."""
    c = v.shape[1]
    _check_per_class_work(rows.size, c)
    quad.check_offsets_memory(rows.size, c)
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
        Array of the same shape as ``votes``; absolute error ≤ 1e-9 (in practice ~1e-13),
        i.e. that relative error on the probability, for probabilities down to 1e-300;
        further down ~1e-11 relative error on the log or better (σ → 0 gives ``log Q ≈
        −gap²/(4σ²)`` for a loser). ``−inf`` only where ``log Q`` is below about −1e308,
        beyond any double (a class more than ~1e154 σ below the top).

    Raises:
        ValueError: σ ≤ 0 or NaN, non-finite votes, fewer than two classes, empty input, or
            more quadrature than :data:`MAX_QUADRATURE_NODES` (histograms × classes × ~50
            nodes) or, for entries the shared grid cannot resolve, than
            :data:`MAX_PER_CLASS_OFFSETS`.
        TypeError: non-numeric input.

    Example:
        >>> lq = log_argmax_probabilities([200, 30, 20], sigma=40)
        >>> round(float(np.exp(lq[0])), 10)
        0.9979943883
    """
    diff, s, shape = _centre(votes, sigma)
    with np.errstate(over="ignore"):
        v = diff / s
    # Integer votes (the usual case) put every quadrature argument on one lattice.
    lattice = (diff, s) if np.array_equal(diff, np.round(diff)) else None
    return _log_q_standardised(v, lattice).reshape(shape)


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
    ``−(Q_i/σ)·E_i[λ(x − v_k)]`` on Q's quadrature grid (λ = φ/Φ); shift invariance (paper
    003 Thm 2) gives ``∂Q_i/∂H_i = −Σ_{k≠i} ∂Q_i/∂H_k``, so every row of ``J`` sums to 0
    and every column sums to 0 (Σ_i Q_i = 1). Relative accuracy ~1e-10.

    Returns:
        ``(q, jac)`` with shapes ``(..., C)`` and ``(..., C, C)``.
    """
    v, shape = _standardise(votes, sigma)
    b, c = v.shape
    _check_per_class_work(b * c, c)  # the Jacobian's size, and the most per-class work
    # Classes more than DEEP_GAP below the top have Q_i = 0 and ∂Q_i/∂H = 0 in double precision
    # and, clipped, change nothing for the others (see _log_q_standardised), as in log Q.
    vc, deep = np.maximum(v, -quad.DEEP_GAP), v < -quad.DEEP_GAP
    log_q, ok, ratio = quad.shared_grid_log_q(vc, weights_mills=True)  # ratio: (B, C, C)
    rows, cols = np.nonzero(~ok & ~deep)
    if rows.size:
        lq, extra = quad.per_class_log_q(_offsets(vc, rows, cols), weights_mills=True)
        log_q[rows, cols], redo = lq, ratio[rows, cols]
        redo[~np.eye(c, dtype=bool)[cols]] = extra.reshape(-1)
        ratio[rows, cols] = redo
    log_q[deep] = -np.inf
    ratio[deep] = 0.0
    q, diag = np.exp(log_q), np.arange(c)
    ratio[:, diag, diag] = 0.0
    jac = -(q[..., None] * ratio) / float(sigma)  # ∂Q_i/∂H_k for k ≠ i
    jac[:, diag, diag] = -jac.sum(axis=2)
    return q.reshape(shape), jac.reshape(*shape, c)


# ----------------------------------------------------------------------------------------
# Samplers
# ----------------------------------------------------------------------------------------

# Thinning plan of the Monte-Carlo kernel (see _numpy_block), chosen per histogram and block
# size by a cost model in nanoseconds per draw (measured with numpy 2.x on one core): a
# Gaussian for an explicit class and its share of the running maximum ~_COST_NORMAL;
# sorting the draws into threshold buckets ~_COST_BUCKET; a threshold crossing of a thinned
# class (geometric gap, inverse-CDF value, merge) ~_COST_CROSS; filling in one thinned class
# in a draw below the lowest threshold ~_COST_FILL; one (bucket, class) step ~_COST_STEP
# per block. The plan affects speed only, never the law.
_COST_NORMAL = 11.0
_COST_BUCKET = 8.0
_COST_CROSS = 40.0
_COST_FILL = 35.0
_COST_STEP = 12_000.0
# The joint-law sampler (dpaudit.mechanisms._joint): one alias-table draw ~_COST_JOINT; a
# "maybe" draw (≲ 1 % of them, _JOINT_MAYBE) ~_COST_MAYBE + _COST_MAYBE_CLASS·C; building
# its table ~_COST_CELL per cell, charged to every block (the table cache is small).
_COST_JOINT = 11.0
_JOINT_MAYBE = 0.01
_COST_MAYBE = 70.0
_COST_MAYBE_CLASS = 20.0
_COST_CELL = 100.0
# Thresholds τ_k = max v − 3 + k/4 (k < 25): a draw whose explicit maximum b lies in
# [τ_k, τ_{k+1}) is tested against τ_k, so a thinned class crosses τ_k not much more often
# than it beats b (roughly e^{(b − v_j)/4} times). A single threshold max v − gap is the
# alternative when sorting the draws does not pay; histograms with few draws (size·C ≤ 4096)
# use the plain argmax.
_BUCKET_LOW = -3.0
_BUCKET_WIDTH = 0.25
_N_BUCKETS = 25
_GAPS = (1.0, 1.5, 2.0, 2.5, 3.0)
_MAX_EXPLICIT = 32


class _Plan(NamedTuple):
    explicit: np.ndarray  # class indices sampled in full, top class first
    thinned: np.ndarray  # the other classes
    taus: np.ndarray  # (K,) thresholds, increasing, evenly spaced when K > 1
    p_cross: np.ndarray  # (K, |R|) P(Y_j > τ_k)
    p_below: np.ndarray  # (|R|,) P(Y_j ≤ τ_0)
    joint: bool = False  # sample from the joint law of (max, argmax) instead


def _thinning_plan(v: np.ndarray, size: int) -> _Plan:
    """Explicit classes and thresholds minimising the modelled cost per draw, or the
    joint-law route when that is cheaper (cached)."""
    return _plan_for(v.tobytes(), size)


@functools.lru_cache(maxsize=1024)
def _plan_for(key: bytes, size: int) -> _Plan:
    v = np.frombuffer(key, dtype=np.float64)
    c = v.size
    order = np.argsort(-v, kind="stable")
    empty = np.empty(0)
    plain = _Plan(order, order[:0], empty, np.empty((0, 0)), empty)
    m_max = min(c - 1, _MAX_EXPLICIT)
    if m_max < 1 or size * c <= 4096 or not np.isfinite(v.max()):
        return plain
    vs = v[order]
    grids = [vs[0] + _BUCKET_LOW + _BUCKET_WIDTH * np.arange(_N_BUCKETS)]
    grids += [np.array([vs[0] - gap]) for gap in _GAPS]
    best_cost, best = _COST_NORMAL * c, None
    m = np.arange(1, m_max + 1)
    for taus in grids:
        # With E the top m classes (sorted by v) and b = max Y_E, for every m at once:
        # P(b ≤ τ) = ∏_{i<m} Φ(τ − v_(i)) and the crossings Σ_{j≥m} Φ̄(τ − v_(j)).
        below = special.ndtr(taus[:, None] - vs)  # (K, C)
        cdf = np.cumprod(below, axis=1)[:, m - 1]  # (K, M)
        cross = np.cumsum((1.0 - below)[:, ::-1], axis=1)[:, ::-1][:, m]  # (K, M)
        in_bucket = np.diff(
            np.vstack([np.zeros((1, m.size)), cdf[1:], np.ones((1, m.size))]), axis=0
        )
        cost = (
            _COST_NORMAL * m
            + (_COST_BUCKET if taus.size > 1 else 2.0)
            + _COST_CROSS * (in_bucket * cross).sum(axis=0)
            + _COST_FILL * cdf[0] * (c - m)
            + _COST_STEP * taus.size * (c - m) / size
        )
        i = int(np.argmin(cost))
        if cost[i] < best_cost:
            best_cost, best = float(cost[i]), (int(m[i]), taus)
    cells = _joint.cells_estimate(v)
    joint_cost = (
        _COST_JOINT
        + _JOINT_MAYBE * (_COST_MAYBE + _COST_MAYBE_CLASS * c)
        + _COST_CELL * cells / size
    )
    if joint_cost < best_cost and cells <= _joint.MAX_CELLS:
        return plain._replace(joint=True)
    if best is None:
        return plain
    m_best, taus = best
    e, r = order[:m_best], np.sort(order[m_best:])
    return _Plan(e, r, taus, special.ndtr(v[r] - taus[:, None]), special.ndtr(taus[0] - v[r]))


def sample_argmax_block(
    v: np.ndarray, size: int, seed: np.random.SeedSequence, *, backend: str = "numpy", device=None
) -> np.ndarray:
    """Counts of ``size`` noisy-argmax draws for standardised histograms ``v`` (B, C).

    One block of the Monte-Carlo sampler: the draws come from the generator seeded by
    ``seed`` only, so a block's counts are the same wherever and whenever it runs.
    Peak memory (numpy), one histogram at a time: ``size`` float64 noise values per
    explicitly sampled class plus about three ``size``-long work arrays, at most
    ``8·size·(C + 3)`` bytes (≈ 109 MB for the default block and C = 10, when every class
    is explicit); with thinning (see :func:`_numpy_block`) only the explicit classes count,
    and the joint-law sampler needs ``24·size`` bytes plus its table (≤ 13 MB).

    Raises:
        TypeError: ``v`` not real numbers, ``size`` not an integer, ``seed`` not a
            ``SeedSequence``.
        ValueError: ``v`` not 2-d or with NaN / +inf (−inf marks a class that cannot win),
            ``size`` negative, an unknown ``backend``, or a block beyond the memory cap.
    """
    v = _check_block_args(v, size, seed, backend, device)
    b, c = v.shape
    out = np.zeros((b, c), dtype=np.int64)
    if size == 0:
        return out
    if backend == "torch":
        return _torch_block(v, size, seed, device=device)
    for row in range(b):
        out[row] = _numpy_block(v[row], size, _row_generator(seed, row, b))
    return out


def _check_block_args(
    v: object, size: object, seed: object, backend: object, device: object
) -> np.ndarray:
    """The block kernel's arguments, checked (cheap next to a block's draws)."""
    arr = check_array("v", v, ndim=2, finite=False)
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError("v must hold finite standardised votes (or -inf), got NaN or +inf")
    check_nonneg_int("size", size)
    if not isinstance(seed, np.random.SeedSequence):
        raise TypeError(f"seed must be a numpy SeedSequence, got {type(seed).__name__}")
    check_backend(backend, device)  # type: ignore[arg-type]
    check_memory(8.0 * float(size) * (arr.shape[1] + 3), f"a block of {size} draws")
    return arr


def _row_generator(seed: np.random.SeedSequence, row: int, num_rows: int) -> np.random.Generator:
    """The stream of histogram ``row`` in one block: the child key ``(row,)`` of the block's
    seed, so a histogram's counts do not depend on which others share the batch (as long as
    it keeps its row index)."""
    del num_rows
    return numpy_generator(child_seed(seed, row))


def _numpy_block(v: np.ndarray, size: int, gen: np.random.Generator) -> np.ndarray:
    """Exact noisy-argmax counts for one standardised histogram, with thinning.

    Write ``Y_j = v_j + Z_j``. The classes are split into an explicit set E (sampled in
    full) and the rest R, with thresholds ``τ_0 < … < τ_{K−1}`` (all chosen by a cost model,
    :func:`_thinning_plan`; the split affects speed only). Let ``b = max Y_E`` and give each
    draw the threshold ``θ = τ_k`` of its bucket: the largest ``τ_k ≤ b`` up to rounding,
    never above b, or ``τ_0`` if ``b < τ_0``. Given ``Y_E`` the ``Y_j``, j ∈ R, are still
    independent with their original laws. For each bucket and each j ∈ R, the draws of the
    bucket where ``Y_j > θ`` form an i.i.d. Bernoulli(p) process, ``p = Φ̄(θ − v_j)``,
    sampled by geometric gaps (:func:`_bernoulli_positions`), with values from the normal
    truncated to ``(θ, ∞)`` (inverse CDF), merged into the running maximum. Every other
    ``Y_j`` is ``≤ θ``: when ``θ ≤ b`` it cannot win and is never generated; it matters only
    in draws with ``b < τ_0`` where no class of R crossed, and there the ``Y_j`` are drawn
    from the normal truncated to ``(−∞, τ_0]``. Each ``Y_j`` thus follows its exact law (a
    two-component mixture), independently, so the counts are exact in distribution; values
    that cannot change the argmax are simply not generated. When R is empty this is the
    plain ``argmax(v + Z)``.

    Where the cost model says it pays (low consensus, large blocks; ``plan.joint``), the
    block is drawn instead from the joint law of (max, argmax) by the ziggurat-style
    rejection sampler of :mod:`dpaudit.mechanisms._joint`: about one uniform per draw,
    exact in distribution as well.
    """
    c = v.size
    plan = _thinning_plan(v, size)
    if plan.joint:
        return _joint.sample_joint(_joint.joint_table(v), size, gen)
    e_idx, r_idx, taus = plan.explicit, plan.thinned, plan.taus
    # Explicit classes, one row each (a running maximum over rows is several times faster
    # than argmax along a short last axis). Exact ties (probability ~0) keep the earlier row.
    y = gen.standard_normal((e_idx.size, size))
    best = y[0]
    best += v[e_idx[0]]
    winner = np.full(size, e_idx[0], dtype=np.intp)
    for row, j in zip(y[1:], e_idx[1:], strict=True):
        row += v[j]
        better = row > best
        np.maximum(best, row, out=best)
        winner[better] = j
    if r_idx.size == 0:
        return np.bincount(winner, minlength=c)
    best = best.copy()
    del y
    if taus.size == 1:
        buckets = [(0, None)]
    else:
        k = np.floor((best - taus[0]) * (1.0 / _BUCKET_WIDTH))
        np.clip(k, 0, taus.size - 1, out=k)
        k = k.astype(np.uint8)
        k -= (taus[k] > best) & (k > 0)  # after rounding, still τ_k ≤ b unless k = 0
        order = np.argsort(k, kind="stable")
        edges = np.r_[0, np.cumsum(np.bincount(k, minlength=taus.size))]
        buckets = [(kk, order[edges[kk] : edges[kk + 1]]) for kk in range(taus.size)]
    for kk, draws in buckets:
        n_k = size if draws is None else draws.size
        if n_k == 0:
            continue
        theta = float(taus[kk])
        for j, p in zip(r_idx, plan.p_cross[kk].tolist(), strict=True):
            pos = _bernoulli_positions(gen, n_k, p)
            if pos.size == 0:
                continue
            if draws is not None:
                pos = draws[pos]
            # Y_j | Y_j > θ is v_j − Φ⁻¹(U·p), U uniform on (0, 1]. Rounding may put a value
            # just below θ; it is lifted to θ so that "best < τ_0" below still means "no
            # class of R crossed in this draw".
            vals = v[j] - special.ndtri((1.0 - gen.random(pos.size)) * p)
            np.maximum(vals, theta, out=vals)
            better = vals > best[pos]
            pos = pos[better]
            best[pos] = vals[better]
            winner[pos] = j
    low = np.flatnonzero(best < taus[0])
    if low.size:
        # Y_j | Y_j ≤ τ_0, i.e. v_j + Φ⁻¹(U·Φ(τ_0 − v_j)), for every class of R in these draws.
        u = gen.random((low.size, r_idx.size))
        u *= plan.p_below
        vals = special.ndtri(u)
        vals += v[r_idx]
        top_k = vals.argmax(axis=1)
        top = np.take_along_axis(vals, top_k[:, None], axis=1)[:, 0]
        better = top > best[low]
        winner[low[better]] = r_idx[top_k[better]]
    return np.bincount(winner, minlength=c)


def _bernoulli_positions(gen: np.random.Generator, size: int, p: float) -> np.ndarray:
    """Indices of successes among ``size`` i.i.d. Bernoulli(p) trials (geometric gaps).

    Each gap is capped at ``size + 1`` before the cumulative sum. This leaves the returned
    indices unchanged, hence exact in law: a gap ``g > size + 1`` puts its success at index
    ``≥ size`` whatever came before, and so are all later ones, which are all dropped
    either way. Without the cap, numpy's geometric draws saturate at ``2**63 − 1`` for
    ``p ≲ 1e-18`` and their sum overflows to negative indices. With it, the sum is at most
    ``chunk·(size + 1)`` and every refill advances by at least one trial, so the loop ends.
    """
    if p <= 0.0:
        return np.empty(0, dtype=np.int64)
    expected = size * p
    chunk = int(expected + 6 * math.sqrt(expected + 1) + 16)
    cap = size + 1
    pos = np.cumsum(np.minimum(gen.geometric(p, size=chunk), cap)) - 1
    while pos[-1] < size:
        more = np.cumsum(np.minimum(gen.geometric(p, size=chunk), cap)) + pos[-1]
        pos = np.concatenate([pos, more])
    return pos[pos < size]


def _torch_block(
    v: np.ndarray, size: int, seed: np.random.SeedSequence, *, device=None
) -> np.ndarray:
    b, c = v.shape
    out = np.zeros((b, c), dtype=np.int64)
    for row in range(b):
        torch, dev, gen = torch_generator(seed, row, device)
        z = torch.randn((size, c), generator=gen, dtype=torch.float64, device=dev)
        z += torch.as_tensor(v[row], dtype=torch.float64, device=dev)
        counts = torch.bincount(z.argmax(dim=1), minlength=c)
        out[row] = counts.cpu().numpy()
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class ArgmaxBlock:
    """Kernel of :func:`sample_argmax_counts`: noisy-argmax counts for fixed histograms.

    ``ArgmaxBlock(votes, sigma)(size, seed)`` is the counts of ``size`` draws of
    ``argmax(H + N(0, σ²I))`` for every histogram of ``votes``, drawn from ``seed`` only
    (:func:`sample_argmax_block` on the standardised histograms), so it can run as one block
    of :func:`dpaudit.engine.run_blocks` anywhere, in any order.

    Attributes:
        votes: a histogram ``(C,)`` or a batch ``(..., C)``, C ≥ 2, finite.
        sigma: noise standard deviation σ > 0.
        backend: ``"numpy"`` (exact: thinning, or the joint-law sampler where it pays) or
            ``"torch"`` (CPU or CUDA).
        device: torch device string (e.g. ``"cuda"``); torch backend only.

    Example:
        >>> blk = ArgmaxBlock([200, 30, 20], 40.0)
        >>> blk(1000, np.random.SeedSequence(0)).sum()
        np.int64(1000)
    """

    votes: np.ndarray
    sigma: float
    backend: str = "numpy"
    device: str | None = None

    def __post_init__(self) -> None:
        votes = check_votes("votes", self.votes)
        votes.setflags(write=False)
        sigma = check_positive("sigma", self.sigma)
        check_backend(self.backend, self.device)
        object.__setattr__(self, "votes", votes)
        object.__setattr__(self, "sigma", sigma)
        with np.errstate(over="ignore"):  # as _standardise: overflow gives −inf (no effect)
            object.__setattr__(self, "_standardised", _centred(votes) / sigma)

    @property
    def standardised(self) -> np.ndarray:
        """``(votes − max votes)/σ`` as a (B, C) array (see :func:`_standardise`)."""
        return self._standardised

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the counts a block returns (that of ``votes``)."""
        return tuple(self.votes.shape)

    def __call__(self, size: int, seed: np.random.SeedSequence) -> IntArray:
        v = self.standardised
        out = sample_argmax_block(v, size, seed, backend=self.backend, device=self.device)
        return out.reshape(self.shape)


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

    Runs :class:`ArgmaxBlock` through :func:`dpaudit.engine.run_blocks` (serial): block ``b``
    uses the ``b``-th child of ``SeedSequence(rng).spawn``, so the counts are a function of
    ``(rng, n, block_size)`` only — the same whether blocks run here, in another process or
    on another schedule (each backend has its own generator, so numpy and torch differ in
    value but agree in distribution). Peak memory is that of one block (see
    :func:`sample_argmax_block`); for parallel executors or checkpoints call
    ``run_blocks(ArgmaxBlock(votes, sigma), n, ...)`` directly: the counts are the same.

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
        ValueError, TypeError: bad votes, σ, n, block size, backend or device, or
            ``n × votes.size`` (plus :data:`BLOCK_OVERHEAD_DRAWS` per block) above
            :data:`MAX_SAMPLE_DRAWS` (use :func:`sample_argmax_counts_exact` for huge n).

    Example:
        >>> sample_argmax_counts([200, 30, 20], 40, 1000, rng=0).sum()
        np.int64(1000)
    """
    kernel = ArgmaxBlock(votes, sigma, backend=backend, device=device)
    n = check_nonneg_int("n", n)
    block_size = check_positive_int("block_size", block_size)
    _check_draws(
        n,
        kernel.votes.size,
        f"sample_argmax_counts with n={n} draws of votes with shape {kernel.shape}",
        block_size,
    )
    if n == 0:
        as_seed_sequence(rng)  # validates rng (and advances a Generator, as for n > 0)
        return np.zeros(kernel.shape, dtype=np.int64)
    return run_blocks(kernel, n, rng=rng, block_size=block_size).counts


def sample_argmax_counts_from(
    histogram_sampler: Callable[[np.random.Generator, int], ArrayLike],
    sigma: float,
    n: int,
    *,
    rng: RngLike = None,
    block_size: int = 2**18,
) -> np.ndarray:
    """Counts of ``n`` noisy-argmax draws, each on a fresh random histogram.

    For the parametric models of Chadha et al. 2024 (arXiv:2402.09403, §5): experiment ``t``
    draws its own histogram ``H_t ~ histogram_sampler`` and answers
    ``argmax(H_t + N(0, σ²I))``. Runs :class:`dpaudit.mechanisms.NoisyArgmaxBlock` with
    ``chunk=block_size`` through :func:`dpaudit.engine.run_blocks` (serial).

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
        ValueError: the sampler returns the wrong shape or non-finite values, or ``2n`` is
            above :data:`MAX_SAMPLE_DRAWS`.

    Example:
        >>> def fixed(gen, size):
        ...     return np.tile([3.0, 0.0], (size, 1))
        >>> int(sample_argmax_counts_from(fixed, 1.0, 1000, rng=0).sum())
        1000
    """
    n = check_nonneg_int("n", n)
    block_size = check_positive_int("block_size", block_size)
    # C ≥ 2 classes per experiment: the estimate is a lower bound until the sampler runs.
    _check_draws(n, 2, f"sample_argmax_counts_from with n={n} experiments", block_size)
    kernel = NoisyArgmaxBlock(histogram_sampler, sigma, chunk=block_size)
    if n == 0:
        as_seed_sequence(rng)  # validates rng (and advances a Generator, as for n > 0)
        return np.zeros(kernel(1, np.random.SeedSequence(0)).shape, dtype=np.int64)
    return run_blocks(kernel, n, rng=rng, block_size=block_size).counts


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
    q = argmax_probabilities(votes, sigma)
    n = check_nonneg_int("n", n)
    gen = as_generator(rng)
    p = q / q.sum(axis=-1, keepdims=True)
    return gen.multinomial(n, p).astype(np.int64)
