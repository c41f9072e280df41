"""Profile: what a hardware profiler would tell you about a kernel, from the simulated timeline.

``profile(kernel, *arrays, target=, numerics=)`` traces the kernel with trnsim.nki, schedules it
(trnsim.perf.schedule) and summarises: latency, per-engine busy time and utilisation, DMA bytes
and transfers, FLOPs and achieved TFLOP/s, HBM bandwidth, peak SBUF/PSUM occupancy, the
instruction timeline, and a one-paragraph ``summary()`` naming the bottleneck from the
critical path. Times in microseconds unless the name says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from trnsim.nki.trace import Trace
from trnsim.perf import model_data
from trnsim.perf.collective import CollectiveCost, describe
from trnsim.perf.cost import tensor_peak_tflops
from trnsim.perf.dma import dma_params
from trnsim.perf.metrics import NeuronProfileMetrics, TensorSplit, dma_throughput_series, neuron_profile_metrics, tensor_split
from trnsim.perf.schedule import DMA, ENGINE_NAMES, Timeline, _resolve_target, no_gc, schedule

ENGINE_LABELS = {"tensor": "Tensor Engine", "vector": "Vector Engine", "scalar": "Scalar Engine",
                 "gpsimd": "GpSimd Engine", "dma": "DMA", "collective": "Collective"}


@dataclass(frozen=True)
class Occupancy:
    """On-chip memory in use over time (bytes per partition; an NKI allocation uses the same
    byte range in every partition it spans, so bytes per partition is what fills up)."""

    times_us: np.ndarray
    sbuf_bytes_per_partition: np.ndarray
    psum_bytes_per_partition: np.ndarray
    sbuf_capacity_bytes_per_partition: int
    psum_capacity_bytes_per_partition: int


@dataclass(frozen=True)
class Profile:
    """Simulated profile of one kernel run on one NeuronCore."""

    kernel_name: str
    target: str
    latency_us: float
    engine_busy_us: Mapping[str, float]          # tensor, vector, scalar, gpsimd, dma (mean per DMA engine), collective
    engine_utilisation: Mapping[str, float]      # busy / latency, 0..1
    critical_path_us: Mapping[str, float]        # critical path time per engine (+ dma_fixed, wait)
    instructions: int
    instructions_by_engine: Mapping[str, int]
    dma_bytes: int
    dma_transfers: int
    hbm_bytes: int                               # HBM bytes moved by transfers (an HBM -> HBM copy counts twice)
    dma_bytes_per_partition_median: float        # median over transfers, weighted by bytes
    dma_efficiency: float                        # bytes-weighted descriptor efficiency (0..1)
    flops: int
    tensor_flops: int
    achieved_tflops: float                       # flops / latency
    tensor_peak_tflops: float                    # bf16 peak (fp32 peak if most matmul FLOPs are fp32)
    pct_of_tensor_peak: float                    # tensor_flops / latency / peak x 100
    hbm_gbytes_per_s: float                      # achieved HBM traffic rate
    hbm_peak_gbytes_per_s: float                 # per-core ceiling of DMA traffic (min(16 x engine rate, HBM share))
    peak_sbuf_bytes_per_partition: int
    peak_psum_bytes_per_partition: int
    sbuf_capacity_bytes_per_partition: int
    psum_capacity_bytes_per_partition: int
    timeline: Timeline = field(repr=False)
    trace: Trace = field(repr=False)
    occupancy: Occupancy = field(repr=False)
    outputs: Any = field(default=None, repr=False)
    notes: tuple[str, ...] = ()
    metrics: NeuronProfileMetrics | None = field(default=None, repr=False)   # neuron-profile's summary numbers
    tensor_split: TensorSplit | None = field(default=None, repr=False)      # LoadWeights / MultiplyMoving per matmul

    # ---- neuron-profile vocabulary (trnsim.perf.metrics) ----
    @property
    def total_latency_us(self) -> float:
        return self.latency_us

    @property
    def active_time_us(self) -> Mapping[str, float]:
        """Per engine (tensor, vector, scalar, gpsimd, dma): time processing at least one instruction / transfer."""
        return self.metrics.active_time_us

    @property
    def active_time_pct(self) -> Mapping[str, float]:
        return self.metrics.active_time_pct

    @property
    def instruction_time_us(self) -> Mapping[str, float]:
        return self.metrics.instruction_time_us

    @property
    def matmul_instruction_count(self) -> int:
        """LoadWeights + MultiplyMoving: two hardware instructions per nc_matmul."""
        return self.metrics.matmul_instruction_count

    @property
    def tensor_engine_instruction_count(self) -> int:
        return self.metrics.tensor_engine_instruction_count

    @property
    def hfu_pct(self) -> float:
        return self.metrics.hfu_estimated_pct

    @property
    def mfu_pct(self) -> float:
        return self.metrics.mfu_estimated_pct

    @property
    def mfu_max_achievable_pct(self) -> float:
        return self.metrics.mfu_max_achievable_estimated_pct

    @property
    def dma_active_pct(self) -> float:
        return self.metrics.dma_active_time_pct

    def dma_throughput(self, bins: int = 200, time_range_us: tuple[float, float] | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """DMA throughput over time: (bin centres in us, GB/s per bin, cumulative GB/s since the start)."""
        nbytes = np.fromiter((x.bytes_moved for x in self.trace.instructions), dtype=np.float64,
                             count=len(self.trace.instructions))
        return dma_throughput_series(self.timeline, nbytes, bins, time_range_us)

    def neuron_profile_table(self) -> str:
        """The summary numbers in neuron-profile's wording."""
        return self.metrics.table()

    @property
    def collectives(self) -> list[CollectiveCost]:
        """Each nki.collectives call in program order, as priced by trnsim.cluster.cost_collective."""
        return [self.timeline.collectives[i] for i in sorted(self.timeline.collectives)]

    @property
    def collective_us(self) -> float:
        """Time spent in nki.collectives calls (their own engine row; may overlap compute)."""
        return float(self.engine_busy_us.get("collective", 0.0))

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per HBM byte (inf if no HBM traffic)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")

    @property
    def bottleneck(self) -> str:
        """Largest share of the critical path: an engine name, "dma" or "wait"."""
        cp = dict(self.critical_path_us)
        cp["dma"] = cp.get("dma", 0.0) + cp.pop("dma_fixed", 0.0)
        if not cp or max(cp.values()) <= 0:
            return "none"
        return max(cp, key=cp.get)

    def summary(self) -> str:
        """One paragraph: the bottleneck with its evidence and what would help."""
        return _summary(self)

    def table(self) -> str:
        """A small fixed-width table of the headline numbers."""
        rows = [("latency", f"{self.latency_us:,.2f} us"),
                ("instructions", f"{self.instructions:,}"),
                ("FLOPs", f"{self.flops:.3e}"),
                ("achieved", f"{self.achieved_tflops:.2f} TFLOP/s ({self.pct_of_tensor_peak:.1f}% of Tensor Engine peak)"),
                ("DMA", f"{self.dma_transfers:,} transfers, {self.dma_bytes / 2**20:,.2f} MiB, "
                        f"median {self.dma_bytes_per_partition_median:,.0f} B/partition"),
                ("HBM", f"{self.hbm_gbytes_per_s:.1f} GB/s of {self.hbm_peak_gbytes_per_s:.0f} GB/s"),
                ("peak SBUF", f"{self.peak_sbuf_bytes_per_partition / 1024:.1f} KiB of "
                              f"{self.sbuf_capacity_bytes_per_partition / 1024:.0f} KiB per partition"),
                ("peak PSUM", f"{self.peak_psum_bytes_per_partition / 1024:.1f} KiB of "
                              f"{self.psum_capacity_bytes_per_partition / 1024:.0f} KiB per partition")]
        for name in ("tensor", "vector", "scalar", "gpsimd", "dma"):
            rows.append((f"{name} busy", f"{self.engine_busy_us[name]:,.2f} us ({100 * self.engine_utilisation[name]:.0f}%)"))
        if self.instructions_by_engine.get("collective", 0):
            rows.append(("collective busy", f"{self.collective_us:,.2f} us ({100 * self.engine_utilisation['collective']:.0f}%), "
                                            f"{self.instructions_by_engine['collective']} calls"))
        w = max(len(r[0]) for r in rows)
        return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)

    def __str__(self) -> str:
        return f"Profile({self.kernel_name} on {self.target}: {self.latency_us:,.2f} us)\n{self.table()}"


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    if values.size == 0:
        return 0.0
    order = np.argsort(values)
    cw = np.cumsum(weights[order])
    if cw[-1] <= 0:
        return float(np.median(values))
    return float(values[order][np.searchsorted(cw, 0.5 * cw[-1])])


