"""The optional PyTorch CNN teacher (torch extra)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.data import load_digits
from dpaudit.systems import TeacherEnsemble, TorchCNNClassifier

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def digits():
    return load_digits(seed=0)


def test_cnn_learns_digits_and_is_seeded(digits):
    X, y = digits.X_train[:400], digits.y_train[:400]
    a = TorchCNNClassifier(epochs=8, random_state=0).fit(X, y)
    b = TorchCNNClassifier(epochs=8, random_state=0).fit(X, y)
    pa = a.predict(digits.X_test)
    np.testing.assert_array_equal(pa, b.predict(digits.X_test))
    assert np.mean(pa == digits.y_test) > 0.8
    proba = a.predict_proba(digits.X_test[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    assert a.image_shape_ == (1, 8, 8)


def test_cnn_is_sklearn_clonable_and_validates():
    from sklearn.base import clone

    clf = TorchCNNClassifier(epochs=2, lr=0.01, random_state=3)
    copy = clone(clf)
    assert copy.get_params() == clf.get_params() and copy is not clf
    with pytest.raises(ValueError, match="image_shape"):
        TorchCNNClassifier(epochs=1).fit(np.zeros((4, 10)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="epochs"):
        TorchCNNClassifier(epochs=0).fit(np.zeros((4, 64)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="fitted"):
        TorchCNNClassifier().predict(np.zeros((1, 64)))
    with pytest.raises(ValueError, match="no parameter"):
        clf.set_params(depth=3)


def test_cnn_teachers_in_an_ensemble(digits):
    X, y = digits.X_train[:300], digits.y_train[:300]
    ens = TeacherEnsemble.fit(X, y, num_teachers=2, estimator="cnn", rng=0)
    votes = ens.votes(digits.X_test[:10])
    np.testing.assert_array_equal(votes.sum(axis=1), np.full(10, 2))
    assert all(isinstance(t, TorchCNNClassifier) for t in ens.teachers)
    assert [t.random_state for t in ens.teachers] == list(ens.teacher_seeds)


def test_torch_context_sets_and_restores_determinism_without_loading_the_compiler():
    import sys

    from dpaudit.systems._torch_nets import torch_context

    compiler_loaded = "torch._inductor.config" in sys.modules
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled())  # fmt: skip
    threads = torch.get_num_threads()
    with torch_context(3, num_threads=1) as t:
        assert t.are_deterministic_algorithms_enabled()
        assert t.is_deterministic_algorithms_warn_only_enabled()
        assert t.get_num_threads() == 1
        first = t.rand(3)
    after = (torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled())  # fmt: skip
    assert after == before
    assert torch.get_num_threads() == threads
    with torch_context(3) as t:
        assert torch.equal(t.rand(3), first)  # seeded
    # the compiler stack is imported only if something else imported it
    assert ("torch._inductor.config" in sys.modules) == compiler_loaded


def test_manual_seed_draws_what_torch_manual_seed_draws():
    """The seeding of torch_context (without torch.manual_seed's lazy accelerator seeding
    where there is no accelerator) gives the same draws, and restores the global state."""
    from dpaudit.systems._torch_nets import manual_seed, torch_context

    for seed in (0, 7, 2**63 - 1):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            want = (torch.rand(4), torch.randn(4), torch.randint(0, 10**6, (4,)))
        with torch.random.fork_rng(devices=[]):
            manual_seed(torch, seed)
            got = (torch.rand(4), torch.randn(4), torch.randint(0, 10**6, (4,)))
        assert all(torch.equal(a, b) for a, b in zip(want, got, strict=True))
    state = torch.get_rng_state()
    with torch_context(5) as t:
        assert torch.equal(t.rand(2), (torch.manual_seed(5), torch.rand(2))[1])
    assert torch.equal(torch.get_rng_state(), state)
