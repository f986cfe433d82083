"""TOML configs of the private-prediction audit: shipped configs, strict validation, overrides,
the derived schema, and settings that round-trip through TOML."""

from __future__ import annotations

import json

import pytest

from dpaudit import _settings
from dpaudit.experiments.private_prediction import PrivatePredictionSettings
from dpaudit.experiments.private_prediction.config import (
    config_schema,
    demo_settings,
    find_config,
    load_config,
    parse_config,
    shipped_configs,
)


def test_demo_config_is_shipped_inside_the_package():
    s = demo_settings()
    assert ("demo" in shipped_configs() and "site-packages" in str(find_config("demo"))) or (
        "src/dpaudit/configs" in str(find_config("demo"))
    )
    assert s.system.systems == ("pate", "capc")
    assert s.adversary.adversaries == ("nat-advq", "pois-advq", "pois-natq")
    assert s.data.dataset in ("digits", "mnist-5k") and s.system.teachers <= 60
    assert s.engine.experiments == 10**8


@pytest.mark.parametrize(
    ("name", "dataset"), [("paper-fashion-mnist", "fashion-mnist"), ("paper-mnist", "mnist-5k")]
)
def test_paper_configs_follow_appendix_d(name, dataset):
    s = load_config(find_config(name))
    sy = s.system
    assert (s.data.dataset, sy.teachers, sy.sigma, s.engine.experiments) == (
        dataset,
        250,
        40.0,
        10**8,
    )
    assert s.audit.confidence_level == 0.95 and s.audit.delta == 1e-6
    assert s.adversary.queries >= 999 and sy.systems == ("pate", "capc")
    assert find_config(name + ".toml") == find_config(name)


def test_overrides_by_leaf_name_or_path():
    s = parse_config(
        {"data": {"dataset": "digits"}, "system": {"teachers": 20}},
        overrides={"sigma": 3.0, "seed": None, "adversary.queries": 7},
    )
    assert (s.system.teachers, s.system.sigma, s.seed, s.adversary.queries) == (20, 3.0, 0, 7)
    assert isinstance(parse_config({}), PrivatePredictionSettings)
    with pytest.raises(ValueError, match="unknown setting"):
        parse_config({}, overrides={"teacher": 3})


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"data": {"dataset": "no-such-dataset"}}, "dataset"),
        ({"system": {"teachers": 10, "teachers_per_query": 20}}, "teachers_per_query"),
        ({"system": {"sigma": 0}}, "sigma"),
        ({"system": {"sigma": -40}}, "sigma"),
        ({"engine": {"experiments": 0}}, "experiments"),
        ({"engine": {"experiments": -1}}, "experiments"),
        ({"engine": {"experiments": 1.5}}, r"engine\.experiments must be an integer"),
        ({"engine": {"experiments": 1e8}}, r"engine\.experiments must be an integer"),
        ({"system": {"teachers": "many"}}, r"system\.teachers must be an integer"),
        ({"system": {"teachers": "30"}}, r"system\.teachers must be an integer"),
        ({"system": {"teachers": True}}, r"system\.teachers must be an integer"),
        ({"system": {"sigma": "4"}}, r"system\.sigma must be a number"),
        ({"system": {"teacher": 250}}, "unknown setting 'teacher'"),
        ({"teachers": 250}, "did you mean 'system.teachers'"),
        ({"system": {"systems": ["pate", "dpsgd"]}}, "systems"),
        ({"system": 3}, "table"),
    ],
)
def test_bad_configs_are_clear_errors(data, match):
    with pytest.raises(ValueError, match=match):
        parse_config(data)


def test_files_and_round_trip(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("teachers = [1, 2")
    with pytest.raises(ValueError, match="TOML"):
        load_config(bad)
    with pytest.raises(FileNotFoundError, match="config"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(FileNotFoundError, match="available"):
        find_config("no-such-config")
    good = tmp_path / "good.toml"
    good.write_text('[data]\ndataset = "digits"\n[system]\nteachers = 12\nsigma = 2.0\n')
    s = load_config(good, overrides={"teachers": 14})
    assert (s.system.teachers, s.system.sigma) == (14, 2.0)
    with pytest.raises(TypeError, match="mapping"):
        parse_config(["dataset"])
    again = tmp_path / "again.toml"
    again.write_text(_settings.to_toml(demo_settings()))
    assert load_config(again) == demo_settings()


def test_schema_is_derived_from_the_settings():
    schema = config_schema()
    json.dumps(schema)
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert set(props) == {"name", "seed", "data", "system", "adversary", "engine", "audit"}
    assert props["system"]["properties"]["teachers"] == {
        "type": "integer",
        "description": "number of teachers m",
        "default": 250,
    }
    leaves = {f.path for f in _settings.fields(PrivatePredictionSettings)}
    assert "engine.experiments" in leaves and "audit.delta" in leaves
