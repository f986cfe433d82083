"""The LLM teacher's votes with the real model: the KV-cached batched path agrees with a plain
full-prompt forward pass, votes are deterministic across runs, from the disk cache and after a
restart, and every shipped task's label words are one token."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dpaudit.mechanisms import GNMax
from dpaudit.systems.private_prediction._llm import label_token_ids
from dpaudit.systems.private_prediction._llm_voter import PromptVoter
from dpaudit.systems.private_prediction.prompt_pate import (
    PROMPT_TASKS,
    PromptPATE,
    PromptPATEOptions,
    PromptTemplate,
    TeacherPrompt,
)

SHORT = PromptTemplate(
    "short",
    "Sentiment of the movie review: 0 (negative) or 1 (positive).",
    ("negative", "positive"),
    ("0", "1"),
)


def test_kv_cached_batched_votes_match_plain_forward_passes(language_model, reviews):
    ds, texts = reviews
    # 6-word texts: the 24 plain forward passes are the cost of this test (≈ 40 tokens each).
    # 4 teachers × 6 queries in batches of at most 7: the batches mix teachers' prefixes and
    # the pairs span several batches.
    texts = [" ".join(t.split()[:6]) for t in texts]
    prompts = [TeacherPrompt(((texts[i], int(ds.y_test[i])),)) for i in range(4)]
    prefixes = [SHORT.prefix(p) for p in prompts]
    suffixes = [SHORT.query(t) for t in texts[20:26]]
    voter = PromptVoter(
        language_model, SHORT.label_words, SHORT.answer_prefix, batch_size=7, threads=1
    )
    kv = voter.votes(prefixes, suffixes)
    plain = voter.votes_plain(prefixes, suffixes)
    assert kv.votes.shape == (6, 4) and kv.computed == 24
    np.testing.assert_array_equal(kv.votes, plain.votes)
    np.testing.assert_allclose(kv.logits, plain.logits, atol=2e-3, rtol=0)
    assert set(np.unique(kv.votes)) <= {0, 1}


def test_pooled_single_query_jobs_and_bfloat16_opt_in(language_model, reviews):
    ds, texts = reviews
    texts = [" ".join(t.split()[:6]) for t in texts]
    prefixes = [SHORT.prefix(TeacherPrompt(((texts[i], int(ds.y_test[i])),))) for i in range(4)]
    suffixes = [SHORT.query(t) for t in texts[20:24]]
    # one query per teacher (a crafted prompt's job): all but the suffix's last token join
    # the prefix; prefixes of different lengths share one masked batch
    pairs = np.eye(4, dtype=bool)
    voter = PromptVoter(language_model, SHORT.label_words, SHORT.answer_prefix, threads=1)
    kv = voter.votes(prefixes, suffixes, pairs=pairs)
    plain = voter.votes_plain(prefixes, suffixes)
    assert kv.computed == 4 and np.all(kv.votes[~pairs] == -1)
    np.testing.assert_array_equal(kv.votes[pairs], plain.votes[pairs])
    np.testing.assert_allclose(kv.logits[pairs], plain.logits[pairs], atol=2e-3, rtol=0)
    bf = PromptVoter(
        language_model, SHORT.label_words, SHORT.answer_prefix, threads=1, dtype="bfloat16"
    )
    assert voter.dtype == "float32" and bf.model_key != voter.model_key  # cached apart
    low = bf.votes(prefixes, suffixes)
    assert low.votes.shape == (4, 4) and set(np.unique(low.votes)) <= {0, 1}
    assert np.mean(low.votes != plain.votes) <= 0.25  # close to float32, not the reference
    assert language_model.model.dtype == language_model.model.model.embed_tokens.weight.dtype
    assert str(language_model.model.dtype) == "torch.float32"  # the shared model untouched


_RESTART = """
import json, sys
from dpaudit.mechanisms import GNMax
from dpaudit.data import load_dataset
from dpaudit.systems.private_prediction.prompt_pate import PromptPATE, PromptPATEOptions
ds = load_dataset("rotten-tomatoes")
texts = [" ".join(t.split()[:12]) for t in ds.X_test[:60].tolist()]
out = {}
for cache in (False, True):
    o = PromptPATEOptions(task="rotten-tomatoes", max_words=12, cache_dir=sys.argv[1],
                          vote_cache=cache, threads=1)
    t = PromptPATE(3, GNMax(1.0), o).train(ds.X_train[:50], ds.y_train[:50], texts[:4], rng=3)
    out[str(cache)] = [t.predictions[0].tolist(), t.computed]
print(json.dumps(out))
"""


def test_votes_are_deterministic_across_runs_cache_and_restart(language_model, reviews, tmp_path):
    ds, texts = reviews
    X, y, queries = ds.X_train[:50], ds.y_train[:50], texts[:4]

    def system(cache: bool) -> PromptPATE:
        o = PromptPATEOptions(
            task="rotten-tomatoes",
            max_words=12,
            cache_dir=str(tmp_path),
            vote_cache=cache,
            threads=1,
        )
        return PromptPATE(3, GNMax(1.0), o)

    first = system(True).train(X, y, queries, instantiations=2, rng=3)
    assert first.computed == 12 and first.predictions.shape == (2, 4, 3)
    np.testing.assert_array_equal(first.predictions[0], first.predictions[1])
    cached = system(True).train(X, y, queries, rng=3)
    assert cached.computed == 0
    again = system(False).train(X, y, queries, rng=3)
    assert again.computed == 12
    for other in (cached, again):
        np.testing.assert_array_equal(other.predictions[0], first.predictions[0])
        np.testing.assert_array_equal(other.histograms, first.histograms)
    np.testing.assert_array_equal(again.logits, first.logits)
    proc = subprocess.run(
        [sys.executable, "-c", _RESTART, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["False"][0] == first.predictions[0].tolist()  # recomputed after a restart
    assert out["True"] == [first.predictions[0].tolist(), 0]  # read back from the cache


def test_shipped_tasks_have_one_token_label_words(language_model):
    for name in PROMPT_TASKS.names():
        t = PROMPT_TASKS.get(name)
        ids = label_token_ids(language_model.encode, t.label_words, answer_prefix=t.answer_prefix)
        assert len(set(ids)) == t.num_classes
    assert PromptPATE(2, GNMax(1.0), PromptPATEOptions(task="dbpedia")).check_task()[0] == 330
    with pytest.raises(ValueError, match="label word '10' is 2 tokens"):
        label_token_ids(language_model.encode, ["10", "2"], answer_prefix="Answer: ")
    first = label_token_ids(
        language_model.encode, ["10", "2"], answer_prefix="Answer: ", rule="first"
    )
    assert first == tuple(language_model.encode("12")[:1] + language_model.encode("2"))
