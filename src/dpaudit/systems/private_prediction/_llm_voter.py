"""Votes of the offline language model of :mod:`dpaudit.systems.private_prediction._llm`.

**Fast votes** (:class:`PromptVoter`). A prompt is ``prefix + suffix``: the teacher's part
(task description and its one example) and the query's part (``Text: … Answer: ``). The keys
and values of each prefix (with the suffixes' common leading tokens) are computed once and
reused for every query; the queries of several teachers are pooled into batches of similar
length (right-padded: with causal attention the padding never influences the real
positions), each row attending to its own teacher's prefix (:class:`_Llama`); the last
layer runs at each query's last token only, and the final hidden state is multiplied by the
label words' rows of the output embedding only. Votes are cached on disk (SQLite) keyed by
(model, label tokens, prefix, suffix), with their label logits.
:meth:`PromptVoter.votes_plain` is the reference: one full forward pass of the causal LM per
(teacher, query) on the same token ids, in float32. ``dtype="bfloat16"`` (opt-in) runs the
fast path on a bfloat16 copy of the weights: about twice as fast on CPUs with AVX-512 BF16,
and its answers can differ from float32's where the top two label logits are close.

Token ids of a prompt are ``tokenize(prefix) + tokenize(suffix)`` in both paths (the split is
where the teacher's part ends), so the cached path and the plain path see the same sequence.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._typing import FloatArray, IntArray
from dpaudit._validate import check_choice, check_positive_int
from dpaudit.engine import process_pool_context
from dpaudit.errors import require
from dpaudit.systems.private_prediction._llm import (
    VOTE_DTYPES,
    LanguageModel,
    VoteCache,
    label_token_ids,
    load_language_model,
)

__all__ = ["PromptVoter", "VoteTable"]

#: Teachers whose queries share batches: consecutive jobs until this many pairs (or
#: ``_GROUP_TEACHERS`` jobs) are pooled, enough for batches of equal-length queries.
_GROUP_PAIRS = 512
_GROUP_TEACHERS = 32
#: Fewer (teacher, query) pairs than this are voted in-process: starting a worker costs an
#: import of torch and transformers and a model load (seconds each).
_MIN_PARALLEL_PAIRS = 256


@dataclasses.dataclass(frozen=True)
class VoteTable:
    """Votes of teachers (prompt prefixes) on queries (suffixes).

    Attributes:
        votes: int64 labels ``(n_queries, n_prompts)``.
        logits: float32 label logits ``(n_queries, n_prompts, C)``.
        computed: how many (prompt, query) pairs were run through the model (the rest came
            from the disk cache).
    """

    votes: IntArray
    logits: np.ndarray
    computed: int

    @property
    def margins(self) -> FloatArray:
        """Top-1 minus top-2 label logit per vote (how far each answer is from a tie)."""
        s = np.sort(self.logits.astype(np.float64), axis=-1)
        return s[..., -1] - s[..., -2]


class PromptVoter:
    """Deterministic label votes of a language model on ``prefix + suffix`` prompts.

    Args:
        lm: the :class:`LanguageModel`.
        label_words: one word per class.
        answer_prefix: the text the suffix ends with, before the label word.
        label_tokens: ``"single"`` or ``"first"`` (:func:`label_token_ids`).
        batch_size: most queries per forward pass of the cached path (batches are cut to
            minimise padding, several teachers' queries pooled).
        cache: a :class:`VoteCache`, or None for no disk cache.
        threads: torch intra-op threads during voting (None: torch's setting; 1 in workers).
        workers: processes voting in parallel (teachers are split between them; each loads
            the model once per call and uses ``threads`` or 1 thread); calls with fewer than
            256 pairs to compute run in this process.
        dtype: ``"float32"`` (the reference, default) or ``"bfloat16"`` (opt-in: the
            cached path on a bfloat16 copy of the weights; faster, answers can differ near
            ties; cached under their own key).

    Example:
        >>> voter = PromptVoter(load_language_model(), ["0", "1"], "Answer: ")  # doctest: +SKIP
        >>> voter.votes(["Say 1.\\n"], ["Text: hi\\nAnswer: "]).votes.shape  # doctest: +SKIP
        (1, 1)
    """

    def __init__(
        self,
        lm: LanguageModel,
        label_words: Sequence[str],
        answer_prefix: str,
        *,
        label_tokens: str = "single",
        batch_size: int = 32,
        cache: VoteCache | None = None,
        threads: int | None = None,
        workers: int = 1,
        dtype: str = "float32",
    ) -> None:
        self.lm = lm
        self.label_words = tuple(label_words)
        self.answer_prefix = answer_prefix
        self.label_ids = label_token_ids(
            lm.encode, self.label_words, answer_prefix=answer_prefix, rule=label_tokens
        )
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.cache = cache
        self.threads = None if threads is None else check_positive_int("threads", threads)
        self.workers = check_positive_int("workers", workers)
        self.label_tokens = label_tokens
        self.dtype = check_choice("dtype", dtype, VOTE_DTYPES)
        key: list[Any] = [lm.model_id, list(self.label_ids)]
        self.model_key = json.dumps(key if dtype == "float32" else [*key, dtype])
        self._fast: _Llama | None = None

    @property
    def num_classes(self) -> int:
        """C."""
        return len(self.label_ids)

    @contextlib.contextmanager
    def _torch(self) -> Iterator[Any]:
        torch = require("torch", "torch")
        old = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                yield torch
        finally:
            torch.set_num_threads(old)

    # ------------------------------------------------------------------ public

    def votes(
        self,
        prefixes: Sequence[str],
        suffixes: Sequence[str],
        *,
        pairs: np.ndarray | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> VoteTable:
        """Votes of every prefix (teacher) on every suffix (query), KV-cached and batched.

        Args:
            prefixes: the teachers' prompt parts, ``P``.
            suffixes: the queries' prompt parts, ``Q``.
            pairs: optional boolean mask ``(Q, P)`` of the pairs to compute (others: vote −1,
                logits NaN).
            progress: ``progress(done, total)`` over teachers.

        Returns:
            :class:`VoteTable` with votes ``(Q, P)``.
        """
        p_count, q_count = len(prefixes), len(suffixes)
        want = np.ones((q_count, p_count), bool) if pairs is None else np.asarray(pairs, bool)
        logits = np.full((q_count, p_count, self.num_classes), np.nan, dtype=np.float32)
        keys = {
            (q, p): VoteCache.key(self.model_key, prefixes[p], suffixes[q])
            for q, p in zip(*np.nonzero(want), strict=True)
        }
        stored = {} if self.cache is None else self.cache.get_many(list(keys.values()))
        todo: dict[int, list[int]] = {}
        for (q, p), k in keys.items():
            if k in stored:
                logits[q, p] = stored[k]
            else:
                todo.setdefault(int(p), []).append(int(q))
        jobs = [(p, prefixes[p], [suffixes[q] for q in qs]) for p, qs in sorted(todo.items())]
        computed = 0
        for done, (p, out) in enumerate(self._run_jobs(jobs)):
            qs = todo[p]
            logits[qs, p] = out
            computed += len(qs)
            if self.cache is not None:
                self.cache.put_many([(keys[(q, p)], out[i]) for i, q in enumerate(qs)])
            if progress is not None:
                progress(done + 1, len(jobs))
        return VoteTable(_argmax(logits, want), logits, computed)

    def teacher_logits(self, jobs: Sequence[tuple[str, Sequence[str]]]) -> list[np.ndarray]:
        """Label logits ``(len(suffixes), C)`` of each ``(prefix, suffixes)`` job, in this
        process (KV-cached path, no disk cache)."""
        with self._torch() as torch:
            head = self.lm.model.get_output_embeddings().weight[list(self.label_ids)]
            return self._group_logits(torch, head, jobs) if jobs else []

    def _run_jobs(self, jobs: list[tuple[int, str, list[str]]]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(teacher, logits)`` per job: here, or split between worker processes."""
        pairs = sum(len(sufs) for _, _, sufs in jobs)
        parallel = not (self.workers == 1 or len(jobs) < 2 or pairs < _MIN_PARALLEL_PAIRS)
        # in parallel, at least 4 groups per worker keep the workers equally busy
        most = min(_GROUP_PAIRS, -(-pairs // (4 * self.workers))) if parallel else _GROUP_PAIRS
        groups = _job_groups(jobs, most)
        if not parallel:
            for group in groups:
                outs = self.teacher_logits([(pre, sufs) for _, pre, sufs in group])
                yield from zip([p for p, _, _ in group], outs, strict=True)
            return
        import concurrent.futures as cf

        spec = self._worker_spec()
        with cf.ProcessPoolExecutor(self.workers, mp_context=process_pool_context()) as pool:
            futures = {
                pool.submit(_worker_logits, spec, [(pre, sufs) for _, pre, sufs in group]): [
                    p for p, _, _ in group
                ]
                for group in groups
            }
            for fut in cf.as_completed(futures):  # cached as soon as each group is done
                yield from zip(futures[fut], fut.result(), strict=True)

    def _worker_spec(self) -> dict[str, Any]:
        """What a worker process needs to rebuild this voter (:func:`_worker_logits`)."""
        return {
            "gguf": self.lm.source,
            "cache_dir": str(Path(self.lm.cached_copy).parent.parent),
            "label_words": self.label_words,
            "answer_prefix": self.answer_prefix,
            "label_tokens": self.label_tokens,
            "batch_size": self.batch_size,
            "threads": self.threads or 1,
            "dtype": self.dtype,
        }

    def votes_plain(self, prefixes: Sequence[str], suffixes: Sequence[str]) -> VoteTable:
        """The reference: one full forward pass of the causal LM per (prefix, suffix), no KV
        cache, no batching, no disk cache; the label logits are read from the LM head."""
        logits = np.zeros((len(suffixes), len(prefixes), self.num_classes), dtype=np.float32)
        enc_s = [self.lm.encode(s) for s in suffixes]
        with self._torch() as torch:
            for p, prefix in enumerate(prefixes):
                enc_p = self.lm.encode(prefix)
                for q, ids in enumerate(enc_s):
                    x = torch.tensor([enc_p + ids], dtype=torch.long)
                    out = self.lm.model(input_ids=x).logits[0, -1]
                    logits[q, p] = out[list(self.label_ids)].float().numpy()
        want = np.ones(logits.shape[:2], bool)
        return VoteTable(_argmax(logits, want), logits, logits.shape[0] * logits.shape[1])

    # ----------------------------------------------------------------- internals

    def _group_logits(
        self, torch: Any, head: Any, jobs: Sequence[tuple[str, Sequence[str]]]
    ) -> list[np.ndarray]:
        """Label logits of several teachers' jobs, their queries pooled into shared batches.

        Per job, the suffixes' common leading tokens (``"Text:"``; at most all but each
        suffix's last token) join the prefix: their keys and values depend on the prefix and
        on themselves only (causal attention), so they are computed once per teacher. The
        prefixes (with those tokens) run in one right-padded pass that keeps each layer's keys
        and values. The remaining suffix tokens of all jobs are sorted by length and cut into
        batches of at most ``batch_size`` rows that minimise the padded token count
        (:func:`_length_batches`); each row attends to its own teacher's prefix (the other
        prefixes' and the padding keys are masked) from position ``len(prefix ids)`` on.
        """
        encoded = []
        for prefix, suffixes in jobs:
            ids = self.lm.encode(prefix)
            if not ids:
                raise ValueError("a teacher prompt must not be empty")
            enc = [self.lm.encode(s) for s in suffixes]
            if any(not e for e in enc):
                raise ValueError("a query prompt must not be empty")
            head_len = _common_head(enc)
            encoded.append((ids + (enc[0][:head_len] if enc else []), [e[head_len:] for e in enc]))
        llama = self._llama(torch)
        kv_p, k_mask, p_len = llama.prefixes([ids for ids, _ in encoded], self.batch_size)
        items = [(len(e), j, i) for j, (_, enc) in enumerate(encoded) for i, e in enumerate(enc)]
        items.sort()
        out = [np.zeros((len(enc), head.shape[0]), dtype=np.float32) for _, enc in encoded]
        for lo, hi in _length_batches([n for n, _, _ in items], self.batch_size):
            rows = items[lo:hi]
            lengths = [n for n, _, _ in rows]
            width = lengths[-1]
            ids = torch.zeros((len(rows), width), dtype=torch.long)
            for r, (n, j, i) in enumerate(rows):
                ids[r, :n] = torch.tensor(encoded[j][1][i], dtype=torch.long)
            owner = torch.tensor([j for _, j, _ in rows], dtype=torch.long)
            last = llama.last_hidden(ids, lengths, owner, kv_p, k_mask, p_len)
            logits = (last.float() @ head.T).numpy()
            for r, (_, j, i) in enumerate(rows):
                out[j][i] = logits[r]
        return out

    def _llama(self, torch: Any) -> _Llama:
        if self._fast is None:
            self._fast = _Llama(torch, _model_as(self.lm, self.dtype))
        return self._fast


@functools.lru_cache(maxsize=2)
def _model_as(lm: LanguageModel, dtype: str) -> Any:
    """The model with its weights in ``dtype``: the model itself for float32, else a copy
    (made once per process and model; the float32 model stays the reference)."""
    if dtype == "float32":
        return lm.model
    import copy

    torch = require("torch", "torch")
    return copy.deepcopy(lm.model).to(getattr(torch, dtype))


def _common_head(encoded: Sequence[list[int]]) -> int:
    """How many leading tokens all the token lists share, keeping ≥ 1 token in each."""
    if not encoded:
        return 0
    n = min(len(e) for e in encoded) - 1
    first = encoded[0]
    for k in range(n):
        if any(e[k] != first[k] for e in encoded):
            return k
    return max(n, 0)


def _length_batches(
    lengths: Sequence[int], max_rows: int, overhead: int = 16
) -> list[tuple[int, int]]:
    """Cut ascending ``lengths`` into contiguous batches of at most ``max_rows`` rows that
    minimise the padded token count plus ``overhead`` tokens per batch (dynamic programming;
    a batch of rows ``lo..hi-1`` is padded to ``lengths[hi-1]``)."""
    n = len(lengths)
    best = [0.0] + [float("inf")] * n
    cut = [0] * (n + 1)
    for hi in range(1, n + 1):
        width = lengths[hi - 1]
        for lo in range(max(0, hi - max_rows), hi):
            cost = best[lo] + (hi - lo) * width + overhead
            if cost < best[hi]:
                best[hi], cut[hi] = cost, lo
    out = []
    hi = n
    while hi > 0:
        out.append((cut[hi], hi))
        hi = cut[hi]
    return out[::-1]


class _Llama:
    """The forward pass of a ``transformers`` Llama model written out for label votes.

    SmolLM2 has the Llama architecture (Touvron et al. 2023, arXiv:2302.13971): RMSNorm
    (Zhang and Sennrich 2019, arXiv:1910.07467), rotary position embeddings (Su et al. 2021,
    arXiv:2104.09864), grouped-query attention (Ainslie et al. 2023, arXiv:2305.13245) and a
    SwiGLU MLP (Shazeer 2020, arXiv:2002.05202).

    It calls the model's own modules (norms, projections, MLP, rotary embedding) and
    replaces only the attention and the cache: each row of a batch attends to its own
    teacher's cached prefix keys and values (padded ones masked) and to its own suffix
    tokens (causal). The last layer computes its queries, output projection and MLP at each
    row's last real token only, the one whose hidden state is read; the prefix pass stops at
    the last layer's keys and values. Rows are right-padded: with causal attention padding
    never reaches a real position.
    """

    def __init__(self, torch: Any, model: Any) -> None:
        kind = getattr(model.config, "model_type", None)
        if kind != "llama":
            raise ValueError(
                f"the KV-cached vote path is written for Llama-architecture models "
                f"(SmolLM2), got model_type {kind!r}"
            )
        base = model.model
        self.torch = torch
        self.base = base
        self.layers = list(base.layers)
        attn = self.layers[0].self_attn
        self.head_dim = int(attn.head_dim)
        self.groups = int(attn.num_key_value_groups)
        self.scaling = float(attn.scaling)
        self.dtype = base.embed_tokens.weight.dtype

    def _rope(self, x: Any, positions: Any) -> tuple[Any, Any]:
        return self.base.rotary_emb(x, positions)

    def _qkv(self, layer: Any, h: Any, cos: Any, sin: Any) -> tuple[Any, Any, Any]:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        a = layer.self_attn
        b, n, _ = h.shape
        q = a.q_proj(h).view(b, n, -1, self.head_dim).transpose(1, 2)
        k = a.k_proj(h).view(b, n, -1, self.head_dim).transpose(1, 2)
        v = a.v_proj(h).view(b, n, -1, self.head_dim).transpose(1, 2)
        return (*apply_rotary_pos_emb(q, k, cos, sin), v)

    def _attend(self, q: Any, keys: Any, values: Any, bias: Any) -> Any:
        """Grouped-query attention: ``q`` (b, heads, n, d), ``keys``/``values`` (b, kv heads,
        n_keys, d), ``bias`` (b, 1, groups·n, n_keys) additive (0 or −inf); returns
        (b, n, heads·d). Head h uses kv head h // groups (``repeat_kv`` of transformers)."""
        torch = self.torch
        b, heads, n, d = q.shape
        kv_heads = keys.shape[1]
        qg = q.reshape(b, kv_heads, self.groups * n, d)
        scores = torch.matmul(qg, keys.transpose(-1, -2)) * self.scaling + bias
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(weights, values).view(b, heads, n, d)
        return out.transpose(1, 2).reshape(b, n, heads * d)

    def _causal_bias(self, allowed: Any) -> Any:
        """(b, n_q, n_keys) bool → the additive bias (b, 1, groups·n_q, n_keys)."""
        torch = self.torch
        b, nq, nk = allowed.shape
        bias = torch.zeros(allowed.shape, dtype=self.dtype).masked_fill_(~allowed, float("-inf"))
        return bias[:, None, None].expand(b, 1, self.groups, nq, nk).reshape(b, 1, -1, nk)

    def prefixes(
        self, token_ids: Sequence[list[int]], max_rows: int
    ) -> tuple[list[tuple[Any, Any]], Any, Any]:
        """Keys and values of every layer for each prefix: ``[(K, V)]`` with K, V
        (n_prefixes, kv heads, longest, d), the mask of real keys (n_prefixes, longest), and
        the prefix lengths."""
        torch = self.torch
        lengths = torch.tensor([len(t) for t in token_ids], dtype=torch.long)
        width = int(lengths.max())
        kv: list[list[Any]] = [[] for _ in self.layers]
        order = sorted(range(len(token_ids)), key=lambda j: len(token_ids[j]))
        for lo in range(0, len(order), max_rows):
            chunk = order[lo : lo + max_rows]
            n = max(len(token_ids[j]) for j in chunk)
            ids = torch.zeros((len(chunk), n), dtype=torch.long)
            for r, j in enumerate(chunk):
                ids[r, : len(token_ids[j])] = torch.tensor(token_ids[j], dtype=torch.long)
            x = self.base.embed_tokens(ids)
            cos, sin = self._rope(x, torch.arange(n).expand(len(chunk), n))
            causal = torch.ones((n, n), dtype=torch.bool).tril_()
            bias = self._causal_bias(causal.expand(len(chunk), n, n))
            for li, layer in enumerate(self.layers):
                h = layer.input_layernorm(x)
                q, k, v = self._qkv(layer, h, cos, sin)
                kv[li].append((chunk, k, v, n))
                if li == len(self.layers) - 1:
                    break
                x = x + layer.self_attn.o_proj(self._attend(q, k, v, bias))
                x = x + layer.mlp(layer.post_attention_layernorm(x))
        place = torch.empty(len(token_ids), dtype=torch.long)
        place[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
        layers = []
        for parts in kv:
            shape = (len(token_ids), parts[0][1].shape[1], width, self.head_dim)
            K = torch.zeros(shape, dtype=self.dtype)
            V = torch.zeros(shape, dtype=self.dtype)
            for chunk, k, v, n in parts:
                rows = torch.tensor(chunk, dtype=torch.long)
                K[rows, :, :n] = k
                V[rows, :, :n] = v
            layers.append((K, V))
        mask = torch.arange(width)[None, :] < lengths[:, None]
        return layers, mask, lengths

    def last_hidden(
        self,
        ids: Any,
        lengths: Sequence[int],
        owner: Any,
        prefix_kv: list[tuple[Any, Any]],
        prefix_mask: Any,
        prefix_len: Any,
    ) -> Any:
        """The final-norm hidden state at each row's last real token (b, hidden).

        ``ids`` (b, n) right-padded suffix tokens of ``lengths``; row r continues prefix
        ``owner[r]`` at position ``prefix_len[owner[r]]``."""
        torch = self.torch
        b, n = ids.shape
        last = torch.tensor(lengths, dtype=torch.long) - 1
        rows = torch.arange(b)
        positions = prefix_len[owner][:, None] + torch.arange(n)[None, :]
        x = self.base.embed_tokens(ids)
        cos, sin = self._rope(x, positions)
        p_allowed = prefix_mask[owner]  # (b, P)
        causal = torch.ones((n, n), dtype=torch.bool).tril_().expand(b, n, n)
        full = torch.cat([p_allowed[:, None, :].expand(b, n, -1), causal], dim=2)
        bias = self._causal_bias(full)
        own = torch.arange(n)[None, None, :] <= last[:, None, None]  # (b, 1, n)
        bias_last = self._causal_bias(torch.cat([p_allowed[:, None, :], own], dim=2))
        for li, layer in enumerate(self.layers):
            pk, pv = prefix_kv[li]
            h = layer.input_layernorm(x)
            q, k, v = self._qkv(layer, h, cos, sin)
            keys = torch.cat([pk[owner], k], dim=2)
            values = torch.cat([pv[owner], v], dim=2)
            if li < len(self.layers) - 1:
                x = x + layer.self_attn.o_proj(self._attend(q, keys, values, bias))
                x = x + layer.mlp(layer.post_attention_layernorm(x))
            else:  # only the last real token of each row is read
                q_last = q[rows, :, last][:, :, None]
                o = self._attend(q_last, keys, values, bias_last)
                x = x[rows, last][:, None] + layer.self_attn.o_proj(o)
                x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.base.norm(x)[:, 0]


def _job_groups(
    jobs: Sequence[tuple[int, str, list[str]]], most: int = _GROUP_PAIRS
) -> list[list[tuple[int, str, list[str]]]]:
    """Consecutive jobs pooled until ``most`` pairs or ``_GROUP_TEACHERS`` jobs."""
    groups: list[list[tuple[int, str, list[str]]]] = []
    pairs = 0
    for job in jobs:
        if not groups or pairs >= most or len(groups[-1]) >= _GROUP_TEACHERS:
            groups.append([])
            pairs = 0
        groups[-1].append(job)
        pairs += len(job[2])
    return groups


def _worker_logits(spec: dict[str, Any], jobs: list[tuple[str, list[str]]]) -> list[np.ndarray]:
    """A worker process's share of :meth:`PromptVoter.votes` (module level: picklable)."""
    lm = load_language_model(spec["gguf"], cache_dir=spec["cache_dir"])
    voter = PromptVoter(
        lm,
        spec["label_words"],
        spec["answer_prefix"],
        label_tokens=spec["label_tokens"],
        batch_size=spec["batch_size"],
        threads=spec["threads"],
        dtype=spec["dtype"],
    )
    return voter.teacher_logits(jobs)


def _argmax(logits: np.ndarray, want: np.ndarray) -> IntArray:
    """Argmax over labels (ties: the lowest label); −1 where not computed."""
    votes = np.full(want.shape, -1, dtype=np.int64)
    if want.any():
        votes[want] = np.argmax(logits[want], axis=-1)
    return votes
