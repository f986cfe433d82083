"""More noise helps the attacker (Wang et al. 2022, arXiv:2209.10732, §4.2, Fig. 5).

The mean error of the maximum-likelihood reconstruction from M GNMax answers, against σ on a
wide grid, next to the privacy cost the defender's accountant charges for the same M queries
(data-dependent and data-independent GNMax RDP, Papernot et al. 2018, arXiv:1802.08908,
converted with Balle et al. 2020, arXiv:1905.09982, Thm 21). More noise spreads the answers
over more classes, which reveals more of the histogram, while the claimed cost falls.

Streams: σ index ``s``, histogram ``h``, repetition ``r`` draw from
``child_seed(seed, 3, s, h, r)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._rng import child_seed, int_seed
from dpaudit._typing import FloatArray, RngLike
from dpaudit._validate import check_delta, check_positive, check_positive_int
from dpaudit.attacks import extraction_privacy_cost, normalised_l1_error, reconstruct_histogram
from dpaudit.data import CONSENSUS_LEVELS, VoteHistograms
from dpaudit.experiments.vote_leakage.extraction import NATIVE_CONVERSION, PART_SWEEP
from dpaudit.mechanisms import sample_argmax_counts_exact

__all__ = ["NoiseSweepResult", "run_noise_sweep"]


@dataclasses.dataclass(frozen=True, eq=False)
class NoiseSweepResult(ResultMixin):
    """Mean MLE error against σ (Wang et al. 2022 §4.2, "more noise helps the attacker").

    Attributes:
        sigmas: the noise grid.
        mean_error: mean over histograms and repetitions, per σ.
        mean_error_by_level: ``{level: per-σ means}``.
        errors: (len(sigmas), histograms, repetitions) array of errors.
        mean_epsilon_data_dependent: mean GNMax data-dependent ε(δ) of the M queries, per σ.
        mean_epsilon_data_independent: the same, data-independent.
        num_queries, repetitions, delta, seed: the settings.
    """

    sigmas: FloatArray
    mean_error: FloatArray
    mean_error_by_level: dict[str, FloatArray]
    errors: FloatArray
    mean_epsilon_data_dependent: FloatArray
    mean_epsilon_data_independent: FloatArray
    num_queries: int
    repetitions: int
    delta: float
    seed: int
    method: str = "MLE reconstruction from M exact answers per histogram and sigma"


def run_noise_sweep(
    histograms: VoteHistograms,
    *,
    sigmas: Sequence[float] = (5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300),
    num_queries: int = 10_000,
    repetitions: int = 5,
    delta: float = 1e-5,
    rng: RngLike = 0,
    progress: Callable[[str], None] | None = None,
) -> NoiseSweepResult:
    """Error of the MLE attack against σ on every histogram (Wang et al. 2022 §4.2).

    Args:
        histograms: e.g. :func:`dpaudit.data.load_mnist_vote_histograms`.
        sigmas: noise grid (increasing).
        num_queries: M.
        repetitions: answer sets per (histogram, σ).
        delta: δ of the privacy costs.
        rng: seed.
        progress: called after each σ.

    Returns:
        :class:`NoiseSweepResult`.

    Raises:
        ValueError: bad settings.

    Example:
        >>> from dpaudit.data import load_mnist_vote_histograms
        >>> hs = load_mnist_vote_histograms().subset(["M1"])
        >>> r = run_noise_sweep(hs, sigmas=[10, 80], repetitions=1, rng=0)
        >>> bool(r.mean_error[0] > r.mean_error[1])
        True
    """
    sig = np.array([check_positive("sigmas", s) for s in sigmas], dtype=np.float64)
    if sig.size == 0:
        raise ValueError("sigmas must not be empty")
    m = check_positive_int("num_queries", num_queries)
    reps = check_positive_int("repetitions", repetitions)
    d = check_delta(delta, allow_zero=False)
    seed = int_seed(rng)
    nh = len(histograms)
    errors = np.empty((sig.size, nh, reps))
    eps_dd = np.empty((sig.size, nh))
    eps_di = np.empty((sig.size, nh))
    for si, s in enumerate(sig):
        for hi in range(nh):
            truth = histograms.votes[hi].astype(np.float64)
            cost = extraction_privacy_cost(
                truth, sigma=float(s), num_queries=m, delta=d, conversion=NATIVE_CONVERSION
            )
            eps_dd[si, hi] = cost.epsilon_data_dependent
            eps_di[si, hi] = cost.epsilon_data_independent
            for r in range(reps):
                counts = sample_argmax_counts_exact(
                    truth, s, m, rng=child_seed(seed, PART_SWEEP, si, hi, r)
                )
                rec = reconstruct_histogram(
                    counts, float(s), histograms.num_teachers, intervals="none"
                )
                errors[si, hi, r] = normalised_l1_error(truth, rec.votes)
        if progress is not None:
            progress(f"noise sweep sigma={s:g}")
    levels = np.array(histograms.levels)
    by_level = {
        lvl: errors[:, levels == lvl, :].mean(axis=(1, 2))
        for lvl in CONSENSUS_LEVELS
        if np.any(levels == lvl)
    }
    return NoiseSweepResult(
        sigmas=sig,
        mean_error=errors.mean(axis=(1, 2)),
        mean_error_by_level=by_level,
        errors=errors,
        mean_epsilon_data_dependent=eps_dd.mean(axis=1),
        mean_epsilon_data_independent=eps_di.mean(axis=1),
        num_queries=m,
        repetitions=reps,
        delta=d,
        seed=seed,
    )
