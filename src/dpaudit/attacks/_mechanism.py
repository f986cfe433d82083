"""Black-box attacks on DP mechanisms: DP-Sniper's classifier threshold and exact counts.

DP-Sniper (Bichsel, Steffen, Bogunovic & Vechev 2021, IEEE S&P, §IV–V) audits a mechanism
M on a neighbouring pair (a, a′) by training a classifier to tell M(a) from M(a′), taking as
the attack event S the outputs whose classifier probability is above a threshold, and bounding
``ε ≥ ln(P[M(a′) ∈ S] / P[M(a) ∈ S])`` with exact Clopper–Pearson intervals on fresh samples.
This module holds the pieces that are attack rather than statistics:

* :func:`input_patterns` — the neighbouring pairs StatDP tries (Ding, Wang, Wang, Zhang &
  Kifer 2018, CCS, §5.1: one above, one below, one above rest below, …, X shape), both orders.
* :func:`output_features` — DP-Sniper's feature transform: the output values with special
  values ("flags": false, aborted) replaced by 0 and one-hot indicators of each flag.
* :func:`fit_mechanism_attack` — a score: L2-regularised logistic regression on the features
  (DP-Sniper's default classifier), or, for outputs with few distinct values, the exact
  log-ratio of their counts (the likelihood-ratio test on the empirical distributions).
* ``MechanismAttack("llr", llr=…, pair_a=a, pair_b=a′)`` — a mechanism's own closed-form
  log-likelihood ratio as the score (the Neyman–Pearson optimal events for the pair).
* :func:`choose_event` — the threshold with the best bound *projected* to the evaluation
  sample size, chosen on a selection split (never on the samples that are bounded).
* :class:`EventCounts` — the engine block function counting how many fresh outputs of a and
  a′ fall in the chosen event; the bound itself is :func:`dpaudit.bounds.epsilon_from_confusion`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._validate import (
    check_array,
    check_choice,
    check_confidence_level,
    check_flag,
    check_memory,
    check_positive,
    check_positive_int,
    check_real,
    check_work,
)
from dpaudit.bounds import clopper_pearson_arrays

__all__ = [
    "ATTACK_KINDS",
    "EventCounts",
    "MechanismAttack",
    "batch_sampler",
    "choose_event",
    "choose_threshold",
    "fit_mechanism_attack",
    "input_patterns",
    "output_features",
]

ATTACK_KINDS: tuple[str, ...] = ("auto", "logistic", "counts")
MAX_DIMENSIONS = 10**5  # database length of an input pattern
#: Largest training set of :func:`fit_mechanism_attack`: rows × (output features + 1), the
#: entries every pass (the distinct-output count, the features, each Newton step) goes over
#: (~200 ns an entry in all, measured: 10⁶ rows of 2 values fitted in 0.7 s), so ~4 s.
MAX_FIT_ENTRIES = 2 * 10**7
#: Most distinct special output values (DP-Sniper's "flags") of :func:`output_features`.
MAX_FLAGS = 256
_SELECTION_LEVEL = 0.975  # one-sided level of the conservative selection rates
_CODE_WEIGHTS_SEED = 20210524  # fixed: a row's code must not depend on the run


# ------------------------------------------------------------------------- inputs


def input_patterns(
    dimensions: int, *, low: float = -10.0, high: float = 10.0, component_wise: bool = False
) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """StatDP's neighbouring input pairs (Ding et al. 2018, CCS, §5.1), both orders, clipped.

    Single-entry neighbours: one above, one below. Component-wise neighbours (every entry
    changes by at most 1) add one above rest below, one below rest above, half-half, all
    above, all below and the X shape.

    Args:
        dimensions: length of the database vector, ≥ 1.
        low, high: the input domain; patterns are clipped to it.
        component_wise: use the component-wise patterns too.

    Returns:
        Distinct ``(a, a')`` float pairs, each also swapped.

    Example:
        >>> [(a.tolist(), b.tolist()) for a, b in input_patterns(1)]
        [([1.0], [0.0]), ([0.0], [1.0]), ([1.0], [2.0]), ([2.0], [1.0])]
    """
    d = check_positive_int("dimensions", dimensions, maximum=MAX_DIMENSIONS)
    low, high = check_real("low", low), check_real("high", high)
    if not low < high:
        raise ValueError(f"low must be below high, got low={low}, high={high}")
    component_wise = check_flag("component_wise", component_wise)
    h = d // 2
    ones = np.ones(d)
    raw = [(ones, np.r_[0.0, ones[1:]]), (ones, np.r_[2.0, ones[1:]])]
    if component_wise:
        raw += [
            (ones, np.r_[2.0, np.zeros(d - 1)]),
            (ones, np.r_[0.0, 2.0 * np.ones(d - 1)]),
            (ones, np.r_[2.0 * np.ones(h), np.zeros(d - h)]),
            (ones, 2.0 * ones),
            (ones, np.zeros(d)),
            (np.r_[np.ones(h), np.zeros(d - h)], np.r_[np.zeros(h), np.ones(d - h)]),
        ]
    out: list[tuple[np.ndarray, np.ndarray]] = []
    seen = set()
    for a, b in raw:
        a, b = np.clip(a, low, high), np.clip(b, low, high)
        for pair in ((a, b), (b, a)):
            key = (pair[0].tobytes(), pair[1].tobytes())
            if key not in seen and not np.array_equal(*pair):
                seen.add(key)
                out.append(pair)
    return tuple(out)


# ------------------------------------------------------------------------- outputs


def _as_row(out: Any, where: str) -> np.ndarray:
    if isinstance(out, (set, frozenset, dict)) or not isinstance(
        out, (int, float, np.number, np.ndarray, list, tuple, bool, np.bool_)
    ):
        raise TypeError(
            f"the mechanism's output {where} must be a number or a fixed-length sequence of "
            f"numbers (hashable as a row of numbers), got {type(out).__name__}: {out!r:.60}"
        )
    try:
        row = np.asarray(out, dtype=float).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"the mechanism's output {where} is not numeric: {out!r:.60}") from None
    return row


def batch_sampler(mechanism: Callable[[np.ndarray, np.random.Generator], Any]):
    """``sample(database, size, rng)`` from a plain ``mechanism(database, rng) -> output``.

    Every output is checked: a number or a fixed-length sequence of numbers, finite, and the
    same length as the first one (a mechanism that changes its output type fails here).

    Example:
        >>> s = batch_sampler(lambda db, rng: db[0] + rng.laplace(0, 10))
        >>> s(np.array([1.0]), 3, np.random.default_rng(0)).shape
        (3, 1)
    """
    if not callable(mechanism):
        raise TypeError(
            f"mechanism must be callable as mechanism(database, rng), got {mechanism!r}"
        )

    def sample(database: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        rows = []
        for i in range(size):
            try:
                out = mechanism(database.copy(), rng)
            except Exception as exc:  # the user's code: report it with the input that broke it
                raise ValueError(
                    f"mechanism raised {type(exc).__name__} on database={database.tolist()}: {exc}"
                ) from exc
            row = _as_row(out, f"#{i} on database={database.tolist()}")
            if rows and row.size != rows[0].size:
                raise TypeError(
                    f"the mechanism changed its output type: output #{i} has {row.size} "
                    f"values, the first had {rows[0].size}"
                )
            rows.append(row)
        return np.vstack(rows)

    return sample


def output_features(outputs: np.ndarray, flags: tuple[float, ...] = ()) -> np.ndarray:
    """DP-Sniper's feature transform (Bichsel et al. 2021, §VI-A, "flags"): values with each
    flag replaced by 0, followed by one indicator column per (column, flag).

    Args:
        outputs: ``(n, d)`` finite outputs.
        flags: the special values; duplicates are merged, at most :data:`MAX_FLAGS`.

    Returns:
        ``(n, d·(1 + number of distinct flags))`` features.

    Raises:
        ValueError, TypeError: outputs not a finite 2-d array, flags not finite numbers, more
            than :data:`MAX_FLAGS` distinct flags, or features above the memory cap.

    Example:
        >>> output_features(np.array([[1.0, -1.0]]), (-1.0,)).tolist()
        [[1.0, 0.0, 0.0, 1.0]]
    """
    x = check_array("outputs", outputs, ndim=2)
    flags = _check_flags(flags)
    if not flags:
        return x
    check_memory(
        8.0 * x.size * (2 * len(flags) + 2),
        f"output_features of outputs with shape {x.shape} and {len(flags)} distinct flags",
    )
    ind = [(x == f).astype(float) for f in flags]
    values = np.where(np.any(np.stack(ind), axis=0), 0.0, x)
    return np.hstack([values, *ind])


def _check_flags(flags: Any) -> tuple[float, ...]:
    """Distinct finite flag values, in their first order (duplicates merged), at most
    :data:`MAX_FLAGS` of them; a longer input is refused before its items are looked at."""
    if isinstance(flags, (str, bytes)) or not isinstance(flags, (tuple, list, np.ndarray)):
        raise TypeError(f"flags must be a sequence of numbers, got {flags!r:.60}")
    if isinstance(flags, np.ndarray):
        if flags.ndim != 1:
            raise ValueError(f"flags must be a 1-d sequence of numbers, got shape {flags.shape}")
        if flags.size > 100 * MAX_FLAGS and flags.dtype.kind in "iuf":  # merged vectorised
            arr = check_array("flags", flags, ndim=1)
            _, first = np.unique(arr, return_index=True)
            flags = arr[np.sort(first)]
    if len(flags) > 100 * MAX_FLAGS:
        raise ValueError(
            f"flags must list at most {MAX_FLAGS} distinct special values, got {len(flags)} values"
        )
    distinct = tuple(dict.fromkeys(check_real("flags", f) for f in flags))
    if len(distinct) > MAX_FLAGS:
        raise ValueError(
            f"flags must list at most {MAX_FLAGS} distinct special values (each adds one "
            f"indicator column per output column), got {len(distinct)}"
        )
    return distinct


def _row_codes(outputs: np.ndarray) -> np.ndarray:
    """One float per output row; equal rows give equal codes (a fixed random projection)."""
    w = np.random.default_rng(_CODE_WEIGHTS_SEED).uniform(1.0, 2.0, outputs.shape[1])
    return np.asarray(outputs, dtype=float) @ w


# ------------------------------------------------------------------------- the attack


@dataclasses.dataclass(frozen=True)
class MechanismAttack:
    """A fitted distinguisher and, once chosen, its event ``S = {score ≥ threshold}``.

    Large scores mean "the output came from a′" (the second input of the pair).

    Attributes:
        kind: ``"logistic"`` (DP-Sniper's logistic regression), ``"counts"`` (exact
            per-output log-ratios) or ``"llr"`` (the mechanism's closed-form log-likelihood
            ratio ``llr(outputs, pair_a, pair_b)``).
        weights, bias, mean, scale: the logistic model on standardised features.
        codes, table: ``"counts"``: sorted output codes and their scores (log-ratio of the
            training counts, ½ added to each); unseen outputs score 0.
        outputs: ``"counts"``: the distinct outputs, in ``codes`` order (for the witness).
        flags: special values of the feature transform.
        features: a mechanism's own feature function, or None.
        medians: ``"logistic"`` with indicator features: the pooled training medians of the
            output columns; the features then end with ``1{output > median}`` per column.
        llr, pair_a, pair_b: ``"llr"``: ``llr(outputs, a, a′) -> ln p_{a′}(o)/p_a(o)`` and
            the pair it is evaluated on.
        threshold: the event's threshold (``inf``, an empty event, until
            :func:`choose_event`).
    """

    kind: str
    weights: np.ndarray | None = None
    bias: float = 0.0
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    codes: np.ndarray | None = None
    table: np.ndarray | None = None
    outputs: np.ndarray | None = None
    flags: tuple[float, ...] = ()
    features: Callable[[np.ndarray], np.ndarray] | None = None
    medians: np.ndarray | None = None
    llr: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    pair_a: np.ndarray | None = None
    pair_b: np.ndarray | None = None
    threshold: float = math.inf

    def _features(self, outputs: np.ndarray) -> np.ndarray:
        if self.features is not None:
            fx = np.asarray(self.features(outputs), dtype=float)
        else:
            fx = output_features(outputs, self.flags)
        if self.medians is None:
            return fx
        return np.hstack([fx, (np.asarray(outputs, dtype=float) > self.medians).astype(float)])

    def scores(self, outputs: np.ndarray) -> np.ndarray:
        """The score of each output row (larger: more likely from a′)."""
        outputs = np.asarray(outputs, dtype=float)
        if self.kind == "llr":
            if self.llr is None:
                raise ValueError("an 'llr' attack needs its log-likelihood ratio function")
            # Rounded to 1e-9: the log-ratio of Laplace noise is clipped, its clip levels
            # have positive probability, and the last bits of a closed form evaluated on
            # float outputs (a + noise rounded) would otherwise decide which of those ties
            # fall in the event — a floating-point artefact, not the mechanism's ε.
            return np.round(np.asarray(self.llr(outputs, self.pair_a, self.pair_b), float), 9)
        if self.kind == "counts":
            c = _row_codes(outputs)
            i = np.clip(np.searchsorted(self.codes, c), 0, self.codes.size - 1)
            return np.where(self.codes[i] == c, self.table[i], 0.0)
        z = (self._features(outputs) - self.mean) / self.scale
        return z @ self.weights + self.bias

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        """Whether each output is in the event ``S`` (boolean array)."""
        return self.scores(outputs) >= self.threshold

    def event_outputs(self) -> np.ndarray | None:
        """``"counts"``: the distinct training outputs in ``S`` (the readable witness)."""
        if self.kind != "counts":
            return None
        return self.outputs[self.table >= self.threshold]

    def describe(self) -> str:
        """The event in words."""
        if self.kind == "llr":
            return (f"ln p_a'(output)/p_a(output) >= {self.threshold:.6g} (the mechanism's "
                    f"closed-form log-likelihood ratio on the pair)")  # fmt: skip
        if self.kind == "counts":
            rows = self.event_outputs()
            shown = "; ".join(str(r.tolist()) for r in rows[:6])
            more = f" and {rows.shape[0] - 6} more" if rows.shape[0] > 6 else ""
            return f"output in {{{shown}{more}}} ({rows.shape[0]} outputs)"
        w = np.round(self.weights / self.scale, 6).tolist()
        off = float(self.bias - np.sum(self.weights * self.mean / self.scale))
        ind = ""
        if self.medians is not None:
            ind = f" (features end with 1{{output > {np.round(self.medians, 6).tolist()}}})"
        return f"{w} . features(output) + {off:.6g} >= {self.threshold:.6g}{ind}"


def _fit_logistic(x: np.ndarray, y: np.ndarray, reg: float) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression (mean log-loss + reg/2·|w|², intercept free) by
    Newton's method with step halving: a strictly convex problem, a few d×d solves."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pen = np.r_[np.full(d, reg), 0.0]
    theta = np.zeros(d + 1)

    def loss(t):
        z = xb @ t
        return float(np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(pen * t * t))

    current = loss(theta)
    for _ in range(50):
        z = xb @ theta
        p = 0.5 * (1.0 + np.tanh(0.5 * z))  # the logistic function, without overflow
        grad = xb.T @ (p - y) / n + pen * theta
        hess = (xb * (p * (1.0 - p))[:, None]).T @ xb / n + np.diag(pen + 1e-12)
        step = np.linalg.solve(hess, grad)
        for _ in range(30):
            new = loss(theta - step)
            if new <= current:
                break
            step = step / 2.0
        theta, improvement, current = theta - step, current - new, new
        if improvement < 1e-12 * max(1.0, abs(current)):
            break
    return theta[:d], float(theta[d])


def _fit_counts(a: np.ndarray, b: np.ndarray, both: np.ndarray, flags) -> MechanismAttack:
    codes_all = _row_codes(both)  # one float per row: far cheaper than unique(axis=0)
    _, first, inv = np.unique(codes_all, return_index=True, return_inverse=True)
    uniq = both[first]
    inv = inv.ravel()
    na = np.bincount(inv[: a.shape[0]], minlength=uniq.shape[0]) / a.shape[0]
    nb = np.bincount(inv[a.shape[0] :], minlength=uniq.shape[0]) / b.shape[0]
    half = 0.5 / max(a.shape[0], b.shape[0])
    table = np.log((nb + half) / (na + half))
    codes = _row_codes(uniq)
    order = np.argsort(codes)
    return MechanismAttack("counts", codes=codes[order], table=table[order],
                           outputs=uniq[order], flags=flags)  # fmt: skip


def fit_mechanism_attack(
    outputs_a: np.ndarray,
    outputs_b: np.ndarray,
    *,
    kind: str = "auto",
    flags: tuple[float, ...] = (),
    features: Callable[[np.ndarray], np.ndarray] | None = None,
    max_outputs: int = 1000,
    regularization: float = 1e-3,
    indicators: bool = False,
    max_entries: int = MAX_FIT_ENTRIES,
) -> MechanismAttack:
    """Fit a score telling outputs of a′ (``outputs_b``) from outputs of a (``outputs_a``).

    ``"counts"``: each distinct output scores ``ln((n_b(o) + ½)/(n_a(o) + ½))`` (with the
    class sizes equalised), the likelihood-ratio test of the empirical distributions (the
    optimal event for discrete outputs; Neyman–Pearson). ``"logistic"``: DP-Sniper's
    logistic regression on :func:`output_features`. ``"auto"``: counts when the training
    outputs take at most ``max_outputs`` distinct values, each seen 20 times on average,
    else logistic. ``indicators`` (logistic only) adds one feature per output column,
    ``1{output > its pooled training median}``: the log-likelihood ratio of a shift much
    smaller than the scale of Laplace-like noise is a clipped linear function of each
    coordinate, close to such a step (Neyman–Pearson), which a linear score on the raw values
    cannot follow — for many parallel Laplace mechanisms the optimal event counts the
    coordinates above the middle, not their sum.

    Raises:
        ValueError: empty or non-finite outputs, outputs of different widths, unknown kind,
            more than ``max_entries`` training entries (rows × (features + 1); default
            :data:`MAX_FIT_ENTRIES`, a few seconds — an audit that sizes its training set on
            purpose passes its own).

    Example:
        >>> g = np.random.default_rng(0)
        >>> att = fit_mechanism_attack(g.laplace(0, 1, (500, 1)), g.laplace(1, 1, (500, 1)))
        >>> att.kind, bool(att.weights[0] > 0)
        ('logistic', True)
    """
    a = check_array("outputs_a", outputs_a, ndim=2)
    b = check_array("outputs_b", outputs_b, ndim=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"outputs_a and outputs_b differ in width: {a.shape[1]} vs {b.shape[1]}")
    check_choice("kind", kind, ATTACK_KINDS)
    flags = _check_flags(flags)
    if features is not None and not callable(features):
        raise TypeError(f"features must be callable or None, got {features!r:.60}")
    max_outputs = check_positive_int("max_outputs", max_outputs)
    regularization = check_positive("regularization", regularization)
    indicators = check_flag("indicators", indicators)
    rows = a.shape[0] + b.shape[0]
    width = a.shape[1] * (1 + len(flags) + int(indicators))  # features without a custom map
    check_work(  # before any pass over the rows: each pass costs ~10 ns an entry
        float(rows) * (width + 1),
        check_positive_int("max_entries", max_entries),
        f"fit_mechanism_attack on outputs_a with {a.shape[0]} rows and outputs_b with "
        f"{b.shape[0]} rows of {a.shape[1]} values",
        "entries",
        "pass fewer training outputs (they only fit the score; the bound comes from fresh "
        "samples), or raise max_entries",
    )
    both = np.vstack([a, b])
    if kind == "auto":  # counts when few outputs, each seen 20 times on average
        distinct = np.unique(_row_codes(both)).size  # cheap: one float per row
        few = distinct <= max_outputs and 20 * distinct <= both.shape[0]
        kind = "counts" if few else "logistic"
    if kind == "counts":
        return _fit_counts(a, b, both, flags)
    medians = np.median(both, axis=0) if indicators else None
    att = MechanismAttack("logistic", flags=flags, features=features, medians=medians)
    fx = np.vstack([att._features(a), att._features(b)])
    mean, scale = fx.mean(axis=0), fx.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    y = np.r_[np.zeros(a.shape[0]), np.ones(b.shape[0])]
    w, bias = _fit_logistic((fx - mean) / scale, y, regularization)
    return dataclasses.replace(att, weights=w, bias=bias, mean=mean, scale=scale)


def choose_event(
    attack: MechanismAttack,
    outputs_a: np.ndarray,
    outputs_b: np.ndarray,
    *,
    n_eval: int,
    confidence_level: float = 0.95,
    max_candidates: int = 256,
) -> tuple[MechanismAttack, float]:
    """The threshold whose bound, projected to ``n_eval`` fresh samples per input, is best.

    On selection samples (not used to fit the score, never used for the reported bound) the
    rates ``p′ = P[M(a′) ∈ S_t]`` and ``p = P[M(a) ∈ S_t]`` of every candidate threshold,
    taken conservatively (the one-sided Clopper–Pearson lower bound of ``p′`` and upper
    bound of ``p`` on the selection counts), are turned into the Clopper–Pearson bound the
    evaluation would give at those rates
    (``max{ln(p′_lo/p_hi), ln((1−p_hi)/(1−p′_lo))}``, the two directions of
    :func:`dpaudit.bounds.epsilon_from_confusion`), and the best one is kept. Preferring the
    projected bound to the point estimate is what keeps tiny events (high ratio, few hits)
    from being chosen when the evaluation cannot confirm them.

    Returns:
        ``(attack with its threshold, projected ε)``.

    Example:
        >>> g = np.random.default_rng(0)
        >>> a, b = g.laplace(0, 1, (4000, 1)), g.laplace(1, 1, (4000, 1))
        >>> att = fit_mechanism_attack(a[:2000], b[:2000])
        >>> att, eps = choose_event(att, a[2000:], b[2000:], n_eval=10**5)
        >>> 0.7 < eps < 1.1
        True
    """
    n_eval, confidence_level, max_candidates = _check_choice(
        attack, n_eval, confidence_level, max_candidates
    )
    a = check_array("outputs_a", outputs_a, ndim=2)
    b = check_array("outputs_b", outputs_b, ndim=2)
    width = attack.mean.size if attack.kind == "logistic" and attack.features is None else None
    if width is not None and attack.medians is not None:
        width -= attack.medians.size
    for name, arr in (("outputs_a", a), ("outputs_b", b)):
        if attack.kind == "counts" and arr.shape[1] != attack.outputs.shape[1]:
            raise ValueError(f"{name} has {arr.shape[1]} columns, the attack's outputs "
                             f"{attack.outputs.shape[1]}")  # fmt: skip
        wrong = attack.medians is not None and arr.shape[1] != attack.medians.size
        if wrong or (width is not None and output_features(arr, attack.flags).shape[1] != width):
            raise ValueError(f"{name} does not have the width the attack was fitted on")
    return choose_threshold(attack, attack.scores(a), attack.scores(b), n_eval=n_eval,
                            confidence_level=confidence_level,
                            max_candidates=max_candidates)  # fmt: skip


def _check_choice(attack, n_eval, confidence_level, max_candidates) -> tuple[int, float, int]:
    """The shared arguments of :func:`choose_event` and :func:`choose_threshold`, checked."""
    if not isinstance(attack, MechanismAttack):
        raise TypeError(f"attack must be a MechanismAttack, got {type(attack).__name__}")
    return (
        check_positive_int("n_eval", n_eval),
        check_confidence_level(confidence_level),
        check_positive_int("max_candidates", max_candidates, maximum=10**5),
    )


def choose_threshold(
    attack: MechanismAttack,
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    *,
    n_eval: int,
    confidence_level: float = 0.95,
    max_candidates: int = 256,
) -> tuple[MechanismAttack, float]:
    """:func:`choose_event` on the selection samples' scores (``attack.scores(outputs)``)
    rather than on the outputs, so that a large selection set can be scored in chunks.

    Returns:
        ``(attack with its threshold, projected ε)``.

    Example:
        >>> g = np.random.default_rng(0)
        >>> att = fit_mechanism_attack(g.laplace(0, 1, (2000, 1)), g.laplace(1, 1, (2000, 1)))
        >>> sa = att.scores(g.laplace(0, 1, (2000, 1)))
        >>> sb = att.scores(g.laplace(1, 1, (2000, 1)))
        >>> att, eps = choose_threshold(att, sa, sb, n_eval=10**5)
        >>> 0.7 < eps < 1.1
        True
    """
    n_eval, confidence_level, max_candidates = _check_choice(
        attack, n_eval, confidence_level, max_candidates
    )
    sa = check_array("scores_a", scores_a, ndim=1)
    sb = check_array("scores_b", scores_b, ndim=1)
    pooled = np.unique(np.r_[sa, sb])
    if pooled.size > max_candidates:
        # max_candidates evenly spaced in probability, and a quarter as many more
        # log-spaced into each tail: the best events of mechanisms with many small
        # likelihood ratios (parallel compositions) hold well under 1/max_candidates of
        # the outputs.
        deep = np.geomspace(1.0 / pooled.size, 0.5, max(max_candidates // 4, 2))
        levels = np.r_[np.linspace(0, 1, max_candidates), deep, 1.0 - deep]
        pooled = np.unique(np.quantile(pooled, np.clip(levels, 0.0, 1.0)))
    ka = sa.size - np.searchsorted(np.sort(sa), pooled, side="left")  # #{score >= t}
    kb = sb.size - np.searchsorted(np.sort(sb), pooled, side="left")
    tail = 1.0 - (1.0 - confidence_level) / 2.0
    # Conservative rates (one-sided Clopper-Pearson on the selection counts at
    # _SELECTION_LEVEL) keep rare events, whose ratio is mostly noise on a small selection
    # set, from winning the choice; a heuristic (the choice is paid for by the split).
    lvl = _SELECTION_LEVEL
    _, pa = clopper_pearson_arrays(ka, sa.size, confidence_level=lvl, alternative="less")
    pb, _ = clopper_pearson_arrays(kb, sb.size, confidence_level=lvl, alternative="greater")
    _, hi_a = clopper_pearson_arrays(np.rint(pa * n_eval).astype(np.int64), n_eval,
                                     confidence_level=tail, alternative="less")  # fmt: skip
    lo_b, _ = clopper_pearson_arrays(np.rint(pb * n_eval).astype(np.int64), n_eval,
                                     confidence_level=tail, alternative="greater")  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        fwd = np.where(lo_b > 0, np.log(lo_b / hi_a), -np.inf)
        bwd = np.where(lo_b < 1, np.log((1 - hi_a) / (1 - lo_b)), np.inf)
        bwd = np.where(hi_a < 1, bwd, -np.inf)
    proj = np.nan_to_num(np.maximum(fwd, bwd), nan=-np.inf)
    best = int(np.argmax(proj))
    return dataclasses.replace(attack, threshold=float(pooled[best])), float(max(proj[best], 0.0))


@dataclasses.dataclass(frozen=True)
class EventCounts:
    """Engine block function: ``[#M(a) ∈ S, #M(a′) ∈ S]`` over ``size`` fresh runs of each.

    Block randomness comes only from the block's seed, so the counts do not depend on the
    executor or on how the run was cut into blocks (:func:`dpaudit.engine.run_blocks`).
    """

    sample: Callable[[np.ndarray, int, np.random.Generator], np.ndarray]
    a: np.ndarray
    b: np.ndarray
    attack: MechanismAttack

    def __call__(self, size: int, seed: np.random.SeedSequence) -> np.ndarray:
        sa, sb = seed.spawn(2)
        out_a = self.sample(self.a, size, np.random.default_rng(sa))
        out_b = self.sample(self.b, size, np.random.default_rng(sb))
        return np.array(
            [int(self.attack.contains(out_a).sum()), int(self.attack.contains(out_b).sum())],
            dtype=np.int64,
        )
