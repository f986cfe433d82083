"""Compact records of `dpaudit audit llm-fine-tuning --config llm-tiny-gpt-synthetic` runs.

    python docs/results/llm-synthetic-text/compact.py OUT.json LABEL=RUN_DIR[:TIME_FILE] ...

Each RUN_DIR is a `--out` directory (its results.json); TIME_FILE, if given, is the output of
`/usr/bin/time -v` around the command (its user and system CPU seconds are kept); the records
already in OUT.json are kept, a label given again replaced. The record keeps, per run, the
settings, the timings and per entry the kind, score, threat model, the one-run bound, the
claim, the membership metrics and, under the synthetic-text threat model, what the release
did and how the auxiliary model reads the canaries. It then prints the page's table
(:func:`table`; ``tests/llm/test_llm_synthetic_text.py`` checks the page holds exactly that
table of the stored record).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _cpu(path: str | None) -> dict | None:
    if not path:
        return None
    text = Path(path).read_text()
    get = lambda key: float(re.search(rf"{key} \(seconds\): ([0-9.]+)", text).group(1))  # noqa: E731
    load = re.findall(r"load average: ([0-9.]+)", text)
    return {"user": get("User time"), "system": get("System time"),
            "load_average_1min_at_end": float(load[-1]) if load else None}  # fmt: skip


def _entry(e: dict) -> dict:
    d = e["detail"]
    rel = d.get("release")
    return {
        "kind": d["kind"], "score": d["score"], "threat_model": d["threat_model"],
        "lower_bound": e["lower_bound"]["epsilon"], "claim": e["claims"][0]["epsilon"],
        "metrics": d["metrics"], "release": rel,
    }  # fmt: skip


def compact(run_dir: str, time_file: str | None) -> dict:
    d = json.loads((Path(run_dir) / "results.json").read_text())
    runs = [{k: r[k] for k in ("kind", "inserted", "noise_multiplier", "mean_loss_members",
                               "mean_loss_non_members", "extracted_members",
                               "extracted_non_members", "trainable_parameters")}
            for r in d["detail"]]  # fmt: skip
    return {"settings": d["settings"], "timings": d["timings"], "cpu_seconds": _cpu(time_file),
            "versions": d["versions"], "runs": runs,
            "entries": [_entry(e) for e in d["entries"]]}  # fmt: skip


_VARIANTS = {"honest": "correct", "noise-tenth": "noise-tenth (a tenth of the noise)"}


def _fmt(x: float) -> str:
    return "∞" if x == float("inf") or x == "inf" else f"{float(x):.2f}"


def _row(variant: str, release: str, entries: list[dict], release_rec: dict | None) -> str:
    by = {e["score"]: e for e in entries}
    loss = by["loss"]
    bounds = " / ".join(_fmt(by[s]["lower_bound"]) for s in ("loss", "loss-ratio", "zlib"))
    m = loss["metrics"]
    if release_rec is None:
        rate, lo = "–", "–"
    else:
        rate = f"{release_rec['release']['new_token_rate']:.3f}"
        lo = f"{release_rec['mean_loss_members']:.2f} / {release_rec['mean_loss_non_members']:.2f}"
    return (f"| {_VARIANTS[variant]} | {release} | {loss['kind']} | {bounds} | "
            f"{_fmt(loss['claim'])} | {m['tpr_at_1pct_fpr']:.3f} | {m['auc']:.3f} | {rate} | "
            f"{lo} |")  # fmt: skip


def table(records: dict) -> str:
    """The page's table: per implementation the model's own entries (from the first record of
    that implementation) and the synthetic-text entries of every record, per kind one row
    (the three scores' bounds side by side; TPR and AUC of the loss score)."""
    head = ("| implementation | what is released | kind | lower bound ε (95 %): loss / "
            "loss-ratio / zlib | claim ε | TPR @ 1 % FPR (loss) | AUC (loss) | new entries "
            "among the sampled tokens | auxiliary model's secret loss, in / out |\n"
            "|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    rows = [head]
    for variant in _VARIANTS:
        labels = [k for k in records if k.startswith(variant + "-")]
        for i, label in enumerate(labels):
            rec = records[label]
            n = rec["settings"]["synthetic"]["samples"]
            for tm in ("model", "synthetic-text") if i == 0 else ("synthetic-text",):
                for kind in rec["settings"]["canaries"]["kinds"]:
                    es = [e for e in rec["entries"]
                          if e["kind"] == kind and e["threat_model"] == tm]  # fmt: skip
                    name = "the model" if tm == "model" else f"{n:,} synthetic sequences"
                    rows.append(_row(variant, name, es, es[0]["release"]))
    return "\n".join(rows)


def bonferroni_sentence(records: dict) -> str:
    """The page's sentence on the noise-tenth audit at 8,000 sequences rerun at confidence
    1 − 0.05/18 (record ``bonferroni-noise-tenth-8000``)."""
    rec = records["bonferroni-noise-tenth-8000"]
    es = {e["score"]: e for e in rec["entries"]
          if e["kind"] == "new-token" and e["threat_model"] == "synthetic-text"}  # fmt: skip
    conf = rec["settings"]["audit"]["confidence_level"]
    bounds = " / ".join(_fmt(es[s]["lower_bound"]) for s in ("loss", "loss-ratio", "zlib"))
    return (f"at confidence {conf:.4f} the new-token bounds through 8,000 synthetic sequences "
            f"are {bounds} (loss / loss-ratio / zlib) against the claim ε = "
            f"{_fmt(es['loss']['claim'])}")  # fmt: skip


def heldout_sentence(records: dict) -> str:
    """The page's sentence on the held-out evaluation of the noise-tenth synthetic-text audit
    (record ``heldout-noise-tenth-8000-seed1``: new-token only, seed 1, the zlib score and
    8,000 sequences fixed beforehand on seed 0's runs; record ``pilot-noise-tenth-8000-aux400``:
    a pilot on seed 0 with 400 auxiliary steps, which did worse and was not taken)."""

    def bounds(label: str) -> dict:
        return {e["score"]: e for e in records[label]["entries"]
                if e["kind"] == "new-token" and e["threat_model"] == "synthetic-text"}  # fmt: skip

    ev, pilot = bounds("heldout-noise-tenth-8000-seed1"), bounds("pilot-noise-tenth-8000-aux400")
    return (
        f"the pre-registered zlib bound is {_fmt(ev['zlib']['lower_bound'])} against the "
        f"claim ε = {_fmt(ev['zlib']['claim'])} (loss and loss-ratio, not part of the test: "
        f"{_fmt(ev['loss']['lower_bound'])} and {_fmt(ev['loss-ratio']['lower_bound'])}); "
        f"the pilot with 400 auxiliary steps gave "
        + " / ".join(_fmt(pilot[s]["lower_bound"]) for s in ("loss", "loss-ratio", "zlib"))
    )


def smollm2_sentence(records: dict, label: str = "smollm2-non-private") -> str:
    """The page's sentence on SmolLM2 without DP (record ``label``: ``smollm2-non-private``,
    256 sequences; ``smollm2-non-private-1024``, 1,024 sequences sampled with the key-value
    cache)."""
    rec = records[label]

    def bounds(tm: str) -> tuple[str, dict]:
        es = {e["score"]: e for e in rec["entries"]
              if e["kind"] == "new-token" and e["threat_model"] == tm}  # fmt: skip
        text = " / ".join(_fmt(es[s]["lower_bound"]) for s in ("loss", "loss-ratio", "zlib"))
        return text, es["loss"]

    model, m = bounds("model")
    synth, e = bounds("synthetic-text")
    rate = e["release"]["release"]["new_token_rate"]
    return (f"the new-token bounds are {model} through the model (AUC {m['metrics']['auc']:.3f}) "
            f"and {synth} through the synthetic text (AUC {e['metrics']['auc']:.3f}); new "
            f"entries are {rate:.4f} of the sampled tokens")  # fmt: skip


if __name__ == "__main__":
    # labels already in OUT.json are kept (a label given again is replaced)
    out = json.loads(Path(sys.argv[1]).read_text()) if Path(sys.argv[1]).is_file() else {}
    for arg in sys.argv[2:]:
        label, rest = arg.split("=", 1)
        run_dir, _, time_file = rest.partition(":")
        out[label] = compact(run_dir, time_file or None)
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    if any(k.startswith(("honest-", "noise-tenth-")) for k in out):
        print(table(out))
    if "bonferroni-noise-tenth-8000" in out:
        print(bonferroni_sentence(out))
    if "heldout-noise-tenth-8000-seed1" in out:
        print(heldout_sentence(out))
    for label in (k for k in out if k.startswith("smollm2-non-private")):
        print(smollm2_sentence(out, label))