def _occupancy(trace: Trace, tl: Timeline, core: Any) -> Occupancy:
    ev_t: list[float] = []
    ev_s: list[float] = []
    ev_p: list[float] = []
    for a in trace.allocations:
        if a.buffer not in ("sbuf", "psum") or a.first_use < 0:
            continue
        t0 = float(tl.start_ns[a.first_use])
        t1 = float(max(tl.end_ns[a.last_use], t0))
        b = float(a.bytes_per_partition)
        ev_t += [t0, t1]
        if a.buffer == "sbuf":
            ev_s += [b, -b]
            ev_p += [0.0, 0.0]
        else:
            ev_p += [b, -b]
            ev_s += [0.0, 0.0]
    sbuf_cap = int(core.sbuf_capacity_bytes_per_partition)
    psum_cap = int(core.psum_bytes_per_partition)
    if not ev_t:
        z = np.zeros(1)
        return Occupancy(z, z, z, sbuf_cap, psum_cap)
    t = np.asarray(ev_t)
    s = np.asarray(ev_s)
    p = np.asarray(ev_p)
    # at equal times apply frees (negative) before allocations
    order = np.lexsort((np.sign(s + p), t))
    t, s, p = t[order], np.cumsum(s[order]), np.cumsum(p[order])
    return Occupancy(t / 1e3, s, p, sbuf_cap, psum_cap)


