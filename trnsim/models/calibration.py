"""Shared machinery for predicted-vs-published tables and the one calibrated residual per level.

The procedure (``data/*`` source ``TRNSIM-LOO``):

* the residual is one multiplicative factor ``f`` per level (training, decode) and generation,
  fitted so that the geometric mean of predicted/published over the fitting rows is 1
  (a 1-D root find on ``f``; the physics prediction is monotone in ``f``);
* the *cross-validated* error of a row is its error when ``f`` is fitted on the other rows
  only (leave-one-out); that is the error reported to learners;
* the stored factor is the one fitted on all visible rows (what a learner's new prediction uses).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Row:
    """One validation row: ``label``, published value, physics prediction (f = 1), cross-validated prediction."""

    label: str
    published: float
    physics: float
    predicted: float
    factor_used: float

    @property
    def error(self) -> float:
        """Signed relative error of the cross-validated prediction (+0.10 = 10% too high)."""
        return self.predicted / self.published - 1.0

    @property
    def physics_error(self) -> float:
        return self.physics / self.published - 1.0


def log_mean_ratio(predict: Callable[[int, float], float], published: Sequence[float], rows: Sequence[int],
                   f: float) -> float:
    """Mean of log(predicted/published) over ``rows`` at factor ``f``."""
    return sum(math.log(predict(i, f) / published[i]) for i in rows) / len(rows)


def fit_factor(predict: Callable[[int, float], float], published: Sequence[float], rows: Sequence[int],
               lo: float = 0.05, hi: float = 3.0, iters: int = 40) -> float:
    """The factor f in [lo, hi] with geometric-mean predicted/published = 1 over ``rows`` (bisection).

    ``predict(i, f)`` returns row i's prediction at factor f. Works whether the prediction
    rises or falls with f (checked at the ends); clamps to the nearer end when no root is inside.
    """
    g_lo = log_mean_ratio(predict, published, rows, lo)
    g_hi = log_mean_ratio(predict, published, rows, hi)
    if g_lo * g_hi > 0:
        return lo if abs(g_lo) < abs(g_hi) else hi
    a, b = lo, hi
    for _ in range(iters):
        mid = math.sqrt(a * b)
        g = log_mean_ratio(predict, published, rows, mid)
        if (g < 0) == (g_lo < 0):
            a, g_lo = mid, g
        else:
            b = mid
    return math.sqrt(a * b)


def leave_one_out(labels: Sequence[str], published: Sequence[float],
                  predict: Callable[[int, float], float], physics_factor: float = 1.0,
                  lo: float = 0.05, hi: float = 3.0) -> tuple[list[Row], float]:
    """Cross-validated rows and the factor fitted on all rows.

    Each row is predicted with the factor fitted on the other rows; ``physics`` is the
    prediction at ``physics_factor`` (no residual).
    """
    n = len(published)
    out = []
    for i in range(n):
        others = [j for j in range(n) if j != i]
        f = fit_factor(predict, published, others, lo, hi) if others else physics_factor
        out.append(Row(labels[i], published[i], predict(i, physics_factor), predict(i, f), f))
    return out, fit_factor(predict, published, list(range(n)), lo, hi)


def median_abs_error(rows: Sequence[Row], physics: bool = False) -> float:
    errs = sorted(abs(r.physics_error if physics else r.error) for r in rows)
    n = len(errs)
    return errs[n // 2] if n % 2 else 0.5 * (errs[n // 2 - 1] + errs[n // 2])


def table(rows: Sequence[Row], unit: str = "") -> str:
    """Plain-text table: label, published, physics, cross-validated prediction and error."""
    lines = [f"{'run':44s} {'published':>10s} {'physics':>9s} {'predicted':>10s} {'error':>7s}"]
    for r in rows:
        lines.append(f"{r.label:44s} {r.published:10.2f} {r.physics:9.2f} {r.predicted:10.2f} {100 * r.error:+6.1f}%")
    lines.append(f"median |error| {100 * median_abs_error(rows):.1f}% (cross-validated; physics only "
                 f"{100 * median_abs_error(rows, physics=True):.1f}%){' ' + unit if unit else ''}")
    return "\n".join(lines)
