"""The ``dpaudit`` command line (layer 8): thin typer commands over library functions.

Every command takes ``--json`` and then prints its result dataclass as JSON on stdout.
"""

from __future__ import annotations

import importlib

__all__ = ["main"]

# One module per command family; each registers its commands on the app in ``_app``.
_COMMAND_MODULES = [
    "dpaudit.cli.argmax",
    "dpaudit.cli.attack",
    "dpaudit.cli.account",
    "dpaudit.cli.audit_lidp",
    "dpaudit.cli.audit_pp",
    "dpaudit.cli.audit_dpsgd",
    "dpaudit.cli.audit_label_dp",
    "dpaudit.cli.demo",
    "dpaudit.cli.serve",
    "dpaudit.cli.runs",
]


def build_app():
    """Import every command module and return the typer app."""
    from dpaudit.cli._app import app

    for name in _COMMAND_MODULES:
        importlib.import_module(name)
    return app


def main() -> None:
    """Console-script entry point."""
    build_app()()
