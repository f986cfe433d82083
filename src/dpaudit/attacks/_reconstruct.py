"""Vote-histogram reconstruction from repeated noisy-argmax answers (Wang et al. 2022 §3).

A client that sends the same query M times to a PATE interface observes M i.i.d. draws of
``argmax_c (H_c + N(0, σ²))``, i.e. counts ``n ~ Multinomial(M, Q(H))`` with ``Q`` the
noisy-argmax output distribution (Wang et al. 2022 Thm 1; Chadha et al. 2024 Eq. 4). We estimate
``H`` on the
scaled simplex ``{H ≥ 0, Σ H = N}`` by

* ``objective="mle"``: maximum likelihood, ``max Σ_c n_c log Q_c(H)`` (the multinomial
  likelihood of the observed answers), plus, for Confident GNMax, the Bernoulli likelihood of
  the answered/abstained split (Papernot et al. 2018 Alg. 1, arXiv:1802.08908);
* ``objective="l2"``: Wang et al. 2022 §3.2 Step 2, ``min ‖Q(H) − q̄‖₂`` with ``q̄ = n/M`` (we
  minimise
  its square, which has the same minimiser and a smooth gradient).

**Why the constraint set is the simplex, and why SLSQP.** ``Q`` depends on ``H`` only through
the differences ``H_i − H_j`` (Wang et al. 2022 Thm 2), so the equality ``Σ H = N`` removes exactly
the one direction the data cannot see; what remains is a genuine inequality constraint
``H ≥ 0`` (the spread of a histogram of N votes is bounded). A class never observed pushes the
likelihood towards ``H_c → −∞``, so its estimate sits *on* the boundary ``H_c = 0``. A
softmax/logit reparametrisation would move that optimum to infinity (L-BFGS then stalls and
the class's interval is meaningless), and the paper's unconstrained descent followed by a
shift can return negative votes. The problem is small (C variables), smooth, with one linear
equality and box bounds, and we have exact gradients, so we use sequential quadratic
programming (``scipy.optimize.minimize(method="SLSQP")``) on ``x = H/N`` with the analytic
gradient ``∇_H = −Σ_i (n_i/M)·J_i·/Q_i`` (MLE) or ``2 Jᵀ(Q − q̄)`` (L2), where
``J = ∂Q/∂H`` comes from :func:`dpaudit.mechanisms.argmax_probabilities_jacobian`. It converges
superlinearly from the starting point below in ~10–25 iterations (C = 10).

**Starting point.** With i.i.d. Gumbel noise of scale b the argmax distribution is
``softmax(H/b)`` (McFadden 1974); matching the Gaussian's variance gives ``b = σ√6/π`` and the
start ``H⁰ = Π_simplex(b·log((n + ½)/(M + C/2)))`` (Euclidean projection onto the simplex,
Duchi et al. 2008; Malek et al. 2021, arXiv:2106.03408).

**Flat objectives.** When the noise is small next to the gaps between counts, most classes
are never (or almost never) answered and their probabilities at sensible H are ~1e-15 or
smaller: the objective is then flat to double precision in their direction, SLSQP's
absolute stopping rule fires wherever it starts, and an estimate far from the optimum looks
converged. Three things prevent that. (i) The dominant class's ``log Q_k`` is computed as
``log1p(−Σ_{c≠k} Q_c)`` from the accurate small probabilities (with the matching gradient),
so the likelihood is accurate to ~1e-13 relative however close ``Q_k`` is to 1. (ii) What
can be proved is used (:func:`_reduction`): without the threshold model every unobserved
class has MLE 0 (moving its votes onto the observed classes raises every observed ``Q``), so
a single observed class gives the vertex ``H = N·e_k`` exactly (also the L2 minimiser), and
with an observed class fixed (profile) the unobserved classes may be tied (``log Q`` is
concave, Prékopa, and the likelihood symmetric in them). (iii) After SLSQP, classes with
``Q_c < 1e-6`` that still hold votes are tested: moving their votes onto the other free
classes is taken if it does not increase the objective, and ``converged`` is False if the
objective cannot tell the two points apart.

**Intervals.** ``"profile"``: per-class profile-likelihood intervals (Wilks): the set of h
with ``2·[ℓ(Ĥ) − max_{H_c = h} ℓ(H)] ≤ χ²₁(confidence_level)``, each endpoint found by a
safeguarded secant search on the signed root deviance with warm-started constrained inner
fits. At the boundary ``H_c = 0`` the statistic's null law is ½χ²₀ + ½χ²₁, so the χ²₁ cut-off is
conservative there; unobserved classes get ``[0, upper]``. Intervals are per class
(pointwise), asymptotic, and belong to the likelihood, whatever the objective of the point
estimate. ``"bootstrap"``: parametric bootstrap percentile intervals (resample counts from
``Q(Ĥ)``, refit with the same objective).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
from scipy import optimize, special, stats

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_counts,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_real,
)
from dpaudit.errors import ConvergenceWarning
from dpaudit.mechanisms import (
    argmax_probabilities,
    argmax_probabilities_jacobian,
    log_argmax_probabilities,
    project_to_simplex,
)

__all__ = [
    "OBJECTIVES",
    "HistogramReconstruction",
    "normalised_l1_error",
    "project_to_simplex",
    "reconstruct_histogram",
]

OBJECTIVES = ("mle", "l2")
INTERVAL_METHODS = ("profile", "bootstrap", "none")
_INTERVAL_NAMES = {
    "profile": "profile-likelihood",
    "bootstrap": "parametric-bootstrap",
    "none": "none",
}
_TINY = 1e-300
_SLSQP_FTOL = 1e-15
# SLSQP's "positive directional derivative in line search" (status 8) is what it reports when
# it sits at the optimum to machine precision; we accept it if the KKT residual is small.
_KKT_TOL = 1e-7
# SLSQP's stopping rule |Δf| < ftol is absolute, so it also fires on an objective that is
# flat to that precision, far from the optimum. That happens when some classes have all but
# left the competition (Q_c < _IDLE_Q at the solution): the objective then depends on their
# votes only through tiny terms (Q_c for the likelihood, Q_c² for L2). See _solve.
_IDLE_Q = 1e-6
# Profile search: stop when the signed root deviance is within this of its target.
_PROFILE_RTOL = 2e-3
_PROFILE_MAX_EVALS = 40


# --------------------------------------------------------------------------- helpers


def normalised_l1_error(true_votes: ArrayLike, estimated_votes: ArrayLike) -> float:
    """Paper 003 §4.1 error rate ``Σ_i |H_i − Ĥ_i| / (2 Σ_i |H_i|)``.

    It is the fraction of the N votes that are mis-counted (0 = exact, 1 = disjoint support
    when both sum to N).

    Args:
        true_votes: the true histogram H (C,), not all zero.
        estimated_votes: the estimate Ĥ (C,).

    Returns:
        The normalised L1 error.

    Raises:
        ValueError: shapes differ, non-finite entries, or H is all zero.

    Example:
        >>> normalised_l1_error([200, 30, 20], [190, 40, 20])
        0.04
    """
    from dpaudit._validate import check_array

    h = check_array("true_votes", true_votes, ndim=1)
    e = check_array("estimated_votes", estimated_votes, ndim=1)
    if h.shape != e.shape:
        raise ValueError(
            f"estimated_votes must have the shape of true_votes {h.shape}, got {e.shape}"
        )
    denom = 2.0 * np.abs(h).sum()
    if denom == 0:
        raise ValueError(f"true_votes must not be all zero, got {true_votes!r}")
    return float(np.abs(h - e).sum() / denom)


def _gumbel_start(counts: np.ndarray, sigma: float, total: float) -> FloatArray:
    """Start point: invert the logit (Gumbel-noise) approximation of the argmax, then project."""
    c = counts.size
    scale = sigma * math.sqrt(6.0) / math.pi
    logits = scale * np.log((counts + 0.5) / (counts.sum() + 0.5 * c))
    return project_to_simplex(logits - logits.mean() + total / c, total)


# --------------------------------------------------------------------------- objective


def _dominant_log_q(log_q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Recompute the log-probability of each row's dominant class from the others.

    ``log_argmax_probabilities`` is accurate to ~1e-13 *relative* in each Q_c, so a class
    with ``Q_k ≈ 1`` gets ``log Q_k`` with an absolute error of ~1e-15 — larger than the
    whole signal once the other classes' probabilities fall below ~1e-15 (a likelihood
    that looks flat, and SLSQP stops where it started). Where the other classes hold at
    most half the mass we use ``log Q_k = log1p(−Σ_{c≠k} Q_c)`` instead: the small Q_c
    are accurate relative to themselves, so this is accurate to ~1e-13 relative to
    ``|log Q_k|`` at any size.

    Args:
        log_q: (B, C) log-probabilities.

    Returns:
        ``(log_q, k, use)``: the corrected copy, each row's dominant class, and the rows
        where the correction applies.
    """
    out = np.array(log_q, dtype=np.float64, copy=True)
    rows = np.arange(out.shape[0])
    k = np.argmax(out, axis=1)
    q = np.exp(out)
    q[rows, k] = 0.0
    rest = q.sum(axis=1)
    use = rest <= 0.5
    out[rows[use], k[use]] = np.log1p(-rest[use])
    return out, k, use


