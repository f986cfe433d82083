"""The Lifted-DP audit of DP-SGD: input errors before training, the run protocol, entries and
claims, a planted bug, executors (Ray included) and kill -9 / resume."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

from tiny_lidp import tiny_pool, tiny_settings

from doctest_support import module_examples
from dpaudit.engine import SerialExecutor, read_task_checkpoint, run_tasks
from dpaudit.experiments.lidp_dpsgd import pipeline as lidp_dpsgd
from dpaudit.experiments.lidp_dpsgd.pipeline import (
    pool_images,
    run_lidp_dpsgd,
)
from dpaudit.systems import SYSTEMS, LabelledData

HERE = pathlib.Path(__file__).parent


def _no_training(*args, **kwargs):
    raise AssertionError("a training run started")


def _signature(res):
    """Everything a run's outcome consists of, for exact comparison."""
    audit = res.detail.audit
    out = {"entries": [(e.adversary, e.lower_bound.epsilon, e.selections[0].detail)
                       for e in res.entries]}  # fmt: skip
    for a in audit.audits:
        out[a.num_canaries] = [a.alternative, a.null, a.tuning_alternative, a.tuning_null,
                               a.curve_by_repetition, a.curve_thresholds]  # fmt: skip
    return out


def _assert_same(a, b):
    sa, sb = _signature(a), _signature(b)
    assert sa.keys() == sb.keys() and sa["entries"] == sb["entries"]
    for key in sa:
        if key != "entries":
            for x, y in zip(sa[key], sb[key], strict=True):
                np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"canaries": {"counts": [0]}}, "counts must hold canary counts k >= 1"),
        ({"canaries": {"counts": [4, 4]}}, "counts must be distinct"),
        ({"audit": {"methods": ["wilson2"]}, "canaries": {"counts": [1]}},
         "'wilson2' needs at least 2 canaries per run, got k=1"),
        ({"audit": {"methods": ["wilson4"]}, "canaries": {"counts": [2]}},
         "'wilson4' needs at least 4 canaries per run, got k=2"),
        ({"canaries": {"counts": [1, 2]}}, "'wilson4' needs at least 4 canaries per run, got k=2"),
        ({"audit": {"num_runs": 1}}, "num_runs must be at least 2"),
        ({"audit": {"num_tuning_runs": 1}}, "num_tuning_runs must be at least 2"),
        ({"audit": {"methods": ["wilson3"]}}, "methods"),
        ({"canaries": {"kind": "flipped", "counts": [40]}},
         r"2k - 1 = 79 distinct canaries \(k = 40\) but data.canary_pool holds 60"),
        ({"training": {"sampling_rate": None, "batch_size": 100}},
         "batch_size=100 exceeds the nominal dataset size num_train \\+ max k = 36"),
        ({"training": {"sampling_rate": 1.5}}, "sampling_rate"),
        ({"execution": {"executor": "threads"}}, "executor"),
    ],
)  # fmt: skip
def test_bad_settings_are_refused(over, match):
    with pytest.raises(ValueError, match=match):
        tiny_settings(**over)


def test_layout_larger_than_the_data_is_refused_before_training(monkeypatch, tmp_path):
    monkeypatch.setattr(lidp_dpsgd, "train_dpsgd", _no_training)
    pool = tiny_pool()
    bad = tiny_settings(canaries={"kind": "flipped"}, data={"num_train": 150, "canary_pool": 60})
    with pytest.raises(ValueError, match="num_train \\+ canary_pool = 210 examples, but"):
        run_lidp_dpsgd(bad, data=pool)
    bad = tiny_settings(data={"num_train": 201})
    with pytest.raises(ValueError, match="num_train = 201 examples"):
        run_lidp_dpsgd(bad, data=pool)
    # a checkpoint of another run is refused before any training
    ck = tmp_path / "ck"
    run_tasks(lambda i, s: np.zeros(1), 3, rng=0, checkpoint=ck / "runs.tasks", key="other job")
    with pytest.raises(ValueError, match="belongs to another run"):
        run_lidp_dpsgd(tiny_settings(), data=pool, checkpoint=ck)
    with pytest.raises(TypeError, match="settings must be LiDPDPSGDSettings"):
        run_lidp_dpsgd({"seed": 1}, data=pool)


def test_pooling_averages_blocks_and_checks_its_input():
    d = LabelledData(np.arange(32.0).reshape(2, 16), np.array([0, 1]), 2, (4, 4))
    np.testing.assert_allclose(pool_images(d, 2).X[1], [18.5, 20.5, 26.5, 28.5], rtol=0)
    assert pool_images(d, 1) is d
    with pytest.raises(ValueError, match="does not divide"):
        pool_images(d, 3)
    with pytest.raises(ValueError, match="needs image data"):
        pool_images(tiny_pool(), 2)


# ------------------------------------------------------------------------ the protocol


