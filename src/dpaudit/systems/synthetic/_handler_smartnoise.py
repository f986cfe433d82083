"""Handler of the smartnoise-synth worker (runs in ``.venvs/smartnoise``, not in dpaudit).

Loaded by :mod:`dpaudit.systems._external_worker`; imports only the standard library, numpy,
pandas and smartnoise-synth. One operation, ``fit``: many generator runs on the datasets sent
as integer arrays (``data0``, ``data1``, …), each run recording what the threat models see:

* ``measurements`` (white-box): every noisy marginal the generator measured — its clique
  (column indices), the noise standard deviation the library states for it and the noisy
  vector (mbi's ``LinearMeasurement`` as MST's ``measure`` and AIM's loop build them);
* ``selections`` (white-box): every exponential-mechanism choice — the candidates, the
  library's quality scores, ε, the sensitivity, the choice, and the model's estimate of each
  candidate marginal the scores were computed from (MST's ``select``; AIM's
  ``_worst_approximated``), read from the library's own frame;
* ``synthetic`` (black-box): the synthetic table (``sample_rows`` rows; 0: none sampled;
  with ``library_rows`` the library's default size, ``sample()`` with no argument);
* ``domain`` alone: the one-way measurements only (the run stops after them: they show the
  domain the generator measured over).

MWEM (``synth == "mwem"``; pure ε-DP, so no δ is passed) records, as ``measurements``, every
noisy cuboid it measured — the clique, the Laplace scale ``1/ε`` the library states
(``scale``; ``sigma`` its standard deviation), the noisy cells in C order — and, as
``selections``, every exponential-mechanism choice with the candidates' scores and the
synthetic histogram they were computed from (``_mwem_choice``);
``domain`` stops it after its first noisy cuboid (its cells show the histogram it measures
over). Its option ``histogram`` (the worker's, not the library's) is ``"data"`` (as installed:
each histogram axis spans ``[min, max]`` of the private column, even with the public
transformer) or ``"public"`` (the fix: ``0 … k − 1``); ``noise_scale`` multiplies the scale of
its Laplace noise. Its exponential mechanism draws from ``random``, seeded with ``seed`` too.

The public domain is given as cardinalities: a ``LabelTransformer`` per column fitted on the
values ``0 … k-1`` (not on the private data). ``public_domain=False`` lets smartnoise infer
each column's categories from the private data, as it does when no transformer is given.
``noise_scale`` ≠ 1 multiplies the standard deviation of the library's Gaussian noise (the
planted bug; the stated σ is unchanged). The noise comes from OpenDP (operating-system
entropy: not seedable); ``seed`` seeds numpy's global generator, which the exponential
mechanism and the sampler use.
"""

from __future__ import annotations

import contextlib
import random
import sys
import time

import numpy as np

DISTRIBUTION = "smartnoise-synth"


class _StopAfterMeasuring(Exception):
    """Raised after the last measurement when only the white-box view is asked for."""


