"""Handler of the Flower worker (runs in ``.venvs/flower``, not in dpaudit).

Loaded by :mod:`dpaudit.systems._external_worker`; imports only the standard library, numpy
and flwr. It drives Flower's own server-side objects, as a Flower server would, on parameters
that dpaudit trains:

* ``setup`` — an inner ``FedAvg`` (``fraction_fit = m / P``, at least m clients: Flower's
  fixed-size client sampler) wrapped in ``DifferentialPrivacyServerSideFixedClipping`` or
  ``DifferentialPrivacyClientSideFixedClipping`` (noise multiplier, clipping norm,
  ``num_sampled_clients = m``), a ``SimpleClientManager`` with P registered clients, and the
  seeds of the global ``random`` and ``numpy.random`` generators, which Flower's sampler
  and its Gaussian noise draw from;
* ``configure`` — the wrapper's ``configure_fit`` for the round: the clients Flower sampled
  (their ids) and, for the client-side wrapper, the clipping norm it sends them;
* ``aggregate`` — each sampled client's trained parameters (sent by dpaudit) and the example
  count it reports become a ``FitRes``; with the client-side wrapper each passes through
  Flower's ``fixedclipping_mod`` first, as a client app's mod; then the wrapper's
  ``aggregate_fit`` (clipping for the server-side wrapper, the inner FedAvg's average
  weighted by the reported example counts, Gaussian noise of std σC/m) gives the new
  parameters.
"""

from __future__ import annotations

import logging
import random
import time

import numpy as np

DISTRIBUTION = "flwr"

_STATE: dict = {}


def _proxy_class():
    from flwr.server.client_proxy import ClientProxy

    class _Client(ClientProxy):
        """A registered client; dpaudit trains it, so none of its methods is called."""

        def _never(self, *args, **kwargs):
            raise RuntimeError("dpaudit trains the clients; Flower does not call them here")

        get_properties = get_parameters = fit = evaluate = reconnect = _never

    return _Client


def op_setup(body, arrays):
    from flwr.server.client_manager import SimpleClientManager
    from flwr.server.strategy import (
        DifferentialPrivacyClientSideFixedClipping,
        DifferentialPrivacyServerSideFixedClipping,
        FedAvg,
    )

    logging.getLogger("flwr").setLevel(logging.WARNING)  # one INFO line per clipped client
    population, m = int(body["population"]), int(body["num_sampled_clients"])
    inner = FedAvg(fraction_fit=m / population, fraction_evaluate=0.0, min_fit_clients=m,
                   min_evaluate_clients=0, min_available_clients=population)  # fmt: skip
    wrappers = {
        "server-side": DifferentialPrivacyServerSideFixedClipping,
        "client-side": DifferentialPrivacyClientSideFixedClipping,
    }
    strategy = wrappers[body["wrapper"]](inner, float(body["noise_multiplier"]),
                                         float(body["clipping_norm"]), m)  # fmt: skip
    manager = SimpleClientManager()
    client = _proxy_class()
    for cid in range(population):
        manager.register(client(str(cid)))
    random.seed(int(body["seed"]))
    np.random.seed(int(body["seed"]) % 2**32)  # noqa: NPY002 (Flower draws its noise from it)
    _STATE.clear()
    _STATE.update(strategy=strategy, manager=manager, wrapper=body["wrapper"], round=0,
                  instructions=None)  # fmt: skip
    return {"strategy": repr(strategy)}, {}


def op_configure(body, arrays):
    from flwr.common import ndarrays_to_parameters

    _STATE["round"] += 1
    theta = np.asarray(arrays["theta"])
    parameters = ndarrays_to_parameters([theta])
    instructions = _STATE["strategy"].configure_fit(_STATE["round"], parameters,
                                                    _STATE["manager"])  # fmt: skip
    _STATE["instructions"] = instructions
    _STATE["theta"] = theta
    config = dict(instructions[0][1].config) if instructions else {}
    sampled = np.asarray([int(proxy.cid) for proxy, _ in instructions], dtype=np.int64)
    return {"config": {k: float(v) for k, v in config.items()}}, {"sampled": sampled}


def _metadata():
    from flwr.app.message_type import MessageType
    from flwr.app.metadata import Metadata

    return Metadata(run_id=0, message_id="", src_node_id=0, dst_node_id=0,
                    reply_to_message_id="", group_id="", created_at=time.time(), ttl=3600.0,
                    message_type=MessageType.TRAIN)  # fmt: skip


def _through_clipping_mod(fit_ins, fit_res):
    """Pass a client's answer through Flower's ``fixedclipping_mod``, as its client app
    would: the mod reads the clipping norm from the instruction and clips the update."""
    from flwr.app import RecordDict
    from flwr.app.message import Context, Message
    from flwr.client.mod import fixedclipping_mod
    from flwr.compat.common import recorddict_compat as compat

    msg = Message(content=compat.fitins_to_recorddict(fit_ins, keep_input=True),
                  metadata=_metadata())  # fmt: skip

    def train(message, context):
        return Message(content=compat.fitres_to_recorddict(fit_res, keep_input=True),
                       metadata=_metadata())  # fmt: skip

    ctx = Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config={})
    out = fixedclipping_mod(msg, ctx, train)
    return compat.recorddict_to_fitres(out.content, keep_input=True)


def op_aggregate(body, arrays):
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays

    params = np.asarray(arrays["params"])
    counts = np.asarray(arrays["num_examples"])
    results = []
    for i, (proxy, fit_ins) in enumerate(_STATE["instructions"]):
        res = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([params[i]]), int(counts[i]),
                     {})  # fmt: skip
        if _STATE["wrapper"] == "client-side":
            res = _through_clipping_mod(fit_ins, res)
        results.append((proxy, res))
    aggregated, _ = _STATE["strategy"].aggregate_fit(_STATE["round"], results, [])
    if aggregated is None:
        raise RuntimeError("Flower's aggregate_fit returned no parameters")
    return {}, {"theta": np.asarray(parameters_to_ndarrays(aggregated)[0], dtype=np.float64)}
