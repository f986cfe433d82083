"""DPCTGAN's white-box view: the noisy clipped gradient sums DP-SGD releases.

smartnoise-synth's DPCTGAN trains its discriminator with DP-SGD (Abadi et al. 2016, "Deep
Learning with Differential Privacy", arXiv:1607.00133) through opacus 0.14: on each step on
the real rows it releases ``Σ_i clip_C(g_i) + N(0, σ²C² I)`` (divided by the batch size), and
opacus's accountant covers exactly that transcript. The white-box adversary sees it, step by
step (the threat model of Nasr, Song, Thakurta, Papernot & Carlini 2021, "Adversary
Instantiation: Lower Bounds for Differentially Private Machine Learning", arXiv:2101.04535,
and of Nasr et al. 2023, arXiv:2302.07956); not which rows were sampled.

On the worst-case pair ``unique-record`` (D = rows of zeros, t = a row of ones) the first
layer's weight columns that read t's one-hot data coordinates get a zero gradient from every
row of D (their inputs are 0 there; the conditional vector, which D's rows can set to t's
categories, is left out). Restricted to those columns the step's noisy sum ``G_k`` is thus
pure noise ``σC·Z`` under D and ``m_k·c_k + σC·Z`` under D ∪ {t}, with ``m_k`` the copies of
t in the batch (DPCTGAN samples each of its ``B`` real rows through a conditional vector
that picks t with probability ``p = 1/|D ∪ {t}|``, so ``m_k ~ Bin(B, p)``) and ``c_k`` t's
clipped gradient there. The worker records ``G_k`` and the adversary's guess ``d_k`` of
``c_k`` (t's clipped gradient at the step's released parameters, dropout off), and
:func:`dpsgd_projections` splits ``G_k`` into ``x_k = ⟨G_k, u_k⟩`` (``u_k = d_k/‖d_k‖``) and
the rest, which is pure noise in both worlds when ``d_k`` points where ``c_k`` does (a
network without hidden layers: no dropout, ``c_k ∝ d_k`` exactly) and whose squared norm
estimates the noise actually drawn, ``σ̂²``. The statistic (:func:`dpsgd_mixture_llr`) is
the log-likelihood ratio of the ``x_k`` under D ∪ {t} against D at that noise level,

    Σ_k log Σ_m Bin(m; B, p) exp((m a_k x_k − m² a_k²/2) / σ̂²),   a_k = ‖d_k‖,

which is Neyman–Pearson's for the binomial mixture of mean shifts that the sampling makes
(exact when ``c_k = d_k`` and ``σ̂`` is the noise drawn). Reading the noise level off the
coordinates that carry no signal is what a planted bug that draws less noise than it accounts
cannot hide: the steps where t was sampled then stand out one by one, where a sum of ``x_k``
over every step (the statistic of Nasr et al. 2023) would drown them in the other steps'
noise. Any statistic is valid for the audit (its threshold is chosen on held-out runs);
this one decides only its power. The threat model caps it at :data:`LOSS_CAP` (a privacy loss
of 5, e⁵ ≈ 148: more than an audit of fewer pairs can resolve): the pilot's threshold is a
pilot score (the smallest on D ∪ {t} when the pilot separates perfectly), so an uncapped
statistic whose value grows with the number of times t was sampled would put it at the
pilot's luckiest-but-one draw, and a fifth of the evaluation runs below it; capped, every run
whose loss passes the cap ties at it.

smartnoise-synth's DPGAN (Xie et al. 2018, arXiv:1802.06739) releases the same view: its
discriminator is trained by opacus 0.14 with a generated-row step and a real-row step per
batch of 64 rows (a shuffled pass, not Poisson sampling; the statistic's binomial mixture
at ``B = 64``, ``p = 1/|D ∪ {t}|`` is then an approximation, which costs power, never
validity), and its network has no dropout, so ``d_k`` is t's clipped gradient itself.

PATECTGAN's white-box view (``white-box-student``). PATE-GAN (Jordon, Yoon & van der Schaar
2019, ICLR) trains its student discriminator only on generated rows labelled by the teachers'
noisy votes, so the student's whole training transcript — its parameters and the gradients
applied to it — is covered by the claim, beside the data-independent randomness (latent
noise, dropout) that the adversary is given. smartnoise-synth 1.0.8's PATECTGAN makes the
student and every teacher one network (``student_disc = discriminator``, ``teacher_disc =
[discriminator for i in range(num_teachers)]``), so each teacher step on real rows is also a
step of the student. On each step that moves the student (every teacher step, and the
student's own) the first layer's gradient on t's one-hot data columns that no row of D sets
is ``G_k = F_k + R_k``: ``F_k`` from the step's generated rows, which the adversary computes
(:func:`student_residual_ratio`), and ``R_k`` from the real rows, exactly 0 under D (their
inputs there are 0) and non-zero under D ∪ {t} on each teacher step whose batch holds t; the
student's own steps read generated rows only (``R_k = 0``), and so does every step of a
student that is a network of its own (the fix, a control). The statistic is the largest
relative residual ``‖G_k − F_k‖/‖G_k‖`` on a log₁₀ scale, floored at :data:`RATIO_FLOOR`
and capped at :data:`RATIO_CAP` (far above float32 rounding, far below one row's share of a
step): a run on D scores the floor, a run on D ∪ {t} that sampled t the cap, whatever the
votes' noise.

PATEGAN's white-box view (``white-box-votes``). smartnoise's PATEGAN keeps its student apart
from its teachers; the student learns from generated rows labelled by the teachers' vote count
plus Laplace noise of scale ``b = 1/λ``, thresholded at half the teachers. PATE's analysis
(Papernot et al. 2017, arXiv:1610.05755) holds for teachers that are any function of their
partitions, so the adversary may be given the teachers' randomness: it then computes the
teachers D and D ∪ {t} would give along the transcript it sees (the worker trains them beside
the library's, with the same seeds), and the log-likelihood ratio of the labels given their
votes (:func:`pate_label_llr`) is the exact privacy loss of the transcript. A query on which
the two sets of teachers agree adds nothing to it, whatever the noise.

The DP-SGD GANs' step count (``white-box-steps``). A transcript of DP-SGD releases one noisy
gradient per step, so its length is visible to the white-box adversary; the analysis treats
it as public. smartnoise's DPGAN trains ⌊n/64⌋ batches an epoch (a shuffled pass with
``drop_last``) and as many epochs as its accountant allows at the rate 64/n, both read off
the private row count n, so at a boundary of ⌊n/64⌋ (1,023 rows against 1,024) the step
count alone tells D from D ∪ {t}. The statistic is that count.

The GANs' ``sample()`` (``white-box-conditions``). Both condition every synthetic row on a
category read from the private data without noise (PATECTGAN copies a uniformly drawn private
row's, DPCTGAN draws one by the private category frequencies); the conditions a sample was
generated from are randomness a correct implementation would draw from public or noisy
inputs, so the adversary may see them. Each row's draw is independent, so the count of rows
conditioned on t's categories is Binomial at the rate the library's rule gives on D or on
D ∪ {t} (:func:`condition_rates`), and the statistic is its log-likelihood ratio
(:func:`conditions_llr`), capped at :data:`LOSS_CAP` as ``white-box-dpsgd``'s is.

DPCTGAN's training (``white-box-training-conditions``). Its training draws the same way
(``sample_condvec``, by the private category frequencies) twice a batch: the generated rows'
conditions of the discriminator's step, whose permutation also picks the real rows (DP-SGD's
sampling, which the adversary does not see), and those of the generator's step. The
generator's updates read the second draw without noise: for the released generator to be
post-processing of the noisy discriminator, its inputs must be independent of the data, so
the adversary may see them. The statistic is the same log-likelihood ratio over the
generator steps' draws.

Example:
    >>> rng = np.random.default_rng(0)
    >>> d = np.ones((50, 1, 4)) * 0.5
    >>> x, a, ss, dof = dpsgd_projections(rng.normal(0, 2.0, (50, 1, 4)), d)
    >>> x.shape, dof, bool(abs(ss / dof - 4.0) < 1.5)
    ((50,), 150, True)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy.special import logsumexp, xlog1py, xlogy
from scipy.stats import binom

from dpaudit._validate import (
    check_array,
    check_nonneg_int,
    check_positive,
    check_positive_int,
    check_probability,
)
from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    SyntheticThreatModel,
    WorstCaseDataset,
)
from dpaudit.systems.synthetic import TabularDomain

__all__ = [
    "CONDITION_RULES",
    "LOSS_CAP",
    "RATIO_CAP",
    "RATIO_FLOOR",
    "condition_rates",
    "conditions_llr",
    "dpsgd_mixture_llr",
    "dpsgd_projections",
    "out_of_reach",
    "pate_label_llr",
    "student_residual_ratio",
    "target_conditions",
]

#: The cap on the white-box-dpsgd statistic (module docstring).
LOSS_CAP = 5.0
#: The white-box-student statistic's cap and floor, log₁₀ of a relative residual (module
#: docstring): float32 rounding of a step's gradient is ~1e-7 of it, one real row's share of a
#: step of 500 generated and 500 real rows ~1e-3.
RATIO_CAP = -5.0
RATIO_FLOOR = -12.0


def dpsgd_projections(noisy: Any, direction: Any) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Each step's noisy restricted gradient sum split along the adversary's direction.

    Args:
        noisy: ``(steps, …)`` the released noisy clipped gradient sums ``G_k`` (restricted to
            the coordinates no row of D moves).
        direction: the same shape, the adversary's guess ``d_k`` of t's clipped contribution.

    Returns:
        ``(x, a, residual, dof)``: ``x_k = ⟨G_k, d_k⟩/‖d_k‖`` (0 where ``d_k = 0``),
        ``a_k = ‖d_k‖``, the squared norm of what is left of every ``G_k`` and its degrees of
        freedom ``Σ_k (size_k − 1)`` (``size_k`` where ``d_k = 0``). Under D, with the noise
        ``σ·N(0, I)``, ``x_k/σ`` are independent standard normals and ``residual/σ²`` is
        χ² with ``dof`` degrees of freedom, independent of them (each ``d_k`` depends on
        earlier steps only).

    Raises:
        ValueError: shapes that differ or hold no step, or non-finite values.
    """
    g = check_array("noisy", noisy)
    d = check_array("direction", direction)
    if g.shape != d.shape or g.ndim < 2 or g.shape[0] < 1:
        raise ValueError(f"noisy and direction must share a (steps, ...) shape with steps ≥ 1, "
                         f"got {g.shape} and {d.shape}")  # fmt: skip
    g = g.reshape(len(g), -1)
    d = d.reshape(len(d), -1)
    a = np.linalg.norm(d, axis=1)
    u = np.divide(d, a[:, None], out=np.zeros_like(d), where=a[:, None] > 0)
    x = np.sum(g * u, axis=1)
    residual = float(np.sum(g * g) - np.sum(x * x))
    dof = int(g.size - np.count_nonzero(a))
    return x, a, max(residual, 0.0), dof


