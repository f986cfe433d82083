"""Objective and constrained solver of :func:`dpaudit.attacks.reconstruct_histogram`.

The maximum-likelihood and L2 objectives in the votes H (Wang et al. 2022, arXiv:2209.10732,
§3; the L2 objective is their §3.2), and their minimisation over the scaled simplex
``{H ≥ 0, Σ H = N}`` by SLSQP with analytic gradients. Why the simplex, SLSQP, the Gumbel
start and the flat-objective checks: :mod:`dpaudit.attacks._reconstruct`. The solver runs in
named stages: the reduced coordinates (:class:`Coordinates`), one SLSQP run, its acceptance,
and the check of classes that hold votes at a vanishing probability (:func:`settle_idle`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, special

from dpaudit._typing import FloatArray
from dpaudit.mechanisms import (
    argmax_probabilities,
    argmax_probabilities_jacobian,
    log_argmax_probabilities,
    project_to_simplex,
)

__all__ = [
    "IDLE_Q",
    "KKT_TOL",
    "SLSQP_FTOL",
    "TINY",
    "Coordinates",
    "Fit",
    "Objective",
    "dominant_log_q",
    "gumbel_start",
    "kkt_residual",
    "reduction",
    "solve",
]

TINY = 1e-300
SLSQP_FTOL = 1e-15
# SLSQP's "positive directional derivative in line search" (status 8) is what it reports when
# it sits at the optimum to machine precision; we accept it if the KKT residual is small.
KKT_TOL = 1e-7
# SLSQP's stopping rule |Δf| < ftol is absolute, so it also fires on an objective that is
# flat to that precision, far from the optimum. That happens when some classes have all but
# left the competition (Q_c < IDLE_Q at the solution): the objective then depends on their
# votes only through tiny terms (Q_c for the likelihood, Q_c² for L2). See settle_idle.
IDLE_Q = 1e-6


def gumbel_start(counts: np.ndarray, sigma: float, total: float) -> FloatArray:
    """Start point: invert the logit (Gumbel-noise) approximation of the argmax, then project."""
    c = counts.size
    scale = sigma * math.sqrt(6.0) / math.pi
    logits = scale * np.log((counts + 0.5) / (counts.sum() + 0.5 * c))
    return project_to_simplex(logits - logits.mean() + total / c, total)


def dominant_log_q(log_q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


class Objective:
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
            coef = self.weights / np.maximum(q, TINY)
            rows = jac
            log_q, k, use = dominant_log_q(np.log(np.maximum(q, TINY))[None, :])
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
            logq = dominant_log_q(log_argmax_probabilities(batch, self.sigma))[0]
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
class Fit:
    """One constrained fit: the votes, the objective there, and how the solver ended."""

    votes: np.ndarray
    value: float
    iterations: int
    converged: bool
    message: str


def kkt_residual(grad: np.ndarray, x: np.ndarray, free: np.ndarray) -> float:
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


def reduction(obj: Objective, fixed: tuple[int, float] | None) -> tuple[np.ndarray, np.ndarray]:
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


@dataclasses.dataclass(frozen=True)
class Coordinates:
    """The reduced coordinates of one fit: ``H = base + total·A·y`` with ``aᵀy = share``.

    One coordinate per free class and one for the tied group (:func:`reduction`); ``a`` holds
    the column sizes, ``base`` the fixed class's votes (profile fits) and 0 elsewhere.
    """

    base: np.ndarray
    columns: tuple[np.ndarray, ...]
    a: np.ndarray
    total: float
    remaining: float

    @property
    def share(self) -> float:
        """The mass left to the free coordinates, ``(total − Σ base)/total``."""
        return self.remaining / self.total

    def full(self, y: np.ndarray) -> np.ndarray:
        """The votes H of the reduced point ``y``."""
        votes = self.base.copy()
        yy = np.clip(y, 0.0, None) * self.total
        for col, v in zip(self.columns, yy, strict=True):
            votes[col] = v
        return votes

    def reduce(self, vec: np.ndarray) -> np.ndarray:
        """A gradient in H summed onto the reduced coordinates."""
        return np.array([vec[col].sum() for col in self.columns])


def coordinates(
    obj: Objective, total: float, num_classes: int, fixed: tuple[int, float] | None
) -> Coordinates:
    """The reduced coordinates: classes pinned at 0 or tied by :func:`reduction` and the
    fixed class (profile fits) are not free."""
    base = np.zeros(num_classes)
    pinned, tied = reduction(obj, fixed)
    free = ~pinned & ~tied
    if fixed is not None:
        free[fixed[0]] = False
        base[fixed[0]] = fixed[1]
    columns = [np.array([i]) for i in np.flatnonzero(free)]
    if tied.any():
        columns.append(np.flatnonzero(tied))
    a = np.array([col.size for col in columns], dtype=np.float64)
    remaining = max(total - float(base.sum()), 0.0)
    return Coordinates(base, tuple(columns), a, total, remaining)


def _single_point(obj: Objective, coords: Coordinates) -> Fit:
    """The solution when the constraints leave one point (e.g. the vertex ``N·e_k``)."""
    votes = coords.base.copy()
    for col in coords.columns:
        votes[col] = coords.remaining / (coords.a.sum() if coords.a.size else 1.0)
    value = obj.value_and_grad(votes)[0]
    return Fit(votes, value, 0, True, "the constraints leave a single point")


def run_slsqp(
    obj: Objective, coords: Coordinates, y0: np.ndarray, factor: float, max_iter: int
) -> tuple[np.ndarray, optimize.OptimizeResult]:
    """One SLSQP run from ``y0`` on the objective times ``factor``; the end point rescaled
    onto ``aᵀy = share``."""
    total, a, share = coords.total, coords.a, coords.share

    def fun(y: np.ndarray) -> float:
        return obj.value(coords.full(y)) * factor

    def jac(y: np.ndarray) -> np.ndarray:
        return coords.reduce(obj.value_and_grad(coords.full(y))[1]) * (total * factor)

    res = optimize.minimize(
        fun,
        y0,
        jac=jac,
        method="SLSQP",
        bounds=[(0.0, share / ai) for ai in a],
        constraints=[{"type": "eq", "fun": lambda y: a @ y - share, "jac": lambda y: a}],
        options={"ftol": SLSQP_FTOL, "maxiter": max_iter},
    )
    y = np.clip(res.x, 0.0, None)
    return y * (share / (a @ y)), res


def accepted(
    obj: Objective, coords: Coordinates, y: np.ndarray, res: optimize.OptimizeResult
) -> bool:
    """SLSQP succeeded, or stopped at a point that is stationary to :data:`KKT_TOL`."""
    if res.success:
        return True
    # Stationarity per unit of mass: ∇_y f = μ·a at an optimum, so compare ∇_y f / a.
    g = coords.reduce(obj.value_and_grad(coords.full(y))[1]) / coords.a
    k = len(coords.columns)
    return res.status == 8 and kkt_residual(g * coords.total, y, np.ones(k, dtype=bool)) < KKT_TOL


@dataclasses.dataclass(frozen=True)
class Idle:
    """What :func:`settle_idle` did: the point, a re-solve that was taken, and a note."""

    y: np.ndarray
    res: optimize.OptimizeResult | None
    iterations: int
    undetermined: bool
    note: str


def settle_idle(
    obj: Objective, coords: Coordinates, y: np.ndarray, factor: float, max_iter: int
) -> Idle:
    """Flat directions: votes held by classes of tiny probability at the solution.

    SLSQP stops on ``|Δf| < ftol`` wherever the objective is that flat, so such votes may sit
    where nothing resolves them. Moving them equally onto the other free classes keeps every
    difference among the latter: if that does not increase the objective, take the move and
    re-solve from there; if it increases it by less than SLSQP can resolve, those votes are
    not determined (``undetermined``); otherwise the rest of the objective (a fixed or pinned
    class) holds them where they are.
    """
    a = coords.a
    q = argmax_probabilities(coords.full(y), obj.sigma)
    idle = np.array([bool(np.all(q[col] < IDLE_Q)) for col in coords.columns]) & (y > 0)
    if not idle.any() or idle.all():
        return Idle(y, None, 0, False, "")
    moved = y.copy()
    moved[~idle] += float(a[idle] @ y[idle]) / float(a[~idle].sum())
    moved[idle] = 0.0
    before, after = obj.value(coords.full(y)), obj.value(coords.full(moved))
    if after <= before:
        y2, res2 = run_slsqp(obj, coords, moved, factor, max_iter)
        note = "; moved the votes of classes with tiny probability"
        if obj.value(coords.full(y2)) <= after:
            return Idle(y2, res2, int(res2.nit), False, note)
        return Idle(moved, None, int(res2.nit), False, note)
    if (after - before) * factor <= SLSQP_FTOL:
        note = (
            "; flat objective: the votes of classes with tiny probability are not "
            "determined to double precision"
        )
        return Idle(y, None, 0, True, note)
    return Idle(y, None, 0, False, "")


def solve(
    obj: Objective,
    total: float,
    start: np.ndarray,
    *,
    fixed: tuple[int, float] | None = None,
    max_iter: int = 500,
) -> Fit:
    """Minimise the objective over ``{H ≥ 0, Σ H = total}`` (optionally with H_c = h fixed).

    The classes of :func:`reduction` are pinned at 0 or tied; SLSQP works on the remaining
    coordinates (:class:`Coordinates`). When that leaves a single point (e.g. one observed
    class: the vertex), it is the solution. Otherwise: one SLSQP run from the projection of
    ``start``, its acceptance (:func:`accepted`), and the flat-direction check
    (:func:`settle_idle`).
    """
    coords = coordinates(obj, total, start.size, fixed)
    k = len(coords.columns)
    if k <= 1 or coords.remaining == 0.0:
        return _single_point(obj, coords)
    share, a = coords.share, coords.a
    mass0 = np.array([start[col].sum() for col in coords.columns]) / total
    mass0 = project_to_simplex(mass0 + (share - mass0.sum()) / k, share)
    factor = obj.solver_scale(coords.full(mass0 / a))
    y, res = run_slsqp(obj, coords, mass0 / a, factor, max_iter)
    converged = accepted(obj, coords, y, res)
    message = str(res.message)
    idle = settle_idle(obj, coords, y, factor, max_iter)
    if idle.res is not None:
        converged = accepted(obj, coords, idle.y, idle.res)
    if idle.undetermined:
        converged = False
    votes = coords.full(idle.y)
    value = obj.value_and_grad(votes)[0]
    return Fit(votes, value, int(res.nit) + idle.iterations, converged, message + idle.note)
