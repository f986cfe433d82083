"""Handler of DataSynthesizer 0.1.13's PrivBayes, run in dpaudit's own environment.

Loaded by :class:`~dpaudit.systems.synthetic._inprocess.InProcessWorker` (DataSynthesizer is
an extra of the package: ``pip install 'dpaudit[datasynthesizer]'``). One operation, ``fit``:
many runs of the library's correlated attribute mode — ``DataDescriber
.describe_dataset_in_correlated_attribute_mode`` on the table written as CSV (its only input
form), then ``DataGenerator.generate_dataset_in_correlated_attribute_mode`` — each recording
what the threat models see:

* ``measurements`` (white-box; also ``domain``): every noisy count vector PrivBayes released
  (``get_noisy_distribution_of_attributes``) — its clique (column indices, in the library's
  order), the Laplace scale the library states for it and the noisy counts *before* the
  library clips them at 0 (replayed from numpy's generator state around the call, and checked
  against the clipped counts the library kept), over the cells the library measured;
* ``selections`` (white-box): every exponential-mechanism step of the network search — the
  candidate (child, parents) pairs, the library's mutual informations and its sampling
  distribution, with the row count and the binary columns it used;
* ``synthetic`` (black-box): ``sample_rows`` generated rows; and, always, the network.

Options (the spec's and the cell's): ``k`` — PrivBayes's degree (default 1); ``support`` —
``"data"`` (as installed: every noisy count vector spans ``range(max(code) + 1)`` of the
*private* encoded columns) or ``"public"`` (the fix: it spans the public domain);
``sensitivity`` — ``"data"`` (as installed: the exponential mechanism's sensitivity uses the
private row count and whether each column is binary in the private data) or ``"public"``
(the fix: ``public_rows`` rows and the columns binary in the public domain); ``pool`` —
``"threads"`` (default: the network search's per-step ``multiprocessing.Pool`` replaced by a
thread pool with the same ``map``: the same tasks, results and random draws, without
starting a process pool per step) or ``"processes"`` (the library's own pool).

``public_domain=True`` (default) passes the public categories as the library's
``categorical_attribute_domain_file``; ``False`` passes none (the categories are read from the
private data). ``noise_scale`` ≠ 1 multiplies the scale of the Laplace noise on the counts
(the planted bug; the stated scale is unchanged). ``seed`` seeds the library (``random`` and
numpy's global generator, which draw all its noise); the sampler gets a seed of its own.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

DISTRIBUTION = "DataSynthesizer"
_SAMPLER_SEED = 0x5BD1E995


def _col(name):
    return int(str(name)[1:])


def _counts(codes, sizes):
    """Counts of the rows of ``codes`` over the grid of ``sizes`` (C order)."""
    flat = np.ravel_multi_index(tuple(codes.T), tuple(sizes))
    return np.bincount(flat, minlength=int(np.prod(sizes))).astype(np.float64)


def _public_support(pb, cards):
    """The fix of the support: every noisy count vector spans the public domain (the codes
    are the public categories' indices), noised with the library's own scale and draw."""
    import pandas as pd

    def noisy_distribution(attributes, encoded_dataset, epsilon=0.1):
        sizes = [cards[_col(a)] for a in attributes]
        codes = encoded_dataset.loc[:, attributes].to_numpy(dtype=np.int64)
        grid = np.array(list(np.ndindex(*sizes)), dtype=np.int64)
        stats = pd.DataFrame(grid, columns=list(attributes))
        stats["count"] = _counts(codes, sizes)
        if epsilon:
            n, d = encoded_dataset.shape
            b = pb.laplace_noise_parameter(len(attributes) - 1, d, n, epsilon)
            stats["count"] += np.random.laplace(0, scale=b, size=stats.index.size)  # noqa: NPY002
            stats.loc[stats["count"] < 0, "count"] = 0
        return stats

    return noisy_distribution


def _patch(record, options, cards, noise_scale):
    """Instrument PrivBayes's module attributes (undone by the returned function)."""
    import multiprocessing.dummy

    import DataSynthesizer.lib.PrivBayes as pb

    saved = []

    def setattr_(name, value):
        saved.append((name, getattr(pb, name)))
        setattr(pb, name, value)

    if options.get("pool", "threads") == "threads":
        setattr_("Pool", multiprocessing.dummy.Pool)
    if options.get("support", "data") == "public":
        setattr_("get_noisy_distribution_of_attributes", _public_support(pb, cards))
    if options.get("sensitivity", "data") == "public":
        rows = int(options["public_rows"])
        binary = {f"c{j}": k == 2 for j, k in enumerate(cards)}
        orig_sens = pb.calculate_sensitivity
        setattr_(
            "calculate_sensitivity",
            lambda n, child, parents, is_binary: orig_sens(rows, child, parents, binary),
        )
    scale = {}
    orig_lnp = pb.laplace_noise_parameter

    def lnp(k, num_attributes, num_tuples, epsilon):
        b = orig_lnp(k, num_attributes, num_tuples, epsilon)
        scale["stated"], scale["used"] = b, b * noise_scale
        return b * noise_scale

    setattr_("laplace_noise_parameter", lnp)
    orig_noisy = pb.get_noisy_distribution_of_attributes

    def noisy(attributes, encoded_dataset, epsilon=0.1):
        before = np.random.get_state()  # noqa: NPY002 (the library draws from it)
        out = orig_noisy(attributes, encoded_dataset, epsilon)
        after = np.random.get_state()  # noqa: NPY002
        np.random.set_state(before)  # noqa: NPY002
        z = np.random.laplace(0, scale=scale["used"], size=out.index.size)  # noqa: NPY002
        np.random.set_state(after)  # noqa: NPY002
        keys = out.loc[:, attributes].to_numpy(dtype=np.int64)
        sizes = keys.max(axis=0) + 1
        codes = encoded_dataset.loc[:, attributes].to_numpy(dtype=np.int64)
        flat = np.ravel_multi_index(tuple(keys.T), tuple(sizes))
        y = _counts(codes, sizes)[flat] + z
        if not np.allclose(np.clip(y, 0, None), out["count"].to_numpy(dtype=np.float64)):
            raise RuntimeError("the replayed noise does not reproduce the library's counts")
        cells = np.empty(int(np.prod(sizes)))
        cells[flat] = y
        record["measurements"].append({"clique": [_col(a) for a in attributes],
                                       "scale": float(scale["stated"]),
                                       "sizes": [int(s) for s in sizes],
                                       "y": [float(v) for v in cells]})  # fmt: skip
        return out

    setattr_("get_noisy_distribution_of_attributes", noisy)
    orig_em = pb.exponential_mechanism

    def em(epsilon, mutual_info_list, parents_pair_list, attr_to_is_binary, num_tuples,
           num_attributes):  # fmt: skip
        p = orig_em(epsilon, mutual_info_list, parents_pair_list, attr_to_is_binary,
                    num_tuples, num_attributes)  # fmt: skip
        record["selections"].append({
            "candidates": [[_col(c), [_col(q) for q in ps]] for c, ps in parents_pair_list],
            "mi": [float(v) for v in mutual_info_list], "p": [float(v) for v in p],
            "epsilon": float(epsilon), "rows": int(num_tuples),
            "binary": sorted(_col(a) for a, b in attr_to_is_binary.items() if b),
        })  # fmt: skip
        return p

    setattr_("exponential_mechanism", em)

    def undo():
        for name, value in reversed(saved):
            setattr(pb, name, value)

    return undo


def _describe(path, domain_file, cols, k, eps, seed):
    from DataSynthesizer.DataDescriber import DataDescriber

    dd = DataDescriber()
    dd.describe_dataset_in_correlated_attribute_mode(
        str(path), k=k, epsilon=eps,
        attribute_to_datatype={c: "Integer" for c in cols},
        attribute_to_is_categorical={c: True for c in cols},
        attribute_to_is_candidate_key={c: False for c in cols},
        categorical_attribute_domain_file=domain_file, seed=seed,
    )  # fmt: skip
    return dd


def _sample(dd, tmp, rows, seed, cols):
    from DataSynthesizer.DataGenerator import DataGenerator

    desc = Path(tmp) / "description.json"
    dd.save_dataset_description_to_file(str(desc))
    g = DataGenerator()
    g.generate_dataset_in_correlated_attribute_mode(rows, str(desc), seed=seed)
    return g.synthetic_dataset.loc[:, cols].to_numpy(dtype=np.int64)


def op_fit(body, arrays):
    """Run PrivBayes ``len(body["runs"])`` times; see the module docstring."""
    import pandas as pd

    eps = float(body["epsilon"])
    cards = [int(c) for c in body["cardinalities"]]
    observe = set(body.get("observe", ["measurements", "selections"]))
    options = dict(body.get("options", {}))
    k = int(options.get("k", 1))
    if options.get("sensitivity", "data") == "public" and int(options.get("public_rows", 0)) < 2:
        raise ValueError(f"options must set public_rows (the public row count the sensitivity "
                         f"uses, at least 2), got {options.get('public_rows')}")  # fmt: skip
    sample_rows = int(body.get("sample_rows", 0))
    noise_scale = float(body.get("noise_scale", 1.0))
    cols = [f"c{j}" for j in range(len(cards))]
    out, syn = [], {}
    with tempfile.TemporaryDirectory(prefix="dpaudit-datasynthesizer-") as tmp:
        paths = {}
        for key, v in arrays.items():
            paths[key] = Path(tmp) / f"{key}.csv"
            pd.DataFrame(np.asarray(v, dtype=np.int64), columns=cols).to_csv(
                paths[key], index=False
            )
        domain_file = None
        if body.get("public_domain", True):
            domain_file = str(Path(tmp) / "domain.json")
            Path(domain_file).write_text(
                json.dumps({c: list(range(n)) for c, n in zip(cols, cards, strict=True)})
            )
        for i, run in enumerate(body["runs"]):
            record = {"measurements": [], "selections": []}
            seed = int(run["seed"]) % 2**32
            undo = _patch(record, options, cards, noise_scale)
            t0 = time.perf_counter()
            try:
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    # its progress prints and pandas' deprecation warnings on its calls
                    warnings.simplefilter("ignore")
                    dd = _describe(paths[f"data{int(run['dataset'])}"], domain_file, cols, k,
                                   eps, seed)  # fmt: skip
                    result = {"seconds": time.perf_counter() - t0}
                    if "synthetic" in observe and sample_rows:
                        syn[f"synthetic{i}"] = _sample(dd, tmp, sample_rows,
                                                       seed ^ _SAMPLER_SEED, cols)  # fmt: skip
            finally:
                undo()
            result["network"] = [[_col(c), [_col(q) for q in ps]]
                                 for c, ps in dd.bayesian_network]  # fmt: skip
            if observe & {"measurements", "domain"}:
                result["measurements"] = record["measurements"]
            if "selections" in observe:
                result["selections"] = record["selections"]
            out.append(result)
    # pure ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, arXiv:1605.02065, Prop. 1.4)
    return {"runs": out, "rho": eps * eps / 2}, syn