def profile_trace(trace: Trace, target: Any = None, outputs: Any = None) -> Profile:
    """Schedule ``trace`` and build its Profile (target defaults to the trace's)."""
    with no_gc():
        return _profile_trace(trace, target, outputs)


def _profile_trace(trace: Trace, target: Any, outputs: Any) -> Profile:
    tgt = _resolve_target(target if target is not None else trace.target)
    core, chip = tgt.core, tgt.chip
    tl = schedule(trace, tgt)
    ins = trace.instructions
    lat_ns = tl.latency_ns
    lat_us = lat_ns / 1e3
    busy_ns = tl.engine_busy_ns()
    # per compute engine: busy time summed over the cores / (latency x cores); "dma" is already a per-engine mean
    util = {k: (v / lat_ns / (1 if k == "dma" else tl.cores) if lat_ns > 0 else 0.0) for k, v in busy_ns.items()}
    by_engine = {name: int((tl.engine == code).sum()) for code, name in enumerate(ENGINE_NAMES)}

    dma_mask = tl.engine == DMA
    dma_idx = np.flatnonzero(dma_mask)
    params = dma_params(core, chip)
    nbytes = np.fromiter((x.bytes_moved for x in ins), dtype=np.float64, count=len(ins))
    dma_b = nbytes[dma_idx]
    dma_bytes = int(dma_b.sum())
    hbm_bytes = int((dma_b * tl.hbm_sides()[dma_idx]).sum())   # an HBM -> HBM copy crosses HBM twice
    bpp = tl.dma_bytes_per_partition[dma_idx]
    wts = dma_b
    eff_num = float((tl.dma_efficiency[dma_idx] * dma_b).sum())
    flops = int(sum([x.flops for x in ins]))
    mm = [ins[i] for i in np.flatnonzero(tl.engine == 0)]
    tensor_flops = int(sum(x.flops for x in mm))
    fp32_flops = sum(x.flops for x in mm if x.opcode == "nc_matmul" and any(o.dtype == "float32" for o in x.reads[:2]))
    peak = tl.cores * tensor_peak_tflops(core, fp32=tensor_flops > 0 and fp32_flops > tensor_flops / 2)
    achieved = flops / lat_ns / 1e3 if lat_ns > 0 else 0.0
    tensor_tflops = tensor_flops / lat_ns / 1e3 if lat_ns > 0 else 0.0
    occ = _occupancy(trace, tl, core)
    notes = tuple(f"{op}: no documented cost formula; costed with the max(MIN_II, N) rule of thumb ({cnt} instructions)"
                  for op, cnt in sorted(tl.undocumented.items()))
    cp = {k: v / 1e3 for k, v in tl.critical_path().items()}
    split = tensor_split(trace, tl, core)
    metrics = neuron_profile_metrics(trace, tl, core, chip, split=split, hbm_bytes=float(hbm_bytes))
    return Profile(
        kernel_name=trace.kernel_name, target=str(tgt.name), latency_us=lat_us,
        engine_busy_us={k: v / 1e3 for k, v in busy_ns.items()}, engine_utilisation=util,
        critical_path_us=cp, instructions=len(ins), instructions_by_engine=by_engine,
        dma_bytes=int(dma_bytes), dma_transfers=int(dma_idx.size), hbm_bytes=int(hbm_bytes),
        dma_bytes_per_partition_median=_weighted_median(bpp, wts),
        dma_efficiency=eff_num / dma_bytes if dma_bytes else 0.0,
        flops=flops, tensor_flops=tensor_flops, achieved_tflops=achieved, tensor_peak_tflops=peak,
        pct_of_tensor_peak=100.0 * tensor_tflops / peak if peak else 0.0,
        hbm_gbytes_per_s=hbm_bytes / lat_ns if lat_ns > 0 else 0.0,
        hbm_peak_gbytes_per_s=tl.cores * params.peak_bytes_per_ns,
        peak_sbuf_bytes_per_partition=int(occ.sbuf_bytes_per_partition.max()),
        peak_psum_bytes_per_partition=int(occ.psum_bytes_per_partition.max()),
        sbuf_capacity_bytes_per_partition=occ.sbuf_capacity_bytes_per_partition,
        psum_capacity_bytes_per_partition=occ.psum_capacity_bytes_per_partition,
        timeline=tl, trace=trace, occupancy=occ, outputs=outputs, notes=notes, metrics=metrics, tensor_split=split,
    )


