"""CIFAR-10 from its standard files (not shipped offline; the user gives the directory).

Krizhevsky 2009, "Learning Multiple Layers of Features from Tiny Images": 50,000 / 10,000
32×32 colour images, 10 classes; the "python version" archive ``cifar-10-python.tar.gz``
unpacks to ``cifar-10-batches-py`` with pickled batches ``data_batch_1``..``5`` and
``test_batch`` (``data``: uint8 ``(10000, 3072)``, red, green, blue planes of 32×32;
``labels``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpaudit.errors import MissingDatasetError

if TYPE_CHECKING:  # pragma: no cover
    from dpaudit.systems.data import Dataset

__all__ = ["CIFAR10_CLASSES", "IMAGE_LOADERS", "load_cifar10"]

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
        The :class:`~dpaudit.systems.data.Dataset`: rows are (32, 32, 3) images flattened in
        height, width, channel order, scaled to [0, 1] (float32); ``image_shape=(32, 32)``.

    Raises:
        MissingDatasetError: no ``path`` or missing batch files.
        ValueError: a file that is not a CIFAR-10 batch.

    Example:
        >>> ds = load_cifar10(path="/data/cifar-10-batches-py")  # doctest: +SKIP
    """
    from dpaudit.systems.data import Dataset

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


#: Image loaders by dataset name (registered in :func:`dpaudit.systems.data.load_dataset`).
IMAGE_LOADERS: dict[str, Callable[..., Any]] = {"cifar10": load_cifar10}
