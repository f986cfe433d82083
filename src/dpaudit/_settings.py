"""One settings mechanism for every workflow (layer 1).

A workflow's settings are nested frozen dataclasses (for example system, adversary, engine and
audit sections). Everything else is *derived* from those classes, never written again:

* :func:`from_mapping` — strict parsing of a TOML/JSON mapping: unknown keys, wrong types
  (``"30"`` for an int, ``true`` for a number, a float for an int) and bad values are a
  ``ValueError`` naming the key path; nothing is coerced.
* :func:`to_mapping` / :func:`to_toml` — the settings as plain data (what a run stores).
* :func:`schema` — a JSON Schema of the TOML file.
* :func:`fields` — the flat list of leaf options (path, type, default, help, flag), from which
  the command line builds its options (:mod:`dpaudit.cli`).
* :func:`apply_overrides` — ``{"system.teachers": 30}`` or ``{"teachers": 30}`` applied to a
  settings object (re-validated).

Field help and the command-line flag come from the dataclass field's ``metadata``
(``help=…``, ``flag=…``); :func:`option` is shorthand for it. Values are validated by the
dataclasses' own ``__post_init__`` (the single place where each rule lives).

Example:
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Engine:
    ...     workers: int = option(1, help="engine workers")
    >>> @dataclasses.dataclass(frozen=True)
    ... class Run:
    ...     seed: int = option(0, help="root seed")
    ...     engine: Engine = option(default_factory=Engine, help="engine")
    >>> from_mapping(Run, {"seed": 3, "engine": {"workers": 2}})
    Run(seed=3, engine=Engine(workers=2))
    >>> from_mapping(Run, {"engine": {"workers": "2"}})
    Traceback (most recent call last):
    ...
    ValueError: engine.workers must be an integer, got '2' (str)
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

__all__ = [
    "SettingsField",
    "apply_overrides",
    "check_sections",
    "fields",
    "find_config",
    "from_mapping",
    "load_config",
    "load_toml",
    "option",
    "parse_toml",
    "schema",
    "shipped_configs",
    "to_mapping",
    "to_toml",
]

if sys.version_info >= (3, 11):  # pragma: no cover - version dependent
    import tomllib as _toml
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport
    import tomli as _toml


_MISSING = dataclasses.MISSING


def option(
    default: Any = _MISSING,
    *,
    default_factory: Any = _MISSING,
    help: str = "",
    flag: str | None = None,
    cli: bool = True,
) -> Any:
    """A dataclass field with the metadata the derived schema and CLI read.

    Args:
        default: default value.
        default_factory: default factory (nested sections, mutable defaults).
        help: one line shown in ``--help`` and in the schema.
        flag: command-line flag (default ``--`` + the field name with dashes).
        cli: whether the field becomes a command-line option.
    """
    meta = {"help": help, "flag": flag, "cli": cli}
    if default_factory is not _MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class SettingsField:
    """One leaf option of a settings tree.

    Attributes:
        path: dotted path from the root, e.g. ``"system.teachers"``.
        name: the leaf field name.
        type: the annotated type (``int``, ``float``, ``str``, ``bool``, ``tuple[str, ...]``,
            ``X | None`` …).
        default: the default value.
        help: help text.
        flag: command-line flag.
        cli: whether it is a command-line option.
    """

    path: str
    name: str
    type: Any
    default: Any
    help: str
    flag: str
    cli: bool

    @property
    def base_type(self) -> Any:
        """The type without ``| None``."""
        return _strip_optional(self.type)[0]

    @property
    def optional(self) -> bool:
        """Whether ``None`` is allowed."""
        return _strip_optional(self.type)[1]


# --------------------------------------------------------------------------------- typing


def _hints(cls: type) -> dict[str, Any]:
    module = sys.modules.get(cls.__module__)
    globalns = dict(vars(module)) if module else {}
    try:
        return typing.get_type_hints(cls, globalns=globalns)
    except NameError:
        # A class defined in a local scope (a test, a doctest): its nested sections cannot be
        # named from the module, but their default factory is the section class itself.
        out = {}
        for f in dataclasses.fields(cls):
            factory = f.default_factory
            if _is_settings(factory):
                out[f.name] = factory
            elif isinstance(f.type, str):
                out[f.name] = eval(f.type, {**globalns, "typing": typing})
            else:
                out[f.name] = f.type
        return out


def check_sections(settings: Any) -> None:
    """Check a settings root built in Python: a non-empty ``name``, a seed ≥ 0 (normalised to
    ``int``) and every nested section of its declared type.

    Call it from ``__post_init__`` of a workflow's root settings (TOML input is checked by
    :func:`from_mapping` already).

    Raises:
        ValueError: an empty name or a negative seed.
        TypeError: a section that is not an instance of its settings class.
    """
    from dpaudit._validate import check_nonneg_int

    name = getattr(settings, "name", "x")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if hasattr(settings, "seed"):
        object.__setattr__(settings, "seed", check_nonneg_int("seed", settings.seed))
    hints = _hints(type(settings))
    for f in dataclasses.fields(settings):
        section, _ = _strip_optional(hints.get(f.name, f.type))
        value = getattr(settings, f.name)
        if _is_settings(section) and not isinstance(value, section):
            raise TypeError(f"{f.name} must be {section.__name__}, got {value!r}")


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        if len(args) == 1:
            return args[0], optional
        return Union[tuple(args)], optional  # noqa: UP007 - built from a runtime tuple
    return tp, False


def _is_settings(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not _MISSING:
        return f.default
    if f.default_factory is not _MISSING:
        return f.default_factory()
    return _MISSING


def _type_name(value: Any) -> str:
    return type(value).__name__


def _fmt(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_value(path: str, tp: Any, value: Any) -> Any:
    """Strictly check ``value`` against ``tp``; return it in canonical form (tuples)."""
    base, optional = _strip_optional(tp)
    if value is None:
        if optional:
            return None
        raise ValueError(f"{path} must not be empty (None)")
    if _is_settings(base):
        if isinstance(value, base):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"{path} must be a table of settings, got {_fmt(value)}")
        return from_mapping(base, value, _prefix=path)
    origin = typing.get_origin(base)
    if base is Any:
        return value
    if base is bool:
        if not isinstance(value, bool):
            raise ValueError(
                f"{path} must be true or false, got {_fmt(value)} ({_type_name(value)})"
            )
        return value
    if base is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{path} must be an integer, got {_fmt(value)} ({_type_name(value)})")
        return int(value)
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{path} must be a number, got {_fmt(value)} ({_type_name(value)})")
        out = float(value)
        if math.isnan(out):
            raise ValueError(f"{path} must be a number, got nan")
        return out
    if base is str:
        if not isinstance(value, str):
            raise ValueError(f"{path} must be a string, got {_fmt(value)} ({_type_name(value)})")
        return value
    if origin is tuple:
        args = typing.get_args(base)
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{path} must be a list, got {_fmt(value)} ({_type_name(value)})")
        item_tp = args[0] if args else Any
        return tuple(_check_value(f"{path}[{i}]", item_tp, v) for i, v in enumerate(value))
    if origin in (dict, Mapping) or base in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ValueError(f"{path} must be a table, got {_fmt(value)} ({_type_name(value)})")
        args = typing.get_args(base)
        val_tp = args[1] if len(args) == 2 else Any
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{path} keys must be strings, got {_fmt(k)}")
            out[k] = _check_value(f"{path}.{k}", val_tp, v)
        return types.MappingProxyType(out)
    if origin in (Union, types.UnionType):
        errors = []
        for arg in typing.get_args(base):
            try:
                return _check_value(path, arg, value)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0])
    if isinstance(base, type):
        if not isinstance(value, base):
            raise ValueError(f"{path} must be {base.__name__}, got {_fmt(value)}")
        return value
    return value  # pragma: no cover - unsupported annotations are passed through


# -------------------------------------------------------------------------------- parsing


def from_mapping(cls: type, data: Mapping[str, Any], *, _prefix: str = "") -> Any:
    """Build settings ``cls`` from a mapping, strictly (module notes).

    Args:
        cls: a frozen settings dataclass.
        data: keys and values (as read from TOML); missing keys take the defaults.

    Returns:
        An instance of ``cls`` (validated by its ``__post_init__``).

    Raises:
        ValueError: an unknown key, a wrong type or an invalid value; the message names the
            dotted key path.
    """
    if not _is_settings(cls):
        raise TypeError(f"cls must be a settings dataclass, got {cls!r}")
    if not isinstance(data, Mapping):
        raise ValueError(
            f"{_prefix or 'settings'} must be a table of settings, got {_type_name(data)}"
        )
    hints = _hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in data if k not in known]
    if unknown:
        where = f" in [{_prefix}]" if _prefix else ""
        hint = _suggest(cls, unknown[0])
        raise ValueError(f"unknown setting {unknown[0]!r}{where}{hint}; known: {sorted(known)}")
    values = {}
    for name, value in data.items():
        path = f"{_prefix}.{name}" if _prefix else name
        values[name] = _check_value(path, hints[name], value)
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if _prefix and not msg.startswith(_prefix):
            msg = f"[{_prefix}] {msg}"
        raise ValueError(msg) from None


def _suggest(cls: type, key: str) -> str:
    paths = [f.path for f in fields(cls)]
    matches = [p for p in paths if p.rsplit(".", 1)[-1] == key]
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def parse_toml(text: str, cls: type, *, source: str = "<string>") -> Any:
    """Parse TOML ``text`` into settings ``cls`` (see :func:`from_mapping`).

    Raises:
        ValueError: not valid TOML, or invalid settings.
    """
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        raise ValueError(f"{source} is not valid TOML: {exc}") from None
    return from_mapping(cls, data)


def load_toml(path: str | Path, cls: type) -> Any:
    """Read settings ``cls`` from a TOML file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not valid TOML, or invalid settings (the message names the key).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config file {str(p)!r} does not exist")
    return parse_toml(p.read_text(), cls, source=f"config file {str(p)!r}")