def profile(kernel: Any, *args: Any, target: str | None = None, numerics: bool = True, grid: Any = None,
            **kwargs: Any) -> Profile:
    """Trace ``kernel(*args)`` with trnsim.nki, schedule it on ``target`` and return a Profile.

    ``target`` None takes the same target ``nki.simulate`` runs the kernel on: the kernel's own
    (``@nki.jit(target=...)``), else ``NEURON_PLATFORM_TARGET_OVERRIDE``, else trnsim's default (trn2).
    ``numerics=False`` computes no data (shape-only), so large kernels are costed fast;
    ``outputs`` is then None. ``args`` are numpy arrays or ``nt.tensor[[shape], dtype]`` specs; other keyword
    arguments go to the kernel, and one the kernel does not take is an error naming the closest parameter.
    """
    from trnsim.nki import trace_kernel

    _check_kernel_kwargs(kernel, kwargs)
    outputs, trace = trace_kernel(kernel, *args, target=target, numerics=numerics, grid=grid, **kwargs)
    return profile_trace(trace, trace.target, outputs=outputs)


def _check_kernel_kwargs(kernel: Any, kwargs: Mapping[str, Any]) -> None:
    """A keyword ``profile`` passes on that the kernel does not take is most likely a misspelt ``profile``
    argument (``traget=``): say so, instead of the kernel's TypeError."""
    if not kwargs:
        return
    import difflib
    import inspect

    from trnsim.nki.rules import KernelError
    from trnsim.nki.runtime import as_kernel
    func = as_kernel(kernel).func          # the kernel function, as trace_kernel will call it
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    takes = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for name in kwargs:
        if name not in takes:
            ours = ["target", "numerics", "grid"]
            close = difflib.get_close_matches(name, ours + takes, n=1)
            hint = f"did you mean {close[0]}=?" if close else f"profile takes {', '.join(o + '=' for o in ours)}"
            raise KernelError("err_invalid_arguments",
                              f"profile(): keyword {name}= is neither a profile() argument nor a parameter of kernel "
                              f"{getattr(func, '__name__', 'kernel')}({', '.join(takes)})", hint, location="")


