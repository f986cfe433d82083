"""Libraries audited as installed, out of process: one adapter shape for all of them.

A library whose pinned dependencies conflict with dpaudit's (smartnoise-synth, dpmm,
diffprivlib, Flower) runs in a virtual environment of its own, ``.venvs/<name>`` at the root
of the project (or under ``$DPAUDIT_VENVS``), built by a make target (``make venv-<name>``);
dpaudit's own environment is never downgraded. An :class:`ExternalLibrary` names the
environment, the distribution whose version is recorded, the make target and a *handler*:
a script of plain functions ``op_NAME(body, arrays) -> (body, arrays)`` that imports the
library (it runs where dpaudit is not installed).

:meth:`ExternalLibrary.start` starts one worker process (``_external_worker.py``) for a batch
of runs: requests and results travel as JSON with numpy arrays over its pipes
(:mod:`dpaudit.systems._external_worker`), so the interpreter and the library are loaded once
per batch, not once per run. The worker answers ``hello`` with the library's version, which
the audit records. A missing environment raises :class:`~dpaudit.errors.MissingDependencyError`
naming the make target, before any process is started.

Example:
    >>> lib = ExternalLibrary("nosuchlib", "nosuchlib", __file__, "venv-nosuchlib")
    >>> lib.available()
    False
    >>> try:
    ...     lib.python()
    ... except ImportError as exc:
    ...     print(str(exc).split(": ")[-1])
    run `make venv-nosuchlib` (it installs the pinned versions there)
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.errors import MissingDependencyError
from dpaudit.systems._external_worker import read_message, write_message

__all__ = [
    "VENVS_ENV",
    "ExternalLibrary",
    "ExternalWorker",
    "ExternalWorkerError",
    "venvs_dir",
]

#: Environment variable naming the directory of the libraries' environments.
VENVS_ENV = "DPAUDIT_VENVS"
_WORKER = Path(__file__).with_name("_external_worker.py")


def venvs_dir() -> Path:
    """Where the libraries' virtual environments live: ``$DPAUDIT_VENVS``, else ``.venvs`` at
    the root of the source tree dpaudit runs from (``make venv-<name>`` builds them there)."""
    env = os.environ.get(VENVS_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / ".venvs"


class ExternalWorkerError(RuntimeError):
    """The worker failed: the handler raised (its traceback is in the message) or the
    process died (the tail of its standard error is in the message)."""


@dataclasses.dataclass(frozen=True)
class ExternalLibrary:
    """A library that runs out of process, in ``.venvs/<venv>``.

    Attributes:
        venv: the environment's directory name under :func:`venvs_dir`.
        distribution: the pip distribution whose version is recorded (``"smartnoise-synth"``).
        handler: path of the handler script the worker loads.
        make_target: the make target that builds the environment (``"venv-smartnoise"``).
    """

    venv: str
    distribution: str
    handler: str
    make_target: str

    def python_path(self) -> Path:
        """The environment's interpreter (it may not exist)."""
        return venvs_dir() / self.venv / "bin" / "python"

    def available(self) -> bool:
        """Whether the environment is built (its interpreter and the make target's
        ``.installed`` stamp, written when the build finished, are both there)."""
        p = self.python_path()
        stamp = venvs_dir() / self.venv / ".installed"
        return p.is_file() and os.access(p, os.X_OK) and stamp.is_file()

    def python(self) -> Path:
        """The environment's interpreter.

        Raises:
            MissingDependencyError: the environment is not built (the message names the make
                target).
        """
        if not self.available():
            raise MissingDependencyError(
                f"{self.distribution} runs out of process in its own virtual environment, "
                f"which is not built (no {venvs_dir() / self.venv}/.installed): "
                f"run `make {self.make_target}` (it installs the pinned versions there)"
            )
        return self.python_path()

    def start(self, *, timeout: float = 3600.0) -> ExternalWorker:
        """Start a worker (use it as a context manager; it is closed on exit).

        Args:
            timeout: seconds one request may take before the worker is killed.

        Raises:
            MissingDependencyError: the environment is not built.
            ExternalWorkerError: the worker did not start.
        """
        return ExternalWorker(self, timeout=timeout)

    def version(self) -> str | None:
        """The library's version in its environment (None when it is not built)."""
        if not self.available():
            return None
        with self.start() as w:
            return w.version


class ExternalWorker:
    """One worker process of an :class:`ExternalLibrary`: :meth:`call` sends a request and
    returns the handler's answer. Requests are served one at a time, in order."""

    def __init__(self, library: ExternalLibrary, *, timeout: float = 3600.0) -> None:
        python = library.python()
        self.library = library
        self.timeout = float(timeout)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")  # fmt: skip
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(
            [str(python), str(_WORKER), str(Path(library.handler).resolve())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
        )  # fmt: skip
        hello, _ = self.call("hello")
        #: seconds from the start of the process to its first answer
        self.startup_seconds = time.perf_counter() - t0
        #: the library's version in the worker's environment
        self.version: str | None = hello["version"]
        #: the worker's Python version
        self.python_version: str = hello["python"]

    def _stderr_tail(self, n: int = 2000) -> str:
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - n))
        return self._stderr.read().decode(errors="replace")

    def call(
        self, op: str, body: dict[str, Any] | None = None, arrays: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Send ``{"op": op, **body}`` with ``arrays``; return the handler's ``(body, arrays)``.

        Raises:
            ExternalWorkerError: the handler raised, or the worker died or timed out.
        """
        if self._proc.poll() is not None:
            raise ExternalWorkerError(
                f"{self.library.distribution} worker has exited "
                f"(code {self._proc.returncode}): {self._stderr_tail()}"
            )
        try:
            write_message(self._proc.stdin, {"op": op, **(body or {})}, arrays)
            msg = _read_with_timeout(self._proc, self.timeout)
        except (BrokenPipeError, EOFError, TimeoutError) as exc:
            self._proc.kill()
            self._proc.wait()
            raise ExternalWorkerError(
                f"{self.library.distribution} worker failed on {op!r} ({exc}): "
                f"{self._stderr_tail()}"
            ) from None
        if msg is None:
            self._proc.wait()
            raise ExternalWorkerError(
                f"{self.library.distribution} worker closed its output on {op!r} "
                f"(code {self._proc.returncode}): {self._stderr_tail()}"
            )
        out, out_arrays = msg
        if "error" in out:
            raise ExternalWorkerError(
                f"{self.library.distribution} worker raised on {op!r}:\n{out['error']}"
            )
        return out, out_arrays

    def close(self) -> None:
        """Ask the worker to exit (kill it if it does not within 10 s)."""
        if self._proc.poll() is None:
            try:
                write_message(self._proc.stdin, {"op": "close"})
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._stderr.close()

    def __enter__(self) -> ExternalWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_with_timeout(proc: subprocess.Popen, timeout: float):
    """One message from the worker, or TimeoutError after ``timeout`` seconds of silence."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise TimeoutError(f"no answer within {timeout:g} s")
    return read_message(proc.stdout)
