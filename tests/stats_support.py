"""Statistical helpers shared by the sampler tests."""

from __future__ import annotations

import numpy as np
from scipy import stats


def chi2_pvalue(counts, probs):
    """χ² goodness-of-fit p-value of ``counts`` against ``probs``: cells expected below 5
    pooled into one, dropped (and the rest rescaled) when even the pool is below 5."""
    e = counts.sum() * probs
    keep = e >= 5
    obs = np.r_[counts[keep], counts[~keep].sum()]
    exp = np.r_[e[keep], e[~keep].sum()]
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
        exp = exp * obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue
