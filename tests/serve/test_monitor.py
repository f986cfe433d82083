"""``dpaudit monitor``: continuous certification of a ``dpaudit serve`` deployment.

The deployment is the demo's system (PATE on digits, 30 teachers, σ = 4; answer cache off so
repeated queries get fresh noise), answering through the real service and its ledger. The
planted bug is a noise source whose standard normals have standard deviation 1/2: the service
claims (and charges for) σ = 4 but answers with σ/2. The acceptance run (≥ 200 honest streams
of 10⁴ answers, the σ/2 deployment's median time to the alarm) is
``benchmarks/bench_monitor.py``; these are its smaller seeded versions.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpaudit.mechanisms import GNMax, argmax_probabilities
from dpaudit.serve import LedgerConfig, MemoryLedger, PredictionService, SQLiteLedger
from dpaudit.serve.monitor import (
    DeploymentMonitor,
    LedgerMonitor,
    MonitorError,
    TopProbabilities,
    agreement_statistic,
    noise_grid,
)

SIGMA = 4.0


class HalfNoise(np.random.Generator):
    """The planted bug: standard normals with standard deviation 1/2 (σ/2 answers)."""

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return 0.5 * super().standard_normal(size)


@pytest.fixture(scope="module")
def demo():
    """The demo's deployment (digits, 30 teachers, σ = 4) and the digits test rows."""
    from dpaudit.data import load_subset
    from dpaudit.serve import ServeSettings, build_service

    s = ServeSettings.of(teachers=30, sigma=SIGMA, dataset="digits", ledger=":memory:",
                         cache=False, epsilon=1e12, client_epsilon=1e11)  # fmt: skip
    svc = build_service(s)
    assert svc.info().cache is False and svc.info().num_teachers == 30
    X = load_subset("digits", seed=0).X_test
    return svc.interface, svc.ledger.config, X


@pytest.fixture(scope="module")
def top():
    return TopProbabilities(noise_grid(SIGMA))


def _service(demo, *, bug: bool, seed: int, ledger=None):
    interface, config, _ = demo
    led = MemoryLedger(config, global_budget=1e12) if ledger is None else ledger
    rng = HalfNoise(np.random.PCG64(seed)) if bug else np.random.default_rng(seed)
    svc = PredictionService(interface, led, noise_rng=rng)
    return svc, svc.authenticate(led.add_client("traffic", 1e11))