def dpsgd_mixture_llr(
    x: Any, a: Any, *, sigma: float, batch_size: int, rate: float
) -> float:  # fmt: skip
    """Log-likelihood ratio of the projections ``x_k ~ N(m_k a_k, σ²)`` with ``m_k ~ Bin(B,
    p)`` (D ∪ {t}) against ``x_k ~ N(0, σ²)`` (D), summed over the steps (module docstring).

    Args:
        x, a: per step, the projection and the length of t's guessed contribution
            (:func:`dpsgd_projections`).
        sigma: the noise's standard deviation (the one drawn, estimated, or the one claimed).
        batch_size: ``B``, rows sampled per step.
        rate: ``p``, the probability that one sampled row is t.

    Example:
        >>> round(dpsgd_mixture_llr([1.0], [1.0], sigma=1.0, batch_size=1, rate=0.5), 6)
        0.28093
        >>> round(math.log((1 + math.exp(0.5)) / 2), 6)  # log(½ + ½ e^{1 − ½})
        0.28093
    """
    xs = np.atleast_1d(check_array("x", x)).astype(np.float64)
    av = np.atleast_1d(check_array("a", a)).astype(np.float64)
    if xs.shape != av.shape or xs.ndim != 1:
        raise ValueError(f"x and a must be vectors of one length, got {xs.shape}, {av.shape}")
    s2 = check_positive("sigma", sigma) ** 2
    b = check_positive_int("batch_size", batch_size)
    p = check_probability("rate", rate)
    m = np.arange(b + 1, dtype=np.float64)
    logw = binom.logpmf(m, b, p)
    terms = (np.outer(av * xs, m) - np.outer(av * av, m * m) / 2.0) / s2
    return float(np.sum(logsumexp(terms + logw[None, :], axis=1)))


