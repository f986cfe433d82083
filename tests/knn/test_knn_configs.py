"""The shipped Private-kNN configs (the paper's settings) parse and build their system."""

from __future__ import annotations

import pytest

from dpaudit.experiments.private_prediction.config import find_config, load_config, shipped_configs
from dpaudit.systems import SYSTEMS

CONFIGS = {
    "private-knn-fashion-mnist": ("fashion-mnist", 30.0),
    "private-knn-fashion-mnist-vit": ("fashion-mnist-vit", 30.0),
    "private-knn-rotten-tomatoes": ("rotten-tomatoes-minilm", 20.0),
    "private-knn-wordnet-nouns": ("wordnet-nouns-minilm", 20.0),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_shipped_config_has_the_papers_settings(name):
    assert name in shipped_configs()
    s = load_config(find_config(name))
    dataset, sigma = CONFIGS[name]
    assert s.data.dataset == dataset and s.system.systems == ("private-knn",)
    knn = SYSTEMS.get("private-knn")(s.system)
    assert knn.k == 200 and knn.sampling_rate == 0.2 and knn.mechanism.sigma == sigma
    assert s.adversary.queries == 1000 and s.engine.experiments == 10**8
    assert {"nat-advq", "pois-advq", "pois-natq-embedding"} <= set(s.adversary.adversaries)


def test_bad_knn_options_in_a_config_fail_before_any_work(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(
        '[system]\nsystems = ["private-knn"]\n[system.options.private-knn]\nsampling_rate = 2.0\n'
    )
    s = load_config(f)
    with pytest.raises(ValueError, match="sampling_rate"):
        SYSTEMS.get("private-knn")(s.system)
