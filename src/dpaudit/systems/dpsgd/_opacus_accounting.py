"""Opacus' accountants for DP-SGD: ε, RDP and noise calibration of T Poisson-subsampled Gaussian
steps, and the claims' sources.

The accountants are Opacus' RDP accountant (Mironov, Talwar & Zhang 2019, arXiv:1908.10530;
conversion of Balle et al. 2020, arXiv:1905.09982, Thm 21) and its PRV accountant (Gopi, Lee &
Wutschitz 2021, arXiv:2106.02848). opacus is imported lazily (extra ``opacus``).
"""

from __future__ import annotations

import warnings

import numpy as np

from dpaudit._typing import ArrayLike
from dpaudit._validate import check_choice, check_delta, check_positive
from dpaudit.accounting import RDPCurve
from dpaudit.errors import require
from dpaudit.mechanisms.values import SubsampledGaussian

__all__ = [
    "ACCOUNTANTS",
    "CLAIM_SOURCES",
    "calibrate_noise_multiplier",
    "opacus_epsilon",
    "opacus_rdp",
]

ACCOUNTANTS: tuple[str, ...] = ("prv", "rdp")
#: The published source of each Opacus accountant's claim.
CLAIM_SOURCES = {
    "rdp": (
        "Opacus RDPAccountant: Mironov, Talwar & Zhang 2019 (arXiv:1908.10530), "
        "conversion of Balle et al. 2020 (arXiv:1905.09982, Thm 21)"
    ),
    "prv": (
        "Opacus PRVAccountant: Gopi, Lee & Wutschitz 2021 (arXiv:2106.02848), upper end of "
        "its ε error bracket"
    ),
}


def _opacus():
    return require("opacus", "opacus")


def opacus_rdp(
    sampling_rate: float, noise_multiplier: float, steps: int, orders: ArrayLike | None = None
) -> RDPCurve:
    """Opacus' own RDP of T Poisson-subsampled Gaussian steps (``compute_rdp``).

    Args:
        sampling_rate: q ∈ (0, 1].
        noise_multiplier: σ > 0.
        steps: T ≥ 1.
        orders: Rényi orders (default: Opacus' ``RDPAccountant.DEFAULT_ALPHAS``).

    Returns:
        :class:`~dpaudit.accounting.RDPCurve`.

    Example:
        >>> c = opacus_rdp(0.01, 1.1, 1000, [2.0, 8.0])
        >>> np.round(c.epsilons, 6).tolist()
        [0.12851, 0.58407]
    """
    mech = SubsampledGaussian(sampling_rate, noise_multiplier, steps)
    _opacus()
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp as rdp_analysis

    lam = np.asarray(RDPAccountant.DEFAULT_ALPHAS if orders is None else orders, dtype=float)
    rho = rdp_analysis.compute_rdp(
        q=mech.sampling_rate,
        noise_multiplier=mech.noise_multiplier,
        steps=mech.steps,
        orders=lam.tolist(),
    )
    return RDPCurve(lam, np.asarray(rho, dtype=np.float64))


def opacus_epsilon(
    sampling_rate: float, noise_multiplier: float, steps: int, delta: float, accountant: str
) -> float:
    """ε at δ of T Poisson-subsampled Gaussian steps from Opacus' accountant (``rdp``/``prv``).

    Raises:
        ValueError: bad parameters or accountant name.
    """
    mech = SubsampledGaussian(sampling_rate, noise_multiplier, steps)
    d = check_delta(delta, allow_zero=False)
    check_choice("accountant", accountant, ACCOUNTANTS)
    _opacus()
    from opacus.accountants import create_accountant

    acct = create_accountant(accountant)
    acct.history = [(mech.noise_multiplier, mech.sampling_rate, mech.steps)]
    with warnings.catch_warnings():
        # "Optimal order is the largest alpha": Opacus' ε is then merely less tight (valid);
        # PRV at q = 1 takes log(0) in the branch np.where discards (harmless).
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        warnings.filterwarnings("ignore", "divide by zero encountered in log", RuntimeWarning)
        return float(acct.get_epsilon(delta=d))


def calibrate_noise_multiplier(
    target_epsilon: float, delta: float, sampling_rate: float, steps: int, accountant: str
) -> float:
    """The noise multiplier σ that Opacus' accountant calibrates to a target (ε, δ).

    Opacus' ``get_noise_multiplier`` (bisection to ε tolerance 0.01, returning a σ whose ε
    is at most the target).

    Raises:
        ValueError: bad parameters or accountant.
    """
    eps = check_positive("target_epsilon", target_epsilon)
    d = check_delta(delta, allow_zero=False)
    SubsampledGaussian(sampling_rate, 1.0, steps)  # validates q and T
    check_choice("accountant", accountant, ACCOUNTANTS)
    _opacus()
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PRV's numerical warnings for extreme σ during search
        sigma = get_noise_multiplier(
            target_epsilon=eps,
            target_delta=d,
            sample_rate=float(sampling_rate),
            steps=int(steps),
            accountant=accountant,
            epsilon_tolerance=0.01,
        )
    return float(sigma)
