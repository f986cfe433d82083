"""ε of DP-SGD's fixed-size batches, against the Poisson sampling they are accounted as.

Opacus's accountant, and the libraries built on it, charge each step as the Poisson-subsampled
Gaussian mechanism: a record joins a batch independently with probability q = B/n, and its
clipped gradient (norm ≤ C) moves the noisy sum by at most C. Two other samplers ship in
audited code (smartnoise-synth 1.0.8's GANs):

* *sampling with replacement into a batch of B draws* (CTGAN's conditional sampler): the
  target t appears K ~ Binomial(B, 1/n) times, each copy clipped on its own;
* *a shuffled pass in batches of B* (a ``DataLoader`` with ``shuffle=True, drop_last=True``):
  each epoch t sits in exactly one of b = ⌊n/B⌋ batches, or in the n − bB rows dropped.

Both keep the batch size fixed, so adding t *displaces* a row of the other dataset. In the
instance of Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "How Private are DP-SGD
Implementations?" (ICML 2024, arXiv:2403.17673; multi-epoch: "Scalable DP-SGD: Shuffling vs.
Poisson Subsampling", NeurIPS 2024, arXiv:2411.04205) every other row's clipped gradient is
−C·u and t's is +C·u, so each copy of t moves its batch's sum by 2C (``copy_shift=2``, the
most clipped gradients allow); with the other rows' gradients orthogonal to t's, by √2·C; with
them 0 on t's direction, by C (``copy_shift=1``).
The ε at δ of that instance, for add and remove alike (the larger of the two directions), is
a lower bound on the ε of the mechanism as implemented: a claim that exceeds no such value is
not refuted by it, and a claim below it is wrong for those batches.

With replacement the instance is the Gaussian mechanism with a mixture of shifts 2C·K (or
C·K), composed over the steps: dp-accounting's mixture-of-Gaussians privacy loss distribution
(Google's ``from_mixture_gaussian_mechanism``, connect-the-dots, pessimistic). The shuffled
instance's privacy loss per epoch is the log of a mixture over t's batch (and its drop); it
has no closed form, so δ(ε) = E[(1 − e^{ε − L})₊] is estimated by Monte Carlo over the
epochs' noise, with a 95 % interval from the estimate's standard error.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, special, stats

from dpaudit._results import ResultMixin
from dpaudit._rng import as_generator
from dpaudit._typing import RngLike
from dpaudit._validate import (
    check_delta,
    check_in_range,
    check_memory,
    check_positive_int,
    check_work,
)
from dpaudit.errors import require

__all__ = ["MonteCarloEpsilon", "shuffled_gaussian_epsilon", "with_replacement_gaussian_epsilon"]

#: Binomial multiplicities above this tail mass are dropped (their mass moves to the rest).
_TAIL = 1e-14
#: Most distinct copy counts of t (the mixture's components) one call accepts.
MAX_COPY_COUNTS = 64
#: The noise multipliers accepted (dp-accounting's PLDs break down far outside them).
NOISE_RANGE = (1e-2, 1e4)
#: Largest batch (draws a batch) accepted.
MAX_BATCH = 10**9
#: Most composed steps one call accepts (dp-accounting's self-composition).
MAX_STEPS = 10**6
#: Most standard normal draws (samples × batches × epochs, each direction) one call accepts.
MAX_NOISE_DRAWS = 2e9
#: z of the two-sided 95 % interval of a Monte Carlo estimate.
_Z95 = float(stats.norm.ppf(0.975))


@dataclasses.dataclass(frozen=True)
class MonteCarloEpsilon(ResultMixin):
    """A Monte Carlo estimate of ε at δ with a 95 % interval (from δ(ε)'s standard error)."""

    epsilon: float
    low: float
    high: float
    samples: int


def _checked(
    noise_multiplier: object, batch_size: object, num_records: object, delta: object, shift: object
) -> tuple[float, int, int, float, float]:
    """The arguments both functions share, checked by name; the shift per copy is in [0.1, 2]."""
    return (
        check_in_range(
            "noise_multiplier",
            noise_multiplier,
            *NOISE_RANGE,
            low_inclusive=True,
            high_inclusive=True,
        ),
        check_positive_int("batch_size", batch_size, maximum=MAX_BATCH),
        check_positive_int("num_records", num_records),
        check_delta(delta, allow_zero=False),
        check_in_range("copy_shift", shift, 0.1, 2.0, low_inclusive=True, high_inclusive=True),
    )


def with_replacement_gaussian_epsilon(
    noise_multiplier: float,
    batch_size: int,
    num_records: int,
    steps: int,
    delta: float,
    *,
    copy_shift: float = 2.0,
) -> float:
    """ε at ``delta`` of ``steps`` Gaussian steps whose batches draw ``batch_size`` rows with
    replacement from ``num_records`` (the dataset holding t): t's copies K ~ Binomial(B, 1/n),
    each shifting the sum by ``copy_shift``·C (2: Chua et al. 2024, arXiv:2403.17673).
    dp-accounting's mixture-of-Gaussians PLD, both adjacency directions.

    Examples:
        >>> round(with_replacement_gaussian_epsilon(5.0, 500, 1001, 10, 1e-2), 2)
        1.53
    """
    sigma, draws, n, target_delta, shift = _checked(
        noise_multiplier, batch_size, num_records, delta, copy_shift
    )
    k_steps = check_positive_int("steps", steps, maximum=MAX_STEPS)
    # t's copies between the Binomial's two 1e-14 tails (not all B + 1 counts)
    low = max(0, int(stats.binom.ppf(_TAIL, draws, 1.0 / n)) - 1)
    high = min(draws, int(stats.binom.isf(_TAIL, draws, 1.0 / n)) + 1)
    check_work(
        high - low + 1,
        MAX_COPY_COUNTS,
        f"with_replacement_gaussian_epsilon with batch_size={draws}, num_records={n}",
        "copy counts of t",
        "raise dpaudit.accounting._batches.MAX_COPY_COUNTS",
    )
    pld = require("dp_accounting.pld.privacy_loss_distribution", "accounting")
    k = np.arange(low, high + 1)
    pmf = stats.binom.pmf(k, draws, 1.0 / n)
    keep = pmf > _TAIL
    if not np.any(k[keep] > 0):  # t is (all but) never drawn: the steps ignore it
        return 0.0
    weights = pmf[keep] / pmf[keep].sum()
    # the grid of the privacy loss: 1e-3, coarser only where the largest shift makes the loss
    # span so wide (an extreme σ) that 1e-3 would take millions of points
    widest = (shift * float(k[keep].max()) / sigma) ** 2
    loss = pld.from_mixture_gaussian_mechanism(
        sigma,
        sensitivities=[float(shift * c) for c in k[keep]],
        sampling_probs=[float(w) for w in weights],
        value_discretization_interval=max(1e-3, widest / 5e4),
    )
    return float(loss.self_compose(k_steps).get_epsilon_for_delta(target_delta))


def _epoch_losses(
    gen: np.random.Generator, samples: int, batches: int, p_drop: float, s: float, with_t: bool
) -> np.ndarray:
    """One epoch's privacy loss ln(P/Q) (P: t in the data) at outputs drawn under P or Q,
    in units of σ: each batch's noise is N(0, 1) and t's batch is shifted by ``s`` (the shift
    per copy over σ), unless t fell among the ``p_drop`` rows ``drop_last`` leaves out."""
    x = gen.standard_normal((samples, batches)) * s
    if with_t:
        kept = gen.random(samples) >= p_drop
        rows = np.flatnonzero(kept)
        x[rows, gen.integers(0, batches, rows.size)] += s * s
    mix = special.logsumexp(x - 0.5 * s * s, axis=1) - math.log(batches)
    if p_drop == 0.0:
        return mix
    return np.logaddexp(math.log1p(-p_drop) + mix, math.log(p_drop))


def shuffled_gaussian_epsilon(
    noise_multiplier: float,
    batch_size: int,
    num_records: int,
    epochs: int,
    delta: float,
    *,
    copy_shift: float = 2.0,
    samples: int = 200_000,
    rng: RngLike = 0,
) -> MonteCarloEpsilon:
    """ε at ``delta`` of ``epochs`` shuffled passes in batches of ``batch_size`` (``drop_last``)
    over ``num_records`` rows (the dataset holding t; the other has one fewer and must make
    as many batches), one Gaussian step a batch, on Chua et al.'s instance (arXiv:2411.04205):
    t's copy shifts its batch by ``copy_shift``·C (2 by default). Monte Carlo over ``samples``
    draws of every epoch's noise, both directions; the interval is where δ(ε) ± 1.96 se = δ.

    Examples:
        >>> est = shuffled_gaussian_epsilon(3.5, 64, 1001, 20, 1e-2, samples=50_000)
        >>> round(est.epsilon, 1)
        1.4
    """
    sigma, size, n, target_delta, shift = _checked(
        noise_multiplier, batch_size, num_records, delta, copy_shift
    )
    passes = check_positive_int("epochs", epochs)
    draws = check_positive_int("samples", samples)
    batches = n // size
    if batches < 1 or (n - 1) // size != batches:
        raise ValueError(
            f"num_records={n} and batch_size={size}: the datasets with and without t must both "
            "make at least one batch and the same number of batches (else the step count differs)"
        )
    check_work(
        float(draws) * batches * passes,
        MAX_NOISE_DRAWS,
        f"shuffled_gaussian_epsilon with samples={draws}, num_records={n} and batch_size={size} "
        f"({batches} batches), epochs={passes}",
        "normal draws",
        "raise dpaudit.accounting._batches.MAX_NOISE_DRAWS",
    )
    # the epoch's noise, its shifted copy and logsumexp's temporaries, float64
    check_memory(4.0 * 8 * draws * batches, f"shuffled_gaussian_epsilon on {batches} batches")
    s = shift / sigma
    p_drop = (n - batches * size) / n
    gen = as_generator(rng)
    # add: outputs under P (t in), loss ln P/Q; remove: outputs under Q, loss ln Q/P = −ln P/Q
    add = sum(_epoch_losses(gen, draws, batches, p_drop, s, True) for _ in range(passes))
    remove = -sum(_epoch_losses(gen, draws, batches, p_drop, s, False) for _ in range(passes))
    return _invert(target_delta, [add, remove], draws)


def _invert(delta: float, losses: list[np.ndarray], draws: int) -> MonteCarloEpsilon:
    """The ε where the larger direction's δ(ε) (and its ± 1.96 se) meets ``delta``."""

    def solve(z: float) -> float:
        def excess(eps: float) -> float:
            worst = -1.0
            for loss in losses:
                hinge = -np.expm1(np.minimum(eps - loss, 0.0))
                worst = max(worst, hinge.mean() + z * hinge.std() / math.sqrt(draws))
            return worst - delta

        if excess(0.0) <= 0.0:
            return 0.0
        top = float(max(loss.max() for loss in losses))
        return float(optimize.brentq(excess, 0.0, top, xtol=1e-6))

    return MonteCarloEpsilon(solve(0.0), solve(-_Z95), solve(_Z95), draws)