def shipped_configs() -> tuple[str, ...]:
    """Names of the configs shipped inside the package (``dpaudit/configs/*.toml``)."""
    from importlib import resources

    folder = resources.files("dpaudit") / "configs"
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml")))


def find_config(name: str | Path) -> Path:
    """A config file: ``name`` itself when it is an existing file, else the config shipped
    inside the package under that name (``"demo"``, ``"paper-mnist.toml"``,
    ``"configs/label-dp-demo.toml"`` …; the folder part is ignored for shipped configs).

    This is the one place a config is found by name (the command line's ``--config`` and
    every workflow's loader call it).

    Raises:
        FileNotFoundError: neither an existing file nor a shipped config (the message lists
            the shipped configs).

    Example:
        >>> find_config("demo").name
        'demo.toml'
    """
    from importlib import resources

    path = Path(name).expanduser()
    if path.is_file():
        return path
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    shipped = resources.files("dpaudit") / "configs" / f"{stem}.toml"
    if stem and shipped.is_file():
        return Path(str(shipped))
    raise FileNotFoundError(
        f"config {str(name)!r} does not exist: it is neither a file nor a config shipped "
        f"with dpaudit (available: {', '.join(shipped_configs())})"
    )


def load_config(name: str | Path, cls: type) -> Any:
    """Settings ``cls`` from a TOML file or a shipped config's name (:func:`find_config`).

    Raises:
        FileNotFoundError: no such file nor shipped config.
        ValueError: not valid TOML, or invalid settings (the message names the key).
    """
    return load_toml(find_config(name), cls)


