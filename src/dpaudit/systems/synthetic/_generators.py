"""DP synthetic-data generators as systems under audit, run as installed, out of process.

Each generator is a :class:`GeneratorSpec` in :data:`GENERATORS` (and a system in
:data:`dpaudit.systems.SYSTEMS`, tag ``"synthetic-data"``): a library (an
:class:`~dpaudit.systems._external.ExternalLibrary` with its own environment), the library's
name for the generator, and how it is configured. :class:`SyntheticGenerator` is the system:
it validates a table against the public :class:`TabularDomain` before anything runs, runs the
generator many times per worker process (:meth:`SyntheticGenerator.fit_runs`) and states the
library's claim.

The generators (ρ-zCDP by their analyses, calibrated from (ε, δ) with the library's own
conversion, ``cdp_rho``; MWEM pure ε-DP):

* ``smartnoise-mst`` — MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest: A
  scalable and general approach to differentially private synthetic data",
  arXiv:2108.04978): ρ/3 on every one-way marginal (Gaussian), ρ/3 on choosing a maximum
  spanning tree of two-way marginals (exponential mechanism, ε = √(8ρ/3/(r−1)) per edge),
  ρ/3 on the chosen two-way marginals (Gaussian);
* ``smartnoise-aim`` — AIM (McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and
  Iterative Mechanism for Differentially Private Synthetic Data", arXiv:2201.12677): one-way
  marginals, then rounds that each spend 0.1 of their budget on choosing a marginal
  (exponential mechanism) and 0.9 on measuring it (Gaussian);
* planted bugs (in the worker, on the installed library): ``*-quiet-noise`` — the Gaussian
  noise's standard deviation scaled by 0.1 while the library states the original σ and
  claims the original (ε, δ);
* ``smartnoise-mwem`` — MWEM (Hardt, Ligett & McSherry 2012, "A simple and practical
  algorithm for differentially private data release", arXiv:1012.4763; :class:`MWEMGenerator`,
  pure ε-DP): T rounds (default ⌈log₁₀ n⌉ · 10), each choosing a cuboid (a one- or two-way
  marginal) from a pool of 2T by the exponential mechanism with ε/(2T) and measuring its cells
  with Laplace noise of scale 2T/ε, then multiplicative weights; as installed, given the
  public domain, each histogram axis still spans ``[min, max]`` of the *private* column and T
  reads the private row count n (two violations); ``smartnoise-mwem-public-domain`` — the fix
  (the control): the histogram over the public domain and T = 3 (a public setting);
  ``smartnoise-mwem-quiet-noise`` — the fix with the Laplace scale 0.1× what it states (the
  planted bug);
* ``dpmm-mst``, ``dpmm-aim`` — the same two algorithms as dpmm 0.1.9 implements them
  (``MSTPipeline`` / ``AIMPipeline``, pre-processing disabled, the table as category codes);
* ``dpmm-aim-one-way`` — dpmm's AIM with the one-way marginals as its workload (library
  settings: degree 1, 3 rounds, no compression): 0.99 of ρ on Gaussian one-way marginals,
  the setting of the dpmm authors' own audit (Ganev, Annamalai & Kulynych 2026,
  arXiv:2604.18352) as far as the installed library allows it;
* known violations: ``dpmm-mst-data-domain`` — dpmm given no domain takes each column's size
  from the private data; ``smartnoise-mst-inferred-domain`` — no public domain given, so
  smartnoise infers each column's categories from the private data without spending budget
  (the violation class of Annamalai, Ganev & De Cristofaro 2024, arXiv:2405.10994, §6);
  ``smartnoise-mst-library-rows`` / ``smartnoise-aim-library-rows`` — the synthetic table
  sampled at the library's default size, ``sample()`` with no argument, which is the private
  table's exact row count (smartnoise keeps ``len(data)`` as ``num_rows``), released without
  noise although the marginals' noise is calibrated to add/remove neighbours.
* ``smartnoise-dpctgan``, ``smartnoise-patectgan`` — smartnoise-synth's GANs
  (:class:`GANGenerator`, an (ε, δ) claim from the library's own accountant; library
  ``smartnoise-gan``, ``make venv-smartnoise-gan``: opacus 0.14 on torch), and their planted
  bugs ``*-quiet-noise`` (the noise drawn 0.1× what the accountant is given);
  ``smartnoise-dpgan``, ``smartnoise-pategan`` — its DPGAN and PATEGAN, the same way (black
  box and the accountant's record only), with their ``*-quiet-noise``.

The claim of every entry but MWEM's (pure ε: (ε, 0)) is the library's (ε, δ) and, beside it,
the Gaussian-DP μ that its ρ implies (μ = √(2ρ): a ρ-zCDP mechanism built of Gaussians is μ-GDP
with that μ; Bun & Steinke 2016, arXiv:1605.02065, Prop. 1.6; Dong, Roth & Su 2022,
arXiv:1905.02383); MWEM's, the μ = 2Φ⁻¹(e^ε/(1 + e^ε)) pure ε-DP implies.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any, ClassVar

import numpy as np

from dpaudit._registry import Registry
from dpaudit._results import Claim
from dpaudit._validate import check_array, check_delta, check_positive, check_positive_int
from dpaudit.systems._external import ExternalLibrary, ExternalWorker
from dpaudit.systems._protocols import SYSTEMS, SystemFactory
from dpaudit.systems.synthetic._inprocess import InProcessLibrary

__all__ = [
    "GAN_GENERATORS",
    "GENERATORS",
    "LIBRARIES",
    "OBSERVABLES",
    "SYSTEM_TAG",
    "GANGenerator",
    "GeneratorCell",
    "GeneratorRuns",
    "GeneratorSpec",
    "MWEMGenerator",
    "PureEpsilonGenerator",
    "SyntheticGenerator",
    "TabularDomain",
]

#: What a run can report: noisy marginals, exponential-mechanism choices, the synthetic
#: table, or (alone) the one-way marginals that show the domain measured over; DPCTGAN's and
#: DPGAN's released noisy gradients (``"gradients"``, given the adversary's target); PATECTGAN's
#: student's steps, its teachers' among them (``"student"``, given the adversary's target);
#: DPCTGAN's and PATECTGAN's conditional-vector category of each row of the synthetic table
#: (``"conditions"``); those DPCTGAN's generator steps train on (``"training-conditions"``);
#: PATEGAN's noisy labels with its teachers' votes on every dataset sent (``"votes"``); and a
#: GAN's accountant record alone (``"accounting"``: its steps).
OBSERVABLES: tuple[str, ...] = ("measurements", "selections", "synthetic", "domain", "gradients",
                                 "student", "conditions", "votes", "accounting",
                                 "training-conditions")  # fmt: skip
#: The tag a generator's system entry carries (``SYSTEMS.names(tag=...)``).
SYSTEM_TAG = "synthetic-data"
_HERE = Path(__file__).resolve().parent

#: The libraries, by environment name: out of process, and (DataSynthesizer, added by
#: :mod:`._privbayes`) in this process as an extra of the package.
LIBRARIES: dict[str, ExternalLibrary | InProcessLibrary] = {
    "smartnoise": ExternalLibrary("smartnoise", "smartnoise-synth",
                                  str(_HERE / "_handler_smartnoise.py"), "venv-smartnoise"),
    "dpmm": ExternalLibrary("dpmm", "dpmm", str(_HERE / "_handler_dpmm.py"), "venv-dpmm"),
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class TabularDomain:
    """The public domain of a categorical table: column ``j`` takes values ``0 … k_j − 1``.

    Attributes:
        cardinalities: ``k_j`` per column (each ≥ 2).

    Example:
        >>> TabularDomain((2, 3)).check([[0, 2], [1, 0]]).shape
        (2, 2)
        >>> TabularDomain((2, 3)).check([[0, 3]])
        Traceback (most recent call last):
        ...
        ValueError: data has values outside the declared domain: column 1 holds 3, ...
    """

    cardinalities: tuple[int, ...]

    def __post_init__(self) -> None:
        cards = tuple(self.cardinalities)
        if not cards:
            raise ValueError("cardinalities must name at least one column, got ()")
        for j, k in enumerate(cards):
            if check_positive_int(f"cardinalities[{j}]", k) < 2:
                raise ValueError(f"cardinalities[{j}] must be at least 2, got {k}")
        object.__setattr__(self, "cardinalities", tuple(int(k) for k in cards))

    @property
    def columns(self) -> int:
        """The number of columns."""
        return len(self.cardinalities)

    def check(self, data: Any, name: str = "data") -> np.ndarray:
        """``data`` as an int64 array of shape (rows, columns), every value in the domain.

        Raises:
            TypeError: strings, booleans, complex numbers or other objects instead of codes.
            ValueError: wrong shape, NaN/inf, non-integer values, or a value outside the
                domain (the message names the column and the value).
        """
        a = check_array(name, data, allow_empty=True)
        if a.ndim != 2 or a.shape[1] != self.columns or a.shape[0] < 1:
            raise ValueError(
                f"{name} must be a (rows, {self.columns}) table with rows ≥ 1, got shape {a.shape}"
            )
        if not np.all(a == np.round(a)):
            raise ValueError(f"{name} must hold integer category codes, got a fraction")
        for j, k in enumerate(self.cardinalities):
            bad = (a[:, j] < 0) | (a[:, j] >= k)
            if bad.any():
                raise ValueError(
                    f"{name} has values outside the declared domain: column {j} holds "
                    f"{int(a[bad, j][0])}, its domain is 0..{k - 1}"
                )
        return a.astype(np.int64)


@dataclasses.dataclass(frozen=True)
class GeneratorSpec:
    """One registered generator: the library, its generator and how it is configured.

    Attributes:
        name: registry name (``"smartnoise-mst"``).
        library: the environment's name in :data:`LIBRARIES`.
        synth: the library's name for the generator (``"mst"``).
        title: one line.
        source: the generator's paper (authors, year, arXiv id).
        bug: what deviates from the analysed algorithm (None: the library as installed).
        noise_scale: factor on the standard deviation of the library's Gaussian noise (for
            PrivBayes: the scale of its Laplace noise; 1: as installed; 0.1: the planted bug).
        public_domain: whether the public domain is passed to the library (False: the
            library infers it from the private data — a known violation).
        options: the library's own settings, passed to its constructor.
        white_box: what the worker reports (``"measurements"``, ``"selections"``; DPCTGAN's
            ``"gradients"``; PATECTGAN's ``"student"``).
        library_rows: the synthetic table is sampled at the library's default size (True)
            instead of the size the audit asks for.
    """

    name: str
    library: str
    synth: str
    title: str
    source: str
    bug: str | None = None
    noise_scale: float = 1.0
    public_domain: bool = True
    options: tuple[tuple[str, Any], ...] = ()
    white_box: tuple[str, ...] = ("measurements", "selections")
    library_rows: bool = False


@dataclasses.dataclass(frozen=True)
class GeneratorCell:
    """The settings cell of a generator (``SYSTEMS.get(name)(cell)``).

    Attributes:
        generator: the :data:`GENERATORS` name.
        epsilon: ε of the claim the library is configured with.
        delta: δ of the claim.
        options: the library's own settings beside the spec's (e.g. ``(("rounds", 8),)``
            for AIM), a tuple of ``(name, value)`` pairs; one the spec fixes to another
            value is refused.
    """

    generator: str
    epsilon: float
    delta: float
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        spec = GENERATORS.get(self.generator)
        check_positive("epsilon", self.epsilon)
        check_delta(self.delta, allow_zero=False)
        object.__setattr__(self, "options", tuple((str(k), v) for k, v in self.options))
        fixed = dict(spec.options)
        for k, v in self.options:
            if k in fixed and fixed[k] != v:
                raise ValueError(f"options sets {k}={v!r}, but {self.generator} fixes "
                                 f"{k}={fixed[k]!r} (its registry entry)")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class GeneratorRuns:
    """What a batch of runs returned.

    Attributes:
        runs: one dict per run (``"measurements"``, ``"selections"``, ``"seconds"``: the fit's
            time inside the worker), in the order asked.
        synthetic: the synthetic tables (one per run) when sampled, else None.
        rho: the library's ρ for the claimed (ε, δ).
        version: the library's version.
        wall_seconds: wall time of the batch in this process (worker start included).
        startup_seconds: the worker's start-up time (0 when a running worker was passed).
    """

    runs: tuple[dict, ...]
    synthetic: tuple[np.ndarray, ...] | None
    rho: float
    version: str | None
    wall_seconds: float
    startup_seconds: float


class SyntheticGenerator:
    """A DP synthetic-data generator under audit (the module docstring lists them).

    Args:
        cell: :class:`GeneratorCell`.
    """

    def __init__(self, cell: GeneratorCell) -> None:
        GeneratorCell.__post_init__(cell)  # a cell changed after it was built is refused too
        self.cell = cell
        self.spec: GeneratorSpec = GENERATORS.get(cell.generator)
        self.library: ExternalLibrary | InProcessLibrary = LIBRARIES[self.spec.library]

    @property
    def name(self) -> str:
        """The registered name."""
        return self.spec.name

    @property
    def mechanism(self) -> str:
        """The mechanism, in words."""
        return f"{self.spec.synth.upper()} ({self.library.distribution}), ρ-zCDP"

    @property
    def bug(self) -> str | None:
        """What deviates from the analysed algorithm (None: as installed)."""
        return self.spec.bug

    def claim(self, orders: Any = None, *, delta: float | None = None, rho: float | None = None
              ) -> Claim:  # fmt: skip
        """The library's claim: (ε, δ) as configured (``delta`` must be the cell's if given).

        Args:
            orders: unused (the libraries state (ε, δ) and ρ, not an RDP curve).
            delta: δ of the claim (default the cell's).
            rho: the library's ρ for (ε, δ), when known (from a run): recorded in the source.
        """
        if delta is not None and not math.isclose(delta, self.cell.delta):
            raise ValueError(f"delta={delta} is not the δ the generator claims ({self.cell.delta})")
        extra = "" if rho is None else f"; ρ = {rho:.6g} (the library's cdp_rho)"
        return Claim("library (ε, δ)", f"{self.spec.source}{extra}", self.cell.epsilon,
                     self.cell.delta)  # fmt: skip

    @staticmethod
    def implied_mu(rho: float) -> float:
        """μ = √(2ρ): the Gaussian-DP parameter of a ρ-zCDP composition of Gaussians (Bun &
        Steinke 2016, arXiv:1605.02065, Prop. 1.6; Dong, Roth & Su 2022, arXiv:1905.02383).

        Example:
            >>> round(SyntheticGenerator.implied_mu(0.10341283143348307), 4)
            0.4548
        """
        return math.sqrt(2.0 * check_positive("rho", rho))

    def check_inputs(self, datasets: Sequence[Any], domain: TabularDomain) -> list[np.ndarray]:
        """Every dataset checked against the public domain (before any run).

        Raises:
            ValueError: a table outside the domain or of the wrong shape.
            MissingDependencyError: the library's environment is not built (names the make
                target).
        """
        if not isinstance(domain, TabularDomain):
            raise TypeError(f"domain must be a TabularDomain, got {type(domain).__name__}")
        out = [domain.check(d, f"datasets[{i}]") for i, d in enumerate(datasets)]
        self.library.python()
        return out

    def fit_runs(
        self,
        datasets: Sequence[Any],
        which: Sequence[int],
        seeds: Sequence[int],
        *,
        domain: TabularDomain,
        observe: Sequence[str] = ("measurements", "selections"),
        sample_rows: int = 0,
        worker: ExternalWorker | None = None,
        target: Sequence[int] | None = None,
    ) -> GeneratorRuns:
        """Run the generator once per entry of ``which`` (the index of the dataset it is
        fitted on) with library seed ``seeds[i]``, in one worker process.

        Args:
            datasets: the tables (rows × columns of category codes).
            which: per run, the index of its dataset.
            seeds: per run, the seed of numpy's generator in the worker (the library's
                exponential mechanism and sampler; its Gaussian noise comes from OpenDP,
                which draws from the operating system and cannot be seeded).
            domain: the public domain (checked here, before the worker starts).
            observe: of :data:`OBSERVABLES` — ``"measurements"``, ``"selections"``,
                ``"synthetic"``, or ``"domain"`` alone (the one-way measurements, the run
                stopped after them).
            sample_rows: rows of each synthetic table (with ``"synthetic"``).
            worker: a running worker of this library (default: one started for the batch).
            target: the adversary's target row, for a white-box view that reads the runs
                through it (DPCTGAN's ``"gradients"``: each run's ``"gradients"`` record then
                holds the arrays ``noisy`` and ``direction``; PATECTGAN's ``"student"``: its
                ``"student"`` record the arrays ``norm2`` and ``residual2``;
                :class:`GANGenerator`).

        Raises:
            ValueError: a table outside the domain, mismatched ``which``/``seeds``.
            MissingDependencyError: the environment is not built (names the make target).
        """
        tables = self.check_inputs(datasets, domain)
        which = [int(w) for w in which]
        seeds = [int(s) for s in seeds]
        if len(which) != len(seeds):
            raise ValueError(f"which and seeds must have one entry per run, got "
                             f"{len(which)} and {len(seeds)}")  # fmt: skip
        for w in which:
            if not 0 <= w < len(tables):
                raise ValueError(f"which holds {w}, not the index of one of {len(tables)} datasets")
        for o in observe:
            if o not in OBSERVABLES:
                raise ValueError(f"observe holds {o!r}: {' | '.join(OBSERVABLES)}")
        body = {
            "synth": self.spec.synth, "epsilon": self.cell.epsilon, "delta": self.cell.delta,
            "cardinalities": list(domain.cardinalities), "observe": list(observe),
            "options": dict(self.spec.options + self.cell.options),
            "sample_rows": int(sample_rows), "noise_scale": self.spec.noise_scale,
            "public_domain": self.spec.public_domain, "library_rows": self.spec.library_rows,
            "runs": [{"dataset": w, "seed": s} for w, s in zip(which, seeds, strict=True)],
        }  # fmt: skip
        if target is not None:
            body["target"] = domain.check([target], "target")[0].tolist()
        arrays = {f"data{i}": t for i, t in enumerate(tables)}
        t0 = time.perf_counter()
        own = worker is None
        w = self.library.start() if own else worker
        try:
            out, out_arrays = w.call("fit", body, arrays)
            startup = w.startup_seconds if own else 0.0
            version = w.version
        finally:
            if own:
                w.close()
        syn = None
        if "synthetic" in observe and sample_rows:
            syn = tuple(out_arrays[f"synthetic{i}"] for i in range(len(which)))
        _attach_arrays(out["runs"], out_arrays)
        return GeneratorRuns(tuple(out["runs"]), syn, float(out["rho"]), version,
                             time.perf_counter() - t0, startup)  # fmt: skip


#: The arrays a GAN worker returns per run beside its record: ``view: (field, array prefix)``.
_RUN_ARRAYS = {
    "gradients": (("noisy", "noisy"), ("direction", "direction")),
    "student": (("norm2", "norm2"), ("residual2", "residual2")),
    "conditions": (("categories", "conditions"),),
    "training-conditions": (("categories", "tconditions"),),
    "votes": (("votes", "votes"), ("labels", "labels")),
}


def _attach_arrays(runs: Sequence[dict], arrays: dict) -> None:
    """Put each run's white-box arrays (``arrays[f"{prefix}{i}"]``) into its view's record."""
    for i, run in enumerate(runs):
        for view, fields in _RUN_ARRAYS.items():
            if view in run:
                run[view].update({field: arrays[f"{prefix}{i}"] for field, prefix in fields})


class PureEpsilonGenerator(SyntheticGenerator):
    """A generator whose library claims pure ε-DP, (ε, 0): the μ beside the claim is the
    Gaussian-DP that pure ε-DP implies. Subclasses name the mechanism (``MECHANISM``) and how
    the library splits ε (``BUDGET``)."""

    #: the mechanism's name in :attr:`mechanism`
    MECHANISM = ""
    #: how the library spends ε, for the claim's source
    BUDGET = ""
    #: where the μ beside the claim comes from
    IMPLIED_MU_SOURCE = (
        "μ = 2Φ⁻¹(e^ε/(1 + e^ε)), the smallest μ with G_μ ≤ f_(ε,0), which pure ε-DP implies "
        "(Dong, Roth & Su 2022, arXiv:1905.02383, trade-off functions of (ε, 0)-DP); ε at δ "
        "of μ-GDP (ibid., Cor. 2.13)"
    )

    @property
    def mechanism(self) -> str:
        """The mechanism, in words."""
        return f"{self.MECHANISM} ({self.library.distribution}), pure ε-DP (Laplace + exponential)"

    def claim(self, orders: Any = None, *, delta: float | None = None, rho: float | None = None
              ) -> Claim:  # fmt: skip
        """The library's claim, pure ε-DP: (ε, 0), which holds at every δ.

        Args:
            orders: unused.
            delta: unused (a pure-DP claim holds at every δ).
            rho: unused (recorded by the run as ε²/2, the zCDP pure ε-DP implies).
        """
        return Claim("library ε (pure ε-DP)", f"{self.spec.source}; {self.BUDGET}",
                     self.cell.epsilon, 0.0)  # fmt: skip

    def implied_mu(self, rho: float) -> float:  # type: ignore[override]
        """μ-GDP implied by the pure ε-DP claim: 2Φ⁻¹(e^ε/(1 + e^ε)) (the trade-off function
        of (ε, 0)-DP lies above G_μ iff it does at its kink α = 1/(1 + e^ε); Dong, Roth & Su
        2022, arXiv:1905.02383). ``rho`` is unused."""
        e = self.cell.epsilon
        return 2.0 * NormalDist().inv_cdf(1.0 / (1.0 + math.exp(-e)))


class MWEMGenerator(PureEpsilonGenerator):
    """smartnoise-synth's MWEM: a pure ε-DP claim (the module docstring).

    Example:
        >>> g = MWEMGenerator(GeneratorCell("smartnoise-mwem", 1.0, 1e-2))
        >>> c = g.claim()
        >>> (c.epsilon, c.delta)
        (1.0, 0.0)
        >>> round(g.implied_mu(0.5), 4)  # 2 Φ⁻¹(e/(1 + e))
        1.232
    """

    MECHANISM = "MWEM"
    BUDGET = ("per iteration ε/(2T) on the exponential mechanism and ε/(2T) on the "
              "Laplace-noised cuboid")  # fmt: skip


GENERATORS: Registry[GeneratorSpec] = Registry("synthetic-data generator")

_MST = ("McKenna, Miklau & Sheldon 2021, MST (arXiv:2108.04978), as smartnoise-synth 1.0.8 "
        "implements it on mbi")  # fmt: skip
_AIM = ("McKenna, Mullins, Sheldon & Miklau 2022, AIM (arXiv:2201.12677), as smartnoise-synth "
        "1.0.8 implements it on mbi")  # fmt: skip
_DPMM_MST = ("McKenna, Miklau & Sheldon 2021, MST (arXiv:2108.04978), as dpmm 0.1.9 implements "
             "it (its own copy of private-pgm)")  # fmt: skip
_DPMM_AIM = ("McKenna, Mullins, Sheldon & Miklau 2022, AIM (arXiv:2201.12677), as dpmm 0.1.9 "
             "implements it")  # fmt: skip
#: dpmm's AIM given the one-way marginals as its workload (its own settings ``degree = 1``,
#: ``rounds = 3``, ``compress = False``; ``n_iters = 50`` iterations of the model fit its
#: selection scores are read from, post-processing of its measurements): on 3 columns it spends
#: 0.9ρ on the three one-way marginals at once and the remaining 0.1ρ on one more round, so its
#: noisy marginals carry 0.99 of ρ — the closest the installed library comes to the one-way-only
#: MST of Ganev, Annamalai & Kulynych 2026 (arXiv:2604.18352), which hard-codes σ = 1/√(2ρ).
_ONE_WAY = (("degree", 1), ("rounds", 3), ("compress", False), ("n_iters", 50))
_MWEM = ("Hardt, Ligett & McSherry 2012, MWEM (arXiv:1012.4763), as smartnoise-synth 1.0.8 "
         "implements it")  # fmt: skip
#: The fix of MWEM's two data-dependent settings: the histogram over the public domain (handler
#: option ``histogram``) and a public iteration count (the library's ``iterations``; its
#: default, ⌈log₁₀ n⌉ · 10, reads the private row count n). 3 rounds: with the default query
#: pool of 2 × 3 cuboids, on 3 columns the 6 one- and two-way marginals, each chosen at most
#: once; each round spends ε/6 (ε/6 · ½ choosing, ε/6 · ½ measuring, Laplace scale 6/ε).
_MWEM_PUBLIC = (("histogram", "public"), ("iterations", 3))
_QUIET_LAPLACE = "the Laplace noise's scale is 0.1× what the library states and accounts"
_QUIET = "the Gaussian noise's standard deviation is 0.1× what the library states and accounts"
_ROWS = ("sample() with no argument returns the private table's exact row count (len(data), "
         "kept as num_rows) without noise, while the noise is calibrated to add/remove "
         "neighbours")  # fmt: skip

for _spec in (
    GeneratorSpec("smartnoise-mst", "smartnoise", "mst", "MST (smartnoise-synth)", _MST),
    GeneratorSpec("smartnoise-aim", "smartnoise", "aim", "AIM (smartnoise-synth)", _AIM),
    GeneratorSpec("smartnoise-mst-quiet-noise", "smartnoise", "mst",
                  "MST with its noise scaled down 10× (planted bug)", _MST, bug=_QUIET,
                  noise_scale=0.1),
    GeneratorSpec("smartnoise-aim-quiet-noise", "smartnoise", "aim",
                  "AIM with its noise scaled down 10× (planted bug)", _AIM, bug=_QUIET,
                  noise_scale=0.1),
    GeneratorSpec("smartnoise-mst-inferred-domain", "smartnoise", "mst",
                  "MST with the categories inferred from the private data (known violation)",
                  _MST, bug="no public domain: smartnoise's transformer reads each column's "
                  "categories from the private data without spending budget",
                  public_domain=False),
    GeneratorSpec("smartnoise-mst-library-rows", "smartnoise", "mst",
                  "MST sampled at the library's default size (known violation)", _MST,
                  bug=_ROWS, library_rows=True),
    GeneratorSpec("smartnoise-aim-library-rows", "smartnoise", "aim",
                  "AIM sampled at the library's default size (known violation)", _AIM,
                  bug=_ROWS, library_rows=True),
    GeneratorSpec("smartnoise-mwem", "smartnoise", "mwem", "MWEM (smartnoise-synth)", _MWEM),
    GeneratorSpec("smartnoise-mwem-public-domain", "smartnoise", "mwem",
                  "MWEM with its histogram over the public domain and a public iteration count "
                  "(the fix; control)", _MWEM, options=_MWEM_PUBLIC),
    GeneratorSpec("smartnoise-mwem-quiet-noise", "smartnoise", "mwem",
                  "MWEM (the fix) with its noise scaled down 10× (planted bug)", _MWEM,
                  bug=_QUIET_LAPLACE, noise_scale=0.1, options=_MWEM_PUBLIC),
    GeneratorSpec("dpmm-mst", "dpmm", "mst", "MST (dpmm)", _DPMM_MST),
    GeneratorSpec("dpmm-aim", "dpmm", "aim", "AIM (dpmm)", _DPMM_AIM),
    GeneratorSpec("dpmm-aim-one-way", "dpmm", "aim",
                  "AIM (dpmm) on a one-way workload: degree 1, 3 rounds, no domain compression "
                  "(library settings)", _DPMM_AIM, options=_ONE_WAY),
    GeneratorSpec("dpmm-mst-quiet-noise", "dpmm", "mst",
                  "dpmm MST with its noise scaled down 10× (planted bug)", _DPMM_MST, bug=_QUIET,
                  noise_scale=0.1),
    GeneratorSpec("dpmm-mst-data-domain", "dpmm", "mst",
                  "dpmm MST given no domain (known violation)", _DPMM_MST,
                  bug="no domain given: dpmm takes each column's size from the private data "
                  "(max + 1) without spending budget", public_domain=False,
                  white_box=("measurements",)),
):  # fmt: skip
    GENERATORS.register(_spec.name, _spec)
    factory = MWEMGenerator if _spec.synth == "mwem" else SyntheticGenerator
    SYSTEMS.register(_spec.name, SystemFactory(GeneratorCell, factory),
                     tags=(SYSTEM_TAG,))  # fmt: skip


# ------------------------------------------------------------------ smartnoise-synth's GANs
# (an environment of their own: opacus 0.14 and torch beside smartnoise-synth 1.0.8)

LIBRARIES["smartnoise-gan"] = ExternalLibrary(
    "smartnoise-gan", "smartnoise-synth", str(_HERE / "_handler_smartnoise_gan.py"),
    "venv-smartnoise-gan")  # fmt: skip


class GANGenerator(SyntheticGenerator):
    """smartnoise-synth 1.0.8's DPCTGAN, PATECTGAN, DPGAN and PATEGAN: the (ε, δ) the
    library's own accountant trains to.

    * DPCTGAN (Rosenblatt, Liu, Pouyanfar, de Leon, Desai & Allen 2020, "Differentially
      Private Synthetic Data: Applied Evaluations and Enhancements", arXiv:2011.05537; the
      CTGAN of Xu, Skoularidou, Cuesta-Infante & Veeramachaneni 2019, arXiv:1907.00503):
      DP-SGD (Abadi et al. 2016, arXiv:1607.00133) on the discriminator through opacus 0.14
      (noise multiplier ``sigma`` = 5, per-layer clipping at 1, sampling rate batch/n), its
      RDP accountant (Mironov 2017, arXiv:1702.07476) read at δ before each epoch; it stops
      at the first reading above ε, so the last epoch it trains is paid for after the fact;
    * PATECTGAN (ibid.; PATE-GAN of Jordon, Yoon & van der Schaar 2019, ICLR): Laplace noise
      of scale 1/``noise_multiplier`` (1000) on the teachers' votes, PATE's data-dependent
      moments accountant (Papernot, Abadi, Erlingsson, Goodfellow & Talwar 2017,
      arXiv:1610.05755; orders 1 … 100) read before each iteration; it stops at the first
      reading above ε, so it too ends past ε by one iteration's queries;
    * DPGAN (Xie, Lin, Wang, Wang & Zhou 2018, "Differentially Private Generative Adversarial
      Network", arXiv:1802.06739, as smartnoise implements it): opacus 0.14 on a small
      discriminator (noise multiplier 3.5 and flat clipping at 1, both fixed; sampling rate
      batch/n, while its batches are a shuffled pass with ``drop_last``, not Poisson), two
      accounted steps per batch (the generated rows', then the real rows'); it reads ε at δ
      before each epoch and stops at the first reading above ε, as DPCTGAN does;
    * PATEGAN (Jordon, Yoon & van der Schaar 2019, ICLR): teachers and a student that are
      separate networks, ``int(n / 1000)`` teachers (a table of fewer than 1,000 rows is
      refused before any run) on ``np.array_split`` of the rows in order, Laplace noise of
      scale 1000 (fixed) on their votes, the moments accountant of PATECTGAN (its
      data-dependent term carries no log and never binds: every query accrues the
      data-independent 2λ²l(l + 1) at order l, λ = 10⁻³ the inverse Laplace scale), read
      before each iteration; it stops at the first reading
      above ε. The teacher count and the partition boundaries read the private row count:
      adding a row can move a row between every pair of adjacent teachers.

    DPCTGAN's and DPGAN's white-box view (``white_box = ("gradients",)``; threat model
    ``white-box-dpsgd``, :mod:`dpaudit.attacks._synthetic_gan`): given the adversary's target,
    the worker records on every real-row step the released noisy clipped gradient sum of the
    discriminator's first layer on the columns of the target's one-hot coordinates, and the
    target's clipped gradient at that step's parameters — what opacus's accountant covers,
    not which rows were sampled.

    PATEGAN's white-box view (``white_box = ("votes",)``; threat model ``white-box-votes``):
    the noisy label of every generated row the student learns from, and the teachers' vote
    count on it on each dataset sent — the library's teachers on the run's own, shadow
    teachers on the other, trained beside them with the same seeds along the same
    transcript (PATE's analysis lets a teacher be any function of its partition and of
    randomness the adversary may know).

    PATECTGAN's white-box view (``white_box = ("student",)``; threat model
    ``white-box-student``): the student discriminator's training transcript, which PATE-GAN's
    analysis releases (the student learns only from the noisy votes on generated rows). The
    library's student and teachers are one network, so every teacher step is also a step of
    the student: the worker records, per step that moves the student (every teacher step and
    the student's own; with ``networks = "separate"``, the fix, the student's own only), the
    gradient that step applies to the student's first layer on the target's one-hot data
    columns and the part of it that the step's generated rows make, which the adversary
    computes from what it sees.

    Both GANs' ``"conditions"`` view (threat model ``white-box-conditions``): the
    conditional-vector category each row of the synthetic table was generated from, which
    their ``sample()`` reads from the private data (PATECTGAN: a uniformly drawn private
    row's; DPCTGAN: by the private category frequencies). DPCTGAN's ``"training-conditions"``
    (threat model ``white-box-training-conditions``): the category of every conditional
    vector its generator's steps were trained on, drawn by the same private frequencies.

    The claim is the library's ε at the δ it is given; μ beside it is the μ-GDP whose ε at δ
    is that ε (:func:`~dpaudit.conversions.gdp_mu`), a description of the claim's scale (an
    (ε, δ) claim implies no μ-GDP). The library states no ρ (the runs record NaN).

    Example:
        >>> g = GANGenerator(GeneratorCell("smartnoise-dpctgan", 1.0, 1e-2))
        >>> (g.claim().epsilon, g.claim().delta)
        (1.0, 0.01)
        >>> round(g.implied_mu(float("nan")), 4)
        0.5325
    """

    ACCOUNTANTS: ClassVar[dict[str, str]] = {
        "dpctgan": "DP-SGD on the discriminator, opacus 0.14's RDP accountant at δ (read "
        "before each epoch)",
        "patectgan": "PATE's data-dependent moments accountant on the noisy votes (read before "
        "each iteration)",
        "dpgan": "DP-SGD on the discriminator, opacus 0.14's RDP accountant at δ (read before "
        "each epoch; both steps of a batch counted)",
        "pategan": "PATE's moments accountant on the noisy votes of int(n / 1000) teachers "
        "(read before each iteration)",
    }
    #: PATEGAN's teachers: ``int(rows / 1000)``, none under 1,000 rows.
    PATEGAN_ROWS_PER_TEACHER = 1000
    IMPLIED_MU_SOURCE = ("μ whose μ-GDP ε at δ equals the claimed ε (a description: an (ε, δ) "
                         "claim implies no μ-GDP; Dong, Roth & Su 2022, arXiv:1905.02383, "
                         "Cor. 2.13)")  # fmt: skip

    @property
    def mechanism(self) -> str:
        """The mechanism, in words."""
        return (f"{self.spec.synth.upper()} ({self.library.distribution}), "
                f"{self.ACCOUNTANTS[self.spec.synth]}")  # fmt: skip

    def claim(self, orders: Any = None, *, delta: float | None = None, rho: float | None = None
              ) -> Claim:  # fmt: skip
        """The library's claim, (ε, δ) as configured (``delta`` must be the cell's if given).

        Args:
            orders: unused.
            delta: δ of the claim (default the cell's).
            rho: unused (the library states no ρ).
        """
        if delta is not None and not math.isclose(delta, self.cell.delta):
            raise ValueError(f"delta={delta} is not the δ the generator claims ({self.cell.delta})")
        return Claim("library (ε, δ)", f"{self.spec.source}; {self.ACCOUNTANTS[self.spec.synth]}",
                     self.cell.epsilon, self.cell.delta)  # fmt: skip

    def check_inputs(self, datasets: Sequence[Any], domain: TabularDomain) -> list[np.ndarray]:
        """As :meth:`SyntheticGenerator.check_inputs`; PATEGAN's tables also need 1,000 rows
        (its ``int(rows / 1000)`` teachers; with none, ``np.array_split`` fails mid-run).

        Raises:
            ValueError: as there, or a PATEGAN table of fewer than 1,000 rows (named with its
                row count).
        """
        need = self.PATEGAN_ROWS_PER_TEACHER
        if self.spec.synth == "pategan" and isinstance(domain, TabularDomain):
            for i, d in enumerate(datasets):  # before the environment is looked for
                rows = len(domain.check(d, f"datasets[{i}]"))
                if rows < need:
                    raise ValueError(f"datasets[{i}] has {rows} rows: PATEGAN trains int(rows / "
                                     f"{need}) teachers, none on fewer than {need:,} rows"
                                     )  # fmt: skip
        return super().check_inputs(datasets, domain)

    def implied_mu(self, rho: float) -> float:  # type: ignore[override]
        """The μ whose μ-GDP ε at the cell's δ is the cell's ε; ``rho`` is unused."""
        from dpaudit.conversions import gdp_mu

        return gdp_mu(self.cell.epsilon, self.cell.delta)


_DPCTGAN = ("Rosenblatt et al. 2020, DP-CTGAN (arXiv:2011.05537), as smartnoise-synth 1.0.8 "
            "implements it on opacus 0.14")  # fmt: skip
_PATECTGAN = ("Rosenblatt et al. 2020, PATE-CTGAN (arXiv:2011.05537), as smartnoise-synth 1.0.8 "
              "implements it")  # fmt: skip
_DPGAN = ("Xie, Lin, Wang, Wang & Zhou 2018, DPGAN (arXiv:1802.06739), as smartnoise-synth "
          "1.0.8 implements it on opacus 0.14")  # fmt: skip
_PATEGAN = ("Jordon, Yoon & van der Schaar 2019, PATE-GAN (ICLR), as smartnoise-synth 1.0.8 "
            "implements it")  # fmt: skip
_QUIET_SGD = ("the Gaussian noise on the discriminator's gradients is 0.1× what opacus states "
              "and accounts")  # fmt: skip
_QUIET_VOTES = ("the Laplace noise on the teachers' votes is 0.1× what the library states and "
                "accounts")  # fmt: skip

#: The fix of the GANs' ``sample()`` (worker option ``conditions``): each synthetic row's
#: conditional vector drawn from the public domain (a column, then one of its categories,
#: uniformly) instead of read from the private data (PATECTGAN: copied from a uniformly drawn
#: private row; DPCTGAN: drawn by the private category frequencies).
_PUBLIC_CONDITIONS = (("conditions", "public"),)
#: The same fix in DPCTGAN's training (worker option ``training_conditions``).
_PUBLIC_TRAINING = (("training_conditions", "public"),)
_DPCTGAN_VIEWS = ("gradients", "conditions", "training-conditions")
#: The fix of PATECTGAN's shared network (worker option ``networks``): a network of its own
#: for the student and for each teacher, as PATE-GAN's algorithm has them, instead of one
#: network that every teacher step on a real batch also moves as the student.
_SEPARATE_NETWORKS = (("networks", "separate"),)
#: The fix of DPGAN's step count (worker option ``public_rows``): ⌊N/64⌋ batches an epoch of
#: 64 rows drawn without replacement, and the sampling rate 64/N accounted, with N = 1,000 a
#: public row count, instead of ⌊n/64⌋ batches of a shuffled pass and the rate 64/n.
_PUBLIC_ROWS = (("public_rows", 1000),)
#: The fix of DPCTGAN's sampling rate (the same worker option): its accountant given the
#: public row count N = 50 (twin-record's |D|) instead of n, so the epochs it trains no longer
#: read n; its ⌊n/B⌋ batches an epoch still do (its loop reads them).
_PUBLIC_RATE = (("public_rows", 50),)

GAN_GENERATORS: tuple[GeneratorSpec, ...] = (
    GeneratorSpec("smartnoise-dpctgan", "smartnoise-gan", "dpctgan", "DPCTGAN (smartnoise-synth)",
                  _DPCTGAN, white_box=_DPCTGAN_VIEWS),
    GeneratorSpec("smartnoise-dpctgan-quiet-noise", "smartnoise-gan", "dpctgan",
                  "DPCTGAN with its noise scaled down 10× (planted bug)", _DPCTGAN, bug=_QUIET_SGD,
                  noise_scale=0.1, white_box=_DPCTGAN_VIEWS),
    GeneratorSpec("smartnoise-dpctgan-public-conditions", "smartnoise-gan", "dpctgan",
                  "DPCTGAN whose sample() draws its conditions from the public domain (the fix "
                  "of one violation; control)", _DPCTGAN, options=_PUBLIC_CONDITIONS,
                  white_box=_DPCTGAN_VIEWS),
    GeneratorSpec("smartnoise-dpctgan-public-training-conditions", "smartnoise-gan", "dpctgan",
                  "DPCTGAN whose training draws its conditions from the public domain (the fix "
                  "of one violation; control)", _DPCTGAN, options=_PUBLIC_TRAINING,
                  white_box=_DPCTGAN_VIEWS),
    GeneratorSpec("smartnoise-dpctgan-public-rows", "smartnoise-gan", "dpctgan",
                  "DPCTGAN whose accountant is given a public row count, 50 (the fix of one "
                  "violation; control)", _DPCTGAN, options=_PUBLIC_RATE, white_box=_DPCTGAN_VIEWS),
    GeneratorSpec("smartnoise-patectgan", "smartnoise-gan", "patectgan",
                  "PATECTGAN (smartnoise-synth)", _PATECTGAN, white_box=("student", "conditions")),
    GeneratorSpec("smartnoise-patectgan-quiet-noise", "smartnoise-gan", "patectgan",
                  "PATECTGAN with its noise scaled down 10× (planted bug)", _PATECTGAN,
                  bug=_QUIET_VOTES, noise_scale=0.1, white_box=("student", "conditions")),
    GeneratorSpec("smartnoise-patectgan-public-conditions", "smartnoise-gan", "patectgan",
                  "PATECTGAN whose sample() draws its conditions from the public domain (the "
                  "fix of one violation; control)", _PATECTGAN, options=_PUBLIC_CONDITIONS,
                  white_box=("student", "conditions")),
    GeneratorSpec("smartnoise-patectgan-separate-networks", "smartnoise-gan", "patectgan",
                  "PATECTGAN whose student and teachers are networks of their own (the fix of "
                  "one violation; control)", _PATECTGAN, options=_SEPARATE_NETWORKS,
                  white_box=("student", "conditions")),
    GeneratorSpec("smartnoise-dpgan", "smartnoise-gan", "dpgan", "DPGAN (smartnoise-synth)",
                  _DPGAN, white_box=("gradients",)),
    GeneratorSpec("smartnoise-dpgan-quiet-noise", "smartnoise-gan", "dpgan",
                  "DPGAN with its noise scaled down 10× (planted bug)", _DPGAN, bug=_QUIET_SGD,
                  noise_scale=0.1, white_box=("gradients",)),
    GeneratorSpec("smartnoise-dpgan-public-rows", "smartnoise-gan", "dpgan",
                  "DPGAN whose batches and sampling rate come from a public row count (the fix "
                  "of one violation; control)", _DPGAN, options=_PUBLIC_ROWS,
                  white_box=("gradients",)),
    GeneratorSpec("smartnoise-pategan", "smartnoise-gan", "pategan",
                  "PATEGAN (smartnoise-synth)", _PATEGAN, white_box=("votes",)),
    GeneratorSpec("smartnoise-pategan-quiet-noise", "smartnoise-gan", "pategan",
                  "PATEGAN with its noise scaled down 10× (planted bug)", _PATEGAN,
                  bug=_QUIET_VOTES, noise_scale=0.1, white_box=("votes",)),
)  # fmt: skip
for _spec in GAN_GENERATORS:
    GENERATORS.register(_spec.name, _spec)
    SYSTEMS.register(_spec.name, SystemFactory(GeneratorCell, GANGenerator), tags=(SYSTEM_TAG,))
