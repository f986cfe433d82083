"""LLM canaries, scores, metrics and extraction (dpaudit.attacks._llm): the four kinds, the
scores against their formulas, TPR at low FPR and AUC against scikit-learn, the secret losses
against the model's own loss, greedy extraction, and every argument checked."""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from dpaudit.attacks import (
    LLM_CANARY_KINDS,
    canary_scores,
    draw_llm_canaries,
    greedy_extraction,
    membership_metrics,
    secret_losses,
)
from dpaudit.systems.llm import CausalLM, encode_texts, new_token_lm, tiny_gpt

TEXTS = [
    "a quiet film about a loud family",
    "the plot wanders but the actors hold it together",
    "funny, sharp and far too short",
    "a dull remake of a dull original",
] * 10


@functools.lru_cache(maxsize=1)
def _lm() -> CausalLM:
    return tiny_gpt(TEXTS, vocab_size=300, layers=1, hidden=16, heads=2, context=16,
                    pretrain_steps=3, batch_size=8, rng=0)  # fmt: skip


def test_kinds_share_prefixes_and_inclusions():
    lm = _lm()
    corpus = encode_texts(lm, TEXTS, 12)[0]
    out = {k: draw_llm_canaries(k, lm, 12, prefix_length=3, secret_length=2, corpus=corpus,
                                rare_pool=5, rng=7)
           for k in LLM_CANARY_KINDS.names()}  # fmt: skip
    base = out["random-token"]
    special = lm.special_ids()
    for kind, c in out.items():
        assert c.secret.shape == (12, 2) and c.kind == kind
        np.testing.assert_array_equal(c.included, base.included)
        if kind != "model-generated":
            np.testing.assert_array_equal(c.prefix, base.prefix)
        ids, lengths = c.sequences()
        assert ids.shape == (12, 6) and np.all(lengths == 6) and np.all(ids[:, 0] == lm.bos_id)
        if kind != "new-token":
            assert not set(c.secret.ravel()) & special and c.secret.max() < lm.base_vocab
    new = out["new-token"]
    assert new.lm.new_tokens == 24 and len(set(new.secret.ravel())) == 24
    assert new.secret.min() == lm.base_vocab
    # rare-token: drawn from the 5 least frequent ordinary tokens of the corpus
    counts = np.bincount(corpus.ravel(), minlength=lm.base_vocab)
    ordinary = np.array(sorted(set(range(lm.base_vocab)) - special))
    fifth = np.sort(counts[ordinary])[4]
    assert np.all(counts[out["rare-token"].secret] <= fifth)


def test_draws_are_seeded():
    lm = _lm()
    a = draw_llm_canaries("model-generated", lm, 6, prefix_length=2, secret_length=2, rng=3)
    b = draw_llm_canaries("model-generated", lm, 6, prefix_length=2, secret_length=2, rng=3)
    np.testing.assert_array_equal(a.secret, b.secret)
    np.testing.assert_array_equal(a.prefix, b.prefix)


@pytest.mark.parametrize(
    ("kw", "err", "match"),
    [
        ({"kind": "emoji"}, ValueError, "emoji"),
        ({"count": 1}, ValueError, "count"),
        ({"prefix_length": 12}, ValueError, "longer than the model's context"),
        ({"secret_length": 0}, ValueError, "secret_length"),
        ({"inclusion": 1.0}, ValueError, "inclusion"),
        ({"kind": "rare-token"}, ValueError, "corpus"),
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"rare_pool": 0}, ValueError, "rare_pool"),
        ({"lm": "gpt"}, TypeError, "lm"),
    ],
)
def test_draw_refuses_bad_arguments(kw, err, match):
    args = {"kind": "random-token", "lm": _lm(), "count": 4, "prefix_length": 4,
            "secret_length": 4, **kw}  # fmt: skip
    with pytest.raises(err, match=match):
        draw_llm_canaries(args.pop("kind"), args.pop("lm"), args.pop("count"), **args, rng=0)


def test_scores_follow_their_formulas():
    texts = ["alpha beta", "gamma"]
    s = canary_scores([1.5, 3.0], [3.0, 2.0], texts, 4)
    np.testing.assert_allclose(s["loss"], [-1.5, -3.0])
    np.testing.assert_allclose(s["loss-ratio"], [-0.5, -1.5])
    bits = [8 * len(zlib.compress(t.encode())) for t in texts]
    np.testing.assert_allclose(s["zlib"], [-6.0 / bits[0], -12.0 / bits[1]])
    with pytest.raises(ValueError, match="reference_losses"):
        canary_scores([1.0], [0.0], ["a"], 1)
    with pytest.raises(ValueError, match="secret_texts"):
        canary_scores([1.0, 2.0], [1.0, 1.0], ["a"], 1)
    with pytest.raises(TypeError, match="secret_texts"):
        canary_scores([1.0], [1.0], [3], 1)


def test_membership_metrics_match_scikit_learn():
    """Reference: sklearn's roc_curve (largest TPR at FPR ≤ level) and roc_auc_score."""
    from sklearn.metrics import roc_auc_score, roc_curve

    g = np.random.default_rng(0)
    for n in (300, 2500):
        inc = g.random(n) < 0.5
        s = g.normal(size=n) + 1.5 * inc
        m = membership_metrics(s, inc)
        fpr, tpr, _ = roc_curve(inc, s)
        assert m.tpr_at_1pct_fpr == pytest.approx(tpr[fpr <= 0.01].max())
        assert m.tpr_at_01pct_fpr == pytest.approx(tpr[fpr <= 0.001].max())
        assert m.auc == pytest.approx(roc_auc_score(inc, s))
        assert (m.members, m.non_members) == (int(inc.sum()), int((~inc).sum()))
    with pytest.raises(ValueError, match="non-members"):
        membership_metrics([1.0, 2.0], [1, 1])
    with pytest.raises(ValueError, match="included"):
        membership_metrics([1.0, 2.0], [1, 0, 1])


def test_secret_losses_match_the_models_own_loss():
    """Reference: the per-token cross-entropy of the secret positions, computed naively."""
    import torch

    lm = _lm()
    c = draw_llm_canaries("random-token", lm, 4, prefix_length=3, secret_length=2, rng=0)
    model = new_token_lm(lm, rng=0)
    ours = secret_losses(model, c)
    ids, _ = c.sequences()
    with torch.no_grad():
        for i in range(4):
            logits = lm.model(input_ids=torch.from_numpy(ids[i : i + 1])).logits[0]
            logp = torch.log_softmax(logits.double(), -1)
            ref = -np.mean([float(logp[j - 1, ids[i, j]]) for j in (4, 5)])
            np.testing.assert_allclose(ours[i], ref, rtol=1e-5)


def test_greedy_extraction_finds_exactly_the_memorised_secrets():
    import torch

    lm = _lm()
    c = draw_llm_canaries("random-token", lm, 4, prefix_length=2, secret_length=3, rng=1)
    ids, _ = c.sequences()
    table = {tuple(ids[i, :j]): int(ids[i, j]) for i in (0, 2) for j in range(3, 6)}

    class Parrot(torch.nn.Module):  # predicts the secrets of canaries 0 and 2 only
        def forward(self, x, mask):
            out = torch.zeros((*x.shape, lm.vocab_size))
            for b in range(x.shape[0]):
                out[b, -1, table.get(tuple(x[b].tolist()), 1)] = 1.0
            return out

    np.testing.assert_array_equal(greedy_extraction(Parrot(), c), [True, False, True, False])
