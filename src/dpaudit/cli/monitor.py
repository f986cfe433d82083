"""``dpaudit monitor``: continuous certification of a running ``dpaudit serve`` deployment.

Ledger mode (default): ``dpaudit monitor --ledger FILE`` reads the answers the service
recorded with their vote histograms (the operator's view) as they are committed, keeps an
anytime-valid e-process that the answers are at least as noisy as the claimed GNMax
(:mod:`dpaudit.serve.monitor`), and raises an alarm when it reaches 1/β: one log line on
stderr, ``privacy_alarm`` in the service's ``/healthz``, and exit status 3 when the monitor
stops. Client mode: with ``--url URL --api-key KEY`` the monitor sends probe queries
(``--queries FILE`` or ``--dataset NAME``) as an ordinary client, charged by the ledger, and
tests the answers it received over HTTP against the histograms recorded for its charges.

``--page FILE`` writes the live HTML page (e-value path, noise confidence sequence) after
every poll. The monitor runs until ``--duration`` seconds, ``--max-answers`` answers,
``--stop-on-alarm``, or Ctrl-C; ``--json`` prints the last status as JSON.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from dpaudit.cli._app import app, typer
from dpaudit.cli._common import emit, fail

__all__ = ["ALARM_EXIT_CODE", "monitor"]

#: Exit status of ``dpaudit monitor`` when the claim was rejected (errors exit with 2).
ALARM_EXIT_CODE = 3


def _render(console: Any, s: Any) -> None:
    from rich.table import Table

    verdict = "[bold red]ALARM: claim rejected[/]" if s.alarm else "[green]certified so far[/]"
    t = Table(title=f"dpaudit monitor {s.name}: {s.mechanism} σ = {s.claimed_sigma:g}")
    t.add_column("", no_wrap=True)
    t.add_column("value", justify="right")
    upper = "none yet" if s.sigma_upper is None else f"{s.sigma_upper:.4g}"
    rows = [
        ("verdict", verdict),
        ("answers monitored", str(s.answers)),
        ("max e-value (alarm at 1/β)", f"{_exp(s.max_log_e_value):.4g} ({_exp(s.threshold):g})"),
        ("alarm at answer", "—" if s.alarm_at is None else str(s.alarm_at)),
        (f"noise upper bound (anytime, {s.confidence_level:g})", upper),
        ("ε lower bound, one answer (anytime, if Gaussian)", _fmt(s.epsilon_lower)),
        ("exact ε of one answer at the claim", _fmt(s.epsilon_exact_claimed)),
        ("ε the ledger charges one answer", f"{s.epsilon_claimed:.4g}"),
    ]  # fmt: skip
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _exp(x: float) -> float:
    import math

    return math.exp(min(x, 700.0))


def _probe_rows(queries: str | None, dataset: str | None) -> Any:
    import numpy as np

    if (queries is None) == (dataset is None):
        fail("client mode needs exactly one of --queries FILE and --dataset NAME")
    if dataset is not None:
        from dpaudit.data import load_subset

        return load_subset(dataset, seed=0).X_test
    path = Path(queries)
    if not path.is_file():
        fail(f"--queries {queries!r} does not exist")
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        return np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=2)
    except (OSError, ValueError) as exc:
        fail(f"cannot read --queries {queries!r}: {exc}")
    raise AssertionError("unreachable")


@app.command("monitor")
def monitor(
    ledger: str = typer.Option(
        "dpaudit-ledger.sqlite", "--ledger", help="the service's SQLite ledger file"
    ),
    sigma: float = typer.Option(
        None, "--sigma", help="the noise the service must claim (checked; default: its claim)"
    ),
    confidence_level: float = typer.Option(
        0.9999, "--confidence-level", help="1 - beta: an honest service alarms w.p. <= beta"
    ),
    interval: float = typer.Option(1.0, "--interval", help="seconds between polls"),
    duration: float = typer.Option(None, "--duration", help="stop after this many seconds"),
    max_answers: int = typer.Option(None, "--max-answers", help="stop after this many answers"),
    stop_on_alarm: bool = typer.Option(False, "--stop-on-alarm", help="stop at the alarm"),
    page: str = typer.Option(None, "--page", help="write the live HTML page to this file"),
    name: str = typer.Option(None, "--name", help="the monitor's name in /healthz"),
    url: str = typer.Option(None, "--url", help="client mode: the service's URL"),
    api_key: str = typer.Option(
        None, "--api-key", help="client mode: the monitor's API key (or $DPAUDIT_API_KEY)"
    ),
    queries: str = typer.Option(None, "--queries", help="client mode: probe rows (.npy/.csv)"),
    dataset: str = typer.Option(None, "--dataset", help="client mode: probe a dataset's test rows"),
    batch: int = typer.Option(64, "--batch", help="client mode: queries per request"),
    seed: int = typer.Option(0, "--seed", help="client mode: seed of the probe choice"),
    as_json: bool = typer.Option(False, "--json", help="print the last status as JSON"),
) -> None:
    """Certify a running dpaudit serve deployment: alarm when its answers are less noisy than
    it claims (anytime-valid e-process; exit 3 on alarm)."""
    if duration is None and max_answers is None and not stop_on_alarm and as_json:
        fail("--json prints the last status: give --duration, --max-answers or --stop-on-alarm")
    if interval < 0 or (duration is not None and duration < 0):
        fail(f"--interval and --duration must be >= 0, got {interval} and {duration}")
    page_path = None if page is None else Path(page)
    if page_path is not None and page_path.is_dir():
        fail(f"--page must be a file, but {page!r} is a directory")
    handler = _log_alarms()
    try:
        _monitor(dict(
            ledger=ledger, sigma=sigma, confidence_level=confidence_level, interval=interval,
            duration=duration, max_answers=max_answers, stop_on_alarm=stop_on_alarm,
            page_path=page_path, name=name, url=url, api_key=api_key, queries=queries,
            dataset=dataset, batch=batch, seed=seed, as_json=as_json,
        ))  # fmt: skip
    finally:
        logging.getLogger("dpaudit.monitor").removeHandler(handler)


def _monitor(o: dict[str, Any]) -> None:
    """Open the monitor of ``o`` (the command's options), run it, print, exit 3 on alarm."""
    from dpaudit.serve.monitor import ClientMonitor, LedgerMonitor, MonitorError
    from dpaudit.serve.monitor_page import write_monitor_page

    ledger, sigma, confidence_level = o["ledger"], o["sigma"], o["confidence_level"]
    url, api_key, queries, dataset, name = o["url"], o["api_key"], o["queries"], o["dataset"], o[
        "name"]  # fmt: skip
    page_path, as_json = o["page_path"], o["as_json"]
    try:
        if url is None:
            if api_key is not None or queries is not None or dataset is not None:
                fail("--api-key, --queries and --dataset are options of client mode (--url)")
            mon: Any = LedgerMonitor.open(
                ledger, claimed_sigma=sigma, confidence_level=confidence_level,
                name=name or "ledger",
            )  # fmt: skip
        else:
            key = api_key or os.environ.get("DPAUDIT_API_KEY")
            if not key:
                fail("client mode needs --api-key KEY (or $DPAUDIT_API_KEY)")
            rows = _probe_rows(queries, dataset)
            mon = ClientMonitor(
                url, key, ledger, rows, batch=o["batch"], rng=o["seed"], claimed_sigma=sigma,
                confidence_level=confidence_level, name=name or "client",
            )  # fmt: skip
    except (MonitorError, ValueError, TypeError) as exc:
        fail(str(exc))
        return
    last = {"answers": -1}

    def on_status(status: Any) -> None:
        if page_path is not None:
            write_monitor_page(mon.monitor, page_path)
        if not as_json and status.answers != last["answers"]:
            last["answers"] = status.answers
            upper = "-" if status.sigma_upper is None else f"{status.sigma_upper:.4g}"
            print(
                f"dpaudit monitor: {status.answers} answers, e-value "
                f"{_exp(status.log_e_value):.4g} (max {_exp(status.max_log_e_value):.4g}, "
                f"alarm at {_exp(status.threshold):g}), noise upper bound {upper}",
                file=sys.stderr,
                flush=True,
            )

    try:
        status = mon.run(
            interval=o["interval"], duration=o["duration"], max_answers=o["max_answers"],
            stop_on_alarm=o["stop_on_alarm"], on_status=on_status,
        )  # fmt: skip
    except KeyboardInterrupt:
        status = mon.monitor.status()
    except MonitorError as exc:
        fail(str(exc))
        return
    finally:
        mon.close()
    emit(status, as_json=as_json, render=_render)
    if status.alarm:
        raise typer.Exit(code=ALARM_EXIT_CODE)


def _log_alarms() -> logging.Handler:
    """The alarm line of :mod:`dpaudit.serve.monitor` on stderr (removed after the command)."""
    log = logging.getLogger("dpaudit.monitor")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return handler
