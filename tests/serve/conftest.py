"""Fixtures of the service tests (the servers they start use loopback and ephemeral ports)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="session")
def pate_settings():
    from dpaudit.serve import ServeSettings

    return ServeSettings.of(
        teachers=10, sigma=4.0, n_train=200, ledger=":memory:", noise_seed=11,
        epsilon=1e6, client_epsilon=1e5, max_batch=64,
    )  # fmt: skip


@pytest.fixture(scope="session")
def pate_data(pate_settings):
    from dpaudit.serve import load_training_data

    return load_training_data(pate_settings)
