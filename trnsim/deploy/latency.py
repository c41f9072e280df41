"""Network round-trip time from users to a region: physics floor, route factor, measured data.

Formulas (sources in ``data/regions.json``):

* great-circle distance by the haversine formula, Earth radius R = 6371 km;
* fibre floor: light in glass ~200,000 km/s, i.e. 5 us/km one way, so
  ``rtt_floor_ms = 2 * distance_km * 5 us/km``;
* real routes are longer and pass routers: typically 1.3-2x the floor. The *typical* factor
  used here is the one worked example in the sources (78.75 ms measured / 53.9 ms physics);
* a measured RTT for the exact pair is preferred when the data has one (none exists for
  ap-southeast-5 as of the data date; 2017 Singapore measurements are kept as proxies).

The estimate excludes the users' own access network (last mile), which is the same for
every region and is not in the sources.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trnsim.deploy._data import regions_data, value
from trnsim.deploy.catalog import DeployError, check_name, region, regions


@dataclass(frozen=True)
class Site:
    """A place users are (or a region is), in degrees."""

    name: str
    lat_deg: float
    lon_deg: float


@dataclass(frozen=True)
class RttEstimate:
    """Round-trip time from ``origin`` to ``region`` in milliseconds.

    ``typical_ms`` is what the planner uses; ``low_ms``/``high_ms`` span the route-factor range;
    ``basis`` is 'measured' or 'model' (floor x route factor). ``floor_ms`` is the physics floor.
    """

    origin: str
    region: str
    distance_km: float
    floor_ms: float
    low_ms: float
    typical_ms: float
    high_ms: float
    basis: str
    note: str


def _lat() -> dict:
    return regions_data()["latency"]


def route_factors() -> tuple[float, float, float]:
    """(low, typical, high) route factors: 1.3, example ratio 78.75/53.9 ~ 1.46, 2.0."""
    d = _lat()
    typical = value(d["route_example_measured_ms"]) / value(d["route_example_physics_ms"])
    return float(value(d["route_factor_low"])), float(typical), float(value(d["route_factor_high"]))


def user_sites() -> dict[str, Site]:
    """Malaysian user locations the planner offers (approximate city centres)."""
    return {
        name: Site(name, float(value(rec["lat"])), float(value(rec["lon"])))
        for name, rec in regions_data()["user_sites"].items()
    }


def site(name_or_region: str) -> Site:
    """A user site by city name, or a region's location by region code."""
    check_name("origin", name_or_region, "a user site (see user_sites()) or a region code")
    sites = user_sites()
    if name_or_region in sites:
        return sites[name_or_region]
    if name_or_region in regions():
        r = region(name_or_region)
        return Site(r.code, r.lat_deg, r.lon_deg)
    raise DeployError(
        f"unknown place {name_or_region!r}: use a user site ({', '.join(sites)}) or a region code "
        f"({', '.join(regions())})"
    )


def great_circle_km(lat1_deg, lon1_deg, lat2_deg, lon2_deg):
    """Haversine great-circle distance in km (R = 6371 km from the data). Broadcasts over arrays."""
    from trnsim.deploy.checks import check_coordinates

    check_coordinates(lat1_deg, lon1_deg, lat2_deg, lon2_deg)
    r_km = float(value(_lat()["earth_radius_km"]))
    p1, p2 = np.radians(lat1_deg), np.radians(lat2_deg)
    dphi = p2 - p1
    dlmb = np.radians(np.asarray(lon2_deg) - np.asarray(lon1_deg))
    a = np.sin(dphi / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dlmb / 2) ** 2
    return 2 * r_km * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


def rtt_floor_ms(distance_km):
    """Physics floor: round trip at 5 us/km each way (fibre at ~2/3 c)."""
    from trnsim.deploy.checks import check_distance

    check_distance(distance_km, np.pi * float(value(_lat()["earth_radius_km"])) * 1.0001)
    us_per_km = float(value(_lat()["fibre_one_way_us_per_km"]))
    return 2.0 * np.asarray(distance_km, dtype=float) * us_per_km / 1000.0


def measured_rtt_ms(a: str, b: str) -> tuple[float, int, str] | None:
    """A measured RTT between two region codes if the data has one: (ms, year, source key)."""
    for rec in _lat()["measured_rtt_ms"]:
        if {rec["from"], rec["to"]} == {a, b}:
            return float(rec["value"]), int(rec["year"]), rec["source"]
    return None


def estimate_rtt(origin: str, to_region: str, *, route_factor: float | None = None) -> RttEstimate:
    """RTT from ``origin`` (user city or region code) to ``to_region``; measured data preferred.

    ``route_factor`` overrides the typical factor (must lie in a physical range 1-5).
    """
    from trnsim.catalog.validation import check_optional, check_number

    check_name("origin", origin, "a user site (see user_sites()) or a region code")
    check_name("to_region", to_region, "an AWS region code such as 'ap-southeast-1'")
    check_optional(check_number, "route_factor", route_factor, error=DeployError, min_value=1.0, max_value=5.0,
                   fix="a route cannot beat the great circle (1.0); sources put typical values at 1.3-2")
    low_f, typ_f, high_f = route_factors()
    if route_factor is not None:
        if not 1.0 <= route_factor <= 5.0:
            raise DeployError(
                f"route_factor {route_factor} is outside 1-5: a route cannot beat the great circle (1.0) "
                f"and sources put typical values at {low_f}-{high_f}"
            )
        typ_f = float(route_factor)
    o = site(origin)
    r = region(to_region)
    dist = float(great_circle_km(o.lat_deg, o.lon_deg, r.lat_deg, r.lon_deg))
    floor = float(rtt_floor_ms(dist))
    measured = measured_rtt_ms(origin, to_region) if origin in regions() else None
    if measured is not None:
        ms, year, src = measured
        return RttEstimate(o.name, to_region, dist, floor, ms, ms, ms, "measured",
                           f"measured average RTT, {year} ({src})")
    return RttEstimate(
        o.name, to_region, dist, floor, min(floor * low_f, floor * typ_f), floor * typ_f, max(floor * high_f, floor * typ_f),
        "model",
        f"great-circle floor x route factor {typ_f:.2f} (range {low_f}-{high_f}); no measured RTT in the data",
    )


def singapore_proxy_rtt(origin: str, to_region: str) -> RttEstimate | None:
    """Proxy: modelled RTT origin->Singapore plus the 2017 measured Singapore->region RTT."""
    m = measured_rtt_ms("ap-southeast-1", to_region)
    if m is None:
        return None
    leg = estimate_rtt(origin, "ap-southeast-1")
    ms = leg.typical_ms + m[0]
    direct = estimate_rtt(origin, to_region)
    return RttEstimate(direct.origin, to_region, direct.distance_km, direct.floor_ms, ms, ms, ms, "proxy",
                       f"model {origin}->Singapore ({leg.typical_ms:.1f} ms) + measured Singapore->{to_region} "
                       f"{m[0]:.1f} ms ({m[1]})")


def rtt_table(origin: str = "Kuala Lumpur") -> list[RttEstimate]:
    """RTT estimates from ``origin`` to every region, nearest first."""
    rows = [estimate_rtt(origin, code) for code in regions()]
    return sorted(rows, key=lambda e: e.distance_km)
