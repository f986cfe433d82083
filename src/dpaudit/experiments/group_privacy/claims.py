"""The group claims, the normalisation of a group lower bound and the exact group functional.

* Claims (upper bounds on the RDP of the n_Q answers): the single-point data-independent
  claim ``n_Q·α/σ²`` (Papernot et al. 2018, arXiv:1802.08908, Prop. 8, composed by Mironov
  2017, arXiv:1702.07476, Prop. 1); the group claim by the Gaussian m² rule ``m²·n_Q·α/σ²``
  (Mironov 2017 Prop. 7 at sensitivity m√2 per query); the generic group conversion of the
  single-point claim (Mironov 2017 Prop. 2). For a whole CaPC party the unit of privacy is
  the party, so its group claim is the single-point one.
* Normalisation: :func:`dpaudit.mechanisms.normalise_group_bound` — ``"generic"`` is valid for
  every mechanism; ``"gaussian"`` (÷ m²) bounds the single-point RDP of the Gaussian release
  the claim analyses, not the argmax's own exact RDP, for which no group functional is
  established; ``"teacher"`` is the identity.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpaudit._results import Claim, Curve, ResultMixin

__all__ = ["GroupClaims", "claims", "normalise", "worst_case_functional"]

_GAUSS = "Mironov 2017, arXiv:1702.07476, Prop. 7 (sensitivity m*sqrt(2)) and Prop. 1"
_GENERIC = "Mironov 2017, arXiv:1702.07476, Prop. 2 (alpha/2^c, 3^c eps) on the single-point claim"
_SINGLE = "Papernot et al. 2018, arXiv:1802.08908, Prop. 8, composed over n_Q queries"


@dataclasses.dataclass(frozen=True)
class GroupClaims(ResultMixin):
    """The claims of one (adversary, m) run, primary first."""

    claims: tuple[Claim, ...]
    effective_distance: int


def _to_dp(orders: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    from dpaudit.accounting import RDPCurve

    return float(RDPCurve(orders, rdp).to_dp(delta).epsilon)


def claims(
    adversary: Any, size: int, *, sigma: float, num_queries: int, orders: np.ndarray, delta: float
) -> GroupClaims:
    """Group claim (m² rule; primary), the generic group claim and the single-point claim."""
    from dpaudit.mechanisms import gaussian_group_rdp, generic_group_rdp

    m = 1 if adversary.normalisation == "teacher" else int(size)
    single = num_queries * gaussian_group_rdp(orders, sigma=sigma, distance=1)
    group = num_queries * gaussian_group_rdp(orders, sigma=sigma, distance=m)
    g_orders, g_rdp = generic_group_rdp(orders, single, distance=m)
    out = [
        Claim("group (Gaussian m^2 rule)", _GAUSS, _to_dp(orders, group, delta), delta,
              Curve(orders, group), "balle2020"),
        Claim("single point (data-independent)", _SINGLE, _to_dp(orders, single, delta), delta,
              Curve(orders, single), "balle2020"),
    ]  # fmt: skip
    if g_orders.size and np.all(g_orders > 1):
        out.insert(1, Claim("group (generic)", _GENERIC, _to_dp(g_orders, g_rdp, delta), delta,
                            Curve(g_orders, g_rdp), "balle2020"))  # fmt: skip
    return GroupClaims(tuple(out), m)


def normalise(adversary: Any, size: int, orders: np.ndarray, lower: np.ndarray) -> dict[str, Curve]:
    """Single-point lower bounds from the group bound: the adversary's own rule and the
    generic one (always valid), as curves."""
    from dpaudit.mechanisms import normalise_group_bound

    m = 1 if adversary.normalisation == "teacher" else int(size)
    out = {}
    for rule in dict.fromkeys((adversary.normalisation, "generic")):
        o, e = normalise_group_bound(orders, lower, distance=m, rule=rule)
        out[rule] = Curve(o, e)
    return out


def worst_case_functional(
    pair: Any, sigma: float, orders: np.ndarray, *, max_distance: int
) -> dict[str, Any]:
    """The exact group functional at the most moved changed query: the worst-case RDP of the
    noisy argmax at distance m over the histograms m votes away, against distance 1 and the
    m² rule (:func:`dpaudit.divergence.worst_case_group_renyi`). Empty when nothing changed
    or the shift exceeds ``max_distance`` (the enumeration grows as C^{2m})."""
    from dpaudit.divergence import worst_case_group_renyi
    from dpaudit.mechanisms import gaussian_group_rdp

    if pair.changed.size == 0:
        return {}
    shifts = pair.shifts
    k = int(np.argmax(shifts))
    m = int(shifts[k])
    if m > max_distance:
        return {}
    h = pair.votes[pair.changed[k]]
    at_m = worst_case_group_renyi(h, sigma, orders, distance=m).epsilons
    at_1 = worst_case_group_renyi(h, sigma, orders, distance=1).epsilons
    rule = gaussian_group_rdp(orders, sigma=sigma, distance=m)
    ratio = np.divide(at_m, at_1, out=np.full(at_m.shape, np.nan), where=at_1 > 0)
    return {"query": int(pair.changed[k]), "distance": m, "votes": h.tolist(),
            "at_distance": at_m, "at_one": at_1, "m2_rule": rule, "ratio": ratio}  # fmt: skip
