"""The dataset registry: every offline dataset by name, subsets, and feature datasets.

:func:`load_dataset` dispatches a name of :data:`DATASET_NAMES` to its loader (images,
tabular, text, and the feature datasets of :func:`feature_dataset`: a base dataset whose rows
are replaced by the embeddings of :mod:`dpaudit.data.features`); :func:`load_subset` keeps a
seeded subset of the rows. The feature datasets load their base by name, so they live in the
module of the registry (no import cycle).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._validate import check_choice
from dpaudit.data._dataset import Dataset
from dpaudit.data._images import IMAGE_LOADERS, load_digits, load_fashion_mnist, load_mnist_5k
from dpaudit.data._tabular import load_adult
from dpaudit.data._text import TEXT_LOADERS
from dpaudit.data.features import EXTRACTORS, embed_images, embed_texts

__all__ = [
    "DATASET_NAMES",
    "FEATURE_LOADERS",
    "WORDNET_FEATURE_CATEGORIES",
    "feature_dataset",
    "load_dataset",
    "load_subset",
]


# --------------------------------------------------------------------------- feature datasets


@dataclasses.dataclass(frozen=True)
class _FeatureSpec:
    base: str
    extractor: str


def feature_dataset(base: Any, extractor: str, *, name: str | None = None, **kwargs: Any) -> Any:
    """A dataset whose rows are replaced by their features (train and test).

    Args:
        base: a :class:`dpaudit.data.Dataset` or a dataset name (loaded with
            ``kwargs``).
        extractor: one of :data:`EXTRACTORS` (text datasets: ``minilm-int8``/``minilm``;
            image datasets: ``vit-s14``/``pixels``).
        name: the new dataset's name (default ``"<base>-<short extractor>"``).

    Returns:
        The :class:`~dpaudit.data.Dataset` with float32 feature rows.

    Raises:
        ValueError: a text extractor for images or the reverse.
    """
    check_choice("extractor", extractor, EXTRACTORS)
    ds = load_dataset(base, **kwargs) if isinstance(base, str) else base
    is_text = np.asarray(ds.X_train).dtype == object
    if is_text != extractor.startswith("minilm"):
        kind = "text" if is_text else "image"
        raise ValueError(f"extractor {extractor!r} does not apply to the {kind} dataset {ds.name}")
    if is_text:
        tr = embed_texts(ds.X_train.tolist(), model=extractor)
        te = embed_texts(ds.X_test.tolist(), model=extractor)
    else:
        if ds.image_shape is None and extractor != "pixels":
            raise ValueError(f"dataset {ds.name} has no image_shape; use extractor='pixels'")
        shape = ds.image_shape
        tr = embed_images(ds.X_train, image_shape=shape, model=extractor)
        te = embed_images(ds.X_test, image_shape=shape, model=extractor)
    short = {"minilm-int8": "minilm", "minilm": "minilm-st", "vit-s14": "vit", "pixels": "pixels"}
    return Dataset(
        name=name or f"{ds.name}-{short[extractor]}",
        X_train=np.array(tr),
        y_train=np.array(ds.y_train),
        X_test=np.array(te),
        y_test=np.array(ds.y_test),
        num_classes=ds.num_classes,
        class_names=ds.class_names,
        source=f"{ds.source} → {extractor}",
        split=ds.split,
    )


def _loader(base: str, extractor: str, name: str, defaults: dict[str, Any]) -> Callable[..., Any]:
    def load(**kwargs: Any) -> Any:
        return feature_dataset(base, extractor, name=name, **{**defaults, **kwargs})

    load.__name__ = f"load_{name.replace('-', '_')}"
    load.__doc__ = (
        f"The {base!r} dataset as {extractor} features (:func:`feature_dataset`); keyword "
        f"arguments go to the {base!r} loader (defaults: {defaults or 'none'})."
    )
    return load


#: The four WordNet categories of ``"wordnet-nouns-minilm"`` (an AG News-sized 4-class task).
WORDNET_FEATURE_CATEGORIES = ("noun.animal", "noun.artifact", "noun.person", "noun.plant")

#: Feature datasets by name (registered in :func:`load_dataset`).
#: ``fashion-mnist-vit`` defaults to a seeded 3,000 / 1,100 subset (ViT-S/14 costs about
#: 0.1–0.2 CPU-seconds per image; pass ``n_train=None, n_test=None`` for all 70,000).
FEATURE_LOADERS: dict[str, Callable[..., Any]] = {
    name: _loader(base, extractor, name, defaults)
    for name, base, extractor, defaults in (
        ("rotten-tomatoes-minilm", "rotten-tomatoes", "minilm-int8", {}),
        (
            "wordnet-nouns-minilm",
            "wordnet-nouns",
            "minilm-int8",
            {"categories": WORDNET_FEATURE_CATEGORIES},
        ),
        ("sst2-minilm", "sst2", "minilm-int8", {}),
        ("ag-news-minilm", "ag-news", "minilm-int8", {}),
        ("fashion-mnist-vit", "fashion-mnist", "vit-s14", {"n_train": 3_000, "n_test": 1_100}),
        ("cifar10-vit", "cifar10", "vit-s14", {}),
    )
}


# --------------------------------------------------------------------------- registry

DATASET_NAMES: tuple[str, ...] = (
    *("digits", "mnist-5k", "fashion-mnist", "adult"),
    *TEXT_LOADERS,
    *IMAGE_LOADERS,
    *FEATURE_LOADERS,
)
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