class _Objective:
    """Mean negative log-likelihood (``"mle"``) or squared L2 distance (``"l2"``) in H.

    For the MLE with a Confident-GNMax threshold model, answered/abstained add
    ``A·log p + B·log(1 − p)``, ``p = Φ((max H − T)/σ1)`` (noise on the max count only,
    Papernot et al. 2018 Alg. 1), and everything is divided by the number of charged queries.
    """

    def __init__(
        self,
        kind: str,
        counts: np.ndarray,
        sigma: float,
        abstentions: int,
        threshold: float | None,
        sigma1: float | None,
    ) -> None:
        self.kind = kind
        self.sigma = sigma
        answered = int(counts.sum())
        self.answered = answered
        self.use_threshold = kind == "mle" and threshold is not None
        self.abstentions = abstentions if self.use_threshold else 0
        self.total = answered + self.abstentions
        self.threshold = threshold
        self.sigma1 = sigma1
        if kind == "mle":
            self.weights = counts / self.total
        else:
            self.weights = counts / answered
        self.observed = counts > 0
        self._key: bytes | None = None
        self._cached: tuple[float, np.ndarray] | None = None

    def _threshold_terms(self, votes: np.ndarray) -> tuple[float, np.ndarray]:
        assert self.threshold is not None and self.sigma1 is not None
        k = int(np.argmax(votes))
        z = (votes[k] - self.threshold) / self.sigma1
        a = self.answered / self.total
        b = self.abstentions / self.total
        log_p = float(special.log_ndtr(z))
        log_1mp = float(special.log_ndtr(-z))
        value = -(a * log_p + b * log_1mp)
        log_phi = -0.5 * z * z - 0.5 * math.log(2 * math.pi)
        dz = -(a * math.exp(log_phi - log_p) - b * math.exp(log_phi - log_1mp))
        grad = np.zeros_like(votes)
        grad[k] = dz / self.sigma1
        return value, grad

    def value_and_grad(self, votes: np.ndarray) -> tuple[float, np.ndarray]:
        """Objective and its gradient with respect to the votes (cached on the last point)."""
        key = votes.tobytes()
        if key == self._key and self._cached is not None:
            return self._cached
        q, jac = argmax_probabilities_jacobian(votes, self.sigma)
        # The value comes from the same routine as line-search trial points (consistency
        # matters at SLSQP's tolerance); the gradient from the Jacobian.
        value = float(self.values(votes[None, :])[0])
        if self.kind == "mle":
            coef = self.weights / np.maximum(q, _TINY)
            rows = jac
            log_q, k, use = _dominant_log_q(np.log(np.maximum(q, _TINY))[None, :])
            if use[0]:
                # Matching gradient of log Q_k = log1p(−Σ_{c≠k} Q_c): ∇Q_k = −Σ_{c≠k} ∇Q_c
                # (the columns of J sum to 0), which keeps the small classes' accuracy
                # where J's own row k would carry Q_k's absolute error.
                kk = int(k[0])
                rows = jac.copy()
                rows[kk] = -(jac.sum(axis=0) - jac[kk])
                coef[kk] = self.weights[kk] / math.exp(log_q[0, kk])
            grad = -(coef @ rows)
            if self.use_threshold:
                grad = grad + self._threshold_terms(votes)[1]
        else:
            grad = 2.0 * ((q - self.weights) @ jac)
        self._key = key
        self._cached = (value, grad)
        return value, grad

    def solver_scale(self, votes: np.ndarray) -> float:
        """The factor the objective is multiplied by for SLSQP, whose stopping rule
        ``|Δf| < ftol`` is absolute: 1 for the mean NLL (of order 1); for the L2 objective,
        which is ~C/M at its optimum, ``1/‖Q − q̄‖²`` at the start (within [1, 1e8])."""
        if self.kind == "mle":
            return 1.0
        return float(np.clip(1.0 / max(self.value(votes), 1e-300), 1.0, 1e8))

    def value(self, votes: np.ndarray) -> float:
        """Objective only (a line-search trial point needs no Jacobian)."""
        key = votes.tobytes()
        if key == self._key and self._cached is not None:
            return self._cached[0]
        return float(self.values(votes[None, :])[0])

    def values(self, batch: np.ndarray) -> np.ndarray:
        """Objective at each row of a batch of histograms (no gradient)."""
        if self.kind == "mle":
            w = self.weights
            pos = w > 0
            logq = _dominant_log_q(log_argmax_probabilities(batch, self.sigma))[0]
            out = -(logq[:, pos] @ w[pos])
            if self.use_threshold:
                assert self.threshold is not None and self.sigma1 is not None
                z = (batch.max(axis=1) - self.threshold) / self.sigma1
                a = self.answered / self.total
                b = self.abstentions / self.total
                out = out - (a * special.log_ndtr(z) + b * special.log_ndtr(-z))
            return out
        q = argmax_probabilities(batch, self.sigma)
        r = q - self.weights
        return np.einsum("ij,ij->i", r, r)


