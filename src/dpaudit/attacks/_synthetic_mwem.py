"""MWEM's white-box view: its exponential-mechanism choices beside its noisy cuboids.

MWEM (Hardt, Ligett & McSherry 2012, "A simple and practical algorithm for differentially
private data release", arXiv:1012.4763), as smartnoise-synth 1.0.8 implements it, keeps a
synthetic histogram ``A_r`` over the public domain — ``A_0`` uniform with total n, the
private row count — and in round r

1. chooses a cuboid ``k`` (a one- or two-way marginal) from its pool by the exponential
   mechanism (McSherry & Talwar 2007, FOCS): probabilities ``p_i ∝ exp(ε_r q_i / 2)``, with
   ``q_i`` the mean over the cuboid's cells of ``|x_c − A_r(c)|`` (``Cuboid.error``);
   a draw of a cuboid already measured (the set M) is drawn again, ``draws = 11`` draws at
   most, then one of the unmeasured U is taken uniformly, so
   ``P(k) = p_k (1 + p_M + … + p_M^(draws−1)) + p_M^draws / |U|``;
2. measures its cells with Laplace noise of scale ``1/ε_r``;
3. runs ``iterations`` (20) passes of multiplicative weights over every measurement so far:
   for each measured cell c, in measurement order, ``A(c) ← A(c) exp((y_c − A(c)) / (2n))``
   over the full-domain cells of c, then ``A`` rescaled to total n.

``A_r`` is thus a deterministic function of the earlier noisy cuboids and of n, so the
log-likelihood ratio of the transcript (the choices and the noisy cuboids) under D ∪ {t}
against D is exact: :func:`mwem_choice_llr` replays ``A_r`` under each dataset (its own n)
and sums ``log P_{D∪t}(k_r) − log P_D(k_r)``; the noisy cuboids add the Laplace terms of
:func:`~dpaudit.attacks._synthetic_privbayes.laplace_measurement_llr`. With the fitted
dataset given, the replayed scores must equal the library's own (to 1e-6 relative): a check
that the replay is the library's.

Example:
    >>> wc = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=4)
    >>> m = [{"clique": [0], "scale": 2.0, "y": [4.0, 0.5]}]
    >>> s = [{"candidates": [[0], [1]], "epsilon": 0.5, "chosen": 0, "measured": [],
    ...       "draws": 11, "iterations": 20, "columns": [0, 1]}]
    >>> round(mwem_choice_llr(s, m, wc.D, wc.target, wc.domain), 6)  # both scores ½ lower
    0.0
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpaudit._validate import check_array, check_nonneg_int, check_positive, check_positive_int
from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,  # noqa: F401  (the module example)
    SyntheticThreatModel,
    _check_clique,
    _check_domain,
    _check_records,
    _check_row,
    _check_vector,
    _marginal,
    _marginal_size,
)
from dpaudit.attacks._synthetic_privbayes import laplace_measurement_llr
from dpaudit.systems.synthetic import TabularDomain

__all__ = ["mwem_choice_llr", "mwem_histograms"]

_KEYS = ("candidates", "epsilon", "chosen", "measured", "draws", "iterations", "columns")


@functools.lru_cache(maxsize=256)
def _cell_index(clique: tuple[int, ...], domain: TabularDomain) -> np.ndarray:
    """For every cell of the full domain (C order), its cell of ``clique``'s marginal."""
    cards = domain.cardinalities
    grid = np.indices(cards).reshape(len(cards), -1)
    return np.ravel_multi_index(tuple(grid[c] for c in clique), [cards[c] for c in clique])


def _library_order(clique: Sequence[int], domain: TabularDomain) -> np.ndarray:
    """The cuboid's cells (C-order indices) in the order smartnoise updates them: the first
    column of the clique fastest (its queries index ``hist.T``)."""
    shape = [domain.cardinalities[c] for c in clique]
    return np.arange(int(np.prod(shape))).reshape(shape).ravel(order="F")


def _multiplicative_weights(A, measured, iterations):
    """smartnoise's ``_multiplicative_weights``: ``iterations`` passes over the measured
    cells, each multiplicative update followed by a rescaling to the total at entry."""
    total = A.sum()
    for _ in range(iterations):
        for index, order, y in measured:
            for c in order:
                mask = index == c
                m = np.exp((y[c] - A[mask].sum()) / (2.0 * total))
                A[mask] *= m if m != 0.0 else 1.0  # the library's guard against underflow
                A *= total / A.sum()
    return A


