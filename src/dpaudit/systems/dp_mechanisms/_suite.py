"""The DP-Sniper benchmark suite, re-implemented from the published definitions.

Twenty mechanisms of the evaluation of DP-Sniper (Bichsel, Steffen, Bogunovic & Vechev 2021,
"DP-Sniper: Black-Box Discovery of Differential Privacy Violations using Classifiers", IEEE
S&P), each at the paper's default ε = 0.1 and with the parameters of its evaluation
(``c = 1`` positive answers for the sparse vector variants, threshold ``T = 1``, or 0.5 for
SVT1; SVT34-parallel keeps DP-Sniper's defaults ``c = 2, T = 1``). Definitions come from:

* Report noisy max 1–4 and noisy histograms 1–2: Ding, Wang, Wang, Zhang & Kifer 2018,
  "Detecting Violations of Differential Privacy" (StatDP), CCS, Algs. 5–10.
* Sparse vector 1–6: Lyu, Su & Li 2017, "Understanding the Sparse Vector Technique for
  Differential Privacy", PVLDB 10(6), arXiv:1603.01699, Algs. 1–6 (Alg. 1 and 2 are ε-DP,
  Alg. 4 is ((1+6c)/4)·ε-DP, Algs. 3, 5, 6 are not ε-DP; Table 1 and §4).
* Truncated geometric: Balcer & Vadhan 2018, "Differential Privacy on Finite Computers",
  arXiv:1709.05396, Alg. 4.8 (GeoSample), ε = ln(1 + 2^-k) with k = ⌈ln(2/ε)⌉ (Thm. 4.7).
* RAPPOR and one-time RAPPOR: Erlingsson, Pihur & Korolova 2014, "RAPPOR", CCS, steps 1–3
  (ε∞ = 2h·ln((1 − f/2)/(f/2)) for the permanent response, ε₁ = h·ln(q*(1−p*)/(p*(1−q*)))
  for one report).
* Prefix sum and numerical SVT: Wang, Ding, Wang, Kifer & Zhang 2019, "Proving Differential
  Privacy with Shadow Execution", PLDI.
* Laplace: Dwork, McSherry, Nissim & Smith 2006, TCC.

Every sampler draws ``size`` outputs at once from one ``numpy.random.Generator``; outputs are
float arrays of shape ``(size, k)`` with DP-Sniper's encodings (SVT: 1 = above, 0 = below,
−1 = aborted; SVT3: noisy value, −1000 = below, −2000 = aborted).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math

import numpy as np

from dpaudit.systems.dp_mechanisms._spec import MECHANISMS, MechanismSpec

__all__ = [
    "geometric_pmf",
    "noisy_max_true_epsilon",
    "rappor_bits",
    "rappor_true_epsilon",
    "suite",
]

EPS = 0.1
_STATDP = "Ding, Wang, Wang, Zhang & Kifer 2018 (StatDP), CCS"
_LYU = "Lyu, Su & Li 2017, PVLDB, arXiv:1603.01699"
_SHADOW = "Wang, Ding, Wang, Kifer & Zhang 2019 (ShadowDP), PLDI"
_RAPPOR = "Erlingsson, Pihur & Korolova 2014 (RAPPOR), CCS"


def _lap(rng: np.random.Generator, scale: float, shape) -> np.ndarray:
    """Laplace(0, ``scale``) noise as ``scale·(E₁ − E₂)`` with E₁, E₂ i.i.d. standard
    exponential: the same distribution as ``rng.laplace`` (the difference of two i.i.d.
    exponentials is Laplace; Kotz, Kozubowski & Podgórski 2001, "The Laplace Distribution and
    Generalizations", Birkhäuser, Ch. 2, representations of the classical Laplace law), about
    three times faster (numpy's exponential sampler is a ziggurat, its Laplace sampler takes
    a logarithm per draw)."""
    e1 = rng.standard_exponential(shape)
    e1 -= rng.standard_exponential(shape)
    e1 *= scale
    return e1


# ------------------------------------------------------------------------- additive noise


def _laplace(eps: float):
    def sample(db, size, rng):
        return db[None, :] + _lap(rng, 1.0 / eps, (size, db.size))

    return sample


def _noisy_hist(scale: float):
    def sample(db, size, rng):
        return db[None, :] + _lap(rng, scale, (size, db.size))

    return sample


def _laplace_parallel(eps_each: float, copies: int):
    def sample(db, size, rng):
        return db[0] + _lap(rng, 1.0 / eps_each, (size, copies))

    return sample


def _laplace_parallel_llr(eps_each: float):
    """``ln p_{a′}(o)/p_a(o)`` of ``copies`` independent Laplace(1/ε) releases of ``db[0]``
    (Dwork, McSherry, Nissim & Smith 2006, TCC, Laplace density):
    ``Σⱼ ε·(|oⱼ − a₀| − |oⱼ − a′₀|)``."""

    def llr(outputs, a, b):
        o = np.asarray(outputs, dtype=float)
        return eps_each * np.sum(np.abs(o - a[0]) - np.abs(o - b[0]), axis=1)

    return llr


def _prefix_sum(eps: float):
    def sample(db, size, rng):
        return np.cumsum(db[None, :] + _lap(rng, 1.0 / eps, (size, db.size)), axis=1)

    return sample


def _prefix_sum_llr(eps: float):
    """``ln p_{a′}(o)/p_a(o)`` of the prefix sum of Laplace(1/ε)-noised entries (ShadowDP's
    prefix sum, Wang et al. 2019, PLDI): the sums are an invertible linear map of the noisy
    entries ``x = (o₁, o₂ − o₁, …)``, whose Laplace densities (Dwork, McSherry, Nissim & Smith
    2006, TCC) give ``Σⱼ ε·(|xⱼ − aⱼ| − |xⱼ − a′ⱼ|)`` (the Jacobian cancels in the ratio)."""

    def llr(outputs, a, b):
        x = np.diff(np.asarray(outputs, dtype=float), axis=1, prepend=0.0)
        return eps * np.sum(np.abs(x - a[None, :]) - np.abs(x - b[None, :]), axis=1)

    return llr


# ------------------------------------------------------------------------- noisy max


def _noisy_max(eps: float, noise: str, report: str):
    scale = 2.0 / eps

    def sample(db, size, rng):
        shape = (size, db.size)
        z = _lap(rng, scale, shape) if noise == "laplace" else rng.exponential(scale, shape)
        noisy = db[None, :] + z
        out = np.argmax(noisy, axis=1) if report == "index" else np.max(noisy, axis=1)
        return out.astype(float)[:, None]

    return sample


def noisy_max_true_epsilon(epsilon: float) -> float:
    """True ε of report noisy max releasing the index, with Laplace or exponential noise of
    scale 2/ε on queries of sensitivity 1 that may all change (StatDP's Algs. 5 and 6): ε.

    Upper bound: both are ε-DP (Dwork & Roth 2014, "The Algorithmic Foundations of
    Differential Privacy", §3.3, Claim 3.9 with the factor 2 for queries that move in both
    directions; with exponential noise it is the permute-and-flip mechanism, McKenna &
    Sheldon 2020, arXiv:2010.12603, shown identical by Ding, Kifer et al. 2021,
    arXiv:2105.07260). Lower bound: on the pair (1,…,1) → (0,2,…,2) the candidate that goes
    down wins with probabilities whose ratio is exactly e^ε for exponential noise
    (memorylessness) and tends to e^ε for Laplace noise as the gap between the candidates
    grows (the difference of two Laplace variables has exponential tails of rate ε/2 and the
    pair moves it by 2).

    Example:
        >>> noisy_max_true_epsilon(0.1)
        0.1
    """
    return float(epsilon)


# ------------------------------------------------------------------------- sparse vector


def _abort_after(above: np.ndarray, c: int) -> np.ndarray:
    """Mask of answers given after the c-th positive one (SVT stops there)."""
    before = np.cumsum(above, axis=1) - above
    return before >= c


def _svt_flags(eps1: float, eps2_scale: float, c: int, t: float):
    """Lyu et al. Algs. 1 and 4: one threshold noise, query noise of scale ``eps2_scale``."""

    def sample(db, size, rng):
        rho = _lap(rng, 1.0 / eps1, (size, 1))
        nu = _lap(rng, eps2_scale, (size, db.size))
        above = db[None, :] + nu >= rho + t
        out = above.astype(float)
        out[_abort_after(above, c)] = -1.0
        return out

    return sample


def _svt2(eps: float, c: int, t: float):
    """Lyu et al. Alg. 2: the threshold noise is redrawn after every positive answer.

    Only the runs that go on (a positive answer, fewer than ``c`` so far) draw a new
    threshold noise; the others stop answering, so their threshold is never read again."""
    eps1 = eps2 = eps / 2.0

    def sample(db, size, rng):
        rho = _lap(rng, c / eps1, size)
        nu = _lap(rng, 2.0 * c / eps2, (size, db.size))
        out = np.empty((size, db.size))
        count = np.zeros(size, dtype=np.int64)
        for j in range(db.size):
            live = count < c
            above = (db[j] + nu[:, j] >= rho + t) & live
            out[:, j] = np.where(live, above.astype(float), -1.0)
            count += above
            redraw = np.flatnonzero(above & (count < c))
            if redraw.size:
                rho[redraw] = _lap(rng, c / eps1, redraw.size)
        return out

    return sample


def _svt3(eps: float, c: int, t: float):
    """Lyu et al. Alg. 3: the noisy query value is released when above the threshold."""
    eps1 = eps2 = eps / 2.0

    def sample(db, size, rng):
        rho = _lap(rng, 1.0 / eps1, (size, 1))
        noisy = db[None, :] + _lap(rng, c / eps2, (size, db.size))
        above = noisy >= rho + t
        out = np.where(above, noisy, -1000.0)
        out[_abort_after(above, c)] = -2000.0
        return out

    return sample


def _svt5(eps: float, t: float):
    """Lyu et al. Alg. 5: no noise on the queries, no cut-off."""

    def sample(db, size, rng):
        rho = _lap(rng, 2.0 / eps, (size, 1))
        return (db[None, :] >= rho + t).astype(float)

    return sample


def _svt6(eps: float, t: float):
    """Lyu et al. Alg. 6: noise on the queries, no cut-off."""
    eps1 = eps2 = eps / 2.0

    def sample(db, size, rng):
        rho = _lap(rng, 1.0 / eps1, (size, 1))
        nu = _lap(rng, 1.0 / eps2, (size, db.size))
        return (db[None, :] + nu >= rho + t).astype(float)

    return sample


def _svt34(eps: float, c: int, t: float):
    svt3 = _svt3(eps, c, t)
    svt4 = _svt_flags(eps / 4.0, 1.0 / (eps - eps / 4.0), c, t)

    def sample(db, size, rng):
        return np.hstack([svt3(db, size, rng), svt4(db, size, rng)])

    return sample


def _numerical_svt(eps: float, c: int, t: float):
    """Numerical SVT (ShadowDP): a fresh noisy value is released for each positive answer."""

    def sample(db, size, rng):
        rho1 = _lap(rng, 3.0 / eps, (size, 1))
        rho2 = _lap(rng, 6.0 * c / eps, (size, db.size))
        rho3 = _lap(rng, 3.0 * c / eps, (size, db.size))
        above = db[None, :] + rho2 >= t + rho1
        out = np.where(above, db[None, :] + rho3, 0.0)
        out[_abort_after(above, c)] = -1000.0
        return out

    return sample


# ------------------------------------------------------------------------- discrete


@functools.lru_cache(maxsize=64)
def geometric_pmf(count: int, n: int, k: int) -> tuple[float, ...]:
    """Output distribution of GeoSample on ``count`` ∈ [0, n] (Balcer & Vadhan 2018,
    arXiv:1709.05396, Alg. 4.8, step 2's F; computed with exact integers).

    Example:
        >>> round(sum(geometric_pmf(2, 5, 3)), 12)
        1.0
    """
    if not 0 <= count <= n:
        raise ValueError(f"count must be in [0, {n}], got {count!r}")
    b = 2**k + 1
    d = (2 ** (k + 1) + 1) * b ** (n - 1)
    f = []
    for z in range(n + 1):
        if z < count:
            f.append(2 ** (k * (count - z)) * b ** (n - (count - z)))
        elif z < n:
            f.append(d - 2 ** (k * (z - count + 1)) * b ** (n - 1 - (z - count)))
        else:
            f.append(d)
    diffs = [f[0]] + [f[z] - f[z - 1] for z in range(1, n + 1)]
    return tuple(x / d for x in diffs)


def _geometric(eps: float, n: int):
    k = math.ceil(math.log(2.0 / eps))

    def sample(db, size, rng):
        count = round(float(db[0]))
        return rng.choice(n + 1, size=size, p=geometric_pmf(count, n, k)).astype(float)[:, None]

    return sample, k


def _geometric_true_epsilon(n: int, k: int) -> float:
    worst = 0.0
    for c in range(n):
        p, q = np.array(geometric_pmf(c, n, k)), np.array(geometric_pmf(c + 1, n, k))
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    return worst


def rappor_bits(value: float, hashes: int = 4, size: int = 20) -> np.ndarray:
    """Bloom-filter bits of ``value`` (RAPPOR step 1, Erlingsson et al. 2014), with BLAKE2b in
    place of the paper's hash family (any fixed family gives the same privacy analysis).

    Example:
        >>> int(rappor_bits(3).sum()) <= 4
        True
    """
    bits = np.zeros(size)
    for i in range(hashes):
        h = hashlib.blake2b(f"{i}:{int(value)}".encode(), digest_size=8).digest()
        bits[int.from_bytes(h, "little") % size] = 1.0
    return bits


def _rappor(f: float, p: float | None, q: float | None):
    """Permanent randomized response (and, with p, q, the instantaneous one)."""

    def sample(db, size, rng):
        bits = np.broadcast_to(rappor_bits(db[0]), (size, 20))
        u = rng.random((size, 20))
        prr = np.where(u < f / 2, 1.0, np.where(u < f, 0.0, bits))
        if p is None:
            return prr
        v = rng.random((size, 20))
        return (v < np.where(prr == 1.0, q, p)).astype(float)

    return sample


def _rappor_llr(f: float, p: float | None, q: float | None):
    """``ln p_{a′}(o)/p_a(o)`` of a RAPPOR report (Erlingsson, Pihur & Korolova 2014, CCS,
    §3.1): its bits are independent given the Bloom filter, each 1 with probability ``q*`` if
    its Bloom bit is set and ``p*`` if not (``q* = ½f(p+q) + (1−f)q``,
    ``p* = ½f(p+q) + (1−f)p``; ``1 − f/2`` and ``f/2`` for the permanent response alone), so
    the log-ratio is a sum over the bits where the two values' filters differ."""
    if p is None:
        q_star, p_star = 1 - f / 2, f / 2
    else:
        q_star = 0.5 * f * (p + q) + (1 - f) * q
        p_star = 0.5 * f * (p + q) + (1 - f) * p

    def llr(outputs, a, b):
        one_a = np.where(rappor_bits(a[0]) == 1.0, q_star, p_star)
        one_b = np.where(rappor_bits(b[0]) == 1.0, q_star, p_star)
        w1, w0 = np.log(one_b / one_a), np.log((1 - one_b) / (1 - one_a))
        r = np.asarray(outputs, dtype=float)
        return r @ w1 + (1.0 - r) @ w0

    return llr


def _value_pairs(low: int, high: int) -> tuple[tuple[tuple[float], tuple[float]], ...]:
    """Input 0 against every other value of ``low..high``: for a local randomiser such as
    RAPPOR any two values are neighbours (Erlingsson et al. 2014, §3.1), and StatDP's
    patterns (values 0, 1, 2) may miss the pair whose Bloom filters differ most."""
    return tuple(((0.0,), (float(w),)) for w in range(low, high + 1) if w != 0)


def _rappor_claims(f: float, p: float, q: float, h: int = 4) -> tuple[float, float]:
    """(ε∞, ε₁) of RAPPOR (Erlingsson et al. 2014, §3.1)."""
    eps_inf = 2 * h * math.log((1 - f / 2) / (f / 2))
    q_star = 0.5 * f * (p + q) + (1 - f) * q
    p_star = 0.5 * f * (p + q) + (1 - f) * p
    return eps_inf, h * math.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))


def rappor_true_epsilon(
    f: float, p: float | None = None, q: float | None = None, *, low: int = -10, high: int = 10
) -> float:
    """Exact ε of RAPPOR on the integer values ``low..high`` with :func:`rappor_bits`.

    Each report bit depends only on its Bloom bit, independently of the others, so the worst
    log-ratio of a report on values v, v′ is the sum over the bits where their Bloom filters
    differ of that bit's worst log-ratio (Erlingsson, Pihur & Korolova 2014, CCS, §3.1 and
    Thm. 1, which take all 2h bits to differ): ``ln(q*/p*)`` for a bit set only for v and
    ``ln((1 − p*)/(1 − q*))`` for one set only for v′, with ``q* = P[report 1 | bit 1]``,
    ``p* = P[report 1 | bit 0]`` — ``q* = ½f(p+q) + (1−f)q``, ``p* = ½f(p+q) + (1−f)p`` for
    one report, ``1 − f/2`` and ``f/2`` for the permanent response alone (``p``, ``q``
    None). The maximum over the ordered pairs of distinct values is the true ε; it equals the
    paper's ε₁ (or ε∞) when two values have disjoint filters.

    Example:
        >>> round(rappor_true_epsilon(0.95), 4)  # one-time RAPPOR: 8 · ln(0.525/0.475)
        0.8007
    """
    if p is None:
        q_star, p_star = 1 - f / 2, f / 2
    else:
        q_star = 0.5 * f * (p + q) + (1 - f) * q
        p_star = 0.5 * f * (p + q) + (1 - f) * p
    only_v, only_w = math.log(q_star / p_star), math.log((1 - p_star) / (1 - q_star))
    bits = [rappor_bits(v).astype(bool) for v in range(low, high + 1)]
    worst = 0.0
    for i, bv in enumerate(bits):
        for j, bw in enumerate(bits):
            if i != j:
                worst = max(worst, int(np.sum(bv & ~bw)) * only_v + int(np.sum(bw & ~bv)) * only_w)
    return worst


# ------------------------------------------------------------------------- registration


def suite(epsilon: float = EPS) -> tuple[MechanismSpec, ...]:
    """The twenty mechanisms of DP-Sniper's evaluation at privacy parameter ``epsilon``
    (registered in :data:`MECHANISMS` at the paper's default ε = 0.1; published lower
    bounds are kept only at that ε).

    Example:
        >>> [s.name for s in suite(1.0)][:3]
        ['laplace', 'truncated-geometric', 'noisy-hist1']
        >>> suite(1.0)[0].true_epsilon
        1.0
    """
    if not isinstance(epsilon, (int, float)) or not 0 < epsilon < math.inf:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    EPS = float(epsilon)
    specs = [*_noise_and_max(EPS), *_sparse_vector(EPS), *_local_and_composed(EPS)]
    if EPS != 0.1:
        specs = [dataclasses.replace(sp, published_lower=None) for sp in specs]
    return tuple(specs)


def _noise_and_max(eps: float) -> list[MechanismSpec]:
    """The additive-noise, histogram and report-noisy-max mechanisms of :func:`suite`."""
    EPS = eps
    geo, k = _geometric(EPS, 5)
    geo_claim = math.log(1.0 + 2.0**-k)
    return [
        MechanismSpec("laplace", _laplace(EPS), EPS, 1, "Dwork et al. 2006, TCC",
                      true_epsilon=EPS, published_lower=0.0968),
        MechanismSpec("truncated-geometric", geo, geo_claim, 1,
                      "Balcer & Vadhan 2018, arXiv:1709.05396, Alg. 4.8",
                      true_epsilon=_geometric_true_epsilon(5, k), published_lower=0.1156,
                      low=0, high=5, discrete=True, note="n = 5 individuals, eps = 0.1"),
        MechanismSpec("noisy-hist1", _noisy_hist(1 / EPS), EPS, 5, _STATDP + ", Alg. 9",
                      true_epsilon=EPS, published_lower=0.0978, low=0, high=10),
        MechanismSpec("noisy-hist2", _noisy_hist(EPS), EPS, 5, _STATDP + ", Alg. 10",
                      true_epsilon=1 / EPS, private=False, published_lower=4.602, low=0,
                      high=10, note="Laplace scale eps instead of 1/eps"),
        MechanismSpec("report-noisy-max1", _noisy_max(EPS, "laplace", "index"), EPS, 5,
                      _STATDP + ", Alg. 5", true_epsilon=noisy_max_true_epsilon(EPS),
                      published_lower=0.0923, component_wise=True, discrete=True),
        MechanismSpec("report-noisy-max2", _noisy_max(EPS, "exponential", "index"), EPS, 5,
                      _STATDP + ", Alg. 6", true_epsilon=noisy_max_true_epsilon(EPS),
                      published_lower=0.0975, component_wise=True, discrete=True),
        MechanismSpec("report-noisy-max3", _noisy_max(EPS, "laplace", "value"), EPS, 5,
                      _STATDP + ", Alg. 7", private=False, published_lower=0.2478,
                      component_wise=True, note="releases the noisy maximum, not its index"),
        MechanismSpec("report-noisy-max4", _noisy_max(EPS, "exponential", "value"), EPS, 5,
                      _STATDP + ", Alg. 8", true_epsilon=math.inf, private=False,
                      published_lower=0.3463, component_wise=True,
                      note="exponential noise is one-sided: some outputs only one input gives"),
    ]  # fmt: skip


def _sparse_vector(eps: float) -> list[MechanismSpec]:
    """Lyu, Su & Li's sparse vector variants 1-6 of :func:`suite`."""
    EPS = eps
    return [
        MechanismSpec("svt1", _svt_flags(EPS / 2, 2.0 / (EPS / 2), 1, 0.5), EPS, 10,
                      _LYU + ", Alg. 1", published_lower=0.0858, component_wise=True,
                      discrete=True, flags=(-1.0,), note="c = 1, T = 0.5"),
        MechanismSpec("svt2", _svt2(EPS, 1, 1.0), EPS, 10, _LYU + ", Alg. 2",
                      published_lower=0.0859, component_wise=True, discrete=True,
                      flags=(-1.0,), note="c = 1, T = 1"),
        MechanismSpec("svt3", _svt3(EPS, 1, 1.0), EPS, 10, _LYU + ", Alg. 3", private=False,
                      published_lower=0.1716, component_wise=True, flags=(-1000.0, -2000.0),
                      note="releases noisy query values; c = 1, T = 1"),
        MechanismSpec("svt4", _svt_flags(EPS / 4, 1.0 / (EPS - EPS / 4), 1, 1.0), EPS, 10,
                      _LYU + ", Alg. 4", true_epsilon=(1 + 6 * 1) / 4 * EPS, private=False,
                      published_lower=0.1687, component_wise=True, discrete=True,
                      flags=(-1.0,), note="((1+6c)/4)·eps-DP only (Lyu et al. Thm. 6); c = 1"),
        MechanismSpec("svt5", _svt5(EPS, 1.0), EPS, 10, _LYU + ", Alg. 5",
                      true_epsilon=math.inf, private=False, published_lower=1.761,
                      component_wise=True, discrete=True, note="no noise on the queries"),
        MechanismSpec("svt6", _svt6(EPS, 1.0), EPS, 10, _LYU + ", Alg. 6", private=False,
                      published_lower=0.2720, component_wise=True, discrete=True,
                      note="no cut-off: answers every query"),
    ]  # fmt: skip


def _local_and_composed(eps: float) -> list[MechanismSpec]:
    """RAPPOR, one-time RAPPOR and the composed mechanisms (parallel Laplace, SVT34, prefix
    sum, numerical SVT) of :func:`suite`."""
    EPS = eps
    r_inf, r_one = _rappor_claims(0.75, 0.45, 0.55)
    otr_inf, _ = _rappor_claims(0.95, 0.5, 0.5)
    return [
        MechanismSpec("rappor", _rappor(0.75, 0.45, 0.55), r_one, 1, _RAPPOR + ", steps 1-3",
                      true_epsilon=rappor_true_epsilon(0.75, 0.45, 0.55),
                      published_lower=0.2930, low=-10, high=10, discrete=True,
                      pairs=_value_pairs(-10, 10),
                      log_likelihood_ratio=_rappor_llr(0.75, 0.45, 0.55),
                      note=f"h = 4, f = 0.75, p = 0.45, q = 0.55; one report (eps_inf = "
                      f"{r_inf:.3f})"),
        MechanismSpec("one-time-rappor", _rappor(0.95, None, None), otr_inf, 1,
                      _RAPPOR + ", steps 1-2", true_epsilon=rappor_true_epsilon(0.95),
                      published_lower=0.5978, low=-10, high=10, discrete=True,
                      pairs=_value_pairs(-10, 10),
                      log_likelihood_ratio=_rappor_llr(0.95, None, None),
                      note="h = 4, f = 0.95"),
        MechanismSpec("laplace-parallel", _laplace_parallel(0.005, 20), EPS, 1,
                      "Bichsel et al. 2021, IEEE S&P (20 Laplace mechanisms at eps = 0.005)",
                      true_epsilon=EPS, published_lower=0.0350,
                      log_likelihood_ratio=_laplace_parallel_llr(0.005)),
        MechanismSpec("svt34-parallel", _svt34(EPS, 2, 1.0), 2 * EPS, 10,
                      _LYU + ", Algs. 3 and 4 run together", private=False,
                      published_lower=0.2610, component_wise=True,
                      flags=(-1.0, -1000.0, -2000.0),
                      note="c = 2, T = 1 (DP-Sniper's defaults); claim: 2 x 0.1 "
                           "(composition); Alg. 4 alone is 0.325-DP at c = 2"),
        MechanismSpec("prefix-sum", _prefix_sum(EPS), 10 * EPS, 10, _SHADOW,
                      true_epsilon=10 * EPS, published_lower=0.5040, component_wise=True,
                      log_likelihood_ratio=_prefix_sum_llr(EPS),
                      note="eps-DP per entry; 10 entries change together (component-wise)"),
        MechanismSpec("numerical-svt", _numerical_svt(EPS, 1, 1.0), EPS, 10, _SHADOW,
                      published_lower=0.0343, component_wise=True, flags=(-1000.0, 0.0),
                      note="c = 1, T = 1"),
    ]  # fmt: skip


for _spec in suite(EPS):
    MECHANISMS.register(_spec.name, _spec, replace=True, tags=("dp-sniper",))
