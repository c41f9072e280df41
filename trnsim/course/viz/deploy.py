"""Figures for sovereign deployment: a region map drawn from the project's own coordinates,
RTT bars, and a comparison of planner options. No map tiles or coastlines are downloaded:
the map is a longitude/latitude grid with great-circle paths from the users to each region.
"""
from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trnsim.deploy.latency import estimate_rtt, site
from trnsim.deploy.catalog import MALAYSIA_REGION, offering, regions

_STATUS_STYLE = {
    "neuron": dict(marker="o", color="tab:green", label="Trainium/Inferentia listed"),
    "scenario": dict(marker="o", color="tab:olive", label="Neuron: scenario only"),
    "none": dict(marker="s", color="tab:gray", label="no Neuron listed"),
    "unknown": dict(marker="^", color="tab:orange", label="availability not found"),
}
_LABEL_OFFSET = {"ap-southeast-4": (-10, -20), "ap-southeast-3": (6, -12)}  # points; avoids overlaps near Sydney
EXTENTS = {"asia": (60.0, 160.0, -45.0, 50.0), "world": (-180.0, 180.0, -60.0, 70.0)}


def _neuron_status(code: str, neuron_in_region: bool) -> str:
    names = ("inf2.xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge")
    offs = [offering(code, n, neuron_in_region=neuron_in_region) for n in names]
    if any(o.available and not o.hypothetical for o in offs):
        return "neuron"
    if any(o.available for o in offs):
        return "scenario"
    if all(o.status == "not found" for o in offs):
        return "unknown"
    return "none"


