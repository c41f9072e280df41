"""Sovereign deployment: regions, latency, PDPA residency rules, cost and carbon, a planner.

Modules: :mod:`~trnsim.deploy.catalog` (capacity and prices as the sources show them),
:mod:`~trnsim.deploy.latency` (great-circle fibre floor x route factor, measured data
preferred), :mod:`~trnsim.deploy.residency` (Malaysian PDPA as amended in 2024; educational,
not legal advice), :mod:`~trnsim.deploy.carbon` (grid intensity with basis and year, PUE),
:mod:`~trnsim.deploy.planner` (ranked options).
"""
from trnsim.deploy.carbon import GridIntensity, grid_intensity, pue
from trnsim.deploy.latency import RttEstimate, estimate_rtt, great_circle_km, rtt_floor_ms, rtt_table, user_sites
from trnsim.deploy.planner import PlanOption, PlanRequest, plan, report
from trnsim.deploy.catalog import (
    MALAYSIA_REGION,
    DeployError,
    RegionSpec,
    neuron_capacity_table,
    offering,
    price,
    price_factor,
    region,
    regions,
)
from trnsim.deploy.residency import DATA_CLASSES, ResidencyVerdict, assess, disclaimer, transfer_routes

__all__ = [
    "DATA_CLASSES", "MALAYSIA_REGION", "DeployError", "GridIntensity", "PlanOption", "PlanRequest", "RegionSpec",
    "ResidencyVerdict", "RttEstimate", "assess", "disclaimer", "estimate_rtt", "great_circle_km", "grid_intensity",
    "neuron_capacity_table", "offering", "plan", "price", "price_factor", "pue", "region", "regions", "report",
    "rtt_floor_ms", "rtt_table", "transfer_routes", "user_sites",
]