def out_of_reach(columns: Any, D: Any, cardinalities: Any) -> np.ndarray:
    """Which of t's one-hot input coordinates ``columns`` no row of ``D`` sets (the worker's
    one-hot layout: column ``j``'s value ``v`` at ``Σ_{i<j} k_i + v``).

    Example:
        >>> out_of_reach([1, 2, 4], [[0, 0, 1], [0, 1, 1]], (2, 2, 2)).tolist()
        [True, False, True]
    """
    cols = np.asarray(columns, dtype=np.int64)
    cards = np.asarray(cardinalities, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(cards)[:-1]])
    reached = np.unique(offsets[None, :] + np.asarray(D, dtype=np.int64))
    return ~np.isin(cols, reached)


def _white_box_dpsgd(run, synthetic, pair, fitted_on):
    """The statistic of one DPCTGAN run (module docstring), the noise read off the rest, on
    the recorded columns no row of D sets — or on all of them when D sets every one (as on
    ``tree-flip``: D's rows then move them too; the statistic stays valid, its threshold is
    chosen on held-out runs, but it is no longer pure noise under D)."""
    rec = run.get("gradients")
    if rec is None or "noisy" not in rec:
        raise ValueError("white-box-dpsgd reads DPCTGAN's recorded gradients: the run holds "
                         "none (the worker records them given the pair's target)")  # fmt: skip
    noisy, direction = np.asarray(rec["noisy"]), np.asarray(rec["direction"])
    keep = out_of_reach(rec["columns"], pair.D, pair.domain.cardinalities)
    if keep.any():
        noisy, direction = noisy[..., keep], direction[..., keep]
    x, a, residual, dof = dpsgd_projections(noisy, direction)
    sigma = math.sqrt(residual / dof) if dof > 0 and residual > 0 else float(rec["sigma"])
    llr = dpsgd_mixture_llr(x, a, sigma=sigma, batch_size=int(rec["batch_size"]),
                            rate=1.0 / len(pair.D_prime))  # fmt: skip
    return min(llr, LOSS_CAP)