# ---------------------------------------------------------------------------- derivations


def fields(cls: type, *, _prefix: str = "") -> list[SettingsField]:
    """Every leaf option of the settings tree ``cls``, depth first.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class S:
        ...     n_jobs: int = option(1, help="workers")
        >>> [(f.path, f.flag) for f in fields(S)]
        [('n_jobs', '--n-jobs')]
    """
    out: list[SettingsField] = []
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        path = f"{_prefix}.{f.name}" if _prefix else f.name
        tp = hints[f.name]
        base, _ = _strip_optional(tp)
        if _is_settings(base):
            out.extend(fields(base, _prefix=path))
            continue
        meta = f.metadata or {}
        flag = meta.get("flag") or "--" + f.name.replace("_", "-")
        out.append(
            SettingsField(
                path=path,
                name=f.name,
                type=tp,
                default=_default(f),
                help=str(meta.get("help", "")),
                flag=flag,
                cli=bool(meta.get("cli", True)),
            )
        )
    return out


def to_mapping(settings: Any) -> dict[str, Any]:
    """Settings as nested plain data (tuples as lists; ``None`` values left out)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        if not f.init:
            continue
        value = getattr(settings, f.name)
        if value is None:
            continue
        out[f.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_mapping(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a TOML value")


def to_toml(settings: Any) -> str:
    """Settings as a TOML document that :func:`parse_toml` reads back to equal settings."""
    lines: list[str] = []

    def table(data: Mapping[str, Any], prefix: str) -> None:
        scalars = {k: v for k, v in data.items() if not isinstance(v, Mapping)}
        tables = {k: v for k, v in data.items() if isinstance(v, Mapping)}
        if prefix and scalars:
            lines.append(f"\n[{prefix}]")
        for k, v in scalars.items():
            lines.append(f"{_key(k)} = {_toml_value(v)}")
        for k, v in tables.items():
            sub = f"{prefix}.{_key(k)}" if prefix else _key(k)
            if not v:
                lines.append(f"\n[{sub}]")
            table(v, sub)

    table(to_mapping(settings), "")
    return "\n".join(lines).lstrip("\n") + "\n"


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else f'"{k}"'


_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}


def _json_schema_of(tp: Any) -> dict[str, Any]:
    base, _ = _strip_optional(tp)
    origin = typing.get_origin(base)
    if _is_settings(base):
        return schema(base)
    if base in _JSON_TYPES:
        return {"type": _JSON_TYPES[base]}
    if origin is tuple:
        args = typing.get_args(base)
        return {"type": "array", "items": _json_schema_of(args[0]) if args else {}}
    if origin in (dict, Mapping) or base in (dict, Mapping):
        return {"type": "object"}
    return {}


def schema(cls: type) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the TOML file of settings ``cls``.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class S:
        ...     sigma: float = option(40.0, help="noise")
        >>> schema(S)["properties"]["sigma"]
        {'type': 'number', 'description': 'noise', 'default': 40.0}
    """
    props: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        entry = dict(_json_schema_of(hints[f.name]))
        help_text = (f.metadata or {}).get("help")
        if help_text:
            entry["description"] = help_text
        default = _default(f)
        if default is not _MISSING and default is not None and not _is_settings(type(default)):
            entry["default"] = _plain(default)
        props[f.name] = entry
    doc = (cls.__doc__ or "").strip().splitlines()
    out: dict[str, Any] = {
        "title": cls.__name__,
        "type": "object",
        "properties": props,
        "additionalProperties": False,
    }
    if doc:
        out["description"] = doc[0]
    return out


