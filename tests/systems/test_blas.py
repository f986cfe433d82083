"""one_blas_thread: BLAS/OpenMP limited to one thread inside, the limits restored after, and
the list of native libraries kept between calls until a module is imported."""

from __future__ import annotations

import sys

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from dpaudit.systems import _blas  # noqa: E402


def _threads() -> list[int]:
    return [info["num_threads"] for info in threadpoolctl.threadpool_info()]


def test_one_thread_inside_and_the_limits_restored_after():
    with threadpoolctl.threadpool_limits(limits=2):
        before = _threads()
        with _blas.one_blas_thread():
            assert _threads() and set(_threads()) == {1}
        assert _threads() == before


def test_the_library_list_is_kept_until_a_module_is_imported(monkeypatch):
    with _blas.one_blas_thread():
        pass
    kept = _blas._CONTROLLER[0][1]
    with _blas.one_blas_thread():
        pass
    assert _blas._CONTROLLER[0][1] is kept
    monkeypatch.setitem(sys.modules, "dpaudit_test_fake_extension", object())
    with _blas.one_blas_thread():
        assert set(_threads()) == {1}
    assert _blas._CONTROLLER[0][1] is not kept


def test_blas_only_leaves_the_openmp_pools_alone():
    with threadpoolctl.threadpool_limits(limits=2):
        before = threadpoolctl.threadpool_info()
        with _blas.one_blas_thread("blas"):
            for info, old in zip(threadpoolctl.threadpool_info(), before, strict=True):
                want = 1 if info["user_api"] == "blas" else old["num_threads"]
                assert info["num_threads"] == want, info
        assert _threads() == [info["num_threads"] for info in before]
