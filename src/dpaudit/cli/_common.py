"""Helpers shared by CLI commands: parsing lists, printing results as rich tables or JSON."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from dpaudit.errors import require

__all__ = ["emit", "fail", "parse_floats"]


def parse_floats(name: str, text: str) -> list[float]:
    """Parse ``"1,2.5,3"`` into floats; a bad entry is a usage error naming the option."""
    typer = require("typer", "cli")
    try:
        values = [float(x) for x in text.replace(" ", "").split(",") if x != ""]
    except ValueError as exc:
        raise typer.BadParameter(f"{name} must be comma-separated numbers, got {text!r}") from exc
    if not values:
        raise typer.BadParameter(f"{name} must not be empty")
    return values


def emit(result: Any, *, as_json: bool, render: Callable[[Any, Any], None]) -> None:
    """Print ``result`` as JSON (``--json``) or through ``render(console, result)``."""
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
        return
    rich_console = require("rich.console", "cli")
    render(rich_console.Console(), result)


def fail(message: str) -> None:
    """Exit with a clear error message: one line on stderr (never wrapped), status 2."""
    typer = require("typer", "cli")
    line = " ".join(str(message).split())
    sys.stderr.write(f"error: {line}\n")
    raise typer.Exit(code=2)
