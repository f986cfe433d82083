"""The out-of-process adapter shape (dpaudit.systems._external): framing, worker, errors.

A fake environment (a directory with ``bin/python`` pointing at this interpreter and the
``.installed`` stamp) runs a small handler, so these tests need no library environment.
"""

from __future__ import annotations

import io
import os
import sys

import numpy as np
import pytest

from dpaudit.errors import MissingDependencyError
from dpaudit.systems._external import (
    VENVS_ENV,
    ExternalLibrary,
    ExternalWorkerError,
    venvs_dir,
)
from dpaudit.systems._external_worker import read_message, write_message

HANDLER = """
import os, sys
import numpy as np
DISTRIBUTION = "numpy"
def op_echo(body, arrays):
    print("library chatter on stdout")  # must not corrupt the protocol
    os.write(1, b"C-level chatter on fd 1\\n")
    return {"got": body["x"], "names": sorted(arrays)}, {k: v * 2 for k, v in arrays.items()}
def op_fail(body, arrays):
    raise ArithmeticError("handler failure " + str(body["x"]))
def op_die(body, arrays):
    sys.stderr.write("dying now\\n"); sys.stderr.flush()
    os._exit(3)
"""


@pytest.fixture
def fake_lib(tmp_path, monkeypatch):
    venvs = tmp_path / "venvs"
    (venvs / "fake" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, venvs / "fake" / "bin" / "python")
    (venvs / "fake" / ".installed").touch()
    handler = tmp_path / "handler.py"
    handler.write_text(HANDLER)
    monkeypatch.setenv(VENVS_ENV, str(venvs))
    return ExternalLibrary("fake", "numpy", str(handler), "venv-fake")


def test_framing_round_trip_keeps_dtypes_and_shapes():
    buf = io.BytesIO()
    arrays = {"a": np.arange(6, dtype=np.int64).reshape(2, 3), "b": np.array([0.5, np.nan])}
    write_message(buf, {"op": "x", "k": [1, 2]}, arrays)
    write_message(buf, {"second": True})
    buf.seek(0)
    body, got = read_message(buf)
    assert body == {"op": "x", "k": [1, 2]}
    np.testing.assert_array_equal(got["a"], arrays["a"])
    assert got["a"].dtype == np.int64
    np.testing.assert_array_equal(got["b"], arrays["b"])
    assert read_message(buf) == ({"second": True}, {})
    assert read_message(buf) is None


def test_truncated_message_raises_eof():
    buf = io.BytesIO()
    write_message(buf, {"x": 1}, {"a": np.zeros(10)})
    buf = io.BytesIO(buf.getvalue()[:-5])
    with pytest.raises(EOFError, match="stream closed"):
        read_message(buf)


def test_missing_environment_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv(VENVS_ENV, str(tmp_path))
    lib = ExternalLibrary("absent", "absentlib", __file__, "venv-absent")
    assert not lib.available()
    assert lib.version() is None
    with pytest.raises(MissingDependencyError, match=r"run `make venv-absent`"):
        lib.start()


def test_half_built_environment_is_not_available(fake_lib):
    (venvs_dir() / "fake" / ".installed").unlink()
    with pytest.raises(MissingDependencyError, match="make venv-fake"):
        fake_lib.python()


def test_worker_serves_many_requests_in_one_process(fake_lib):
    with fake_lib.start(timeout=60) as w:
        assert w.version == np.__version__
        assert w.python_version == sys.version.split()[0]
        for i in range(3):
            body, arrays = w.call("echo", {"x": i}, {"v": np.arange(3.0)})
            assert body == {"got": i, "names": ["v"]}
            np.testing.assert_array_equal(arrays["v"], [0.0, 2.0, 4.0])
        pid = w._proc.pid
        assert w.call("echo", {"x": 9})[0]["got"] == 9
        assert w._proc.pid == pid


def test_handler_exception_is_reported_and_worker_goes_on(fake_lib):
    with fake_lib.start(timeout=60) as w:
        with pytest.raises(ExternalWorkerError, match="ArithmeticError: handler failure 7"):
            w.call("fail", {"x": 7})
        with pytest.raises(ExternalWorkerError, match="has no operation 'nope'"):
            w.call("nope")
        assert w.call("echo", {"x": 1})[0]["got"] == 1


def test_dead_worker_reports_its_stderr(fake_lib):
    with fake_lib.start(timeout=60) as w:
        with pytest.raises(ExternalWorkerError, match="dying now"):
            w.call("die")
        with pytest.raises(ExternalWorkerError, match="has exited"):
            w.call("echo", {"x": 1})


def test_worker_exits_when_its_parent_is_gone(fake_lib, tmp_path):
    """An interrupted audit leaves no worker behind: the parent is killed without closing."""
    import subprocess
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys\n"
        "from dpaudit.systems._external import ExternalLibrary\n"
        f"lib = ExternalLibrary('fake', 'numpy', {fake_lib.handler!r}, 'venv-fake')\n"
        "w = lib.start(timeout=60)\n"
        "print(w._proc.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ))  # fmt: skip
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _gone(pid):
            return
        time.sleep(0.2)
    os.kill(pid, 9)
    raise AssertionError(f"worker {pid} outlived its parent")


def _gone(pid: int) -> bool:
    """The process has exited: no such process, or a zombie (exited, and not yet reaped by
    whoever adopted it: init, or a subreaper such as a CI runner that reaps only at its end)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    if not os.path.isdir("/proc"):  # not Linux: only "no such process" tells
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:  # reaped meanwhile
        return True
