"""Fixtures of the whole suite."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _temporary_run_store(tmp_path_factory):
    """Audit commands record their runs in the run store (dpaudit.store): point it at a
    temporary file so the suite never writes to ~/.local/share/dpaudit."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DPAUDIT_STORE", str(tmp_path_factory.mktemp("store") / "runs.sqlite"))
    yield
    mp.undo()
