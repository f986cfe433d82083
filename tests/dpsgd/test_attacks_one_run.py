"""Canaries, membership scores and the quantile-regression attack (reference values)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from dpaudit.attacks import (
    CANARY_KINDS,
    QMIASettings,
    binary_logit_score,
    default_quantile_levels,
    draw_canaries,
    draw_inclusions,
    gaussian_member_score,
    gaussian_nll,
    gaussian_quantile,
    logit_margin,
    logit_minus_others,
    membership_score,
    negative_loss,
    one_run_game,
    pinball_loss,
    pinball_membership,
    split_pool,
)

# ------------------------------------------------------------------- reference values


def test_hinge_reference_values():
    # Logits (2.0, 0.5, 1.2): hinge 0.8 for y = 0, -1.5 for y = 1.
    z = [[2.0, 0.5, 1.2], [2.0, 0.5, 1.2]]
    np.testing.assert_allclose(logit_margin(z, [0, 1]), [0.8, -1.5], atol=1e-12)
    np.testing.assert_allclose(logit_minus_others(z, [0, 2]), [0.3, -1.3], atol=1e-12)
    np.testing.assert_allclose(
        negative_loss(z, [1, 2]), -(special.logsumexp(z[0]) - np.array([0.5, 1.2])), atol=1e-12
    )
    assert membership_score(z, [0, 1], "margin").tolist() == logit_margin(z, [0, 1]).tolist()


def test_binary_score_is_the_two_class_margin():
    p = np.array([0.9, 0.2, 0.6])
    y = np.array([1, 1, 0])
    logits = np.stack([np.zeros(3), special.logit(p)], axis=1)
    np.testing.assert_allclose(binary_logit_score(p, y), logit_margin(logits, y), atol=1e-12)


def test_gaussian_head_reference_values():
    # mu = 0.5, log sigma = -0.3, s = 1.2: NLL 0.1464191061, member score 0.8276453317,
    # q_0.99 = 2.2234008927.
    assert gaussian_nll(0.5, -0.3, 1.2) == pytest.approx(0.1464191061, abs=1e-10)
    assert gaussian_member_score(1.2, 0.5, -0.3) == pytest.approx(0.8276453317, abs=1e-10)
    assert gaussian_quantile(0.5, -0.3, 0.99) == pytest.approx(2.2234008927, abs=1e-10)


def test_pinball_reference_values():
    # tau = 0.9, target 1.0: 0.54 at prediction 0.4, 0.05 at 1.5.
    assert pinball_loss(0.4, 1.0, 0.9) == pytest.approx(0.54, abs=1e-12)
    assert pinball_loss(1.5, 1.0, 0.9) == pytest.approx(0.05, abs=1e-12)


def test_default_levels():
    lv = default_quantile_levels()
    ref = np.sort(1.0 - np.logspace(-4, 0, 41))
    np.testing.assert_array_equal(lv, ref[ref > 0])


def test_pinball_membership_against_naive_interpolation():
    g = np.random.default_rng(0)
    levels = default_quantile_levels(11)
    q = np.sort(g.normal(size=(50, levels.size)), axis=1)
    s = g.normal(size=50) * 1.5
    got = pinball_membership(q[:, ::-1], levels, s)  # unsorted input is sorted
    for i in range(50):
        inside = q[i, 0] <= s[i] <= q[i, -1]
        if inside:
            assert got.probability[i] == pytest.approx(np.interp(s[i], q[i], levels), abs=1e-12)
            assert got.z[i] == pytest.approx(special.ndtri(got.probability[i]), abs=1e-9)
        else:
            assert got.probability[i] in (levels[0], levels[-1])
            assert (got.z[i] > special.ndtri(levels[-1])) == (s[i] > q[i, -1])
    order = np.argsort(s)
    row = np.tile(q[0], (50, 1))
    assert np.all(np.diff(pinball_membership(row, levels, s[order]).z) >= 0)  # monotone in s


# ---------------------------------------------------------------------------- canaries


def test_canary_kinds_and_inclusions():
    X = np.random.default_rng(0).random((40, 5))
    y = np.arange(40) % 4
    for kind in CANARY_KINDS:
        c = draw_canaries(X, y, 10, num_classes=4, kind=kind, rng=1)
        assert c.X.shape == (10, 5) and c.labels.shape == (10,)
        if kind == "flipped":
            assert np.all(c.labels != c.true_labels)
        if kind in ("data", "flipped"):
            np.testing.assert_array_equal(c.X, X[c.source].astype(np.float32))
            np.testing.assert_array_equal(c.true_labels, y[c.source])
        if kind == "signs":
            assert set(np.unique(c.X)) == {-1.0, 1.0}
    inc = draw_inclusions(20000, rng=0)
    assert abs(inc.mean() - 0.5) < 0.02
    game = one_run_game(X, y, 30, num_classes=4, rng=3)
    assert game.num_canaries == 30 and game.num_included == int(game.included.sum())
    game2 = one_run_game(X, y, 30, num_classes=4, rng=3)
    np.testing.assert_array_equal(game.included, game2.included)


def test_split_pool_is_disjoint():
    parts = split_pool(100, {"a": 30, "b": 50, "c": 0}, rng=0)
    together = np.concatenate(list(parts.values()))
    assert together.size == np.unique(together).size == 80
    with pytest.raises(ValueError, match="the pool has 100"):
        split_pool(100, {"a": 60, "b": 50}, rng=0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: draw_canaries(np.zeros((5, 2)), np.zeros(5, int), 0, num_classes=2), "positive"),
        (lambda: draw_canaries(np.zeros((5, 2)), np.zeros(5, int), 6, num_classes=2), "exceeds"),
        (lambda: draw_canaries(np.zeros((5, 2)), np.zeros(5, int), 2, num_classes=2, kind="x"),
         "kind"),
        (lambda: draw_inclusions(10, inclusion_probability=1.0), "inclusion_probability"),
        (lambda: draw_inclusions(10, inclusion_probability=0.0), "inclusion_probability"),
        (lambda: draw_inclusions(-1), "non-negative"),
        (lambda: logit_margin([[1.0, 2.0]], [0, 1]), "labels must have shape"),
        (lambda: logit_margin([[1.0, np.nan]], [0]), "finite"),
        (lambda: membership_score([[1.0, 2.0]], [0], "auc"), "score"),
        (lambda: binary_logit_score([1.0], [1]), r"\(0, 1\)"),
    ],
)  # fmt: skip
def test_bad_inputs(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# --------------------------------------------------------------------------------- QMIA


def _heteroscedastic(n: int, seed: int):
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, 4)).astype(np.float32)
    y = g.integers(0, 2, n)
    mu = 2.0 * X[:, 0] + (2 * y - 1)
    sigma = np.exp(0.5 * X[:, 1])
    return X, y, mu + sigma * g.normal(size=n), mu, sigma


def test_gaussian_head_learns_mean_and_scale_and_is_calibrated():
    pytest.importorskip("torch")
    from dpaudit.attacks import fit_qmia

    X, y, s, _, _ = _heteroscedastic(3000, 0)
    fit = fit_qmia(X, y, s, num_classes=2, settings=QMIASettings(hidden=(64, 64), epochs=25),
                   rng=0)  # fmt: skip
    Xt, yt, st, mu, sigma = _heteroscedastic(2000, 1)
    params = fit.predict(Xt, yt)
    assert np.corrcoef(params[:, 0], mu)[0, 1] > 0.95
    assert np.corrcoef(params[:, 1], np.log(sigma))[0, 1] > 0.8
    q = fit.membership(Xt, yt, st).probability  # fresh non-members: q ~ U(0, 1)
    assert stats.kstest(q, "uniform").statistic < 0.06
    assert fit.best_epoch >= 1 and len(fit.validation_losses) >= fit.best_epoch
    again = fit_qmia(X, y, s, num_classes=2, settings=QMIASettings(hidden=(64, 64), epochs=25),
                     rng=0)  # fmt: skip
    np.testing.assert_array_equal(again.predict(Xt[:5], yt[:5]), params[:5])


def test_pinball_head_with_scikit_learn_regressor_beats_global_threshold():
    pytest.importorskip("sklearn")
    from sklearn.ensemble import HistGradientBoostingRegressor

    from dpaudit.attacks import fit_qmia

    X, y, s, _, _ = _heteroscedastic(1500, 2)
    est = HistGradientBoostingRegressor(loss="quantile", max_iter=60, random_state=0)
    fit = fit_qmia(X, y, s, num_classes=2, settings=QMIASettings(head="pinball", num_levels=9),
                   estimator=est, rng=0)  # fmt: skip
    assert fit.regressor == "HistGradientBoostingRegressor" and fit.levels.size == 8
    Xt, yt, st, _, sigma = _heteroscedastic(2000, 3)
    member = st + 1.0 * sigma  # members score one noise sd higher
    z_in = fit.membership(Xt, yt, member).z
    z_out = fit.membership(Xt, yt, st).z
    auc_qmia = stats.mannwhitneyu(z_in, z_out).statistic / z_in.size**2
    auc_global = stats.mannwhitneyu(member, st).statistic / st.size**2
    assert auc_qmia > auc_global + 0.1


def test_qmia_bad_inputs():
    from dpaudit.attacks import fit_qmia

    X = np.zeros((20, 3), np.float32)
    with pytest.raises(ValueError, match="head='pinball'"):
        QMIASettings(regressor="hgb")
    with pytest.raises(ValueError, match="num_levels"):
        QMIASettings(num_levels=2)
    with pytest.raises(ValueError, match="validation_fraction"):
        QMIASettings(validation_fraction=1.0)
    with pytest.raises(ValueError, match="shape"):
        fit_qmia(X, np.zeros(20, int), np.zeros(19), num_classes=2)
    with pytest.raises(ValueError, match="finite"):
        fit_qmia(X, np.zeros(20, int), np.full(20, np.nan), num_classes=2)
    with pytest.raises(ValueError, match="too small"):
        fit_qmia(X[:2], np.zeros(2, int), np.zeros(2), num_classes=2)
    with pytest.raises(ValueError, match="needs image_shape"):
        fit_qmia(X, np.zeros(20, int), np.zeros(20), num_classes=2,
                 settings=QMIASettings(regressor="cnn"))  # fmt: skip
    with pytest.raises(ValueError, match="head='pinball'"):
        fit_qmia(X, np.zeros(20, int), np.zeros(20), num_classes=2, estimator=object())


def test_torch_pinball_head_and_cnn_regressor():
    pytest.importorskip("torch")
    from dpaudit.attacks import fit_qmia

    X, y, s, _, _ = _heteroscedastic(2000, 4)
    st_pin = QMIASettings(head="pinball", hidden=(64, 64), epochs=40, learning_rate=3e-3,
                          patience=10)  # fmt: skip
    fit = fit_qmia(X, y, s, num_classes=2, rng=0, settings=st_pin)
    Xt, yt, st, _, _ = _heteroscedastic(2000, 5)
    q = fit.predict(Xt, yt)
    assert q.shape == (2000, 40) and np.all(np.diff(q, axis=1) >= 0)
    below = (st[:, None] <= q).mean(axis=0)  # empirical coverage of each predicted quantile
    assert np.max(np.abs(below - fit.levels)) < 0.06
    g = np.random.default_rng(0)
    imgs = g.random((200, 64)).astype(np.float32)
    cnn = fit_qmia(imgs, g.integers(0, 3, 200), imgs[:, 0] + g.normal(size=200), num_classes=3,
                   image_shape=(8, 8), settings=QMIASettings(epochs=2), rng=0)  # fmt: skip
    assert cnn.regressor == "cnn" and cnn.predict(imgs[:3], [0, 1, 2]).shape == (3, 2)
