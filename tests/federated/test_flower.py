"""Flower's DP strategy wrappers as installed (flwr 1.42, out of process in ``.venvs/flower``):
the claim of Flower's calibration against dp-accounting, the refusals before any process, and,
where ``make venv-flower`` has been run, the audit: consistent with the calibration when every
client reports the same example count, refuted in one run when FedAvg weights the average by
the reported counts, and the zero-update crash of Flower's clipping."""

from __future__ import annotations

import dataclasses
import math
import subprocess

import numpy as np
import pytest

from dpaudit._rng import child_seed
from dpaudit.attacks import draw_canary_clients
from dpaudit.conversions import gdp_epsilon
from dpaudit.errors import MissingDependencyError
from dpaudit.experiments.federated import (
    FederatedCanarySettings,
    FederatedDataSettings,
    FederatedSettings,
    FederatedTrainingSettings,
    audit_federated,
    load_clients,
)
from dpaudit.systems.federated import FLOWER, FlowerCell, FlowerDPFedAvg, dirichlet_split

dpa = pytest.importorskip("dp_accounting")
DELTA = 1e-5
needs_flower = pytest.mark.skipif(
    not FLOWER.available(), reason="Flower's environment is not built: run `make venv-flower`"
)


def test_claim_is_the_replace_one_calibration():
    """All clients every round: the Gaussian with multiplier σ/2 (replacing one clipped update
    moves the sum by up to 2C), T-fold, by dp-accounting's RDP accountant (1 %); the exact ε is
    μ-GDP with μ = 2√T/σ. Flower's fixed-size sampler: dp-accounting's sampling without
    replacement under replace-one."""
    cell = FlowerCell(rounds=5, clients_per_round=50, population=50, sampling="all",
                      noise_multiplier=18.0)  # fmt: skip
    system = FlowerDPFedAvg(cell)
    acct = dpa.rdp.RdpAccountant()
    acct.compose(dpa.GaussianDpEvent(9.0), 5)
    np.testing.assert_allclose(system.claim(delta=DELTA).epsilon, acct.get_epsilon(DELTA),
                               rtol=0.01)  # fmt: skip
    np.testing.assert_allclose(
        system.exact_claim(DELTA).epsilon, gdp_epsilon(2 * math.sqrt(5) / 18.0, DELTA), rtol=1e-12
    )
    fixed = FlowerDPFedAvg(FlowerCell(rounds=20, clients_per_round=10, population=100,
                                      noise_multiplier=1.5))  # fmt: skip
    rel = dpa.NeighboringRelation.REPLACE_ONE
    acct = dpa.rdp.RdpAccountant(neighboring_relation=rel)
    acct.compose(dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(0.75)), 20)
    np.testing.assert_allclose(fixed.claim(delta=DELTA).epsilon, acct.get_epsilon(DELTA),
                               rtol=0.01)  # fmt: skip
    assert fixed.exact_claim(DELTA) is None
    assert fixed.claim(delta=DELTA).analysis.endswith("replace-one")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"sampling": "poisson"}, "sampling"),
     ({"sampling": "fixed", "claim_sampling": "poisson"}, "claim_sampling"),
     ({"sampling": "all", "clients_per_round": 5, "population": 6}, "population"),
     ({"clients_per_round": 7, "population": 6}, "clients_per_round"),
     ({"wrapper": "adaptive"}, "wrapper"), ({"weighting": "size"}, "weighting")],
)  # fmt: skip
def test_cell_refuses_what_flower_does_not_run(kwargs, name):
    """Flower's client manager samples a fixed number of clients: a Poisson sampler, or a claim
    for another sampler, is refused before anything runs."""
    with pytest.raises(ValueError, match=name):
        FlowerCell(**kwargs)


