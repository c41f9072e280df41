"""Argument checks at the boundary of trnsim.deploy's public functions (raise :class:`DeployError`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from trnsim.deploy.catalog import DeployError
from trnsim.catalog.validation import type_error

MAX_PLAN_REQUESTS = 20_000
"""Simulator limit on requests simulated per fleet size the planner tries (it tries many)."""
MAX_PLAN_BATCH = 1024
MAX_RATE_RPS = 1e5
"""Simulator limit: the planner sizes fleets by simulation, at most 64 instances per option."""


def check_coordinates(lat1_deg: Any, lon1_deg: Any, lat2_deg: Any, lon2_deg: Any) -> None:
    """Latitudes in [-90, 90] and longitudes in [-180, 180] degrees, finite (scalars or arrays)."""
    for name, v, lim in (("lat1_deg", lat1_deg, 90.0), ("lon1_deg", lon1_deg, 180.0),
                         ("lat2_deg", lat2_deg, 90.0), ("lon2_deg", lon2_deg, 180.0)):
        arr = _real_array(name, v, "a number of degrees (or an array of them)")
        if not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > lim):
            bad = arr[~np.isfinite(arr) | (np.abs(arr) > lim)].ravel()[:3].tolist() if arr.ndim else [float(arr)]
            raise DeployError(f"{name}={bad if arr.ndim else bad[0]!r}: must be a finite angle in [-{lim:g}, {lim:g}] "
                              f"degrees ({'latitude' if 'lat' in name else 'longitude'}); check the coordinates")


def check_distance(distance_km: Any, max_km: float) -> None:
    arr = _real_array("distance_km", distance_km, "a distance in km (or an array of them)")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > max_km):
        raise DeployError(f"distance_km={distance_km!r}: must be finite and in [0, {max_km:,.0f}] km "
                          "(half the Earth's circumference is the longest great-circle distance)")


def _real_array(name: str, v: Any, what: str) -> np.ndarray:
    """``v`` as a float array, refusing strings, bools, None and objects (numpy would coerce '8' to 8.0)."""
    try:
        raw = np.asarray(v)
    except (TypeError, ValueError):
        raw = np.asarray([None])
    if raw.dtype.kind not in "iuf":
        raise type_error(DeployError)(f"{name}={v!r}: must be {what}, not {type(v).__name__}")
    return raw.astype(float)