def mwem_histograms(
    selections: Sequence[dict[str, Any]], measurements: Sequence[dict[str, Any]], rows: int,
    domain: TabularDomain,
) -> list[np.ndarray]:  # fmt: skip
    """The synthetic histograms ``A_0 … A_{T−1}`` MWEM chose from, replayed from its noisy
    cuboids for a private table of ``rows`` rows (module notes; C order over the domain).

    Args:
        selections: one choice per round, as the worker records it (``chosen``,
            ``iterations``; ``measured`` must name the rounds' earlier choices in order).
        measurements: the noisy cuboid of each round (``clique``, ``y`` in C order).
        rows: n, the row count of the table the histograms are replayed for.
        domain: the public domain the histogram spans.

    Raises:
        ValueError: a round whose ``measured`` is not the earlier choices; a choice of a
            cuboid already measured (the library redraws those); fewer noisy cuboids than
            choices; a cuboid that is not the chosen candidate's marginal.
    """
    domain = _check_domain(domain)
    sels = _check_records("selections", selections, _KEYS)
    ms = _check_records("measurements", measurements, ("clique", "y"))
    n = check_positive_int("rows", rows)
    if len(ms) < len(sels):
        raise ValueError(f"{len(sels)} choices but {len(ms)} noisy cuboids: each choice is "
                         "measured")  # fmt: skip
    size = int(np.prod(domain.cardinalities))
    A = np.full(size, n / size)
    out, measured, chosen = [], [], []
    for r, s in enumerate(sels):
        if [int(v) for v in s["measured"]] != chosen:
            raise ValueError(f"selections[{r}]['measured'] is {list(s['measured'])}, the "
                             f"earlier choices are {chosen}")  # fmt: skip
        cols = [int(c) for c in s["columns"]]
        if cols != list(range(domain.columns)):
            raise ValueError(f"selections[{r}] chose on a histogram over columns {cols}: only "
                             "one histogram over every column (no splits) is replayed")  # fmt: skip
        k = check_nonneg_int(f"selections[{r}]['chosen']", s["chosen"])
        cands = s["candidates"]
        if k >= len(cands):
            raise ValueError(f"selections[{r}]['chosen'] is {k}, not one of its {len(cands)} "
                             "candidates")  # fmt: skip
        if k in chosen:
            raise ValueError(f"selections[{r}] chose candidate {k}, already measured")
        clique = _check_clique(f"measurements[{r}]['clique']", ms[r]["clique"], domain)
        if clique != _check_clique(f"selections[{r}]['candidates'][{k}]", cands[k], domain):
            raise ValueError(f"measurements[{r}] is over {clique}, the choice of round {r} is "
                             f"{list(cands[k])}")  # fmt: skip
        y = _check_vector(f"measurements[{r}]['y']", ms[r]["y"], _marginal_size(clique, domain))
        out.append(A.copy())
        chosen.append(k)
        measured.append((_cell_index(tuple(clique), domain), _library_order(clique, domain), y))
        iters = check_positive_int(f"selections[{r}]['iterations']", s["iterations"])
        A = _multiplicative_weights(A, measured, iters)
    return out


def _choice_logp(q: np.ndarray, eps: float, k: int, measured: list[int], draws: int) -> float:
    """log P(k) of one choice with redraws (module notes)."""
    logp = eps * q / 2.0 - logsumexp(eps * q / 2.0)
    if not measured:
        return float(logp[k])
    p_m = float(np.exp(logsumexp(logp[measured])))
    repeat = sum(p_m**j for j in range(draws))
    return float(np.log(np.exp(logp[k]) * repeat + p_m**draws / (q.size - len(measured))))


