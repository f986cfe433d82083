"""The probe problem: DP-SGD run for real on records that *are* gradients.

The model is a linear map ``w ∈ R^d`` (``torch.nn.Linear(d, 1, bias=False)``, started at 0)
and the loss of a record ``x`` is ``⟨w, x⟩``, so its per-example gradient is ``x`` itself,
whatever ``w`` is. The whole training run is then a linear-Gaussian mechanism whose every
moving part — the sampler, Opacus' per-sample gradients (``GradSampleModule``), clipping,
the noise and the averaging (``DPOptimizer``), and the accountant — is the library's own
code, run unmodified. A white-box adversary sees every iterate; with plain SGD at learning
rate 1 the step ``w_t − w_{t+1}`` is the privatised gradient the optimizer applied, which is
what a :class:`Transcript` keeps (the Nasr et al. 2021, arXiv:2101.04535, "white-box"
threat model: all intermediate models).

The records of a neighbouring pair are chosen by the adversary (Jagielski, Ullman & Oprea
2020, arXiv:2006.07709): a canary and "filler" records whose gradients sit in the same
coordinate, so that how the library batches, clips and averages them shows in that
coordinate.

Randomness: every run seeds torch's global generator (``torch.manual_seed``) inside
:func:`dpaudit.systems._torch_nets.torch_context`, which restores it afterwards; the shuffling
``DataLoader``, Opacus' Poisson sampler, ``WeightedRandomSampler`` and Opacus' noise all draw
from that generator, so one seed fixes one run, on any worker.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._validate import check_choice, check_positive, check_positive_int
from dpaudit.errors import require
from dpaudit.systems._torch_nets import torch_context

__all__ = ["ACCOUNTANTS", "ProbeSetting", "Session", "Transcript", "linear_probe"]

#: Opacus accountants a session reports its claim with.
ACCOUNTANTS = ("prv", "rdp")


@dataclasses.dataclass(frozen=True)
class ProbeSetting:
    """The hyperparameters a user would pass to Opacus (identical for both datasets of a pair).

    Attributes:
        dimension: d, the number of model parameters (> 1: coordinates 2…d carry only noise).
        batch_size: the ``DataLoader``'s batch size B.
        epochs: passes over the loader.
        noise_multiplier: σ (noise std σ·C on the clipped sum).
        max_grad_norm: the clipping norm C.
        accountant: the Opacus accountant the claim is read from.
    """

    dimension: int = 1
    batch_size: int = 25
    epochs: int = 8
    noise_multiplier: float = 2.0
    max_grad_norm: float = 1.0
    accountant: str = "prv"

    def __post_init__(self) -> None:
        check_positive_int("dimension", self.dimension)
        check_positive_int("batch_size", self.batch_size)
        check_positive_int("epochs", self.epochs)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("max_grad_norm", self.max_grad_norm)
        check_choice("accountant", self.accountant, ACCOUNTANTS)


@dataclasses.dataclass(frozen=True)
class Transcript:
    """What the white-box adversary sees of one run.

    Attributes:
        gradients: ``(T, d)`` privatised gradient of each step (``w_t − w_{t+1}`` at learning
            rate 1).
        epoch: ``(T,)`` the epoch of each step.
    """

    gradients: np.ndarray
    epoch: np.ndarray

    @property
    def steps(self) -> int:
        """T, the number of steps taken."""
        return int(self.gradients.shape[0])


class Session:
    """One configured training system on one dataset, run again and again with fresh seeds.

    The Opacus objects (model, optimizer, data loader, accountant) are built once; each
    :meth:`run` resets the weights to 0 and the accountant's history, seeds torch and trains
    ``epochs`` passes. ``claim`` reads the library's own accountant after the first run.

    Args:
        build: ``build(torch) -> (model, optimizer, loader, accountant_or_None, step)``; the
            variant's configuration. ``step(torch, model, optimizer, batch)`` takes one step.
        setting: the :class:`ProbeSetting`.
    """

    def __init__(self, build: Callable[[Any], tuple], setting: ProbeSetting) -> None:
        self.setting = setting
        self._build = build
        self._objects: tuple | None = None
        self._history: list | None = None
        self._claims: dict[float, float] = {}

    def _ensure(self, torch: Any) -> tuple:
        if self._objects is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._objects = self._build(torch)
        return self._objects

    def run(self, seed: int) -> Transcript:
        """Train once from ``w = 0`` with torch seeded by ``seed``; return the transcript."""
        with torch_context(0) as torch:  # building draws from torch's generator: not the run's
            model, optimizer, loader, accountant, step = self._ensure(torch)
        with torch_context(int(seed)) as torch:
            weight = _weight(model)
            with torch.no_grad():
                weight.zero_()
            if accountant is not None:
                accountant.history = []
            grads, epochs = [], []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for e in range(self.setting.epochs):
                    for batch in loader:
                        before = weight.detach().clone()
                        step(torch, model, optimizer, batch)
                        grads.append((before - weight.detach()).double().numpy().ravel())
                        epochs.append(e)
            if accountant is not None and self._history is None:
                self._history = list(accountant.history)
        d = self.setting.dimension
        g = np.array(grads, dtype=np.float64).reshape(-1, d)
        return Transcript(g, np.array(epochs, dtype=np.int64))

    def claim(self, delta: float) -> float:
        """ε at δ that the library's accountant reports for one run (after a first run)."""
        delta = float(delta)
        if delta not in self._claims:
            self._claims[delta] = self._claim(delta)
        return self._claims[delta]

    def _claim(self, delta: float) -> float:
        if self._history is None:
            self.run(0)
        if self._history is None:
            raise ValueError("this session keeps no accountant")
        return _accountant_epsilon(self.setting.accountant, tuple(self._history), delta)


