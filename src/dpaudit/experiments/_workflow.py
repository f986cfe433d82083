"""Workflows as plug-ins: one :class:`Workflow` per audit, found by name in :data:`WORKFLOWS`.

A workflow is an audit end to end: a settings type (a frozen dataclass tree, from which the
TOML schema and the command-line options derive, :mod:`dpaudit._settings`), a ``run``
function that turns settings into the shared :class:`~dpaudit.AuditResult`, and a report
(rendered on the console, written to a directory). Every entry has the same signature::

    run(settings, *, data=None, progress=None, checkpoint=None) -> AuditResult

``data`` is a preloaded input (a dataset, a pool of images, vote histograms, score arrays: what
the workflow would otherwise load from ``settings``), ``progress`` a
:class:`~dpaudit._typing.Progress` callback (``True`` for rich bars) and ``checkpoint`` a
directory where a long run keeps its finished work so that an interrupted run resumes; a
workflow with nothing to resume ignores it.

The command line (:mod:`dpaudit.cli`) generates ``dpaudit audit NAME`` for every entry, so
registering a workflow is all it takes to get a command, ``--help``, ``--config``,
``--print-config``, the run store and ``dpaudit report``. The report lives one layer up
(:mod:`dpaudit.report`); an entry names it lazily as ``"module:attribute"``, the way
packaging entry points do, or passes a :class:`Reporter` object.

Example:
    >>> import dataclasses
    >>> from dpaudit import AuditResult
    >>> from dpaudit._settings import option
    >>> @dataclasses.dataclass(frozen=True)
    ... class ToySettings:
    ...     name: str = option("toy", help="run name")
    ...     seed: int = option(0, help="root seed")
    >>> def run_toy(settings, *, data=None, progress=None, checkpoint=None):
    ...     return AuditResult("toy", (), settings, settings.seed, {}, {})
    >>> toy = Workflow("toy", ToySettings, run_toy, "a toy audit")
    >>> toy(ToySettings(seed=3)).seed
    3
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dpaudit import _settings
from dpaudit._registry import Registry
from dpaudit._results import AuditResult
from dpaudit._typing import ProgressLike

__all__ = ["WORKFLOWS", "Reporter", "Workflow", "run_workflow"]


@runtime_checkable
class Reporter(Protocol):
    """How a workflow's result is shown and stored.

    ``render(console, result)`` prints it on a rich console; ``write(result, out_dir)`` writes
    ``results.json`` and the workflow's tables and plots into ``out_dir`` and returns the paths
    written.
    """

    def render(self, console: Any, result: AuditResult) -> None:
        """Print ``result`` on ``console`` (a ``rich.console.Console``)."""

    def write(self, result: AuditResult, out_dir: Path) -> tuple[Path, ...]:
        """Write ``result`` into ``out_dir``; return the files written."""


def _resolve(ref: str) -> Any:
    """``"package.module:attribute"`` → the attribute (imported now)."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"report must be 'module:attribute', got {ref!r}")
    return getattr(importlib.import_module(module), attr)


