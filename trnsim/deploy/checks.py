"""Argument checks at the boundary of trnsim.deploy's public functions (raise :class:`DeployError`)."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from trnsim.deploy.catalog import DeployError
from trnsim.validation import check_bool, check_int, check_number, check_positive, check_str, type_error

MAX_PLAN_REQUESTS = 20_000
"""Simulator limit on requests simulated per fleet size the planner tries (it tries many)."""
MAX_PLAN_BATCH = 1024
MAX_RATE_RPS = 1e5
"""Simulator limit: the planner sizes fleets by simulation, at most 64 instances per option."""


def check_name(name: str, value: Any, what: str) -> str:
    return check_str(name, value, error=DeployError, what=what)


def check_overrides(overrides: dict[str, Any]) -> None:
    """``plan(**overrides)`` names only fields of PlanRequest."""
    from trnsim.deploy.planner import PlanRequest

    fields = [f.name for f in dataclasses.fields(PlanRequest)]
    unknown = [k for k in overrides if k not in fields]
    if unknown:
        raise type_error(DeployError)(f"plan() got unknown option(s) {unknown}; PlanRequest fields are {fields}")


def check_request(req: Any) -> None:
    """Every field of a :class:`~trnsim.deploy.planner.PlanRequest`: types, ranges, finiteness."""
    from trnsim.deploy.carbon import BASES
    from trnsim.deploy.planner import PlanRequest

    if not isinstance(req, PlanRequest):
        raise type_error(DeployError)(f"req={req!r}: must be a PlanRequest (or None, with keyword overrides)")
    check_name("users", req.users, "a user site such as 'Kuala Lumpur' or a region code")
    check_name("data_class", req.data_class, "a data class such as 'personal'")
    check_positive("rate_rps", req.rate_rps, error=DeployError, max_value=MAX_RATE_RPS,
                   fix="requests per second the service must sustain")
    check_positive("ttft_slo_ms", req.ttft_slo_ms, error=DeployError, max_value=3.6e6,
                   fix="the p99 time-to-first-token objective in ms, e.g. 1000")
    check_name("model", req.model, "a model name such as 'llama3.1-8b'")
    from trnsim.training import models

    known = models()
    if req.model.strip().lower() not in known:
        raise DeployError(f"model={req.model!r} is not in the model catalog; use one of {', '.join(sorted(known))}")
    check_int("input_tokens", req.input_tokens, error=DeployError, min_value=1, max_value=10_000_000,
              allow_integral_float=False)
    check_int("output_tokens", req.output_tokens, error=DeployError, min_value=1, max_value=10_000_000,
              allow_integral_float=False)
    check_int("n_data_subjects", req.n_data_subjects, error=DeployError, min_value=0, max_value=10**10,
              allow_integral_float=False, fix="how many people's data is processed")
    check_number("personal_share", req.personal_share, error=DeployError, min_value=0.0, max_value=1.0,
                 fix="the fraction of requests carrying personal data")
    check_bool("neuron_in_region", req.neuron_in_region, error=DeployError)
    if req.proxy_price_factor is not None:
        check_positive("proxy_price_factor", req.proxy_price_factor, error=DeployError, max_value=100.0,
                       fix="a price ratio to us-east-1 such as price_factor('ap-southeast-1') ~ 1.4, or None")
    if req.transfer_route is not None:
        check_name("transfer_route", req.transfer_route, "a transfer route key or None")
    if req.carbon_basis not in BASES:
        raise (DeployError if isinstance(req.carbon_basis, str) else type_error(DeployError))(
            f"carbon_basis={req.carbon_basis!r}: must be one of {BASES}")
    check_int("max_batch", req.max_batch, error=DeployError, min_value=1, max_value=MAX_PLAN_BATCH,
              allow_integral_float=False)
    check_int("n_requests", req.n_requests, error=DeployError, min_value=10, max_value=MAX_PLAN_REQUESTS,
              allow_integral_float=False, fix="requests simulated per fleet size; a few hundred suffice")
    check_int("seed", req.seed, error=DeployError, min_value=0, max_value=2**63 - 1, allow_integral_float=False)
    check_name("rank_by", req.rank_by, "a ranking order")


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
