"""SBUF and PSUM occupancy over a kernel's simulated run."""
from __future__ import annotations

from typing import Any


def plot_occupancy(profile: Any, ax: Any = None, *, title: str | None = None) -> Any:
    """Step plot of SBUF and PSUM use as % of per-partition capacity over time (us). Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2))
    occ = profile.occupancy
    t = list(occ.times_us) + [profile.latency_us]
    for data, cap, name, color in (
            (occ.sbuf_bytes_per_partition, occ.sbuf_capacity_bytes_per_partition, "SBUF", "#1f77b4"),
            (occ.psum_bytes_per_partition, occ.psum_capacity_bytes_per_partition, "PSUM", "#d62728")):
        y = [100.0 * v / cap for v in data] + [100.0 * data[-1] / cap]
        peak = max(data) if len(data) else 0
        ax.step(t, y, where="post", color=color, lw=1.5,
                label=f"{name}: peak {peak / 1024:.1f} of {cap / 1024:.0f} KiB per partition")
    peak_pct = max(100.0 * max(occ.sbuf_bytes_per_partition) / occ.sbuf_capacity_bytes_per_partition,
                   100.0 * max(occ.psum_bytes_per_partition) / occ.psum_capacity_bytes_per_partition)
    top = min(110.0, max(peak_pct * 1.3, 2.0))
    if top >= 100:
        ax.axhline(100, color="black", ls=":", lw=1)
    ax.set_ylim(0, top)
    ax.set_xlim(0, max(profile.latency_us, 1e-6))
    ax.set_xlabel("time (us)")
    ax.set_ylabel("% of capacity")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"On-chip memory in use: {profile.kernel_name}", fontsize=10)
    return ax


__all__ = ["plot_occupancy"]
