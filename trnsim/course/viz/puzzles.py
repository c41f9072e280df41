"""Figure for notebook 04b: the kernel puzzle leaderboard (simulated time against each puzzle's budget)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

_SOLVED = "#2ca02c"
_OPEN = "#c7c7c7"
_SLOW = "#e6a57e"


def plot_leaderboard(ax: Any, rows: Sequence[Any], *, title: str | None = None) -> Any:
    """Horizontal bars: each puzzle's simulated time as a multiple of its roofline floor (log axis), with the
    budget as a black tick and the floor (1x) as a dashed line. A kernel with right values that is over its budget (or
    breaks a resource rule) gets an orange bar; puzzles without such a kernel show only the budget.

    ``rows``: :class:`trnsim.course.exercises.puzzles.Standing` records (``title``, ``time_us``, ``floor_us``,
    ``budget_us``, ``passed``). Returns the Axes.
    """
    n = len(rows)
    y = np.arange(n)[::-1]
    budgets = np.array([r.budget_us / r.floor_us for r in rows])
    times = np.array([(r.time_us / r.floor_us) if r.time_us is not None else np.nan for r in rows])
    ran = np.isfinite(times)
    solved = ran & np.array([bool(r.passed) for r in rows])
    slow = ran & ~solved        # right values, but over the budget (or a resource rule): shown, in another colour
    ax.barh(y[solved], times[solved], left=0, color=_SOLVED, height=0.6, label="your kernel (solved)")
    if slow.any():
        ax.barh(y[slow], times[slow], left=0, color=_SLOW, height=0.6, label="right values, not accepted")
    ax.scatter(budgets, y, marker="|", s=260, linewidths=2.5, color="black", zorder=3, label="budget")
    for yi, t, b, ok, late in zip(y, times, budgets, solved, slow):
        if ok:
            ax.text(max(t, b) * 1.06, yi, f"{t:.1f}x (budget {b:.1f}x)", va="center", fontsize=7)
        elif late:
            ax.text(max(t, b) * 1.06, yi, f"{t:.1f}x: over budget {b:.1f}x or a rule", va="center", fontsize=7,
                    color="#a0522d")
        else:
            ax.text(b * 1.08, yi, "open", va="center", fontsize=7, color="#7f7f7f")
    ax.axvline(1.0, color="#d62728", ls="--", lw=1, label="roofline floor")
    ax.set_xscale("log")
    hi = float(np.nanmax(np.concatenate([budgets, times[ran] if ran.any() else budgets])))
    ax.set_xlim(0.8, hi * 3.0)
    ax.set_yticks(y)
    ax.set_yticklabels([r.title for r in rows], fontsize=8)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("simulated time / roofline floor (log scale)")
    ax.set_title(title or f"Puzzle leaderboard: {int(solved.sum())} of {n} solved", fontsize=10)
    ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.grid(axis="x", alpha=0.3, which="both")
    return ax
