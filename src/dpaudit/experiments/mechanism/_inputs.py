"""The inputs, outputs and scores both modes of the mechanism audit share: the candidate
pairs (StatDP's input patterns, Ding et al. 2018, CCS, then the mechanism's own), checked
draws of outputs, the probe that refuses a broken mechanism before any real work, and the
candidate scores of a pair (DP-Sniper's logistic regression, Bichsel et al. 2021, IEEE S&P,
with and without median indicators; exact counts; or the closed-form log-likelihood ratio).

Used by :mod:`~dpaudit.experiments.mechanism.pipeline` (the fixed and staged audits) and
:mod:`~dpaudit.experiments.mechanism.sequential` (the anytime-valid stream).
"""

from __future__ import annotations

import numpy as np

from dpaudit._rng import child_seed
from dpaudit.attacks import MechanismAttack, fit_mechanism_attack, input_patterns
from dpaudit.experiments.mechanism.settings import MechanismAuditSettings
from dpaudit.systems import MechanismSpec

__all__ = ["WORKFLOW"]

WORKFLOW = "mechanism"
_PROBE = 16  # outputs per input drawn to check the mechanism before any real work
# The training sets an audit sizes on purpose (the suite's SVT1/SVT2: 4·10⁶ outputs per input
# of 10 values, with indicator features): up to ~2 GB of float64 features, a minute of fitting.
_FIT_ENTRIES = 250_000_000


def _pairs(settings: MechanismAuditSettings, spec: MechanismSpec):
    if settings.pair_a:
        a, b = np.asarray(settings.pair_a, float), np.asarray(settings.pair_b, float)
        if a.size != spec.dimensions:
            raise ValueError(
                f"pair_a has {a.size} entries, mechanism {spec.name!r} takes {spec.dimensions}"
            )
        return ((a, b),)
    pairs = list(input_patterns(spec.dimensions, low=spec.low, high=spec.high,
                                component_wise=spec.component_wise))  # fmt: skip
    seen = {(a.tobytes(), b.tobytes()) for a, b in pairs}
    for a, b in spec.pairs:  # the mechanism's own candidates, after StatDP's
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if (a.tobytes(), b.tobytes()) not in seen and not np.array_equal(a, b):
            seen.add((a.tobytes(), b.tobytes()))
            pairs.append((a, b))
    return tuple(pairs)


def _draw(spec: MechanismSpec, db: np.ndarray, size: int, seed) -> np.ndarray:
    """``size`` outputs on ``db``, checked: errors, NaN and wrong shapes name the mechanism."""
    try:
        out = spec.sample(db.copy(), size, np.random.default_rng(seed))
        out = np.asarray(out, dtype=float)
    except TypeError as exc:  # an output of the wrong type (batch_sampler's checks)
        raise TypeError(f"mechanism {spec.name!r} on database={db.tolist()}: {exc}") from exc
    except Exception as exc:  # the user's code: report it with the input that broke it
        raise ValueError(f"mechanism {spec.name!r} raised {type(exc).__name__} on "
                         f"database={db.tolist()}: {exc}") from exc  # fmt: skip
    if out.ndim == 1:
        out = out[:, None]
    if out.ndim != 2 or out.shape[0] != size:
        raise TypeError(
            f"mechanism {spec.name!r} returned shape {out.shape} for {size} samples; "
            f"expected ({size}, k)"
        )
    if not np.all(np.isfinite(out)):
        bad = out[~np.isfinite(out)][0]
        raise ValueError(
            f"mechanism {spec.name!r} returned a non-finite output ({bad}) on "
            f"database={db.tolist()}"
        )
    return out


def _probe(spec: MechanismSpec, pairs, root: np.random.SeedSequence) -> None:
    """A few outputs on every input: errors, NaN and changing output widths surface here."""
    width = None
    for i, (a, b) in enumerate(pairs):
        for j, db in enumerate((a, b)):
            out = _draw(spec, db, _PROBE, child_seed(root, 9, i, j))
            if width is not None and out.shape[1] != width:
                raise TypeError(
                    f"mechanism {spec.name!r} changed its output type: {out.shape[1]} values "
                    f"on database={db.tolist()}, {width} before"
                )
            width = out.shape[1]
    return width


def _uses_llr(spec, s: MechanismAuditSettings) -> bool:
    return spec.log_likelihood_ratio is not None and s.attack == "auto"


def _attacks(spec, s: MechanismAuditSettings, a, b, train_a, train_b) -> list[MechanismAttack]:
    """The candidate scores of one pair: the closed-form log-likelihood ratio, or the fitted
    attack (and, for logistic regression, its median-indicator variant)."""
    if _uses_llr(spec, s):
        return [MechanismAttack("llr", llr=spec.log_likelihood_ratio, pair_a=a, pair_b=b)]
    attacks = [_fit(spec, train_a, train_b, s, indicators=False)]
    if attacks[0].kind == "logistic" and spec.features is None:  # "auto" decided once
        attacks.append(_fit(spec, train_a, train_b, s, indicators=True, kind="logistic"))
    return attacks


def _fit(spec, out_a, out_b, s: MechanismAuditSettings, indicators: bool,
         kind: str | None = None) -> MechanismAttack:  # fmt: skip
    return fit_mechanism_attack(out_a, out_b, kind=kind or s.attack, flags=spec.flags,
                                features=spec.features, max_outputs=s.max_outputs,
                                indicators=indicators, max_entries=_FIT_ENTRIES)  # fmt: skip
