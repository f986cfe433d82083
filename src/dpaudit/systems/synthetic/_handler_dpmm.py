"""Handler of the dpmm worker (runs in ``.venvs/dpmm``, not in dpaudit).

Loaded by :mod:`dpaudit.systems._external_worker`; imports only the standard library, numpy,
pandas and dpmm. One operation, ``fit``: many generator runs (dpmm's ``MSTPipeline`` /
``AIMPipeline`` with its pre-processing disabled, the table given as category codes) on the
datasets sent as ``data0``, ``data1``, …, each run recording:

* ``measurements`` (white-box): every noisy marginal dpmm measured, with the standard
  deviation of the noise it actually added (MST adds σ / w and states σ in its measurement
  log; the weights w normalise to unit norm);
* ``selections`` (white-box): every exponential-mechanism choice — MST's tree: the
  candidate edges, their scores ``q`` (dpmm's weights, the L1 distance between an edge's
  marginal and the model estimate ``xhat`` fitted on the one-way measurements), the ε and
  sensitivity it was run with and the edge chosen; AIM's rounds: the candidate cliques,
  their scores, weights and bias terms, the model estimate ``xhat`` and the clique chosen
  (with ``n_jobs=1`` dpmm scores the candidates in this process);
* ``synthetic`` (black-box): ``sample_rows`` generated rows;
* ``domain`` alone: the one-way measurements only (the run stops after them).

``public_domain=True`` passes the public cardinalities as dpmm's ``domain``; ``False`` passes
none, and dpmm takes each column's size from the private data (``max + 1``) without spending
budget. ``n_jobs=1`` (worker pools would hide the measurements); ``seed`` is dpmm's
``random_state``; its Gaussian noise comes from OpenDP (operating-system entropy).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

DISTRIBUTION = "dpmm"


class _StopAfterMeasuring(Exception):
    """Raised after the mechanism's measurements when only the white-box view is asked for."""


def _patch(record, noise_scale, stop, domain_only=False):
    """Record every noisy marginal where dpmm draws its noise (MST's ``Mechanism._measure``,
    AIM's ``measure_one_way``, ``_measure`` and its loop all call ``gaussian_noise`` with the
    marginal ``x`` and the clique in their frame), scale the noise for the planted bug, and
    stop after the measurements (``stop``) or after the one-way ones (``domain_only``)."""
    import sys

    import dpmm.models.aim as aim_mod
    import dpmm.models.base.mbi.inference as inf_mod
    import dpmm.models.base.mechanisms.mechanism as mech_mod

    saved = []

    def setattr_(obj, name, value):
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    for mod in (mech_mod, aim_mod):
        orig_noise = mod.gaussian_noise

        def noise(sigma, size=None, _f=orig_noise):
            z = _f(sigma=sigma * noise_scale, size=size)
            f = sys._getframe(1).f_locals
            clique = f.get("cl", f.get("proj"))
            record["measurements"].append({
                "clique": [int(str(c)[1:]) for c in clique], "sigma": float(sigma),
                "y": [float(v) for v in (np.asarray(f["x"]) + np.asarray(z)).ravel()],
            })  # fmt: skip
            return z

        setattr_(mod, "gaussian_noise", noise)
    _record_choices(record, setattr_)
    if domain_only:  # the first model fit follows the one-way measurements: stop there

        def estimate(self, *a, **k):
            raise _StopAfterMeasuring

        setattr_(inf_mod.FactoredInference, "estimate", estimate)
    elif stop:
        for cls in _model_classes():
            orig_fit = cls._fit

            def _fit(self, *a, _f=orig_fit, **k):
                _f(self, *a, **k)
                raise _StopAfterMeasuring

            setattr_(cls, "_fit", _fit)

    def undo():
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)

    return undo


