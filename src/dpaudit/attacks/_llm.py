"""Canaries, membership scores and secret extraction for fine-tuned language models.

**Canaries** (:func:`draw_llm_canaries`): each is a *prefix* of ``prefix_length`` tokens and a
*secret* of ``secret_length`` tokens, inserted in the fine-tuning set independently with
probability ``inclusion`` (½: the premise of the one-run games of Steinke, Nasr & Jagielski
2023, arXiv:2305.08846). The prefix is random ordinary tokens (the same draw for every kind
under one seed); the secret is, by kind (:data:`LLM_CANARY_KINDS`):

* ``random-token`` — ordinary tokens drawn uniformly (the baseline; Carlini et al. 2019,
  "The Secret Sharer", arXiv:1802.08232);
* ``rare-token`` — tokens drawn uniformly from the ``rare_pool`` least frequent ordinary
  tokens of the fine-tuning corpus;
* ``new-token`` — new vocabulary entries, ``secret_length`` of their own per canary, whose
  embeddings are trained only by fine-tuning (Panda, Tang, Nasr, Choquette-Choo & Mittal
  2025, "Privacy Auditing of Large Language Models", arXiv:2503.06808, §3);
* ``model-generated`` — prefix and secret sampled from the pre-trained model itself at a
  high temperature (Mitchell, Andrew, Ganesh, McMahan & Kairouz 2026, arXiv:2606.10481).

**Scores** (:func:`canary_scores`; larger = more likely included), from the mean negative
log-likelihood ℓ of the secret given the prefix under the fine-tuned model and ℓ_ref under
the pre-trained reference:

* ``loss`` — −ℓ (Yeom, Giacomelli, Fredrikson & Jha 2018, arXiv:1709.01604);
* ``loss-ratio`` — −ℓ / ℓ_ref (the reference-model ratio of Carlini et al. 2021, "Extracting
  Training Data from Large Language Models", arXiv:2012.07805, §6.2);
* ``zlib`` — −(ℓ · S) / zlib(secret text), S the secret's tokens: the log-perplexity over the
  zlib entropy of the text in bits (Carlini et al. 2021, §6.2).

**Non-DP metrics** (:func:`membership_metrics`): TPR at 1 % and 0.1 % FPR (the largest
empirical TPR over thresholds whose empirical FPR is at most the level; Carlini et al. 2022,
"Membership Inference Attacks From First Principles", arXiv:2112.03570) and the AUC (the
Mann–Whitney statistic, ties counted ½). **Extraction** (:func:`greedy_extraction`): the
secret is extracted when greedy decoding from the prefix reproduces it exactly.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import ResultMixin
from dpaudit._rng import as_seed_sequence
from dpaudit._typing import ArrayLike, RngLike
from dpaudit._validate import (
    check_array,
    check_in_range,
    check_positive,
    check_positive_int,
)
from dpaudit.bounds import check_membership_scores
from dpaudit.errors import require
from dpaudit.systems.llm import CausalLM, model_device, with_new_tokens

__all__ = [
    "LLM_CANARY_KINDS",
    "LLM_SCORES",
    "LLMCanaries",
    "LLMCanaryKind",
    "MembershipMetrics",
    "canary_scores",
    "draw_llm_canaries",
    "greedy_extraction",
    "membership_metrics",
    "secret_losses",
]

#: The scores, in the order of the audit's entries.
LLM_SCORES: tuple[str, ...] = ("loss", "loss-ratio", "zlib")


@dataclasses.dataclass(frozen=True)
class LLMCanaryKind:
    """One kind of canary secret.

    Attributes:
        name: registry name.
        title: one line.
        source: where it comes from.
        new_tokens: whether its secrets are new vocabulary entries.
    """

    name: str
    title: str
    source: str
    new_tokens: bool = False


LLM_CANARY_KINDS: Registry[LLMCanaryKind] = Registry("LLM canary kind")
LLM_CANARY_KINDS.register(
    "random-token",
    LLMCanaryKind(
        "random-token", "ordinary tokens drawn uniformly", "Carlini et al. 2019, arXiv:1802.08232"
    ),
)
LLM_CANARY_KINDS.register(
    "rare-token",
    LLMCanaryKind(
        "rare-token",
        "the fine-tuning corpus' least frequent tokens",
        "Panda et al. 2025, arXiv:2503.06808",
    ),
)
LLM_CANARY_KINDS.register(
    "new-token",
    LLMCanaryKind(
        "new-token",
        "new vocabulary entries with trainable embeddings",
        "Panda et al. 2025, arXiv:2503.06808",
        new_tokens=True,
    ),
)
LLM_CANARY_KINDS.register("model-generated", LLMCanaryKind(
    "model-generated", "sampled from the pre-trained model at a high temperature",
    "Mitchell et al. 2026, arXiv:2606.10481"))  # fmt: skip


@dataclasses.dataclass(frozen=True, eq=False)
class LLMCanaries:
    """k canaries of one kind.

    Attributes:
        kind: the :data:`LLM_CANARY_KINDS` name.
        lm: the model they are for (with the new entries of ``new-token`` canaries).
        prefix: ``(k, P)`` token ids.
        secret: ``(k, S)`` token ids.
        included: ``(k,)`` which are inserted.
    """

    kind: str
    lm: CausalLM
    prefix: np.ndarray
    secret: np.ndarray
    included: np.ndarray

    @property
    def count(self) -> int:
        """k."""
        return int(self.prefix.shape[0])

    def sequences(self) -> tuple[np.ndarray, np.ndarray]:
        """The training sequences: BOS, prefix, secret (``(k, 1 + P + S)`` ids, lengths)."""
        k = self.count
        bos = np.full((k, 1), self.lm.bos_id, dtype=np.int64)
        ids = np.concatenate([bos, self.prefix, self.secret], axis=1)
        return ids, np.full(k, ids.shape[1], dtype=np.int64)

    def texts(self) -> list[str]:
        """The secrets as text."""
        return [self.lm.decode(row) for row in self.secret]


def _ordinary(lm: CausalLM) -> np.ndarray:
    special = lm.special_ids()
    return np.array([i for i in range(lm.base_vocab) if i not in special], dtype=np.int64)


def draw_llm_canaries(
    kind: str,
    lm: CausalLM,
    count: int,
    *,
    prefix_length: int = 8,
    secret_length: int = 4,
    inclusion: float = 0.5,
    corpus: ArrayLike | None = None,
    rare_pool: int = 100,
    temperature: float = 2.0,
    rng: RngLike = None,
) -> LLMCanaries:
    """k canaries of one kind (module docstring), each included with probability ``inclusion``.

    The prefixes and the inclusions come from streams of ``rng`` that do not depend on the
    kind, so canaries of different kinds drawn with one seed share them.

    Args:
        kind: a :data:`LLM_CANARY_KINDS` name.
        lm: the pre-trained model (``new-token`` returns it with ``k·S`` new entries).
        count: k (≥ 2).
        prefix_length, secret_length: P ≥ 1 and S ≥ 1 tokens; 1 + P + S must fit the context.
        inclusion: probability in (0, 1) of each canary's insertion.
        corpus: the fine-tuning set's token ids (any shape; ``rare-token`` needs it).
        rare_pool: how many of the least frequent ordinary tokens ``rare-token`` draws from.
        temperature: sampling temperature of ``model-generated``.
        rng: seed (keyword-only).

    Raises:
        ValueError: unknown kind; sizes out of range; canaries longer than the model's
            context; ``rare-token`` without ``corpus``; as :func:`with_new_tokens`.
    """
    spec = LLM_CANARY_KINDS.get(kind)
    if not isinstance(lm, CausalLM):
        raise TypeError(f"lm must be a CausalLM, got {type(lm).__name__}")
    k = check_positive_int("count", count)
    if k < 2:
        raise ValueError(f"count must be at least 2 canaries, got {count}")
    P = check_positive_int("prefix_length", prefix_length)
    S = check_positive_int("secret_length", secret_length)
    if lm.context < 1 + P + S:
        raise ValueError(
            f"canaries of 1 + prefix_length + secret_length = {1 + P + S} tokens are longer "
            f"than the model's context of {lm.context} tokens"
        )
    p_in = check_in_range("inclusion", inclusion, 0.0, 1.0)
    pool = check_positive_int("rare_pool", rare_pool)
    tau = check_positive("temperature", temperature)
    if kind == "rare-token" and corpus is None:
        raise ValueError("rare-token canaries need the fine-tuning corpus' token ids (corpus)")
    root = as_seed_sequence(rng)
    key = root.spawn_key
    s_inc, s_prefix, s_secret = (
        np.random.SeedSequence(root.entropy, spawn_key=(*key, i)) for i in range(3)
    )
    included = np.random.default_rng(s_inc).random(k) < p_in
    ordinary = _ordinary(lm)
    prefix = np.random.default_rng(s_prefix).choice(ordinary, size=(k, P))
    g = np.random.default_rng(s_secret)
    if kind == "random-token":
        secret = g.choice(ordinary, size=(k, S))
    elif kind == "rare-token":
        ids = np.asarray(corpus).ravel().astype(np.int64)
        ids = ids[(ids >= 0) & (ids < lm.base_vocab)]
        freq = np.bincount(ids, minlength=lm.base_vocab)[ordinary]
        order = np.lexsort((ordinary, freq))  # least frequent first, ties by id
        rare = ordinary[order[: min(pool, ordinary.size)]]
        secret = g.choice(rare, size=(k, S))
    elif spec.new_tokens:
        lm = with_new_tokens(lm, k * S)
        secret = (lm.base_vocab + lm.new_tokens - k * S + np.arange(k * S)).reshape(k, S)
    else:
        seq = _sample(lm, k, P + S, tau, ordinary, g)
        prefix, secret = seq[:, :P], seq[:, P:]
    return LLMCanaries(kind, lm, prefix.astype(np.int64), secret.astype(np.int64), included)


def _sample(lm: CausalLM, k: int, n: int, tau: float, ordinary: np.ndarray, g) -> np.ndarray:
    """k sequences of n tokens sampled from the pre-trained model after BOS at temperature
    τ, restricted to ordinary tokens (no special token ends a canary early)."""
    torch = require("torch", "torch")
    allowed = torch.full((lm.base_vocab,), float("-inf"))
    allowed[torch.from_numpy(ordinary)] = 0.0
    gen = torch.Generator().manual_seed(int(g.integers(0, 2**63)))
    x = torch.full((k, 1), lm.bos_id, dtype=torch.long)
    with torch.no_grad():
        for _ in range(n):
            logits = lm.model(input_ids=x).logits[:, -1, : lm.base_vocab].float()
            probs = torch.softmax(logits / tau + allowed, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=gen)
            x = torch.cat([x, nxt], dim=1)
    return x[:, 1:].numpy()


def secret_losses(model: Any, canaries: LLMCanaries, *, batch_size: int = 64) -> np.ndarray:
    """Mean negative log-likelihood (nats) of each canary's secret given BOS and its prefix
    under ``model`` (a module ``(ids, mask) -> logits``, e.g. a fine-tuning run's, on any
    device)."""
    torch = require("torch", "torch")
    ids, _ = canaries.sequences()
    S = canaries.secret.shape[1]
    x_all = torch.from_numpy(ids).to(model_device(model))
    out = []
    with torch.no_grad():
        for s in range(0, ids.shape[0], batch_size):
            x = x_all[s : s + batch_size]
            logits = model(x, torch.ones_like(x))
            logp = torch.log_softmax(logits[:, -S - 1 : -1].double(), dim=-1)
            tok = x[:, -S:]
            nll = -logp.gather(-1, tok.unsqueeze(-1)).squeeze(-1)
            out.append(nll.mean(1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def canary_scores(
    losses: ArrayLike, reference_losses: ArrayLike, secret_texts: list[str], secret_length: int
) -> dict[str, np.ndarray]:
    """The three scores of :data:`LLM_SCORES` (module docstring), larger = more likely in.

    Raises:
        TypeError: non-numeric losses, texts that are not strings.
        ValueError: mismatched lengths, non-finite losses, non-positive reference losses.

    Example:
        >>> s = canary_scores([1.0, 2.0], [2.0, 2.0], ["ab", "cd"], 2)
        >>> s["loss"].tolist(), s["loss-ratio"].tolist()
        ([-1.0, -2.0], [-0.5, -1.0])
    """
    lo = check_array("losses", losses, ndim=1)
    ref = check_array("reference_losses", reference_losses, ndim=1)
    S = check_positive_int("secret_length", secret_length)
    if ref.shape != lo.shape:
        raise ValueError(
            f"reference_losses must have one entry per canary ({lo.size}), got {ref.shape}"
        )
    if np.any(ref <= 0):
        raise ValueError("reference_losses must be positive (a mean negative log-likelihood)")
    if not isinstance(secret_texts, (list, tuple)) or not all(
        isinstance(t, str) for t in secret_texts
    ):
        raise TypeError("secret_texts must be a list of strings")
    if len(secret_texts) != lo.size:
        raise ValueError(
            f"secret_texts must have one text per canary ({lo.size}), got {len(secret_texts)}"
        )
    bits = np.array([8.0 * len(zlib.compress(t.encode("utf-8"))) for t in secret_texts])
    return {"loss": -lo, "loss-ratio": -lo / ref, "zlib": -(lo * S) / bits}


@dataclasses.dataclass(frozen=True)
class MembershipMetrics(ResultMixin):
    """Membership inference as a classifier (not a privacy bound).

    Attributes:
        tpr_at_1pct_fpr: largest TPR at an empirical FPR ≤ 1 %.
        tpr_at_01pct_fpr: at ≤ 0.1 %.
        auc: area under the ROC curve.
        members, non_members: how many of each.
    """

    tpr_at_1pct_fpr: float
    tpr_at_01pct_fpr: float
    auc: float
    members: int
    non_members: int


def _tpr_at(pos: np.ndarray, neg: np.ndarray, fpr: float) -> float:
    allowed = int(np.floor(fpr * neg.size + 1e-9))  # false positives allowed
    neg_sorted = np.sort(neg)[::-1]
    # threshold t: "in" iff score > t; with `allowed` negatives above, t = the next one down
    t = neg_sorted[allowed] if allowed < neg.size else -np.inf
    return float(np.mean(pos > t))


def membership_metrics(scores: ArrayLike, included: ArrayLike) -> MembershipMetrics:
    """TPR at 1 % and 0.1 % FPR and AUC of ``scores`` against ``included``.

    Raises:
        TypeError: non-numeric scores or flags.
        ValueError: no member or no non-member; mismatched or non-finite input.

    Example:
        >>> m = membership_metrics([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0])
        >>> m.tpr_at_1pct_fpr, m.auc
        (1.0, 1.0)
    """
    s, inc = check_membership_scores(scores, included)
    pos, neg = s[inc], s[~inc]
    if pos.size == 0 or neg.size == 0:
        raise ValueError(
            f"membership metrics need members and non-members, got {pos.size} and {neg.size}"
        )
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([pos, neg]))
    auc = (ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size)
    return MembershipMetrics(_tpr_at(pos, neg, 0.01), _tpr_at(pos, neg, 0.001), float(auc),
                             int(pos.size), int(neg.size))  # fmt: skip


def greedy_extraction(model: Any, canaries: LLMCanaries, *, batch_size: int = 64) -> np.ndarray:
    """``(k,)`` whether greedy decoding from BOS and each prefix reproduces its secret exactly
    (``model``: a module ``(ids, mask) -> logits`` over the canaries' vocabulary, on any
    device)."""
    torch = require("torch", "torch")
    ids, _ = canaries.sequences()
    S = canaries.secret.shape[1]
    ctx = torch.from_numpy(ids[:, :-S]).to(model_device(model))
    out = []
    with torch.no_grad():
        for s in range(0, ctx.shape[0], batch_size):
            x = ctx[s : s + batch_size]
            for _ in range(S):
                logits = model(x, torch.ones_like(x))
                x = torch.cat([x, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            out.append(x[:, -S:].cpu().numpy())
    got = np.concatenate(out) if out else np.zeros((0, S), dtype=np.int64)
    return np.all(got == canaries.secret, axis=1)
