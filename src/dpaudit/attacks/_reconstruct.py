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
can be proved is used (:func:`dpaudit.attacks._reconstruct_solver.reduction`): without the
threshold model every unobserved class has MLE 0 (moving its votes onto the observed classes
raises every observed ``Q``), so a single observed class gives the vertex ``H = N·e_k``
exactly (also the L2 minimiser), and with an observed class fixed (profile) the unobserved
classes may be tied (``log Q`` is concave, Prékopa, and the likelihood symmetric in them).
(iii) After SLSQP, classes with ``Q_c < 1e-6`` that still hold votes are tested: moving
their votes onto the other free classes is taken if it does not increase the objective, and
``converged`` is False if the objective cannot tell the two points apart.

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
from scipy import special, stats

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._rng import as_generator, seed_entropy
from dpaudit._typing import ArrayLike, FloatArray, IntArray, RngLike
from dpaudit._validate import (
    MAX_COUNT,
    check_choice,
    check_confidence_level,
    check_counts,
    check_flag,
    check_memory,
    check_nonneg_int,
    check_positive_int,
    check_real,
    check_rng,
    check_scale,
)
from dpaudit.attacks._reconstruct_solver import TINY, Fit, Objective, gumbel_start, solve
from dpaudit.errors import ConvergenceWarning
from dpaudit.mechanisms import (
    argmax_probabilities,
    argmax_probabilities_jacobian,
    project_to_simplex,
)

