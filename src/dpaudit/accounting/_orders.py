"""The one default grid of Rényi orders used throughout :mod:`dpaudit.accounting`.

Different libraries convert the same RDP curve to different ε mainly because they minimise
over different order grids (grids that differ move ε by ~10%).
dpaudit uses a single grid, :data:`DEFAULT_ORDERS`, everywhere an ``orders`` argument is
left out:

* ``1.1, 1.2, …, 10.9`` (step 0.1, 99 orders) — dense where large-ε curves (label DP, few
  noisy queries, ε ≳ 3 at δ = 1e-5) attain their optimum, and where the RDP→(ε, δ)
  conversion is most sensitive to the order;
* ``11, 12, …, 63`` (53 integer orders) — the typical optimum of composed PATE / Private-kNN
  curves; integer orders are also exact for dp-accounting's subsampled-Gaussian series
  (Mironov, Talwar, Zhang 2019, arXiv:1908.10530);
* ``64·2^{k/4}`` rounded to integers for ``k = 0…16`` (64, 76, 91, …, 861, 1024) — the
  tail, geometric at a quarter-octave, for small ε: with ρ(λ) ≈ cλ the optimum lies at
  λ ≈ √(log(1/δ)/c). At λ = 1024 the conversion term ``log(1/δ)/(λ−1)`` is already 0.011 for
  δ = 1e-5, so larger orders could only refine ε below ~0.01, which no audit resolves.

The grid is a superset of dp-accounting's ``DEFAULT_RDP_ORDERS`` (0.6.0), so an ε computed
here is never larger than dp-accounting's for the same curve, and the reference values of
Private-kNN and label-DP reference values (optimal orders 4.2, 9.6, …) lie on the grid.
Data-dependent
PATE bounds (Papernot et al. 2018, Thm 6) are only valid below μ1 = σ·√log(1/q̃) + 1, which
for σ ≤ 100 and q̃ ≥ 1e-30 is below ~830, inside the geometric tail.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_ORDERS"]


def _default_orders() -> np.ndarray:
    fine = 1.0 + np.arange(1, 100) / 10.0
    integer = np.arange(11, 64, dtype=np.float64)
    tail = np.round(64.0 * 2.0 ** (np.arange(0, 17) / 4.0))
    grid = np.unique(np.concatenate([fine, integer, tail]))
    grid.setflags(write=False)
    return grid


#: The default Rényi order grid (169 orders from 1.1 to 1024, read-only); see module docs.
DEFAULT_ORDERS: np.ndarray = _default_orders()
