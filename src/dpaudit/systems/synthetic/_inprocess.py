"""Libraries audited as installed *in dpaudit's own environment* (an optional extra).

A library whose requirements are compatible with dpaudit's (DataSynthesizer 0.1.13: numpy,
pandas, scikit-learn, matplotlib, seaborn, python-dateutil, none pinned) is installed as an
extra of the package (``pip install 'dpaudit[datasynthesizer]'``) and imported lazily. An
:class:`InProcessLibrary` has the shape of :class:`~dpaudit.systems._external.ExternalLibrary`
— ``available()``, ``python()``, ``start()``, ``version()`` and a worker whose ``call(op,
body, arrays)`` answers ``(body, arrays)`` — so the synthetic-data system and its audit serve
both kinds alike; here the handler's ``op_NAME`` functions run in this process.

Example:
    >>> lib = InProcessLibrary("nosuchlib", "nosuchlib", "nosuchlib", "dpaudit.errors", "nosuch")
    >>> lib.available()
    False
    >>> try:
    ...     lib.python()
    ... except ImportError as exc:
    ...     print(str(exc).split(": ")[-1])
    run `pip install 'dpaudit[nosuch]'` (or `make test`, which installs the extra)
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.errors import MissingDependencyError

__all__ = ["InProcessLibrary", "InProcessWorker"]


@dataclasses.dataclass(frozen=True)
class InProcessLibrary:
    """A library imported into dpaudit's own environment, installed as an extra.

    Attributes:
        venv: a name for the library (the key of the synthetic-data ``LIBRARIES``).
        distribution: the pip distribution whose version is recorded (``"DataSynthesizer"``).
        module: the module whose import tells whether it is installed.
        handler: the dotted name of the module with the ``op_NAME(body, arrays)`` functions.
        extra: dpaudit's extra that installs it.
    """

    venv: str
    distribution: str
    module: str
    handler: str
    extra: str

    @property
    def install_hint(self) -> str:
        """The command that installs the library."""
        return f"pip install 'dpaudit[{self.extra}]'"

    @property
    def make_target(self) -> str:
        """The make target whose install step installs the extra (``make test``)."""
        return "test"

    def available(self) -> bool:
        """Whether the library imports here."""
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True

    def python(self) -> Path:
        """This interpreter (the library runs in it).

        Raises:
            MissingDependencyError: the library is not installed (the message names the
                install command).
        """
        if not self.available():
            raise MissingDependencyError(
                f"{self.distribution} is imported into dpaudit's own environment, where it is "
                f"not installed (no module {self.module!r}): run `{self.install_hint}` (or "
                "`make test`, which installs the extra)"
            )
        return Path(sys.executable)

    def start(self, *, timeout: float = 3600.0) -> InProcessWorker:
        """A worker in this process (``timeout`` is unused: the runs are not interrupted).

        Raises:
            MissingDependencyError: the library is not installed.
        """
        return InProcessWorker(self)

    def version(self) -> str | None:
        """The installed version (None when it is not installed)."""
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None


class InProcessWorker:
    """The in-process counterpart of :class:`~dpaudit.systems._external.ExternalWorker`."""

    def __init__(self, library: InProcessLibrary) -> None:
        t0 = time.perf_counter()
        library.python()
        importlib.import_module(library.module)
        self.library = library
        self._handler = importlib.import_module(library.handler)
        #: seconds to import the library (0 after the first import in this process)
        self.startup_seconds = time.perf_counter() - t0
        #: the library's installed version
        self.version: str | None = library.version()
        #: this interpreter's Python version
        self.python_version = ".".join(str(v) for v in sys.version_info[:3])

    def call(
        self, op: str, body: dict[str, Any] | None = None, arrays: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Run the handler's ``op_<op>(body, arrays)`` here."""
        fn = getattr(self._handler, f"op_{op}", None)
        if fn is None:
            raise ValueError(f"op {op!r} is not an operation of {self.library.handler}")
        return fn(dict(body or {}, op=op), dict(arrays or {}))

    def close(self) -> None:
        """Nothing to close (the library stays imported)."""

    def __enter__(self) -> InProcessWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
