"""Issue 45: the benchmarks take options the way the command line does (one argparse helper,
``benchmarks/_cli.py``), never by reading ``sys.argv`` by hand."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _reads_argv(path: Path) -> list[int]:
    """Lines where ``sys.argv`` is read."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "argv"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ]


def test_no_benchmark_reads_sys_argv_by_hand():
    scripts = sorted(BENCH.glob("*.py"))
    assert len(scripts) > 10
    bad = {p.name: lines for p in scripts if (lines := _reads_argv(p))}
    assert not bad, f"sys.argv read by hand (use benchmarks/_cli.py): {bad}"


def test_the_helper_parses_like_the_command_line(capsys):
    sys.path.insert(0, str(BENCH))
    try:
        from _cli import bench_parser, parse, quick
    finally:
        sys.path.remove(str(BENCH))
    parser = bench_parser("Benchmark: a toy.\n\nMore.", quick_option=True)
    parser.add_argument("--runs", type=int, default=96)
    assert parser.description == "Benchmark: a toy."
    args = parse(parser, ["--runs", "8", "--quick"])
    assert args.runs == 8 and quick(args)
    for bad, named in ((["--run", "8"], "--run"), (["--runs", "x"], "--runs")):
        with pytest.raises(SystemExit) as info:
            parse(parser, bad)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "error:" in err and named in err


@pytest.mark.parametrize("script", ["run_all.py", "bench_one_run_table1.py"])
def test_a_benchmark_answers_help_and_refuses_a_bad_option(script):
    path = str(BENCH / script)
    ok = subprocess.run([sys.executable, path, "--help"], capture_output=True, text=True,
                        timeout=120)  # fmt: skip
    assert ok.returncode == 0 and "usage:" in ok.stdout
    bad = subprocess.run([sys.executable, path, "--no-such-option"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "--no-such-option" in bad.stderr
