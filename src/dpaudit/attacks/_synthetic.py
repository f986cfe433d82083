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
* **black-box** — it sees only the synthetic table (:func:`target_count`).

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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpaudit._registry import Registry
from dpaudit._validate import check_positive_int
from dpaudit.systems.synthetic import TabularDomain

__all__ = [
    "SYNTHETIC_THREAT_MODELS",
    "WORST_CASE_DATASETS",
    "SyntheticThreatModel",
    "WorstCaseDataset",
    "marginal_counts",
    "measured_cells",
    "measurement_llr",
    "selection_llr",
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
    """

    name: str
    D: np.ndarray
    target: np.ndarray
    domain: TabularDomain
    note: str

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


def marginal_counts(data: np.ndarray, clique: Sequence[int], domain: TabularDomain) -> np.ndarray:
    """The marginal of ``data`` on ``clique`` as a flat count vector (C order over the
    clique's columns, the order mbi's ``datavector`` uses).

    Example:
        >>> marginal_counts(np.array([[0, 1], [1, 1]]), [0, 1], TabularDomain((2, 2))).tolist()
        [0.0, 1.0, 0.0, 1.0]
    """
    cols = [int(c) for c in clique]
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
        ValueError: a measurement whose length is not its marginal's size in ``domain`` (the
            library re-expressed it over a compressed domain).
    """
    total = 0.0
    for m in measurements:
        clique, sigma, y = m["clique"], float(m["sigma"]), np.asarray(m["y"], dtype=np.float64)
        size = int(np.prod([domain.cardinalities[c] for c in clique]))
        if y.size != size:
            raise ValueError(f"measurement of clique {clique} has {y.size} cells, its marginal "
                             f"in the public domain has {size}")  # fmt: skip
        c = _cell(target, clique, domain)
        x0 = marginal_counts(D, clique, domain)[c]
        total += (y[c] - x0 - 0.5) / sigma**2
    return total


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
        ValueError: a recomputed score differs from the library's.
    """
    Dp = np.vstack([D, target[None, :]])
    total = 0.0
    for s in selections:
        coef = 0.5 * float(s["epsilon"]) / float(s["sensitivity"])
        scores = []
        for data in (D, Dp):
            q = [w * (np.abs(marginal_counts(data, cl, domain) - np.asarray(xh)).sum() - b)
                 for cl, xh, w, b in zip(s["candidates"], s["xhat"], s["weights"], s["bias"],
                                         strict=True)]  # fmt: skip
            scores.append(np.asarray(q))
        if check_observed is not None:
            seen = scores[1] if len(check_observed) == len(Dp) else scores[0]
            if not np.allclose(seen, s["q"], rtol=1e-6, atol=1e-6):
                raise ValueError(f"recomputed scores {seen.tolist()} differ from the "
                                 f"library's {list(s['q'])}")  # fmt: skip
        k = int(s["chosen"])
        lp = [coef * q[k] - logsumexp(coef * q) for q in scores]
        total += lp[1] - lp[0]
    return total


def target_count(synthetic: np.ndarray, target: np.ndarray) -> float:
    """Black-box statistic: how many synthetic rows equal the target.

    Example:
        >>> target_count(np.array([[1, 1], [0, 1], [1, 1]]), np.array([1, 1]))
        2.0
    """
    return float(np.all(np.asarray(synthetic) == np.asarray(target)[None, :], axis=1).sum())


def measured_cells(measurements: Sequence[dict[str, Any]]) -> float:
    """White-box statistic of the domain the generator measured over: the number of cells of
    all its noisy marginals. Over a public domain it is the same for D and D ∪ {t}; a
    generator that reads the domain from the private data measures over a domain that moves
    with the target (Annamalai et al. 2024, arXiv:2405.10994, §6).

    Example:
        >>> measured_cells([{"y": [1.0, 2.0]}, {"y": [0.5, 0.1, 3.0, 4.0]}])
        6.0
    """
    return float(sum(len(m["y"]) for m in measurements))


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
    """

    name: str
    observe: tuple[str, ...]
    statistic: Callable[..., float]
    title: str


def _white_box(run, synthetic, pair, fitted_on):
    m = measurement_llr(run["measurements"], pair.D, pair.target, pair.domain)
    return m + selection_llr(run["selections"], pair.D, pair.target, pair.domain,
                             check_observed=fitted_on)  # fmt: skip


def _white_box_measurements(run, synthetic, pair, fitted_on):
    return measurement_llr(run["measurements"], pair.D, pair.target, pair.domain)


def _white_box_domain(run, synthetic, pair, fitted_on):
    return measured_cells(run["measurements"])


def _black_box(run, synthetic, pair, fitted_on):
    return target_count(synthetic, pair.target)


#: Threat models of the synthetic-data audit, by name.
SYNTHETIC_THREAT_MODELS: Registry[SyntheticThreatModel] = Registry("synthetic-data threat model")
for _tm in (
    SyntheticThreatModel("white-box", ("measurements", "selections"), _white_box,
                         "log-likelihood ratio of every noisy marginal and every "
                         "exponential-mechanism choice"),
    SyntheticThreatModel("white-box-measurements", ("measurements",), _white_box_measurements,
                         "log-likelihood ratio of the noisy marginals only"),
    SyntheticThreatModel("white-box-domain", ("domain",), _white_box_domain,
                         "the number of cells of the one-way marginals the generator measured "
                         "(its domain)"),
    SyntheticThreatModel("black-box", ("synthetic",), _black_box,
                         "synthetic rows equal to the target"),
):  # fmt: skip
    SYNTHETIC_THREAT_MODELS.register(_tm.name, _tm)
