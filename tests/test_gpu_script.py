"""benchmarks/gpu.sh (issue 44, item 4): CI has no GPU, so the script is checked statically —
it parses, fits its 8-minute budget, exits 3 without CUDA, and every benchmark, config and
command-line option it names exists (a renamed option would otherwise only fail on a lent
device)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu.sh"
TEXT = SCRIPT.read_text()
#: ``step NAME LIMIT OUT COMMAND...`` with its continuation lines joined.
STEPS = re.findall(r"^step (\S+) (\d+) (\S+) (.*?)$", TEXT.replace("\\\n", " "), re.MULTILINE)


def test_the_script_parses_and_fits_eight_minutes():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    subprocess.run([bash, "-n", str(SCRIPT)], check=True)
    assert len(STEPS) >= 4
    assert sum(int(limit) for _, limit, _, _ in STEPS) <= 8 * 60


def test_without_cuda_it_runs_nothing_and_exits_3(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    env = {"PATH": "/usr/bin:/bin", "PY": str(ROOT / ".venv" / "bin" / "python")}
    if not Path(env["PY"]).exists():
        pytest.skip("no .venv")
    done = subprocess.run([bash, str(SCRIPT)], env=env, capture_output=True, text=True)
    assert done.returncode == 3 and "no CUDA device" in done.stderr


def test_every_benchmark_config_and_option_it_names_exists():
    from dpaudit._settings import shipped_configs
    from dpaudit.cli import build_app

    configs = set(shipped_configs())
    runner = CliRunner()
    for name, _, _, command in STEPS:
        words = command.replace('"', "").split()
        if words[0] == "$PY":
            assert (ROOT / words[1]).exists(), (name, words[1])
            continue
        assert words[0] == "$DPAUDIT" and words[1] == "audit", (name, words)
        workflow = words[2]
        if "--config" in words:
            assert words[words.index("--config") + 1] in configs, (name, words)
        helped = runner.invoke(build_app(), ["audit", workflow, "--help"], terminal_width=200)
        assert helped.exit_code == 0, (name, helped.output)
        for flag in (w for w in words[3:] if w.startswith("--")):
            assert re.search(rf"{re.escape(flag)}\b", helped.output), (name, flag)


def test_the_staging_script_parses_and_names_installed_packages():
    """benchmarks/gpu_stage.sh (the files a bare device image lacks) parses, and every package
    it downloads at this environment's version is installed here."""
    import importlib.metadata

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    stage = ROOT / "benchmarks" / "gpu_stage.sh"
    subprocess.run([bash, "-n", str(stage)], check=True)
    names = re.search(r"names = \[(.*?)\]", stage.read_text(), re.DOTALL)
    assert names is not None
    for name in re.findall(r"'([\w-]+)'", names.group(1)):
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"{name} is not installed here (an optional extra)")


def _results(name: str) -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / name).read_text())


def _page(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def test_the_recorded_device_steps_ran_and_their_figures_are_the_docs():
    """The device figures of gpu.sh's batched, liu-layout and label-dp steps (one lease on an
    H200) are what the docs and the README show, and each step exited 0 inside its limit."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_label_dp import gpu_table
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    steps = {
        s["step"]: s for lease in _results("gpu-summary.json")["leases"] for s in lease["steps"]
    }
    for name in ("batched", "liu-layout", "label-dp"):
        assert steps[name]["rc"] == 0 and not steps[name]["timed_out"], steps[name]
    bench, readme = _page("docs/benchmarks.md"), _page("README.md")
    # batched: the CUDA row beside the CPU batched row of the default model
    batched = _results("batched_dpsgd.json")
    cuda, cpus = batched["cuda"], batched["machine"]["cpus"]
    default = next(r for r in batched["results"] if r["model"].startswith("default"))
    rate = f"{cuda['runs_per_minute']:,.0f} runs/min"
    ratio = f"{cuda['runs_per_minute'] / default['batched']['runs_per_minute']:.1f}×"
    assert cuda["device"] == "NVIDIA H200" and cpus == 2
    for page in (bench, _page("docs/reproductions/lifted-dp.md")):
        assert rate in page and ratio in page
    # liu-layout: the one-run DP-SGD audit end to end
    liu = _results("gpu-liu_layout.json")
    assert liu["settings"]["name"] == "dp-sgd-fashion-mnist"
    assert liu["settings"]["training"]["device"] == "cuda"
    total = f"{sum(liu['timings'].values()):.1f} s"
    assert f"192 s; H200 {total}" in bench and f"192 s; H200 {total}" in readme
    assert f"**{total}** in all" in bench
    assert f"setup and\nclaims {liu['timings']['setup+claims']:.1f} s" in bench
    summaries = liu["detail"]["summaries"]
    assert all(v == 0.0 for s in summaries for v in s["valid"])
    largest = max(v for s in summaries for v in s["uncorrected"])
    assert f"largest uncorrected\nmaximum {largest:.3f})" in bench
    # label-dp: the table beside the CPU reproduction and the App. C check
    cpu, gpu = _results("label_dp_fashion_mnist/results.json"), _results("gpu-label_dp.json")
    assert gpu["settings"]["name"] == cpu["settings"]["name"] == "label-dp-fashion-mnist"
    page = _page("docs/reproductions/label-dp.md")
    assert gpu_table(cpu, gpu) in page
    check = gpu["detail"]["validation"]
    for kind in ("one_run", "pooled"):
        ci = check[kind]["cgr"]["interval"]
        assert f"{ci['low']:.2f}–{ci['high']:.2f}" in page
    assert f"{gpu['timings']['total']:.0f} s on a lent H200" in bench
