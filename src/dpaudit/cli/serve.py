"""``dpaudit serve`` and ``dpaudit keys``: deploy a private-prediction system over HTTP.

``dpaudit serve`` trains the configured system (PATE by default) and answers
``POST /v1/predict`` behind API keys, every answer charged to a durable SQLite ledger before
it is sent (:mod:`dpaudit.serve`). Its options are derived from
:class:`dpaudit.serve.ServeSettings` (they override ``--config FILE.toml``); it prints
``dpaudit serve: listening on URL`` once it accepts connections.

``dpaudit keys add NAME --ledger FILE`` registers a client and prints its API key once (only
its SHA-256 is stored); ``keys list`` and ``keys revoke NAME`` manage them. With
``--ledger :memory:`` (no durability) ``serve`` makes one key for a client named
``default`` and prints it once on stderr.
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
from typing import Any

from dpaudit.cli._app import app, typer
from dpaudit.cli._common import fail
from dpaudit.cli._options import _parameters, resolve_settings

__all__ = ["keys_app", "run_server", "serve"]

keys_app = typer.Typer(help="API keys of a dpaudit serve ledger.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


def run_server(settings: Any) -> None:
    """Train, open the ledger, serve until stopped (signal or ``server.lifetime``)."""
    from dpaudit.serve import ServiceServer, build_service, create_app

    err = sys.stderr
    s = settings
    print(
        f"dpaudit serve: training {s.system_name} ({s.system.teachers} teachers, "
        f"σ={s.system.sigma:g}) on {s.data.dataset} …",
        file=err,
        flush=True,
    )
    service = build_service(s)
    ledger = service.ledger
    try:
        if not ledger.durable:
            key = ledger.add_client("default", s.budget.client_epsilon)
            print(
                f"API key of client 'default' (in-memory ledger; shown once): {key}",
                file=err,
                flush=True,
            )
        elif not [c for c in ledger.clients() if not c.revoked]:
            print(
                f"no API key yet: add one with `dpaudit keys add NAME --ledger {s.server.ledger}`",
                file=err,
                flush=True,
            )
        handler = logging.StreamHandler(err)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        log = logging.getLogger("dpaudit.serve")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        server = ServiceServer(
            create_app(service, access_log=s.server.access_log),
            host=s.server.host,
            port=s.server.port,
            lifetime=s.server.lifetime,
        )
        print(f"dpaudit serve: listening on {server.url}", flush=True)
        server.run()
    finally:
        ledger.close()


def _serve_command(**kwargs: Any) -> None:
    from dpaudit import _settings
    from dpaudit.serve import ServeSettings

    config = kwargs.pop("config")
    print_config = kwargs.pop("print_config")
    paths = {p.name: f.path for p, f in _parameters(ServeSettings)}
    try:
        settings = resolve_settings(
            ServeSettings, config=config, options={paths[k]: v for k, v in kwargs.items()}
        )
    except (ValueError, TypeError, FileNotFoundError) as exc:
        fail(str(exc))
        return
    if print_config:
        typer.echo(_settings.to_toml(settings), nl=False)
        return
    try:
        run_server(settings)
    except (ValueError, FileNotFoundError, OSError) as exc:
        fail(str(exc))


def _register_serve() -> Any:
    from dpaudit.serve import ServeSettings

    params = [p for p, _ in _parameters(ServeSettings)]
    params += [
        inspect.Parameter(
            "config",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(None, "--config", help="TOML config (options override it)"),
            annotation=str | None,
        ),
        inspect.Parameter(
            "print_config",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                False, "--print-config", help="print the resolved settings as TOML and exit"
            ),
            annotation=bool,
        ),
    ]
    _serve_command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    help_text = (
        "Serve a private-prediction system over HTTP (POST /v1/predict) with per-key budgets "
        "and a durable privacy ledger."
    )
    _serve_command.__doc__ = help_text
    return app.command("serve", help=help_text)(_serve_command)


serve = _register_serve()


def _open_keys(ledger: str) -> Any:
    from dpaudit.serve import KeyStore

    try:
        return KeyStore(ledger)
    except (ValueError, OSError) as exc:
        fail(f"--ledger: {exc}")


@keys_app.command("add")
def keys_add(
    name: str = typer.Argument(..., help="client name (letters, digits, '-', '_', '.')"),
    ledger: str = typer.Option("dpaudit-ledger.sqlite", "--ledger", help="SQLite ledger file"),
    epsilon: float = typer.Option(1.0, "--epsilon", help="the client's epsilon budget"),
    as_json: bool = typer.Option(False, "--json", help="print the key as JSON"),
) -> None:
    """Register a client; print its API key once (only its hash is stored)."""
    store = _open_keys(ledger)
    try:
        key = store.add_client(name, epsilon)
    except (ValueError, TypeError) as exc:
        fail(str(exc))
        return
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({"client": name, "epsilon_budget": epsilon, "api_key": key}))
    else:
        typer.echo(key)
        print(f"(API key of {name!r}, ε budget {epsilon:g}; shown once)", file=sys.stderr)


@keys_app.command("list")
def keys_list(
    ledger: str = typer.Option("dpaudit-ledger.sqlite", "--ledger", help="SQLite ledger file"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """List the clients (never their keys)."""
    store = _open_keys(ledger)
    try:
        clients = store.clients()
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps([c.to_dict() for c in clients], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"clients of {ledger}")
    for col in ("id", "name", "ε budget", "created", "revoked"):
        t.add_column(col)
    for c in clients:
        t.add_row(str(c.id), c.name, f"{c.epsilon_budget:g}", c.created, "yes" if c.revoked else "")
    Console().print(t)


@keys_app.command("revoke")
def keys_revoke(
    name: str = typer.Argument(..., help="client name"),
    ledger: str = typer.Option("dpaudit-ledger.sqlite", "--ledger", help="SQLite ledger file"),
) -> None:
    """Revoke a client's key (its account is kept)."""
    from dpaudit.serve import UnknownClientError

    store = _open_keys(ledger)
    try:
        store.revoke(name)
    except UnknownClientError as exc:
        fail(str(exc))
    finally:
        store.close()
    typer.echo(f"revoked {name}")
