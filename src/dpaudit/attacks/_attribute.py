"""Consensus-based attribute inference from vote histograms (Wang et al. 2022 §2 and App. E).

Members of an under-represented group are predicted inconsistently by teachers that each saw
few of them, so their vote histograms have low *consensus* (the share of the top class).
Paper 003 §2 flags every query with consensus below 75% as a member of the minority (PhD
holders in UCI Adult) — a fixed, unlearned rule — and reports precision and recall on a test
set balanced between the two groups. The histograms may be read directly or extracted
through the private interface first (App. E; :func:`dpaudit.attacks.extract_histogram`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpaudit._results import ConfidenceInterval, ResultMixin
from dpaudit._typing import ArrayLike, FloatArray
from dpaudit._validate import (
    check_confidence_level,
    check_in_range,
    check_mask,
    check_votes,
)

__all__ = [
    "AttributeInference",
    "evaluate_attribute_inference",
    "flag_low_consensus",
    "vote_consensus",
]

PAPER_CONSENSUS_THRESHOLD = 0.75
"""Paper 003 §2: consensus below 75% → flagged as a minority-group member."""


def vote_consensus(votes: ArrayLike) -> FloatArray:
    """Consensus of each histogram: ``max_c H_c / Σ_c H_c`` (Wang et al. 2022 §2, §4.1).

    Args:
        votes: histogram (C,) or batch (..., C), non-negative, each with a positive sum.

    Returns:
        Consensus in [1/C, 1], shape ``votes.shape[:-1]``.

    Raises:
        ValueError: negative or non-finite votes, a histogram summing to 0.

    Example:
        >>> vote_consensus([[180, 70], [125, 125]]).tolist()
        [0.72, 0.5]
    """
    h = check_votes("votes", votes, nonneg=True)
    total = h.sum(axis=-1)
    if np.any(total <= 0):
        raise ValueError("votes must have a positive sum in every histogram")
    return h.max(axis=-1) / total


def flag_low_consensus(
    votes: ArrayLike, *, threshold: float = PAPER_CONSENSUS_THRESHOLD
) -> np.ndarray:
    """Paper 003 §2's rule: flag a histogram whose consensus is strictly below ``threshold``.

    Args:
        votes: histogram (C,) or batch (..., C).
        threshold: consensus cut-off in (0, 1] (paper: 0.75).

    Returns:
        Boolean flags, shape ``votes.shape[:-1]`` (True = inferred minority member).

    Raises:
        ValueError: bad votes or threshold.

    Example:
        >>> flag_low_consensus([[180, 70], [230, 20]]).tolist()
        [True, False]
    """
    t = check_in_range("threshold", threshold, 0.0, 1.0, high_inclusive=True)
    return vote_consensus(votes) < t


@dataclasses.dataclass(frozen=True, eq=False)
class AttributeInference(ResultMixin):
    """Precision and recall of the low-consensus rule against the true attribute.

    Attributes:
        precision: TP/(TP + FP); 0 when nothing was flagged (0/0: the convention of
            scikit-learn's ``zero_division=0``), with the uninformative interval [0, 1].
        recall: TP/(TP + FN); 0 when there is no member, with the interval [0, 1].
        precision_interval: exact Clopper–Pearson interval for the precision.
        recall_interval: exact Clopper–Pearson interval for the recall.
        confidence_level: of each interval (two-sided, separately).
        accuracy: (TP + TN)/n.
        true_positives, false_positives, false_negatives, true_negatives: the confusion counts.
        num_members: queries that truly belong to the group.
        num_queries: all queries.
        threshold: the consensus cut-off (fixed in advance, so no selection to pay for).
        method: the rule.
        selection: ``"none"`` (the paper's threshold, not tuned on these data).
    """

    precision: float
    recall: float
    precision_interval: ConfidenceInterval
    recall_interval: ConfidenceInterval
    confidence_level: float
    accuracy: float
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int
    num_members: int
    num_queries: int
    threshold: float
    method: str = "Wang et al. 2022 §2: flag consensus < threshold as a minority-group member"
    selection: str = "none"


def evaluate_attribute_inference(
    votes: ArrayLike,
    is_member: ArrayLike,
    *,
    threshold: float = PAPER_CONSENSUS_THRESHOLD,
    confidence_level: float = 0.95,
) -> AttributeInference:
    """Score the low-consensus rule on histograms with known group membership.

    Args:
        votes: histograms (n, C) (read directly or extracted).
        is_member: true group membership (n,), booleans or 0/1.
        threshold: consensus cut-off (Wang et al. 2022 §2: 0.75).
        confidence_level: for the Clopper–Pearson intervals of precision and recall.

    Returns:
        :class:`AttributeInference`.

    Raises:
        ValueError: shapes disagree, membership not boolean, bad threshold or level.

    Example:
        >>> r = evaluate_attribute_inference([[180, 70], [230, 20], [150, 100], [240, 10]],
        ...                                  [True, True, False, False])
        >>> r.precision, r.recall
        (0.5, 0.5)
    """
    from dpaudit.bounds import clopper_pearson

    h = check_votes("votes", votes, nonneg=True)
    if h.ndim != 2:
        raise ValueError(f"votes must be a batch of histograms (n, C), got shape {h.shape}")
    truth = check_mask("is_member", is_member)
    if truth.shape != (h.shape[0],):
        raise ValueError(
            f"is_member must have one entry per histogram ({h.shape[0]}), got shape {truth.shape}"
        )
    level = check_confidence_level(confidence_level)
    flags = flag_low_consensus(h, threshold=threshold)
    tp = int(np.count_nonzero(flags & truth))
    fp = int(np.count_nonzero(flags & ~truth))
    fn = int(np.count_nonzero(~flags & truth))
    tn = int(np.count_nonzero(~flags & ~truth))
    n = tp + fp + fn + tn

    def ratio(k: int, total: int) -> tuple[float, ConfidenceInterval]:
        if total == 0:  # 0/0: reported as 0 with the interval [0, 1] (nothing is known)
            return 0.0, ConfidenceInterval(0.0, 1.0)
        return k / total, clopper_pearson(k, total, confidence_level=level)

    precision, p_iv = ratio(tp, tp + fp)
    recall, r_iv = ratio(tp, tp + fn)
    return AttributeInference(
        precision=precision,
        recall=recall,
        precision_interval=p_iv,
        recall_interval=r_iv,
        confidence_level=level,
        accuracy=(tp + tn) / n,
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
        true_negatives=tn,
        num_members=tp + fn,
        num_queries=n,
        threshold=float(threshold),
    )
