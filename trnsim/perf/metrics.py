"""neuron-profile's summary metrics, computed from a simulated timeline (pure functions, numpy).

Definitions follow the Neuron Explorer profile schema (aws-neuron-sdk
``tools/neuron-explorer/profile-schema-reference.rst`` @81ce03ae):

- *active time* of an engine: time during which it processes at least one instruction (union of its
  instruction intervals); *instruction time*: the sum of its instruction durations (overlaps counted
  twice); for the Tensor Engine both LoadWeights and MultiplyMoving count (data/tensor_engine.json).
- *DMA active time*: time during which at least one DMA transfer is moving data.
- *Collective active time* (trnsim): time during which an ``nki.collectives`` call is in flight, each
  priced by ``trnsim.cluster.cost_collective`` (trnsim.perf.collective).
- *HFU*: all Tensor Engine FLOPs / (peak ops/s x total time); *MFU*: the same for matmul FLOPs only
  (Tensor Engine transposes excluded); peak ops/s = 2 x PE rows x PE columns x clock (the BF16 peak,
  also for fp32 matmuls, as the profiler does).
- *MFU max achievable*: (model FLOPs / HBM bytes) / (peak ops/s / hbm_max_bandwidth), capped at 100%;
  *MBU*: HBM bytes / total time / hbm_max_bandwidth. The schema defines hbm_max_bandwidth as the
  bandwidth of one HBM stack, the same for LNC1 and LNC2: the chip's HBM bandwidth / its HBM stacks
  (``ChipSpec.hbm_stack_gbytes_per_s``; trn1 410 GiB/s = a core's share, trn2 725 GB/s = two cores' share).
- An LNC=2 launch (``Timeline.cores == 2``) is reported as one logical core: peaks are doubled and an
  engine is "active" while either physical core's copy of it is busy.
Times in microseconds, rates in GB/s (= bytes/ns).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from trnsim.perf.cost import engine_clock_ghz, matmul_split
from trnsim.perf.schedule import COLLECTIVE, DMA, ENGINE_NAMES, TENSOR, Timeline

_MATRIX_OPCODES = ("nc_matmul", "nc_transpose")


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length covered by the intervals [starts[i], ends[i]] (same unit as the inputs)."""
    if starts.size == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    prev_end = np.concatenate(([s[0]], e[:-1]))
    seg_start = np.maximum(s, prev_end)
    return float(np.clip(e - seg_start, 0.0, None).sum() + 0.0)


@dataclass(frozen=True)
class TensorSplit:
    """Per Tensor Engine instruction (arrays aligned with ``index``): LoadWeights and MultiplyMoving time in ns."""

    index: np.ndarray
    load_weights_ns: np.ndarray
    multiply_moving_ns: np.ndarray
    is_matrix: np.ndarray          # True for nc_matmul / nc_transpose (two hardware instructions each)
    is_matmul: np.ndarray          # True for nc_matmul only (model FLOPs)


def tensor_split(trace: Any, tl: Timeline, core: Any) -> TensorSplit:
    """LoadWeights / MultiplyMoving durations of every Tensor Engine instruction (cost.matmul_split)."""
    idx = np.flatnonzero(tl.engine == TENSOR)
    clock = engine_clock_ghz(core, "tensor")
    lw = np.zeros(idx.size)
    mm = np.zeros(idx.size)
    is_matrix = np.zeros(idx.size, dtype=bool)
    is_matmul = np.zeros(idx.size, dtype=bool)
    cache: dict = {}
    dur = tl.end_ns[idx] - tl.start_ns[idx]
    for j, i in enumerate(idx.tolist()):
        ins = trace.instructions[i]
        if ins.opcode not in _MATRIX_OPCODES:
            mm[j] = dur[j]
            continue
        is_matrix[j] = True
        is_matmul[j] = ins.opcode == "nc_matmul"
        a = ins.attrs or {}
        key = (ins.opcode, a.get("stationary_free"), a.get("moving_free"),
               tuple((o.shape, o.dtype) for o in ins.reads[:2]))
        hit = cache.get(key)
        if hit is None:
            sp = matmul_split(ins, core)
            hit = cache[key] = (sp.load_weights_cycles / clock, sp.multiply_moving_cycles / clock)
        lw[j] = min(hit[0], dur[j])
        mm[j] = min(hit[1], dur[j])
    return TensorSplit(idx, lw, mm, is_matrix, is_matmul)