def test_missing_environment_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("DPAUDIT_VENVS", str(tmp_path))
    g = np.random.default_rng(0)
    data = dirichlet_split(g.normal(size=(40, 3)), g.integers(0, 2, 40), 4, alpha=1.0, rng=0)
    system = FlowerDPFedAvg(FlowerCell(rounds=1, clients_per_round=4, population=4,
                                       sampling="all"))  # fmt: skip
    with pytest.raises(MissingDependencyError, match="make venv-flower"):
        system.train(data, rng=0)
    with pytest.raises(ValueError, match="population"):  # bad input first, before the venv
        system.train(dirichlet_split(g.normal(size=(40, 3)), g.integers(0, 2, 40), 5,
                                     alpha=1.0, rng=0), rng=0)  # fmt: skip


def _settings(weighting, wrapper="server-side", *, clients=20, canaries=200, sigma=5.0,
              examples=16, seed=0) -> FederatedSettings:  # fmt: skip
    return FederatedSettings(
        system="flower-dp",
        seed=seed,
        data=FederatedDataSettings(num_clients=clients, examples=20 * clients, features=50),
        training=FederatedTrainingSettings(rounds=5, sampling="all", clients_per_round=None,
                                           noise_multiplier=sigma, wrapper=wrapper,
                                           weighting=weighting),
        canaries=FederatedCanarySettings(count=canaries, examples=examples),
    )  # fmt: skip


@needs_flower
def test_both_wrappers_are_consistent_with_the_calibration_under_equal_weights():
    """Every client reports one example: the server-side and the client-side wrapper (its
    clients through Flower's fixedclipping_mod) give the same run for the same seed, and the
    valid bounds stay below the exact ε (3.85) and the claim (4.16); flwr's version is recorded."""
    server = audit_federated(_settings("uniform"))
    client = audit_federated(_settings("uniform", "client-side"))
    assert server.versions["flwr"] == "1.42.0"
    for a, b in zip(server.entries, client.entries, strict=True):
        assert a.lower_bound.epsilon == b.lower_bound.epsilon
        assert not a.gap.refutes_claim
        assert a.lower_bound.epsilon <= a.exact.epsilon <= a.claim.epsilon
        np.testing.assert_allclose(a.claim.epsilon, 4.162, atol=1e-3)


@needs_flower
@pytest.mark.slow
def test_equal_weights_are_never_refuted_over_seeds():
    for seed in range(1, 11):
        for e in audit_federated(_settings("uniform", seed=seed, canaries=100)).entries:
            assert not e.gap.refutes_claim, (seed, e.adversary, e.lower_bound.epsilon)


@needs_flower
@pytest.mark.slow
def test_example_weighted_fedavg_is_refuted_in_one_run():
    """The reproducer of the docs page: 2,000 real clients of ~20 examples, 100 canary clients
    reporting 4,000 examples each, σ = 18 (Flower's calibration: ε = 1.01 at δ = 1e-5,
    exact 0.92). FedAvg weights each canary by 4,000/Σn ≈ 1/110 where the noise σC/m assumes
    1/2,100: one run's valid bound (3.70 and 3.20 at seed 0) refutes the calibration under
    both threat models. The same run with equal weights is not refuted."""
    r = audit_federated(_settings("examples", clients=2000, canaries=100, sigma=18.0,
                                  examples=4000))  # fmt: skip
    for e in r.entries:
        np.testing.assert_allclose(e.claim.epsilon, 1.006, atol=1e-3)
        assert e.gap.refutes_claim and e.lower_bound.epsilon > 3 * e.claim.epsilon
    for e in audit_federated(_settings("uniform", clients=2000, canaries=100, sigma=18.0,
                                       examples=4000)).entries:  # fmt: skip
        assert not e.gap.refutes_claim


