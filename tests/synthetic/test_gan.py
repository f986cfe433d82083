"""smartnoise-synth 1.0.8's GANs, DPCTGAN and PATECTGAN (Rosenblatt et al. 2020,
arXiv:2011.05537): their (ε, δ) claims and (with the environment built: ``make
venv-smartnoise-gan``; opacus 0.14.0 on torch 2.13.0) a fit of each as installed, with what
the library's own accountant spent, and the planted bugs."""

from __future__ import annotations

import math

import pytest

from dpaudit.systems import SYSTEMS
from dpaudit.systems.synthetic import LIBRARIES, GeneratorCell

needs_gan = pytest.mark.skipif(
    not LIBRARIES["smartnoise-gan"].available(),
    reason="smartnoise-synth's GAN environment not built: make venv-smartnoise-gan",
)
GANS = ("smartnoise-dpctgan", "smartnoise-dpctgan-quiet-noise", "smartnoise-patectgan",
        "smartnoise-patectgan-quiet-noise")  # fmt: skip


def test_gans_are_registered_with_the_librarys_epsilon_delta_claim():
    for name in GANS:
        g = SYSTEMS.get(name)(GeneratorCell(name, 2.0, 1e-3))
        c = g.claim(rho=math.nan)
        assert (c.epsilon, c.delta) == (2.0, 1e-3) and "arXiv:2011.05537" in c.source
        assert ("opacus" in g.mechanism) == ("dpctgan" in name)
        assert (g.bug is not None) == name.endswith("quiet-noise")
    with pytest.raises(ValueError, match="delta"):
        SYSTEMS.get(GANS[0])(GeneratorCell(GANS[0], 1.0, 1e-2)).claim(delta=1e-3)


def test_the_mu_beside_the_claim_is_tight_at_the_claimed_epsilon_delta():
    from dpaudit.conversions import gdp_epsilon

    g = SYSTEMS.get(GANS[2])(GeneratorCell(GANS[2], 1.0, 1e-2))
    assert gdp_epsilon(g.implied_mu(math.nan), 1e-2) == pytest.approx(1.0, rel=1e-9)
