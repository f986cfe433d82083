"""Do the data resolve the paper's findings? Intervals on each adversary's leakage and the
comparisons of Chadha et al. 2024 ("Auditing Private Prediction", arXiv:2402.09403, §5.4).

**What is uncertain.** The audit's lower bound is valid for the *modelled* mechanism; how well
the model describes the system depends on the training phases behind it, above all on the
retrainings that estimate how often the receiving teacher's vote flips. Each audited
system × adversary therefore carries a :class:`LeakageProfile`: the flips behind its
neighbour model and the output distributions ``p̄, p̄′`` of the composed queries.

**Leakage interval.** The paired neighbour model is ``P′ = P·K̂`` (module notes of
:mod:`dpaudit.attacks.parametric`). Scaling its flips, ``K(t) = I + t(K̂ − I)``, multiplies the
flip probability by t and moves ``P′`` — and, as the output distribution is linear in the
neighbour's vote distribution, ``p̄′`` — along a line: ``p̄′(t) = p̄ + t(p̄′ − p̄)``. For α > 1,
``Σ p̄^α q^{1−α}`` is convex in q with its minimum at ``q = p̄``, so ``D_α(p̄ ‖ p̄′(t))`` is
non-decreasing in t ≥ 0, and so are the composed RDP curve and ε at δ (Balle et al. 2020,
arXiv:1905.09982, Thm 20 is monotone in the curve). A confidence interval ``[f_lo, f_hi]`` on
the flip probability f̂ therefore maps to ``[ε(f_lo/f̂), ε(f_hi/f̂)]`` (t capped where ``p̄′(t)``
stops being a distribution). Flip intervals: Clopper & Pearson (1934) for the repeated query
(valid for independent trials of unequal means too: Hoeffding 1956); for natural queries the
R retrainings give R independent flipped fractions in [0, 1], and the interval is the
Chernoff–Hoeffding one, ``{μ : R·kl(x̄ ‖ μ) ≤ log(2/β)}`` (Hoeffding 1963 Thm 1).
*Scope:* the interval carries the flip-probability uncertainty only; the other teachers' vote
distribution P and the direction of the flips are held at their estimates.

**Selection.** The worst adversarial query is the one whose model looks leakiest, so its own
retrainings overstate its flips. With ``confirmations > 0`` its flips come from fresh
retrainings (independent of the choice, level ``1 − β/K``); otherwise its interval is paid for
by Bonferroni over the candidates (level ``1 − β/(K·n_candidates)``).

**Comparisons.** A finding "A leaks more than B" is *confirmed* when A's interval lies above
B's, *contradicted* when below, *equal* when both adversaries crafted the same point on the
same query (the same attack: e.g. Pois-AdvQ's runner-up label is the true label where the
plurality is wrong, so its poison is Nat-AdvQ's natural point), *unresolved* otherwise.
All K intervals used hold together with probability ≥ 1 − β (Bonferroni), so every verdict
of the check is right simultaneously at the run's ``confidence_level``. For an unresolved
comparison the check reports the retrainings per side at which the intervals would separate
if the estimates stayed as they are.

Example:
    >>> lo, hi = kl_interval(0.1, 200, confidence_level=0.95)
    >>> bool(lo < 0.1 < hi)
    True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import optimize

from dpaudit._results import ResultMixin
from dpaudit._typing import FloatArray
from dpaudit._validate import check_confidence_level, check_positive
from dpaudit.bounds import clopper_pearson_real

__all__ = [
    "FINDINGS",
    "Comparison",
    "Finding",
    "FindingsCheck",
    "LeakageInterval",
    "LeakageProfile",
    "check_findings",
    "kl_interval",
    "leakage_interval",
]

#: The paper's findings the check tests: (name, statement, source, comparisons), each
#: comparison ``((system, adversary) expected larger, (system, adversary) expected smaller)``.
FINDINGS: tuple[tuple[str, str, str, tuple[tuple[tuple[str, str], tuple[str, str]], ...]], ...] = (
    (
        "pois-ge-nat",
        "Pois-AdvQ leaks more than Nat-AdvQ for PATE",
        "Chadha et al. 2024 §5.4, 'Impact of poisoning capability'",
        ((("pate", "pois-advq"), ("pate", "nat-advq")),),
    ),
    (
        "capc-ge-pate",
        "CaPC leaks more than PATE",
        "Chadha et al. 2024 §5.4 (Fig. 3 and 4: PATE < CaPC for every adversary)",
        tuple(((("capc", a), ("pate", a))) for a in ("nat-advq", "pois-advq", "pois-natq")),
    ),
    (
        "natq-lt-advq",
        "Pois-NatQ leaks far less than the adversarial-query adversaries",
        "Chadha et al. 2024 §5.4, 'Impact of query capability'",
        tuple(
            ((s, a), (s, "pois-natq")) for s in ("pate", "capc") for a in ("pois-advq", "nat-advq")
        ),
    ),
)

_MAX_RETRAININGS = 10**7


# ------------------------------------------------------------------------------ intervals


def _kl(p: float, q: float) -> float:
    """Bernoulli relative entropy kl(p ‖ q)."""
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q))
    return out


def kl_interval(mean: float, n: float, *, confidence_level: float) -> tuple[float, float]:
    """Two-sided Chernoff–Hoeffding interval for the mean of n independent variables in
    [0, 1]: ``{μ : n·kl(x̄ ‖ μ) ≤ log(2/β)}`` (Hoeffding 1963, Thm 1: each one-sided tail is
    at most ``exp(−n·kl)``, so each end fails with probability ≤ β/2).

    Args:
        mean: the observed mean x̄ in [0, 1].
        n: the number of variables, > 0.
        confidence_level: 1 − β.

    Returns:
        ``(low, high)``.

    Example:
        >>> [round(v, 4) for v in kl_interval(0.5, 100, confidence_level=0.95)]
        [0.3659, 0.6341]
    """
    level = check_confidence_level(confidence_level)
    n = check_positive("n", n)
    x = min(max(float(mean), 0.0), 1.0)
    rhs = math.log(2.0 / (1.0 - level)) / n

    def gap(q: float) -> float:
        return _kl(x, q) - rhs

    lo = 0.0 if x == 0 or gap(1e-300) <= 0 else optimize.brentq(gap, 1e-300, x, xtol=1e-15)
    hi = 1.0 if x == 1 or gap(1 - 1e-16) <= 0 else optimize.brentq(gap, x, 1 - 1e-16, xtol=1e-15)
    return float(lo), float(hi)


# -------------------------------------------------------------------------------- profile


@dataclasses.dataclass(frozen=True)
class LeakageProfile(ResultMixin):
    """What the findings check needs of one system × adversary (module notes).

    Attributes:
        kind: ``"binomial"`` (flips of the affected teacher on the repeated query, out of
            ``trials`` retrainings) or ``"mean"`` (per retraining, the fraction of the
            natural queries whose vote flipped; ``flips`` is their sum).
        flips: flips, or the sum of the flipped fractions.
        trials: retrainings.
        selected_among: 1 when the retrainings are independent of any choice (fresh
            confirmations, natural queries), else the number of candidates the query was
            chosen among (its interval is then Bonferroni-corrected for the choice).
        scale_max: the largest flip scale t for which every ``p̄′(t)`` is a distribution.
        output_probabilities: ``p̄`` (row 0) and ``p̄′`` (row 1) of the composed queries
            whose ``p̄′`` differs from ``p̄`` (the others add nothing at any flip scale),
            ``(n, 2, C)``.
        composition: ``"repetitions"`` or ``"queries"``.
        num_composed: n_Q.
        point: for a repeated query, a digest of the system, the query and the crafted point
            (features and label): two adversaries with the same digest make the same attack.
    """

    kind: str
    flips: float
    trials: int
    selected_among: int
    scale_max: float
    output_probabilities: FloatArray
    composition: str
    num_composed: int
    point: str | None = None

    @property
    def estimate(self) -> float:
        """f̂: flips per retraining."""
        return self.flips / self.trials

    def flip_interval(self, confidence_level: float, trials: float | None = None):
        """Interval on the flip probability at ``confidence_level`` (before the correction
        for selection), optionally projected to ``trials`` retrainings at the same f̂."""
        n = float(self.trials if trials is None else trials)
        x = self.estimate * n
        if self.kind == "binomial":
            return clopper_pearson_real(x, n, confidence_level=confidence_level)
        return kl_interval(self.estimate, n, confidence_level=confidence_level)


def scale_max(pbar: np.ndarray) -> float:
    """Largest t with ``p̄ + t(p̄′ − p̄) ≥ 0`` for every query of ``pbar (n, 2, C)``."""
    d = pbar[:, 1] - pbar[:, 0]
    neg = d < 0
    if not neg.any():
        return math.inf
    return float(np.min(pbar[:, 0][neg] / -d[neg]))


def composed_epsilon(
    profile: LeakageProfile, scale: float, orders: np.ndarray, delta: float
) -> tuple[float, FloatArray]:
    """ε at δ and the composed exact RDP curve at flip scale t = ``scale``."""
    eps, curves = composed_epsilons(profile, [scale], orders, delta)
    return eps[0], curves[0]


def composed_epsilons(
    profile: LeakageProfile, scales: Sequence[float], orders: np.ndarray, delta: float
) -> tuple[list[float], FloatArray]:
    """ε at δ and the composed exact RDP curves at several flip scales (one divergence
    evaluation for all of them)."""
    from dpaudit.conversions import rdp_to_dp
    from dpaudit.experiments.private_prediction.stages import exact_rdp

    pb = profile.output_probabilities
    n = pb.shape[0]
    if n == 0:  # no query moved: nothing leaks at any flip scale
        return [0.0] * len(scales), np.zeros((len(scales), orders.size))
    moved = np.concatenate([pb] * len(scales))
    for i, t in enumerate(scales):
        moved[i * n : (i + 1) * n, 1] = pb[:, 0] + t * (pb[:, 1] - pb[:, 0])
    np.maximum(moved, 0.0, out=moved)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        per_query = exact_rdp(moved, orders).reshape(len(scales), n, orders.size)
    if profile.composition == "repetitions":
        curves = profile.num_composed * per_query[:, 0]
    else:
        curves = per_query.sum(axis=1)
    return [float(rdp_to_dp(orders, c, delta).epsilon) for c in curves], curves


@dataclasses.dataclass(frozen=True)
class LeakageInterval(ResultMixin):
    """ε at δ of one system × adversary's composed exact curve, with the interval implied by
    its flip-probability interval (module notes).

    Attributes:
        system: registered system name.
        adversary: registered adversary name.
        epsilon: ε at the estimated flips (the entry's exact ε).
        low: ε at the low end of the flip interval.
        high: ε at the high end (``inf`` when no flip was seen: no direction to scale).
        flips: f̂.
        flip_interval: ``(f_lo, f_hi)`` at ``level``.
        level: the interval's confidence level after the Bonferroni corrections.
        trials: retrainings behind f̂.
        method: ``"clopper-pearson"`` or ``"chernoff-hoeffding"``.
    """

    system: str
    adversary: str
    epsilon: float
    low: float
    high: float
    flips: float
    flip_interval: tuple[float, float]
    level: float
    trials: int
    method: str


def leakage_interval(
    profile: LeakageProfile,
    level: float,
    orders: np.ndarray,
    delta: float,
    *,
    trials: float | None = None,
    labels: tuple[str, str] = ("", ""),
) -> LeakageInterval:
    """The leakage interval of one profile at ``level`` (optionally projected to ``trials``)."""
    f_hat = profile.estimate
    f_lo, f_hi = profile.flip_interval(level, trials)
    if f_hat <= 0:
        eps = composed_epsilon(profile, 1.0, orders, delta)[0]
        low, high = eps, (eps if profile.scale_max == 0 else math.inf)
    else:
        scales = [1.0, f_lo / f_hat, min(f_hi / f_hat, profile.scale_max)]
        (eps, low, high), _ = composed_epsilons(profile, scales, orders, delta)
    method = "clopper-pearson" if profile.kind == "binomial" else "chernoff-hoeffding"
    return LeakageInterval(
        labels[0],
        labels[1],
        eps,
        low,
        high,
        f_hat,
        (f_lo, f_hi),
        level,
        int(profile.trials if trials is None else trials),
        method,
    )


# ---------------------------------------------------------------------------- comparisons


@dataclasses.dataclass(frozen=True)
class Comparison(ResultMixin):
    """One comparison "``larger`` leaks more than ``smaller``".

    Attributes:
        larger: the leakage interval expected to be larger.
        smaller: the one expected to be smaller.
        verdict: ``"confirmed"``, ``"contradicted"``, ``"equal"`` (both make the same
            attack: the same crafted point on the same query) or ``"unresolved"``.
        reason: why, in words.
        retrainings_needed: for an unresolved comparison, retrainings per side at which the
            intervals would separate if the estimates stayed as they are (None: resolved, or
            equal estimates that no number of retrainings separates).
        ratio: ``larger.low / smaller.high`` (how many times larger at least, when resolved).
    """

    larger: LeakageInterval
    smaller: LeakageInterval
    verdict: str
    reason: str
    retrainings_needed: int | None
    ratio: float


@dataclasses.dataclass(frozen=True)
class Finding(ResultMixin):
    """One finding of the paper and its verdict on this run's data.

    Attributes:
        name: short key (``"pois-ge-nat"``, ``"capc-ge-pate"``, ``"natq-lt-advq"``).
        statement: the finding.
        source: where the paper states it.
        comparisons: the comparisons it rests on (those whose entries were audited).
        verdict: ``"confirmed"`` (all confirmed), ``"contradicted"`` (all contradicted),
            ``"equal"`` (all equal), ``"mixed"`` (all resolved, not all the same way),
            ``"unresolved"`` (some comparison unresolved) or ``"not checked"`` (no comparison
            audited).
        reason: in words.
    """

    name: str
    statement: str
    source: str
    comparisons: tuple[Comparison, ...]
    verdict: str
    reason: str


@dataclasses.dataclass(frozen=True)
class FindingsCheck(ResultMixin):
    """The findings check of one run (module notes).

    Attributes:
        confidence_level: the level at which all verdicts hold together.
        num_intervals: K, the leakage intervals used (Bonferroni over them).
        correction: ``"bonferroni"``.
        findings: one :class:`Finding` per checked finding.
        note: scope and validity.
    """

    confidence_level: float
    num_intervals: int
    correction: str
    findings: tuple[Finding, ...]
    note: str

    def finding(self, name: str) -> Finding:
        """The finding of that name."""
        for f in self.findings:
            if f.name == name:
                return f
        raise KeyError(f"no finding {name!r}; have {[f.name for f in self.findings]}")


_NOTE = (
    "Intervals on epsilon at delta of the composed exact curve, from the flip-probability "
    "interval of each entry (other model parameters held at their estimates); all intervals "
    "hold together at confidence_level (Bonferroni over the K intervals, and over the "
    "candidates where the worst query's flips also chose it)."
)


def _compare(
    a: LeakageInterval, b: LeakageInterval, pa: LeakageProfile, pb: LeakageProfile
) -> tuple[str, str]:
    if a.system == b.system and pa.point is not None and pa.point == pb.point:
        return "equal", (
            "the same crafted point on the same query: the two adversaries make the same "
            "attack there, so their leakage is equal (any difference is retraining noise)"
        )
    if a.low > b.high:
        return "confirmed", f"{a.low:.3g} > {b.high:.3g}: intervals disjoint"
    if a.high < b.low:
        return "contradicted", f"{a.high:.3g} < {b.low:.3g}: intervals disjoint, the other way"
    return "unresolved", f"[{a.low:.3g}, {a.high:.3g}] and [{b.low:.3g}, {b.high:.3g}] overlap"


def _needed(
    pa: LeakageProfile, pb: LeakageProfile, la: float, lb: float, orders, delta
) -> int | None:
    """Smallest common number of retrainings per side at which the intervals separate."""
    if pa.flips <= 0 or pb.flips <= 0:
        return None
    ea = composed_epsilon(pa, 1.0, orders, delta)[0]
    if math.isclose(ea, composed_epsilon(pb, 1.0, orders, delta)[0], rel_tol=1e-9, abs_tol=1e-12):
        return None

    def separated(n: float) -> bool:
        ia = leakage_interval(pa, la, orders, delta, trials=n)
        ib = leakage_interval(pb, lb, orders, delta, trials=n)
        return ia.low > ib.high or ia.high < ib.low

    lo, hi = float(max(pa.trials, pb.trials)), float(max(pa.trials, pb.trials))
    while not separated(hi):
        lo, hi = hi, hi * 2
        if hi > _MAX_RETRAININGS:
            return None
    while hi - lo > max(1.0, 0.01 * hi):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if separated(mid) else (mid, hi)
    return math.ceil(hi)


def check_findings(
    audits: Sequence[Any],
    *,
    confidence_level: float,
    orders: np.ndarray,
    delta: float,
) -> FindingsCheck:
    """Check the paper's findings on the audited entries (module notes).

    Args:
        audits: the :class:`AdversaryAudit` of each audited system × adversary (entries
            without a ``profile`` are skipped).
        confidence_level: 1 − β of all verdicts together.
        orders: Rényi orders of the composed curves.
        delta: δ of ε.

    Returns:
        :class:`FindingsCheck`.
    """
    level = check_confidence_level(confidence_level)
    profiles = {
        (a.algorithm, a.adversary): a.profile
        for a in audits
        if getattr(a, "profile", None) is not None
    }
    plans = []
    used: set[tuple[str, str]] = set()
    for name, statement, source, comps in FINDINGS:
        present = [(x, y) for x, y in comps if x in profiles and y in profiles]
        plans.append((name, statement, source, present))
        for x, y in present:
            used.update((x, y))
    k = max(len(used), 1)
    beta = 1.0 - level
    levels = {s: 1.0 - beta / (k * profiles[s].selected_among) for s in used}
    intervals = {s: leakage_interval(profiles[s], levels[s], orders, delta, labels=s) for s in used}
    findings = []
    for name, statement, source, present in plans:
        comps = []
        for x, y in present:
            verdict, reason = _compare(intervals[x], intervals[y], profiles[x], profiles[y])
            needed = None
            if verdict == "unresolved":
                needed = _needed(profiles[x], profiles[y], levels[x], levels[y], orders, delta)
            hi = intervals[y].high
            ratio = intervals[x].low / hi if hi > 0 else math.inf
            comps.append(Comparison(intervals[x], intervals[y], verdict, reason, needed, ratio))
        findings.append(_finding(name, statement, source, tuple(comps)))
    return FindingsCheck(level, len(used), "bonferroni", tuple(findings), _NOTE)


def _finding(name: str, statement: str, source: str, comps: tuple[Comparison, ...]) -> Finding:
    verdicts = {c.verdict for c in comps}
    if not comps:
        return Finding(name, statement, source, comps, "not checked", "no comparison audited")
    if "unresolved" in verdicts:
        needed = [c.retrainings_needed for c in comps if c.verdict == "unresolved"]
        known = [n for n in needed if n is not None]
        more = f"; about {max(known)} retrainings per side would resolve it" if known else ""
        return Finding(
            name,
            statement,
            source,
            comps,
            "unresolved",
            f"{sum(c.verdict == 'unresolved' for c in comps)} of {len(comps)} comparisons "
            f"have overlapping intervals{more}",
        )
    if verdicts == {"confirmed"}:
        return Finding(name, statement, source, comps, "confirmed", "every interval disjoint")
    if verdicts == {"equal"}:
        return Finding(name, statement, source, comps, "equal", comps[0].reason)
    if verdicts == {"contradicted"}:
        return Finding(
            name, statement, source, comps, "contradicted", "every interval disjoint, the other way"
        )
    return Finding(name, statement, source, comps, "mixed", "resolved, not all the same way")
