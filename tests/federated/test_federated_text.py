"""The shipped text corpora split by source as federated clients: hashed bags of words against a
naive loop, the grouping by movie / document, clients holding whole sources with the test set
on other sources, the audit end to end, and the refusals."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from dpaudit.data import hashed_features, load_text_sources
from dpaudit.errors import MissingDatasetError
from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
    load_clients,
)


def _naive_hashing(texts, d):
    """Weinberger et al. 2009 (arXiv:0902.2206) written out: token t adds ξ(t) to h(t)."""
    out = np.zeros((len(texts), d))
    for i, text in enumerate(texts):
        for token in re.findall(r"[a-z0-9]+", text.lower()):
            h = zlib.crc32(token.encode("utf-8"))
            out[i, h % d] += 1.0 if h >> 31 else -1.0
    out = np.sign(out) * np.log1p(np.abs(out))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def test_hashed_features_match_a_naive_loop():
    texts = ["The cat sat on the mat.", "", "a b c d e f g h i j k", "Dogs, dogs; DOGS!",
             "42 is 42"]  # fmt: skip
    for d in (1, 7, 64):
        np.testing.assert_allclose(hashed_features(texts, d), _naive_hashing(texts, d),
                                   rtol=1e-12, atol=1e-15)  # fmt: skip
    with pytest.raises(ValueError, match="dimension"):
        hashed_features(texts, 0)
    with pytest.raises(ValueError, match="name"):
        load_text_sources("sst2")


def _sources(name):
    try:
        return load_text_sources(name)
    except MissingDatasetError as exc:
        pytest.skip(str(exc))


def test_movie_reviews_are_grouped_by_movie():
    ts = _sources("rotten-tomatoes")
    assert ts.class_names == ("rotten", "fresh") and ts.num_sources == 508
    assert ts.texts.size == ts.labels.size == ts.sources.size == 12790
    counts = np.bincount(ts.sources)
    assert counts.min() >= 1 and counts.max() == 35


def test_wordnet_glosses_are_split_into_their_parts():
    ts = _sources("wordnet-nouns")
    assert ts.num_classes == 26 and ts.num_sources == 82115
    first = ts.texts[ts.sources == 0].tolist()  # entity: "that which is perceived or known ..."
    assert len(first) == 1 and first[0].startswith("that which is perceived")
    parts = ts.texts[:2000].tolist()
    assert all(";" not in t and t[0] != '"' and t[-1] != '"' for t in parts)


def test_clients_hold_whole_sources_and_the_test_set_holds_others():
    ts = _sources("rotten-tomatoes")
    s = FederatedDataSettings(dataset="rotten-tomatoes", num_clients=30, features=64)
    data, (X_test, y_test) = load_clients(s, rng=0)
    again, _ = load_clients(s, rng=0)
    assert data.num_clients == 30 and data.num_features == 64 and data.num_classes == 2
    np.testing.assert_array_equal(data.features[3], again.features[3])
    # each client is one movie: its rows are exactly that movie's texts, hashed
    rows = {tuple(np.round(r, 12)) for r in hashed_features(ts.texts.tolist(), 64)}
    sizes = sorted(int(y.size) for y in data.labels)
    assert sizes == sorted(sizes) and sum(sizes) <= 30 * 35
    assert all(tuple(np.round(r, 12)) in rows for r in data.features[0])
    assert 0 < y_test.size <= 2000 and X_test.shape == (y_test.size, 64)
    with pytest.raises(ValueError, match="num_clients=508"):
        load_clients(FederatedDataSettings(dataset="rotten-tomatoes", num_clients=508,
                                           examples=600), rng=0)  # fmt: skip


def test_audit_on_movie_clients_end_to_end():
    """Rotten Tomatoes, 100 movies as clients, 200 canary clients, every client in each of 5
    rounds (σ = 2.5): valid bounds below the exact ε."""
    _sources("rotten-tomatoes")
    s = FederatedSettings(
        data=FederatedDataSettings(dataset="rotten-tomatoes", num_clients=100, features=256),
        training=FederatedTrainingSettings(rounds=5, sampling="all", clients_per_round=None,
                                           noise_multiplier=2.5),
        canaries=FederatedCanarySettings(count=200),
    )  # fmt: skip
    r = audit_federated(s)
    assert r.detail.real_clients == 100 and r.detail.dimension == 256 * 2 + 2
    assert 0.0 <= r.detail.test_accuracy <= 1.0
    for e in r.entries:
        assert e.lower_bound.epsilon <= e.exact.epsilon <= e.claim.epsilon