def _stream(demo, top, *, bug, seed, answers, batch=250):
    """Client traffic of digits test images (seeded), monitored after every request."""
    svc, client = _service(demo, bug=bug, seed=seed)
    mon = LedgerMonitor(svc.ledger, probabilities=top)
    g = np.random.default_rng([seed, 1])
    X = demo[2]
    status = None
    for _ in range(answers // batch):
        svc.predict(client, X[g.integers(0, len(X), size=batch)])
        status = mon.poll()
        if status.alarm:
            break
    return status


# ------------------------------------------------------------------------ the statistic


def test_plurality_probability_decreases_with_the_noise(demo):
    """The null's monotonicity: Q_σ′(H)[top] ≤ Q_σ(H)[top] for σ′ ≥ σ (demo histograms,
    ties at the top, random histograms)."""
    interface, _, X = demo
    votes = np.asarray(interface.votes(X), dtype=float)
    g = np.random.default_rng(0)
    extra = [[10, 10, 0], [15, 15, 0, 0], [7, 7, 7, 9], [30, 0, 0], [1, 0]]
    rand = g.multinomial(30, g.dirichlet(np.ones(10)), size=300).astype(float)
    for hist in (votes, rand, *[np.array([h], float) for h in extra]):
        top = np.argmax(hist, axis=1)
        rows = np.arange(len(hist))
        q = np.stack([argmax_probabilities(hist, s)[rows, top] for s in noise_grid(SIGMA)[::-1]])
        assert np.all(np.diff(q, axis=0) <= 1e-12)  # σ′ increasing along axis 0


def test_statistic_against_a_naive_loop_and_its_exact_mean(demo, top):
    interface, _, X = demo
    votes = np.asarray(interface.votes(X[:60]), dtype=float)
    labels = GNMax(SIGMA).answer(votes, rng=1)
    labels[:3] = -1  # abstentions count as 0
    z = agreement_statistic(votes, labels, top)
    for g, s in enumerate(top.sigmas[::10]):
        for t in range(60):
            q = argmax_probabilities(votes[t], s)
            want = 0.0 if labels[t] == -1 else float(labels[t] == np.argmax(votes[t])) - q[
                np.argmax(votes[t])]  # fmt: skip
            assert z[10 * g, t] == pytest.approx(want, abs=1e-12)
    # exact conditional means: 0 at the truth, > 0 for a claim above it, < 0 below it
    top_ = np.argmax(votes, axis=1)
    rows = np.arange(len(votes))
    q = {s: argmax_probabilities(votes, s)[rows, top_] for s in (2.0, 4.0, 8.0)}
    assert np.all(q[2.0] - q[4.0] >= 0) and np.all(q[8.0] - q[4.0] <= 0)


def _naive_epsilon(p, q, delta):
    """Bisection on the hockey-stick divergence Σ max(0, p − e^ε q) (slow reference)."""

    def excess(e):
        return np.maximum(0.0, p - np.exp(e) * q).sum() - delta

    if excess(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) > 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return hi


def test_discrete_epsilon_against_bisection_and_a_closed_form():
    from dpaudit.serve._monitor_epsilon import discrete_epsilon

    g = np.random.default_rng(4)
    p, q = g.dirichlet(np.ones(6), size=50), g.dirichlet(np.ones(6), size=50)
    for delta in (0.0, 1e-5, 0.05):
        got = discrete_epsilon(np.log(p), np.log(q), delta)
        want = [_naive_epsilon(a, b, delta) for a, b in zip(p, q, strict=True)]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    # δ = 0 on two outcomes: the largest log-ratio
    eps = discrete_epsilon(np.log([[0.7, 0.3]]), np.log([[0.4, 0.6]]), 0.0)[0]
    assert eps == pytest.approx(math.log(0.7 / 0.4), rel=1e-13)


def test_epsilon_floor_bounds_the_infimum_of_the_exact_epsilon(demo):
    """The ε confidence sequence: for each grid σ, the floor must not exceed the exact ε at
    any σ′ ≤ σ (dense naive evaluation); the exact ε is not monotone, which is why the floor
    is needed; and the ledger's RDP charge (an upper bound, computed independently) stays
    above the exact ε."""
    from dpaudit.serve._monitor_epsilon import gnmax_answer_epsilon, gnmax_epsilon_floor
    from dpaudit.serve.monitor import _answer_epsilon

    eps = [gnmax_answer_epsilon(s, 30, 10, 1e-5) for s in (1.0, 1.1)]
    assert eps[1] > eps[0]  # not monotone in σ
    for t, c, grid in ((12, 4, noise_grid(2.0, points=9)), (30, 10, noise_grid(SIGMA))):
        floor = gnmax_epsilon_floor(tuple(grid.tolist()), t, c, 1e-5)
        dense = np.geomspace(grid.min() / 16, grid.max(), 400 if t == 12 else 120)
        exact = np.array([gnmax_answer_epsilon(float(s), t, c, 1e-5) for s in dense])
        for s, f in zip(grid, floor, strict=True):
            assert f <= exact[dense <= s].min() + 1e-12
            assert f <= gnmax_answer_epsilon(float(s), t, c, 1e-5)
        assert np.all(np.diff(floor[::-1]) <= 0)  # a running minimum from σ → 0 up
    assert floor[list(grid).index(SIGMA)] > 0.8 * gnmax_answer_epsilon(SIGMA, 30, 10, 1e-5)
    for s in (1.0, 2.0, 4.0, 8.0):
        assert gnmax_answer_epsilon(s, 30, 10, 1e-5) < _answer_epsilon(demo[1], s)


def test_validation_names_the_arguments(demo):
    _, config, _ = demo
    with pytest.raises(ValueError, match=r"votes must be \(n, C\)"):
        agreement_statistic([1, 2], [0], [1.0])
    with pytest.raises(ValueError, match="sigmas must be finite and > 0"):
        TopProbabilities([1.0, -2.0])
    with pytest.raises(ValueError, match="need 0 < low < 1 < high"):
        noise_grid(1.0, low=2.0)
    with pytest.raises(MonitorError, match=r"does not make that claim.*sigma=4.*not sigma=3"):
        DeploymentMonitor(config, claimed_sigma=3.0)
    with pytest.raises(ValueError, match="claimed_sigma must be"):
        DeploymentMonitor(config, claimed_sigma=-1.0)
    with pytest.raises(TypeError, match=r"ledger must be a dpaudit\.serve ledger"):
        LedgerMonitor(object())
    with pytest.raises(MonitorError, match="cannot read the ledger"):
        LedgerMonitor.open("/nonexistent/ledger.sqlite")
    led = MemoryLedger(config, global_budget=1e12)
    silent = PredictionService(demo[0], led, noise_rng=0, record_votes=False)
    silent.predict(silent.authenticate(led.add_client("c", 1e11)), demo[2][:5])
    with pytest.raises(MonitorError, match=r"records no vote histograms.*--record-votes"):
        LedgerMonitor(led)


# ------------------------------------------------------------ type-I error and power


def test_honest_deployment_never_alarms(demo, top):
    """30 seeded honest streams of 3,000 answers (the benchmark runs 200 of 10⁴)."""
    for seed in range(30):
        status = _stream(demo, top, bug=False, seed=seed, answers=3000)
        assert status.answers == 3000 and not status.alarm, seed
        assert status.max_log_e_value < status.threshold
        assert status.sigma_upper is None or status.sigma_upper > SIGMA  # the CS covers σ
        assert status.epsilon_lower is None or status.epsilon_lower < status.epsilon_exact_claimed


def test_half_the_noise_alarms_within_2000_answers(demo, top):
    from dpaudit.serve._monitor_epsilon import gnmax_answer_epsilon

    at = []
    for seed in range(10):
        status = _stream(demo, top, bug=True, seed=100 + seed, answers=5000)
        assert status.alarm, seed
        at.append(status.alarm_at)
        assert status.sigma_upper is not None and status.sigma_upper <= SIGMA
        assert 0 < status.epsilon_lower <= gnmax_answer_epsilon(status.sigma_upper, 30, 10, 1e-5)
    assert np.median(at) <= 2000, at


def test_polling_in_pieces_equals_reading_once(demo, top):
    svc, client = _service(demo, bug=True, seed=7)
    X = demo[2]
    piecewise = LedgerMonitor(svc.ledger, probabilities=top, name="a")
    for i in range(8):
        svc.predict(client, X[i * 40 : (i + 1) * 40])
        piecewise.poll()
    once = LedgerMonitor(svc.ledger, probabilities=top, name="b", batch=3).poll()
    a = piecewise.poll()
    assert (a.answers, a.alarm_at, a.sigma_upper) == (once.answers, once.alarm_at, once.sigma_upper)
    assert a.log_e_value == pytest.approx(once.log_e_value, abs=1e-9)
    assert a.max_log_e_value == pytest.approx(once.max_log_e_value, abs=1e-9)


def test_alarm_reaches_the_health_endpoint_and_the_log(demo, top, caplog):
    from fastapi.testclient import TestClient

    from dpaudit.serve import create_app

    svc, client = _service(demo, bug=True, seed=3)
    http = TestClient(create_app(svc, access_log=False))
    assert http.get("/healthz").json() == {"status": "ok"}
    mon = LedgerMonitor(svc.ledger, probabilities=top)
    mon.poll()
    health = http.get("/healthz").json()
    assert health["privacy_alarm"] is False and health["monitors"]["ledger"]["answers"] == 0
    for _ in range(12):
        svc.predict(client, demo[2][:250])
    with caplog.at_level("ERROR", logger="dpaudit.monitor"):
        status = mon.poll()
        mon.poll()
    assert status.alarm
    assert sum("PRIVACY ALARM" in r.getMessage() for r in caplog.records) == 1  # logged once
    health = http.get("/healthz").json()
    assert health["status"] == "ok" and health["privacy_alarm"] is True
    assert health["monitors"]["ledger"]["alarm_at"] == status.alarm_at


def test_confident_gnmax_counts_answered_queries_only():
    from dpaudit.attacks import fixed_histogram_interface
    from dpaudit.mechanisms import ConfidentGNMax

    mech = ConfidentGNMax(threshold=25.0, sigma1=2.0, sigma2=4.0)
    cfg = LedgerConfig(mech, (2.0, 8.0), 1e-5)
    led = MemoryLedger(cfg, global_budget=1e12)
    svc = PredictionService(fixed_histogram_interface([24, 6, 0], mech), led, noise_rng=0)
    client = svc.authenticate(led.add_client("c", 1e11))
    labels = svc.predict(client, [[0.0]] * 200).labels
    status = LedgerMonitor(led).poll()
    assert status.claimed_sigma == 4.0 and status.mechanism == "confident-gnmax"
    answered = labels != -1
    assert 0 < answered.sum() < 200
    q = argmax_probabilities([24, 6, 0], 4.0)[0]
    want = ((labels[answered] == 0).sum() - q * answered.sum()) / 200
    assert status.mean_statistic == pytest.approx(want, abs=1e-12)


# ------------------------------------------------------------------------------- the CLI


def _sqlite_ledger(demo, tmp_path, *, bug, answers):
    led = SQLiteLedger(tmp_path / "ledger.sqlite", demo[1], global_budget=1e12)
    svc, client = _service(demo, bug=bug, seed=11, ledger=led)
    for i in range(answers // 250):
        svc.predict(client, demo[2][np.arange(250) + i % 2])
    led.close()
    return str(tmp_path / "ledger.sqlite")


def test_cli_certifies_an_honest_ledger_and_exits_3_on_alarm(demo, tmp_path, capsys):
    from dpaudit.cli import run

    honest = _sqlite_ledger(demo, tmp_path / "h", bug=False, answers=1000)
    args = ["monitor", "--max-answers", "1", "--interval", "0", "--json"]
    assert run([*args, "--ledger", honest]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["answers"] == 1000 and status["alarm"] is False
    buggy = _sqlite_ledger(demo, tmp_path / "b", bug=True, answers=2000)
    page = tmp_path / "page" / "monitor.html"
    assert run([*args, "--ledger", buggy, "--page", str(page), "--sigma", "4"]) == 3
    out = capsys.readouterr()
    status = json.loads(out.out)
    assert status["alarm"] is True and status["alarm_at"] <= 2000
    assert "PRIVACY ALARM" in out.err
    assert "ALARM: claim rejected" in page.read_text()
    again = SQLiteLedger.open(buggy)  # the status is in the ledger, for /healthz
    assert again.monitor_statuses()["ledger"]["alarm"] is True
    again.close()


def test_cli_bad_input_is_one_clear_line(demo, tmp_path, capsys):
    from dpaudit.cli import run

    honest = _sqlite_ledger(demo, tmp_path, bug=False, answers=250)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    keys_only = tmp_path / "keys.sqlite"
    from dpaudit.serve import KeyStore

    KeyStore(keys_only).close()
    cases = [
        (["--ledger", honest, "--sigma", "2"], "does not make that claim"),
        (["--ledger", str(tmp_path / "missing.sqlite")], "cannot read the ledger"),
        (["--ledger", str(garbage)], "cannot read the ledger"),
        (["--ledger", str(keys_only)], "no service has used it yet"),
        (["--ledger", honest, "--url", "http://127.0.0.1:9", "--api-key", "dpa_x",
          "--dataset", "digits"], "cannot reach the service at http://127.0.0.1:9"),
        (["--ledger", honest, "--url", "http://127.0.0.1:9"], "needs --api-key"),
        (["--ledger", honest, "--api-key", "k"], "options of client mode"),
    ]  # fmt: skip
    for args, message in cases:
        assert run(["monitor", "--max-answers", "1", *args]) == 2, args
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], (args, err)
    assert run(["monitor", "--ledger", honest, "--json"]) == 2
    assert "give --duration, --max-answers or --stop-on-alarm" in capsys.readouterr().err


def test_client_mode_probes_under_its_own_key_and_is_charged(demo, tmp_path, monkeypatch):
    from dpaudit.serve import ServiceServer, create_app
    from dpaudit.serve.monitor import ClientMonitor

    led = SQLiteLedger(tmp_path / "ledger.sqlite", demo[1], global_budget=1e12)
    svc, _ = _service(demo, bug=True, seed=5, ledger=led)
    key = led.add_client("monitor", 1e11)
    with ServiceServer(create_app(svc, access_log=False), lifetime=120) as srv:
        mon = ClientMonitor(srv.url, key, str(tmp_path / "ledger.sqlite"), demo[2],
                            batch=100, rng=0)  # fmt: skip
        status = mon.run(max_answers=4000, stop_on_alarm=True)
        mon.close()
        with pytest.raises(MonitorError, match="refused GET /v1/budget: HTTP 401"):
            ClientMonitor(srv.url, "dpa_wrong", led, demo[2])
        with pytest.raises(ValueError, match="queries must have 64 features"):
            ClientMonitor(srv.url, key, led, np.zeros((3, 5)))
    assert status.alarm and status.name == "client"
    monitor_client = next(c for c in led.clients() if c.name == "monitor")
    acc = led.account(monitor_client.id)
    assert acc.num_queries == status.answers and acc.num_requests == status.answers // 100
    assert led.monitor_statuses()["client"]["alarm"] is True
    led.close()


def test_client_mode_refuses_a_caching_service(demo, tmp_path):
    from dpaudit.serve import ServiceServer, create_app
    from dpaudit.serve.monitor import ClientMonitor

    interface, config, X = demo
    led = MemoryLedger(config, global_budget=1e12)
    svc = PredictionService(interface, led, noise_rng=0, cache=True)
    key = led.add_client("monitor", 1e11)
    with ServiceServer(create_app(svc, access_log=False), lifetime=120) as srv:
        mon = ClientMonitor(srv.url, key, led, X[:1], batch=4)
        with pytest.raises(MonitorError, match="from its answer cache"):
            mon.run(max_answers=100)
        mon.close()


def test_live_page_in_headless_chromium(demo, top, tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    from dpaudit.serve.monitor_page import write_monitor_page

    chromium = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if chromium is None:
        pytest.skip("chromium is not installed")
    svc, client = _service(demo, bug=True, seed=9)
    mon = LedgerMonitor(svc.ledger, probabilities=top)
    for _ in range(8):
        svc.predict(client, demo[2][:250])
        mon.poll()
    status = mon.monitor.status()
    page = write_monitor_page(mon.monitor, tmp_path / "monitor.html", refresh=None)
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,900"]  # fmt: skip
    url = page.resolve().as_uri()
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    assert "ALARM: claim rejected" in text and 'id="evalue-path"' in text
    points = __import__("re").search(r'id="path"[^>]*points="([^"]+)"', text).group(1).split()
    assert len(points) == len(mon.monitor.path) >= 10
    assert f'data-key="alarm at answer">{status.alarm_at}<' in text
    shot = tmp_path / "monitor.png"
    subprocess.run([*flags, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 5_000
    assert math.isfinite(status.max_log_e_value)