def student_residual_ratio(norm2: Any, residual2: Any) -> np.ndarray:
    """Per step of the student, ``‖G_k − F_k‖/‖G_k‖`` from the per-column squared norms the worker
    records (module docstring; 0 where ``G_k = 0``).

    Args:
        norm2: ``(steps, columns)``, ``Σ_h G_k[h, c]²`` per column.
        residual2: the same for ``G_k − F_k``.

    Example:
        >>> student_residual_ratio([[3.0, 1.0], [4.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]).tolist()
        [0.0, 0.5]
    """
    n2 = check_array("norm2", norm2)
    r2 = check_array("residual2", residual2)
    if n2.shape != r2.shape or n2.ndim != 2:
        raise ValueError(f"norm2 and residual2 must share a (steps, columns) shape, got "
                         f"{n2.shape} and {r2.shape}")  # fmt: skip
    if (n2 < 0).any() or (r2 < 0).any():
        raise ValueError("norm2 and residual2 are squared norms and must be ≥ 0")
    tot, res = n2.sum(axis=1), r2.sum(axis=1)
    return np.sqrt(np.divide(res, tot, out=np.zeros_like(res), where=tot > 0))


def _white_box_student(run, synthetic, pair, fitted_on):
    """log₁₀ of the largest relative residual over the steps of PATECTGAN's student, on the
    recorded columns no row of D sets, between :data:`RATIO_FLOOR` and :data:`RATIO_CAP`."""
    rec = run.get("student")
    if rec is None or "norm2" not in rec:
        raise ValueError(
            "white-box-student reads the recorded steps of PATECTGAN's student: the "
            "run holds none (the worker records them given the pair's target)"
        )
    keep = out_of_reach(rec["columns"], pair.D, pair.domain.cardinalities)
    if not keep.any():
        raise ValueError("white-box-student needs a column of t that no row of D sets: on this "
                         "pair D's rows move every one of them")  # fmt: skip
    n2, r2 = np.asarray(rec["norm2"]), np.asarray(rec["residual2"])
    ratio = student_residual_ratio(n2[:, keep], r2[:, keep])
    top = float(ratio.max()) if ratio.size else 0.0
    return float(np.clip(math.log10(top) if top > 0 else RATIO_FLOOR, RATIO_FLOOR, RATIO_CAP))


