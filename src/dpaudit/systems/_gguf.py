"""A GGUF model file as a float32 transformers checkpoint, shared by the systems that load the
shipped SmolLM2 GGUF (PromptPATE's teachers, DP fine-tuning of language models).

transformers reads GGUF files (dequantising them, which needs ``gguf`` and ``accelerate``);
saving the dequantised model once makes later loads take a fraction of a second.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no lock, the atomic rename still keeps one copy
    fcntl = None

from dpaudit.errors import require

__all__ = ["dequantise_gguf"]


def dequantise_gguf(gguf: Path, target: Path) -> None:
    """Load ``gguf`` with transformers (dequantised to float32) and save model and tokenizer to
    ``target`` atomically: a temporary directory renamed into place, so a process that loses a
    race keeps the winner's copy. Processes that start at once on a machine without the copy
    (the workers of a parallel test run, the engine's workers) dequantise it once: the others
    wait on a lock file beside ``target`` and find the copy made (~15 CPU-s each saved).
    Nothing is done when ``target`` already holds a copy.

    Raises:
        MissingDependencyError: torch, transformers, gguf or accelerate is not installed.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f".{target.name}.lock"):
        if not (target / "config.json").is_file():
            _dequantise(gguf, target)


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive advisory lock on ``path`` (``flock``; released when the block ends or the
    process dies), or nothing where ``fcntl`` does not exist."""
    if fcntl is None:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _dequantise(gguf: Path, target: Path) -> None:
    torch = require("torch", "torch")
    tf = require("transformers", "llm")
    require("gguf", "llm")
    require("accelerate", "llm")
    tf.utils.logging.set_verbosity_error()
    tf.utils.logging.disable_progress_bar()
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        # transformers' GGUF reader draws a tqdm bar of its own: keep the one-off step quiet.
        with contextlib.redirect_stderr(io.StringIO()):
            tok = tf.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = tf.AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
            )
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        try:
            os.replace(tmp, target)
        except OSError:  # another process won the race: keep its copy
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
