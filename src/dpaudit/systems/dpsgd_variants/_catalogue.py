"""A catalogue of DP-SGD implementations: the correct one and the bugs that shipped.

Every variant trains the probe problem (:mod:`._probe`) and reports the ε its accountant
claims. Where the bug lives in a library, the variant *is* that library (Opacus as
installed, configured the way the bug's reporter did); the classic hand-written mistakes run
a short loop on torch with Opacus' own sampler and accountant.

* ``poisson`` — correct: Poisson sampling at a public rate q, noise σC on the clipped sum,
  division by the public batch size (Abadi et al. 2016, arXiv:1607.00133, Alg. 1).
* ``shuffle`` — shuffled fixed-size batches (``DataLoader(shuffle=True, drop_last=True)``,
  ``make_private(poisson_sampling=False)``) accounted as Poisson sampling at 1/len(loader)
  (Opacus issue #80, PR #128; Chua et al. 2024, arXiv:2403.17673).
* ``shuffle-last-batch`` — the same with the ``DataLoader`` default ``drop_last=False``: the
  number of steps, ceil(n/B), is a function of the private n.
* ``floored-batch-size`` — Opacus' default ``make_private``: the sum is divided by
  ``int(len(dataset) · q)``, a function of the private dataset size (Opacus 1.0–1.6; issues
  #571, #819).
* ``weighted-sampler`` — a class-balancing ``WeightedRandomSampler`` (with replacement) kept
  by ``make_private(poisson_sampling=False)``, accounted as Poisson sampling at 1/len(loader)
  (Opacus issues #813, #600).
* ``batch-clipping`` — the *batch* gradient clipped (``clip_grad_norm_``) instead of each
  example's, then noise σC (per-example clipping is Abadi et al. 2016 §3.1's fix).
* ``noise-scaled-twice`` — noise σC divided by the batch size twice (σC/B² on the mean
  gradient): a classic hand-written slip.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._registry import Registry
from dpaudit._validate import check_array, check_positive_int
from dpaudit.systems.dpsgd_variants._probe import ProbeSetting, Session, linear_probe, opacus_step

__all__ = ["DPSGD_VARIANTS", "DPSGDVariant", "ProbeData"]


@dataclasses.dataclass(frozen=True)
class ProbeData:
    """A dataset of the probe problem.

    Attributes:
        records: ``(n, d)`` records; a record's per-example gradient is the record itself.
        groups: ``(n,)`` integer class of each record (used by class-balancing samplers).
        nominal_size: the dataset size the user publishes (a sampling rate or expected batch
            size computed from it is public); for a pair, the size of the smaller dataset.
    """

    records: np.ndarray
    groups: np.ndarray
    nominal_size: int

    def __post_init__(self) -> None:
        r = check_array("records", self.records, ndim=2)
        g = np.asarray(self.groups)
        if g.shape != (r.shape[0],):
            raise ValueError(f"groups must have shape ({r.shape[0]},), got {g.shape}")
        check_positive_int("nominal_size", self.nominal_size)
        object.__setattr__(self, "records", r.astype(np.float32))
        object.__setattr__(self, "groups", g.astype(np.int64))

    @property
    def size(self) -> int:
        """n, the number of records."""
        return int(self.records.shape[0])


@dataclasses.dataclass(frozen=True)
class DPSGDVariant:
    """One DP-SGD implementation as a system under audit.

    Attributes:
        name: registry name.
        title: one line.
        bug: what deviates from the analysed algorithm (None for the correct one).
        source: where it was reported (issue, paper).
        runs: what code runs (``"Opacus <version> as installed"`` or a hand-written loop).
        build: ``build(data, setting) -> builder`` where ``builder(torch)`` returns
            ``(model, optimizer, loader, accountant, step)`` (see :class:`Session`).
    """

    name: str
    title: str
    bug: str | None
    source: str
    runs: str
    build: Callable[[ProbeData, ProbeSetting], Callable[[Any], tuple]]

    def session(self, data: ProbeData, setting: ProbeSetting) -> Session:
        """A reusable training session of this variant on ``data``."""
        if not isinstance(data, ProbeData):
            raise TypeError(f"data must be a ProbeData, got {type(data).__name__}")
        if not isinstance(setting, ProbeSetting):
            raise TypeError(f"setting must be a ProbeSetting, got {type(setting).__name__}")
        if data.records.shape[1] != setting.dimension:
            raise ValueError(
                f"records have {data.records.shape[1]} columns but setting.dimension="
                f"{setting.dimension}"
            )
        if setting.batch_size > data.nominal_size:
            raise ValueError(
                f"batch_size={setting.batch_size} exceeds the dataset size {data.nominal_size}"
            )
        return Session(self.build(data, setting), setting)


DPSGD_VARIANTS: Registry[DPSGDVariant] = Registry("DP-SGD variant")


def _dataset(torch: Any, data: ProbeData) -> Any:
    from torch.utils.data import TensorDataset

    return TensorDataset(torch.from_numpy(data.records))


def _private(torch: Any, s: ProbeSetting, loader: Any, *, poisson: bool) -> tuple:
    """``PrivacyEngine(accountant).make_private(...)`` exactly as a user calls it."""
    from opacus import PrivacyEngine

    module = linear_probe(torch, s.dimension)
    engine = PrivacyEngine(accountant=s.accountant)
    model, optimizer, loader = engine.make_private(
        module=module,
        optimizer=torch.optim.SGD(module.parameters(), lr=1.0),
        data_loader=loader,
        noise_multiplier=s.noise_multiplier,
        max_grad_norm=s.max_grad_norm,
        poisson_sampling=poisson,
    )
    return model, optimizer, loader, engine.accountant, opacus_step


def _public_rate(data: ProbeData, s: ProbeSetting) -> float:
    """q = B / n_nominal: the public sampling rate (Opacus' ``DPDataLoader`` then takes
    ``int(1/q)`` steps per epoch and its accountant reads ``1/int(1/q) ≥ q``)."""
    return s.batch_size / data.nominal_size


def _build_poisson(data: ProbeData, s: ProbeSetting) -> Callable[[Any], tuple]:
    q = _public_rate(data, s)

    def build(torch: Any) -> tuple:
        from opacus.data_loader import DPDataLoader

        loader = DPDataLoader(_dataset(torch, data), sample_rate=q)
        model, optimizer, loader, accountant, step = _private(torch, s, loader, poisson=False)
        # Opacus 1.6 sets int(len(dataset) * q), a function of the private size (issue #819);
        # the correct algorithm divides by the public expected batch size.
        optimizer.expected_batch_size = s.batch_size
        return model, optimizer, loader, accountant, step

    return build


def _build_shuffle(data: ProbeData, s: ProbeSetting) -> Callable[[Any], tuple]:
    def build(torch: Any) -> tuple:
        from torch.utils.data import DataLoader

        loader = DataLoader(
            _dataset(torch, data), batch_size=s.batch_size, shuffle=True, drop_last=True
        )
        return _private(torch, s, loader, poisson=False)

    return build


def _build_shuffle_last(data: ProbeData, s: ProbeSetting) -> Callable[[Any], tuple]:
    def build(torch: Any) -> tuple:
        from torch.utils.data import DataLoader

        loader = DataLoader(_dataset(torch, data), batch_size=s.batch_size, shuffle=True)
        return _private(torch, s, loader, poisson=False)

    return build


def _build_floored(data: ProbeData, s: ProbeSetting) -> Callable[[Any], tuple]:
    def build(torch: Any) -> tuple:
        from torch.utils.data import DataLoader

        loader = DataLoader(_dataset(torch, data), batch_size=s.batch_size)
        return _private(torch, s, loader, poisson=True)

    return build


def _build_weighted(data: ProbeData, s: ProbeSetting) -> Callable[[Any], tuple]:
    def build(torch: Any) -> tuple:
        from torch.utils.data import DataLoader, WeightedRandomSampler

        counts = np.bincount(data.groups)
        weights = torch.as_tensor(1.0 / counts[data.groups], dtype=torch.float64)
        sampler = WeightedRandomSampler(weights, num_samples=data.size, replacement=True)
        loader = DataLoader(_dataset(torch, data), batch_size=s.batch_size, sampler=sampler)
        return _private(torch, s, loader, poisson=False)

    return build


def _hand_written(
    data: ProbeData, s: ProbeSetting, noisy_mean: Callable[[Any, Any, Any, float], Any]
) -> Callable[[Any], tuple]:
    """A hand-written DP-SGD loop: Opacus' Poisson sampler at the public rate and Opacus'
    accountant (one ``accountant.step`` per step, as a user would call it), the gradient
    privatised by ``noisy_mean(torch, model, x, q)`` and applied with SGD at rate 1."""
    q = _public_rate(data, s)

    def build(torch: Any) -> tuple:
        from opacus.accountants import create_accountant
        from opacus.data_loader import DPDataLoader

        loader = DPDataLoader(_dataset(torch, data), sample_rate=q)
        model = linear_probe(torch, s.dimension)
        accountant = create_accountant(s.accountant)

        def step(torch: Any, model: Any, optimizer: Any, batch: Any) -> None:
            (x,) = batch
            g = noisy_mean(torch, model, x, s)
            with torch.no_grad():
                model.weight -= g.reshape(model.weight.shape)
            accountant.step(noise_multiplier=s.noise_multiplier, sample_rate=q)

        return model, None, loader, accountant, step

    return build


def _batch_clipped_mean(torch: Any, model: Any, x: Any, s: ProbeSetting) -> Any:
    """The bug: ``clip_grad_norm_`` on the summed batch gradient, then noise σC, ÷ B."""
    model.zero_grad(set_to_none=True)
    model(x).sum().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), s.max_grad_norm)
    g = model.weight.grad.detach().clone()
    g += torch.normal(0.0, s.noise_multiplier * s.max_grad_norm, size=g.shape)
    return g / s.batch_size


def _noise_twice_mean(torch: Any, model: Any, x: Any, s: ProbeSetting) -> Any:
    """The bug: per-example clipping right, but the noise σC divided by B twice."""
    norms = x.norm(dim=1, keepdim=True).clamp_min(1e-12)
    clipped = x * torch.clamp(s.max_grad_norm / norms, max=1.0)
    mean = clipped.sum(dim=0) / s.batch_size
    noise = torch.normal(0.0, s.noise_multiplier * s.max_grad_norm, size=mean.shape)
    return mean + noise / s.batch_size**2


DPSGD_VARIANTS.register(
    "poisson",
    DPSGDVariant(
        "poisson", "correct DP-SGD: Poisson sampling at a public rate, public normalisation",
        None, "Abadi et al. 2016, arXiv:1607.00133, Alg. 1; Mironov, Talwar & Zhang 2019, "
        "arXiv:1908.10530 (the subsampled Gaussian the accountant analyses)",
        "Opacus' DPDataLoader, GradSampleModule, DPOptimizer and accountant",
        _build_poisson,
    ),
)  # fmt: skip
DPSGD_VARIANTS.register(
    "shuffle",
    DPSGDVariant(
        "shuffle", "shuffled fixed-size batches accounted as Poisson sampling",
        "batches are a shuffled partition of fixed size B (each record once per epoch); the "
        "accountant analyses Poisson sampling at q = 1/len(loader)",
        "Opacus issue #80 and PR #128; Chua et al. 2024, arXiv:2403.17673; Annamalai et al. "
        "2024, arXiv:2411.10614",
        "Opacus make_private(poisson_sampling=False) on DataLoader(shuffle=True, "
        "drop_last=True)",
        _build_shuffle,
    ),
)  # fmt: skip
DPSGD_VARIANTS.register(
    "shuffle-last-batch",
    DPSGDVariant(
        "shuffle-last-batch", "shuffled batches with the last partial batch kept",
        "the loader's default drop_last=False: the number of steps per epoch, ceil(n/B), is a "
        "function of the private dataset size; the accountant analyses Poisson sampling",
        "Opacus issues #80 and #571 (the dataset's cardinality leaks); PyTorch DataLoader "
        "defaults",
        "Opacus make_private(poisson_sampling=False) on DataLoader(shuffle=True)",
        _build_shuffle_last,
    ),
)  # fmt: skip
DPSGD_VARIANTS.register(
    "floored-batch-size",
    DPSGDVariant(
        "floored-batch-size", "sum divided by the floored expected batch size of the private n",
        "the noisy sum is divided by int(len(dataset) · q), so the scale of every update is a "
        "function of the private dataset size",
        "Opacus issues #571 (Cebere, 2023) and #819 (2026): Opacus 1.0–1.6 privacy_engine.py",
        "Opacus make_private (defaults: Poisson sampling)",
        _build_floored,
    ),
)  # fmt: skip
DPSGD_VARIANTS.register(
    "weighted-sampler",
    DPSGDVariant(
        "weighted-sampler", "class-balancing weighted sampler accounted as Poisson sampling",
        "records are drawn with replacement with class-balancing weights, so a rare record can "
        "appear many times in a batch; the accountant analyses Poisson sampling at "
        "q = 1/len(loader)",
        "Opacus issues #813 and #600 (WeightedRandomSampler and make_private)",
        "Opacus make_private(poisson_sampling=False) on DataLoader(sampler="
        "WeightedRandomSampler(replacement=True))",
        _build_weighted,
    ),
)  # fmt: skip
DPSGD_VARIANTS.register(
    "batch-clipping",
    DPSGDVariant(
        "batch-clipping", "the batch gradient clipped instead of each example's",
        "clip_grad_norm_ bounds the summed batch gradient, so one example can move it by 2C "
        "(not C) and an example's own gradient is never clipped",
        "Abadi et al. 2016, arXiv:1607.00133, §3.1 (per-example clipping is the fix)",
        "hand-written loop: Opacus' Poisson sampler and accountant, torch clip_grad_norm_",
        lambda data, s: _hand_written(data, s, _batch_clipped_mean),
    ),
)  # fmt: skip
DPSGD_VARIANTS.register(
    "noise-scaled-twice",
    DPSGDVariant(
        "noise-scaled-twice", "noise divided by the batch size twice",
        "the noise σC is added to the mean gradient as σC/B², i.e. σ/B on the sum",
        "a classic hand-written DP-SGD mistake (cf. Opacus issue #420 on averaging)",
        "hand-written loop: Opacus' Poisson sampler and accountant",
        lambda data, s: _hand_written(data, s, _noise_twice_mean),
    ),
)  # fmt: skip