def profile_ranks(kernel: Any, world_size: int, per_rank_args: Any, *, target: str = "trn1",
                  numerics: bool = False, per_rank_kwargs: Any = None) -> list[Profile]:
    """Profile a multi-rank kernel (one using ``nki.collectives``): run it on ``world_size`` simulated ranks
    with :func:`trnsim.nki.trace_ranks` and return one Profile per rank (``profiles[r]``). Each collective
    runs on the "collective" engine row for the time :func:`trnsim.cluster.cost_collective` gives on
    ``target``'s instance (trn1 -> trn1.32xlarge, trn2 -> trn2.48xlarge). ``numerics=False`` (default) traces
    shapes only; ``per_rank_args`` as for trace_ranks (a list of argument tuples or a function rank -> args).
    """
    from trnsim.nki import trace_ranks

    outputs, traces = trace_ranks(kernel, world_size, per_rank_args, per_rank_kwargs=per_rank_kwargs,
                                  target=target, numerics=numerics)
    return [profile_trace(tr, target, outputs=out) for out, tr in zip(outputs, traces)]


def _core_chip(p: Profile) -> tuple[Any, Any]:
    tgt = _resolve_target(p.target)
    return tgt.core, tgt.chip


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _summary(p: Profile) -> str:
    lat = p.latency_us
    if lat <= 0 or p.instructions == 0:
        return f"{p.kernel_name} on {p.target}: nothing to run (no instructions)."
    cp = p.critical_path_us
    dma_data = cp.get("dma", 0.0)
    dma_fixed = cp.get("dma_fixed", 0.0)
    shares = {"dma": (dma_data + dma_fixed) / lat}
    for e in ("tensor", "vector", "scalar", "gpsimd"):
        shares[e] = cp.get(e, 0.0) / lat
    shares["wait"] = cp.get("wait", 0.0) / lat
    n_coll = p.instructions_by_engine.get("collective", 0)
    if n_coll:
        shares["collective"] = cp.get("collective", 0.0) / lat
    bott = max(shares, key=shares.get)
    small = model_data.threshold("dma_small_bytes_per_partition")
    good_engine = model_data.threshold("engine_good_utilisation")
    head = f"{p.kernel_name} on {p.target} takes {lat:,.1f} us ({p.instructions:,} instructions). "
    util = ", ".join(f"{k} {_pct(p.engine_utilisation[k])}" for k in ("tensor", "vector", "scalar", "gpsimd", "dma")
                     if p.instructions_by_engine.get(k, 0) or k == "dma")
    if n_coll:
        util += f", collective {_pct(p.engine_utilisation['collective'])}"
    tensor_part = (f"the Tensor Engine delivers {p.tensor_flops / lat / 1e6:.1f} TFLOP/s, {p.pct_of_tensor_peak:.0f}% of "
                   f"its {p.tensor_peak_tflops:.1f} TFLOP/s peak" if p.tensor_flops else "no matmuls")
    tail = (f" Engine utilisation: {util}; {tensor_part}; HBM traffic {p.hbm_gbytes_per_s:.0f} GB/s of the "
            f"{p.hbm_peak_gbytes_per_s:.0f} GB/s a core's DMA engines can move.")
    if p.metrics is not None and p.tensor_flops:
        m = p.metrics
        tail += (f" In neuron-profile terms: HFU {m.hfu_estimated_pct:.1f}%, MFU {m.mfu_estimated_pct:.1f}% of an MFU max "
                 f"achievable of {m.mfu_max_achievable_estimated_pct:.0f}% (the HBM traffic's arithmetic intensity), "
                 f"{m.matmul_instruction_count:,} matmul instructions (LoadWeights + MultiplyMoving).")
    if bott == "dma":
        b = p.dma_bytes_per_partition_median
        params = dma_params(*_core_chip(p))
        fixed_us = float(params.fixed_ns) / 1e3
        msg = (f"DMA-bound: {_pct(shares['dma'])} of the critical path is DMA "
               f"({_pct(dma_data / lat)} moving data, {_pct(dma_fixed / lat)} the fixed ~{fixed_us:.1f} us cost each "
               f"transfer pays in its queue); {p.dma_transfers:,} transfers of typically {b:,.0f} B per partition; "
               f"some DMA transfer is moving data {p.metrics.dma_active_time_pct:.0f}% of the time (neuron-profile's "
               "DMA active).")
        advice = []
        if dma_fixed > dma_data or b < small:
            advice.append(f"a queue starts one transfer per max({fixed_us:.1f} us, data time), so at {b:,.0f} B per "
                          "partition the transfer rate, not bandwidth, limits: use larger tiles to move more bytes per transfer "
                          f"(>= {2 * small / 1024:.0f} KiB per partition saturates the engines) or fewer transfers")
        if p.engine_utilisation["dma"] > 0.5 or not advice:
            advice.append(f"the {params.engines} DMA engines are each busy {_pct(p.engine_utilisation['dma'])} of the "
                          "time on average, so move fewer bytes: reuse tiles already in SBUF instead of reloading "
                          "them (hoist loads, block the loops), fuse with neighbouring operations, or use a narrower "
                          "dtype")
        msg += " Fix: " + "; ".join(advice) + "."
    elif bott == "collective":
        costs = p.collectives
        msg = (f"Collective-bound: {_pct(shares['collective'])} of the critical path is communication between ranks "
               f"({n_coll} nki.collectives call{'s' if n_coll != 1 else ''}, {p.collective_us:,.1f} us in all: "
               f"{describe(costs)}; hop latency {sum(c.alpha_us for c in costs):,.1f} us, data "
               f"{sum(c.beta_us for c in costs):,.1f} us). Fix: overlap the collectives with independent compute "
               "(issue them early, split the work so one chunk communicates while the next computes), coalesce "
               "small collectives into fewer larger ones (each pays the hop latencies), or send fewer bytes "
               "(a narrower dtype, reduce-scatter instead of all-reduce when each rank needs only its shard).")
    elif bott == "wait":
        msg = (f"Latency-bound: {_pct(shares['wait'])} of the critical path is dependency waiting and engine hand-offs, "
               "not work. Independent tiles (more buffers, interleaved iterations) would let the engines overlap.")
    else:
        label = ENGINE_LABELS[bott]
        mask = p.timeline.engine == ENGINE_NAMES.index(bott)
        n = int(mask.sum())
        ovh = float(p.timeline.overhead_ns[mask].sum()) / 1e3
        busy = p.engine_busy_us[bott]
        msg = f"{label}-bound: {_pct(shares[bott])} of the critical path runs on the {label} ({n:,} instructions)."
        if bott == "tensor":
            pe_eff = (p.tensor_flops / (busy * 1e-6) / 1e12 / p.tensor_peak_tflops) if busy > 0 else 0.0
            util = p.engine_utilisation["tensor"]
            if util >= good_engine and pe_eff >= good_engine:
                msg += (f" It is busy {_pct(util)} of the time at {_pct(pe_eff)} PE-array efficiency: near peak, "
                        "only fewer FLOPs or a faster dtype would help.")
            if pe_eff < good_engine:
                msg += (f" Its matmuls use the PE array at {_pct(pe_eff)} efficiency: use a moving free size of 512 "
                        "and a stationary free size of 128 (N < 64 still costs 64 cycles) and bf16 instead of fp32 (4x).")
            if round(100 * util) < round(100 * good_engine):
                others = {k: v for k, v in shares.items() if k != "tensor"}
                worst = max(others, key=others.get)
                what = {"dma": "DMA transfers", "wait": "dependencies and hand-offs"}.get(worst, ENGINE_LABELS.get(worst, worst))
                msg += (f" It is busy only {_pct(util)} of the time; the rest of the critical path is mostly {what} "
                        f"({_pct(others[worst])}): overlap them with matmuls (more buffers, bigger blocks).")
        else:
            frees = np.array([p.trace.instructions[i].free_elements for i in np.flatnonzero(mask)])
            med = float(np.median(frees)) if frees.size else 0.0
            msg += f" Typical free size {med:,.0f} elements per partition"
            if busy > 0 and ovh / busy > 0.2:
                msg += f"; {_pct(ovh / busy)} of its busy time is fixed overhead of dependent instructions"
            msg += (". Fix: process >= 128 elements per partition per instruction on all 128 partitions, fuse "
                    "operations (activation with scale/bias, tensor_scalar with two ops), and spread work over "
                    "Vector, Scalar and GpSimd.")
    note = (" Note: " + "; ".join(p.notes) + ".") if p.notes else ""
    return head + msg + tail + note


__all__ = ["Profile", "Occupancy", "profile", "profile_ranks", "profile_trace"]
