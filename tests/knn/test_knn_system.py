"""The Private-kNN system: validation, claim, training phase, registry
(dpaudit.systems.private_prediction.knn)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit import _settings
from dpaudit.accounting import DEFAULT_ORDERS, subsampled_gaussian_rdp
from dpaudit.experiments.private_prediction import PrivatePredictionSettings
from dpaudit.mechanisms import GNMax
from dpaudit.systems import SYSTEMS, PrivateKNN, PrivateKNNOptions, PrivatePredictionSystem
from dpaudit.systems.private_prediction.knn import knn_context, subsampled_gaussian_claim


def _data(n=600, seed=0):
    gen = np.random.default_rng(seed)
    x = gen.normal(size=(n, 4))
    y = (x[:, 0] + 0.5 * gen.normal(size=n) > 0).astype(np.int64)
    return x, y


def test_is_a_private_prediction_system_and_registered():
    knn = PrivateKNN(GNMax(20.0))
    assert isinstance(knn, PrivatePredictionSystem)
    assert knn.name == "private-knn" and knn.k == 200 and knn.sampling_rate == 0.2
    assert knn.histogram_model == "knn-subsample" and knn.claim_analysis == "data-independent"
    s = PrivatePredictionSettings.of(systems=("private-knn",), sigma=30.0)
    s = _settings.apply_overrides(
        s, {"system.options": {"private-knn": {"k": 50, "sampling_rate": 0.1, "model": "paper"}}}
    )
    built = SYSTEMS.get("private-knn")(s.system)
    assert built.k == 50 and built.sampling_rate == 0.1 and built.mechanism.sigma == 30.0
    assert built.histogram_model == "knn-multinomial"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"sampling_rate": 0.0}, "sampling_rate"),
        ({"sampling_rate": 1.2}, "sampling_rate"),
        ({"k": 0}, "k"),
        ({"features": "tsne"}, "features"),
        ({"sampling": "bootstrap"}, "sampling"),
        ({"model": "gaussian"}, "model"),
        ({"model_draws": 0}, "model_draws"),
        ({"sampling": "with-replacement", "model": "paper"}, "Poisson"),
        ({"kk": 3}, "unknown setting 'kk'"),
        ({"k": "200"}, "integer"),
    ],
)
def test_options_are_parsed_strictly(options, match):
    with pytest.raises(ValueError, match=match):
        _settings.from_mapping(PrivateKNNOptions, options)


def test_bad_mechanism_and_sigma():
    with pytest.raises(TypeError, match="GNMax"):
        PrivateKNN(object())
    with pytest.raises(ValueError, match="sigma"):
        PrivateKNN(GNMax(0.0))
    with pytest.raises(ValueError, match="sigma"):
        PrivateKNN(GNMax(-1.0))
    with pytest.raises(TypeError, match="PrivateKNNOptions"):
        PrivateKNN(GNMax(1.0), {"k": 3})


def test_bad_training_input_fails_before_any_work():
    x, y = _data()
    knn = PrivateKNN(GNMax(5.0), PrivateKNNOptions(k=20, sampling_rate=0.2))
    with pytest.raises(ValueError, match="larger than the expected subsample"):
        PrivateKNN(GNMax(5.0), PrivateKNNOptions(k=200, sampling_rate=0.2)).train(
            x, y, x[:3], instantiations=1
        )
    with pytest.raises(ValueError, match="too close to the expected subsample"):
        PrivateKNN(GNMax(5.0), PrivateKNNOptions(k=110, sampling_rate=0.2)).train(
            x, y, x[:3], instantiations=1
        )
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        knn.train(bad, y, x[:3], instantiations=1)
    with pytest.raises(ValueError, match="4 feature columns"):
        knn.train(x, y, x[:3, :2], instantiations=1)
    with pytest.raises(ValueError, match="finite"):
        knn.train(x, y, np.full((2, 4), np.inf), instantiations=1)
    with pytest.raises(TypeError, match="embed text"):
        knn.train(np.array(["a", "b"], dtype=object)[:, None], y[:2], x[:1], instantiations=1)
    with pytest.raises(ValueError, match="shape"):
        knn.train(x, y[:-1], x[:3], instantiations=1)
    with pytest.raises(ValueError, match="labels"):
        knn.train(x, y - 1, x[:3], instantiations=1)
    with pytest.raises(ValueError, match="instantiations"):
        knn.train(x, y, x[:3], instantiations=0)


def test_claim_is_the_subsampled_gaussian():
    knn = PrivateKNN(GNMax(30.0), PrivateKNNOptions(sampling_rate=0.2))
    integer = np.array([2.0, 3.0, 8.0, 32.0, 256.0])
    ref = subsampled_gaussian_rdp(0.2, 30.0 / np.sqrt(2.0), integer).epsilons
    np.testing.assert_allclose(knn.claim(integer).rdp.epsilons, ref, rtol=1e-12)
    full = knn.claim().rdp.epsilons
    assert np.all(np.diff(full) >= 0) and np.all(np.isfinite(full))
    np.testing.assert_array_equal(
        knn.query_rdp(integer, analysis="data-dependent", votes=np.ones((1, 2))),
        knn.query_rdp(integer),
    )
    with pytest.raises(ValueError, match="analysis"):
        knn.query_rdp(integer, analysis="exact")
    # reference values of Mironov, Talwar, Zhang 2019 (arXiv:1908.10530): ρ(q=0.01, z=1.1), α=2, 8
    sg = PrivateKNN(GNMax(1.1 * np.sqrt(2.0)), PrivateKNNOptions(k=1, sampling_rate=0.01))
    np.testing.assert_allclose(sg.query_rdp([2.0, 8.0]), [1.2851008e-4, 5.8407034e-4], rtol=1e-7)
    c = knn.claim(delta=1e-6)
    assert c.epsilon > 0 and c.conversion == "balle2020" and "1908.10530" in c.source


def test_monotone_claim_repairs_only_non_monotone_orders():
    lam = tuple(float(a) for a in DEFAULT_ORDERS)
    for rate, z in ((0.01, 1.1), (0.2, 30 / np.sqrt(2)), (0.5, 3.5)):
        raw = subsampled_gaussian_rdp(rate, z, np.array(lam)).epsilons
        mono = subsampled_gaussian_claim(rate, z, lam)
        assert np.all(np.diff(mono) >= 0)
        assert np.all(mono <= np.where(np.isfinite(raw), raw, np.inf) + 1e-15)
        integer = np.array(lam) == np.round(lam)
        np.testing.assert_array_equal(mono[integer], raw[integer])
    # the well-behaved case is untouched
    raw = subsampled_gaussian_rdp(0.01, 1.1, np.array(lam)).epsilons
    np.testing.assert_allclose(subsampled_gaussian_claim(0.01, 1.1, lam), raw, rtol=1e-12)


def test_train_and_retrain():
    x, y = _data()
    knn = PrivateKNN(GNMax(5.0), PrivateKNNOptions(k=20, sampling_rate=0.5, model_draws=64))
    q = x[:6] + 0.01
    t = knn.train(x, y, q, instantiations=3, rng=0)
    assert t.predictions.shape == (3, 6, 20) and t.num_points == 600
    assert knn_context(q[-1]) is t
    again = knn.train(x, y, q, instantiations=3, rng=0)
    np.testing.assert_array_equal(again.predictions, t.predictions)
    # a point equal to the query is rank 1 (no training point at distance 0): ν = γ
    nb = knn.retrain(t, q[2:3], [1], retrainings=200, rng=1)
    assert nb[0].ranks.tolist() == [1] and nb[0].changed.shape == (200, 1)
    # natural evaluation rows reuse the training phase's ranked lists
    far = np.full(4, 50.0)
    nb2 = knn.retrain(t, far[None], [0], retrainings=5, eval_rows=[q[:5]], rng=1)
    assert np.all(nb2[0].ranks == t.depth + 1) and not nb2[0].changed.any()
    np.testing.assert_array_equal(nb2[0].neighbour_labels, t.neighbours.labels[:5])
    with pytest.raises(ValueError, match="teachers"):
        knn.retrain(t, q[:1], [0], retrainings=1, teachers=[0])
    with pytest.raises(ValueError, match="labels"):
        knn.retrain(t, q[:1], [7], retrainings=1)
    with pytest.raises(ValueError, match="eval_rows"):
        knn.retrain(t, q[:2], [0, 1], retrainings=1, eval_rows=[q])


def test_pca_and_standardize_features():
    x, y = _data()
    x = np.hstack([x, 100 * x[:, :1]])
    for kind in ("pca", "standardize"):
        knn = PrivateKNN(
            GNMax(5.0), PrivateKNNOptions(k=20, sampling_rate=0.5, features=kind, pca_components=3)
        )
        t = knn.train(x, y, x[:4], instantiations=1, rng=0)
        assert t.features.shape[1] == (3 if kind == "pca" else 5)
        w = np.array([0.25, 0.75])
        np.testing.assert_allclose(t.transform((w @ x[:2])[None])[0], w @ t.features[:2], atol=1e-9)


def test_fitted_interface_answers_like_the_noiseless_vote_when_sigma_is_small():
    x, y = _data(n=800)
    knn = PrivateKNN(GNMax(0.01), PrivateKNNOptions(k=40, sampling_rate=0.5))
    api = knn.fit(x, y)
    q = np.array([[3.0, 0, 0, 0], [-3.0, 0, 0, 0]])
    assert api.predict(q, rng=0).tolist() == [1, 0]
    assert api.votes(q, rng=0).sum(axis=1).tolist() == [40, 40]
    poisoned = api.with_point(q[0], 0)
    assert poisoned.features.shape[0] == 801 and poisoned.labels[-1] == 0
    with pytest.raises(ValueError, match="label"):
        api.with_point(q[0], 5)
