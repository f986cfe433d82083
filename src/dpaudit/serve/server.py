"""Run the service: uvicorn on a socket bound here, in the foreground or in a thread.

:class:`ServiceServer` binds the socket itself (so port 0 gives an ephemeral port whose
number is known before the first request), runs uvicorn on it, and stops by itself after
``lifetime`` seconds when one is given (tests and benchmarks).

Example:
    >>> from dpaudit.attacks import fixed_histogram_interface  # doctest: +SKIP
    >>> with ServiceServer(app, port=0) as srv:  # doctest: +SKIP
    ...     print(srv.url)
    http://127.0.0.1:54321
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

from dpaudit.errors import require

__all__ = ["ServiceServer"]


class ServiceServer:
    """uvicorn serving an ASGI app on a socket bound at construction.

    Args:
        app: the ASGI app (:func:`dpaudit.serve.create_app`).
        host: interface to bind (loopback by default).
        port: TCP port (0: ephemeral).
        lifetime: stop by itself after this many seconds (None: run until stopped).
        log_level: uvicorn's log level.

    Raises:
        OSError: the address cannot be bound.
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        lifetime: float | None = None,
        log_level: str = "warning",
    ) -> None:
        uvicorn = require("uvicorn", "serve")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only
        # when the listening socket says TCP; without it a response's body waits ~40 ms for
        # the client's delayed ACK (Nagle).
        self._sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self._sock.listen(1024)
        self._host = host
        self._port = int(self._sock.getsockname()[1])
        config = uvicorn.Config(
            app,
            log_level=log_level,
            access_log=False,
            lifespan="off",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._lifetime = lifetime
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    def _arm_lifetime(self) -> None:
        if self._lifetime is not None:
            self._timer = threading.Timer(self._lifetime, self.stop)
            self._timer.daemon = True
            self._timer.start()

    def run(self) -> None:
        """Serve in the foreground until stopped (signal, :meth:`stop` or the lifetime)."""
        self._arm_lifetime()
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self._cleanup()

    def start(self, *, timeout: float = 30.0) -> ServiceServer:
        """Serve in a daemon thread; return once it accepts connections.

        Raises:
            RuntimeError: the server did not start within ``timeout`` seconds.
        """
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the service did not start")
            time.sleep(0.01)
        self._arm_lifetime()
        return self

    def stop(self, *, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread (if any)."""
        self._server.should_exit = True
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
            self._cleanup()

    def _cleanup(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> ServiceServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