def target_conditions(categories: Any, target: Any, cardinalities: Any) -> int:
    """How many synthetic rows were generated from a conditional-vector category that the
    target holds (the one-hot index layout of :func:`out_of_reach`: column ``j``'s value
    ``v`` at ``Σ_{i<j} k_i + v``).

    smartnoise-synth 1.0.8's GANs condition each synthetic row on a category read from the
    private data without noise: PATECTGAN's ``sample()`` copies the category of a uniformly
    drawn private row (CTGAN's ``sample_original_condvec``), DPCTGAN's draws one by the
    private category frequencies (``sample_condvec``; an absent category counted once). On
    ``unique-record`` (t holds only categories no row of D does) PATECTGAN's count is 0 on D
    whatever the noise, and Binomial(N, 1/|D ∪ {t}|) on D ∪ {t}; on ``twin-record`` (t's
    categories held by one row of D) DPCTGAN's count doubles on D ∪ {t}. With the conditions
    drawn from the public domain (the fix) both worlds draw them alike.

    Example:
        >>> target_conditions([0, 3, 2, 1, 3], [0, 1], (2, 2))
        3
    """
    cats = np.asarray(check_array("categories", categories), dtype=np.int64).ravel()
    cards = np.asarray(cardinalities, dtype=np.int64)
    width = int(cards.sum())
    if cats.size and (cats.min() < 0 or cats.max() >= width):
        raise ValueError(f"categories must index the {width} one-hot categories, got values "
                         f"in {cats.min()}..{cats.max()}")  # fmt: skip
    offsets = np.concatenate([[0], np.cumsum(cards)[:-1]])
    held = offsets + np.asarray(target, dtype=np.int64)
    return int(np.count_nonzero(np.isin(cats, held)))


#: How each GAN's ``sample()`` reads a row's condition from the private data (the worker
#: records it beside the conditions): ``"rows"`` — PATECTGAN, the category of a uniformly drawn
#: private row; ``"frequencies"`` — DPCTGAN, a category drawn by its private frequency, an
#: absent one counted once. Either way a column is chosen uniformly first.
CONDITION_RULES = ("rows", "frequencies")