def dma_throughput_series(tl: Timeline, bytes_moved: np.ndarray, bins: int = 200,
                          time_range_us: tuple[float, float] | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DMA throughput over time: (bin centres in us, GB/s in each bin, cumulative GB/s since the kernel start),
    over the whole run or ``time_range_us``. Each transfer's bytes are spread evenly over its data-moving
    interval [end - data, end]."""
    if bins < 1:
        raise ValueError(f"dma_throughput_series: bins={bins} must be >= 1")
    lat = float(tl.latency_ns)
    lo, hi = (0.0, max(lat, 1e-9)) if time_range_us is None else (1e3 * time_range_us[0], 1e3 * time_range_us[1])
    if hi <= lo:
        raise ValueError(f"dma_throughput_series: time_range_us={time_range_us} must have start < end")
    edges = np.linspace(lo, hi, bins + 1)
    idx = np.flatnonzero((tl.engine == DMA) & (tl.dma_data_ns > 0))
    if idx.size == 0:
        z = np.zeros(bins)
        return (edges[:-1] + edges[1:]) / 2e3, z, z.copy()
    e = tl.end_ns[idx]
    s = e - tl.dma_data_ns[idx]
    rate = bytes_moved[idx] / (e - s)
    t = np.concatenate((s, e))
    d = np.concatenate((rate, -rate))
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    slope = np.cumsum(d)
    integral = np.concatenate(([0.0], np.cumsum(slope[:-1] * np.diff(t))))
    f = np.interp(edges, t, integral, left=0.0, right=float(integral[-1]))
    width = np.diff(edges)
    per_bin = np.diff(f) / width
    cumulative = np.where(edges[1:] > 0, f[1:] / np.maximum(edges[1:], 1e-12), 0.0)
    return (edges[:-1] + edges[1:]) / 2e3, per_bin, cumulative


@dataclass(frozen=True)
class NeuronProfileMetrics:
    """The summary numbers neuron-profile shows for one NeuronCore, in its vocabulary."""

    total_time_us: float
    active_time_us: Mapping[str, float]            # tensor, vector, scalar, gpsimd, dma, collective
    active_time_pct: Mapping[str, float]
    instruction_time_us: Mapping[str, float]       # tensor, vector, scalar, gpsimd, collective
    instruction_count: Mapping[str, int]           # hardware instructions (tensor: 2 per matmul/transpose)
    matmul_instruction_count: int                  # LoadWeights + MultiplyMoving of nc_matmul
    tensor_engine_instruction_count: int
    tensor_matrix_active_time_us: float            # MultiplyMoving only (the TensorMatrix row)
    hfu_estimated_pct: float
    mfu_estimated_pct: float
    mfu_max_achievable_estimated_pct: float
    dma_active_time_us: float
    dma_active_time_pct: float
    dma_transfer_average_bytes: float
    mbu_estimated_pct: float                       # HBM bytes / (latency x one HBM stack's bandwidth)
    peak_ops_per_s: float
    hbm_max_gbytes_per_s: float                    # neuron-profile's hbm_max_bandwidth: one HBM stack

    def rows(self) -> list[tuple[str, str]]:
        """(name, value) rows in neuron-profile's wording, for printing."""
        out = [("Total time", f"{self.total_time_us / 1e3:,.3f} ms")]
        for key, label in (("tensor", "Tensor Engine"), ("vector", "Vector Engine"), ("scalar", "Scalar Engine"),
                           ("gpsimd", "GpSimd Engine")):
            if self.instruction_count.get(key, 0) == 0:
                continue
            out.append((f"{label} Active Time", f"{self.active_time_us[key] / 1e3:,.3f} ms "
                                                f"({self.active_time_pct[key]:.2f}%)"))
            out.append((f"{label} Instruction Time", f"{self.instruction_time_us[key] / 1e3:,.3f} ms"))
            out.append((f"{label} Instruction Count", f"{self.instruction_count[key]:,}"))
        if self.instruction_count.get("collective", 0):
            out.append(("Collective Active Time", f"{self.active_time_us['collective'] / 1e3:,.3f} ms "
                                                  f"({self.active_time_pct['collective']:.2f}%)"))
            out.append(("Collective Instruction Count", f"{self.instruction_count['collective']:,}"))
        out += [("Matmul Instruction Count", f"{self.matmul_instruction_count:,}"),
                ("Hfu Estimated Percent", f"{self.hfu_estimated_pct:.2f}%"),
                ("Mfu Estimated Percent", f"{self.mfu_estimated_pct:.2f}%"),
                ("Mfu Max Achievable Estimated Percent", f"{self.mfu_max_achievable_estimated_pct:.2f}%"),
                ("Dma Active Time", f"{self.dma_active_time_us / 1e3:,.3f} ms ({self.dma_active_time_pct:.2f}%)"),
                ("Dma Transfer Average Bytes", f"{self.dma_transfer_average_bytes:,.0f} B"),
                ("Mbu Estimated Percent", f"{self.mbu_estimated_pct:.2f}%")]
        return out

    def table(self) -> str:
        rows = self.rows()
        w = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)