@dataclasses.dataclass
class _Fit:
    votes: np.ndarray
    value: float
    iterations: int
    converged: bool
    message: str


def _kkt_residual(grad: np.ndarray, x: np.ndarray, free: np.ndarray) -> float:
    """Stationarity residual on the simplex: free coordinates share one multiplier, bound
    ones (x = 0) have gradient ≥ it."""
    inner = free & (x > 1e-10)
    if not inner.any():
        return 0.0
    mu = float(np.mean(grad[inner]))
    res = np.abs(grad[inner] - mu).max()
    at_zero = free & ~inner
    if at_zero.any():
        res = max(res, float(np.max(np.maximum(mu - grad[at_zero], 0.0))))
    return float(res)


def _reduction(obj: _Objective, fixed: tuple[int, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """Classes whose optimal votes are known in advance: ``(pinned, tied)`` masks.

    ``pinned``: provably ``H_c = 0`` at the optimum; ``tied``: there is an optimum where
    these classes hold equal votes, so the solver may keep them equal.

    * Multinomial likelihood, no threshold model. (i) Moving the votes of an unobserved
      class j equally onto the observed classes keeps the differences among them and lowers
      every ``H_j − H_o`` and ``H_u − H_o`` (o observed, u unobserved), so every observed
      ``Q_o`` strictly increases (it is decreasing in each other class's votes, and the
      noise has full support): every unobserved class is 0 at the optimum — also with an
      *unobserved* class fixed (profile intervals). With a single observed class k this
      leaves the vertex ``H = N·e_k``: no other histogram gives ``Q_k`` as large, since
      each ``H_j − H_k ≥ −N`` with equality only there. (ii) With an *observed* class fixed
      (i) fails, but ``log Q_c`` is concave in H (Prékopa: the Gaussian measure of a
      translated convex set) and the likelihood is symmetric in the unobserved classes'
      votes, so averaging an optimum over their permutations is again an optimum: they may
      be tied.
    * L2 objective with a single observed class k and nothing fixed:
      ``‖Q − e_k‖² = (1 − Q_k)² + Σ_{j≠k} Q_j² ≥ S²·C/(C − 1)`` with ``S = 1 − Q_k``
      (Cauchy–Schwarz); the vertex ``N·e_k`` attains the smallest S and, its other classes
      being symmetric, the equality: it is the unique minimiser.
    * Otherwise (threshold model, the L2 objective with several observed classes) nothing
      is assumed.
    """
    c = obj.observed.size
    none = np.zeros(c, dtype=bool)
    group = ~obj.observed
    if fixed is not None:
        group = group.copy()
        group[fixed[0]] = False
    if obj.kind == "mle" and not obj.use_threshold:
        if fixed is not None and obj.observed[fixed[0]]:
            return none, group
        return group, none
    if obj.kind == "l2" and fixed is None and int(obj.observed.sum()) == 1:
        return group, none
    return none, none


def _solve(
    obj: _Objective,
    total: float,
    start: np.ndarray,
    *,
    fixed: tuple[int, float] | None = None,
    max_iter: int = 500,
) -> _Fit:
    """Minimise the objective over ``{H ≥ 0, Σ H = total}`` (optionally with H_c = h fixed).

    The classes of :func:`_reduction` are pinned at 0 or tied; SLSQP works on the remaining
    coordinates (one per free class, one for the tied group), ``H = base + total·A·y`` with
    ``aᵀy = (total − Σ base)/total``, ``a`` the column sums of ``A``. When that leaves a
    single point (e.g. one observed class: the vertex), it is the solution.
    """
    c = start.size
    base = np.zeros(c)
    pinned, tied = _reduction(obj, fixed)
    free = ~pinned & ~tied
    if fixed is not None:
        free[fixed[0]] = False
        base[fixed[0]] = fixed[1]
    columns = [np.array([i]) for i in np.flatnonzero(free)]
    if tied.any():
        columns.append(np.flatnonzero(tied))
    k = len(columns)
    a = np.array([col.size for col in columns], dtype=np.float64)
    remaining = max(total - float(base.sum()), 0.0)
    if k <= 1 or remaining == 0.0:
        votes = base.copy()
        for col in columns:
            votes[col] = remaining / (a.sum() if a.size else 1.0)
        value = obj.value_and_grad(votes)[0]
        return _Fit(votes, value, 0, True, "the constraints leave a single point")

    share = remaining / total

    def full(y: np.ndarray) -> np.ndarray:
        votes = base.copy()
        yy = np.clip(y, 0.0, None) * total
        for col, v in zip(columns, yy, strict=True):
            votes[col] = v
        return votes

    def reduce(vec: np.ndarray) -> np.ndarray:
        return np.array([vec[col].sum() for col in columns])

    def run(y0: np.ndarray, factor: float) -> tuple[np.ndarray, optimize.OptimizeResult]:
        def fun(y: np.ndarray) -> float:
            return obj.value(full(y)) * factor

        def jac(y: np.ndarray) -> np.ndarray:
            return reduce(obj.value_and_grad(full(y))[1]) * (total * factor)

        res = optimize.minimize(
            fun,
            y0,
            jac=jac,
            method="SLSQP",
            bounds=[(0.0, share / ai) for ai in a],
            constraints=[{"type": "eq", "fun": lambda y: a @ y - share, "jac": lambda y: a}],
            options={"ftol": _SLSQP_FTOL, "maxiter": max_iter},
        )
        y = np.clip(res.x, 0.0, None)
        return y * (share / (a @ y)), res

    def accepted(y: np.ndarray, res: optimize.OptimizeResult) -> bool:
        if res.success:
            return True
        # Stationarity per unit of mass: ∇_y f = μ·a at an optimum, so compare ∇_y f / a.
        g = reduce(obj.value_and_grad(full(y))[1]) / a
        return res.status == 8 and _kkt_residual(g * total, y, np.ones(k, dtype=bool)) < _KKT_TOL

    mass0 = np.array([start[col].sum() for col in columns]) / total
    mass0 = project_to_simplex(mass0 + (share - mass0.sum()) / k, share)
    factor = obj.solver_scale(full(mass0 / a))
    y, res = run(mass0 / a, factor)
    converged = accepted(y, res)
    iterations = int(res.nit)
    message = str(res.message)
    # Flat directions. Columns whose classes all have tiny probability at the solution but
    # still hold votes may be placed by nothing SLSQP can resolve (SLSQP stops on |Δf| <
    # ftol wherever the objective is that flat). Moving those votes equally onto the other
    # free classes keeps every difference among the latter: if that does not increase the
    # objective, take the move and re-solve from there; if it increases it by less than
    # SLSQP can resolve, those votes are not determined (not converged); otherwise they are
    # held where they are by the rest of the objective (e.g. a fixed or pinned class).
    q = argmax_probabilities(full(y), obj.sigma)
    idle = np.array([bool(np.all(q[col] < _IDLE_Q)) for col in columns]) & (y > 0)
    if idle.any() and not idle.all():
        moved = y.copy()
        moved[~idle] += float(a[idle] @ y[idle]) / float(a[~idle].sum())
        moved[idle] = 0.0
        before, after = obj.value(full(y)), obj.value(full(moved))
        if after <= before:
            y2, res2 = run(moved, factor)
            iterations += int(res2.nit)
            if obj.value(full(y2)) <= after:
                y, res = y2, res2
                converged = accepted(y, res)
            else:
                y = moved
            message += "; moved the votes of classes with tiny probability"
        elif (after - before) * factor <= _SLSQP_FTOL:
            converged = False
            message += (
                "; flat objective: the votes of classes with tiny probability are not "
                "determined to double precision"
            )
    votes = full(y)
    value = obj.value_and_grad(votes)[0]
    return _Fit(votes, value, iterations, converged, message)


# --------------------------------------------------------------------------- intervals


def _profile_intervals(
    mle: _Objective, fit: _Fit, total: float, confidence_level: float
) -> tuple[list[ConfidenceInterval], bool]:
    """Per-class profile-likelihood intervals around the MLE ``fit``."""
    crit = math.sqrt(stats.chi2.ppf(confidence_level, 1))
    m = mle.total
    c = fit.votes.size
    q, jac = argmax_probabilities_jacobian(fit.votes, mle.sigma)
    info = m * (jac.T / np.maximum(q, _TINY)) @ jac
    cov = np.linalg.pinv(info, rcond=1e-12, hermitian=True)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    all_converged = True
    out: list[ConfidenceInterval] = []
    for cls in range(c):
        ends = []
        for direction in (-1.0, 1.0):
            end, ok = _profile_end(mle, fit, total, cls, direction, crit, se[cls])
            all_converged &= ok
            ends.append(end)
        out.append(ConfidenceInterval(min(ends[0], fit.votes[cls]), max(ends[1], fit.votes[cls])))
    return out, all_converged


def _profile_end(
    mle: _Objective,
    fit: _Fit,
    total: float,
    cls: int,
    direction: float,
    crit: float,
    se: float,
) -> tuple[float, bool]:
    """One endpoint: h on the ``direction`` side of Ĥ_c where the root deviance hits crit."""
    h_hat = float(fit.votes[cls])
    limit = 0.0 if direction < 0 else total
    if abs(limit - h_hat) < 1e-9:
        return limit, True
    warm = fit.votes
    evals = 0
    ok = True

    def root_dev(h: float) -> float:
        nonlocal warm, evals, ok
        evals += 1
        inner = _solve(mle, total, warm, fixed=(cls, h))
        ok &= inner.converged
        warm = inner.votes
        return math.sqrt(max(2.0 * mle.total * (inner.value - fit.value), 0.0))

    step = max(crit * se if np.isfinite(se) else 0.0, 0.5)
    h0, r0 = h_hat, 0.0
    h1 = float(np.clip(h_hat + direction * step, 0.0, total))
    r1 = root_dev(h1)
    while r1 < crit:
        if abs(h1 - limit) < 1e-9:
            return limit, ok
        if evals >= _PROFILE_MAX_EVALS:
            return limit, False
        h0, r0 = h1, r1
        h1 = float(np.clip(h_hat + 2.0 * (h1 - h_hat), 0.0, total))
        r1 = root_dev(h1)
    # Bracket [h0, h1] with r0 < crit ≤ r1: safeguarded secant (regula falsi, Illinois).
    side = 0
    hm = h1
    while evals < _PROFILE_MAX_EVALS:
        hm = h0 + (crit - r0) * (h1 - h0) / (r1 - r0) if r1 > r0 else 0.5 * (h0 + h1)
        rm = root_dev(hm)
        if abs(rm - crit) <= _PROFILE_RTOL * crit or abs(h1 - h0) < 1e-6:
            return hm, ok
        if rm < crit:
            h0, r0 = hm, rm
            if side == -1:
                r1 = crit + (r1 - crit) / 2.0
            side = -1
        else:
            h1, r1 = hm, rm
            if side == 1:
                r0 = crit - (crit - r0) / 2.0
            side = 1
    return hm, False


def _bootstrap_intervals(
    obj: _Objective,
    fit: _Fit,
    total: float,
    confidence_level: float,
    num_bootstrap: int,
    rng: np.random.Generator,
    max_iter: int,
) -> tuple[list[ConfidenceInterval], bool]:
    """Parametric-bootstrap percentile intervals (resample from Q(Ĥ), refit)."""
    q = argmax_probabilities(fit.votes, obj.sigma)
    q = q / q.sum()
    p_answer = None
    if obj.use_threshold:
        assert obj.threshold is not None and obj.sigma1 is not None
        p_answer = float(special.ndtr((fit.votes.max() - obj.threshold) / obj.sigma1))
    draws = np.empty((num_bootstrap, fit.votes.size))
    all_converged = True
    for b in range(num_bootstrap):
        if p_answer is not None:
            answered = int(rng.binomial(obj.total, p_answer))
            abstained = obj.total - answered
        else:
            answered, abstained = obj.answered, 0
        counts = rng.multinomial(answered, q)
        if counts.sum() == 0:
            draws[b] = fit.votes
            continue
        boot = _Objective(obj.kind, counts, obj.sigma, abstained, obj.threshold, obj.sigma1)
        start = _gumbel_start(counts, obj.sigma, total)
        refit = _solve(boot, total, start, max_iter=max_iter)
        all_converged &= refit.converged
        draws[b] = refit.votes
    alpha = 1.0 - confidence_level
    low = np.quantile(draws, alpha / 2, axis=0)
    high = np.quantile(draws, 1 - alpha / 2, axis=0)
    return [ConfidenceInterval(float(a), float(b)) for a, b in zip(low, high, strict=True)], (
        all_converged
    )


# --------------------------------------------------------------------------- rounding


def _round_to_integers(obj: _Objective, votes: np.ndarray, total: int) -> IntArray:
    """Integer votes summing to N: largest remainder (Hamilton), then greedy one-vote moves
    that lower the objective, until none does."""
    base = np.floor(votes).astype(np.int64)
    short = total - int(base.sum())
    if short > 0:
        order = np.argsort(-(votes - base), kind="stable")
        base[order[:short]] += 1
    c = base.size
    current = float(obj.values(base[None, :].astype(np.float64))[0])
    src, dst = np.nonzero(~np.eye(c, dtype=bool))
    for _ in range(4 * total + 10):
        movable = base[src] > 0
        if not movable.any():
            break
        s, d = src[movable], dst[movable]
        cand = np.repeat(base[None, :], s.size, axis=0)
        cand[np.arange(s.size), s] -= 1
        cand[np.arange(s.size), d] += 1
        vals = obj.values(cand.astype(np.float64))
        best = int(np.argmin(vals))
        if not vals[best] < current - 1e-15 * max(1.0, abs(current)):
            break
        base = cand[best]
        current = float(vals[best])
    return base


# --------------------------------------------------------------------------- public


@dataclasses.dataclass(frozen=True, eq=False)
class HistogramReconstruction(ResultMixin):
    """An estimate of a teacher vote histogram from repeated noisy-argmax answers.

    Attributes:
        votes: the estimate Ĥ (C,), ≥ 0, summing to ``num_teachers``.
        intervals: per-class confidence intervals for H_c (None when not requested).
        confidence_level: the intervals' (per-class) confidence level.
        interval_method: ``"profile-likelihood"``, ``"parametric-bootstrap"`` or ``"none"``.
        integer_votes: Ĥ rounded to integers summing to N (None unless requested).
        probabilities: Q(Ĥ), the fitted output distribution.
        counts: the observed answer counts per class (the input).
        num_answered: M, the number of labelled answers (Σ counts).
        abstentions: queries that were charged but not answered (Confident GNMax).
        sigma: the (answer-step) noise σ.
        num_teachers: N.
        objective: ``"mle"`` or ``"l2"``.
        objective_value: the minimised objective (mean NLL per charged query, or ‖Q − q̄‖²).
        log_likelihood: the multinomial (plus threshold) log-likelihood at Ĥ.
        unobserved: classes with zero counts (their estimate is only bounded).
        converged: the optimiser (and every inner fit of the intervals) converged.
        iterations: SLSQP iterations of the point estimate.
        threshold: Confident-GNMax threshold T used in the likelihood (None: not modelled).
        sigma1: Confident-GNMax threshold noise σ1 (None: not modelled).
        method: how the estimate was computed.
        selection: nothing was chosen on the data (``"none"``).
        seed: entropy of the bootstrap's rng when it was an int (else None).
    """

    votes: FloatArray
    intervals: tuple[ConfidenceInterval, ...] | None
    confidence_level: float
    interval_method: str
    integer_votes: IntArray | None
    probabilities: FloatArray
    counts: IntArray
    num_answered: int
    abstentions: int
    sigma: float
    num_teachers: int
    objective: str
    objective_value: float
    log_likelihood: float
    unobserved: tuple[int, ...]
    converged: bool
    iterations: int
    threshold: float | None
    sigma1: float | None
    method: str
    selection: str = "none"
    seed: int | None = None

    @property
    def num_classes(self) -> int:
        """C."""
        return int(self.votes.size)

    def error(self, true_votes: ArrayLike) -> float:
        """Normalised L1 error of this estimate against the true histogram (Wang et al. 2022
        §4.1)."""
        return normalised_l1_error(true_votes, self.votes)


def _log_likelihood(obj_mle: _Objective, votes: np.ndarray) -> float:
    return -obj_mle.value_and_grad(votes)[0] * obj_mle.total


def reconstruct_histogram(
    counts: ArrayLike,
    sigma: float,
    num_teachers: int,
    *,
    objective: str = "mle",
    intervals: str = "profile",
    confidence_level: float = 0.95,
    round_to_integers: bool = False,
    abstentions: int = 0,
    threshold: float | None = None,
    sigma1: float | None = None,
    num_bootstrap: int = 200,
    max_iter: int = 500,
    rng: RngLike = None,
) -> HistogramReconstruction:
    """Estimate a PATE vote histogram from the answers to one repeated query (Wang et al. 2022 §3).

    Args:
        counts: answers per class, (C,) non-negative integers with Σ = M ≥ 1 (labelled
            answers only: abstentions are passed separately).
        sigma: the public noise σ of the answer step (GNMax; σ2 for Confident GNMax).
        num_teachers: N, the number of teachers (the estimate sums to N); at least the number
            of classes observed.
        objective: ``"mle"`` (multinomial maximum likelihood; default) or ``"l2"``
            (Wang et al. 2022 §3.2's ``‖Q(H) − q̄‖₂``).
        intervals: ``"profile"`` (profile likelihood; default), ``"bootstrap"`` (parametric
            bootstrap) or ``"none"``.
        confidence_level: per-class confidence level of the intervals, in (0, 1).
        round_to_integers: also return integer votes (largest remainder, then one-vote moves
            that improve the objective).
        abstentions: Confident-GNMax queries that were charged but not answered. They enter
            the likelihood only when ``threshold`` and ``sigma1`` are given (the answer rate
            ``Φ((max H − T)/σ1)`` then informs the top count); labelled answers are always
            GNMax(σ) draws, so the abstentions never bias the estimate.
        threshold: Confident-GNMax threshold T (with ``sigma1``), or None.
        sigma1: Confident-GNMax threshold noise σ1 > 0 (with ``threshold``), or None.
        num_bootstrap: resamples for ``intervals="bootstrap"``.
        max_iter: SLSQP iteration limit per fit.
        rng: randomness of the bootstrap (unused otherwise).

    Returns:
        :class:`HistogramReconstruction`.

    Raises:
        ValueError: M = 0, σ ≤ 0, fewer than 2 classes or counts not 1-d, negative or
            non-integer counts, N < number of observed classes, bad choices or levels,
            only one of ``threshold``/``sigma1``.
        TypeError: non-numeric arguments.

    Warns:
        ConvergenceWarning: the optimiser did not reach its tolerance (``converged`` False).

    Example:
        >>> r = reconstruct_histogram([1, 0, 2, 9996, 1], sigma=40, num_teachers=250,
        ...                           intervals="none")
        >>> round(float(r.votes.sum()), 6), int(np.argmax(r.votes))
        (250.0, 3)
    """
    n = check_counts("counts", counts)
    if n.ndim != 1 or n.size < 2:
        raise ValueError(f"counts must be a 1-d array over C >= 2 classes, got shape {n.shape}")
    m = int(n.sum())
    if m == 0:
        raise ValueError(f"counts must contain at least one answered query (M >= 1), got M={m}")
    s = check_positive("sigma", sigma)
    total = check_positive_int("num_teachers", num_teachers)
    observed = int(np.count_nonzero(n))
    if total < observed:
        raise ValueError(
            f"num_teachers must be at least the number of classes observed in counts "
            f"({observed}), got {total}"
        )
    check_choice("objective", objective, OBJECTIVES)
    check_choice("intervals", intervals, INTERVAL_METHODS)
    level = check_confidence_level(confidence_level)
    if not isinstance(round_to_integers, (bool, np.bool_)):
        raise TypeError(f"round_to_integers must be a bool, got {round_to_integers!r}")
    b = check_nonneg_int("abstentions", abstentions)
    if (threshold is None) != (sigma1 is None):
        raise ValueError(
            f"threshold and sigma1 must be given together, got threshold={threshold!r}, "
            f"sigma1={sigma1!r}"
        )
    t = check_real("threshold", threshold) if threshold is not None else None
    s1 = check_positive("sigma1", sigma1) if sigma1 is not None else None
    nb = check_positive_int("num_bootstrap", num_bootstrap)
    iters = check_positive_int("max_iter", max_iter)

    obj = _Objective(objective, n, s, b, t, s1)
    mle = obj if objective == "mle" else _Objective("mle", n, s, b, t, s1)
    start = _gumbel_start(n, s, float(total))
    fit = _solve(obj, float(total), start, max_iter=iters)
    converged = fit.converged
    method = (
        "SLSQP on {H >= 0, sum H = N} with analytic gradients from the Jacobian of the exact "
        "noisy-argmax probabilities; start from the Gumbel (logit) approximation; MLE "
        "without threshold model: unobserved classes at their optimum 0 (one observed class: "
        "the vertex N*e_k); classes with Q < 1e-6 left holding votes are checked for a flat "
        "objective"
    )
    ivs: tuple[ConfidenceInterval, ...] | None = None
    seed = None
    if intervals == "profile":
        mle_fit = (
            fit if objective == "mle" else _solve(mle, float(total), fit.votes, max_iter=iters)
        )
        converged &= mle_fit.converged
        found, ok = _profile_intervals(mle, mle_fit, float(total), level)
        converged &= ok
        ivs = tuple(found)
    elif intervals == "bootstrap":
        seed = seed_entropy(rng)
        gen = as_generator(rng)
        found, ok = _bootstrap_intervals(obj, fit, float(total), level, nb, gen, iters)
        converged &= ok
        ivs = tuple(found)
    if not converged:
        warnings.warn(
            f"reconstruct_histogram: the optimiser did not fully converge ({fit.message}); "
            "the result's `converged` is False",
            ConvergenceWarning,
            stacklevel=2,
        )
    integer_votes = _round_to_integers(obj, fit.votes, total) if round_to_integers else None
    return HistogramReconstruction(
        votes=fit.votes,
        intervals=ivs,
        confidence_level=level,
        interval_method=_INTERVAL_NAMES[intervals],
        integer_votes=integer_votes,
        probabilities=argmax_probabilities(fit.votes, s),
        counts=n,
        num_answered=m,
        abstentions=b,
        sigma=s,
        num_teachers=total,
        objective=objective,
        objective_value=fit.value,
        log_likelihood=_log_likelihood(mle, fit.votes),
        unobserved=tuple(int(i) for i in np.flatnonzero(n == 0)),
        converged=bool(converged),
        iterations=fit.iterations,
        threshold=t,
        sigma1=s1,
        method=method,
        seed=seed,
    )