@dataclasses.dataclass
class _FakeTrained:
    final_loss: float = 0.5

    def logits(self, X, num_threads=1):
        return np.column_stack([X[:, 0], -X[:, 0], X[:, 1], X[:, 2]]).astype(np.float64)


def test_each_run_trains_and_tests_the_right_canaries(monkeypatch):
    """Alternative: k canaries, all included, all tested. Null: 2k − 1 distinct canaries from
    the canary pool (never D), k − 1 included, the k others tested, in random order."""
    calls = []

    def fake(train, canaries, included, settings, *, rng, nominal_size):
        calls.append((train, canaries, np.asarray(included), nominal_size))
        return _FakeTrained()

    monkeypatch.setattr(lidp_dpsgd, "train_dpsgd", fake)
    s = tiny_settings(canaries={"kind": "flipped", "counts": [1, 4]}, audit={"methods": None,
                      "curve_method": "wilson1"})  # fmt: skip
    res = run_lidp_dpsgd(s, data=tiny_pool())
    plan_alt = [True] * 4 + [False] * 4 + [True] * 2 + [False] * 2  # audit then tuning per k
    assert len(calls) == 2 * 2 * (4 + 2) == res.detail.audit.num_tasks
    ids = lambda data: np.rint(data.X[:, 0] * 200).astype(int)  # noqa: E731
    train_ids = set(ids(calls[0][0]).tolist())
    first_included = []
    for i, (train, canaries, included, nominal) in enumerate(calls):
        k = 1 if i < 12 else 4
        assert nominal == 32 + 4 and set(ids(train).tolist()) == train_ids
        c = ids(canaries)
        assert len(set(c.tolist())) == len(c) and not set(c.tolist()) & train_ids
        assert np.all(canaries.y != tiny_pool().y[c])  # flipped labels
        alt = included.sum() == k and len(c) == k
        null = included.sum() == k - 1 and len(c) == 2 * k - 1 and not included[k - 1 :].any()
        assert alt or null
        if null and k == 4:
            first_included.append(included[: k - 1].all())
    assert sum(plan_alt) * 2 == sum(1 for *_, inc, _ in calls if len(inc) == inc.sum())
    # the statistics are the fake model's margins of the tested canaries
    a4 = res.detail.audit.audit(4)
    assert a4.alternative.shape == (1, 4, 4) and a4.null.shape == (1, 4, 4)
    assert a4.extras == {"final_loss": 0.5}
    assert all(first_included)  # included ones come first after the random permutation
    orders = [tuple(ids(c)) for _, c, inc, _ in calls if len(inc) == 7]
    assert any(list(o) != sorted(o) for o in orders)  # not in pool order


def test_entries_claims_and_selection(monkeypatch):
    res = run_lidp_dpsgd(tiny_settings(canaries={"counts": [1, 4]},
                                       audit={"run_grid": [2, 4]}), data=tiny_pool())  # fmt: skip
    assert res.workflow == "lidp-dp-sgd" and res.seed == 3
    names = [e.adversary for e in res.entries]
    assert names == ["k=1:clopper-pearson", "k=1:wilson1", "k=4:clopper-pearson", "k=4:wilson1",
                     "k=4:wilson2", "k=4:wilson4"]  # fmt: skip
    system = SYSTEMS.get("dp-sgd")(tiny_settings(canaries={"counts": [1, 4]}).system_cell)
    with np.errstate(divide="ignore"):
        claims = system.claims()
    for e in res.entries:
        assert [c.epsilon for c in e.claims] == [c.epsilon for c in claims]
        assert e.claims[0].analysis == "opacus (PRV)"
        assert e.selections[0].strategy == "split" and "τ =" in e.selections[0].detail
        assert e.lower_bound.epsilon == e.detail.epsilon >= 0
        assert e.lower_bound.confidence_level == 0.95 and e.lower_bound.delta == 1e-5
    assert system.mechanism.sampling_rate == 1.0 and system.mechanism.steps == 6
    audit = res.detail.audit
    assert audit.run_grid.tolist() == [2, 4] and len(audit.gains) == 1
    assert audit.gains[0].num_canaries == 4 and audit.computed_runs == 24
    assert audit.audit(1).curve_method == "clopper-pearson"
    assert audit.audit(4).curve_method == "wilson4"
    # the curve's last point is the entry of the curve method
    assert audit.audit(4).curve_by_repetition[0, -1] == res.entries[-1].lower_bound.epsilon
    json.loads(res.to_json())


@dataclasses.dataclass(frozen=True)
class LessNoise:
    """Claims the honest system's σ but trains with σ / factor (the planted bug)."""

    honest: object
    factor: float

    @property
    def mechanism(self):
        return self.honest.mechanism

    @property
    def dataset_size(self):
        return self.honest.dataset_size

    def claims(self):
        return self.honest.claims()

    @property
    def training_settings(self):
        s = self.honest.training_settings
        return dataclasses.replace(s, noise_multiplier=s.noise_multiplier / self.factor)