__all__ = [
    "INTERVAL_METHODS",
    "MAX_ITER",
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


# --------------------------------------------------------------------------- intervals


def _profile_intervals(
    mle: Objective, fit: Fit, total: float, confidence_level: float
) -> tuple[list[ConfidenceInterval], bool]:
    """Per-class profile-likelihood intervals around the MLE ``fit``."""
    crit = math.sqrt(stats.chi2.ppf(confidence_level, 1))
    m = mle.total
    c = fit.votes.size
    q, jac = argmax_probabilities_jacobian(fit.votes, mle.sigma)
    info = m * (jac.T / np.maximum(q, TINY)) @ jac
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
    mle: Objective,
    fit: Fit,
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
        inner = solve(mle, total, warm, fixed=(cls, h))
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
    obj: Objective,
    fit: Fit,
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
        boot = Objective(obj.kind, counts, obj.sigma, abstained, obj.threshold, obj.sigma1)
        start = gumbel_start(counts, obj.sigma, total)
        refit = solve(boot, total, start, max_iter=max_iter)
        all_converged &= refit.converged
        draws[b] = refit.votes
    alpha = 1.0 - confidence_level
    low = np.quantile(draws, alpha / 2, axis=0)
    high = np.quantile(draws, 1 - alpha / 2, axis=0)
    return [ConfidenceInterval(float(a), float(b)) for a, b in zip(low, high, strict=True)], (
        all_converged
    )


# --------------------------------------------------------------------------- rounding


def _round_to_integers(obj: Objective, votes: np.ndarray, total: int) -> IntArray:
    """Integer votes summing to N: largest remainder (Hamilton), then greedy one-vote moves
    that lower the objective, until none does.

    Classes with equal counts get equal estimates up to the optimiser's last bits, so the
    remainders are compared at 1e-9 and ties go to the lower class index: the result does
    not depend on floating-point noise (BLAS, library versions)."""
    base = np.floor(votes).astype(np.int64)
    short = total - int(base.sum())
    if short > 0:
        remainder = np.round(votes - base, 9)
        order = np.argsort(-remainder, kind="stable")
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
        if not vals[best] < current - 1e-12 * max(1.0, abs(current)):
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


def _log_likelihood(obj_mle: Objective, votes: np.ndarray) -> float:
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
            the likelihood through ``threshold`` and ``sigma1`` (the answer rate
            ``Φ((max H − T)/σ1)`` then informs the top count), so a positive count needs
            both; labelled answers are always GNMax(σ) draws, so the abstentions never bias
            the estimate.
        threshold: Confident-GNMax threshold T (with ``sigma1``), or None.
        sigma1: Confident-GNMax threshold noise σ1 > 0 (with ``threshold``), or None.
        num_bootstrap: resamples for ``intervals="bootstrap"``.
        max_iter: SLSQP iteration limit per fit, at most :data:`MAX_ITER`.
        rng: randomness of the bootstrap (checked, but unused otherwise).

    Returns:
        :class:`HistogramReconstruction`.

    Raises:
        ValueError: M = 0, σ outside [1e-100, 1e100], fewer than 2 classes or counts not
            1-d, negative or non-integer counts, N < number of observed classes, bad choices
            or levels, only one of ``threshold``/``sigma1``, ``max_iter`` above
            :data:`MAX_ITER`, a bootstrap beyond the memory cap, a bad ``rng``.
        TypeError: non-numeric arguments, a non-bool ``round_to_integers``.

    Warns:
        ConvergenceWarning: the optimiser did not reach its tolerance (``converged`` False).

    Example:
        >>> r = reconstruct_histogram([1, 0, 2, 9996, 1], sigma=40, num_teachers=250,
        ...                           intervals="none")
        >>> round(float(r.votes.sum()), 6), int(np.argmax(r.votes))
        (250.0, 3)
    """
    args = _check_arguments(
        counts, sigma, num_teachers, objective, intervals, confidence_level,
        round_to_integers, abstentions, threshold, sigma1, num_bootstrap, max_iter, rng,
    )  # fmt: skip
    n, s, total, b = args.counts, args.sigma, args.num_teachers, args.abstentions
    obj = Objective(objective, n, s, b, args.threshold, args.sigma1)
    mle = obj if objective == "mle" else Objective("mle", n, s, b, args.threshold, args.sigma1)
    fit = solve(obj, float(total), gumbel_start(n, s, float(total)), max_iter=args.max_iter)
    ivs, seed, ok = _intervals(args, obj, mle, fit)
    converged = fit.converged and ok
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
        confidence_level=args.confidence_level,
        interval_method=_INTERVAL_NAMES[intervals],
        integer_votes=integer_votes,
        probabilities=argmax_probabilities(fit.votes, s),
        counts=n,
        num_answered=int(n.sum()),
        abstentions=b,
        sigma=s,
        num_teachers=total,
        objective=objective,
        objective_value=fit.value,
        log_likelihood=_log_likelihood(mle, fit.votes),
        unobserved=tuple(int(i) for i in np.flatnonzero(n == 0)),
        converged=bool(converged),
        iterations=fit.iterations,
        threshold=args.threshold,
        sigma1=args.sigma1,
        method=_METHOD,
        seed=seed,
    )


_METHOD = (
    "SLSQP on {H >= 0, sum H = N} with analytic gradients from the Jacobian of the exact "
    "noisy-argmax probabilities; start from the Gumbel (logit) approximation; MLE "
    "without threshold model: unobserved classes at their optimum 0 (one observed class: "
    "the vertex N*e_k); classes with Q < 1e-6 left holding votes are checked for a flat "
    "objective"
)
#: Largest SLSQP iteration limit (the Fortran routine counts in a C int).
MAX_ITER = 10**6


@dataclasses.dataclass(frozen=True)
class _Arguments:
    """The checked arguments of :func:`reconstruct_histogram`."""

    counts: IntArray
    sigma: float
    num_teachers: int
    intervals: str
    confidence_level: float
    abstentions: int
    threshold: float | None
    sigma1: float | None
    num_bootstrap: int
    max_iter: int
    rng: RngLike


def _check_arguments(
    counts: ArrayLike,
    sigma: float,
    num_teachers: int,
    objective: str,
    intervals: str,
    confidence_level: float,
    round_to_integers: bool,
    abstentions: int,
    threshold: float | None,
    sigma1: float | None,
    num_bootstrap: int,
    max_iter: int,
    rng: RngLike,
) -> _Arguments:
    """Every argument checked before any fit (errors name the argument)."""
    n = check_counts("counts", counts)
    if n.ndim != 1 or n.size < 2:
        raise ValueError(f"counts must be a 1-d array over C >= 2 classes, got shape {n.shape}")
    m = int(n.sum())
    if m == 0:
        raise ValueError(f"counts must contain at least one answered query (M >= 1), got M={m}")
    s = check_scale("sigma", sigma)
    total = check_positive_int("num_teachers", num_teachers, maximum=MAX_COUNT)
    observed = int(np.count_nonzero(n))
    if total < observed:
        raise ValueError(
            f"num_teachers must be at least the number of classes observed in counts "
            f"({observed}), got {total}"
        )
    check_choice("objective", objective, OBJECTIVES)
    check_choice("intervals", intervals, INTERVAL_METHODS)
    level = check_confidence_level(confidence_level)
    check_flag("round_to_integers", round_to_integers)
    b = check_nonneg_int("abstentions", abstentions, maximum=MAX_COUNT)
    t = check_real("threshold", threshold) if threshold is not None else None
    s1 = check_scale("sigma1", sigma1) if sigma1 is not None else None
    if (t is None) != (s1 is None):
        raise ValueError(
            f"threshold and sigma1 must be given together, got threshold={threshold!r}, "
            f"sigma1={sigma1!r}"
        )
    if b > 0 and t is None:
        raise ValueError(
            f"abstentions={b} needs the Confident-GNMax model (threshold and sigma1): without "
            "it abstentions carry no information; pass abstentions=0 or give both"
        )
    nb = check_positive_int("num_bootstrap", num_bootstrap)
    check_memory(8.0 * nb * n.size, f"reconstruct_histogram with num_bootstrap={nb}")
    iters = check_positive_int("max_iter", max_iter, maximum=MAX_ITER)
    check_rng(rng)
    return _Arguments(n, s, total, intervals, level, b, t, s1, nb, iters, rng)


def _intervals(
    args: _Arguments, obj: Objective, mle: Objective, fit: Fit
) -> tuple[tuple[ConfidenceInterval, ...] | None, int | None, bool]:
    """The requested per-class intervals, the bootstrap seed, and whether every fit converged.

    Profile intervals belong to the likelihood ``mle`` (refitted first when the point estimate
    used the L2 objective ``obj``); bootstrap intervals refit ``obj``'s objective.
    """
    total = float(args.num_teachers)
    if args.intervals == "profile":
        mle_fit = fit if obj.kind == "mle" else solve(mle, total, fit.votes, max_iter=args.max_iter)
        found, ok = _profile_intervals(mle, mle_fit, total, args.confidence_level)
        return tuple(found), None, mle_fit.converged and ok
    if args.intervals == "bootstrap":
        seed = seed_entropy(args.rng)
        gen = as_generator(args.rng)
        found, ok = _bootstrap_intervals(
            obj, fit, total, args.confidence_level, args.num_bootstrap, gen, args.max_iter
        )
        return tuple(found), seed, ok
    return None, None, True
