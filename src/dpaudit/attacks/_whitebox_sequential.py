"""A white-box DP-SGD audit that can stop during the training run: an e-process over steps.

The white-box auditor (:mod:`dpaudit.attacks._whitebox`) reads, at every step ``t``, each
Dirac canary's projection ``y_it`` of the privatised update. An included canary's projection
is a draw from ``P = (1 − q)N(0, σ²) + qN(1, σ²)``, an excluded one's from ``Q = N(0, σ²)``,
independently across canaries and steps given the inclusions — one step of the
Poisson-subsampled Gaussian run on neighbouring datasets, observed after post-processing. A
step that is as private as the claimed noise multiplier σ says satisfies, for every event S
and every ε ≥ 0, ``P(S) ≤ e^ε Q(S) + δ_σ(ε)`` with δ_σ the claimed step's privacy profile
(:func:`dpaudit.accounting.subsampled_gaussian_delta`, direction ``"add"``).

Pairing the included canaries with the excluded ones (in index order, fixed before the
run), every step gives ``min(#included, #excluded)`` independent pairs ``(X, Y)``, and for
each column ``j = (τ_j, ε_j)`` of a grid fixed in advance the statistic
``1{X ≥ τ_j} − e^{ε_j} 1{Y ≥ τ_j} − δ_σ(ε_j)`` has mean ≤ 0 under the claim. Each column is
a betting test supermartingale (:class:`dpaudit.bounds.BettingEProcess`), and their average
is one too, so the claim is rejected, at any step, when the average reaches ``1/β``
(Ville's inequality; González, Dulce-Rubio, Ramdas & Ribero 2025, arXiv:2509.07055, test
DP-SGD violations within one training run the same way). The grid's thresholds sit between
the two means (0 and 1): a run with less noise than claimed puts more of ``P``'s sampled
peak above them than the claimed step allows.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import ArrayLike
from dpaudit._validate import (
    check_array,
    check_confidence_level,
    check_in_range,
    check_mask,
    check_scale,
)
from dpaudit.accounting import subsampled_gaussian_delta
from dpaudit.bounds import BettingEProcess

__all__ = ["CLAIM_TEST_GRID", "StepClaimTest", "StepClaimTestResult"]

#: (thresholds τ, ε values) of the columns, fixed in advance: every pair of the two.
CLAIM_TEST_GRID = ((0.25, 0.5, 0.75, 1.0), (0.0, 0.01, 0.02, 0.05, 0.1, 0.2))


@dataclasses.dataclass(frozen=True)
class StepClaimTestResult(ResultMixin):
    """Where the per-step test of the claimed noise multiplier stands.

    Attributes:
        noise_multiplier: the claimed σ tested.
        sampling_rate: q.
        rejects_claim: whether the mixture e-process reached ``1/β``.
        rejected_at_step: the step (1-based) at which it did, or ``None``.
        steps: steps observed.
        pairs_per_step: included/excluded canary pairs per step.
        log_e_value: log of the mixture e-value now; ``max_log_e_value`` its running max
            over the steps.
        confidence_level: 1 − β.
    """

    noise_multiplier: float
    sampling_rate: float
    rejects_claim: bool
    rejected_at_step: int | None
    steps: int
    pairs_per_step: int
    log_e_value: float
    max_log_e_value: float
    confidence_level: float
    method: str = "mixture of betting test supermartingales over (threshold, ε) (anytime-valid)"


class StepClaimTest:
    """The e-process over steps of the module notes.

    Args:
        included: (m,) the canaries' inclusions (fixed before the run).
        sampling_rate: q of the canaries.
        noise_multiplier: the claimed σ.
        confidence_level: 1 − β.

    Example:
        >>> from dpaudit.attacks import simulate_canary_gradients
        >>> y, inc = simulate_canary_gradients(2000, 60, sampling_rate=0.1,
        ...                                    noise_multiplier=0.5, rng=0)
        >>> test = StepClaimTest(inc, sampling_rate=0.1, noise_multiplier=1.0)
        >>> for t in range(60):
        ...     r = test.update(y[:, t])
        >>> r.rejects_claim, r.rejected_at_step < 20
        (True, True)
    """

    def __init__(
        self,
        included: ArrayLike,
        *,
        sampling_rate: float,
        noise_multiplier: float,
        confidence_level: float = 0.95,
    ):
        inc = check_mask("included", included)
        if inc.ndim != 1:
            raise ValueError(f"included must be 1-d, got shape {inc.shape}")
        self.q = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
        self.sigma = check_scale("noise_multiplier", noise_multiplier)
        self.level = check_confidence_level(confidence_level)
        self._m = inc.size
        n = int(min(inc.sum(), (~inc).sum()))
        if n == 0:
            raise ValueError("included must hold both included and excluded canaries")
        self._pos = np.flatnonzero(inc)[:n]
        self._neg = np.flatnonzero(~inc)[:n]
        taus, epss = CLAIM_TEST_GRID
        grid = [(t, e) for t in taus for e in epss]
        self._tau = np.array([t for t, _ in grid])[:, None]
        self._factor = np.exp([e for _, e in grid])[:, None]
        self._delta = np.array([
            subsampled_gaussian_delta(e, sampling_rate=self.q, noise_multiplier=self.sigma,
                                      direction="add") for _, e in grid
        ])[:, None]  # fmt: skip
        self._process = BettingEProcess(-(self._factor[:, 0] + self._delta[:, 0]))
        self._threshold = math.log(1.0 / (1.0 - self.level))
        self._steps, self._rejected_at, self._max = 0, None, 0.0

    def _mixture(self) -> float:
        # log of the mean of e^w, shifted by the maximum (scipy's logsumexp costs ~1 ms a call
        # for its generality, more than the step's bets)
        w = self._process.log_wealth
        top = float(w.max())
        return top + math.log(float(np.exp(w - top).sum())) - math.log(w.size)

    def update(self, observations: ArrayLike) -> StepClaimTestResult:
        """Feed one step's (m,) canary projections (units of the clipping norm)."""
        y = check_array("observations", observations, ndim=1)
        if y.size != self._m:
            raise ValueError(f"observations must have one value per canary ({self._m}), got "
                             f"{y.size}")  # fmt: skip
        x, v = y[self._pos][None, :], y[self._neg][None, :]
        z = (x >= self._tau) - self._factor * (v >= self._tau) - self._delta
        self._process.update(z)
        self._steps += 1
        now = self._mixture()
        self._max = max(self._max, now)
        if self._rejected_at is None and now >= self._threshold:
            self._rejected_at = self._steps
        return self._result(now)

    def result(self) -> StepClaimTestResult:
        """The current :class:`StepClaimTestResult`."""
        return self._result(self._mixture())

    def _result(self, now: float) -> StepClaimTestResult:
        return StepClaimTestResult(
            self.sigma, self.q, self._rejected_at is not None, self._rejected_at, self._steps,
            int(self._pos.size), now, self._max, self.level,
        )  # fmt: skip