@needs_flower
def test_flowers_clipping_raises_on_a_zero_update():
    """Reproducer of the crash in the docs: Flower's fixed clipping divides the clipping norm by
    the update's norm, so a client that returns the parameters it received (an empty client, a
    round without local steps) stops the server's aggregation with ZeroDivisionError (the
    server-side wrapper's aggregate_fit and the client-side fixedclipping_mod both call it)."""
    code = (
        "import numpy as np\n"
        "from flwr.supercore.differential_privacy import compute_clip_model_update\n"
        "theta = [np.ones(3)]\n"
        "try:\n"
        "    compute_clip_model_update([np.ones(3)], theta, 1.0)\n"
        "except ZeroDivisionError as exc:\n"
        "    print('ZeroDivisionError', exc)\n"
    )
    out = subprocess.run([str(FLOWER.python()), "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)  # fmt: skip
    assert out.stdout.startswith("ZeroDivisionError float division by zero")


def test_shipped_reproducer_config_parses():
    from dpaudit.experiments import WORKFLOWS
    from dpaudit.systems import SYSTEMS

    s = WORKFLOWS.get("federated").load_settings("federated-flower-weighted")
    expected = _settings("examples", clients=2000, canaries=100, sigma=18.0, examples=4000)
    assert (s.system, s.canaries, s.data.num_clients) == ("flower-dp", expected.canaries, 2000)
    cell = s.cell(mean_examples=20.0)
    assert (cell.population, cell.weighting, cell.canary_examples) == (2100, "examples", 4000)
    np.testing.assert_allclose(SYSTEMS.get("flower-dp")(cell).claim(delta=DELTA).epsilon, 1.006,
                               atol=1e-3)  # fmt: skip


@needs_flower
def test_flowers_fixed_size_sampler_picks_m_clients_a_round():
    """Flower's client manager (seeded through the run's seed) samples exactly m of the P
    clients each round, uniformly: each canary slot's participation averages T·m/P."""
    g = np.random.default_rng(0)
    data = dirichlet_split(g.normal(size=(200, 3)), g.integers(0, 2, 200), 20, alpha=1.0, rng=0)
    cell = FlowerCell(rounds=40, clients_per_round=10, population=40, noise_multiplier=2.0)
    can = draw_canary_clients(20, data.dimension, rng=1).directions
    run = FlowerDPFedAvg(cell).train(data, can, rng=3)
    assert np.all(run.participants == 10)
    np.testing.assert_allclose(run.participation.mean(), 40 * 10 / 40, atol=2.5)
    again = FlowerDPFedAvg(cell).train(data, can, rng=3)
    np.testing.assert_array_equal(run.deltas, again.deltas)


_ADAPTIVE = """
import logging, sys
import numpy as np
logging.getLogger("flwr").setLevel(logging.ERROR)
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.strategy import DifferentialPrivacyServerSideAdaptiveClipping, FedAvg
np.random.seed(0)
m, d = 100, 20000
dp = DifferentialPrivacyServerSideAdaptiveClipping(FedAvg(), noise_multiplier=1.0,
    num_sampled_clients=m, initial_clipping_norm=1.0, target_clipped_quantile=0.5,
    clip_norm_lr=0.2)
theta = np.zeros(d)
dp.current_round_params = [theta]
ups = np.random.standard_normal((m, d))
ups *= 10 / np.linalg.norm(ups, axis=1, keepdims=True)  # every update of norm 10: all clipped
res = [(None, FitRes(Status(Code.OK, ""), ndarrays_to_parameters([theta + u]), 1, {}))
       for u in ups]
used = dp.clipping_norm
agg, _ = dp.aggregate_fit(1, res, [])
noise = parameters_to_ndarrays(agg)[0] - (ups * (used / 10)).mean(axis=0)
print(used, dp.clipping_norm, noise.std() * m / dp.noise_multiplier)
"""


@needs_flower
def test_server_side_adaptive_clipping_noises_with_the_next_rounds_norm():
    """Reproducer of the docs page: Flower's DifferentialPrivacyServerSideAdaptiveClipping clips
    the updates to C_t, updates the norm to C_{t+1}, then adds noise of std z·C_{t+1}/m: with
    every update clipped, C_{t+1} = C_t·exp(−0.2·(1 − 0.5)) = 0.905·C_t, so the round has 0.905 of
    the noise its analysis needs (Andrew et al. 2021, arXiv:1905.03871, Alg. 1 noises the sum
    clipped at C_t). The norm also moves the wrong way: with every update clipped (above the
    target quantile 0.5) it shrinks, where Andrew et al.'s rule grows it — Flower's bit marks a
    clipped update, their b an unclipped one."""
    out = subprocess.run([str(FLOWER.python()), "-c", _ADAPTIVE], capture_output=True,
                         text=True, timeout=120, check=True)  # fmt: skip
    used, after, noise_scale = (float(x) for x in out.stdout.split())
    assert used == 1.0
    np.testing.assert_allclose(after, math.exp(-0.2 * 0.5), rtol=0.02)  # shrinks (noisy count)
    np.testing.assert_allclose(noise_scale, after, rtol=0.02)  # the noise follows C_{t+1}
    assert noise_scale < 0.95 * used


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"clip_norm_lr": 0.5}, "clip_norm_lr"),
     ({"target_clipped_quantile": 0.1}, "target_clipped_quantile"),
     ({"wrapper": "server-side-adaptive", "clip_norm_lr": 0.0}, "clip_norm_lr"),
     ({"wrapper": "client-side-adaptive", "target_clipped_quantile": 1.5},
      "target_clipped_quantile"),
     ({"wrapper": "server-side-adaptive", "clipped_count_stddev": -1.0}, "clipped_count_stddev"),
     ({"wrapper": "server-side-adaptive", "noise_multiplier": 10.0}, "noise_multiplier")],
)  # fmt: skip
def test_adaptive_settings_are_checked_before_anything_runs(kwargs, name):
    """The adaptive wrappers' settings are refused on a fixed wrapper, out of Flower's range,
    or with a noise multiplier Flower cannot split (z ≥ 2σ_b: 10 ≥ 2·100/20)."""
    with pytest.raises(ValueError, match=name):
        FlowerCell(**kwargs)