def mwem_choice_llr(
    selections: Sequence[dict[str, Any]], measurements: Sequence[dict[str, Any]],
    D: np.ndarray, target: np.ndarray, domain: TabularDomain, *,
    check_observed: np.ndarray | None = None,
) -> float:  # fmt: skip
    """Log-likelihood ratio (D ∪ {t} against D) of MWEM's exponential-mechanism choices,
    each scored from the histogram replayed under each dataset (module notes).

    Args:
        selections: ``{"candidates", "epsilon", "chosen", "measured", "draws",
            "iterations", "columns"}`` per round (and the library's scores ``q``), as the
            worker records them.
        measurements: the noisy cuboids (``clique``, ``y``), one per round.
        D, target, domain: the worst-case pair.
        check_observed: the rows the generator was fitted on; when given, the scores
            recomputed for that dataset must equal the library's ``q`` (1e-6 relative).

    Raises:
        TypeError: records that are not sequences of dicts; ``domain`` not a TabularDomain.
        ValueError: a malformed round (the message names it; see :func:`mwem_histograms`);
            recomputed scores or histograms that differ from the library's.
    """
    domain = _check_domain(domain)
    D = domain.check(D, "D")
    target = _check_row("target", target, domain)
    Dp = np.vstack([D, target[None, :]])
    if check_observed is not None:
        check_observed = domain.check(check_observed, "check_observed")
    sels = _check_records("selections", selections, _KEYS)
    total = 0.0
    hists = [mwem_histograms(sels, measurements, len(data), domain) for data in (D, Dp)]
    for r, s in enumerate(sels):
        cands = [_check_clique(f"selections[{r}]['candidates'][{j}]", c, domain)
                 for j, c in enumerate(s["candidates"])]  # fmt: skip
        k, measured = int(s["chosen"]), [int(v) for v in s["measured"]]
        eps = check_positive(f"selections[{r}]['epsilon']", s["epsilon"])
        draws = check_positive_int(f"selections[{r}]['draws']", s["draws"])
        lp = []
        for data, h in zip((D, Dp), hists, strict=True):
            q = np.array([np.abs(_marginal(data, c, domain)
                                 - np.bincount(_cell_index(tuple(c), domain), weights=h[r],
                                               minlength=_marginal_size(c, domain))).mean()
                          for c in cands])  # fmt: skip
            if check_observed is not None and len(check_observed) == len(data):
                _check_library(r, s, q, h[r])
            lp.append(_choice_logp(q, eps, k, measured, draws))
        total += lp[1] - lp[0]
    return float(total)


def _check_library(r: int, s: dict, q: np.ndarray, hist: np.ndarray) -> None:
    """The replayed scores (and histogram, when recorded) of the fitted dataset against the
    library's own."""
    lib = check_array(f"selections[{r}]['q']", s.get("q"), ndim=1)
    if lib.size != q.size or not np.allclose(q, lib, rtol=1e-6, atol=1e-6):
        raise ValueError(f"recomputed scores {q.tolist()} differ from the library's "
                         f"selections[{r}]['q'] = {lib.tolist()}")  # fmt: skip
    if "xhat" in s:
        xh = check_array(f"selections[{r}]['xhat']", s["xhat"], ndim=1)
        if xh.size != hist.size or not np.allclose(hist, xh, rtol=1e-6, atol=1e-6):
            raise ValueError(f"the replayed histogram {hist.tolist()} differs from the "
                             f"library's selections[{r}]['xhat'] = {xh.tolist()}")  # fmt: skip


def _white_box_mwem(run, synthetic, pair, fitted_on):
    m = laplace_measurement_llr(run["measurements"], pair.D, pair.target, pair.domain)
    return m + mwem_choice_llr(run["selections"], run["measurements"], pair.D, pair.target,
                               pair.domain, check_observed=fitted_on)  # fmt: skip


def _white_box_mwem_choices(run, synthetic, pair, fitted_on):
    return mwem_choice_llr(run["selections"], run["measurements"], pair.D, pair.target,
                           pair.domain, check_observed=fitted_on)  # fmt: skip


for _tm in (
    SyntheticThreatModel("white-box-mwem", ("measurements", "selections"), _white_box_mwem,
                         "log-likelihood ratio of MWEM's noisy cuboids and its "
                         "exponential-mechanism choices", llr=True, reads=("mwem",)),
    SyntheticThreatModel("white-box-mwem-choices", ("measurements", "selections"),
                         _white_box_mwem_choices,
                         "log-likelihood ratio of MWEM's exponential-mechanism choices only "
                         "(their histograms replayed from the noisy cuboids)", reads=("mwem",)),
):  # fmt: skip
    SYNTHETIC_THREAT_MODELS.register(_tm.name, _tm)