def neuron_profile_metrics(trace: Any, tl: Timeline, core: Any, chip: Any, split: TensorSplit | None = None,
                           hbm_bytes: float | None = None) -> NeuronProfileMetrics:
    """Compute NeuronProfileMetrics from a trace and its timeline (see the module docstring for definitions)."""
    lat = tl.latency_ns
    ins = trace.instructions
    split = split if split is not None else tensor_split(trace, tl, core)
    active, itime, count = {}, {}, {}
    for code, name in enumerate(ENGINE_NAMES[:4]):
        idx = np.flatnonzero(tl.engine == code)
        active[name] = union_length(tl.start_ns[idx], tl.end_ns[idx]) / 1e3
        if code == TENSOR:
            itime[name] = float(split.load_weights_ns.sum() + split.multiply_moving_ns.sum()) / 1e3
            count[name] = int(idx.size + split.is_matrix.sum())
        else:
            itime[name] = float((tl.end_ns[idx] - tl.start_ns[idx]).sum()) / 1e3
            count[name] = int(idx.size)
    didx = np.flatnonzero((tl.engine == DMA) & (tl.dma_data_ns > 0))
    d_end = tl.end_ns[didx]
    active["dma"] = union_length(d_end - tl.dma_data_ns[didx], d_end) / 1e3
    count["dma"] = int(np.count_nonzero(tl.engine == DMA))
    cidx = np.flatnonzero(tl.engine == COLLECTIVE)
    active["collective"] = union_length(tl.start_ns[cidx], tl.end_ns[cidx]) / 1e3
    itime["collective"] = float((tl.end_ns[cidx] - tl.start_ns[cidx]).sum()) / 1e3
    count["collective"] = int(cidx.size)
    mm_end = tl.end_ns[split.index]
    tm_active = union_length(mm_end - split.multiply_moving_ns, mm_end) / 1e3
    pct = {k: (100.0 * v * 1e3 / lat if lat > 0 else 0.0) for k, v in active.items()}
    peak = tl.cores * 2.0 * core.pe_rows * core.pe_cols * engine_clock_ghz(core, "tensor") * 1e9
    flops_t = np.fromiter((ins[i].flops for i in split.index.tolist()), dtype=np.float64, count=split.index.size)
    hw_flops = float(flops_t.sum())
    model_flops = float(flops_t[split.is_matmul].sum())
    secs = lat * 1e-9
    hfu = 100.0 * hw_flops / (peak * secs) if secs > 0 else 0.0
    mfu = 100.0 * model_flops / (peak * secs) if secs > 0 else 0.0
    # profile-schema-reference: MBU and MFU max achievable divide by hbm_max_bandwidth, "the maximum HBM bandwidth of
    # a HBM stack", the same for LNC1 and LNC2 (trn2: 2.9 TB/s / 4 stacks = 725 GB/s, twice a core's share)
    hbm_max = float(chip.hbm_stack_gbytes_per_s)
    if hbm_bytes is None:
        nbytes = np.fromiter((ins[i].bytes_moved for i in didx.tolist()), dtype=np.float64, count=didx.size)
        hbm_bytes = float((nbytes * tl.hbm_sides()[didx]).sum())   # an HBM -> HBM copy crosses HBM twice
    if hbm_bytes > 0:
        mfu_max = min(100.0, 100.0 * (model_flops / hbm_bytes) / (peak / (hbm_max * 1e9)))
    else:
        mfu_max = 100.0 if model_flops > 0 else 0.0
    dma_all = np.flatnonzero(tl.engine == DMA)
    avg_bytes = float(np.mean([ins[i].bytes_moved for i in dma_all.tolist()])) if dma_all.size else 0.0
    mbu = 100.0 * hbm_bytes / (lat * hbm_max) if lat > 0 else 0.0
    n_mm = int(split.is_matmul.sum())
    return NeuronProfileMetrics(
        total_time_us=lat / 1e3, active_time_us=active, active_time_pct=pct, instruction_time_us=itime,
        instruction_count=count, matmul_instruction_count=2 * n_mm, tensor_engine_instruction_count=count["tensor"],
        tensor_matrix_active_time_us=tm_active, hfu_estimated_pct=hfu, mfu_estimated_pct=mfu,
        mfu_max_achievable_estimated_pct=mfu_max, dma_active_time_us=active["dma"], dma_active_time_pct=pct["dma"],
        dma_transfer_average_bytes=avg_bytes, mbu_estimated_pct=mbu, peak_ops_per_s=peak,
        hbm_max_gbytes_per_s=hbm_max)


__all__ = ["NeuronProfileMetrics", "TensorSplit", "dma_throughput_series", "neuron_profile_metrics",
           "tensor_split", "union_length"]
