"""The typer application and its command groups (commands live in sibling modules)."""

from __future__ import annotations

from dpaudit.errors import require

typer = require("typer", "cli")

app = typer.Typer(
    name="dpaudit",
    help="Audit DP ML systems: lower bounds on ε next to the claimed guarantee.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
audit_app = typer.Typer(
    help="Run an audit end to end (lower bound next to the claim).", no_args_is_help=True
)
account_app = typer.Typer(help="Privacy accounting: the claimed upper bound.", no_args_is_help=True)
attack_app = typer.Typer(help="Attacks on private-prediction interfaces.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
app.add_typer(account_app, name="account")
app.add_typer(attack_app, name="attack")
