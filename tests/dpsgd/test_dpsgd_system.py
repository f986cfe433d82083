"""The DP-SGD system: claims against Opacus and dp-accounting, training, validation."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

from dpaudit.accounting import mechanism_rdp
from dpaudit.mechanisms import SubsampledGaussian
from dpaudit.systems import DPSGD, SYSTEMS, DPSGDCell, DPSGDSettings, LabelledData, train_dpsgd
from dpaudit.systems.dpsgd import (
    calibrate_noise_multiplier,
    opacus_epsilon,
    opacus_rdp,
)

SMALL = DPSGDSettings(
    model="mlp", hidden=(8,), noise_multiplier=1.0, batch_size=20, steps=15, accountant="rdp"
)
CASES = [(0.01, 1.1, 1000), (0.0256, 0.62, 195), (0.1, 2.0, 300)]


def _data(n: int = 120, d: int = 6, k: int = 3, seed: int = 0) -> LabelledData:
    g = np.random.default_rng(seed)
    return LabelledData(g.normal(size=(n, d)), g.integers(0, k, n), k)


def _integer_orders() -> np.ndarray:
    from opacus.accountants import RDPAccountant

    lam = np.asarray(RDPAccountant.DEFAULT_ALPHAS, dtype=float)
    return lam[lam == np.round(lam)]


# ------------------------------------------------------------------------------- claims


@pytest.mark.parametrize(("q", "sigma", "steps"), CASES)
def test_rdp_matches_opacus_at_integer_orders(q, sigma, steps):
    lam = _integer_orders()
    ours = mechanism_rdp(SubsampledGaussian(q, sigma, steps), lam)
    theirs = opacus_rdp(q, sigma, steps, lam).epsilons
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=0)


@pytest.mark.parametrize(("q", "sigma", "steps"), CASES)
def test_rdp_matches_dp_accounting_accountant_at_each_order(q, sigma, steps):
    dpa = pytest.importorskip("dp_accounting")
    lam = _integer_orders()[::6]
    ours = mechanism_rdp(SubsampledGaussian(q, sigma, steps), lam)
    event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma))
    for alpha, rho in zip(lam, ours, strict=True):
        acct = dpa.rdp.RdpAccountant(orders=[float(alpha)])
        acct.compose(event, steps)
        theirs = acct.get_epsilon(1e-5)
        mine = dpa.rdp.compute_epsilon([float(alpha)], [float(rho)], 1e-5)[0]
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)


def test_fractional_orders_opacus_exact_dp_accounting_conservative():
    mpmath = pytest.importorskip("mpmath")
    q, z, alpha = 0.05, 2.0, 1.1
    mpmath.mp.dps = 30

    def integrand(x):
        return mpmath.npdf(x, 0, z) * ((1 - q) + q * mpmath.exp((2 * x - 1) / (2 * z * z))) ** alpha

    exact = float(mpmath.log(mpmath.quad(integrand, [-mpmath.inf, 0, mpmath.inf])) / (alpha - 1))
    opacus = opacus_rdp(q, z, 1, [alpha]).epsilons[0]
    dpaudit_value = mechanism_rdp(SubsampledGaussian(q, z, 1), [alpha])[0]
    np.testing.assert_allclose(opacus, exact, rtol=1e-6)
    assert dpaudit_value >= exact  # dp-accounting's fractional series sums |terms|: an upper bound


def test_claims_order_and_values():
    system = DPSGD(dataclasses.replace(SMALL, steps=400, batch_size=50), dataset_size=5000)
    claims = system.claims()
    assert [c.analysis for c in claims] == [
        "opacus (RDP)",
        "opacus (PRV)",
        "dpaudit accounting (RDP)",
    ]
    m = system.mechanism
    assert (m.sampling_rate, m.noise_multiplier, m.steps) == (0.01, 1.0, 400)
    rdp_eps = opacus_epsilon(0.01, 1.0, 400, 1e-5, "rdp")
    assert claims[0].epsilon == rdp_eps
    assert claims[1].epsilon < rdp_eps  # PRV is tighter than RDP
    # dpaudit's grid contains Opacus' orders: within 2 % of Opacus (fractional orders differ)
    np.testing.assert_allclose(claims[2].epsilon, rdp_eps, rtol=0.02)
    assert system.claim().analysis == "opacus (RDP)"


def test_target_epsilon_is_calibrated_by_the_accountant():
    s = DPSGDSettings(model="mlp", target_epsilon=2.0, batch_size=50, steps=300, accountant="rdp")
    system = DPSGD(s, dataset_size=5000)
    eps = system.claim().epsilon
    assert 2.0 - 0.05 <= eps <= 2.0
    assert system.noise_multiplier == calibrate_noise_multiplier(2.0, 1e-5, 0.01, 300, "rdp")
    assert system.training_settings.target_epsilon is None


def test_registered_factory():
    system = SYSTEMS.get("dp-sgd")(DPSGDCell(SMALL, dataset_size=100))
    assert isinstance(system, DPSGD)
    assert system.name == "dp-sgd" and system.dataset_size == 100
    with pytest.raises(TypeError, match="settings must be a DPSGDCell"):
        SYSTEMS.get("dp-sgd")(SMALL)


# ------------------------------------------------------------------------------ training


def test_same_seed_same_model_different_seed_different_model():
    data = _data()
    a = train_dpsgd(data, None, None, SMALL, rng=7)
    b = train_dpsgd(data, None, None, SMALL, rng=7)
    c = train_dpsgd(data, None, None, SMALL, rng=8)
    for k in a.state:
        np.testing.assert_array_equal(a.state[k], b.state[k])
    assert any(not np.array_equal(a.state[k], c.state[k]) for k in a.state)
    assert a.steps == 15 and a.sampling_rate == pytest.approx(20 / 120)


def test_canaries_are_trained_only_when_included_and_q_is_fixed():
    data, canaries = _data(100), _data(40, seed=1)
    mask = np.arange(40) % 2 == 0
    t = train_dpsgd(data, canaries, mask, SMALL, rng=0)
    assert t.num_members == 120
    assert t.sampling_rate == pytest.approx(20 / 120)  # nominal 100 + 40/2, not realised 120
    t2 = train_dpsgd(data, canaries, mask.astype(int), SMALL, rng=0, nominal_size=200)
    assert t2.sampling_rate == pytest.approx(0.1)


def test_empty_poisson_batches_still_release_noise():
    s = dataclasses.replace(SMALL, batch_size=1, steps=5)
    t = train_dpsgd(_data(3), None, None, s, rng=0, nominal_size=10_000)
    init = train_dpsgd(_data(3), None, None, dataclasses.replace(s, steps=1), rng=0,
                       nominal_size=10_000)  # fmt: skip
    assert any(not np.array_equal(t.state[k], init.state[k]) for k in t.state)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _numpy_mlp(state: dict, x: np.ndarray) -> np.ndarray:
    """Independent oracle: the one-hidden-layer ReLU MLP's forward pass in float64 numpy."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}
    h = _relu(x @ w["0.weight"].T + w["0.bias"])
    return h @ w["2.weight"].T + w["2.bias"]


