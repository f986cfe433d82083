"""The HTTP interface of the prediction service (FastAPI).

Endpoints (OpenAPI at ``/openapi.json``, interactive docs at ``/docs``):

* ``POST /v1/predict`` — body ``{"queries": [[x11, x12, …], …]}``; answers
  ``{"labels": […], …}`` where a label is a class, or −1 when Confident GNMax abstained
  (charged all the same). A request is answered whole or refused whole.
* ``GET /v1/budget`` — the caller's ε spent and budget, and the service's.
* ``GET /v1/info`` — the public parameters (mechanism, σ, teachers, classes, features).
* ``GET /healthz`` — liveness; once a :mod:`dpaudit.serve.monitor` has reported, also
  ``privacy_alarm`` (whether any monitor rejected the claimed noise) and each monitor's
  last status (still HTTP 200: the process is alive).

The API key goes in ``Authorization: Bearer KEY`` or ``X-API-Key: KEY`` (never in the URL,
which access logs record). Errors are JSON ``{"error": code, "message": text}``: 400 malformed
JSON, 401 no or unknown key, 403 revoked key, 413 batch or body too large, 422 invalid queries
(wrong dimension, NaN/infinity, non-numbers), 429 budget exhausted (with the scope, the ε
spent and the budget). None of them charges anything. Keys are never logged and never
returned: the request log names the client.
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoints' annotations at
# definition time, and they name the lazily imported ``fastapi`` module.
import json
import logging
import time
from typing import Any

from dpaudit.errors import require
from dpaudit.serve.ledger import BudgetRefused, UnknownClientError
from dpaudit.serve.service import PredictionService, RequestError

__all__ = ["create_app", "max_body_bytes"]

logger = logging.getLogger("dpaudit.serve")

#: Bytes allowed per feature value in a request body (a float64 in JSON takes ≤ 24 + ", ").
_BYTES_PER_VALUE = 32
_BODY_SLACK = 4096


def max_body_bytes(service: PredictionService) -> int:
    """Largest request body accepted: ``max_batch`` rows of ``num_features`` numbers."""
    return service.max_batch * (service.num_features * _BYTES_PER_VALUE + 4) + _BODY_SLACK


def _reject_constant(name: str) -> float:
    raise RequestError(422, "invalid_queries", f"queries hold a non-finite number ({name})")


def _parse_body(body: bytes) -> Any:
    """The ``queries`` of a request body, or a :class:`RequestError` (400/422)."""
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except RequestError:
        raise
    except (ValueError, RecursionError) as exc:
        raise RequestError(
            400, "malformed_json", f"the request body is not valid JSON: {exc}"
        ) from None
    if not isinstance(data, dict) or set(data) != {"queries"}:
        raise RequestError(
            422, "invalid_queries", 'the body must be a JSON object {"queries": [[...], ...]}'
        )
    return data["queries"]


def _api_key(headers: Any) -> str | None:
    auth = headers.get("authorization")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
        return None
    key = headers.get("x-api-key")
    return key.strip() if key else None


def _models() -> dict[str, Any]:
    """Pydantic models of the bodies (for the OpenAPI document)."""
    pydantic = require("pydantic", "serve")

    class PredictRequest(pydantic.BaseModel):
        queries: list[list[float]] = pydantic.Field(
            description="query rows, each of num_features finite numbers", min_length=1
        )

    class PredictResponse(pydantic.BaseModel):
        labels: list[int] = pydantic.Field(description="class per query; -1: abstained")
        charge_id: int | None = pydantic.Field(description="journal row of the charge")
        num_charged: int
        num_answered: int
        num_cached: int
        epsilon_spent: float = pydantic.Field(description="the caller's epsilon after it")
        epsilon_budget: float

    class ErrorResponse(pydantic.BaseModel):
        error: str
        message: str

    return {
        "PredictRequest": PredictRequest,
        "PredictResponse": PredictResponse,
        "ErrorResponse": ErrorResponse,
    }


def _error(status: int, code: str, message: str, **extra: Any) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


def _refused(exc: BudgetRefused) -> Any:
    return _error(
        429,
        "budget_exhausted",
        str(exc),
        scope=exc.scope,
        epsilon_spent=exc.epsilon_spent,
        epsilon_budget=exc.epsilon_budget,
    )


async def _read_body(request: Any, limit: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None:
        try:
            too_big = int(length) > limit
        except ValueError:
            raise RequestError(400, "malformed_request", "bad Content-Length header") from None
        if too_big:
            raise RequestError(413, "body_too_large", f"the body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, "body_too_large", f"the body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(service: PredictionService, *, access_log: bool = True) -> Any:
    """The FastAPI application serving ``service`` (module notes).

    Args:
        service: the prediction service.
        access_log: log one line per request (client name, size, status, latency; never the
            key) on the ``dpaudit.serve`` logger.

    Returns:
        A ``fastapi.FastAPI`` app (run it with uvicorn, or
        :class:`dpaudit.serve.ServiceServer`).

    Raises:
        MissingDependencyError: fastapi is not installed (extra ``serve``).
    """
    fastapi = require("fastapi", "serve")
    from starlette.concurrency import run_in_threadpool

    models = _models()
    info = service.info()
    app = fastapi.FastAPI(
        title=f"dpaudit private prediction: {info.name}",
        description=(
            f"{info.system} answering with {info.mechanism} (sigma={info.sigma:g}), "
            f"every answer charged to a privacy ledger before it is sent."
        ),
        version="1",
    )
    err = {"model": models["ErrorResponse"]}
    log = _request_log(access_log)
    app.post(
        "/v1/predict",
        response_model=models["PredictResponse"],
        responses={s: err for s in (400, 401, 403, 413, 422, 429)},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": models["PredictRequest"].model_json_schema()}
                },
            }
        },
        summary="Answer a batch of queries (charged before it is sent)",
    )(_predict_endpoint(fastapi, service, log))
    app.get("/v1/budget", responses={401: err, 403: err}, summary="The caller's budget")(
        _budget_endpoint(fastapi, service, log)
    )

    @app.get("/v1/info", summary="The public parameters of the service")
    async def get_info() -> Any:
        return service.info().to_dict()

    @app.get("/healthz", summary="Liveness (and the privacy monitors' alarms, when any run)")
    async def healthz() -> Any:
        monitors = await run_in_threadpool(service.ledger.monitor_statuses)
        if not monitors:
            return {"status": "ok"}
        alarm = any(bool(m.get("alarm")) for m in monitors.values())
        return {"status": "ok", "privacy_alarm": alarm, "monitors": monitors}

    return app


def _request_log(enabled: bool) -> Any:
    """``log(client, what, status, start, n)``: one line per request (never the key)."""

    def log(client: str, what: str, status: int, start: float, n: int = 0) -> None:
        if enabled:
            ms = (time.perf_counter() - start) * 1e3
            logger.info("%s %s n=%d status=%d %.1f ms", client, what, n, status, ms)

    return log


def _settle_request(
    service: PredictionService, key: str, body: bytes, who: dict[str, str]
) -> tuple[dict[str, Any], int]:
    """Authenticate, parse, answer and settle one request (runs in a worker thread)."""
    client = service.authenticate(key)
    who["name"] = client.name
    receipt = service.predict(client, _parse_body(body))
    payload = {
        "labels": receipt.labels.tolist(),
        "charge_id": receipt.charge_id,
        "num_charged": receipt.num_charged,
        "num_answered": receipt.num_answered,
        "num_cached": receipt.num_cached,
        "epsilon_spent": receipt.client_epsilon,
        "epsilon_budget": client.epsilon_budget,
    }
    return payload, len(receipt.labels)


def _predict_endpoint(fastapi: Any, service: PredictionService, log: Any) -> Any:
    """``POST /v1/predict``: every error a JSON 4xx; the answer only after the charge."""
    from starlette.concurrency import run_in_threadpool

    limit = max_body_bytes(service)

    async def predict(request: fastapi.Request) -> Any:
        start = time.perf_counter()
        who = {"name": "-"}
        try:
            key = _api_key(request.headers)
            if key is None:  # refuse before reading the body
                service.authenticate(key)
            body = await _read_body(request, limit)
            payload, n = await run_in_threadpool(_settle_request, service, key, body, who)
        except RequestError as exc:
            log(who["name"], "predict", exc.status, start)
            return _error(exc.status, exc.code, str(exc))
        except BudgetRefused as exc:
            log(who["name"], "predict", 429, start)
            return _refused(exc)
        except UnknownClientError:
            log(who["name"], "predict", 403, start)
            return _error(403, "revoked_api_key", "the API key was revoked")
        log(who["name"], "predict", 200, start, n)
        return payload

    return predict


def _budget_endpoint(fastapi: Any, service: PredictionService, log: Any) -> Any:
    """``GET /v1/budget``: the caller's budget and the service's."""
    from starlette.concurrency import run_in_threadpool

    def run(key: str | None) -> dict[str, Any]:
        return service.budget(service.authenticate(key)).to_dict()

    async def budget(request: fastapi.Request) -> Any:
        start = time.perf_counter()
        try:
            out = await run_in_threadpool(run, _api_key(request.headers))
        except RequestError as exc:
            log("-", "budget", exc.status, start)
            return _error(exc.status, exc.code, str(exc))
        log(out["client"], "budget", 200, start)
        return out

    return budget