def condition_rates(D: Any, target: Any, cardinalities: Any, rule: str) -> tuple[float, float]:
    """The probability that one synthetic row is conditioned on one of t's categories, when
    the generator was fitted on D and on D ∪ {t}: ``(1/d) Σ_j q_j(t_j)`` over the d columns,
    ``q_j(v)`` the share of rows holding ``v`` in column j (``"rows"``), or ``max(c_j(v),
    1) / Σ_u max(c_j(u), 1)`` from the counts ``c_j`` (``"frequencies"``;
    :data:`CONDITION_RULES`).

    Example:
        >>> condition_rates([[0, 0]] * 4, [1, 1], (2, 2), "rows")
        (0.0, 0.2)
        >>> condition_rates([[0, 0]] * 4, [1, 1], (2, 2), "frequencies")  # 1/5 on both
        (0.2, 0.2)
    """
    if rule not in CONDITION_RULES:
        raise ValueError(f"rule must be one of {CONDITION_RULES}, got {rule!r}")
    X = np.asarray(D, dtype=np.int64)
    t = np.asarray(target, dtype=np.int64)
    cards = [int(k) for k in cardinalities]

    def rate(rows: np.ndarray) -> float:
        out = 0.0
        for j, k in enumerate(cards):
            c = np.bincount(rows[:, j], minlength=k).astype(np.float64)
            if rule == "frequencies":
                c = np.maximum(c, 1.0)
            out += float(c[t[j]] / c.sum())
        return out / len(cards)

    return rate(X), rate(np.vstack([X, t[None, :]]))


def conditions_llr(count: int, rows: int, p0: float, p1: float) -> float:
    """Log-likelihood ratio of ``count`` of ``rows`` synthetic rows conditioned on t's
    categories, Binomial(rows, p1) (fitted on D ∪ {t}) against Binomial(rows, p0) (on D):
    each row's condition is drawn independently (:func:`condition_rates`). ``+inf`` where
    only D ∪ {t} can give ``count``.

    Example:
        >>> from scipy.stats import binom
        >>> v = conditions_llr(7, 100, 0.05, 0.1)
        >>> bool(abs(v - (binom.logpmf(7, 100, 0.1) - binom.logpmf(7, 100, 0.05))) < 1e-9)
        True
        >>> conditions_llr(1, 100, 0.0, 0.1)
        inf
    """
    k, n = check_nonneg_int("count", count), check_positive_int("rows", rows)
    if k > n:
        raise ValueError(f"count must be at most rows={n}, got {count}")
    for name, p in (("p0", p0), ("p1", p1)):
        check_probability(name, p)

    def logpmf(p: float) -> float:
        return float(xlogy(k, p) + xlog1py(n - k, -p)) if 0.0 < p < 1.0 else (
            0.0 if (p == 0.0 and k == 0) or (p == 1.0 and k == n) else -math.inf)  # fmt: skip

    a, b = logpmf(p1), logpmf(p0)
    if b == -math.inf:
        return math.inf if a > -math.inf else math.nan
    return a - b


def _white_box_conditions(run, synthetic, pair, fitted_on, *, view="conditions"):
    """The capped log-likelihood ratio of the count of rows (or, ``view =
    "training-conditions"``, of DPCTGAN's training draws) conditioned on t's categories
    (:func:`conditions_llr` at the rates of the run's rule), capped at :data:`LOSS_CAP`."""
    rec = run.get(view)
    if rec is None or "categories" not in rec:
        what = "a GAN's sample()" if view == "conditions" else "DPCTGAN's training"
        raise ValueError(f"white-box-{view} reads the conditions {what} drew: the run holds "
                         f"none" + (" (give sample_rows > 0)" if view == "conditions" else "")
                         )  # fmt: skip
    cards = pair.domain.cardinalities
    k = target_conditions(rec["categories"], pair.target, cards)
    p0, p1 = condition_rates(pair.D, pair.target, cards, rec["rule"])
    return min(conditions_llr(k, len(np.ravel(rec["categories"])), p0, p1), LOSS_CAP)