def _patch(record, noise_scale, stop_after_last=False):
    """Instrument MST and AIM (module attributes and methods; undone by the returned fn).

    ``stop_after_last``: AIM stops right after recording its last measurement (the round in
    which its loop's ``terminate`` is set): what follows is model fitting on the measurements
    already recorded, post-processing that the white-box view does not need.
    """
    import snsynth.aim.aim as aim_mod
    import snsynth.mst.mst as mst_mod
    from _handler_records import aim_choice

    saved = []

    def setattr_(obj, name, value):
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    for mod in (mst_mod, aim_mod):
        orig_noise = mod.gaussian_noise
        if noise_scale != 1.0:

            def quiet(sigma, size=None, _f=orig_noise):
                return _f(sigma * noise_scale, size)

            setattr_(mod, "gaussian_noise", quiet)
        orig_lm = mod.LinearMeasurement

        def lm(y, clique, stddev=1.0, *a, _f=orig_lm, _mod=mod, **k):
            frame = sys._getframe(1)
            caller = frame.f_code.co_name
            if caller in ("measure", "AIM"):  # MST.measure / AIM's loop: a new noisy marginal
                record["measurements"].append(
                    {"clique": [int(str(c)[3:]) for c in clique], "sigma": float(stddev),
                     "y": [float(v) for v in np.asarray(y).ravel()]})  # fmt: skip
                if stop_after_last and caller == "AIM" and frame.f_locals.get("terminate"):
                    raise _StopAfterMeasuring
            return _f(y, clique, stddev, *a, **k)

        setattr_(mod, "LinearMeasurement", lm)

    orig_em = mst_mod.MSTSynthesizer.exponential_mechanism

    def mst_em(self, q, eps, sensitivity, prng=np.random, monotonic=False):
        idx = orig_em(self, q, eps, sensitivity, prng, monotonic)
        f = sys._getframe(1).f_locals
        est, cands = f["est"], f["candidates"]
        record["selections"].append({
            "candidates": [[int(str(c)[3:]) for c in e] for e in cands],
            "q": [float(v) for v in np.asarray(q)], "epsilon": float(eps),
            "sensitivity": float(sensitivity), "chosen": int(idx), "weights": [1.0] * len(cands),
            "bias": [0.0] * len(cands),
            "xhat": [[float(v) for v in np.asarray(est.project(list(e)).datavector()).ravel()]
                     for e in cands],
        })  # fmt: skip
        return idx

    setattr_(mst_mod.MSTSynthesizer, "exponential_mechanism", mst_em)

    orig_aim_em = aim_mod.exponential_mechanism

    def aim_em(qualities, epsilon, sensitivity=1.0, base_measure=None):
        key = orig_aim_em(qualities, epsilon, sensitivity, base_measure)
        record["selections"].append(aim_choice(qualities, key, epsilon, sensitivity,
                                               sys._getframe(1).f_locals,
                                               lambda c: int(str(c)[3:])))  # fmt: skip
        return key

    setattr_(aim_mod, "exponential_mechanism", aim_em)

    def undo():
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)

    return undo


def _stop_after(n_measure_calls):
    """An MST ``measure`` wrapper raising after its ``n``-th call (the white-box view is done:
    what follows is post-processing of the measurements)."""
    import snsynth.mst.mst as mst_mod

    orig = mst_mod.MSTSynthesizer.measure
    calls = [0]

    def measure(self, *a, **k):
        out = orig(self, *a, **k)
        calls[0] += 1
        if calls[0] >= n_measure_calls:
            raise _StopAfterMeasuring
        return out

    mst_mod.MSTSynthesizer.measure = measure
    return lambda: setattr(mst_mod.MSTSynthesizer, "measure", orig)


def _stop_aim_after_oneway():
    """AIM's one-way measurements are done when it first fits its model: stop there."""
    import snsynth.aim.aim as aim_mod

    def stop(*a, **k):
        raise _StopAfterMeasuring

    class _Estimation:
        def __getattr__(self, name):
            return stop if name == "mirror_descent" else getattr(orig_mod, name)

    orig_mod = aim_mod.estimation
    aim_mod.estimation = _Estimation()
    return lambda: setattr(aim_mod, "estimation", orig_mod)


def _cuboid_clique(cuboid, split, ndim):
    """The columns of one of MWEM's cuboids (its queries index ``hist.T``: position ``k`` of
    a query is axis ``ndim − 1 − k``; an integer there fixes that axis) and the permutation
    of its cells to C order over those columns (MWEM enumerates them last column first)."""
    from snsynth.mwem import Cuboid

    if not isinstance(cuboid, Cuboid):
        raise ValueError("MWEM measured a range query (add_ranges=True): only cuboids (marginals) "
                         "are recorded")  # fmt: skip
    query = cuboid.queries[0].query
    axes = sorted(ndim - 1 - k for k, v in enumerate(query) if not isinstance(v, slice))
    return [int(split[a]) for a in axes], axes


