"""Figure for notebook 04b: the kernel puzzle leaderboard (simulated time against each puzzle's budget)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

_SOLVED = "#2ca02c"
_OPEN = "#c7c7c7"


def plot_leaderboard(ax: Any, rows: Sequence[Any], *, title: str | None = None) -> Any:
    """Horizontal bars: each puzzle's simulated time as a multiple of its roofline floor (log axis), with the
    budget as a black tick and the floor (1x) as a dashed line. Unsolved puzzles show only the budget.

    ``rows``: :class:`trnsim.course.exercises.puzzles.Standing` records (``title``, ``time_us``, ``floor_us``,
    ``budget_us``, ``passed``). Returns the Axes.
    """
    n = len(rows)
    y = np.arange(n)[::-1]
    budgets = np.array([r.budget_us / r.floor_us for r in rows])
    times = np.array([(r.time_us / r.floor_us) if r.time_us is not None else np.nan for r in rows])
    solved = np.isfinite(times)
    ax.barh(y[solved], times[solved], left=0, color=_SOLVED, height=0.6, label="your kernel (solved)")
    ax.scatter(budgets, y, marker="|", s=260, linewidths=2.5, color="black", zorder=3, label="budget")
    for yi, t, b, ok in zip(y, times, budgets, solved):
        if ok:
            ax.text(max(t, b) * 1.06, yi, f"{t:.1f}x (budget {b:.1f}x)", va="center", fontsize=7)
        else:
            ax.text(b * 1.08, yi, "open", va="center", fontsize=7, color="#7f7f7f")
    ax.axvline(1.0, color="#d62728", ls="--", lw=1, label="roofline floor")
    ax.set_xscale("log")
    hi = float(np.nanmax(np.concatenate([budgets, times[solved] if solved.any() else budgets])))
    ax.set_xlim(0.8, hi * 3.0)
    ax.set_yticks(y)
    ax.set_yticklabels([r.title for r in rows], fontsize=8)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("simulated time / roofline floor (log scale)")
    ax.set_title(title or f"Puzzle leaderboard: {int(solved.sum())} of {n} solved", fontsize=10)
    ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.grid(axis="x", alpha=0.3, which="both")
    return ax
