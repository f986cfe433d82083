"""Command-line options derived from a workflow's settings dataclass (never written again).

:func:`settings_command` registers a typer command whose options are the leaves of a settings
tree (:func:`dpaudit._settings.fields`): one option per leaf, named by its ``flag`` (default
``--field-name``), with the field's help, type (``FLOAT``, ``INTEGER``, ``TEXT``, a list as
``FLOAT,…``) and default; plus ``--config NAME|FILE.toml`` (a shipped config or a file; options
override it), ``--print-config`` (the resolved settings as TOML, nothing run), ``--out DIR``,
``--json``, ``--progress/--no-progress``, and the run store's
``--store PATH`` / ``--no-store`` / ``--resume ID`` (:mod:`dpaudit.cli._record`: every run is
recorded with its settings, seed, versions, timings, result and files). Values are
parsed strictly (an integer option takes ``1000`` or ``1e8`` but not ``2.5``; a list option
takes comma-separated items), and every error is one line on stderr with exit code 2, raised
before any work starts.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dpaudit import _settings
from dpaudit.cli._app import typer
from dpaudit.cli._common import fail
from dpaudit.cli._record import RunRecorder, command_line, record_options

__all__ = ["check_out", "config_path", "parse_cli_value", "resolve_settings", "settings_command"]

_RESERVED = (
    "ctx", "config", "print_config", "out", "as_json", "progress", "store", "no_store", "resume",
)  # fmt: skip

_METAVARS = {int: "INTEGER", float: "FLOAT", str: "TEXT"}


def _metavar(field: _settings.SettingsField) -> str:
    """``FLOAT``, ``INTEGER``, ``TEXT`` or ``FLOAT,…`` for a list (shown in ``--help``)."""
    base = field.base_type
    if typing.get_origin(base) is tuple:
        args = typing.get_args(base)
        return _METAVARS.get(args[0] if args else str, "TEXT") + ",…"
    return _METAVARS.get(base, "TEXT")


def _int(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{flag} must be an integer, got {text!r}") from None
    if not math.isfinite(value) or not value.is_integer():
        raise ValueError(f"{flag} must be a whole number, got {text!r}")
    if abs(value) >= 2**63:
        raise ValueError(f"{flag} must be below 2**63, got {text!r}")
    return int(value)


def _float(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{flag} must be a number, got {text!r}") from None
    if math.isnan(value):
        raise ValueError(f"{flag} must be a number, got {text!r}")
    return value


def parse_cli_value(field: _settings.SettingsField, text: Any) -> Any:
    """Parse one option's text into the field's type (strictly).

    Raises:
        ValueError: the text is not a value of the field's type (the message names the flag).
    """
    if text is None or isinstance(text, bool):
        return text
    base = field.base_type
    flag = field.flag
    if base is int:
        return _int(flag, text)
    if base is float:
        return _float(flag, text)
    if base is str:
        return text
    if typing.get_origin(base) is tuple:
        args = typing.get_args(base)
        item = args[0] if args else str
        parts = [p.strip() for p in str(text).split(",") if p.strip()]
        if not parts:
            raise ValueError(f"{flag} must list at least one item, got {text!r}")
        if item is float:
            return [_float(flag, p) for p in parts]
        if item is int:
            return [_int(flag, p) for p in parts]
        return parts
    raise ValueError(f"{flag} cannot be given on the command line")  # pragma: no cover


def _default_text(field: _settings.SettingsField) -> str:
    d = field.default
    if d is None:
        return "none"
    if isinstance(d, tuple):
        return ",".join(str(x) for x in d)
    if isinstance(d, float) and d.is_integer() and abs(d) >= 1e6:
        return f"{d:.0e}"
    return str(d)


def _parameters(settings_cls: type) -> list[tuple[inspect.Parameter, _settings.SettingsField]]:
    out = []
    seen: dict[str, str] = {}
    leaves = [f for f in _settings.fields(settings_cls) if f.cli]
    counts: dict[str, int] = {}
    for f in leaves:
        counts[f.flag] = counts.get(f.flag, 0) + 1
    for f in leaves:
        if counts[f.flag] > 1 and f.flag == "--" + f.name.replace("_", "-"):
            # a leaf name shared by several sections: the flag names its path
            f = dataclasses.replace(f, flag="--" + f.path.replace(".", "-").replace("_", "-"))
        if f.flag in seen:
            raise ValueError(f"flag {f.flag} of {f.path} is also the flag of {seen[f.flag]}")
        seen[f.flag] = f.path
        pname = "opt_" + f.path.replace(".", "__")
        help_text = f"{f.help} \\[default: {_default_text(f)}]"  # \\[: not rich markup
        if f.base_type is bool:
            flags = f"{f.flag}/--no-{f.flag[2:]}"
            default = typer.Option(None, flags, help=help_text, show_default=False, metavar="")
            annotation: Any = bool | None
        else:
            default = typer.Option(
                None, f.flag, help=help_text, show_default=False, metavar=_metavar(f)
            )
            annotation = str | None
        out.append(
            (
                inspect.Parameter(
                    pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
                ),
                f,
            )
        )
    return out


def config_path(config: str) -> Path:
    """``--config``: a TOML file, or else the name of a config shipped inside the package
    (``dpaudit/configs/NAME.toml``, e.g. ``paper-fashion-mnist``):
    :func:`dpaudit._settings.find_config`."""
    return _settings.find_config(config)


def resolve_settings(
    settings_cls: type,
    *,
    config: str | None,
    options: Mapping[str, Any],
    base: Any = None,
) -> Any:
    """Settings from an optional TOML file (or ``base``) with command-line overrides.

    Args:
        settings_cls: the workflow's settings dataclass.
        config: path of a TOML file, the name of a shipped config, or None.
        options: ``{settings field path: raw option value}`` (None = not given).
        base: settings to start from when no config is given (default: ``settings_cls()``).

    Raises:
        ValueError, FileNotFoundError: bad file, value or setting.
    """
    by_path = {f.path: f for f in _settings.fields(settings_cls)}
    overrides = {p: parse_cli_value(by_path[p], v) for p, v in options.items() if v is not None}
    if config is not None:
        start = _settings.load_toml(config_path(config), settings_cls)
    else:
        start = settings_cls() if base is None else base
    return _settings.apply_overrides(start, overrides)


def settings_command(
    app: Any,
    name: str,
    settings_cls: type,
    run: Callable[..., Any],
    *,
    help: str,
    base: Callable[[], Any] | None = None,
) -> Callable[..., None]:
    """Register ``name`` on ``app`` with options derived from ``settings_cls``.

    Args:
        app: a typer app or sub-app.
        name: the command name.
        settings_cls: the workflow's settings dataclass.
        run: ``run(settings, *, out: Path | None, as_json: bool, progress: bool)``; it
            prints the result (ValueError / FileNotFoundError it raises become one-line errors)
            and returns it: an :class:`~dpaudit.AuditResult` is recorded in the run store.
        help: the command's help text.
        base: settings used when ``--config`` is not given (default ``settings_cls()``).

    Returns:
        The registered command function.
    """
    params = _parameters(settings_cls)
    paths = {p.name: f.path for p, f in params}
    flags = {p.name: f.flag for p, f in params}

    def command(**kwargs: Any) -> None:
        ctx = kwargs.pop("ctx")
        config = kwargs.pop("config")
        print_config = kwargs.pop("print_config")
        out = kwargs.pop("out")
        as_json = kwargs.pop("as_json")
        progress = kwargs.pop("progress")
        recorder = RunRecorder(kwargs.pop("store"), kwargs.pop("no_store"))
        resume = kwargs.pop("resume")
        stored = None
        if resume is not None:
            if config is not None or any(v is not None for v in kwargs.values()):
                fail("--resume takes the stored run's settings: give no --config nor options")
            stored = recorder.resume(resume)
            out = out if out is not None else stored.out_dir
        try:
            if stored is not None:
                settings = _settings.from_mapping(settings_cls, stored.settings)
            else:
                settings = resolve_settings(
                    settings_cls,
                    config=config,
                    options={paths[k]: v for k, v in kwargs.items()},
                    base=None if (config is not None or base is None) else base(),
                )
            if print_config:
                typer.echo(_settings.to_toml(settings), nl=False)
                return
            out_dir = check_out(out)
        except (ValueError, TypeError, FileNotFoundError) as exc:
            fail(str(exc))
            return
        path = _command_path(ctx)
        given = {"--config": config, "--out": out, **{flags[k]: v for k, v in kwargs.items()}}
        recorder.start(
            name, settings, resume=None if stored is None else stored.id,
            command=command_line(path, given), resume_command=path, out_dir=out_dir,
        )  # fmt: skip
        _run_recorded(recorder, run, settings, out_dir, as_json, progress)

    extra = _extra_parameters()
    context = inspect.Parameter(
        "ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context, default=None
    )
    command.__signature__ = inspect.Signature([context] + [p for p, _ in params] + extra)  # type: ignore[attr-defined]
    command.__doc__ = help
    command.__name__ = name.replace("-", "_")
    app.command(name, help=help)(command)
    return command


def _extra_parameters() -> list[inspect.Parameter]:
    """``--config``, ``--out``, ``--json``, ``--progress`` and the run store's options."""
    out = [
        inspect.Parameter(
            "config",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                None,
                "--config",
                help="a shipped config's name or a TOML file (options override it)",
                metavar="NAME|PATH",
            ),
            annotation=str | None,
        ),
        inspect.Parameter(
            "print_config",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                False,
                "--print-config",
                help="print the resolved settings as TOML and exit",
                metavar="",
            ),
            annotation=bool,
        ),
        inspect.Parameter(
            "out",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                None, "--out", help="directory for results.json and plots", metavar="DIR"
            ),
            annotation=str | None,
        ),
        inspect.Parameter(
            "as_json",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(False, "--json", help="print the result as JSON", metavar=""),
            annotation=bool,
        ),
        inspect.Parameter(
            "progress",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                True, "--progress/--no-progress", help="rich progress bars", metavar=""
            ),
            annotation=bool,
        ),
    ]
    out += [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
        for n, a, d in record_options()
    ]
    return out


