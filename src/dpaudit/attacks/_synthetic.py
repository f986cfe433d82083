"""Attacks on DP synthetic-data generators: worst-case datasets and distinguishers.

Threat models (Annamalai, Ganev & De Cristofaro 2024, "What do you want from theory alone?
Experimenting with tight auditing of differentially private synthetic data generation",
USENIX Security, arXiv:2405.10994, §4):

* **worst-case dataset** — the adversary picks a small dataset D and a target record t so
  that D and D ∪ {t} are as distinguishable as the generator allows
  (:data:`WORST_CASE_DATASETS`), and knows both;
* **white-box** — it sees what the generator measured: every noisy marginal with its stated
  noise (:func:`measurement_llr`) and every exponential-mechanism choice with the model
  estimate its scores came from (:func:`selection_llr`);
* **black-box** — it sees only the synthetic table (:func:`target_count`,
  :func:`synthetic_rows`; the distance to the closest record in
  :mod:`dpaudit.attacks._synthetic_adult`, the DOMIAS density ratio in
  :mod:`dpaudit.attacks._synthetic_density`).

The white-box distinguisher is the log-likelihood ratio of the observed transcript under
D ∪ {t} against D, which the Neyman–Pearson lemma makes the most powerful test of the
transcript it reads. For a noisy marginal ``y = x + N(0, σ²)`` whose cell ``c`` holds the
target, adding t moves ``x_c`` by one, so the term is ``(y_c − x_c(D) − ½)/σ²``; the
Gaussian measurements of a ρ_m-zCDP budget give a statistic distributed N(∓μ_m²/2, μ_m²)
with μ_m = √(2ρ_m). For a choice made by the exponential mechanism with probabilities
``∝ exp(ε q_e / (2Δ))`` over candidates e (McSherry & Talwar 2007, FOCS), the term is
``log P_{D∪t}(chosen) − log P_D(chosen)``, each score recomputed under both datasets from the
model estimate the library scored against (MST: ``q_e = ‖x_e − x̂_e‖₁``, McKenna, Miklau &
Sheldon 2021, arXiv:2108.04978, Alg. 1; AIM: ``q_e = w_e(‖x_e − x̂_e‖₁ − √(2/π)σ n_e)``,
McKenna et al. 2022, arXiv:2201.12677, Alg. 2).

Example:
    >>> wc = WORST_CASE_DATASETS.get("unique-record")(columns=2, rows=4)
    >>> wc.D.tolist(), wc.target.tolist(), wc.domain.cardinalities
    ([[0, 0], [0, 0], [0, 0], [0, 0]], [1, 1], (2, 2))
    >>> m = [{"clique": [0], "sigma": 1.0, "y": [4.0, 1.5]}]
    >>> float(measurement_llr(m, wc.D, wc.target, wc.domain))  # (1.5 - 0 - 1/2) / 1
    1.0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpaudit._registry import Registry
from dpaudit._validate import (
    check_array,
    check_nonneg_int,
    check_positive,
    check_positive_int,
)
from dpaudit.systems.synthetic import TabularDomain

__all__ = [
    "PER_TARGET",
    "SYNTHETIC_THREAT_MODELS",
    "WORST_CASE_DATASETS",
    "SyntheticThreatModel",
    "WorstCaseDataset",
    "marginal_counts",
    "measured_cells",
    "measurement_llr",
    "selection_llr",
    "synthetic_rows",
    "target_count",
]


@dataclasses.dataclass(frozen=True)
class WorstCaseDataset:
    """A worst-case pair: D, the target t (D′ = D ∪ {t}) and the public domain.

    Attributes:
        name: the design's registry name.
        D: the rows of D (category codes).
        target: t.
        domain: the public domain.
        note: why the pair is hard for the generator.
        reference: rows from the population D was drawn from, outside D (a density-ratio
            attack's reference table); None for a designed pair, which has no population.
    """

    name: str
    D: np.ndarray
    target: np.ndarray
    domain: TabularDomain
    note: str
    reference: np.ndarray | None = None

    @property
    def D_prime(self) -> np.ndarray:
        """D ∪ {t}."""
        return np.vstack([self.D, self.target[None, :]])


def _unique_record(*, columns: int = 3, rows: int = 1000) -> WorstCaseDataset:
    d = check_positive_int("columns", columns)
    n = check_positive_int("rows", rows)
    if d < 2:
        raise ValueError(f"columns must be at least 2, got {columns}")
    return WorstCaseDataset(
        "unique-record", np.zeros((n, d), dtype=np.int64), np.ones(d, dtype=np.int64),
        TabularDomain((2,) * d),
        "every row of D is 0…0, the target 1…1: the only record in its cell of every marginal "
        "(Annamalai et al. 2024, arXiv:2405.10994, §4.2)",
    )  # fmt: skip


def _tree_flip(*, columns: int = 3, rows: int = 1000) -> WorstCaseDataset:
    if check_positive_int("columns", columns) != 3:
        raise ValueError(f"the tree-flip design has 3 columns, got columns={columns}")
    n = check_positive_int("rows", rows)
    if n < 2 or n % 2:
        raise ValueError(f"rows must be even and at least 2, got {rows}")
    D = np.array([[0, 0, 1]] * (n // 2) + [[1, 1, 0]] * (n // 2), dtype=np.int64)
    return WorstCaseDataset(
        "tree-flip", D, np.array([1, 0, 0], dtype=np.int64), TabularDomain((2, 2, 2)),
        "a = b and c = 1 − a in D, so every pair's marginal is as far from the product of the "
        "one-way marginals as possible and MST's three edge scores tie (≈ n, insensitive to "
        "the one-way noise to first order); t = (1, 0, 0) raises the score of edge (a, c) by "
        "one and lowers (a, b) and (b, c) by one, the largest shift the exponential mechanism "
        "allows, and sits alone in its cell of every marginal",
    )  # fmt: skip


#: Worst-case dataset designs: ``WORST_CASE_DATASETS.get(name)(columns=..., rows=...)``.
WORST_CASE_DATASETS: Registry[Callable[..., WorstCaseDataset]] = Registry("worst-case dataset")
WORST_CASE_DATASETS.register("unique-record", _unique_record)
WORST_CASE_DATASETS.register("tree-flip", _tree_flip)


def _check_domain(domain: Any) -> TabularDomain:
    if not isinstance(domain, TabularDomain):
        raise TypeError(f"domain must be a TabularDomain, got {type(domain).__name__}")
    return domain


def _check_codes(name: str, value: Any, ndim: int) -> np.ndarray:
    """Integer codes (integral floats accepted) as int64, of ``ndim`` dimensions."""
    a = check_array(name, value, allow_empty=True)
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    if not np.all(a == np.round(a)) or (a.size and float(np.abs(a).max()) >= 2.0**62):
        raise ValueError(f"{name} must hold integer category codes, got {a.ravel()[:4]}")
    return a.astype(np.int64)


def _check_row(name: str, value: Any, domain: TabularDomain) -> np.ndarray:
    row = _check_codes(name, value, 1)
    if row.size != domain.columns:
        raise ValueError(f"{name} must have one code per column ({domain.columns}), got "
                         f"{row.size}")  # fmt: skip
    return domain.check(row[None, :], name)[0]


def _check_clique(name: str, value: Any, domain: TabularDomain) -> list[int]:
    c = _check_codes(name, value, 1)
    if c.size == 0 or len(set(c.tolist())) != c.size:
        raise ValueError(f"{name} must name distinct columns, at least one, got {c.tolist()}")
    if c.min() < 0 or c.max() >= domain.columns:
        raise ValueError(f"{name} holds {c.tolist()}: columns are 0..{domain.columns - 1}")
    return [int(v) for v in c]


def _check_records(name: str, value: Any, keys: tuple[str, ...]) -> list[Mapping]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of dicts, got {type(value).__name__}")
    for i, r in enumerate(value):
        if not isinstance(r, Mapping):
            raise TypeError(f"{name}[{i}] must be a dict, got {type(r).__name__}")
        missing = [k for k in keys if k not in r]
        if missing:
            raise ValueError(f"{name}[{i}] lacks {missing}")
    return list(value)


def _marginal_size(clique: Sequence[int], domain: TabularDomain) -> int:
    return int(np.prod([domain.cardinalities[c] for c in clique]))


def _check_vector(name: str, value: Any, size: int) -> np.ndarray:
    v = check_array(name, value, ndim=1)
    if v.size != size:
        raise ValueError(f"{name} has {v.size} cells, its marginal in the public domain has "
                         f"{size}")  # fmt: skip
    return v


def marginal_counts(data: np.ndarray, clique: Sequence[int], domain: TabularDomain) -> np.ndarray:
    """The marginal of ``data`` on ``clique`` as a flat count vector (C order over the
    clique's columns, the order mbi's ``datavector`` uses).

    Example:
        >>> marginal_counts(np.array([[0, 1], [1, 1]]), [0, 1], TabularDomain((2, 2))).tolist()
        [0.0, 1.0, 0.0, 1.0]

    Raises:
        TypeError: ``domain`` is not a :class:`TabularDomain`, or codes of the wrong type.
        ValueError: ``data`` outside ``domain``; ``clique`` not distinct columns of it.
    """
    domain = _check_domain(domain)
    cols = _check_clique("clique", clique, domain)
    return _marginal(domain.check(data, "data"), cols, domain)


def _marginal(data: np.ndarray, cols: list[int], domain: TabularDomain) -> np.ndarray:
    shape = tuple(domain.cardinalities[c] for c in cols)
    flat = np.ravel_multi_index(tuple(data[:, c] for c in cols), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64)


def _cell(target: np.ndarray, clique: Sequence[int], domain: TabularDomain) -> int:
    cols = [int(c) for c in clique]
    shape = tuple(domain.cardinalities[c] for c in cols)
    return int(np.ravel_multi_index(tuple(int(target[c]) for c in cols), shape))


def measurement_llr(
    measurements: Sequence[dict[str, Any]], D: np.ndarray, target: np.ndarray,
    domain: TabularDomain,
) -> float:  # fmt: skip
    """Log-likelihood ratio (D ∪ {t} against D) of the Gaussian measurements (module notes).

    Args:
        measurements: ``{"clique", "sigma", "y"}`` per noisy marginal, as the worker records.
        D: the rows of D.
        target: t.
        domain: the public domain (a measurement over another domain is refused).

    Raises:
        TypeError: ``measurements`` not a sequence of dicts; ``domain`` not a TabularDomain.
        ValueError: a measurement whose length is not its marginal's size in ``domain`` (the
            library re-expressed it over a compressed domain); a σ that is not positive; ``D``
            or ``target`` outside ``domain``.
    """
    cells = _target_cells(measurements, D, target, domain, "sigma")
    return float(sum((y - x0 - 0.5) / sigma**2 for y, x0, sigma in cells))


def _target_cells(measurements, D, target, domain, scale: str):
    """Each measurement's noisy count of the target's cell, that cell's count on ``D`` and
    the noise scale (the key ``scale`` of the record), every argument checked: the shared
    part of the per-measurement log-likelihood ratios (Gaussian here, Laplace for PrivBayes)."""
    domain = _check_domain(domain)
    ms = _check_records("measurements", measurements, ("clique", scale, "y"))
    D = domain.check(D, "D")
    target = _check_row("target", target, domain)
    for i, m in enumerate(ms):
        clique = _check_clique(f"measurements[{i}]['clique']", m["clique"], domain)
        b = check_positive(f"measurements[{i}]['{scale}']", m[scale])
        y = _check_vector(f"measurements[{i}]['y'] of clique {clique}", m["y"],
                          _marginal_size(clique, domain))  # fmt: skip
        c = _cell(target, clique, domain)
        yield y[c], _marginal(D, clique, domain)[c], b


def selection_llr(
    selections: Sequence[dict[str, Any]], D: np.ndarray, target: np.ndarray,
    domain: TabularDomain, *, check_observed: np.ndarray | None = None,
) -> float:  # fmt: skip
    """Log-likelihood ratio (D ∪ {t} against D) of the exponential-mechanism choices.

    Each choice's scores are recomputed under D and under D ∪ {t} from the model estimate
    ``xhat`` the library scored against, with the library's weights and bias (module notes).

    Args:
        selections: ``{"candidates", "xhat", "q", "epsilon", "sensitivity", "chosen",
            "weights", "bias"}`` per choice, as the worker records.
        D, target, domain: the worst-case pair.
        check_observed: the rows the generator was fitted on; when given, the recomputed
            scores of that dataset must equal the library's own ``q`` (to 1e-6 relative):
            a check that the statistic reads the library correctly.

    Raises:
        TypeError: ``selections`` not a sequence of dicts; ``domain`` not a TabularDomain.
        ValueError: a malformed choice (the message names it); ``D``, ``target`` or
            ``check_observed`` outside ``domain``; a recomputed score differs from the
            library's.
    """
    domain = _check_domain(domain)
    keys = ("candidates", "xhat", "epsilon", "sensitivity", "chosen", "weights", "bias")
    sels = _check_records("selections", selections, keys)
    D = domain.check(D, "D")
    target = _check_row("target", target, domain)
    if check_observed is not None:
        check_observed = domain.check(check_observed, "check_observed")
    Dp = np.vstack([D, target[None, :]])
    total = 0.0
    for i, s in enumerate(sels):
        cands, xhat, w, b = _check_selection(f"selections[{i}]", s, domain)
        coef = 0.5 * check_positive(f"selections[{i}]['epsilon']", s["epsilon"]) / check_positive(
            f"selections[{i}]['sensitivity']", s["sensitivity"])  # fmt: skip
        k = check_nonneg_int(f"selections[{i}]['chosen']", s["chosen"])
        if k >= len(cands):
            raise ValueError(f"selections[{i}]['chosen'] is {k}, not one of its {len(cands)} "
                             "candidates")  # fmt: skip
        scores = []
        for data in (D, Dp):
            q = [wj * (np.abs(_marginal(data, cl, domain) - xh).sum() - bj)
                 for cl, xh, wj, bj in zip(cands, xhat, w, b, strict=True)]  # fmt: skip
            scores.append(np.asarray(q))
        if check_observed is not None:
            seen = scores[1] if len(check_observed) == len(Dp) else scores[0]
            lib = check_array(f"selections[{i}]['q']", s.get("q"), ndim=1)
            if lib.size != seen.size or not np.allclose(seen, lib, rtol=1e-6, atol=1e-6):
                raise ValueError(f"recomputed scores {seen.tolist()} differ from the "
                                 f"library's selections[{i}]['q'] = {lib.tolist()}")  # fmt: skip
        lp = [coef * q[k] - logsumexp(coef * q) for q in scores]
        total += lp[1] - lp[0]
    return float(total)


def _check_selection(name: str, s: Mapping, domain: TabularDomain):
    """A choice's candidates, model estimates, weights and biases, checked against each other."""
    raw = s["candidates"]
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not raw:
        raise ValueError(f"{name}['candidates'] must be a non-empty list of cliques")
    cands = [_check_clique(f"{name}['candidates'][{j}]", c, domain) for j, c in enumerate(raw)]
    xh = s["xhat"]
    if isinstance(xh, (str, bytes)) or not isinstance(xh, Sequence) or len(xh) != len(cands):
        raise ValueError(f"{name}['xhat'] must hold one estimate per candidate ({len(cands)})")
    xhat = [_check_vector(f"{name}['xhat'][{j}]", x, _marginal_size(c, domain))
            for j, (c, x) in enumerate(zip(cands, xh, strict=True))]  # fmt: skip
    wb = []
    for key in ("weights", "bias"):
        v = check_array(f"{name}['{key}']", s[key], ndim=1)
        if v.size != len(cands):
            raise ValueError(f"{name}['{key}'] must hold one value per candidate "
                             f"({len(cands)}), got {v.size}")  # fmt: skip
        wb.append(v)
    return cands, xhat, wb[0], wb[1]


