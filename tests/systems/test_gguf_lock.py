"""The GGUF model's float32 copy is made once when several processes need it at once: the
others wait on a lock beside the copy and find it made (``dpaudit.systems._gguf``)."""

from __future__ import annotations

import threading
import time

import pytest

from dpaudit.systems import _gguf


def test_concurrent_callers_dequantise_once(tmp_path, monkeypatch):
    """Four threads, each opening the lock file itself (``flock`` locks an open file, so
    threads exclude each other as processes do), ask for the same copy at once: the slow step
    runs once and every caller returns after the copy exists."""
    calls = []

    def slow_dequantise(gguf, target):
        calls.append(target)
        time.sleep(0.2)
        target.mkdir()
        (target / "config.json").write_text("{}")

    monkeypatch.setattr(_gguf, "_dequantise", slow_dequantise)
    target = tmp_path / "models" / "m-0123"
    seen = []

    def caller():
        _gguf.dequantise_gguf(tmp_path / "m.gguf", target)
        seen.append((target / "config.json").is_file())

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [target] and seen == [True] * 4
    _gguf.dequantise_gguf(tmp_path / "m.gguf", target)  # already there: nothing done
    assert len(calls) == 1


@pytest.mark.skipif(_gguf.fcntl is None, reason="no fcntl: no lock (the rename still holds)")
def test_the_lock_is_released_when_the_step_fails(tmp_path, monkeypatch):
    def failing(gguf, target):
        raise RuntimeError("disk full")

    monkeypatch.setattr(_gguf, "_dequantise", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        _gguf.dequantise_gguf(tmp_path / "m.gguf", tmp_path / "models" / "m")
    with pytest.raises(RuntimeError, match="disk full"):  # not blocked by a stale lock
        _gguf.dequantise_gguf(tmp_path / "m.gguf", tmp_path / "models" / "m")
