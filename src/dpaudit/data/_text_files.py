"""Text datasets of PromptPATE's audit read from user-given files, and the 4-category WordNet
substitute of AG News.

Chadha et al. 2024 ("Auditing Private Prediction", arXiv:2402.09403, App. D.2) audit
PromptPATE on SST-2, AG News, TREC and DBPedia. None ships offline: SST-2 and AG News are read
by :func:`dpaudit.data.load_sst2` / :func:`~dpaudit.data.load_ag_news`; this
module reads the other two from the standard files in a directory the user gives (or
``$DPAUDIT_DATA_DIR/<name>``):

- ``"trec"``: the TREC question classification data of Li & Roth 2002 (``train_5500.label``,
  ``TREC_10.label``; lines ``COARSE:fine question``, Latin-1), 6 coarse classes in the order
  ABBR, ENTY, DESC, HUM, LOC, NUM (5,452 / 500 questions).
- ``"dbpedia"``: DBPedia ontology classification of Zhang et al. 2015 (arXiv:1509.01626;
  ``train.csv`` / ``test.csv``, no header: class index 1–14, title, abstract), 14 classes
  (560,000 / 70,000); text = title + abstract.

The offline substitute of AG News is ``"wordnet-nouns-4"``: WordNet noun definitions
(:func:`dpaudit.data.load_wordnet_nouns`, Debian ``wordnet-base``) of the four
lexicographer files of :data:`dpaudit.data.WORDNET_FEATURE_CATEGORIES`
(animal, artifact, person, plant), as a dataset of its own name.

Example:
    >>> ds = load_wordnet_nouns_4(seed=0)  # doctest: +SKIP
    >>> ds.name, ds.class_names  # doctest: +SKIP
    ('wordnet-nouns-4', ('noun.animal', 'noun.artifact', 'noun.person', 'noun.plant'))
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._typing import RngLike
from dpaudit.data._dataset import Dataset
from dpaudit.data._text import load_wordnet_nouns
from dpaudit.errors import MissingDatasetError

__all__ = [
    "DBPEDIA_CLASSES",
    "PROMPT_TEXT_LOADERS",
    "TREC_CLASSES",
    "TREC_CODES",
    "WORDNET_4_CATEGORIES",
    "load_dbpedia",
    "load_trec",
    "load_wordnet_nouns_4",
    "read_dbpedia",
    "read_trec",
]

TREC_CODES: tuple[str, ...] = ("ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM")
TREC_CLASSES: tuple[str, ...] = (
    "Abbreviation",
    "Entity",
    "Description",
    "Human",
    "Location",
    "Number",
)
DBPEDIA_CLASSES: tuple[str, ...] = (
    "Company",
    "EducationalInstitution",
    "Artist",
    "Athlete",
    "OfficeHolder",
    "MeanOfTransportation",
    "Building",
    "NaturalPlace",
    "Village",
    "Animal",
    "Plant",
    "Album",
    "Film",
    "WrittenWork",
)
WORDNET_4_CATEGORIES: tuple[str, ...] = (
    "noun.animal",
    "noun.artifact",
    "noun.person",
    "noun.plant",
)


def _user_dir(path: str | os.PathLike[str] | None, name: str, files: Sequence[str]) -> Path:
    """The directory holding ``files``: ``path``, else ``$DPAUDIT_DATA_DIR/<name>``."""
    if path is None:
        env = os.environ.get("DPAUDIT_DATA_DIR")
        if not env:
            raise MissingDatasetError(
                f"{name} is not shipped by any package on this machine; pass path= a directory "
                f"holding its standard files ({', '.join(files)}) or put them in "
                f"$DPAUDIT_DATA_DIR/{name}"
            )
        path = Path(env) / name
    d = Path(path)
    missing = [f for f in files if not (d / f).is_file()]
    if missing:
        raise MissingDatasetError(
            f"{name} files {missing} not found in {str(d)!r}; pass path= a directory holding "
            f"{', '.join(files)}"
        )
    return d


def _texts(values: Sequence[str]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    arr.setflags(write=False)
    return arr


def _dataset(
    name: str,
    train: tuple[list[str], list[int]],
    test: tuple[list[str], list[int]],
    class_names: tuple[str, ...],
    source: str,
) -> Dataset:
    if not train[0] or not test[0]:
        raise ValueError(f"{name}: the files at {source!r} hold no labelled rows")
    y_tr = np.asarray(train[1], dtype=np.int64)
    y_te = np.asarray(test[1], dtype=np.int64)
    return Dataset(
        name=name,
        X_train=_texts(train[0]),
        y_train=y_tr,
        X_test=_texts(test[0]),
        y_test=y_te,
        num_classes=len(class_names),
        class_names=class_names,
        source=source,
        split="standard",
    )


# ------------------------------------------------------------------------------------ TREC


def read_trec(file: str | os.PathLike[str]) -> tuple[list[str], list[int]]:
    """Questions and coarse labels of a TREC ``.label`` file (``COARSE:fine question``).

    Raises:
        ValueError: a line that is not ``CODE:fine text`` with a known coarse code.
    """
    texts, labels = [], []
    with open(file, encoding="latin-1") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            head, _, question = line.strip().partition(" ")
            code = head.split(":", 1)[0]
            if ":" not in head or code not in TREC_CODES or not question.strip():
                raise ValueError(
                    f"{str(file)!r} line {n} is not a TREC label line "
                    f"('CODE:fine question', CODE in {TREC_CODES}): {line.strip()[:60]!r}"
                )
            texts.append(" ".join(question.split()))
            labels.append(TREC_CODES.index(code))
    return texts, labels


def load_trec(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """TREC question classification (Li & Roth 2002), 6 coarse classes, from its files.

    Args:
        path: directory holding ``train_5500.label`` and ``TREC_10.label`` (default
            ``$DPAUDIT_DATA_DIR/trec``).

    Returns:
        The text :class:`~dpaudit.data.Dataset` (``TREC_10`` is the test split).

    Raises:
        MissingDatasetError: no directory or missing files.
        ValueError: malformed lines.
    """
    d = _user_dir(path, "trec", ("train_5500.label", "TREC_10.label"))
    return _dataset(
        "trec",
        read_trec(d / "train_5500.label"),
        read_trec(d / "TREC_10.label"),
        TREC_CLASSES,
        str(d),
    )


# --------------------------------------------------------------------------------- DBPedia


def read_dbpedia(file: str | os.PathLike[str]) -> tuple[list[str], list[int]]:
    """Texts (title + abstract) and labels (0–13) of a DBPedia CSV of Zhang et al. 2015.

    Raises:
        ValueError: a row other than (class index 1–14, title, abstract).
    """
    texts, labels = [], []
    valid = {str(i) for i in range(1, 15)}
    with open(file, encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh), 1):
            if len(row) != 3 or row[0] not in valid:
                raise ValueError(
                    f"{str(file)!r} row {n} is not a DBPedia row (class index 1-14, title, "
                    f"abstract): {row[:3]!r}"
                )
            texts.append(" ".join(f"{row[1]} {row[2]}".split()))
            labels.append(int(row[0]) - 1)
    return texts, labels


def load_dbpedia(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """DBPedia ontology classification (Zhang et al. 2015, arXiv:1509.01626), 14 classes.

    Args:
        path: directory holding ``train.csv`` and ``test.csv`` (default
            ``$DPAUDIT_DATA_DIR/dbpedia``).

    Returns:
        The text :class:`~dpaudit.data.Dataset`.

    Raises:
        MissingDatasetError: no directory or missing files.
        ValueError: malformed rows.
    """
    d = _user_dir(path, "dbpedia", ("train.csv", "test.csv"))
    return _dataset(
        "dbpedia",
        read_dbpedia(d / "train.csv"),
        read_dbpedia(d / "test.csv"),
        DBPEDIA_CLASSES,
        str(d),
    )


# ------------------------------------------------------------------- WordNet, 4 categories


def load_wordnet_nouns_4(
    *, test_fraction: float = 0.2, seed: RngLike = 0, path: str | os.PathLike[str] | None = None
) -> Dataset:
    """WordNet noun definitions of four categories (animal, artifact, person, plant): the
    offline 4-class AG News substitute, named ``"wordnet-nouns-4"``
    (:func:`dpaudit.data.load_wordnet_nouns` with ``categories=WORDNET_4_CATEGORIES``).

    Raises:
        MissingDatasetError: Debian ``wordnet-base`` is not installed.
        ValueError: bad ``test_fraction``.
    """
    ds = load_wordnet_nouns(
        categories=WORDNET_4_CATEGORIES, test_fraction=test_fraction, seed=seed, path=path
    )
    return dataclasses.replace(ds, name="wordnet-nouns-4")


#: Loaders of the PromptPATE text datasets by name.
PROMPT_TEXT_LOADERS: dict[str, Callable[..., Any]] = {
    "trec": load_trec,
    "dbpedia": load_dbpedia,
    "wordnet-nouns-4": load_wordnet_nouns_4,
}