def target_count(synthetic: np.ndarray, target: np.ndarray) -> float:
    """Black-box statistic: how many synthetic rows equal the target.

    Example:
        >>> target_count(np.array([[1, 1], [0, 1], [1, 1]]), np.array([1, 1]))
        2.0
    """
    syn = _check_codes("synthetic", synthetic, 2)
    t = _check_codes("target", target, 1)
    if t.size != syn.shape[1]:
        raise ValueError(f"target has {t.size} codes, the synthetic table {syn.shape[1]} columns")
    return float(np.all(syn == t[None, :], axis=1).sum())


def synthetic_rows(synthetic: np.ndarray) -> float:
    """Black-box statistic: the number of rows of the synthetic table. Over add/remove
    neighbours a generator that samples as many rows as the private table holds releases
    |D| exactly (the metadata class of Annamalai et al. 2024, arXiv:2405.10994, §6).

    Example:
        >>> synthetic_rows(np.array([[1, 1], [0, 1], [1, 1]]))
        3.0
    """
    return float(_check_codes("synthetic", synthetic, 2).shape[0])


def measured_cells(measurements: Sequence[dict[str, Any]]) -> float:
    """White-box statistic of the domain the generator measured over: the number of cells of
    all its noisy marginals. Over a public domain it is the same for D and D ∪ {t}; a
    generator that reads the domain from the private data measures over a domain that moves
    with the target (Annamalai et al. 2024, arXiv:2405.10994, §6).

    Example:
        >>> measured_cells([{"y": [1.0, 2.0]}, {"y": [0.5, 0.1, 3.0, 4.0]}])
        6.0
    """
    ms = _check_records("measurements", measurements, ("y",))
    return float(sum(check_array(f"measurements[{i}]['y']", m["y"], ndim=1).size
                     for i, m in enumerate(ms)))  # fmt: skip


