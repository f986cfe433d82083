"""CIFAR-10 from the user's python-version batches (dpaudit.data._images)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dpaudit.data import load_cifar10, load_dataset
from dpaudit.errors import MissingDatasetError


def _write_batches(root, n=4):
    d = root / "cifar-10-batches-py"
    d.mkdir()
    gen = np.random.default_rng(0)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = gen.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = gen.integers(0, 10, size=n).tolist()
        (d / name).write_bytes(pickle.dumps({b"data": data, b"labels": labels}))
        batches[name] = (data, labels)
    return d, batches


def test_cifar10_reads_the_batches_in_hwc_order(tmp_path):
    d, batches = _write_batches(tmp_path)
    ds = load_dataset("cifar10", path=tmp_path)  # the parent directory is accepted too
    assert ds.X_train.shape == (20, 3072) and ds.X_test.shape == (4, 3072)
    assert ds.image_shape == (32, 32) and ds.class_names[0] == "airplane"
    raw, labels = batches["data_batch_1"]
    img = ds.X_train[0].reshape(32, 32, 3)
    # pixel (row 2, col 5) of channel c is raw[c * 1024 + 2 * 32 + 5]
    for c in range(3):
        assert img[2, 5, c] == pytest.approx(raw[0, c * 1024 + 69] / 255, abs=1e-7)
    assert ds.y_train[: len(labels)].tolist() == labels
    assert load_cifar10(path=d).num_train == 20


def test_cifar10_missing_or_malformed(tmp_path):
    with pytest.raises(MissingDatasetError, match="pass path="):
        load_cifar10()
    with pytest.raises(MissingDatasetError, match="data_batch_1"):
        load_cifar10(path=tmp_path)
    d, _ = _write_batches(tmp_path)
    (d / "test_batch").write_bytes(pickle.dumps({b"nothing": 1}))
    with pytest.raises(ValueError, match="not a CIFAR-10 python batch"):
        load_cifar10(path=d)