def pate_label_llr(labels: Any, votes1: Any, votes0: Any, *, teachers: int, scale: float) -> float:
    """Log-likelihood ratio of PATE-GAN's noisy labels given the teachers' votes on D ∪ {t}
    (``votes1``) against those on D (``votes0``): ``Σ_q log P(l_q | v1_q) − log P(l_q |
    v0_q)`` with ``P(l = 1 | v) = P(v + L > T/2)``, ``L ~ Laplace(0, b)``: smartnoise-synth's
    ``pate`` adds Laplace noise of scale ``b = 1/λ`` to the count of the ``T`` teachers that
    vote "real" and labels the row 1 when the noisy count passes ``T/2`` (Jordon, Yoon & van
    der Schaar 2019, ICLR; Papernot et al. 2017, arXiv:1610.05755). Each query's noise is
    fresh, so given the votes (functions of the data, the transcript so far and randomness
    the adversary is given) this is the exact privacy loss of the label transcript; a query
    whose votes agree adds 0.

    Args:
        labels: the released labels, 0 or 1, one per query.
        votes1, votes0: the vote counts (0 … T) on D ∪ {t} and on D.
        teachers: ``T``.
        scale: ``b``.

    Example:
        >>> from scipy.stats import laplace
        >>> llr = pate_label_llr([1, 0], [1, 1], [0, 1], teachers=1, scale=2.0)
        >>> bool(np.isclose(llr, np.log(laplace.sf(-0.5, scale=2) / laplace.sf(0.5, scale=2))))
        True
    """
    t = check_positive_int("teachers", teachers)
    b = check_positive("scale", scale)
    ls = np.atleast_1d(check_array("labels", labels)).astype(np.float64)
    v1 = np.atleast_1d(check_array("votes1", votes1)).astype(np.float64)
    v0 = np.atleast_1d(check_array("votes0", votes0)).astype(np.float64)
    if not ls.shape == v1.shape == v0.shape or ls.ndim != 1:
        raise ValueError(f"labels, votes1 and votes0 must be vectors of one length, got "
                         f"{ls.shape}, {v1.shape}, {v0.shape}")  # fmt: skip
    if not np.isin(ls, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 or 1")
    for name, v in (("votes1", v1), ("votes0", v0)):
        if (v < 0).any() or (v > t).any() or (v != np.round(v)).any():
            raise ValueError(f"{name} must be counts of 0 … {t} teachers")

    def log_p(v: np.ndarray) -> np.ndarray:
        """log P(label | v): one tail of the Laplace at the threshold less the count."""
        z = (t / 2.0 - v) / b
        small = np.log(0.5) - np.abs(z)  # the tail beyond |z|
        big = np.log1p(-0.5 * np.exp(-np.abs(z)))  # the rest
        up = np.where(z >= 0, small, big)  # log P(v + L > T/2)
        down = np.where(z >= 0, big, small)
        return np.where(ls == 1.0, up, down)

    return float(np.sum(log_p(v1) - log_p(v0)))


def _white_box_votes(run, synthetic, pair, fitted_on):
    """The label transcript's privacy loss (:func:`pate_label_llr`) from PATEGAN's recorded
    votes, on D (column 0) and D ∪ {t} (column 1), the tables' order in every audit."""
    rec = run.get("votes")
    if rec is None or "votes" not in rec:
        raise ValueError("white-box-votes reads PATEGAN's recorded votes: the run holds none "
                         "(the worker records them on every dataset it is sent)")  # fmt: skip
    votes = np.asarray(rec["votes"])
    if votes.ndim != 2 or votes.shape[1] != 2:
        raise ValueError(f"white-box-votes reads the votes on D and D ∪ {{t}}, got a record "
                         f"of shape {votes.shape}")  # fmt: skip
    return pate_label_llr(rec["labels"], votes[:, 1], votes[:, 0], teachers=rec["teachers"],
                          scale=rec["scale"])  # fmt: skip


def _white_box_steps(run, synthetic, pair, fitted_on):
    """The optimizer steps the run's opacus engine took: the number of noisy gradients its
    training transcript releases (module docstring)."""
    acc = run.get("accounting")
    if acc is None or "steps" not in acc:
        raise ValueError("white-box-steps reads the steps a DP-SGD GAN's opacus engine "
                         "counted: the run's accounting holds none")  # fmt: skip
    return float(acc["steps"])


def _twin_record(*, columns: int = 3, rows: int = 50) -> WorstCaseDataset:
    d = check_positive_int("columns", columns)
    n = check_positive_int("rows", rows)
    if d < 2 or n < 2:
        raise ValueError(f"twin-record needs columns ≥ 2 and rows ≥ 2, got {columns}, {rows}")
    D = np.zeros((n, d), dtype=np.int64)
    D[-1] = 1
    return WorstCaseDataset(
        "twin-record", D, np.ones(d, dtype=np.int64), TabularDomain((2,) * d),
        "one row of D is 1…1 among rows of 0…0, and t is its twin: each of t's categories "
        "has count 1 in D and 2 in D ∪ {t}, so a category frequency read from the private "
        "data (as smartnoise's GANs' conditional samplers read them, an absent category "
        "counted once) doubles where unique-record leaves it unchanged",
    )  # fmt: skip


WORST_CASE_DATASETS.register("twin-record", _twin_record)


SYNTHETIC_THREAT_MODELS.register(
    "white-box-dpsgd",
    SyntheticThreatModel(
        "white-box-dpsgd", ("gradients",), _white_box_dpsgd,
        "log-likelihood ratio of DPCTGAN's or DPGAN's released noisy gradient sums on the "
        "real-row steps, "
        "restricted to the first-layer columns only t's one-hot coordinates reach, at the "
        "noise level read off the coordinates that carry no signal (capped at a loss of 5)",
        reads=("dpctgan", "dpgan"),
    ),
)  # fmt: skip
SYNTHETIC_THREAT_MODELS.register(
    "white-box-student",
    SyntheticThreatModel(
        "white-box-student", ("student",), _white_box_student,
        "the largest share of a gradient step on PATECTGAN's student (as installed every "
        "teacher step too: one network) that its generated rows do not explain, on the "
        "first-layer columns only t's one-hot coordinates reach (log10, floored at 1e-12, "
        "capped at 1e-5)",
        reads=("patectgan",),
    ),
)  # fmt: skip
SYNTHETIC_THREAT_MODELS.register(
    "white-box-conditions",
    SyntheticThreatModel(
        "white-box-conditions", ("conditions",), _white_box_conditions,
        "log-likelihood ratio of the count of a GAN's synthetic rows generated from a "
        "conditional-vector category the target holds (its sample() reads each row's "
        "condition from the private data), capped at a loss of 5",
        reads=("patectgan", "dpctgan"),
    ),
)  # fmt: skip
SYNTHETIC_THREAT_MODELS.register(
    "white-box-training-conditions",
    SyntheticThreatModel(
        "white-box-training-conditions", ("training-conditions",),
        functools.partial(_white_box_conditions, view="training-conditions"),
        "log-likelihood ratio of the count of the conditional vectors DPCTGAN's generator "
        "steps train on that fall on a category the target holds (drawn by the private "
        "category frequencies, read without noise), capped at a loss of 5",
        reads=("dpctgan",),
    ),
)  # fmt: skip
SYNTHETIC_THREAT_MODELS.register(
    "white-box-votes",
    SyntheticThreatModel(
        "white-box-votes", ("votes",), _white_box_votes,
        "log-likelihood ratio of PATEGAN's noisy labels given its teachers' votes on D ∪ {t} "
        "and on D (the teachers of the other dataset trained beside the library's along the "
        "same transcript, with the same seeds): the exact privacy loss of the labels",
        llr=True, reads=("pategan",),
    ),
)  # fmt: skip
SYNTHETIC_THREAT_MODELS.register(
    "white-box-steps",
    SyntheticThreatModel(
        "white-box-steps", ("accounting",), _white_box_steps,
        "the number of noisy gradients a DP-SGD GAN's training releases (its opacus steps), "
        "which DPGAN reads off the private row count",
        reads=("dpgan", "dpctgan"),
    ),
)  # fmt: skip
