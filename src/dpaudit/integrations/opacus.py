"""White-box canary gradients in your own Opacus training loop.

Two added lines audit an unmodified Opacus loop (here the loop of Opacus' MNIST example):

.. code-block:: python

    model, optimizer, train_loader = privacy_engine.make_private(
        module=model, optimizer=optimizer, data_loader=train_loader,
        noise_multiplier=1.1, max_grad_norm=1.0)
    auditor = CanaryAuditor(optimizer, train_loader, num_canaries=10_000, rng=0)  # added
    for epoch in range(epochs):
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(data), target)
            loss.backward()
            optimizer.step()
    result = auditor.result(accountant=privacy_engine.accountant, delta=1e-5)  # added

**What the auditor does** (the white-box threat model of Nasr, Hayes, Steinke, Balle, Tramèr,
Jagielski, Carlini & Terzis 2023, arXiv:2302.07956, and of Steinke, Nasr & Jagielski 2023,
arXiv:2305.08846, §6). It adds m *Dirac canary gradients* of norm C, the clipping norm, each
in a coordinate of its own: an audit block of m free coordinates beside the model's
parameters, which no example's gradient touches. Each canary is included in the run with
probability ½ and, when included, Poisson-sampled into every step at the loader's sampling
rate q, like an example. At every privatised step (each call of the optimizer's
``add_noise``) the auditor reads the block — the sampled canaries' gradients plus noise — in
units of C:

    y_it = b_it + σ z_it,   b_it ~ Bernoulli(q) if canary i is included (else 0).

The noise ``σ z_it`` is, by default (``noise_source="optimizer"``), the noise the optimizer
actually added at that step, read as ``p.grad − p.summed_grad`` at m fixed model coordinates
chosen at random: the implementation's own noise, so a bug inside ``add_noise`` shows. With
``noise_source="auditor"`` it is drawn by the auditor's own generator at the optimizer's
configured standard deviation (``noise_multiplier · max_grad_norm``, Opacus'
``_generate_noise``, secure mode included): any m, and a result that depends only on q, σ,
the steps, m and the seed. Either way the auditor only reads: the user's examples are
sampled, clipped and noised exactly as without it (bit for bit; a test checks it).

A canary's score is the sum over steps of the per-step log-likelihood ratio of the subsampled
Gaussian (:func:`dpaudit.attacks.per_step_llr`) at the σ estimated from that step's m
observations, inclusions ignored (:func:`estimate_noise_multiplier`), or of the plain
projections (``"inner"``); the one-run bounds of Steinke et al. 2023 and of Mahloujifar,
Melis & Chaudhuri 2024 (arXiv:2410.22235) turn them into valid lower bounds with the number
of guesses paid for (:func:`dpaudit.bounds.one_run_bounds`), and the Gaussian-pair estimate
of Agrawal et al. 2026 (arXiv:2606.12733) is shown beside them, labelled as an estimate.

What it does not test: how the user's own examples are sampled and clipped (the canaries are
sampled by the auditor at the rate the loader states). A loader that is not Poisson
(``poisson_sampling=False``) is refused: the claim's accountant assumes Poisson sampling.

The auditor's state is O(m) (two running sums), whatever the number of steps.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from dpaudit._results import (
    AuditEntry,
    AuditResult,
    Claim,
    LowerBound,
    ResultMixin,
    package_versions,
)
from dpaudit._rng import as_seed_sequence
from dpaudit._typing import RngLike
from dpaudit._validate import (
    check_choice,
    check_confidence_level,
    check_delta,
    check_flag,
    check_in_range,
    check_positive,
    check_positive_int,
    check_work,
)
from dpaudit.attacks import StepClaimTest, StepClaimTestResult, per_step_llr
from dpaudit.bounds import (
    SELECTION_NAMES,
    GaussianPairEstimate,
    OneRunBounds,
    gaussian_pair_epsilon,
    one_run_bounds,
)
from dpaudit.errors import require

__all__ = [
    "MAX_CANARIES",
    "NOISE_SOURCES",
    "STATISTICS",
    "CanaryAuditor",
    "WhiteBoxRun",
    "estimate_noise_multiplier",
    "whitebox_entries",
]

#: The workflow whose results the auditor returns (``dpaudit audit dp-sgd``).
WORKFLOW = "dp-sgd"
#: The per-canary statistics, in the order of the entries.
STATISTICS = ("llr", "inner")
#: Most canaries of one auditor (its state is three float64 arrays of this length).
MAX_CANARIES = 10**7
#: Where the canaries' noise comes from (:class:`CanaryAuditor`).
NOISE_SOURCES = ("optimizer", "auditor")

_METHODS = {
    "or": "one-run (Steinke et al. 2023), guess-count sweep",
    "or-fdp": "f-DP one-run, Gaussian-DP family, K=2 (Mahloujifar et al. 2024), guess-count sweep",
    "max": "max of the two one-run procedures at beta/2 each (Bonferroni)",
}
_STAT_NAMES = {
    "llr": "white-box canary gradients, sum of per-step subsampled-Gaussian log-likelihood ratios",
    "inner": "white-box canary gradients, sum of per-step inner products",
}


@dataclasses.dataclass(frozen=True)
class WhiteBoxRun(ResultMixin):
    """What the auditor saw in one training run, and its bounds.

    Attributes:
        num_canaries: m.
        num_included: canaries included (each with probability ½).
        steps: privatised steps observed (calls of ``add_noise``).
        sampling_rate: q of the canaries.
        noise_multipliers: (smallest, largest) σ of the log-likelihood ratio over the steps
            (estimated from the observations by default).
        noise_multipliers_used: (smallest, largest) σ the optimizer was set to over the steps.
        clipping_norm: C (the canaries' norm).
        scores: statistic → (m,) scores.
        included: (m,) inclusions.
        bounds: statistic → :class:`~dpaudit.bounds.OneRunBounds`.
        gaussian_pair: the Gaussian-pair estimate of the ``"llr"`` scores.
        bookkeeping_seconds: wall time the auditor spent inside the training loop.
        claim_test: the anytime-valid test of the claimed noise multiplier over the steps
            (:class:`dpaudit.attacks.StepClaimTest`): whether and at which step the run
            was caught adding less noise than claimed (None: the test was off).
    """

    num_canaries: int
    num_included: int
    steps: int
    sampling_rate: float
    noise_multipliers: tuple[float, float]
    noise_multipliers_used: tuple[float, float]
    clipping_norm: float
    scores: dict[str, np.ndarray]
    included: np.ndarray
    bounds: dict[str, OneRunBounds]
    gaussian_pair: GaussianPairEstimate
    bookkeeping_seconds: float
    claim_test: StepClaimTestResult | None = None


def estimate_noise_multiplier(observations: np.ndarray, sampling_rate: float) -> float:
    """σ of one step, from its m canary observations without their inclusions.

    Each observation is ``b + σz`` with ``b ~ Bernoulli(q/2)`` a priori (included with
    probability ½, then sampled with probability q), so ``Var(y) = σ² + p(1 − p)`` with
    ``p = q/2``, and ``σ̂² = s² − p(1 − p)`` (floored at 1e-12). The estimate is a function of
    the mechanism's output alone, never of which canaries were included, so a score built on it
    keeps the one-run bounds valid (Steinke, Nasr & Jagielski 2023, arXiv:2305.08846, Thm 3.1
    holds for any score computed from the output); it lets the log-likelihood ratio match the
    noise actually added when an implementation adds less than it claims.

    Example:
        >>> g = np.random.default_rng(0)
        >>> y = (g.random(100000) < 0.05) + 0.7 * g.standard_normal(100000)
        >>> round(estimate_noise_multiplier(y, 0.1), 2)
        0.7
    """
    p = sampling_rate / 2.0
    var = float(np.var(observations)) - p * (1.0 - p)
    return math.sqrt(max(var, 1e-12))


def _pick(b: OneRunBounds, bound: str) -> tuple[float, float, tuple]:
    if bound == "or":
        return b.steinke.epsilon, b.steinke.uncorrected_max_epsilon, (b.steinke.selection,)
    if bound == "or-fdp":
        return b.fdp.epsilon, b.fdp.uncorrected_max_epsilon, (b.fdp.selection,)
    sel = (b.steinke.selection, b.fdp.selection, b.max_selection)
    return b.max_valid, b.uncorrected_max, sel


def whitebox_entries(
    run: WhiteBoxRun, claims: tuple[Claim, ...], level: float, delta: float
) -> list[AuditEntry]:
    """One entry per statistic × bound (``"llr:or"``, …, ``"inner:max"``) and the
    Gaussian-pair estimate (``"llr:gaussian-pair"``, not a valid bound)."""
    out = []
    for stat in STATISTICS:
        b = run.bounds[stat]
        for bound in ("or", "or-fdp", "max"):
            valid, unc, sel = _pick(b, bound)
            note = (f"{_STAT_NAMES[stat]}; {run.steps} steps, m = {run.num_canaries}; "
                    f"uncorrected maximum {unc:.4f} is NOT a valid lower bound")  # fmt: skip
            if bound != "or":
                note += "; the f-DP bound at delta > 0 assumes a Gaussian trade-off curve"
            lower = LowerBound(_METHODS[bound], level, valid, delta, note=note)
            out.append(AuditEntry(WORKFLOW, f"{stat}:{bound}", lower, claims, selections=sel,
                                  detail=b))  # fmt: skip
    gp = run.gaussian_pair
    lower = LowerBound("Gaussian-pair estimate (Agrawal et al. 2026, arXiv:2606.12733)", level,
                       gp.epsilon, delta, epsilon_is_valid=False,
                       note=f"rests on {gp.assumption}; mu = {gp.mu:.4f}")  # fmt: skip
    out.append(AuditEntry(WORKFLOW, "llr:gaussian-pair", lower, claims, detail=gp))
    return out


def _sampling_rate(data_loader: Any, sample_rate: float | None) -> float:
    if sample_rate is not None:
        if data_loader is not None:
            raise ValueError("give data_loader or sample_rate, not both")
        return check_in_range("sample_rate", sample_rate, 0.0, 1.0, high_inclusive=True)
    if data_loader is None:
        raise ValueError("give data_loader (Opacus' DPDataLoader) or sample_rate")
    from opacus.data_loader import DPDataLoader

    if not isinstance(data_loader, DPDataLoader):
        raise ValueError(
            f"data_loader must be Opacus' DPDataLoader (Poisson sampling), got "
            f"{type(data_loader).__name__}: the white-box threat model and the accountant's "
            "claim assume Poisson sampling (make_private(..., poisson_sampling=True))"
        )
    return float(data_loader.sample_rate)


class CanaryAuditor:
    """White-box canary gradients attached to an Opacus ``DPOptimizer`` (module notes).

    Args:
        optimizer: the ``DPOptimizer`` returned by ``PrivacyEngine.make_private``.
        data_loader: the Poisson ``DPDataLoader`` returned with it (gives q); or pass
            ``sample_rate``.
        num_canaries: m, at most :data:`MAX_CANARIES`.
        sample_rate: q, for a loop that draws its own Poisson batches.
        noise_multiplier: the σ of the per-step log-likelihood ratio: ``"estimate"`` (the
            default: each step's σ estimated from that step's m observations, inclusions
            ignored — see :func:`estimate_noise_multiplier`) or a number (e.g. the claimed σ).
        canary_norm: must equal the optimizer's clipping norm (default: it).
        noise_source: ``"optimizer"`` (the default): each step's canary noise is the noise
            the optimizer actually added, read (``p.grad − p.summed_grad``) at m fixed model
            coordinates chosen at random — the implementation's own noise, so a bug inside
            ``add_noise`` shows; needs m ≤ the number of model coordinates. ``"auditor"``:
            noise drawn by the auditor's generator at the optimizer's configured standard
            deviation (``noise_multiplier · max_grad_norm``, Opacus' ``_generate_noise``):
            any m, and the result depends only on q, σ, T, m and the seed.
        claimed_noise_multiplier: the σ the accountant is told (default: the optimizer's
            configured ``noise_multiplier`` when the auditor is attached).
        claim_test: keep the anytime-valid test of that claim over the steps
            (:class:`dpaudit.attacks.StepClaimTest`; each step's canary pairs update it, so a
            run that adds less noise than claimed is caught during training).
        rng: seed of the inclusions, the canaries' sampling and noise, and the bounds' splits.

    Raises:
        TypeError: not a ``DPOptimizer``.
        ValueError: a loader without Poisson sampling, a canary norm other than the clipping
            norm, m out of range, σ = 0, an optimizer already audited — all before training.
        MissingDependencyError: torch or opacus is not installed.
    """

    def __init__(
        self,
        optimizer: Any,
        data_loader: Any = None,
        *,
        num_canaries: int = 1000,
        sample_rate: float | None = None,
        noise_multiplier: float | str = "estimate",
        canary_norm: float | None = None,
        noise_source: str = "optimizer",
        claimed_noise_multiplier: float | None = None,
        claim_test: bool = True,
        rng: RngLike = None,
    ) -> None:
        torch = require("torch", "torch")
        require("opacus", "opacus")
        from opacus.optimizers import DPOptimizer

        m = check_positive_int("num_canaries", num_canaries)
        check_work(m, MAX_CANARIES, f"CanaryAuditor with num_canaries={m}", "canaries",
                   "raise dpaudit.integrations.opacus.MAX_CANARIES")  # fmt: skip
        if not isinstance(optimizer, DPOptimizer):
            raise TypeError(
                f"optimizer must be an Opacus DPOptimizer (PrivacyEngine.make_private), got "
                f"{type(optimizer).__name__}"
            )
        if getattr(optimizer, "_dpaudit_auditor", None) is not None:
            raise ValueError("optimizer already has a CanaryAuditor attached")
        self._q = _sampling_rate(data_loader, sample_rate)
        self._clip = float(optimizer.max_grad_norm)
        if canary_norm is not None and check_positive("canary_norm", canary_norm) != self._clip:
            raise ValueError(
                f"canary_norm={canary_norm!r} must equal the clipping norm max_grad_norm="
                f"{self._clip!r}: a canary gradient is an example's gradient at the clipping norm"
            )
        if isinstance(noise_multiplier, str):
            check_choice("noise_multiplier", noise_multiplier, ("estimate",))
            self._sigma: float | None = None
        else:
            self._sigma = check_positive("noise_multiplier", noise_multiplier)
        self._seed = as_seed_sequence(rng)
        inc, samp, noise, self._bound_seed = np.random.SeedSequence(
            self._seed.entropy, spawn_key=self._seed.spawn_key
        ).spawn(4)
        self._source = check_choice("noise_source", noise_source, NOISE_SOURCES)
        self._coords = None
        if self._source == "optimizer":
            d = sum(int(p.numel()) for p in optimizer.params)
            if m > d:
                raise ValueError(
                    f"num_canaries={m} exceeds the {d} model coordinates whose noise the "
                    "optimizer draws (noise_source='optimizer'); use fewer canaries or "
                    "noise_source='auditor'"
                )
            self._coords = torch.from_numpy(
                np.random.default_rng(noise).choice(d, m, replace=False)
            )
        self._included = np.random.default_rng(inc).random(m) < 0.5
        self._sampler = np.random.default_rng(samp)
        self._generator = torch.Generator().manual_seed(
            int(noise.generate_state(1, dtype=np.uint64)[0] % (2**63))
        )
        self._llr = np.zeros(m)
        self._inner = np.zeros(m)
        self._steps = 0
        self._used = (math.inf, -math.inf)
        self._llr_sigma = (math.inf, -math.inf)
        self._seconds = 0.0
        self._optimizer = optimizer
        self._claim_test = None
        if check_flag("claim_test", claim_test) and 0 < self._included.sum() < m:
            claimed = float(optimizer.noise_multiplier)
            if claimed_noise_multiplier is not None:
                claimed = check_positive("claimed_noise_multiplier", claimed_noise_multiplier)
            if claimed > 0:
                self._claim_test = StepClaimTest(self._included, sampling_rate=self._q,
                                                 noise_multiplier=claimed)  # fmt: skip
        self._attach(optimizer)

    def _attach(self, optimizer: Any) -> None:
        original = optimizer.add_noise

        def add_noise(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            self._observe()
            return out

        optimizer.add_noise = add_noise
        optimizer._dpaudit_auditor = self

    def _observe(self) -> None:
        """One privatised step: the sampled canaries plus the optimizer's noise, read."""
        import torch
        from opacus.optimizers.optimizer import _generate_noise

        t0 = time.perf_counter()
        opt = self._optimizer
        sigma_used = float(opt.noise_multiplier)
        sampled = (self._sampler.random(self._included.size) < self._q) & self._included
        if self._coords is None:
            zeros = torch.zeros(sampled.size, dtype=torch.float64)
            std = sigma_used * float(opt.max_grad_norm)
            noise = _generate_noise(std=std, reference=zeros, generator=self._generator,
                                    secure_mode=opt.secure_mode)  # fmt: skip
        else:  # the noise the optimizer added to the model, at the chosen coordinates
            added = torch.cat([(p.grad - p.summed_grad.view_as(p)).reshape(-1)
                               for p in opt.params])  # fmt: skip
            noise = added[self._coords].to(torch.float64)
        y = sampled + noise.numpy() / self._clip
        sigma = self._sigma if self._sigma is not None else estimate_noise_multiplier(y, self._q)
        self._llr += per_step_llr(y, sampling_rate=self._q, noise_multiplier=sigma)
        self._inner += y
        if self._claim_test is not None:
            self._claim_test.update(y)
        self._steps += 1
        self._used = (min(self._used[0], sigma_used), max(self._used[1], sigma_used))
        self._llr_sigma = (min(self._llr_sigma[0], sigma), max(self._llr_sigma[1], sigma))
        self._seconds += time.perf_counter() - t0

    @property
    def steps(self) -> int:
        """Privatised steps observed so far."""
        return self._steps

    @property
    def included(self) -> np.ndarray:
        """(m,) which canaries are included (a copy)."""
        return self._included.copy()

    def scores(self) -> dict[str, np.ndarray]:
        """statistic → (m,) scores so far (copies)."""
        return {"llr": self._llr.copy(), "inner": self._inner.copy()}

    def run(
        self,
        *,
        delta: float = 1e-5,
        confidence_level: float = 0.95,
        selection: str = "split",
        split_fraction: float = 0.5,
        max_points: int = 500,
    ) -> WhiteBoxRun:
        """The scores and bounds of the steps observed so far.

        Raises:
            ValueError: no step observed yet; bad δ, level or selection.
        """
        d = check_delta(delta, allow_zero=False)
        level = check_confidence_level(confidence_level)
        check_choice("selection", selection, SELECTION_NAMES)
        if self._steps == 0:
            raise ValueError("no privatised step was observed: attach before training, then train")
        scores = self.scores()
        bounds = {
            stat: one_run_bounds(
                scores[stat],
                self._included,
                delta=d,
                confidence_level=level,
                selection=selection,
                split_fraction=split_fraction,
                max_points=max_points,
                rng=np.random.SeedSequence(
                    self._bound_seed.entropy, spawn_key=self._bound_seed.spawn_key
                ),
            )
            for stat in STATISTICS
        }
        llr = scores["llr"]
        pair = gaussian_pair_epsilon(llr[self._included], llr[~self._included], d)
        return WhiteBoxRun(
            self._included.size, int(self._included.sum()), self._steps, self._q,
            self._llr_sigma, self._used, self._clip, scores, self._included.copy(), bounds,
            pair, self._seconds,
            None if self._claim_test is None else self._claim_test.result(),
        )  # fmt: skip

    def result(
        self,
        *,
        claims: tuple[Claim, ...] | None = None,
        accountant: Any = None,
        delta: float = 1e-5,
        confidence_level: float = 0.95,
        selection: str = "split",
        split_fraction: float = 0.5,
        max_points: int = 500,
    ) -> AuditResult:
        """The :class:`~dpaudit.AuditResult` of the run (workflow ``"dp-sgd"``): the one-run
        bounds of both statistics and the Gaussian-pair estimate, beside the claim.

        Args:
            claims: the claims to show (primary first); or
            accountant: an Opacus accountant (``privacy_engine.accountant``): its ε at δ.
            delta, confidence_level, selection, split_fraction, max_points: as
                :func:`dpaudit.bounds.one_run_bounds`.

        Raises:
            ValueError: no step observed; both claims and accountant given; bad settings.
        """
        if claims is not None and accountant is not None:
            raise ValueError("give claims or accountant, not both")
        t0 = time.perf_counter()
        run = self.run(delta=delta, confidence_level=confidence_level, selection=selection,
                       split_fraction=split_fraction, max_points=max_points)  # fmt: skip
        d, level = float(delta), float(confidence_level)
        if accountant is not None:
            claims = (_accountant_claim(accountant, d),)
        entries = whitebox_entries(run, tuple(claims or ()), level, d)
        settings = {
            "num_canaries": run.num_canaries, "sampling_rate": run.sampling_rate,
            "noise_multiplier": "estimate" if self._sigma is None else self._sigma,
            "clipping_norm": run.clipping_norm,
            "delta": d, "confidence_level": level, "selection": selection,
            "split_fraction": split_fraction, "max_points": max_points,
        }  # fmt: skip
        return AuditResult(
            workflow=WORKFLOW,
            entries=tuple(entries),
            settings=settings,
            seed=self._seed.entropy if not self._seed.spawn_key else None,
            timings={
                "bookkeeping": run.bookkeeping_seconds,
                "bounds": time.perf_counter() - t0,
            },
            versions=package_versions("torch", "opacus"),
            detail=run,
            note=(
                "White-box one-run audit: m Dirac canary gradients in free coordinates, "
                "Poisson-sampled and noised as the optimizer does. Each 'or', 'or-fdp' and "
                "'max' bound is valid at its confidence level for this one training run, the "
                "number of guesses paid for; 'llr:gaussian-pair' is an estimate, not a bound."
            ),
        )


def _accountant_claim(accountant: Any, delta: float) -> Claim:
    """The claim of an Opacus accountant: its ε at δ for the steps it recorded."""
    name = str(accountant.mechanism()).upper()
    eps = float(accountant.get_epsilon(delta))
    return Claim(f"opacus ({name})", f"Opacus {name} accountant, as configured by the user",
                 eps, delta)  # fmt: skip
