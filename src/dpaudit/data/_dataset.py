"""The dataset type every offline loader returns, and the helpers the loaders share.

The bottom of :mod:`dpaudit.data`: :class:`Dataset` (a small frozen train/test split whose
arrays are read-only) and the seeded split / subset helpers. Every loader module imports this
one and nothing imports the loaders from here, so the package has no import cycle.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from dpaudit._rng import as_generator
from dpaudit._typing import RngLike
from dpaudit._validate import check_in_range, check_nonneg_int

__all__ = ["Dataset"]

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