#: The white-box views a worker records for one pair (D, D ∪ {t}): DPCTGAN's and DPGAN's
#: released gradients and PATECTGAN's student updates, read through the target row sent with
#: the runs, and PATEGAN's votes, recorded on both datasets.
PER_TARGET: frozenset[str] = frozenset({"gradients", "student", "votes"})


@dataclasses.dataclass(frozen=True)
class SyntheticThreatModel:
    """What the adversary sees and the statistic it computes (larger: "t was in").

    Attributes:
        name: registry name.
        observe: what the worker must report (``"measurements"``, ``"selections"``,
            ``"synthetic"``).
        statistic: ``statistic(run, synthetic, pair, fitted_on) -> float`` — ``run`` is the
            worker's record of one run, ``synthetic`` its table (or None), ``pair`` the
            :class:`WorstCaseDataset`, ``fitted_on`` the rows the run was fitted on (used only
            to check the white-box reading against the library's own scores).
        title: one line.
        llr: whether the statistic is the log-likelihood ratio of what the adversary sees
            (then its mean shift between D ∪ {t} and D is the symmetrised KL divergence of
            that view, which the audit reports beside the fitted-Gaussian μ).
        tuned: whether the statistic has a tuning parameter (the density's bandwidth): then
            it takes the grid as a fifth argument and returns one value per grid point, and
            the audit chooses the grid point with the threshold on the pilot run pairs.
        reads: the generators (their algorithm, ``GeneratorSpec.synth``: ``"mst"``, ...)
            whose white-box records the statistic reads; empty: any generator that reports
            what ``observe`` names.
    """

    name: str
    observe: tuple[str, ...]
    statistic: Callable[..., Any]
    title: str
    llr: bool = False
    tuned: bool = False
    reads: tuple[str, ...] = ()

    def serves(self, synth: str, white_box: tuple[str, ...]) -> bool:
        """Whether a generator running ``synth`` and reporting ``white_box`` (its
        ``GeneratorSpec``) gives this statistic what it reads: its algorithm among
        :attr:`reads` (when given), and its white-box views among what it reports (the
        domain is read off its measurements)."""
        views = {"domain": "measurements"}
        needs = {views.get(o, o) for o in self.observe} & {"measurements", "selections"}
        return (not self.reads or synth in self.reads) and needs <= set(white_box)


