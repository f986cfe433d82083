"""TOML configs of the private-prediction audit: shipped configs, validation, overrides."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic")

from dpaudit.experiments.config import (
    CONFIG_DIR,
    DEMO_CONFIG,
    demo_settings,
    find_config,
    load_config,
    parse_config,
)
from dpaudit.experiments.private_prediction import PrivatePredictionSettings


def test_demo_toml_equals_the_built_in_demo():
    from_file = load_config(CONFIG_DIR / "demo.toml")
    assert from_file == parse_config(DEMO_CONFIG)
    assert demo_settings() == from_file
    assert from_file.algorithms == ("pate", "capc")
    assert from_file.adversaries == ("nat-advq", "pois-advq", "pois-natq")
    assert from_file.dataset in ("digits", "mnist-5k") and from_file.teachers <= 60


@pytest.mark.parametrize(
    ("name", "dataset"), [("paper-fashion-mnist", "fashion-mnist"), ("paper-mnist", "mnist-5k")]
)
def test_paper_configs_follow_appendix_d(name, dataset):
    s = load_config(find_config(name))
    assert (s.dataset, s.teachers, s.sigma, s.experiments) == (dataset, 250, 40.0, 10**8)
    assert s.confidence_level == 0.95 and s.delta == 1e-6
    assert s.queries >= 999 and s.algorithms == ("pate", "capc")
    assert find_config(name + ".toml") == find_config(name)


def test_overrides_and_float_experiments():
    s = parse_config({"dataset": "digits", "teachers": 20}, overrides={"sigma": 3.0, "seed": None})
    assert (s.teachers, s.sigma, s.seed) == (20, 3.0, 0)
    assert parse_config({"experiments": 1e8}).experiments == 10**8
    assert parse_config({"adversaries": "pois-natq,nat-advq"}).adversaries == (
        "pois-natq",
        "nat-advq",
    )
    assert isinstance(parse_config({}), PrivatePredictionSettings)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"dataset": "cifar10"}, "dataset"),
        ({"teachers": 10, "teachers_per_query": 20}, "teachers_per_query"),
        ({"sigma": 0}, "sigma"),
        ({"sigma": -40}, "sigma"),
        ({"experiments": 0}, "experiments"),
        ({"experiments": -1}, "experiments"),
        ({"experiments": 1.5}, "experiments"),
        ({"teachers": "many"}, "teachers"),
        ({"teacher": 250}, "teacher"),
        ({"algorithms": ["pate", "dpsgd"]}, "algorithms"),
    ],
)
def test_bad_configs_are_clear_errors(data, match):
    with pytest.raises(ValueError, match=match):
        parse_config(data)


def test_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("teachers = [1, 2")
    with pytest.raises(ValueError, match="TOML"):
        load_config(bad)
    with pytest.raises(FileNotFoundError, match="config"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(FileNotFoundError, match="available"):
        find_config("no-such-config")
    good = tmp_path / "good.toml"
    good.write_text('dataset = "digits"\nteachers = 12\nsigma = 2.0\n')
    s = load_config(good, overrides={"teachers": 14})
    assert (s.teachers, s.sigma) == (14, 2.0)
    with pytest.raises(TypeError, match="mapping"):
        parse_config(["dataset"])