def _command_path(ctx: Any) -> str:
    """``dpaudit GROUP NAME`` of the running command (for the run store)."""
    parts = str(ctx.command_path).split()
    return " ".join(["dpaudit", *parts[1:]])


def _run_recorded(
    recorder: RunRecorder, run: Callable[..., Any], settings: Any, out_dir: Path | None,
    as_json: bool, progress: bool,
) -> None:  # fmt: skip
    """Run the workflow; record its result (or failure) in the run store."""
    try:
        try:
            result = run(settings, out=out_dir, as_json=as_json, progress=progress)
        except KeyboardInterrupt:
            recorder.fail("interrupted (KeyboardInterrupt)", interrupted=True)
            raise
        except (ValueError, FileNotFoundError) as exc:
            recorder.fail(f"{type(exc).__name__}: {exc}", resumable=_resumable(exc, out_dir))
            fail(str(exc))
            return
        except BaseException as exc:
            recorder.fail(f"{type(exc).__name__}: {exc}", resumable=_resumable(exc, out_dir))
            raise
        # a run function that prints but returns nothing is recorded without a result
        recorder.finish(result if hasattr(result, "to_dict") else {}, out_dir=out_dir)
    finally:
        recorder.close()


def _resumable(exc: BaseException, out_dir: Path | None) -> bool:
    """Whether ``--resume`` could help a run that raised ``exc``: not when a dependency or
    dataset is missing, nor when a setting was refused before any block was checkpointed
    (resuming takes the same settings and would fail the same way, with no work to reuse)."""
    from dpaudit.errors import MissingDatasetError

    if isinstance(exc, (ImportError, MissingDatasetError)):
        return False
    if isinstance(exc, (ValueError, TypeError, FileNotFoundError)):
        checkpoints = None if out_dir is None else out_dir / "checkpoints"
        return checkpoints is not None and checkpoints.is_dir() and any(checkpoints.iterdir())
    return True


def check_out(out: str | None) -> Path | None:
    """``--out`` must be a directory (or not exist yet): checked before any work."""
    if out is None:
        return None
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise ValueError(f"--out must be a directory, but {str(p)!r} is an existing file")
    try:  # created now, so that an unwritable place fails before the run, not after it
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".dpaudit-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"--out {str(p)!r} is not a writable directory: {exc.strerror}") from None
    return p