def apply_overrides(settings: Any, overrides: Mapping[str, Any]) -> Any:
    """Replace leaf values by dotted path (or unique leaf name); ``None`` values are ignored.

    The result is re-validated (each section's ``__post_init__`` runs again).

    Raises:
        ValueError: an unknown or ambiguous key, or an invalid value.
    """
    leaves = fields(type(settings))
    by_path = {f.path: f for f in leaves}
    by_name: dict[str, list[SettingsField]] = {}
    for f in leaves:
        by_name.setdefault(f.name, []).append(f)
    data = to_mapping_full(settings)
    for key, value in overrides.items():
        if value is None:
            continue
        if key in by_path:
            path = key
        elif len(by_name.get(key, [])) == 1:
            path = by_name[key][0].path
        elif key in by_name:
            raise ValueError(f"setting {key!r} is ambiguous: {[f.path for f in by_name[key]]}")
        else:
            raise ValueError(f"unknown setting {key!r}; known: {sorted(by_path)}")
        node = data
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value
    return from_mapping(type(settings), data)


def to_mapping_full(settings: Any) -> dict[str, Any]:
    """Like :func:`to_mapping` but keeps ``None`` values and tuples (for re-parsing)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(settings):
        if not f.init:
            continue
        value = getattr(settings, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out[f.name] = to_mapping_full(value)
        elif isinstance(value, Mapping):
            out[f.name] = dict(value)
        else:
            out[f.name] = value
    return out