def test_adaptive_update_noise_multiplier_and_the_as_run_epsilon():
    """z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2) (Flower's compute_adaptive_noise_params, Andrew et al.
    2021); the as-run ε with norms that never move is the claim's exact ε (fixed and adaptive
    wrappers alike: the count's share is what z_Δ gave up), and noise scaled with a norm 0.9
    of the clipping norm spends more."""
    from dpaudit.systems.federated._fedavg import FedAvgRun

    cell = FlowerCell(rounds=5, clients_per_round=220, population=220, sampling="all",
                      noise_multiplier=18.0, wrapper="server-side-adaptive")  # fmt: skip
    assert cell.count_noise == 11.0
    np.testing.assert_allclose(cell.update_noise_multiplier, (18.0**-2 - 22.0**-2) ** -0.5)
    run = FedAvgRun(np.zeros((5, 3), np.float32), np.zeros(3), np.zeros(0), np.zeros(5),
                    clip_norms=np.ones((5, 2)))  # fmt: skip
    exact = FlowerDPFedAvg(cell).exact_claim(DELTA).epsilon
    np.testing.assert_allclose(FlowerDPFedAvg(cell).as_run_epsilon(run, DELTA), exact, rtol=1e-9)
    fixed = FlowerDPFedAvg(FlowerCell(rounds=5, clients_per_round=220, population=220,
                                      sampling="all", noise_multiplier=18.0))  # fmt: skip
    np.testing.assert_allclose(fixed.as_run_epsilon(run, DELTA), exact, rtol=1e-9)
    shrunk = dataclasses.replace(run, clip_norms=np.array([[1.0, 0.9]] * 5))
    mu = math.sqrt(5 * ((2 / (cell.update_noise_multiplier * 0.9)) ** 2 + 11.0**-2))
    np.testing.assert_allclose(FlowerDPFedAvg(cell).as_run_epsilon(shrunk, DELTA),
                               gdp_epsilon(mu, DELTA), rtol=1e-9)  # fmt: skip
    sampled = dataclasses.replace(fixed.cell, sampling="fixed", clients_per_round=100)
    assert FlowerDPFedAvg(sampled).as_run_epsilon(run, DELTA) is None