@functools.lru_cache(maxsize=256)
def _accountant_epsilon(kind: str, history: tuple, delta: float) -> float:
    """ε at δ of Opacus' accountant ``kind`` after the steps ``history`` (its
    ``(noise_multiplier, sample_rate, steps)`` entries).

    A pure function of its arguments, so it is computed once per process: the sessions of one
    setting (a bug and its control, every seed of a control) record the same history, and
    Opacus' PRV accountant takes about a second per call.
    """
    from opacus.accountants import create_accountant

    acct = create_accountant(kind)
    acct.history = list(history)
    with warnings.catch_warnings():
        # "Optimal order is the smallest/largest alpha": Opacus' RDP ε is then merely less
        # tight (still valid); PRV's log(1 − q) at q = 1 warns too.
        warnings.filterwarnings("ignore", message="Optimal order is the")
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(acct.get_epsilon(delta=float(delta)))


def _weight(model: Any) -> Any:
    inner = getattr(model, "_module", model)
    return inner.weight


def linear_probe(torch: Any, dimension: int) -> Any:
    """``Linear(d, 1, bias=False)`` at 0: the loss ``⟨w, x⟩`` has per-example gradient ``x``."""
    require("opacus", "opacus")
    model = torch.nn.Linear(int(dimension), 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    return model


def opacus_step(torch: Any, model: Any, optimizer: Any, batch: Any) -> None:
    """One Opacus step on a batch of records: ``mean ⟨w, x⟩`` backward, ``optimizer.step()``.

    Opacus' ``GradSampleModule`` (``loss_reduction="mean"``) turns the mean back into
    per-example gradients ``x_i``; ``DPOptimizer.step`` clips, sums, adds noise and divides by
    its ``expected_batch_size``. An empty Poisson batch (Opacus' loader yields a zero-row
    tensor) still takes the noise-only step.
    """
    (x,) = batch
    optimizer.zero_grad(set_to_none=True)
    out = model(x)
    (out.mean() if len(x) else out.sum()).backward()
    optimizer.step()
