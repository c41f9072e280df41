"""Predicted vs published: trnsim's kernel cost model against latencies AWS measured on real hardware.

The published rows (data/kernel_validation.json) are validation only: nothing in the cost model is
derived from them. ``published_vs_predicted()`` traces each row's trnsim kernel shape-only
(timing-only mode), schedules it on the row's target and returns one ``ValidationRow`` per stage with
the signed error. ``unmodelled_effects()`` lists what the physics model does not explain.

    from trnsim.perf.validation import published_vs_predicted, median_abs_error_pct
    rows = published_vs_predicted("trn1")
    for r in rows: print(r.line())
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from trnsim.catalog.datafiles import load_json

_SHAPE = {"lhsT": (8192, 4096), "rhs": (8192, 8192)}


@dataclass(frozen=True)
class ValidationRow:
    """One published kernel and trnsim's prediction for it. Times in ms; errors in % ((pred - pub) / pub)."""

    set_name: str
    target: str
    stage: int
    kernel: str
    published_kernel: str
    dtype: str
    published_ms: float
    predicted_ms: float
    published: Mapping[str, float] = field(default_factory=dict)    # other published statistics (percent / count)
    predicted: Mapping[str, float] = field(default_factory=dict)    # trnsim's values of the same statistics
    source: str = ""
    note: str = ""

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted_ms - self.published_ms) / self.published_ms

    def line(self) -> str:
        """One printable line: stage, kernel, published, predicted, error."""
        return (f"{self.target} stage {self.stage} {self.kernel.split(':')[-1]:<22} published {self.published_ms:7.2f} ms"
                f"  predicted {self.predicted_ms:7.2f} ms  error {self.error_pct:+6.1f}%")


def validation_data() -> dict:
    """The parsed data/kernel_validation.json."""
    return load_json("kernel_validation.json")


def _kernel(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _spec(dtype: str) -> tuple[Any, Any]:
    import trnsim.nki.language as nl
    import trnsim.nki.typing as nt

    dt = {"bfloat16": nl.bfloat16, "float32": nl.float32}[dtype]
    return nt.tensor[list(_SHAPE["lhsT"]), dt], nt.tensor[list(_SHAPE["rhs"]), dt]


_STATS = ("hfu_pct", "tensor_active_pct", "dma_active_pct", "vector_active_pct", "mfu_max_achievable_pct",
          "matmul_instruction_count")


def _predicted_stats(p: Any) -> dict[str, float]:
    m = p.metrics
    return {"hfu_pct": m.hfu_estimated_pct, "tensor_active_pct": m.active_time_pct["tensor"],
            "dma_active_pct": m.dma_active_time_pct, "vector_active_pct": m.active_time_pct["vector"],
            "mfu_max_achievable_pct": m.mfu_max_achievable_estimated_pct,
            "matmul_instruction_count": float(m.matmul_instruction_count)}


def predict_row(row: Mapping[str, Any]) -> ValidationRow:
    """Cost one validation row's kernel (timing-only) and pair it with the published numbers."""
    from trnsim.perf.profile import profile

    kern = _kernel(row["kernel"])
    p = profile(kern, *_spec(row["dtype"]), target=row["target"], numerics=False, **row.get("kwargs", {}))
    pub = {k: float(row[k]) for k in _STATS if k in row}
    pred = {k: v for k, v in _predicted_stats(p).items() if k in pub}
    return ValidationRow(row["set"], row["target"], int(row["stage"]), row["kernel"], row["published_kernel"],
                         row["dtype"], float(row["latency_ms"]), p.latency_us / 1e3, pub, pred, row["source"],
                         row.get("note", ""))


def published_vs_predicted(target: str | None = None) -> list[ValidationRow]:
    """Every validation row (or those of ``target``: "trn1" or "trn2"), predicted by the current model, in stage order.

    Timing-only: each kernel is traced without numerics and scheduled (a few seconds per kernel)."""
    rows = validation_data()["rows"]
    targets = sorted({r["target"] for r in rows})
    if target is not None and target not in targets:
        raise ValueError(f"published_vs_predicted(target={target!r}): published kernel rows exist for {targets}; "
                         "pass one of those or None for all")
    chosen = [r for r in rows if target is None or r["target"] == target]
    return [predict_row(r) for r in sorted(chosen, key=lambda r: (r["target"], r["stage"]))]


def median_abs_error_pct(rows: list[ValidationRow]) -> float:
    """Median of |error| in percent over ``rows``."""
    if not rows:
        raise ValueError("median_abs_error_pct: no rows")
    errs = sorted(abs(r.error_pct) for r in rows)
    n = len(errs)
    return errs[n // 2] if n % 2 else 0.5 * (errs[n // 2 - 1] + errs[n // 2])


def unmodelled_effects() -> list[str]:
    """What the physics model does not explain (data/kernel_validation.json), for showing next to the errors."""
    return list(validation_data()["unmodelled_effects"]["value"])


def table(rows: list[ValidationRow]) -> str:
    """A printable table: one line per row, then the median |error| per target."""
    lines = [r.line() for r in rows]
    for tgt in sorted({r.target for r in rows}):
        sub = [r for r in rows if r.target == tgt]
        lines.append(f"{tgt}: median |error| {median_abs_error_pct(sub):.1f}% over {len(sub)} stages")
    return "\n".join(lines)


__all__ = ["ValidationRow", "published_vs_predicted", "predict_row", "median_abs_error_pct", "unmodelled_effects",
           "validation_data", "table"]