def _adaptive(lr=0.2, quantile=0.5, wrapper="server-side-adaptive", seed=0) -> FederatedSettings:
    """20 clients of hashed 1,000-feature data (d = 10,010) and 200 canary clients sending
    twice the initial norm (always clipped), every client in each of 5 rounds, z = 18."""
    s = _settings("uniform", wrapper, sigma=18.0, seed=seed)
    return dataclasses.replace(
        s, data=dataclasses.replace(s.data, features=1000),
        training=dataclasses.replace(s.training, clients_per_round=220, clip_norm_lr=lr,
                                     target_clipped_quantile=quantile),
        canaries=dataclasses.replace(s.canaries, scale=2.0),
    )  # fmt: skip


@needs_flower
def test_adaptive_wrappers_noise_with_the_next_rounds_norm_in_a_canary_run():
    """Both adaptive wrappers as installed, through the canary path: each round's updates are
    clipped to C_t, the norm shrinks (Flower's bit counts clipped updates; Andrew et al.'s
    rule would grow it: C_{t+1} = C_t·exp(−0.2(b̄ − 0.5)), 0.905·C_t with every update
    clipped, 0.91–0.93 here where the 20 real clients' first updates are not) and the noise is
    scaled with C_{t+1}, so the as-run ε exceeds the exact ε of the calibration — by 3 %,
    which one run's valid bounds (0 here) cannot see: the canary audit at Flower's defaults is
    consistent with the claim (1.006). The client-side wrapper (its clients through
    adaptiveclipping_mod) gives the same run for the same seed."""
    s = _adaptive()
    fed, _ = load_clients(s.data, rng=child_seed(s.seed, 0))
    runs = []
    for wrapper in ("server-side-adaptive", "client-side-adaptive"):
        system = FlowerDPFedAvg(dataclasses.replace(s, training=dataclasses.replace(
            s.training, wrapper=wrapper)).cell(mean_examples=fed.mean_examples))  # fmt: skip
        can = draw_canary_clients(s.canaries.count, system.dimension(fed), rng=1)
        runs.append(system.train(fed, can.directions, can.included, canary_scale=2.0, rng=2))
    server, client = runs
    np.testing.assert_array_equal(server.deltas, client.deltas)
    norms = server.clip_norms
    np.testing.assert_array_equal(norms[1:, 0], norms[:-1, 1])  # round t+1 clips to C_{t+1}
    np.testing.assert_allclose(norms[:, 1] / norms[:, 0], math.exp(-0.1), atol=0.04)
    exact = system.exact_claim(DELTA).epsilon
    assert exact < system.as_run_epsilon(server, DELTA) < 1.06 * exact
    r = audit_federated(s)
    for e in r.entries:
        np.testing.assert_allclose(e.claim.epsilon, 1.006, atol=1e-3)
        assert not e.gap.refutes_claim and e.lower_bound.epsilon <= exact


@needs_flower
def test_adaptive_clipping_with_a_fast_norm_rate_is_refuted_in_one_run():
    """The reproducer of the docs page (config federated-flower-adaptive): clip_norm_lr = 3
    and target_clipped_quantile = 0, which Flower accepts: every update is clipped, so the
    norm falls by e⁻³ each round and each round's noise is about 5 % of what the calibration
    needs. One run's valid all-iterates bound (1.77 at seed 0) refutes the claim of 1.006."""
    from dpaudit.experiments import WORKFLOWS

    s = WORKFLOWS.get("federated").load_settings("federated-flower-adaptive")
    expected = _adaptive(lr=3.0, quantile=0.0)
    assert (s.system, s.seed, s.data, s.training, s.canaries, s.audit) == (
        expected.system, expected.seed, expected.data, expected.training, expected.canaries,
        expected.audit)  # fmt: skip
    r = audit_federated(s)
    iterates, final = r.entries
    np.testing.assert_allclose(iterates.claim.epsilon, 1.006, atol=1e-3)
    assert iterates.gap.refutes_claim and iterates.lower_bound.epsilon > 1.5
    assert final.lower_bound.epsilon < final.claim.epsilon  # the final model alone: not here
