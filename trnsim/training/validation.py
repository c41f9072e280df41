"""Training predictions against AWS's published trn1 pre-training runs (validation only, never inputs).

``published_runs()`` reads the visible set (``data/validation/trn1_training.csv``, copied from
/work/shared/reference/validation with its sources); ``validate()`` predicts each row's
sequences per second with :func:`trnsim.training.estimate` at the published plan (nodes, TP,
PP, DP, ZeRO-1, sequence length, global batch, micro-batch 1, the recipe's flash attention and
selective recompute) and returns the leave-one-out rows (:mod:`trnsim.models.calibration`).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

from trnsim.catalog.datafiles import data_dir
from trnsim.training.estimate import estimate
from trnsim.models.calibration import Row, fit_factor, leave_one_out

CSV_NAME = "validation/trn1_training.csv"


@dataclass(frozen=True)
class TrainingRun:
    """One published run (trn1.32xlarge cluster)."""

    model: str
    nodes: int
    tp: int
    pp: int
    dp: int
    seq_len: int
    global_batch: int
    micro_batch: int
    seq_per_s: float
    neuron_version: str

    @property
    def label(self) -> str:
        return f"{self.model} {self.nodes}n TP{self.tp} PP{self.pp} s{self.seq_len}"


@lru_cache(maxsize=1)
def published_runs() -> tuple[TrainingRun, ...]:
    """The visible published runs (validation data, not inputs)."""
    with open(data_dir() / CSV_NAME, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return tuple(TrainingRun(r["model"], int(r["nodes"]), int(r["tp"]), int(r["pp"]), int(r["dp"]), int(r["seq_len"]),
                             int(r["global_batch"]), int(r["micro_batch"]), float(r["seq_per_s"]), r["neuron_version"])
                 for r in rows)


def predict(run: TrainingRun, residual: float | None = None, instance: str = "trn1.32xlarge"):
    """The :class:`~trnsim.training.Estimate` of ``run``'s published plan (``residual`` as in estimate)."""
    return estimate(run.model, instance, run.nodes, run.tp, run.pp, run.dp, seq_len=run.seq_len,
                    global_batch=run.global_batch, micro_batch=run.micro_batch, zero1=True, residual=residual)


def _predictor(runs):
    cache: dict[tuple[int, float], float] = {}

    def f(i: int, factor: float) -> float:
        key = (i, round(factor, 9))
        if key not in cache:
            cache[key] = predict(runs[i], residual=factor).seq_per_s
        return cache[key]
    return f


def validate() -> tuple[list[Row], float]:
    """(leave-one-out rows, factor fitted on all rows) for the published trn1 training runs."""
    runs = published_runs()
    return leave_one_out([r.label for r in runs], [r.seq_per_s for r in runs], _predictor(runs),
                         lo=0.1, hi=1.5)


def calibrate_residual() -> float:
    """The compiled-matmul efficiency fitted on all visible rows (what data/training.json stores)."""
    runs = published_runs()
    return fit_factor(_predictor(runs), [r.seq_per_s for r in runs], list(range(len(runs))), lo=0.1, hi=1.5)


def gpu_reference_rows() -> tuple[list[str], list[float], list[float]]:
    """(names, predicted TFLOPS per GPU, published TFLOPS per GPU) for the Megatron-LM A100 runs.

    Physics only (the GPU reference system has no calibrated residual): each published
    configuration (Narayanan et al. 2021 Tables 1 and 2: model, TP, PP, GPUs, batch, full
    recompute, no ZeRO, no sequence parallelism) goes through :func:`estimate` on the
    DGX A100 system of ``data/training.json``.
    """
    from trnsim.training._data import load

    val = load("training.json")["validation"]
    names, pred, pub = [], [], []
    for key in ("megatron_table1", "megatron_table2_ptdp"):
        t = val[key]
        for name, tp, pp, gpus, batch, tflops, _ in t["rows"]:
            e = estimate(name, t["system"], nodes=gpus // 8, tp=tp, pp=pp, seq_len=t["seq_len"], global_batch=batch,
                         recompute="full", zero1=False, sequence_parallel=False)
            names.append(f"{name.split('-')[-1]} on {gpus} GPUs")
            pred.append(e.achieved_tflops_per_device)
            pub.append(float(tflops))
    return names, pred, pub
