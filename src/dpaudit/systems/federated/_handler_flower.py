"""Handler of the Flower worker (runs in ``.venvs/flower``, not in dpaudit).

Loaded by :mod:`dpaudit.systems._external_worker`; imports only the standard library, numpy
and flwr. It drives Flower's own server-side objects, as a Flower server would, on parameters
that dpaudit trains:

* ``setup`` — an inner ``FedAvg`` (``fraction_fit = m / P``, at least m clients: Flower's
  fixed-size client sampler) wrapped in ``DifferentialPrivacyServerSideFixedClipping``,
  ``DifferentialPrivacyClientSideFixedClipping`` (noise multiplier, clipping norm,
  ``num_sampled_clients = m``) or one of the adaptive-clipping wrappers
  ``DifferentialPrivacyServerSideAdaptiveClipping`` /
  ``DifferentialPrivacyClientSideAdaptiveClipping`` (the clipping norm as the initial one,
  the target quantile, the norm's learning rate and the count's noise), a
  ``SimpleClientManager`` with P registered clients, and the seeds of the global ``random``
  and ``numpy.random`` generators, which Flower's sampler and its Gaussian noise draw from;
  it answers the wrapper's noise multiplier of the update (an adaptive wrapper's is above
  the one given: part of the budget pays for the count);
* ``configure`` — the wrapper's ``configure_fit`` for the round: the clients Flower sampled
  (their ids) and, for the client-side wrappers, the clipping norm it sends them;
* ``aggregate`` — each sampled client's trained parameters (sent by dpaudit) and the example
  count it reports become a ``FitRes``; with a client-side wrapper each passes through
  Flower's ``fixedclipping_mod`` or ``adaptiveclipping_mod`` first, as a client app's mod;
  then the wrapper's ``aggregate_fit`` (clipping for the server-side wrappers, the inner
  FedAvg's average weighted by the reported example counts, Gaussian noise of std
  z·C/m) gives the new parameters; it answers the clipping norm the round's updates were
  clipped to and the one the wrapper holds after the round (an adaptive wrapper's updated
  norm, which is the one its noise was scaled with).
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
        DifferentialPrivacyClientSideAdaptiveClipping,
        DifferentialPrivacyClientSideFixedClipping,
        DifferentialPrivacyServerSideAdaptiveClipping,
        DifferentialPrivacyServerSideFixedClipping,
        FedAvg,
    )

    # one INFO line per clipped client; the adaptive wrappers' "significant amount of noise"
    # advice is a WARNING on the worker's standard error, kept
    logging.getLogger("flwr").setLevel(logging.WARNING)
    population, m = int(body["population"]), int(body["num_sampled_clients"])
    inner = FedAvg(fraction_fit=m / population, fraction_evaluate=0.0, min_fit_clients=m,
                   min_evaluate_clients=0, min_available_clients=population)  # fmt: skip
    z, c = float(body["noise_multiplier"]), float(body["clipping_norm"])
    fixed = {
        "server-side": DifferentialPrivacyServerSideFixedClipping,
        "client-side": DifferentialPrivacyClientSideFixedClipping,
    }
    adaptive = {
        "server-side-adaptive": DifferentialPrivacyServerSideAdaptiveClipping,
        "client-side-adaptive": DifferentialPrivacyClientSideAdaptiveClipping,
    }
    wrapper = body["wrapper"]
    if wrapper in fixed:
        strategy = fixed[wrapper](inner, z, c, m)
    else:
        count_sd = body.get("clipped_count_stddev")
        strategy = adaptive[wrapper](
            inner, z, m, initial_clipping_norm=c,
            target_clipped_quantile=float(body["target_clipped_quantile"]),
            clip_norm_lr=float(body["clip_norm_lr"]),
            clipped_count_stddev=None if count_sd is None else float(count_sd),
        )  # fmt: skip
    manager = SimpleClientManager()
    client = _proxy_class()
    for cid in range(population):
        manager.register(client(str(cid)))
    random.seed(int(body["seed"]))
    np.random.seed(int(body["seed"]) % 2**32)  # noqa: NPY002 (Flower draws its noise from it)
    _STATE.clear()
    _STATE.update(strategy=strategy, manager=manager, wrapper=wrapper, round=0,
                  instructions=None)  # fmt: skip
    return {"strategy": repr(strategy), "update_noise_multiplier": strategy.noise_multiplier}, {}


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


def _through_clipping_mod(fit_ins, fit_res, adaptive):
    """Pass a client's answer through Flower's ``fixedclipping_mod`` (or, ``adaptive``, its
    ``adaptiveclipping_mod``), as its client app would: the mod reads the clipping norm from
    the instruction and clips the update (the adaptive one also reports the norm bit)."""
    from flwr.app import RecordDict
    from flwr.app.message import Context, Message
    from flwr.client.mod import adaptiveclipping_mod, fixedclipping_mod
    from flwr.compat.common import recorddict_compat as compat

    msg = Message(content=compat.fitins_to_recorddict(fit_ins, keep_input=True),
                  metadata=_metadata())  # fmt: skip

    def train(message, context):
        return Message(content=compat.fitres_to_recorddict(fit_res, keep_input=True),
                       metadata=_metadata())  # fmt: skip

    ctx = Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config={})
    out = (adaptiveclipping_mod if adaptive else fixedclipping_mod)(msg, ctx, train)
    return compat.recorddict_to_fitres(out.content, keep_input=True)


def op_aggregate(body, arrays):
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays

    params = np.asarray(arrays["params"])
    counts = np.asarray(arrays["num_examples"])
    strategy, wrapper = _STATE["strategy"], _STATE["wrapper"]
    clipped_to = float(strategy.clipping_norm)  # the norm this round's updates are clipped to
    results = []
    for i, (proxy, fit_ins) in enumerate(_STATE["instructions"]):
        res = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([params[i]]), int(counts[i]),
                     {})  # fmt: skip
        if wrapper.startswith("client-side"):
            res = _through_clipping_mod(fit_ins, res, wrapper.endswith("adaptive"))
        results.append((proxy, res))
    aggregated, _ = strategy.aggregate_fit(_STATE["round"], results, [])
    if aggregated is None:
        raise RuntimeError("Flower's aggregate_fit returned no parameters")
    theta = np.asarray(parameters_to_ndarrays(aggregated)[0], dtype=np.float64)
    return {"clipped_to": clipped_to, "norm_after": float(strategy.clipping_norm)}, {"theta": theta}
