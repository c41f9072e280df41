"""DMA transfer cost: engines used, descriptor efficiency, fixed latency, HBM ceiling.

Facts (hardware.md section 5, nki.md section 4.4):
- 16 DMA engines per NeuronCore, each serving ~8 of the 128 SBUF partitions, one transfer at a
  time (N-DMA); a transfer over P partitions uses ``min(16, ceil(P / 8))`` engines.
- per-engine rate: the catalog's ``dma_engine_gbytes_per_s``, the achievable 17 / 23 / 33 B/ns
  (TRN1/2/3, N-DMABW); why this and not the theoretical 27.2 / 38.4 GB/s is recorded in
  data/perf_model.json (``dma_engine_rate_choice``).
- a fixed ~1,300 ns per transfer for descriptor setup, synchronisation and semaphore-to-start
  (N-DMABW, catalog ``dma_fixed_cost_ns``). Within a queue the set-up of the next transfer overlaps the
  data of the current one, so a lone transfer takes ``fixed + data`` but a queue issues one transfer per
  ``max(fixed, data)`` (perf_model.json ``dma_queue_occupancy``; ``DmaPlan.queue_ns``): a stream of small
  transfers in one queue is limited by the transfer rate, not by bandwidth.
- a partition row split into several contiguous runs pays a descriptor cost per extra run
  (perf_model.json ``dma_descriptor_overhead_bytes``: the documented 256 B overhead-bound threshold).
- the chip's HBM bandwidth divided by its NeuronCores caps the aggregate rate of a core's
  DMA engines for transfers that touch HBM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trnsim.nki.trace import Instruction
from trnsim.perf import model_data


@dataclass(frozen=True)
class DmaParams:
    """DMA constants of one target core (units in the names)."""

    engines: int
    partitions_per_engine: int
    engine_bytes_per_ns: float          # achievable per-engine rate (perf_model.json)
    fixed_ns: float                     # per-transfer latency (catalog dma_fixed_cost_ns)
    descriptor_overhead_bytes: float    # byte-equivalents per contiguous run
    hbm_core_bytes_per_ns: float        # chip HBM GB/s / NeuronCores per chip (1 GB/s = 1 B/ns)

    @property
    def hbm_capped_engine_bytes_per_ns(self) -> float:
        """Per-engine rate when all engines stream from HBM at once (the HBM share caps it)."""
        return min(self.engine_bytes_per_ns, self.hbm_core_bytes_per_ns / self.engines)

    @property
    def peak_bytes_per_ns(self) -> float:
        """Aggregate ceiling of one core's HBM traffic."""
        return self.hbm_capped_engine_bytes_per_ns * self.engines


def dma_params(core: Any, chip: Any) -> DmaParams:
    """Build DmaParams from the catalog CoreSpec/ChipSpec and perf_model.json."""
    rate = float(core.dma_engine_gbytes_per_s)  # GB/s == B/ns; choice documented in perf_model.json
    hbm = float(chip.hbm_gbytes_per_s) / float(chip.neuroncores)
    return DmaParams(
        engines=int(core.dma_engines),
        partitions_per_engine=int(core.dma_partitions_per_engine),
        engine_bytes_per_ns=rate,
        fixed_ns=float(core.dma_fixed_cost_ns),
        descriptor_overhead_bytes=float(model_data.value("dma_descriptor_overhead_bytes")),
        hbm_core_bytes_per_ns=hbm,
    )


@dataclass(frozen=True)
class DmaPlan:
    """How one transfer spreads over the DMA engines."""

    engines_used: int
    bytes_total: int
    partitions: int
    bytes_per_partition: float
    descriptor_bytes: float             # size of one contiguous run
    descriptors_per_engine: int
    bytes_per_engine: float
    touches_hbm: bool
    data_ns_per_engine: float           # time each engine moves data (without the fixed latency)
    efficiency: float                   # descriptor efficiency: payload / (payload + overhead)
    fixed_ns: float = 0.0               # per-transfer fixed cost (catalog dma_fixed_cost_ns)
    hbm_sides: int = 0                  # 0, 1, or 2 for an HBM -> HBM copy (it reads and writes HBM)

    @property
    def queue_ns(self) -> float:
        """Time the transfer occupies its queue: ``max(fixed, data)`` (perf_model.json dma_queue_occupancy)."""
        return max(self.fixed_ns, self.data_ns_per_engine)


def partitions_on_busiest_engine(partitions: int, engines: int, partitions_per_engine: int) -> int:
    """Partitions the busiest of ``engines`` engines moves: each engine serves a block of
    ``partitions_per_engine`` consecutive partitions (perf_model.json dma_engine_assignment, N-DMA: "each engine
    typically serves 8 of 128 partitions"), so 9 partitions are 8 + 1, not 5 + 4; beyond ``engines`` blocks the
    partitions are shared evenly."""
    return max(math.ceil(partitions / engines), min(partitions, partitions_per_engine))


