"""The reproduction summary's rank AUC (against a naive pairwise count and scikit-learn)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.experiments.dpsgd.reproduction import LAYOUTS, rank_auc, reproduction_summary


def _naive_auc(scores: np.ndarray, included: np.ndarray) -> float:
    pos, neg = scores[included], scores[~included]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def test_rank_auc_matches_naive_count_with_ties():
    g = np.random.default_rng(3)
    scores = np.round(g.normal(size=300), 1)  # many ties
    included = g.random(300) < 0.5
    np.testing.assert_allclose(rank_auc(scores, included), _naive_auc(scores, included), rtol=1e-12)


def test_rank_auc_matches_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    g = np.random.default_rng(4)
    included = g.random(500) < 0.5
    scores = g.normal(size=500) + 0.3 * included
    expected = metrics.roc_auc_score(included, scores)
    np.testing.assert_allclose(rank_auc(scores, included), expected, rtol=1e-12)


def test_rank_auc_rejects_bad_input():
    with pytest.raises(ValueError, match="both classes"):
        rank_auc([1.0, 2.0], [True, True])
    with pytest.raises(ValueError, match="matching scores"):
        rank_auc([1.0, 2.0, 3.0], [True, False])


def test_summary_of_an_empty_directory_lists_every_layout_as_not_run(tmp_path):
    summary = reproduction_summary(tmp_path)
    assert summary["layouts"] == {} and summary["not_run"] == list(LAYOUTS)


def test_layouts_keep_or_flip_the_canary_labels():
    from dpaudit import _settings
    from dpaudit._settings import find_config
    from dpaudit.experiments.dpsgd.reproduction import layout_settings
    from dpaudit.experiments.dpsgd.settings import DPSGDAuditSettings

    base = _settings.load_toml(find_config("dp-sgd-fashion-mnist"), DPSGDAuditSettings)
    assert base.canaries.kind == "flipped"
    liu = layout_settings(base, "table2-n5000-r0", canary_kind="data", repetitions=5)
    # true labels, as Liu et al. (§4: "we do not flip the canary labels"); the layout's sizes
    assert liu.canaries.kind == "data" and liu.repetitions == 5
    assert liu.canaries.num_canaries == 10000 and liu.data.num_non_canaries == 0
    assert layout_settings(base, "table1").canaries.kind == "flipped"
    with pytest.raises(ValueError, match="kind"):
        layout_settings(base, "table1", canary_kind="upside-down")