def _patch_mwem(record, noise_scale, cards, histogram, stop_after_first, selections=False):
    """Instrument MWEM (undone by the returned fn): every noisy cuboid it measured is recorded
    as ``{"clique", "scale", "sigma", "y"}`` (the Laplace scale ``1/ε`` the library states, its
    standard deviation √2·scale, the noisy cells in C order over the clique); ``noise_scale``
    multiplies the scale of the Laplace noise ``snsynth.utils.laplace_noise`` draws (the
    planted bug); ``histogram == "public"`` builds each histogram over the public domain
    (columns ``0 … k − 1``) instead of ``[min, max]`` of the private column; ``stop_after_first``
    stops after the first measurement. With ``selections`` every exponential-mechanism choice
    is recorded too (:func:`_mwem_choice`)."""
    import snsynth.mwem as mwem_mod

    syn = mwem_mod.MWEMSynthesizer
    saved = [(mwem_mod, "laplace_noise", mwem_mod.laplace_noise)]
    for name in ("_exponential_mechanism", "_multiplicative_weights",
                 "_histogram_from_data_attributes"):  # fmt: skip
        saved.append((syn, name, getattr(syn, name)))
    if noise_scale != 1.0:

        def quiet(scale, size=None, _f=mwem_mod.laplace_noise):
            return _f(scale * noise_scale, size)

        mwem_mod.laplace_noise = quiet
    chosen = []
    orig_em, orig_mw = syn._exponential_mechanism, syn._multiplicative_weights

    def em(self, hist, synth_hist, queries, eps, measurements, iteration):
        measured = [int(i) for i in measurements]  # before this choice, in measurement order
        qi = orig_em(self, hist, synth_hist, queries, eps, measurements, iteration)
        chosen.append((qi, eps))
        if selections:
            record["selections"].append(_mwem_choice(self, hist, synth_hist, queries, eps,
                                                     measured, qi))  # fmt: skip
        return qi

    def mw(self, synth_hist, queries, m, hist, iterate):
        qi, eps = chosen[-1]
        h = next(h for h in self.histograms if h.data is hist)
        clique, axes = _cuboid_clique(queries[qi], h.split, hist.ndim)
        y = np.asarray(m[qi], dtype=np.float64)  # the cells, last column slowest
        y = y.reshape([hist.shape[a] for a in reversed(axes)]).T.ravel()
        b = 1.0 / eps  # the scale mwem() draws with (eps: doubled by measure_only)
        record["measurements"].append({"clique": clique, "scale": b, "sigma": b * np.sqrt(2.0),
                                       "y": [float(v) for v in y]})  # fmt: skip
        if stop_after_first:
            raise _StopAfterMeasuring
        return orig_mw(self, synth_hist, queries, m, hist, iterate)

    def public(self, data, splits=()):
        out = []
        for split in splits:
            dims = [cards[int(j)] for j in split]
            for j, k in zip(split, dims, strict=True):
                self.mins_maxes[str(j)], self.scale[str(j)] = (0, k - 1), 1
            hist, bins = np.histogramdd(np.asarray(data)[:, split], bins=dims,
                                        range=[(-0.5, k - 0.5) for k in dims])  # fmt: skip
            out.append(mwem_mod.Histogram(hist, dims, bins, split))
        return out

    syn._exponential_mechanism, syn._multiplicative_weights = em, mw
    if histogram == "public":
        syn._histogram_from_data_attributes = public

    def undo():
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)

    return undo


def _mwem_choice(syn, hist, synth_hist, queries, eps, measured, qi):
    """One of MWEM's exponential-mechanism choices, as the library made it: the candidate
    cuboids' cliques, their scores ``q`` (``Cuboid.error``: the mean absolute difference of
    the private and the synthetic histogram over the cuboid's cells; the library draws with
    probabilities ∝ exp(ε q / 2)), ε, the choice, the cuboids measured before it (a draw
    among them is redrawn, ``draws`` draws at most, then a uniform choice among the others),
    the passes of multiplicative weights after each measurement, the histogram's columns and
    the synthetic histogram the scores were computed from (C order over those columns)."""
    if syn.measure_only:
        raise ValueError("MWEM with measure_only=True chooses uniformly: no selections to record")
    h = next(h for h in syn.histograms if h.data is hist)
    cliques = [_cuboid_clique(q, h.split, hist.ndim)[0] for q in queries]
    return {"candidates": cliques, "q": [float(q.error(hist, synth_hist)) for q in queries],
            "epsilon": float(eps), "chosen": int(qi), "measured": measured,
            "draws": int(syn.max_retries_exp_mechanism) + 1,
            "iterations": int(syn.mult_weights_iterations),
            "columns": [int(c) for c in h.split],
            "xhat": [float(v) for v in np.asarray(synth_hist, float).ravel()]}  # fmt: skip


