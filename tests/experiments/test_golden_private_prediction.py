"""Every number of the demo stays the same through refactoring: the demo's results are
compared with a golden file, to 1e-12.

The file was first written by the code before the redesign (commit 2b9df24) and rewritten
once, when the exact PATE output distributions moved to the one-pass dual-number computation
(``_multinomial_pair_output``): the two agree to 6.7e-16 absolute on every output
probability, 1.4e-12 relative on the composed exact RDP and 1.4e-14 on the composed audits;
15 of 4,800 sampled counts moved, since the exact sampler's draws follow p̄ to the last bit."""

from __future__ import annotations

import gzip
import json
import math
import pathlib

import pytest

from dpaudit.experiments import demo_settings
from dpaudit.experiments.private_prediction import audit_private_prediction

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "golden" / "demo_results.json.gz"
IGNORED = {"engine_seconds", "method"}


def _compare(old, new, path: str, problems: list[str]) -> None:
    if isinstance(old, dict):
        assert isinstance(new, dict), path
        for key, value in old.items():
            if key in IGNORED:
                continue
            if key not in new:
                problems.append(f"{path}.{key}: missing")
                continue
            _compare(value, new[key], f"{path}.{key}", problems)
    elif isinstance(old, list):
        if not isinstance(new, list) or len(old) != len(new):
            problems.append(f"{path}: length {len(old)} != {len(new) if new else None}")
            return
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _compare(a, b, f"{path}[{i}]", problems)
    elif isinstance(old, bool) or old is None or isinstance(old, str):
        if old != new:
            problems.append(f"{path}: {old!r} != {new!r}")
    elif isinstance(old, (int, float)) and not _same_number(old, new):
        problems.append(f"{path}: {old!r} != {new!r}")


def _same_number(old: float, new: object) -> bool:
    if not isinstance(new, (int, float)) or isinstance(new, bool):
        return False
    return math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-300)


@pytest.fixture(scope="module")
def demo():
    return json.loads(audit_private_prediction(demo_settings()).to_json())


def test_demo_numbers_equal_the_golden_file(demo):
    with gzip.open(GOLDEN, "rt") as f:
        old = json.load(f)
    problems: list[str] = []
    assert len(old["results"]) == len(demo["entries"]) == 6
    for i, (a, e) in enumerate(zip(old["results"], demo["entries"], strict=True)):
        _compare(a, e["detail"], f"results[{i}]", problems)
    _compare(old["plurality_accuracy"], demo["detail"]["plurality_accuracy"], "accuracy", problems)
    assert not problems, "\n".join(problems[:20])