def dma_plan(instr: Instruction, params: DmaParams) -> DmaPlan:
    """Split a dma_copy over engines and price each engine's share (pure)."""
    attrs = instr.attrs or {}
    nbytes = int(instr.bytes_moved)
    if nbytes < 0:
        raise ValueError(f"DMA instruction {instr.index}: bytes_moved={nbytes} must be >= 0")
    parts = int(attrs.get("partitions", instr.partitions) or 1)
    parts = max(parts, 1)
    bpp = float(attrs.get("bytes_per_partition", nbytes / parts))
    runs = [o.contiguous_bytes for o in (instr.reads + instr.writes) if o.contiguous_bytes > 0]
    desc = min([bpp] + runs) if bpp > 0 else 0.0
    desc = max(desc, 1.0)
    descs_per_partition = max(1, math.ceil(bpp / desc)) if bpp > 0 else 0
    n_eng = max(1, min(params.engines, math.ceil(parts / params.partitions_per_engine)))
    parts_per_eng = partitions_on_busiest_engine(parts, n_eng, params.partitions_per_engine)
    bytes_e = parts_per_eng * bpp
    extra_descs_e = parts_per_eng * (descs_per_partition - 1) if descs_per_partition > 1 else 0
    buffers = {o.buffer for o in instr.reads + instr.writes}
    touches_hbm = "hbm" in buffers or not buffers
    # an HBM -> HBM copy moves its bytes through HBM twice (read, then write): the core's HBM share caps the
    # payload rate at half
    hbm_sides = (any(o.buffer == "hbm" for o in instr.reads) + any(o.buffer == "hbm" for o in instr.writes)
                 if buffers else 1)
    rate = params.hbm_capped_engine_bytes_per_ns if touches_hbm else params.engine_bytes_per_ns
    if hbm_sides > 1:
        rate = min(params.engine_bytes_per_ns, params.hbm_core_bytes_per_ns / (params.engines * hbm_sides))
    overhead_b = extra_descs_e * params.descriptor_overhead_bytes
    data_ns = (bytes_e + overhead_b) / rate if nbytes > 0 else 0.0
    eff = bytes_e / (bytes_e + overhead_b) if bytes_e > 0 else 0.0
    return DmaPlan(n_eng, nbytes, parts, bpp, desc, parts_per_eng * descs_per_partition, bytes_e, touches_hbm,
                   data_ns, eff, params.fixed_ns, int(hbm_sides))


def dma_cost_ns(instr: Instruction, params: DmaParams) -> float:
    """Latency of one isolated transfer in ns: fixed cost, then the slowest engine's data time.
    (Back to back in one queue, transfers follow each other every ``DmaPlan.queue_ns``.)"""
    return params.fixed_ns + dma_plan(instr, params).data_ns_per_engine


def stream_throughput_fraction(bytes_per_partition: float, params: DmaParams, partitions: int = 128) -> float:
    """Steady-state throughput of back-to-back [partitions, bytes_per_partition] HBM loads in ONE queue, as a
    fraction of the core's DMA peak: bytes per transfer / (queue time x peak). Pure formula of the model,
    checked against the published curve (data/dma_throughput_curve.json)."""
    if bytes_per_partition <= 0 or partitions <= 0:
        raise ValueError(f"stream_throughput_fraction: bytes_per_partition={bytes_per_partition} and "
                         f"partitions={partitions} must be > 0")
    n_eng = max(1, min(params.engines, math.ceil(partitions / params.partitions_per_engine)))
    bytes_e = partitions_on_busiest_engine(partitions, n_eng, params.partitions_per_engine) * bytes_per_partition
    data = bytes_e / params.hbm_capped_engine_bytes_per_ns
    return partitions * bytes_per_partition / (max(params.fixed_ns, data) * params.peak_bytes_per_ns)


def published_curve(params: DmaParams) -> list[tuple[int, float]]:
    """AWS's measured [128, B] DMA throughput curve (data/dma_throughput_curve.json, validation only) as
    (bytes per partition, GB/s) at this core's DMA peak, to draw beside the model's curve."""
    from trnsim.catalog.datafiles import load_json

    pts = load_json("dma_throughput_curve.json")["points"]
    return [(int(p["bytes_per_partition"]), float(p["fraction_of_peak"]) * params.peak_bytes_per_ns) for p in pts]


__all__ = ["DmaParams", "DmaPlan", "dma_params", "dma_plan", "dma_cost_ns", "stream_throughput_fraction",
           "partitions_on_busiest_engine",
           "published_curve"]