def test_planted_bug_less_noise_than_claimed_is_caught():
    """σ = 50 claimed (ε ≈ 0.22 at δ = 1e-5) while training with σ = 0.5: the LiDP bound
    (and the 1-canary-per-run Clopper–Pearson bound) must exceed the claim."""
    s = tiny_settings(
        canaries={"counts": [4]}, data={"num_train": 8},
        training={"noise_multiplier": 50.0, "steps": 10},
        audit={"num_runs": 10, "num_tuning_runs": 6, "methods": ["wilson1", "clopper-pearson"],
               "curve_method": "wilson1", "run_grid": [10]},
    )  # fmt: skip
    bug = LessNoise(SYSTEMS.get("dp-sgd")(s.system_cell), 100.0)
    res = run_lidp_dpsgd(s, data=tiny_pool(d=128), system=bug)
    for method in ("wilson1", "clopper-pearson"):
        e = res.entry("dp-sgd", f"k=4:{method}")
        assert e.gap.refutes_claim, (method, e.lower_bound.epsilon, e.claims[0].epsilon)
    a = res.detail.audit.audit(4)
    assert a.alternative.mean() > a.null.mean() + 5.0  # larger means included


# --------------------------------------------------------------------------- executors


def test_ray_and_processes_give_bit_identical_statistics():
    """Same seed ⇒ the same statistics and ε on a local 2-CPU Ray instance, 2 local processes
    and serially."""
    ray = pytest.importorskip("ray")
    audit = {"num_runs": 3, "num_tuning_runs": 2, "curve_method": "wilson2"}
    s = tiny_settings(canaries={"counts": [2]}, audit=audit)
    pool = tiny_pool()
    serial = run_lidp_dpsgd(s, data=pool, executor=SerialExecutor())
    procs = run_lidp_dpsgd(s, data=pool, executor=lidp_dpsgd.EXECUTORS.get("processes")(2))
    try:
        ray_res = run_lidp_dpsgd(
            dataclasses.replace(
                s, execution=dataclasses.replace(s.execution, executor="ray", workers=2)
            ),
            data=pool,
        )
    finally:
        ray.shutdown()
    assert ray_res.detail.audit.executor == "ray" and procs.detail.audit.workers == 2
    _assert_same(serial, procs)
    _assert_same(procs, ray_res)


_KILL_SCRIPT = """
import sys
import numpy as np
from dpaudit.experiments.lidp_dpsgd import pipeline as lidp_dpsgd
from tiny_lidp import tiny_pool, tiny_settings, KILL_OVERRIDES

real = lidp_dpsgd.train_dpsgd
def logged(*args, **kwargs):
    out = real(*args, **kwargs)
    with open(sys.argv[2], "a") as fh:
        fh.write("trained\\n")
    return out

lidp_dpsgd.train_dpsgd = logged
lidp_dpsgd.run_lidp_dpsgd(tiny_settings(**KILL_OVERRIDES), data=tiny_pool(),
                          checkpoint=sys.argv[1])
"""


def test_kill_9_midway_then_resume_gives_the_uninterrupted_result(tmp_path, monkeypatch):
    """40 training runs; ``kill -9`` once at least 12 are recorded; resume: the same result
    as an uninterrupted run with the same seed, and no recorded run is trained again."""
    from tiny_lidp import KILL_OVERRIDES

    settings = tiny_settings(**KILL_OVERRIDES)
    assert SYSTEMS.get("dp-sgd")(settings.system_cell) and settings.audit.tuning_runs == 8
    ck, log = tmp_path / "ck", tmp_path / "trained.log"
    script = tmp_path / "run.py"
    script.write_text(_KILL_SCRIPT)
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.Popen([sys.executable, str(script), str(ck), str(log)], env=env)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if (ck / "runs.tasks").exists() and len(read_task_checkpoint(ck / "runs.tasks")) >= 12:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    recorded = len(read_task_checkpoint(ck / "runs.tasks"))
    trained_before = log.read_text().count("trained")
    assert 12 <= recorded < 40 and trained_before - recorded in (0, 1)
    trained_after = []
    real = lidp_dpsgd.train_dpsgd

    def counted(*args, **kwargs):
        trained_after.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lidp_dpsgd, "train_dpsgd", counted)
    resumed = run_lidp_dpsgd(settings, data=tiny_pool(), checkpoint=ck)
    assert resumed.detail.audit.resumed_runs == recorded
    assert len(trained_after) == resumed.detail.audit.computed_runs == 40 - recorded
    monkeypatch.setattr(lidp_dpsgd, "train_dpsgd", real)
    fresh = run_lidp_dpsgd(settings, data=tiny_pool())
    _assert_same(resumed, fresh)


def test_module_examples():
    names = ("dpaudit.experiments.lidp_dpsgd.pipeline", "dpaudit.experiments.lidp_dpsgd.settings")
    for name in names:
        assert module_examples(name).failed == 0, name