@dataclasses.dataclass(frozen=True)
class Workflow:
    """One audit, as the registry, the command line and the run store see it.

    Attributes:
        name: the command name (``dpaudit audit NAME``) and ``AuditResult.workflow``.
        settings: the settings dataclass (root of the tree; ``settings()`` must be valid).
        run: ``run(settings, *, data=None, progress=None, checkpoint=None) -> AuditResult``.
        summary: one line for ``--help`` and listings.
        report: a :class:`Reporter`, or ``"module:attribute"`` naming one (imported when
            first used), or None (the generic table of :mod:`dpaudit.report`).
        config: the shipped config (``dpaudit/configs/NAME.toml``) used when no
            ``--config`` is given; None: the settings' defaults.
        source: the paper the workflow reproduces (authors, year, arXiv id).
        check: ``check(settings)`` — the checks a run makes before any work that need more
            than the settings (the dataset's sizes against the settings …); raises
            ValueError / MissingDatasetError naming what is wrong. None: the settings'
            own validation is all.
    """

    name: str
    settings: type
    run: Callable[..., AuditResult]
    summary: str
    report: Reporter | str | None = None
    config: str | None = None
    source: str = ""
    check: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty string, got {self.name!r}")
        if not (isinstance(self.settings, type) and dataclasses.is_dataclass(self.settings)):
            raise TypeError(f"settings must be a settings dataclass, got {self.settings!r}")
        if not callable(self.run):
            raise TypeError(f"run must be callable, got {self.run!r}")
        if self.check is not None and not callable(self.check):
            raise TypeError(f"check must be callable or None, got {self.check!r}")
        if not (self.report is None or isinstance(self.report, (str, Reporter))):
            raise TypeError(
                f"report must be a Reporter, 'module:attribute' or None, got {self.report!r}"
            )

    def default_settings(self) -> Any:
        """The settings used when none are given: the shipped :attr:`config`, else defaults."""
        if self.config is None:
            return self.settings()
        return _settings.load_config(self.config, self.settings)

    def check_settings(self, settings: Any = None) -> Any:
        """The settings (default :meth:`default_settings`) put through the checks a run makes
        before any work (:attr:`check`), without running anything else; returns them.

        Raises:
            TypeError: ``settings`` is not this workflow's settings type.
            ValueError, FileNotFoundError: what :attr:`check` refuses.
        """
        settings = self.default_settings() if settings is None else settings
        if not isinstance(settings, self.settings):
            raise TypeError(
                f"settings must be {self.settings.__name__} for workflow {self.name!r}, "
                f"got {type(settings).__name__}"
            )
        if self.check is not None:
            self.check(settings)
        return settings

    def load_settings(self, config: str | os.PathLike[str] | None = None, **overrides: Any) -> Any:
        """Settings from a TOML file or shipped config name (default :meth:`default_settings`)
        with ``overrides`` (``{"teachers": 30}`` or ``{"system.teachers": 30}``) applied.

        Raises:
            FileNotFoundError: no such file nor shipped config.
            ValueError: an invalid config or override (the message names the key).
        """
        base = (
            self.default_settings()
            if config is None
            else _settings.load_config(config, self.settings)
        )
        return _settings.apply_overrides(base, overrides)

    def reporter(self) -> Reporter | None:
        """The :class:`Reporter` (a ``"module:attribute"`` reference is imported now)."""
        report = _resolve(self.report) if isinstance(self.report, str) else self.report
        if report is not None and not isinstance(report, Reporter):
            raise TypeError(f"report of workflow {self.name!r} is not a Reporter: {report!r}")
        return report

    def __call__(
        self,
        settings: Any = None,
        *,
        data: Any = None,
        progress: ProgressLike = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> AuditResult:
        """Run the audit (settings checked first; default :meth:`default_settings`).

        Raises:
            TypeError: ``settings`` is not this workflow's settings type, or ``run`` did not
                return an :class:`~dpaudit.AuditResult` of this workflow.
        """
        settings = self.default_settings() if settings is None else settings
        if not isinstance(settings, self.settings):
            raise TypeError(
                f"settings must be {self.settings.__name__} for workflow {self.name!r}, "
                f"got {type(settings).__name__}"
            )
        result = self.run(settings, data=data, progress=progress, checkpoint=checkpoint)
        if not isinstance(result, AuditResult):
            raise TypeError(
                f"workflow {self.name!r} returned {type(result).__name__}, not an AuditResult"
            )
        if result.workflow != self.name:
            raise TypeError(
                f"workflow {self.name!r} returned a result of workflow {result.workflow!r}"
            )
        return result


#: Every audit workflow, by name (``dpaudit audit NAME``).
WORKFLOWS: Registry[Workflow] = Registry("workflow")


def run_workflow(
    name: str,
    settings: Any = None,
    *,
    data: Any = None,
    progress: ProgressLike = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> AuditResult:
    """Run the registered workflow ``name`` (see :meth:`Workflow.__call__`).

    Raises:
        ValueError: no workflow of that name (the message lists them).
    """
    return WORKFLOWS.get(name)(settings, data=data, progress=progress, checkpoint=checkpoint)