def _white_box(run, synthetic, pair, fitted_on):
    m = measurement_llr(run["measurements"], pair.D, pair.target, pair.domain)
    return m + selection_llr(run["selections"], pair.D, pair.target, pair.domain,
                             check_observed=fitted_on)  # fmt: skip


def _white_box_measurements(run, synthetic, pair, fitted_on):
    return measurement_llr(run["measurements"], pair.D, pair.target, pair.domain)


def _white_box_selections(run, synthetic, pair, fitted_on):
    return selection_llr(run["selections"], pair.D, pair.target, pair.domain,
                         check_observed=fitted_on)  # fmt: skip


def _white_box_domain(run, synthetic, pair, fitted_on):
    return measured_cells(run["measurements"])


def _black_box(run, synthetic, pair, fitted_on):
    return target_count(synthetic, pair.target)


def _black_box_rows(run, synthetic, pair, fitted_on):
    return synthetic_rows(synthetic)


_MARGINALS = ("mst", "aim")  # Gaussian-noised marginals and exponential-mechanism choices

#: Threat models of the synthetic-data audit, by name.
SYNTHETIC_THREAT_MODELS: Registry[SyntheticThreatModel] = Registry("synthetic-data threat model")
for _tm in (
    SyntheticThreatModel("white-box", ("measurements", "selections"), _white_box,
                         "log-likelihood ratio of every noisy marginal and every "
                         "exponential-mechanism choice", llr=True, reads=_MARGINALS),
    SyntheticThreatModel("white-box-measurements", ("measurements",), _white_box_measurements,
                         "log-likelihood ratio of the noisy marginals only", llr=True,
                         reads=_MARGINALS),
    SyntheticThreatModel("white-box-selections", ("selections",), _white_box_selections,
                         "log-likelihood ratio of the exponential-mechanism choices only",
                         llr=True, reads=_MARGINALS),
    SyntheticThreatModel("white-box-domain", ("domain",), _white_box_domain,
                         "the number of cells of the one-way marginals the generator measured "
                         "(its domain)"),
    SyntheticThreatModel("black-box", ("synthetic",), _black_box,
                         "synthetic rows equal to the target"),
    SyntheticThreatModel("black-box-rows", ("synthetic",), _black_box_rows,
                         "the number of rows of the synthetic table"),
):  # fmt: skip
    SYNTHETIC_THREAT_MODELS.register(_tm.name, _tm)
