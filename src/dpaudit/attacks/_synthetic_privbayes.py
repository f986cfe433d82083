"""Distinguishers and a worst-case dataset for PrivBayes (pure ε-DP: Laplace counts and an
exponential-mechanism network search), registered beside the Gaussian ones of
:mod:`dpaudit.attacks._synthetic`.

PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017, ACM TODS 42(4); SIGMOD 2014)
releases noisy count vectors ``y = x + Lap(b)`` and a Bayesian network chosen step by step
by the exponential mechanism (McSherry & Talwar 2007, FOCS) with probabilities
``∝ exp(ε′ I(X; Π) / (2 (d − 1) S))``, ``I`` the empirical mutual information (nats) of a
candidate child X and its parents Π, ``S`` its sensitivity (PrivBayes Lemma 1: with n rows,
``S = (1/n) log n + ((n − 1)/n) log(n/(n − 1))`` when X or its single parent is binary, else
``S = (2/n) log((n + 1)/2) + ((n − 1)/n) log((n + 1)/(n − 1))``).

* :func:`laplace_measurement_llr` (white-box) — the log-likelihood ratio of the noisy counts
  under D ∪ {t} against D: for the target's cell ``c`` the term is
  ``(|y_c − x_c(D)| − |y_c − x_c(D) − 1|) / b`` (the Laplace density ratio), at most ``1/b``
  in absolute value;
* :func:`laplace_llr_mean_shift` — that statistic's exact mean shift between D ∪ {t} and D
  when t moves one cell of each vector by one: ``Σ 2 (1/b + e^{−1/b} − 1)``, twice the
  Laplace Kullback–Leibler divergence of a unit shift per vector;
* :func:`network_llr` (white-box) — ``log P_{D∪t}(network) − log P_D(network)`` of the
  network's choices, each step's probabilities recomputed under both datasets with the
  sensitivity rule as DataSynthesizer 0.1.13 applies it (n and the binary columns of the
  dataset at hand);
* :func:`network_log_laws` — the two laws of the network, by enumerating every network the
  greedy search can build, and :func:`network_llr_mean_shift` — that statistic's exact mean
  shift, ``KL(P′‖P) + KL(P‖P′)``;
* :func:`unseen_values` (black-box) — synthetic rows holding, in some column, a value no row
  of D holds there: a generator whose support follows the private data never produces one
  from D (Annamalai, Ganev & De Cristofaro 2024, arXiv:2405.10994, §6);
* the worst-case dataset ``binary-flip``: a column binary in D that the target makes ternary,
  so a sensitivity read from the private data changes between D and D ∪ {t}.

Example:
    >>> wc = WORST_CASE_DATASETS.get("binary-flip")(rows=6)
    >>> wc.D.tolist(), wc.target.tolist()
    ([[1, 0, 1], [1, 0, 1], [1, 0, 1], [2, 1, 2], [2, 1, 2], [1, 2, 0]], [0, 2, 1])
    >>> m = [{"clique": [0], "scale": 2.0, "y": [1.5, 4.0, 2.0]}]
    >>> float(laplace_measurement_llr(m, wc.D, wc.target, wc.domain))  # (1.5 - 0.5) / 2
    0.5
    >>> float(unseen_values(np.array([[0, 0, 0], [1, 1, 1]]), wc.D))
    1.0
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpaudit._validate import check_array, check_nonneg_int, check_positive, check_positive_int
from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    SyntheticThreatModel,
    WorstCaseDataset,
    _check_clique,
    _check_codes,
    _check_domain,
    _check_records,
    _check_row,
    _target_cells,
)
from dpaudit.systems.synthetic import TabularDomain

__all__ = [
    "laplace_llr_mean_shift",
    "laplace_measurement_llr",
    "network_llr",
    "network_llr_mean_shift",
    "network_log_laws",
    "privbayes_sensitivity",
    "unseen_values",
]


def laplace_measurement_llr(
    measurements: Sequence[dict[str, Any]], D: np.ndarray, target: np.ndarray,
    domain: TabularDomain,
) -> float:  # fmt: skip
    """Log-likelihood ratio (D ∪ {t} against D) of Laplace-noised count vectors.

    Args:
        measurements: ``{"clique", "scale", "y"}`` per noisy count vector (``y`` over the
            clique's cells in the public domain, C order).
        D, target, domain: the worst-case pair.

    Raises:
        TypeError: ``measurements`` not a sequence of dicts; ``domain`` not a TabularDomain.
        ValueError: a vector whose length is not its marginal's size in ``domain`` (the
            library measured over another domain); a scale that is not positive; ``D`` or
            ``target`` outside ``domain``.
    """
    cells = _target_cells(measurements, D, target, domain, "scale")
    return float(sum((abs(y - x0) - abs(y - x0 - 1.0)) / b for y, x0, b in cells))


def laplace_llr_mean_shift(scales: Sequence[float]) -> float:
    """The exact mean shift ``E_{D∪t}[L] − E_D[L]`` of :func:`laplace_measurement_llr` when t
    moves one cell of each noisy count vector by one, the vectors' Laplace scales ``scales``.

    A cell ``y = x + Lap(b)`` adds ``(|y − x| − |y − x − 1|)/b``. With ``Z ~ Lap(0, b)`` and
    ``E|Z + a| = a + b e^{−a/b}`` for ``a ≥ 0``, its mean is ``+K`` under D ∪ {t} (``y − x =
    1 + Z``) and ``−K`` under D, with ``K = 1/b + e^{−1/b} − 1`` the Kullback–Leibler
    divergence between Laplace laws of scale ``b`` a unit apart; so the shift is ``Σ 2K``
    whatever the noisy network chose, as long as every vector holds t's cell. For PrivBayes
    (Zhang et al. 2017) with d columns and degree k: d − k vectors at ``b = (d − k)/(ε/2)``.

    Raises:
        TypeError: a scale that is not a real number.
        ValueError: no scale, or a scale that is not positive and finite.

    Example:
        >>> round(laplace_llr_mean_shift([4.0, 4.0]), 6)  # PrivBayes, d = 3, k = 1, ε = 1
        0.115203
    """
    b = np.asarray([check_positive(f"scales[{i}]", x) for i, x in enumerate(scales)], float)
    if b.size == 0:
        raise ValueError("scales must hold at least one scale, got none")
    return float(np.sum(2.0 * (1.0 / b + np.exp(-1.0 / b) - 1.0)))


def privbayes_sensitivity(rows: int, binary: bool) -> float:
    """The sensitivity of the mutual-information score (PrivBayes Lemma 1, Zhang et al.
    2017) with ``rows`` rows, for a candidate whose child or single parent is binary or not.

    Example:
        >>> [round(privbayes_sensitivity(1000, b), 6) for b in (True, False)]
        [0.007907, 0.014429]
    """
    n = check_positive_int("rows", rows)
    if n < 2:
        raise ValueError(f"rows must be at least 2, got {rows}")
    if binary:
        return math.log(n) / n + (n - 1) / n * math.log(n / (n - 1))
    return 2 / n * math.log((n + 1) / 2) + (1 - 1 / n) * math.log(1 + 2 / (n - 1))


def _mutual_information(data: np.ndarray, child: int, parents: Sequence[int]) -> float:
    """Empirical mutual information (nats) of column ``child`` and the columns ``parents``."""
    n = data.shape[0]
    _, pa = np.unique(data[:, list(parents)], axis=0, return_inverse=True)
    _, ch = np.unique(data[:, child], return_inverse=True)
    pa, ch = pa.ravel(), ch.ravel()
    joint = np.zeros((ch.max() + 1, pa.max() + 1))
    np.add.at(joint, (ch, pa), 1.0)
    p = joint / n
    outer = p.sum(axis=1, keepdims=True) * p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] / outer[nz])))


def _step_logp(data: np.ndarray, cands, epsilon: float) -> np.ndarray:
    n, d = data.shape
    binary = [np.unique(data[:, j]).size <= 2 for j in range(d)]
    q = []
    for child, parents in cands:
        is_bin = binary[child] or (len(parents) == 1 and binary[parents[0]])
        s = (d - 1) * privbayes_sensitivity(n, is_bin) / epsilon
        q.append(_mutual_information(data, child, parents) / (2 * s))
    q = np.asarray(q)
    return q - logsumexp(q)


def network_llr(
    selections: Sequence[dict[str, Any]], network: Sequence[Any], D: np.ndarray,
    target: np.ndarray, domain: TabularDomain, *, check_observed: np.ndarray | None = None,
) -> float:  # fmt: skip
    """Log-likelihood ratio (D ∪ {t} against D) of the network's exponential-mechanism steps
    (module notes); the root, drawn uniformly, adds nothing.

    Args:
        selections: ``{"candidates", "epsilon"}`` per step (``candidates``: ``[child,
            [parents]]`` pairs), as the worker records.
        network: the chosen ``[child, [parents]]`` per step, in order.
        D, target, domain: the worst-case pair.
        check_observed: the rows the generator was fitted on; when given, the recomputed
            mutual informations of that dataset must equal the library's ``"mi"`` (a check
            that the statistic reads the candidates and scores as the library scored them).

    Raises:
        TypeError: ``selections`` not a sequence of dicts; ``domain`` not a TabularDomain.
        ValueError: a step whose choice is not one of its candidates; one step per choice
            of ``network`` missing; recomputed mutual informations that differ from the library's.
    """
    domain = _check_domain(domain)
    sels = _check_records("selections", selections, ("candidates", "epsilon"))
    D = domain.check(D, "D")
    target = _check_row("target", target, domain)
    if isinstance(network, (str, bytes)) or not isinstance(network, Sequence):
        raise TypeError(f"network must be a sequence of [child, parents], got "
                        f"{type(network).__name__}")  # fmt: skip
    if len(network) != len(sels):
        raise ValueError(f"network has {len(network)} steps, selections {len(sels)}")
    Dp = np.vstack([D, target[None, :]])
    total = 0.0
    for i, (s, chosen) in enumerate(zip(sels, network, strict=True)):
        cands = [(check_nonneg_int(f"selections[{i}] child", c),
                  _check_clique(f"selections[{i}] parents", p, domain))
                 for c, p in s["candidates"]]  # fmt: skip
        key = (int(chosen[0]), [int(v) for v in chosen[1]])
        if key not in cands:
            raise ValueError(f"network[{i}] = {key} is not one of selections[{i}]'s candidates")
        eps = check_positive(f"selections[{i}]['epsilon']", s["epsilon"])
        k = cands.index(key)
        lp = [_step_logp(data, cands, eps) for data in (D, Dp)]
        if check_observed is not None:
            seen = check_observed if len(check_observed) == len(Dp) else D
            mi = np.array([_mutual_information(seen, c, p) for c, p in cands])
            lib = check_array(f"selections[{i}]['mi']", s.get("mi"), ndim=1)
            if lib.size != mi.size or not np.allclose(mi, lib, rtol=1e-9, atol=1e-12):
                raise ValueError(
                    f"recomputed mutual informations {mi.tolist()} differ from "
                    f"the library's selections[{i}]['mi'] = {lib.tolist()}"
                )
        total += lp[1][k] - lp[0][k]
    return float(total)


def network_log_laws(
    D: np.ndarray, target: np.ndarray, domain: TabularDomain, epsilon: float, degree: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """The log-probabilities of every network on D and on D ∪ {t}, in one order.

    It enumerates what PrivBayes's greedy search (Zhang et al. 2017, Alg. 4, as
    DataSynthesizer 0.1.13 runs it) can build: a root drawn uniformly, then at each step one
    (child, parents) among every column not yet in the network and every set of
    ``min(degree, |network|)`` columns in it, drawn with the exponential mechanism's
    probabilities at the network budget ``epsilon`` (the library's ε/2; module notes). The
    network's privacy loss on the pair is ``max |log P′ − log P|``.

    Raises:
        TypeError: ``domain`` not a TabularDomain.
        ValueError: ``D`` or ``target`` outside ``domain``; more than 6 columns (the
            enumeration grows factorially); a bad ``epsilon`` or ``degree``.

    Example:
        >>> wc = WORST_CASE_DATASETS.get("tree-flip")(rows=4)
        >>> lp, lq = network_log_laws(wc.D, wc.target, wc.domain, 5.0)
        >>> lp.size, round(float(np.exp(lq).sum()), 12), round(float(abs(lq - lp).max()), 4)
        (12, 1.0, 1.1734)
    """
    domain = _check_domain(domain)
    D = domain.check(D, "D")
    target = _check_row("target", target, domain)
    eps = check_positive("epsilon", epsilon)
    k = check_positive_int("degree", degree)
    d = D.shape[1]
    if d > 6:
        raise ValueError(f"the enumeration takes at most 6 columns, got {d}")
    Dp = np.vstack([D, target[None, :]])
    out: list[tuple[float, float]] = []

    def walk(V: list[int], lp: float, lq: float) -> None:
        rest = [c for c in range(d) if c not in V]
        if not rest:
            out.append((lp, lq))
            return
        cands = [(c, list(ps)) for c in rest for ps in itertools.combinations(V, min(len(V), k))]
        p, q = _step_logp(D, cands, eps), _step_logp(Dp, cands, eps)
        for i, (c, _) in enumerate(cands):
            walk([*V, c], lp + p[i], lq + q[i])

    for r in range(d):
        walk([r], -math.log(d), -math.log(d))
    lp, lq = np.array(out).T
    return lp, lq


def network_llr_mean_shift(
    D: np.ndarray, target: np.ndarray, domain: TabularDomain, epsilon: float, degree: int = 1
) -> float:
    """The exact mean shift ``E_{D∪t}[L] − E_D[L] = KL(P′‖P) + KL(P‖P′)`` of
    :func:`network_llr`, ``P`` and ``P′`` the laws of the network on D and on D ∪ {t}
    (:func:`network_log_laws`; its arguments and errors).

    Example:
        >>> wc = WORST_CASE_DATASETS.get("tree-flip")(rows=4)
        >>> round(network_llr_mean_shift(wc.D, wc.target, wc.domain, 5.0), 4)
        0.2672
    """
    lp, lq = network_log_laws(D, target, domain, epsilon, degree)
    return float(np.sum((np.exp(lq) - np.exp(lp)) * (lq - lp)))


def unseen_values(synthetic: np.ndarray, D: np.ndarray) -> float:
    """Black-box statistic: synthetic rows holding, in some column, a value that no row of
    ``D`` holds in that column (module notes).

    Raises:
        ValueError: codes of the wrong shape, or tables with different columns.
    """
    syn = _check_codes("synthetic", synthetic, 2)
    d = _check_codes("D", D, 2)
    if syn.shape[1] != d.shape[1]:
        raise ValueError(f"synthetic has {syn.shape[1]} columns, D {d.shape[1]}")
    seen = np.zeros(syn.shape, dtype=bool)
    for j in range(d.shape[1]):
        seen[:, j] = np.isin(syn[:, j], d[:, j])
    return float((~seen).any(axis=1).sum())


def _binary_flip(*, columns: int = 3, rows: int = 1000) -> WorstCaseDataset:
    if check_positive_int("columns", columns) != 3:
        raise ValueError(f"the binary-flip design has 3 columns, got columns={columns}")
    n = check_positive_int("rows", rows)
    if n < 4 or n % 2:
        raise ValueError(f"rows must be even and at least 4, got {rows}")
    h = n // 2
    D = np.array([[1, 0, 1]] * h + [[2, 1, 2]] * (h - 1) + [[1, 2, 0]], dtype=np.int64)
    return WorstCaseDataset(
        "binary-flip", D, np.array([0, 2, 1], dtype=np.int64), TabularDomain((3, 3, 3)),
        "columns (x, y, z): x is a function of y and z = x but in one row; x is binary in D "
        "and ternary in D ∪ {t}, y and z ternary in both, and D ∪ {t} is symmetric in x and "
        "z, so with the root y (or z) PrivBayes's first step picks x or z with probability "
        "½ each on D ∪ {t}, while on D a sensitivity read from the data (binary x: Lemma "
        "1's smaller value) sharpens the choice of x; every value of t is in D's range, so "
        "a support read from the data does not move",
    )  # fmt: skip


def _white_box_laplace(run, synthetic, pair, fitted_on):
    return laplace_measurement_llr(run["measurements"], pair.D, pair.target, pair.domain)


def _white_box_network(run, synthetic, pair, fitted_on):
    return network_llr(run["selections"], run["network"], pair.D, pair.target, pair.domain,
                       check_observed=fitted_on)  # fmt: skip


def _black_box_unseen(run, synthetic, pair, fitted_on):
    return unseen_values(synthetic, pair.D)


WORST_CASE_DATASETS.register("binary-flip", _binary_flip)
for _tm in (
    SyntheticThreatModel("white-box-laplace", ("measurements",), _white_box_laplace,
                         "log-likelihood ratio of the Laplace-noised counts (PrivBayes)",
                         reads=("privbayes", "mwem")),
    SyntheticThreatModel("white-box-network", ("selections",), _white_box_network,
                         "log-likelihood ratio of the network's exponential-mechanism steps "
                         "(PrivBayes)", reads=("privbayes",)),
    SyntheticThreatModel("black-box-unseen", ("synthetic",), _black_box_unseen,
                         "synthetic rows holding a value D never holds in that column"),
):  # fmt: skip
    SYNTHETIC_THREAT_MODELS.register(_tm.name, _tm)