def _conv3x3(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """(B, C, H, W) → (B, F, H, W): 3×3 cross-correlation with zero padding 1."""
    _, _, h, wd = x.shape
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((x.shape[0], weight.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("bchw,fc->bfhw", pad[:, :, i : i + h, j : j + wd], weight[:, :, i, j])
    return out + bias[None, :, None, None]


def _numpy_cnn(state: dict, x: np.ndarray, image_shape: tuple[int, int]) -> np.ndarray:
    """Independent oracle of the LeNet-style CNN (conv-ReLU-maxpool2, conv-ReLU, 4×4 average
    pool — the identity on a 4×4 map —, flatten, dense-ReLU, dense) for 8×8 inputs."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}
    a = x.reshape(-1, 1, *image_shape)
    a = _relu(_conv3x3(a, w["0.weight"], w["0.bias"]))
    b, c, h, wd = a.shape
    a = a.reshape(b, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    a = _relu(_conv3x3(a, w["3.weight"], w["3.bias"]))
    assert a.shape[2:] == (4, 4)
    a = _relu(a.reshape(b, -1) @ w["7.weight"].T + w["7.bias"])
    return a @ w["9.weight"].T + w["9.bias"]


def test_trained_model_pickles_and_scores():
    data = _data()
    t = train_dpsgd(data, None, None, SMALL, rng=0)
    back = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(back.logits(data.X[:5]), t.logits(data.X[:5]))
    x32 = data.X.astype(np.float32).astype(np.float64)  # the network reads float32 rows
    np.testing.assert_allclose(t.logits(data.X), _numpy_mlp(t.state, x32), rtol=1e-5, atol=1e-5)
    # and training moved the weights: the logits are not those of the initial network
    init = train_dpsgd(data, None, None, dataclasses.replace(SMALL, steps=1), rng=0)
    assert np.abs(t.logits(data.X) - init.logits(data.X)).max() > 1e-3
    with pytest.raises(ValueError, match="columns"):
        t.logits(np.zeros((2, 5)))


def test_cnn_on_images_through_the_system():
    g = np.random.default_rng(0)
    data = LabelledData(g.random((60, 64)), g.integers(0, 10, 60), 10, image_shape=(8, 8))
    s = DPSGDSettings(model="cnn", noise_multiplier=1.0, batch_size=16, steps=3)
    t = DPSGD(s, dataset_size=60).train(data, rng=0)
    x32 = data.X[:4].astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(
        t.logits(data.X[:4]), _numpy_cnn(t.state, x32, (8, 8)), rtol=1e-5, atol=1e-3
    )  # float32 network, logits up to ~200: float32 rounding is ~1e-5 of that


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"noise_multiplier": 0.0}, "noise_multiplier"),
        ({"noise_multiplier": -1.0}, "noise_multiplier"),
        ({"noise_multiplier": None, "target_epsilon": None}, "noise_multiplier or target"),
        ({"target_epsilon": 0.0}, "target_epsilon"),
        ({"batch_size": 0}, "batch_size"),
        ({"steps": 0}, "steps"),
        ({"epochs": -1.0}, "epochs"),
        ({"delta": 0.0}, "delta"),
        ({"model": "resnet"}, "model"),
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"accountant": "gdp"}, "accountant"),
        ({"max_grad_norm": 0.0}, "max_grad_norm"),
        ({"momentum": 1.0}, "momentum"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_bad_settings(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        dataclasses.replace(SMALL, **kwargs)


def test_bad_inputs_before_training():
    data, canaries = _data(50), _data(10, seed=1)
    with pytest.raises(ValueError, match="one entry per canary"):
        train_dpsgd(data, canaries, np.ones(9, bool), SMALL, rng=0)
    with pytest.raises(ValueError, match="boolean"):
        train_dpsgd(data, canaries, np.full(10, 2), SMALL, rng=0)
    with pytest.raises(ValueError, match="required with canaries"):
        train_dpsgd(data, canaries, None, SMALL, rng=0)
    with pytest.raises(ValueError, match="without canaries"):
        train_dpsgd(data, None, np.ones(10, bool), SMALL, rng=0)
    with pytest.raises(ValueError, match="exceeds the dataset size"):
        train_dpsgd(data, None, None, SMALL, rng=0, nominal_size=10)
    with pytest.raises(ValueError, match="noise_multiplier must be set"):
        train_dpsgd(data, None, None, DPSGDSettings(model="mlp"), rng=0)
    with pytest.raises(ValueError, match="needs image data"):
        train_dpsgd(data, None, None, dataclasses.replace(SMALL, model="cnn"), rng=0)
    with pytest.raises(TypeError, match="LabelledData"):
        train_dpsgd(data.X, None, None, SMALL, rng=0)
    with pytest.raises(ValueError, match="dataset_size"):
        DPSGD(SMALL, dataset_size=0)


def test_labelled_data_validation():
    with pytest.raises(ValueError, match="labels in"):
        LabelledData(np.zeros((3, 2)), np.array([0, 1, 5]), 3)
    with pytest.raises(ValueError, match="finite"):
        LabelledData(np.array([[0.0, np.nan]]), np.array([0]), 2)
    with pytest.raises(ValueError, match="does not match"):
        LabelledData(np.zeros((2, 10)), np.array([0, 1]), 2, image_shape=(3, 3))
    with pytest.raises(ValueError, match="shape"):
        LabelledData(np.zeros((2, 3)), np.array([0]), 2)
