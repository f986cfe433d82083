"""Canary records for one-run audits of DP synthetic-data generators.

A multi-run audit fits the generator hundreds of times on a worst-case pair (D, D ∪ {t}). A
*one-run* audit (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training
Run", NeurIPS, arXiv:2305.08846) fits it once on a table holding many canary records, each
inserted independently with probability ½, and guesses from the release which canaries were
in: if the generator is ε-DP towards every record, the number of correct guesses is
stochastically dominated by a binomial with success probability e^ε/(1 + e^ε), which bounds ε
from below (:func:`dpaudit.bounds.one_run_bounds`). Each canary's score is any threat model's
statistic (:data:`dpaudit.attacks.SYNTHETIC_THREAT_MODELS`) read as if that canary were the
target of the pair (D₀, D₀ ∪ {c}) — D₀ the fixed base table — so it uses only what the
adversary knows: the base table, the canaries and the release, never which canaries were
inserted.

The design (:func:`canary_table`): D₀ is ``rows`` rows of zeros and canary ``i`` is
``(i + 1, 1, …, 1)``: its first column is a value no other record holds (the public domain of
that column has ``canaries + 1`` categories, the others are binary), so each canary is alone in
its cell of every marginal that contains the first column, as the unique-record pair's target
is (Annamalai, Ganev & De Cristofaro 2024, arXiv:2405.10994, §4.2). Generators that merge rare
values (MST's domain compression) lose the canaries' cells, which the audit then shows.

Example:
    >>> c = canary_table(canaries=3, rows=2, columns=3)
    >>> c.base.tolist(), c.canaries.tolist(), c.domain.cardinalities
    ([[0, 0, 0], [0, 0, 0]], [[1, 1, 1], [2, 1, 1], [3, 1, 1]], (4, 2, 2))
    >>> c.table(np.array([True, False, True])).tolist()[-2:]
    [[1, 1, 1], [3, 1, 1]]
    >>> c.pair(1).target.tolist()
    [2, 1, 1]
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._validate import check_mask, check_positive_int
from dpaudit.attacks._synthetic import WorstCaseDataset
from dpaudit.systems.synthetic import TabularDomain

__all__ = ["CanaryTable", "canary_table"]

_MAX_CANARIES = 10**6  # a first column of a million categories: mbi's marginals stay usable
_MAX_ROWS = 10**7
_MAX_COLUMNS = 64


@dataclasses.dataclass(frozen=True)
class CanaryTable:
    """A base table, canary records and the public domain of a one-run audit.

    Attributes:
        base: D₀, in every release.
        canaries: ``(m, columns)`` canary records, each inserted with probability ½.
        domain: the public domain (holds D₀ and every canary).
        note: why the canaries are distinguishable.
    """

    base: np.ndarray
    canaries: np.ndarray
    domain: TabularDomain
    note: str

    def table(self, included) -> np.ndarray:
        """D₀ followed by the canaries ``included`` marks (booleans, one per canary).

        Raises:
            ValueError: ``included`` is not a 0/1 mask with one entry per canary.
        """
        inc = check_mask("included", included)
        if inc.shape != (len(self.canaries),):
            raise ValueError(f"included must have one entry per canary ({len(self.canaries)}), "
                             f"got shape {inc.shape}")  # fmt: skip
        return np.vstack([self.base, self.canaries[inc]])

    def pair(self, i: int) -> WorstCaseDataset:
        """Canary ``i`` as the target of the pair (D₀, D₀ ∪ {cᵢ}): what a threat model's
        statistic reads to score that canary."""
        return WorstCaseDataset("canary", self.base, self.canaries[i], self.domain, self.note)


def canary_table(*, canaries: int = 1000, rows: int = 1000, columns: int = 3) -> CanaryTable:
    """The one-run design of the module notes: ``rows`` rows of zeros and ``canaries`` canary
    records ``(i + 1, 1, …, 1)`` over ``columns`` columns.

    Raises:
        ValueError: fewer than 2 canaries or columns, a non-positive row count, or more than
            10⁶ canaries, 10⁷ rows or 64 columns.
    """
    m = check_positive_int("canaries", canaries, maximum=_MAX_CANARIES)
    n = check_positive_int("rows", rows, maximum=_MAX_ROWS)
    d = check_positive_int("columns", columns, maximum=_MAX_COLUMNS)
    if m < 2:
        raise ValueError(f"canaries must be at least 2 (one guess needs a pair), got {canaries}")
    if d < 2:
        raise ValueError(f"columns must be at least 2, got {columns}")
    cans = np.ones((m, d), dtype=np.int64)
    cans[:, 0] = np.arange(1, m + 1)
    return CanaryTable(
        np.zeros((n, d), dtype=np.int64), cans, TabularDomain((m + 1,) + (2,) * (d - 1)),
        "each canary holds a first-column value no other record holds: it alone moves its "
        "cell of every marginal on that column (Steinke et al. 2023, arXiv:2305.08846; the "
        "unique-record target of Annamalai et al. 2024, arXiv:2405.10994, once per canary)",
    )  # fmt: skip
