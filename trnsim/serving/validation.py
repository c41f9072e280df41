"""Decode predictions against AWS's published trn1 latency table (validation only, never inputs).

``published_runs()`` reads ``data/validation/trn1_decode.csv`` (transformers-neuronx, Neuron 2.18,
trn1.32xlarge, TP32, batch 1, bf16); ``validate()`` predicts each row's time per output token
with :func:`trnsim.serving.estimate` and returns leave-one-out rows for the one calibrated decode
residual (:mod:`trnsim.models.calibration`). The residual multiplies the decode physics time, so a row's
prediction at factor f is f x its physics time.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

from trnsim.catalog.datafiles import data_dir
from trnsim.serving.estimate import estimate
from trnsim.models.calibration import Row, fit_factor, leave_one_out

CSV_NAME = "validation/trn1_decode.csv"


@dataclass(frozen=True)
class DecodeRun:
    """One published latency row."""

    model: str
    instance: str
    tp: int
    batch: int
    input_tokens: int
    output_tokens: int
    dtype: str
    tpot_ms: float
    ttft_ms: float

    @property
    def label(self) -> str:
        return f"{self.model} in{self.input_tokens}/out{self.output_tokens}"


@lru_cache(maxsize=1)
def published_runs() -> tuple[DecodeRun, ...]:
    with open(data_dir() / CSV_NAME, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return tuple(DecodeRun(r["model"], r["instance"], int(r["tp"]), int(r["batch"]), int(r["input_tokens"]),
                           int(r["output_tokens"]), r["dtype"], float(r["tpot_ms"]), float(r["ttft_ms"]))
                 for r in rows)


def predict(run: DecodeRun):
    """The :class:`~trnsim.serving.ServingEstimate` of ``run`` (calibrated residual applied to decode)."""
    return estimate(run.model, run.instance, run.tp, run.batch, run.input_tokens, run.output_tokens, run.dtype)


def _physics_tpot(runs) -> list[float]:
    return [predict(r).decode.physics_ms for r in runs]


def validate() -> tuple[list[Row], float]:
    """(leave-one-out TPOT rows, factor fitted on all rows)."""
    runs = published_runs()
    phys = _physics_tpot(runs)
    return leave_one_out([r.label for r in runs], [r.tpot_ms for r in runs], lambda i, f: phys[i] * f,
                         lo=0.2, hi=3.0)


def calibrate_residual() -> float:
    """The decode framework factor fitted on all visible rows (what data/serving.json stores)."""
    runs = published_runs()
    phys = _physics_tpot(runs)
    return fit_factor(lambda i, f: phys[i] * f, [r.tpot_ms for r in runs], list(range(len(runs))), lo=0.2, hi=3.0)


def ttft_rows() -> list[tuple[str, float, float]]:
    """(label, published TTFT ms, predicted TTFT ms) - physics only, no residual (reported, not fitted)."""
    return [(r.label, r.ttft_ms, predict(r).ttft_ms) for r in published_runs()]
