"""IBM diffprivlib, audited out of process (its 0.6.6 does not import with scikit-learn ≥ 1.7).

The adapter runs diffprivlib in its own environment (``make venv-diffprivlib``) through the
shared out-of-process adapter; the tests that need it are skipped where it is not built.
diffprivlib takes a ``random_state``, so these samples are
reproducible from the audit's seed and the checks below are deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.bounds import epsilon_from_confusion
from dpaudit.errors import MissingDependencyError
from dpaudit.systems import MECHANISMS
from dpaudit.systems._external import VENVS_ENV
from dpaudit.systems.dp_mechanisms import naive_laplace_producible
from dpaudit.systems.dp_mechanisms._libraries import DIFFPRIVLIB, diffprivlib_version

needs_diffprivlib = pytest.mark.skipif(
    not DIFFPRIVLIB.available(), reason="diffprivlib's environment: make venv-diffprivlib"
)


def test_without_the_environment_the_adapter_names_the_make_target(monkeypatch, tmp_path):
    spec = MECHANISMS.get("diffprivlib-laplace")
    monkeypatch.setenv(VENVS_ENV, str(tmp_path))  # no environment built there
    with pytest.raises(MissingDependencyError, match="make venv-diffprivlib"):
        spec.sample(np.array([0.0]), 3, np.random.default_rng(0))
    (tmp_path / "diffprivlib" / "bin").mkdir(parents=True)
    (tmp_path / "diffprivlib" / "bin" / "python").write_text("")  # no .installed stamp
    with pytest.raises(MissingDependencyError, match="diffprivlib runs out of process"):
        spec.sample(np.array([0.0]), 3, np.random.default_rng(0))
    assert diffprivlib_version() is None


@needs_diffprivlib
def test_diffprivlib_samples_reproduce_from_the_seed_and_have_the_claimed_scale():
    assert diffprivlib_version() == "0.6.6"
    for name in ("diffprivlib-laplace", "diffprivlib-geometric"):
        spec = MECHANISMS.get(name)
        one = spec.sample(np.array([3.0]), 20_000, np.random.default_rng(4))
        two = spec.sample(np.array([3.0]), 20_000, np.random.default_rng(4))
        np.testing.assert_array_equal(one, two)
        # mean absolute deviation of Laplace(1/eps) is 1/eps (the geometric's: close to it)
        np.testing.assert_allclose(np.mean(np.abs(one - 3.0)), 10.0, rtol=0.05)


@needs_diffprivlib
def test_diffprivlib_laplace_fails_mironovs_membership_event_on_inputs_0_and_1():
    # The event is fixed in advance (output in the naive inverse-CDF sampler's producible set,
    # Mironov 2012); fresh seeded samples; a valid 95 % bound above the claim 0.1.
    spec, n = MECHANISMS.get("diffprivlib-laplace"), 200_000
    k0, k1 = (int(naive_laplace_producible(spec.sample(np.array([x]), n,
                                                       np.random.default_rng(s))).sum())
              for x, s in ((0.0, 11), (1.0, 12)))  # fmt: skip
    bound = epsilon_from_confusion(k0, n - k0, k1, n - k1, delta=0.0, confidence_level=0.95)
    assert bound.epsilon > spec.claimed_epsilon, (k0, k1, bound.epsilon)