def great_circle_path(lat1: float, lon1: float, lat2: float, lon2: float, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Points (lat, lon in degrees) along the great circle between two places (spherical slerp)."""
    p1, l1, p2, l2 = np.radians([lat1, lon1, lat2, lon2])
    a = np.array([np.cos(p1) * np.cos(l1), np.cos(p1) * np.sin(l1), np.sin(p1)])
    b = np.array([np.cos(p2) * np.cos(l2), np.cos(p2) * np.sin(l2), np.sin(p2)])
    omega = np.arccos(np.clip(a @ b, -1.0, 1.0))
    t = np.linspace(0.0, 1.0, n)[:, None]
    if omega < 1e-9:
        pts = np.repeat(a[None, :], n, axis=0)
    else:
        pts = (np.sin((1 - t) * omega) * a + np.sin(t * omega) * b) / np.sin(omega)
    lat = np.degrees(np.arcsin(np.clip(pts[:, 2], -1, 1)))
    lon = np.degrees(np.arctan2(pts[:, 1], pts[:, 0]))
    return lat, lon


def region_map(ax: Axes, origin: str = "Kuala Lumpur", extent: str = "asia", *, neuron_in_region: bool = False,
               annotate_rtt: bool = True) -> Axes:
    """Plot regions at their coordinates, great-circle paths from ``origin``, typical RTT labels."""
    if extent not in EXTENTS:
        raise ValueError(f"extent must be one of {tuple(EXTENTS)} (got {extent!r})")
    x0, x1, y0, y1 = EXTENTS[extent]
    o = site(origin)
    seen = set()
    for code, r in regions().items():
        inside = x0 <= r.lon_deg <= x1 and y0 <= r.lat_deg <= y1
        if not inside:
            continue
        status = _neuron_status(code, neuron_in_region)
        style = dict(_STATUS_STYLE[status])
        label = style.pop("label")
        lat, lon = great_circle_path(o.lat_deg, o.lon_deg, r.lat_deg, r.lon_deg)
        jump = np.abs(np.diff(lon)) > 180  # do not draw across the date line
        lon = lon.copy()
        lon[1:][jump] = np.nan
        ax.plot(lon, lat, color=style["color"], lw=0.8, alpha=0.5)
        size = 110 if code == MALAYSIA_REGION else 55
        if abs(r.lon_deg - o.lon_deg) < 1.5 and abs(r.lat_deg - o.lat_deg) < 1.5:
            # the users sit on this region: draw it as a wide ring so the users' star stays visible inside
            ring = dict(style, facecolors="none", edgecolors=style.pop("color"))
            ax.scatter([r.lon_deg], [r.lat_deg], s=size * 4, zorder=3, linewidth=2.2,
                       label=label if status not in seen else None, **ring)
        else:
            ax.scatter([r.lon_deg], [r.lat_deg], s=size, zorder=3, edgecolor="black", linewidth=0.6,
                       label=label if status not in seen else None, **style)
        seen.add(status)
        if annotate_rtt and code != MALAYSIA_REGION:
            e = estimate_rtt(origin, code)
            dx, dy = _LABEL_OFFSET.get(code, (5, 3))
            ax.annotate(f"{code}\n~{e.typical_ms:.0f} ms", (r.lon_deg, r.lat_deg), xytext=(dx, dy),
                        textcoords="offset points", fontsize=7, ha="right" if dx < 0 else "left")
        elif code == MALAYSIA_REGION:
            ax.annotate(f"{code}\n(Malaysia)", (r.lon_deg, r.lat_deg), xytext=(-8, -22),
                        textcoords="offset points", fontsize=7, fontweight="bold", ha="right")
    ax.scatter([o.lon_deg], [o.lat_deg], marker="*", s=220, color="tab:red", edgecolor="white", linewidth=0.8,
               zorder=6, label=f"users: {o.name}")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_xlabel("longitude (deg)")
    ax.set_ylabel("latitude (deg)")
    ax.set_title(f"AWS regions and typical RTT from {o.name} (fibre floor x route factor)")
    ax.legend(loc="lower left", fontsize=7, framealpha=0.9)
    return ax


def rtt_bars(ax: Axes, origin: str = "Kuala Lumpur", codes: list[str] | None = None) -> Axes:
    """Horizontal bars: physics floor and the low-high route-factor range for each region."""
    codes = codes or [c for c in regions()]
    rows = sorted((estimate_rtt(origin, c) for c in codes), key=lambda e: e.distance_km)
    y = np.arange(len(rows))
    ax.barh(y, [e.floor_ms for e in rows], color="tab:blue", label="fibre floor (10 us/km RTT)")
    ax.barh(y, [e.high_ms - e.low_ms for e in rows], left=[e.low_ms for e in rows], color="tab:orange", alpha=0.45,
            label="route factor 1.3-2x")
    ax.scatter([e.typical_ms for e in rows], y, color="black", s=12, zorder=3, label="typical (x1.46)")
    ax.set_yticks(y, [e.region for e in rows], fontsize=8)
    if not ax.yaxis_inverted():
        ax.invert_yaxis()
    ax.set_xlabel("round-trip time (ms)")
    ax.set_title(f"RTT from {site(origin).name}: no measured ap-southeast-5 data exists")
    ax.legend(fontsize=7, loc="upper right")
    return ax


def plan_bars(ax: Axes, options, metric: str = "usd_per_month") -> Axes:
    """Bars of one metric ('usd_per_month', 'kgco2e_per_month', 'user_ttft_p99_ms') per option; hatched = estimate/scenario."""
    labels, vals, hatches, colors = [], [], [], []
    for o in options:
        v = getattr(o, metric)
        labels.append(f"{o.rank}. {o.label}")
        vals.append(np.nan if v is None else v)
        hatches.append("//" if (o.estimated_price or o.hypothetical) else "")
        colors.append("tab:green" if o.feasible else "tab:red")
    y = np.arange(len(options))
    bars = ax.barh(y, np.nan_to_num(vals), color=colors, alpha=0.7)
    for b, h, v in zip(bars, hatches, vals):
        b.set_hatch(h)
        if np.isnan(v):
            ax.annotate("n/a", (0, b.get_y() + b.get_height() / 2), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_yticks(y, labels, fontsize=7)
    if not ax.yaxis_inverted():  # axes sharing y are inverted once
        ax.invert_yaxis()
    names = {"usd_per_month": "USD per month", "kgco2e_per_month": "kgCO2e per month",
             "user_ttft_p99_ms": "p99 time to first token seen by users (ms)"}
    ax.set_xlabel(names.get(metric, metric))
    handles = [Line2D([], [], color="tab:green", lw=6, alpha=0.7, label="feasible"),
               Line2D([], [], color="tab:red", lw=6, alpha=0.7, label="not feasible"),
               Patch(facecolor="white", edgecolor="black", hatch="//", label="estimated price or scenario")]
    ax.legend(handles=handles, fontsize=7, loc="best")
    return ax
