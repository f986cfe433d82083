"""Conversions between privacy notions (layer 2), used by both accounting and bounds.

RDP → (ε, δ) (standard and Balle et al. 2020) and Gaussian-DP μ ↔ (ε, δ).
"""

from dpaudit.conversions._gdp import gdp_delta, gdp_epsilon, gdp_mu
from dpaudit.conversions._rdp import DPConversion, dp_to_delta, rdp_to_dp

__all__ = ["DPConversion", "dp_to_delta", "gdp_delta", "gdp_epsilon", "gdp_mu", "rdp_to_dp"]