def _record_choices(record, setattr_):
    """Record each of MST's and AIM's exponential-mechanism choices in
    ``record["selections"]``, in the layouts the smartnoise worker records them in: MST's
    ``select`` frame holds the candidate edges and the model estimate ``est`` their scores were
    computed against; AIM's ``worst_approximated`` frame holds the candidates' weights, the
    current model and σ (each score is ``w · (‖x − x̂‖₁ − √(2/π) σ n_cl)``)."""
    import sys

    from _handler_records import aim_choice
    from dpmm.models.aim import AIM
    from dpmm.models.mst import MST

    orig = MST.exponential_mechanism

    def em(self, q, eps, sensitivity, monotonic=False):
        idx = orig(self, q, eps, sensitivity, monotonic)
        f = sys._getframe(1).f_locals
        cands = [[int(str(c)[1:]) for c in e] for e in f["candidates"]]
        record["selections"].append({
            "candidates": cands, "q": [float(v) for v in np.asarray(q)],
            "epsilon": float(eps), "sensitivity": float(sensitivity), "chosen": int(idx),
            "weights": [1.0] * len(cands), "bias": [0.0] * len(cands),
            "xhat": [[float(v) for v in np.asarray(f["est"].project(list(e)).datavector()).ravel()]
                     for e in f["candidates"]],
        })  # fmt: skip
        return idx

    setattr_(MST, "exponential_mechanism", em)
    orig_aim = AIM.exponential_mechanism

    def aim_em(self, qualities, epsilon, sensitivity=1.0, base_measure=None):
        key = orig_aim(self, qualities, epsilon, sensitivity, base_measure)
        record["selections"].append(aim_choice(qualities, key, epsilon, sensitivity,
                                               sys._getframe(1).f_locals,
                                               lambda c: int(str(c)[1:])))  # fmt: skip
        return key

    setattr_(AIM, "exponential_mechanism", aim_em)


def _model_classes():
    from dpmm.models.aim import AIM
    from dpmm.models.mst import MST

    return (MST, AIM)


def _pipeline(synth, eps, delta, options):
    from dpmm.pipelines.aim import AIMPipeline
    from dpmm.pipelines.mst import MSTPipeline

    cls = {"mst": MSTPipeline, "aim": AIMPipeline}[synth]
    options = dict(options)
    gen_kwargs = {k: options.pop(k) for k in list(options) if k not in ("compress",)}
    return cls(epsilon=eps, delta=delta, n_jobs=1, disable_processing=True,
               gen_kwargs=gen_kwargs or None, **options)  # fmt: skip


def op_fit(body, arrays):
    """Run the generator ``len(body["runs"])`` times; see the module docstring."""
    import pandas as pd
    from dpmm.models.base.mechanisms import cdp_rho

    synth, eps, delta = body["synth"], float(body["epsilon"]), float(body["delta"])
    cards = [int(c) for c in body["cardinalities"]]
    observe = set(body.get("observe", ["measurements"]))
    sample_rows = int(body.get("sample_rows", 0))
    stop = "synthetic" not in observe
    cols = [f"c{i}" for i in range(len(cards))]
    tables = {k: pd.DataFrame(v.astype(np.int64), columns=cols) for k, v in arrays.items()}
    domain = dict(zip(cols, cards, strict=True)) if body.get("public_domain", True) else None
    out = []
    for run in body["runs"]:
        data = tables[f"data{int(run['dataset'])}"]
        record = {"measurements": [], "selections": []}
        undo = _patch(record, float(body.get("noise_scale", 1.0)), stop, observe == {"domain"})
        t0 = time.perf_counter()
        try:
            pipe = _pipeline(synth, eps, delta, body.get("options", {}))
            with contextlib.suppress(_StopAfterMeasuring):
                pipe.fit(data, domain=domain, random_state=int(run["seed"]))
            result = {"seconds": time.perf_counter() - t0}
            if "synthetic" in observe and sample_rows:
                syn = pipe.generate(n_records=sample_rows, random_state=int(run["seed"]) + 1)
                result["synthetic"] = np.asarray(syn[cols], dtype=np.int64)
        finally:
            undo()
        if observe & {"measurements", "domain"}:
            result["measurements"] = record["measurements"]
        if "selections" in observe:
            result["selections"] = record["selections"]
        out.append(result)
    syn = {f"synthetic{i}": r.pop("synthetic") for i, r in enumerate(out) if "synthetic" in r}
    return {"runs": out, "rho": float(cdp_rho(eps, delta))}, syn