def _transformer(cards, public_domain):
    from snsynth.transform import TableTransformer
    from snsynth.transform.label import LabelTransformer

    if not public_domain:
        return None
    tt = TableTransformer([LabelTransformer(nullable=False) for _ in cards])
    width = max(cards)
    pub = np.array([[min(i, k - 1) for k in cards] for i in range(width)])
    tt.fit([tuple(int(v) for v in row) for row in pub])
    return tt


def op_fit(body, arrays):
    """Run the generator ``len(body["runs"])`` times; see the module docstring."""
    import pandas as pd
    from snsynth import Synthesizer
    from snsynth.utils import cdp_rho

    synth, eps, delta = body["synth"], float(body["epsilon"]), float(body["delta"])
    cards = [int(c) for c in body["cardinalities"]]
    observe = set(body.get("observe", ["measurements", "selections"]))
    options = dict(body.get("options", {}))
    sample_rows = int(body.get("sample_rows", 0))
    domain_only = observe == {"domain"}
    white_box_only = "synthetic" not in observe
    cols = [f"c{i}" for i in range(len(cards))]
    tables = {k: pd.DataFrame(v.astype(np.int64), columns=cols) for k, v in arrays.items()}
    mwem = synth == "mwem"
    histogram = options.pop("histogram", "data") if mwem else None
    if mwem and histogram not in ("data", "public"):
        raise ValueError(f"MWEM's histogram option is 'data' or 'public', got {histogram!r}")
    out = []
    for run in body["runs"]:
        data = tables[f"data{int(run['dataset'])}"]
        record = {"measurements": [], "selections": []}
        np.random.seed(int(run["seed"]))  # noqa: NPY002 (the library draws from it)
        random.seed(int(run["seed"]))  # MWEM's exponential mechanism draws random.random()
        noise_scale = float(body.get("noise_scale", 1.0))
        if mwem:  # domain: its first noisy cuboid shows the histogram it measures over
            sel = "selections" in observe
            undo = _patch_mwem(record, noise_scale, cards, histogram, domain_only, sel)
            undo_stop = lambda: None  # noqa: E731
        else:
            undo = _patch(record, noise_scale, stop_after_last=white_box_only and synth == "aim")
            if domain_only:  # the one-way marginals show the domain measured over
                undo_stop = _stop_after(1) if synth == "mst" else _stop_aim_after_oneway()
            else:
                undo_stop = (_stop_after(2) if white_box_only and synth == "mst"
                             else (lambda: None))  # fmt: skip
        t0 = time.perf_counter()
        try:
            dp = {} if mwem else {"delta": delta}  # MWEM is pure ε-DP: no δ parameter
            s = Synthesizer.create(synth, epsilon=eps, **dp, **options)
            tt = _transformer(cards, bool(body.get("public_domain", True)))
            kw = {"transformer": tt} if tt is not None else {"categorical_columns": cols}
            with contextlib.suppress(_StopAfterMeasuring):
                s.fit(data, **kw)
            result = {"seconds": time.perf_counter() - t0}
            if "synthetic" in observe and sample_rows:
                syn = s.sample() if body.get("library_rows") else s.sample(sample_rows)
                result["synthetic"] = np.asarray(syn, dtype=np.int64).reshape(len(syn), -1)
        finally:
            undo_stop()
            undo()
        if observe & {"measurements", "domain"}:
            result["measurements"] = record["measurements"]
        if "selections" in observe:
            result["selections"] = record["selections"]
        out.append(result)
    rho = eps * eps / 2 if mwem else cdp_rho(eps, delta)  # pure ε-DP is ε²/2-zCDP
    syn = {f"synthetic{i}": r.pop("synthetic") for i, r in enumerate(out) if "synthetic" in r}
    return {"runs": out, "rho": float(rho)}, syn
