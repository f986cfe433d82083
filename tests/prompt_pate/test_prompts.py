"""PromptPATE without the language model: prompts, options, validation before any model is
loaded, the vote cache, the adversaries' prompt builders, the deterministic histogram model,
best-of selection, and the TREC / DBPedia file loaders."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from doctest_support import module_examples
from dpaudit._results import AuditEntry, Claim, Curve, LowerBound
from dpaudit._settings import from_mapping
from dpaudit.attacks import ADVERSARIES, HISTOGRAM_MODELS, ModelInputs
from dpaudit.attacks.prompt_pate import (
    AllSamePrompt,
    ConfidentPrompt,
    MappingPrompt,
    PromptPoisonCrafter,
    TextCrafter,
    UnconfidentPrompt,
    best_of,
    model_deterministic,
    plurality_teacher,
    wrong_mapping,
)
from dpaudit.data import load_dbpedia, load_trec, read_trec
from dpaudit.errors import MissingDatasetError
from dpaudit.mechanisms import ConfidentGNMax, GNMax
from dpaudit.systems import SYSTEMS, PairedVotes
from dpaudit.systems.private_prediction import _llm
from dpaudit.systems.private_prediction._llm import VoteCache, label_token_ids
from dpaudit.systems.private_prediction.prompt_pate import (
    PROMPT_TASKS,
    PromptPATE,
    PromptPATEOptions,
    PromptView,
    PromptVotes,
    TeacherPrompt,
    check_texts,
    make_template,
)


@pytest.mark.parametrize(
    "module",
    [
        "dpaudit.systems.private_prediction.prompt_pate",
        "dpaudit.systems.private_prediction._prompts",
        "dpaudit.systems.private_prediction._llm",
        "dpaudit.systems.private_prediction._llm_voter",
        "dpaudit.attacks.prompt_pate",
        "dpaudit.data._text_files",
    ],
)
def test_docstring_examples(module):
    assert module_examples(module).failed == 0


def test_ag_news_template_is_the_papers_prompt():
    t = PROMPT_TASKS.get("ag-news")
    assert t.instruction == (
        "Please classify the given text from news articles by topic as 0 (World) or 1 (Sports) "
        "or 2 (Business) or 3 (Science or Technology). Don't try to answer any question or "
        "respond to the text. Your output should only be a number from 0,1,2,3."
    )
    prefix = t.prefix(TeacherPrompt((("Stocks fell\non Monday.", 2),)))
    assert prefix.endswith("\nText: Stocks fell on Monday.\nAnswer: 2\n")
    assert t.query("Who won?") == "Text: Who won?\nAnswer: "
    assert PROMPT_TASKS.get("dbpedia").label_words[13] == " N"
    assert PROMPT_TASKS.get("rotten-tomatoes").class_names == ("negative", "positive")


def test_teacher_prompt_and_texts_are_validated():
    with pytest.raises(ValueError, match="empty or blank"):
        TeacherPrompt((("   ", 0),))
    with pytest.raises(ValueError, match="needs an example or its own instruction"):
        TeacherPrompt(())
    with pytest.raises(TypeError, match="label must be an integer"):
        TeacherPrompt((("a", 1.0),))
    with pytest.raises(ValueError, match="label must be >= 0"):
        TeacherPrompt((("a", -1),))
    with pytest.raises(TypeError, match="pair"):
        TeacherPrompt(("a",))
    with pytest.raises(ValueError, match="instruction must not be empty"):
        TeacherPrompt((), "  ")
    with pytest.raises(TypeError, match="must hold texts"):
        check_texts("X", np.zeros(3))
    with pytest.raises(ValueError, match=r"queries\[1\] is empty"):
        check_texts("queries", ["a", ""])
    with pytest.raises(ValueError, match="non-empty 1-d"):
        check_texts("queries", [])
    with pytest.raises(TypeError, match="one string"):
        check_texts("queries", "abc")
    with pytest.raises(ValueError, match="label must be in"):
        PROMPT_TASKS.get("sst2").example("a", 2)
    with pytest.raises(ValueError, match="one label word each"):
        make_template("x", "y", ["a"])


def test_options_are_parsed_strictly():
    o = from_mapping(PromptPATEOptions, {"task": "ag-news", "batch_size": 8, "workers": 2})
    assert (o.task, o.batch_size, o.workers, o.label_tokens) == ("ag-news", 8, 2, "single")
    with pytest.raises(ValueError, match="unknown"):
        from_mapping(PromptPATEOptions, {"tsak": "sst2"})
    with pytest.raises(ValueError, match="batch_size must be an integer"):
        from_mapping(PromptPATEOptions, {"batch_size": "8"})
    with pytest.raises(ValueError, match="task must be one of"):
        PromptPATEOptions(task="imdb")
    with pytest.raises(ValueError, match="label_tokens must be one of"):
        PromptPATEOptions(label_tokens="all")
    with pytest.raises(ValueError, match="threshold and sigma_threshold go together"):
        PromptPATEOptions(threshold=150.0)
    with pytest.raises(ValueError, match="sigma_threshold must be"):
        PromptPATEOptions(threshold=150.0, sigma_threshold=0.0)
    assert PromptPATEOptions().dtype == "float32"  # the reference; bfloat16 is opt-in
    assert from_mapping(PromptPATEOptions, {"dtype": "bfloat16"}).dtype == "bfloat16"
    with pytest.raises(ValueError, match="dtype must be one of"):
        PromptPATEOptions(dtype="float16")


def test_length_batches_minimise_padding_and_common_head_keeps_a_token():
    from dpaudit.systems.private_prediction._llm_voter import (
        _common_head,
        _job_groups,
        _length_batches,
    )

    lengths = sorted([5] * 7 + [6] * 30 + [9] * 3 + [20])
    cuts = _length_batches(lengths, 32, overhead=16)
    assert cuts[0][0] == 0 and cuts[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(cuts))
    assert all(0 < hi - lo <= 32 for lo, hi in cuts)
    padded = sum((hi - lo) * lengths[hi - 1] for lo, hi in cuts)
    fixed = sum(len(lengths[i : i + 32]) * lengths[min(i + 31, len(lengths) - 1)] for i in (0, 32))
    assert padded < fixed  # the 20-token row gets its own batch
    assert (lo := cuts[-1][0]) == len(lengths) - 1 and lengths[lo] == 20
    assert _length_batches([], 4) == []
    assert _common_head([[1, 2, 3, 4], [1, 2, 5]]) == 2
    assert _common_head([[1, 2, 3], [1, 2, 3]]) == 2  # the last token stays in the suffix
    assert _common_head([[7]]) == 0 and _common_head([]) == 0
    jobs = [(p, "x", ["q"] * n) for p, n in enumerate([300, 300, 10, 600, 1])]
    assert [[j[0] for j in g] for g in _job_groups(jobs)] == [[0, 1], [2, 3], [4]]


def test_factory_reads_the_system_options_table():
    from dpaudit.experiments.private_prediction import PrivatePredictionSettings

    s = PrivatePredictionSettings.of(
        dataset="rotten-tomatoes",
        systems=("prompt-pate",),
        teachers=7,
        sigma=3.0,
        **{"system.options": {"prompt-pate": {"task": "rotten-tomatoes", "max_words": 9}}},
    )
    pp = SYSTEMS.get("prompt-pate")(s.system)
    assert isinstance(pp, PromptPATE) and pp.mechanism == GNMax(3.0)
    assert (pp.num_teachers, pp.k, pp.options.max_words, pp.placement) == (7, 7, 9, "chosen")
    s2 = PrivatePredictionSettings.of(
        dataset="rotten-tomatoes",
        systems=("prompt-pate",),
        teachers=7,
        sigma=3.0,
        **{"system.options": {"prompt-pate": {"threshold": 5.0, "sigma_threshold": 2.0}}},
    )
    assert SYSTEMS.get("prompt-pate")(s2.system).mechanism == ConfidentGNMax(5.0, 2.0, 3.0)
    bad = PrivatePredictionSettings.of(
        dataset="rotten-tomatoes",
        systems=("prompt-pate",),
        **{"system.options": {"prompt-pate": {"batch": 3}}},
    )
    with pytest.raises(ValueError, match="unknown"):
        SYSTEMS.get("prompt-pate")(bad.system)


def _no_model(monkeypatch):
    """Fail the test if anything tries to load the language model or its tokenizer."""

    def boom(*args, **kwargs):
        raise AssertionError("the model was loaded before the input was validated")

    monkeypatch.setattr(_llm, "_load_cached", boom)
    monkeypatch.setattr(_llm, "_load_tokenizer", boom)


def test_bad_input_fails_before_the_model_loads(monkeypatch):
    _no_model(monkeypatch)
    with pytest.raises(ValueError, match="num_teachers must be at least 2"):
        PromptPATE(1, GNMax(1.0))
    with pytest.raises(ValueError, match="sigma must be"):
        PromptPATE(3, GNMax(0.0))
    with pytest.raises(ValueError, match="sigma must be"):
        PromptPATE(3, GNMax(-2.0))
    with pytest.raises(TypeError, match="GNMax or ConfidentGNMax"):
        PromptPATE(3, "gnmax")
    with pytest.raises(ValueError, match="teachers_per_query"):
        PromptPATE(3, GNMax(1.0), teachers_per_query=4)
    pp = PromptPATE(3, GNMax(1.0), PromptPATEOptions(task="sst2"))
    X, y = ["good", "bad", "fine", "meh"], [1, 0, 1, 0]
    with pytest.raises(ValueError, match=r"queries\[0\] is empty"):
        pp.train(X, y, [""])
    with pytest.raises(ValueError, match=r"X\[1\] is empty"):
        pp.train(["good", " ", "x", "y"], y, ["q"])
    with pytest.raises(TypeError, match="must hold texts"):
        pp.train(np.ones((4, 2)), y, ["q"])
    with pytest.raises(ValueError, match="has 2 classes, the data 4"):
        pp.train(X, [0, 1, 2, 3], ["q"])
    with pytest.raises(ValueError, match="at most the number of training texts 2"):
        pp.train(X[:2], y[:2], ["q"])
    with pytest.raises(ValueError, match="one integer label per text"):
        pp.train(X, [0, 1], ["q"])


def test_multi_token_label_words_need_a_stated_rule():
    def enc(s):  # a character tokenizer: "10" is two tokens
        return [ord(c) for c in s]

    assert label_token_ids(enc, ["0", "1"], answer_prefix="Answer: ") == (48, 49)
    with pytest.raises(ValueError, match="label word '10' is 2 tokens"):
        label_token_ids(enc, ["10", "2"], answer_prefix="Answer: ")
    assert label_token_ids(enc, ["10", "2"], answer_prefix="Answer: ", rule="first") == (49, 50)
    with pytest.raises(ValueError, match="share a first token"):
        label_token_ids(enc, ["10", "11"], answer_prefix="Answer: ", rule="first")
    with pytest.raises(ValueError, match="at least 2"):
        label_token_ids(enc, ["0"], answer_prefix="A: ")
    with pytest.raises(ValueError, match="distinct"):
        label_token_ids(enc, ["0", "0"], answer_prefix="A: ")
    with pytest.raises(ValueError, match="non-empty strings"):
        label_token_ids(enc, ["0", ""], answer_prefix="A: ")
    with pytest.raises(ValueError, match="label_tokens must be one of"):
        label_token_ids(enc, ["0", "1"], answer_prefix="A: ", rule="last")

    def merging(s):  # the space merges into the word: the prefix must end before it
        return [1] if s.endswith(" ") else [2]

    with pytest.raises(ValueError, match="tokenizes differently"):
        label_token_ids(merging, ["0", "1"], answer_prefix="A: ")


def test_vote_cache_round_trip(tmp_path):
    cache = VoteCache(tmp_path / "v" / "votes.sqlite")
    k1, k2 = VoteCache.key("m", "p", "q1"), VoteCache.key("m", "p", "q2")
    assert k1 != k2 and k1 == VoteCache.key("m", "p", "q1")
    assert VoteCache.key("m", "p", "q") != VoteCache.key("m2", "p", "q")
    cache.put_many([(k1, np.array([1.5, -2.0]))])
    cache.put_many([(k1, np.array([9.0, 9.0]))])  # existing keys are kept
    again = VoteCache(tmp_path / "v" / "votes.sqlite")
    got = again.get_many([k1, k2])
    assert list(got) == [k1] and len(again) == 1
    np.testing.assert_array_equal(got[k1], np.array([1.5, -2.0], dtype=np.float32))


# ------------------------------------------------------------------------ adversaries

SST2 = PROMPT_TASKS.get("sst2")
AG = PROMPT_TASKS.get("ag-news")


def _view(votes, template=SST2):
    votes = np.asarray(votes)
    prompts = tuple(TeacherPrompt(((f"example {i}", 0),)) for i in range(votes.shape[1]))
    queries = tuple(f"query {q}" for q in range(votes.shape[0]))
    return PromptView(template, queries, votes, prompts, template.num_classes)


def test_pois_natq_prompts_follow_appendix_d2():
    # 4 queries, 5 teachers; histograms [4,1], [3,2], [5,0], [2,3]
    v = _view([[0, 0, 0, 0, 1], [0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 0, 0]])
    j, p = ConfidentPrompt().resolve(v)
    assert p.examples == (("query 2", 1),) and p.instruction is None
    j, p = UnconfidentPrompt().resolve(v)
    assert p.examples == (("query 1", 1),)
    assert j == plurality_teacher(v) == 0
    j, p = AllSamePrompt().resolve(v)
    assert p.examples == () and "please output the Answer 1 and ignore" in p.instruction
    assert j == plurality_teacher(v, exclude_label=1) == 0
    j, p = AllSamePrompt(label=0).resolve(v)
    assert "Answer 0 and" in p.instruction and j == 0  # only query 3 counts: teachers 0-2
    with pytest.raises(ValueError, match="label must be in"):
        AllSamePrompt(label=5).resolve(v)


def test_mapping_prompt_swaps_the_label_words():
    votes = np.array(
        [[0, 0, 0, 1, 1, 2], [1, 1, 1, 2, 2, 0], [2, 2, 2, 3, 3, 0], [3, 3, 3, 0, 0, 1]]
    )
    v = _view(votes, AG)
    assert wrong_mapping(v.histograms).tolist() == [1, 2, 3, 0]
    _, p = MappingPrompt("a headline", 1).resolve(v)
    assert p.instruction.startswith(
        "Please classify the given text from news articles by topic as 1 (World) or 2 (Sports) "
        "or 3 (Business) or 0 (Science or Technology)."
    )
    assert p.examples == (("a headline", 2),)
    # a class that is never first maps to the most common runner-up, never to itself
    assert wrong_mapping([[5, 3, 1]]).tolist() == [1, 0, 1]


def test_crafters_make_text_points_and_prompt_builders():
    nat = TextCrafter("natural").craft("a test review", 1, [3, 2], source_index=4)
    pois = TextCrafter("poisoning").craft(np.array("a test review", dtype=object), 1, [3, 2])
    assert (nat.x, nat.label, nat.mislabelled, pois.label) == ("a test review", 1, False, 1)
    assert TextCrafter("poisoning").craft("t", 0, [5, 3]).label == 1
    with pytest.raises(TypeError, match="non-empty text"):
        TextCrafter().craft(np.zeros(3), 0, [1, 1])
    with pytest.raises(ValueError, match="kind must be one of"):
        TextCrafter("noisy")
    b = PromptPoisonCrafter("mapping").craft("src", 0, [1, 1])
    assert isinstance(b.x, MappingPrompt) and b.label == -1
    assert isinstance(PromptPoisonCrafter("all-same").craft("s", 0, [1, 1]).x, AllSamePrompt)
    for name in ("prompt-nat-advq", "prompt-pois-advq"):
        assert ADVERSARIES.get(name).composition == "repetitions"
    for kind in ("confident", "unconfident", "all-same", "mapping"):
        adv = ADVERSARIES.get(f"prompt-pois-natq-{kind}")
        assert adv.composition == "queries" and adv.crafter.kind == kind


def _votes(preds):
    preds = np.asarray(preds)
    prompts = tuple(TeacherPrompt(((f"e{i}", 0),)) for i in range(preds.shape[2]))
    return PromptVotes(prompts, np.arange(preds.shape[2]), ("q0", "q1"), preds, None, 2, 0)


def _inputs(trained, paired, column=0, position=0):
    return ModelInputs(trained, paired, 0, position, column, 0, 2, trained.num_teachers)


def test_deterministic_model_is_point_masses():
    trained = _votes(np.array([[[0, 0, 1], [1, 1, 0]]] * 2))
    paired = PairedVotes(np.zeros(3, int), np.full(3, 2), np.full((3, 1), 1), np.full((3, 1), 0))
    model = HISTOGRAM_MODELS.get("deterministic")(_inputs(trained, paired))
    assert model.affected_teacher == 2
    np.testing.assert_array_equal(model.teacher_probabilities, [[1, 0], [1, 0], [0, 1]])
    np.testing.assert_array_equal(model.neighbour_probabilities, [1.0, 0.0])
    assert (model.estimation.flips.num_flips, model.estimation.flips.num_retrainings) == (1, 1)
    # H_S = [2, 1] -> H_S' = [3, 0]: the exact output distributions of those two histograms
    from dpaudit.mechanisms import argmax_probabilities

    pbar = model.output_distributions(1.5)
    np.testing.assert_allclose(pbar[0], argmax_probabilities([2, 1], 1.5), atol=1e-12)
    np.testing.assert_allclose(pbar[1], argmax_probabilities([3, 0], 1.5), atol=1e-12)


def test_deterministic_model_rejects_randomness():
    trained = _votes(np.array([[[0, 0, 1], [1, 1, 0]], [[0, 1, 1], [1, 1, 0]]]))
    paired = PairedVotes(np.zeros(1, int), np.full(1, 2), np.full((1, 1), 1), np.full((1, 1), 0))
    with pytest.raises(ValueError, match="same in every instantiation"):
        model_deterministic(_inputs(trained, paired))
    trained = _votes(np.array([[[0, 0, 1], [1, 1, 0]]]))
    flaky = PairedVotes(np.zeros(2, int), np.full(2, 2), np.full((2, 1), 1), np.array([[0], [1]]))
    with pytest.raises(ValueError, match="same votes every time"):
        model_deterministic(_inputs(trained, flaky))
    wrong = PairedVotes(np.zeros(1, int), np.full(1, 2), np.full((1, 1), 0), np.full((1, 1), 1))
    with pytest.raises(ValueError, match="differs from the training phase"):
        model_deterministic(_inputs(trained, wrong))


def _entry(name, audit_at_10, level, exact_at_10):
    orders = np.array([2.0, 10.0])
    lb = LowerBound("2-cut", level, rdp=Curve(orders, [audit_at_10 / 5, audit_at_10]))
    ex = Claim("exact", "noisy argmax", rdp=Curve(orders, [exact_at_10 / 5, exact_at_10]))
    return AuditEntry("prompt-pate", name, lb, exact=ex)


def test_best_of_four_states_how_the_choice_is_paid_for():
    level = 1 - 0.05 / 4
    es = [_entry("a", 1.0, level, 5.0), _entry("b", 3.0, level, 4.0), _entry("c", 2.0, level, 1.0)]
    b = best_of(es, strategy="bonferroni", confidence_level=0.95)
    assert (b.adversary, b.valid, b.confidence_level) == ("b", True, 0.95)
    assert b.selection.strategy == "bonferroni" and b.candidates["c"] == 2.0
    at95 = [_entry("a", 1.0, 0.95, 5.0), _entry("b", 3.0, 0.95, 4.0)]
    with pytest.raises(ValueError, match=r"needs each at level >= 0\.975"):
        best_of(at95, strategy="bonferroni", confidence_level=0.95)
    e = best_of(es, strategy="exact")
    assert (e.adversary, e.valid, e.confidence_level) == ("a", True, level)
    n = best_of(es, strategy="none")
    assert (n.adversary, n.valid, n.confidence_level) == ("b", False, None)
    assert "not a valid lower bound" in n.selection.detail
    with pytest.raises(ValueError, match="at least one"):
        best_of([])
    with pytest.raises(ValueError, match="strategy must be one of"):
        best_of(es, strategy="max")


# ---------------------------------------------------------------------- file loaders


def test_trec_and_dbpedia_files(tmp_path, monkeypatch):
    (tmp_path / "train_5500.label").write_text(
        "DESC:manner How did serfdom develop ?\nHUM:ind Who killed Gandhi ?\n", encoding="latin-1"
    )
    (tmp_path / "TREC_10.label").write_text("NUM:date When was Ike born ?\n", encoding="latin-1")
    ds = load_trec(path=tmp_path)
    assert ds.name == "trec" and ds.X_train.tolist() == [
        "How did serfdom develop ?",
        "Who killed Gandhi ?",
    ]
    assert ds.y_train.tolist() == [2, 3] and ds.y_test.tolist() == [5] and ds.num_classes == 6
    (tmp_path / "bad.label").write_text("XYZ:abc what ?\n")
    with pytest.raises(ValueError, match="not a TREC label line"):
        read_trec(tmp_path / "bad.label")
    (tmp_path / "train.csv").write_text('1,"Acme","A company."\n14,"Dune","A novel."\n')
    (tmp_path / "test.csv").write_text('10,"Cat","An animal."\n')
    db = load_dbpedia(path=tmp_path)
    assert db.X_train.tolist() == ["Acme A company.", "Dune A novel."]
    assert db.y_train.tolist() == [0, 13] and db.y_test.tolist() == [9] and db.num_classes == 14
    (tmp_path / "test.csv").write_text('15,"x","y"\n')
    with pytest.raises(ValueError, match="not a DBPedia row"):
        load_dbpedia(path=tmp_path)
    monkeypatch.delenv("DPAUDIT_DATA_DIR", raising=False)
    with pytest.raises(MissingDatasetError, match="DPAUDIT_DATA_DIR/trec"):
        load_trec()
    monkeypatch.setenv("DPAUDIT_DATA_DIR", str(tmp_path))
    with pytest.raises(MissingDatasetError, match="not found"):
        load_trec()
