"""Many-run audits as a stream: pilot runs fix a threshold, later runs test the claim by betting.

The multi-run audits (the DP-SGD bug catalogue, the all-iterates and worst-case-initialised
DP-SGD audits) train many independent models on D′ (with the target or canary) and on D
(without) and score each. Their fixed-sample form bounds ε by Clopper–Pearson at a threshold
chosen on held-out pilot runs (Jagielski, Ullman & Oprea 2020, arXiv:2006.07709). The
sequential form keeps the pilot and replaces the fixed evaluation set by a stream:

1. :func:`choose_threshold` — the threshold t with the largest Clopper–Pearson bound on the
   pilot runs, and :func:`witness_direction` — which of the threshold's two events witnesses
   (D′ above t, or D below t), both decided on the pilot runs only;
2. :func:`stream_claim_test` — chunks of fresh runs (each chunk an engine job of its own, so
   the stream resumes from its journals) are paired in arrival order, D′ run with D run, and
   each pair's indicators update :class:`dpaudit.bounds.DPClaimEProcess`: test
   supermartingales for "the system is (ε, δ)-DP" at the claim and on an ε grid (testing by
   betting, Waudby-Smith & Ramdas 2023, arXiv:2010.09686; the DP form of González,
   Dulce-Rubio, Ramdas & Ribero 2025, arXiv:2509.07055). The stream stops after the chunk in
   which the claim is rejected, or when the run budget is spent.

Pairing by arrival order depends only on which runs include the target — never on their
scores — and t is fixed before the stream starts, so every pair is a fresh, independent draw
from (M(D′), M(D)); by Ville's inequality the claim's rejection and the ε confidence sequence
hold at the stopping time the stream chooses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from dpaudit._results import SelectionRecord
from dpaudit.bounds import DPClaimEProcess, SequentialAudit, epsilon_from_confusion

__all__ = [
    "SEQUENTIAL_CHUNK",
    "StreamedRuns",
    "choose_threshold",
    "stream_claim_test",
    "stream_selections",
    "witness_direction",
]

#: Run pairs per engine job of a sequential audit (the granularity of stopping and resuming).
SEQUENTIAL_CHUNK = 16


def choose_threshold(
    pos: np.ndarray, neg: np.ndarray, delta: float, level: float
) -> tuple[float, float]:
    """The threshold with the largest Clopper–Pearson bound on the pilot runs themselves
    (candidates: every pilot score; ties, e.g. all 0 on a small pilot, broken by the largest
    TPR − FPR). A threshold that only a handful of pilot runs pass gets the wide interval it
    deserves, so the choice does not chase the tails.

    Args:
        pos: pilot scores of runs on D′ (with the target).
        neg: pilot scores of runs on D (without it).
        delta: δ of the bound.
        level: its confidence 1 − β.

    Returns:
        ``(threshold, the pilot's bound there)``.
    """
    best, best_key = float(np.max(neg)), (-1.0, -1.0)
    n_pos, n_neg = pos.size, neg.size
    for t in np.unique(np.concatenate([pos, neg])):
        tp, fp = int(np.sum(pos >= t)), int(np.sum(neg >= t))
        e = epsilon_from_confusion(tp, n_pos - tp, fp, n_neg - fp, delta=delta,
                                   confidence_level=level).epsilon  # fmt: skip
        key = (e, tp / n_pos - fp / n_neg)
        if key > best_key:
            best, best_key = float(t), key
    return best, best_key[0]


def witness_direction(pos: np.ndarray, neg: np.ndarray, threshold: float) -> bool:
    """Whether ``{score ≥ t}`` on D′ (``True``) or ``{score < t}`` on D (``False``) witnesses
    better on the pilot runs — the two forms of :func:`dpaudit.bounds.epsilon_from_confusion`,
    compared by their add-½ likelihood ratios."""
    n_pos, n_neg = pos.size, neg.size
    tp, fp = float(np.sum(pos >= threshold)), float(np.sum(neg >= threshold))
    return (tp + 0.5) / (fp * n_pos / n_neg + 0.5) >= (n_neg - fp + 0.5) / (
        (n_pos - tp) * n_neg / n_pos + 0.5
    )


@dataclasses.dataclass(frozen=True)
class StreamedRuns:
    """Where a streamed many-run audit stopped.

    Attributes:
        state: the claim's test and the ε confidence sequence at the stop.
        chunks: the chunks drawn.
        in_scores: every streamed score on D′, in arrival order (paired or not).
        out_scores: every streamed score on D.
        tp: streamed D′ runs scoring ≥ the threshold.
        fp: streamed D runs scoring ≥ the threshold.
    """

    state: SequentialAudit
    chunks: int
    in_scores: np.ndarray
    out_scores: np.ndarray
    tp: int
    fp: int

    @property
    def pairs(self) -> int:
        """The (D′, D) run pairs the test has seen."""
        return self.state.observations

    def stop_note(self, budget: str) -> str:
        """One line: where and why the stream stopped."""
        s = self.state
        if s.rejects_claim:
            return f"claim rejected at run pair {s.rejected_at} ({self.pairs} pairs streamed)"
        return f"claim not rejected in {self.pairs} run pairs ({budget})"


def stream_claim_test(
    draw: Callable[[int], tuple[np.ndarray, np.ndarray]],
    *,
    threshold: float,
    forward: bool,
    claimed_epsilon: float,
    delta: float,
    confidence_level: float,
    max_chunks: int,
) -> StreamedRuns:
    """Draw chunks of runs until the claim is rejected or ``max_chunks`` are drawn.

    Args:
        draw: chunk index ``k`` → (scores of its runs on D′, scores of its runs on D); the
            lengths may differ (runs that include a canary with probability ½): unpaired runs
            wait for a partner from a later chunk. The caller seeds chunk k by k (so the same
            stream is drawn whatever stops it) and journals it.
        threshold: t, fixed on pilot runs.
        forward: the event, from :func:`witness_direction`.
        claimed_epsilon: the claim tested (its δ is ``delta``).
        delta: δ of the claim and of the ε confidence sequence.
        confidence_level: 1 − β.
        max_chunks: the run budget, in chunks.

    Returns:
        the :class:`StreamedRuns`.
    """
    process = DPClaimEProcess(claimed_epsilon, delta, confidence_level=confidence_level)
    state = process.result()
    ins: list[np.ndarray] = []
    outs: list[np.ndarray] = []
    paired = 0
    k = 0
    while k < max_chunks:
        pos, neg = draw(k)
        k += 1
        ins.append(np.asarray(pos, dtype=float).ravel())
        outs.append(np.asarray(neg, dtype=float).ravel())
        all_in, all_out = np.concatenate(ins), np.concatenate(outs)
        upto = min(all_in.size, all_out.size)
        if upto > paired:
            p, n = all_in[paired:upto], all_out[paired:upto]
            state = process.update(*((p >= threshold, n >= threshold) if forward
                                     else (n < threshold, p < threshold)))  # fmt: skip
            paired = upto
        if state.rejects_claim:
            break
    all_in = np.concatenate(ins) if ins else np.empty(0)
    all_out = np.concatenate(outs) if outs else np.empty(0)
    return StreamedRuns(state, k, all_in, all_out, int(np.sum(all_in >= threshold)),
                        int(np.sum(all_out >= threshold)))  # fmt: skip


def stream_selections(pilot: str) -> tuple[SelectionRecord, SelectionRecord]:
    """What a streamed audit chose and how it pays: the threshold on held-out pilot runs
    (``pilot`` says which, e.g. "20 held-out pilot runs"), the stopping time by Ville's
    inequality."""
    return (SelectionRecord("threshold", "split", f"chosen on {pilot}"),
            SelectionRecord("stopping time", "anytime-valid", "Ville's inequality: the test and "
                            "the confidence sequence hold at any stopping time"))  # fmt: skip
