"""The HTTP layer: endpoints, OpenAPI, and every bad request refused with a 4xx and a
message, spending nothing; API keys never in logs nor in GET responses."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from serve_support import fixed_service

from dpaudit.serve import GLOBAL_ACCOUNT, create_app, max_body_bytes


@pytest.fixture()
def served():
    from fastapi.testclient import TestClient

    svc = fixed_service()
    key = svc.ledger.add_client("alice", 100.0)
    with TestClient(create_app(svc)) as client:
        yield svc, key, client


def _auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_predict_budget_info_health(served):
    svc, key, client = served
    r = client.post("/v1/predict", json={"queries": [[0.0], [1.0]]}, headers=_auth(key))
    assert r.status_code == 200
    body = r.json()
    assert len(body["labels"]) == 2 and set(body["labels"]) <= {0, 1, 2}
    assert body["num_charged"] == 2 and body["charge_id"] == 1
    assert body["epsilon_spent"] == pytest.approx(svc.ledger.epsilon(1))
    b = client.get("/v1/budget", headers={"X-API-Key": key}).json()
    assert b["client"] == "alice" and b["num_queries"] == 2 and b["epsilon_budget"] == 100.0
    assert b["epsilon_spent"] == pytest.approx(body["epsilon_spent"])
    info = client.get("/v1/info").json()
    assert (info["mechanism"], info["sigma"], info["num_teachers"], info["num_classes"]) == (
        "gnmax", 4.0, 30, 3,
    )  # fmt: skip
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    assert {"/v1/predict", "/v1/budget", "/v1/info", "/healthz"} <= set(spec["paths"])
    schema = spec["paths"]["/v1/predict"]["post"]["requestBody"]["content"]["application/json"]
    assert "queries" in schema["schema"]["properties"]
    assert client.get("/docs").status_code == 200


BAD_REQUESTS = [
    ("no key", None, {"queries": [[0.0]]}, 401, "missing_api_key"),
    ("wrong key", "dpa_not-a-key", {"queries": [[0.0]]}, 401, "invalid_api_key"),
    ("bad scheme", "Basic abc", {"queries": [[0.0]]}, 401, "missing_api_key"),
    ("oversized", "KEY", {"queries": [[0.0]] * 65}, 413, "batch_too_large"),
    ("malformed", "KEY", b'{"queries": [[0.0]', 400, "malformed_json"),
    ("NaN", "KEY", b'{"queries": [[NaN]]}', 422, "invalid_queries"),
    ("Infinity", "KEY", b'{"queries": [[-Infinity]]}', 422, "invalid_queries"),
    ("huge float", "KEY", b'{"queries": [[1e999]]}', 422, "invalid_queries"),
    ("wrong dim", "KEY", {"queries": [[0.0, 1.0]]}, 422, "invalid_queries"),
    ("ragged", "KEY", {"queries": [[0.0], [0.0, 1.0]]}, 422, "invalid_queries"),
    ("string", "KEY", {"queries": [["a"]]}, 422, "invalid_queries"),
    ("bool", "KEY", {"queries": [[True]]}, 422, "invalid_queries"),
    ("empty", "KEY", {"queries": []}, 422, "invalid_queries"),
    ("not rows", "KEY", {"queries": [0.0]}, 422, "invalid_queries"),
    ("extra key", "KEY", {"queries": [[0.0]], "x": 1}, 422, "invalid_queries"),
    ("not object", "KEY", [[0.0]], 422, "invalid_queries"),
]


@pytest.mark.parametrize(("case", "key", "body", "status", "code"), BAD_REQUESTS)
def test_bad_requests_get_a_4xx_with_a_message_and_spend_nothing(
    served, case, key, body, status, code
):
    svc, good, client = served
    headers = {}
    if key == "KEY":
        headers = _auth(good)
    elif key is not None and key.startswith("Basic"):
        headers = {"Authorization": key}
    elif key is not None:
        headers = _auth(key)
    if isinstance(body, bytes):
        r = client.post("/v1/predict", content=body, headers=headers)
    else:
        r = client.post("/v1/predict", json=body, headers=headers)
    assert r.status_code == status, case
    out = r.json()
    assert out["error"] == code and out["message"]
    total = svc.ledger.account(GLOBAL_ACCOUNT)
    assert total.num_requests == 0 and not np.any(total.rdp) and svc.ledger.journal() == []


def test_body_over_the_limit_is_refused_before_parsing(served):
    svc, key, client = served
    big = b'{"queries": [[' + b"0" * (max_body_bytes(svc) + 10) + b"]]}"
    r = client.post("/v1/predict", content=big, headers=_auth(key))
    assert r.status_code == 413 and r.json()["error"] == "body_too_large"


def test_budget_exhausted_is_429_with_the_scope_and_spends_nothing():
    from fastapi.testclient import TestClient

    svc = fixed_service()
    key = svc.ledger.add_client("alice", 3.0)
    with TestClient(create_app(svc)) as client:
        r = client.post("/v1/predict", json={"queries": [[0.0]] * 64}, headers=_auth(key))
        assert r.status_code == 429
        out = r.json()
        assert out["error"] == "budget_exhausted" and out["scope"] == "client"
        assert out["epsilon_spent"] == 0.0 and out["epsilon_budget"] == 3.0
        assert svc.ledger.journal() == []
        assert client.post("/v1/predict", json={"queries": [[0.0]]}, headers=_auth(key)).is_success


def test_revoked_key_is_403():
    from fastapi.testclient import TestClient

    svc = fixed_service()
    key = svc.ledger.add_client("alice", 3.0)
    svc.ledger.revoke("alice")
    with TestClient(create_app(svc)) as client:
        r = client.post("/v1/predict", json={"queries": [[0.0]]}, headers=_auth(key))
        assert r.status_code == 403 and r.json()["error"] == "revoked_api_key"
        assert client.get("/v1/budget", headers=_auth(key)).status_code == 403


def test_keys_never_in_logs_nor_in_get_responses(caplog):
    from fastapi.testclient import TestClient

    svc = fixed_service()
    key = svc.ledger.add_client("alice", 3.0)
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(svc)) as client:
        texts = []
        for path in ("/v1/budget", "/v1/info", "/healthz", "/openapi.json"):
            texts.append(client.get(path, headers=_auth(key)).text)
        texts.append(client.post("/v1/predict", json={"queries": [[0.0]]}, headers=_auth(key)).text)
        texts.append(
            client.post("/v1/predict", json={"queries": [[0.0]]}, headers=_auth(key + "x")).text
        )
        texts.append(client.post("/v1/predict", content=b"{", headers=_auth(key)).text)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "alice predict n=1 status=200" in logged
    assert key not in logged and key[4:20] not in logged
    for t in texts:
        assert key not in t and key[4:20] not in t
    assert key not in repr(svc.ledger.clients()) and key not in json.dumps(svc.info().to_dict())


def test_service_validation_and_checks():
    from dpaudit.serve import PredictionService, RequestError

    svc = fixed_service()
    with pytest.raises(RequestError, match="at least one row"):
        svc.validate([])
    with pytest.raises(RequestError, match="at most 64"):
        svc.validate(np.zeros((65, 1)))
    with pytest.raises(RequestError, match="1 features"):
        svc.validate(np.zeros((2, 3)))
    with pytest.raises(RequestError, match="non-finite"):
        svc.validate(np.array([[np.inf]]))
    with pytest.raises(TypeError, match="private-prediction interface"):
        PredictionService(object(), svc.ledger)
    with pytest.raises(TypeError, match="ledger"):
        PredictionService(svc.interface, object())
    other = fixed_service(sigma=5.0)
    with pytest.raises(ValueError, match="accounts for"):
        PredictionService(svc.interface, other.ledger)
