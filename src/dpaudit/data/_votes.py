"""The 15 MNIST vote histograms of a 250-teacher PATE (package data, with provenance).

The inputs of the evaluation of Wang et al. 2022, "In Differential Privacy, There is Truth: On
Vote Leakage in Ensemble Private Learning" (arXiv:2209.10732, §4): 5 high-, 5 medium- and
5 low-consensus histograms of a PATE ensemble of 250 teachers on MNIST, copied with their
provenance (the authors' ``cleverhans-lab/monte-carlo-adv`` repository) into
``dpaudit/data/pate_votes_mnist.json``. Re-exported by :mod:`dpaudit.data`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from importlib import resources

import numpy as np

from dpaudit._results import ResultMixin
from dpaudit._typing import IntArray

__all__ = ["CONSENSUS_LEVELS", "VoteHistograms", "load_mnist_vote_histograms"]

#: Consensus levels, highest first (terciles of the top count).
CONSENSUS_LEVELS: tuple[str, ...] = ("high", "medium", "low")


@dataclasses.dataclass(frozen=True, eq=False)
class VoteHistograms(ResultMixin):
    """The 15 MNIST vote histograms of Wang et al. 2022 (arXiv:2209.10732) §4.

    Attributes:
        names: file keys (``"sample-1"`` …).
        labels: the paper's figure labels (``"H1"``…``"H5"``, ``"M1"``…, ``"L1"``…).
        levels: ``"high"``, ``"medium"`` or ``"low"`` consensus: terciles of the top count
            among the 15 (the paper divides its 9,000 histograms into equal thirds).
        votes: int64 (15, 10).
        num_teachers: 250.
        description: the data file's description.
        source: the data file's provenance.
    """

    names: tuple[str, ...]
    labels: tuple[str, ...]
    levels: tuple[str, ...]
    votes: IntArray
    num_teachers: int
    description: str
    source: str

    def __len__(self) -> int:
        return len(self.names)

    def subset(self, labels: Sequence[str]) -> VoteHistograms:
        """The histograms with the given figure labels (e.g. ``["H1", "L1"]``), in that order.

        Raises:
            ValueError: an unknown label.

        Example:
            >>> load_mnist_vote_histograms().subset(["L1", "H1"]).labels
            ('L1', 'H1')
        """
        idx = []
        for lab in labels:
            if lab not in self.labels:
                raise ValueError(f"histograms: unknown label {lab!r}; known: {list(self.labels)}")
            idx.append(self.labels.index(lab))
        return dataclasses.replace(
            self,
            names=tuple(self.names[i] for i in idx),
            labels=tuple(self.labels[i] for i in idx),
            levels=tuple(self.levels[i] for i in idx),
            votes=self.votes[idx],
        )

    def figure_order(self) -> list[int]:
        """Indices in the order of the paper's figures: L1..L5, M1..M5, H1..H5.

        Example:
            >>> hs = load_mnist_vote_histograms().subset(["H2", "L1", "M3"])
            >>> [hs.labels[i] for i in hs.figure_order()]
            ['L1', 'M3', 'H2']
        """
        rank = {"low": 0, "medium": 1, "high": 2}
        return sorted(
            range(len(self)), key=lambda i: (rank[self.levels[i]], int(self.labels[i][1:]))
        )


def load_mnist_vote_histograms() -> VoteHistograms:
    """Load ``dpaudit/data/pate_votes_mnist.json`` (copied with its provenance).

    Levels are the terciles of the top count (stable order for ties); labels number the
    histograms of each level in file order.

    Returns:
        :class:`VoteHistograms`.

    Example:
        >>> hs = load_mnist_vote_histograms()
        >>> len(hs), hs.num_teachers, hs.labels[0]
        (15, 250, 'H1')
    """
    text = resources.files("dpaudit").joinpath("data/pate_votes_mnist.json").read_text("utf-8")
    data = json.loads(text)
    names = tuple(data["histograms"])
    votes = np.array([data["histograms"][k] for k in names], dtype=np.int64)
    n = len(names)
    order = np.argsort(-votes.max(axis=1), kind="stable")
    level_of = np.empty(n, dtype=object)
    for rank, idx in enumerate(order):
        level_of[idx] = CONSENSUS_LEVELS[min(3 * rank // n, 2)]
    labels, seen = [], dict.fromkeys(CONSENSUS_LEVELS, 0)
    for lvl in level_of:
        seen[lvl] += 1
        labels.append(f"{lvl[0].upper()}{seen[lvl]}")
    return VoteHistograms(
        names=names,
        labels=tuple(labels),
        levels=tuple(str(x) for x in level_of),
        votes=votes,
        num_teachers=int(data["num_teachers"]),
        description=str(data["description"]),
        source=str(data["source"]),
    )
