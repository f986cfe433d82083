"""Adapters to the mechanisms of installed DP libraries (the ``mechanism-libs`` extra).

Each adapter is a :class:`MechanismSpec` whose sampler calls the library as a user would, on
a scalar count (neighbours differ by 1). The libraries draw from the operating system's
entropy, not from the audit's ``rng``: their samples cannot be reproduced from a seed, so
their audits are reported as measured (the bound is still valid; the witness's event
reproduces, its counts do not). The libraries are imported on first use.

* OpenDP (Harvard OpenDP project; ``opendp.measurements.make_laplace`` and ``make_geometric``
  on a vector domain, so one call draws a whole batch); the claim is the library's own privacy
  map at input distance 1.
* Google's python-dp (``pydp.distributions.LaplaceDistribution`` and
  ``pydp.algorithms.laplacian.Count``), at the ε they are constructed with.
* IBM's diffprivlib (``diffprivlib.mechanisms.Laplace`` and ``Geometric``), **out of
  process**: diffprivlib 0.6.6 fails at import with scikit-learn ≥ 1.7 (it imports ``DOUBLE``
  from ``sklearn.tree._tree``), so dpaudit does not import it; the adapter runs it in an
  environment of its own (``make venv-diffprivlib``: diffprivlib 0.6.6 and a scikit-learn it
  supports) through the adapter every library audited as installed shares
  (:mod:`dpaudit.systems._external`), one worker per batch, passing a seed drawn from the
  audit's generator as diffprivlib's ``random_state`` — so these audits, unlike the other
  libraries', reproduce from the seed.
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

import numpy as np

from dpaudit.errors import MissingDependencyError
from dpaudit.systems._external import ExternalLibrary
from dpaudit.systems.dp_mechanisms._spec import MECHANISMS, MechanismSpec

__all__ = [
    "DIFFPRIVLIB",
    "diffprivlib_version",
    "library_versions",
]

EPS = 0.1
_LIBS = {"opendp": "opendp", "python-dp": "pydp"}


def library_versions() -> dict[str, str]:
    """Installed versions of the audited DP libraries (missing ones left out).

    Example:
        >>> isinstance(library_versions(), dict)
        True
    """
    out = {}
    for dist in _LIBS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def _require(dist: str):
    try:
        return __import__(_LIBS[dist])
    except ImportError:
        raise MissingDependencyError(
            f"{dist} is not installed: pip install 'dpaudit[mechanism-libs]'"
        ) from None


@functools.lru_cache(maxsize=4)
def _opendp_measurement(kind: str, scale: float):
    _require("opendp")
    import opendp.prelude as dp

    dp.enable_features("contrib")
    if kind == "laplace":
        dom, met = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
        return dp.m.make_laplace(dom, met, scale=scale)
    dom, met = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
    return dp.m.make_geometric(dom, met, scale=scale)


def _opendp_sampler(kind: str, scale: float):
    def sample(db, size, rng):
        meas = _opendp_measurement(kind, scale)
        x = float(db[0]) if kind == "laplace" else round(float(db[0]))
        return np.asarray(meas([x] * size), dtype=float)[:, None]

    return sample


def _pydp_laplace(db, size, rng):
    _require("python-dp")
    from pydp.distributions import LaplaceDistribution

    dist = LaplaceDistribution(epsilon=EPS, sensitivity=1.0)
    return (float(db[0]) + np.array([dist.sample() for _ in range(size)]))[:, None]


def _pydp_count(db, size, rng):
    _require("python-dp")
    from pydp.algorithms.laplacian import Count

    data = [1] * round(float(db[0]))
    return np.array(
        [Count(epsilon=EPS, dtype="int").quick_result(data) for _ in range(size)], dtype=float
    )[:, None]


#: diffprivlib 0.6.6, out of process in ``.venvs/diffprivlib`` (``make venv-diffprivlib``),
#: through the adapter every library audited as installed shares.
DIFFPRIVLIB = ExternalLibrary("diffprivlib", "diffprivlib",
                              str(Path(__file__).with_name("_handler_diffprivlib.py")),
                              "venv-diffprivlib")  # fmt: skip


def diffprivlib_version() -> str | None:
    """diffprivlib's version in its environment, None when the environment is not built.

    Example:
        >>> diffprivlib_version() is None or isinstance(diffprivlib_version(), str)
        True
    """
    return DIFFPRIVLIB.version()


def _diffprivlib_sampler(kind: str):
    def sample(db, size, rng):
        seed = int(rng.integers(0, 2**31 - 1))
        request = {"kind": kind, "epsilon": EPS, "value": float(db[0]), "size": int(size),
                   "seed": seed}  # fmt: skip
        with DIFFPRIVLIB.start() as worker:
            _, arrays = worker.call("sample", request)
        out = np.asarray(arrays["outputs"], dtype=np.float64)
        if out.size != size:
            raise RuntimeError(f"diffprivlib worker returned {out.size} values, asked {size}")
        return out[:, None].copy()

    return sample


def _register() -> None:
    common = dict(low=0.0, high=10.0, dimensions=1)
    specs = [
        MechanismSpec(name="opendp-laplace", sample=_opendp_sampler("laplace", 1 / EPS),
                      claimed_epsilon=EPS, source="OpenDP make_laplace (vector domain, L1)",
                      true_epsilon=EPS, note="library randomness: not seedable", **common),
        MechanismSpec(name="opendp-geometric", sample=_opendp_sampler("geometric", 1 / EPS),
                      claimed_epsilon=EPS, source="OpenDP make_geometric (discrete Laplace)",
                      true_epsilon=EPS, note="library randomness: not seedable", **common),
        MechanismSpec(name="pydp-laplace", sample=_pydp_laplace, claimed_epsilon=EPS,
                      source="Google python-dp LaplaceDistribution(epsilon, sensitivity=1)",
                      true_epsilon=EPS, note="library randomness: not seedable", **common),
        MechanismSpec(name="pydp-count", sample=_pydp_count, claimed_epsilon=EPS,
                      source="Google python-dp Count(epsilon) on a list of that many rows",
                      note="library randomness: not seedable", **common),
        MechanismSpec(name="diffprivlib-laplace", sample=_diffprivlib_sampler("laplace"),
                      claimed_epsilon=EPS,
                      source="IBM diffprivlib mechanisms.Laplace(epsilon, sensitivity=1), "
                             "out of process (make venv-diffprivlib)",
                      true_epsilon=EPS, note="seeded through random_state", **common),
        MechanismSpec(name="diffprivlib-geometric", sample=_diffprivlib_sampler("geometric"),
                      claimed_epsilon=EPS,
                      source="IBM diffprivlib mechanisms.Geometric(epsilon, sensitivity=1), "
                             "out of process (make venv-diffprivlib)",
                      true_epsilon=EPS, note="seeded through random_state", **common),
    ]  # fmt: skip
    for spec in specs:
        MECHANISMS.register(spec.name, spec, replace=True, tags=("library",))


_register()
