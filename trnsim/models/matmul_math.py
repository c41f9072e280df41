"""Back-of-envelope numbers for one NeuronCore (pure): a matmul, its tiles, and the memory they live in.

Notebooks 01 and 03. Matmul C[M, N] = A[M, K] @ B[K, N]:

* FLOPs: ``2 * M * N * K`` (one multiply and one add per term).
* HBM bytes: read A and B once and write C once, ``itemsize * (M*K + K*N + M*N)``; the intensity
  is :func:`trnsim.perf.roofline.matmul_intensity` (NKI matmul tutorial formula, nki.md s.4.3).
* Roofline time: ``max(FLOPs / Tensor Engine peak, bytes / DMA ceiling)`` with the peak and the
  ceiling from :func:`trnsim.perf.roofline.roofline` (the catalog and the DMA model).
* Tile mapping: ``nc_matmul`` takes a stationary tile [K <= 128, F <= 128] and a moving tile
  [K <= 128, F <= 512] (catalog ``TileLimits``: pmax, gemm_stationary_fmax, gemm_moving_fmax). With
  A stationary a big matmul becomes ceil(M/128) x ceil(K/128) x ceil(N/512) instructions; with B
  stationary (computing C.T) ceil(N/128) x ceil(K/128) x ceil(M/512). Each costs
  :func:`trnsim.perf.cost.matmul_cycles` Tensor Engine cycles; the cheaper orientation is used, so
  the short operand (a decode step's tokens) moves.

Memory (notebook 03):

* :func:`hierarchy_levels`: capacity and bandwidth of host DRAM, HBM, SBUF and PSUM for one core
  (catalog: host memory of the chip's largest instance per core, HBM per core, SBUF/PSUM; plus the
  order-of-magnitude on-chip and host bandwidths in data/memory_hierarchy.json).
* :func:`dma_load_cost`: one ``nl.load`` of a [P, F] tile priced by the simulator's DMA model
  (:func:`trnsim.perf.dma.dma_cost_ns` on a :func:`trnsim.perf.build.load` instruction).
* :func:`plan_tiles`: a [rows, cols] HBM tensor cut into [P, F] SBUF tiles: bytes per partition,
  SBUF and PSUM occupancy, and the time to stream all tiles, scheduled by
  :func:`trnsim.perf.schedule.schedule_instructions`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from trnsim.perf.cost import engine_clock_ghz, matmul_cycles
from trnsim.perf.roofline import Roofline, matmul_intensity, roofline

MATMUL_DTYPES: dict[str, int] = {"bfloat16": 2, "float16": 2, "float8_e4m3": 1, "float32": 4}
"""Tensor Engine input dtypes offered by the course, with bytes per element."""

MAX_DIM = 1 << 20


def _resolve_target(target: Any) -> Any:
    if isinstance(target, str):
        import trnsim

        return trnsim.target(target)
    return target


def _whole(what: str, v: Any) -> int:
    """``v`` as an int, or ValueError naming ``what`` when it is not a whole number (bool, str, 1.5, nan, inf)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) \
            or int(v) != v:
        raise ValueError(f"{what}={v!r} must be a whole number")
    return int(v)


def _check_dims(m: int, n: int, k: int) -> tuple[int, int, int]:
    out = []
    for name, v in (("M", m), ("N", n), ("K", k)):
        v = _whole(f"matmul size {name}", v)
        if not 1 <= v <= MAX_DIM:
            raise ValueError(f"matmul size {name}={v} is out of range: use 1 <= {name} <= {MAX_DIM:,}")
        out.append(v)
    return out[0], out[1], out[2]


def itemsize(dtype: str) -> int:
    """Bytes per element of a course matmul dtype; ValueError naming the choices otherwise."""
    try:
        return MATMUL_DTYPES[dtype]
    except KeyError:
        raise ValueError(f"matmul dtype {dtype!r} is not a Tensor Engine input type here; "
                         f"use one of {', '.join(MATMUL_DTYPES)}") from None


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of C[M, N] = A[M, K] @ B[K, N]: 2 * M * N * K."""
    m, n, k = _check_dims(m, n, k)
    return 2 * m * n * k


def matmul_hbm_bytes(m: int, n: int, k: int, dtype: str = "bfloat16") -> int:
    """Minimum HBM traffic: read A [M, K] and B [K, N], write C [M, N], all in ``dtype``."""
    m, n, k = _check_dims(m, n, k)
    return itemsize(dtype) * (m * k + k * n + m * n)


@dataclass(frozen=True)
class TileMapping:
    """How C = A @ B maps onto ``nc_matmul`` instructions of a 128 x 128 Tensor Engine.

    ``nc_matmul`` takes a *stationary* tile [K <= 128, F <= 128] that stays in the PE array and a
    *moving* tile [K <= 128, F <= 512] that streams through it. Either operand may be the stationary
    one: A stationary computes C tiles directly (the NKI matmul tutorial's order: its stationary ``lhsT`` tile
    is A transposed), B stationary computes C.T tiles. :func:`tile_mapping` picks the cheaper
    orientation, which lets the *short* operand move (a decode step's few tokens stream past
    weights that fill the array). ``m_tile``/``n_tile`` are the tile sizes along M and N.
    """

    m: int
    n: int
    k: int
    dtype: str
    k_tile: int                    # contraction rows per instruction (partitions, <= pmax)
    m_tile: int                    # tile size along M (<= stationary fmax if A is stationary, else <= moving fmax)
    n_tile: int                    # tile size along N (<= moving fmax if A is stationary, else <= stationary fmax)
    m_tiles: int
    n_tiles: int
    k_tiles: int
    tensor_cycles: float           # sum of matmul_cycles over all instructions
    tensor_clock_ghz: float
    pe_rows: int
    pe_cols: int
    ideal_cycles: float            # cycles if every PE did useful work every cycle at this dtype's rate
    stationary: str = "A"          # "A" (C = A @ B tiles) or "B" (C.T = B.T @ A.T tiles)
    other_cycles: float = 0.0      # Tensor Engine cycles of the other orientation (for comparison)

    @property
    def moving(self) -> str:
        """The operand that streams through the array ("A" or "B")."""
        return "B" if self.stationary == "A" else "A"

    @property
    def stationary_tile(self) -> tuple[int, int]:
        """[K, F] of the stationary tile."""
        return (self.k_tile, self.m_tile if self.stationary == "A" else self.n_tile)

    @property
    def moving_tile(self) -> tuple[int, int]:
        """[K, F] of the moving tile."""
        return (self.k_tile, self.n_tile if self.stationary == "A" else self.m_tile)

    @property
    def instructions(self) -> int:
        return self.m_tiles * self.n_tiles * self.k_tiles

    @property
    def psum_tiles(self) -> int:
        """Output tiles [m_tile, n_tile]: each is one PSUM accumulation group over the K tiles."""
        return self.m_tiles * self.n_tiles

    @property
    def tensor_time_us(self) -> float:
        return self.tensor_cycles / self.tensor_clock_ghz / 1e3

    @property
    def pe_utilisation(self) -> float:
        """Fraction of the dtype's Tensor Engine peak the tiles reach: below 1 when tiles are partly
        empty (ragged edges, K or the stationary free size < 128) or the moving free size is below
        the 64-cycle start-up latency."""
        return self.ideal_cycles / self.tensor_cycles


def _orientation_cycles(stat: int, mov: int, k: int, stat_t: int, mov_t: int, k_t: int, fp32: bool,
                        init: float) -> float:
    """Tensor Engine cycles of all instructions when the operand of free size ``stat`` is stationary."""
    kt = math.ceil(k / k_t)
    s_sizes = [(stat_t, stat // stat_t)] + ([(stat % stat_t, 1)] if stat % stat_t else [])
    v_sizes = [(mov_t, mov // mov_t)] + ([(mov % mov_t, 1)] if mov % mov_t else [])
    cycles = 0.0
    for ss, sc in s_sizes:
        for vs, vc in v_sizes:
            if sc and vc:
                cycles += sc * vc * kt * matmul_cycles(ss, vs, fp32, init)
    return cycles


def tile_mapping(m: int, n: int, k: int, dtype: str = "bfloat16", target: Any = "trn1") -> TileMapping:
    """Split C[M, N] = A[M, K] @ B[K, N] into ``nc_matmul`` tiles and price them on the Tensor Engine.

    Tiles are the largest the ISA allows (K 128, stationary free 128, moving free 512); edge tiles are
    smaller. Each instruction costs ``max(min(64, F_stationary), F_moving)`` cycles (x4 for fp32,
    :func:`trnsim.perf.cost.matmul_cycles`): 64 is the fixed matmul start-up latency (MM_INIT_LATENCY,
    N-ARCH2), so a moving tile shorter than 64 columns still pays 64 cycles. Both orientations are
    priced (A stationary, or B stationary computing C.T) and the cheaper is kept; on a tie, A.
    """
    m, n, k = _check_dims(m, n, k)
    size = itemsize(dtype)
    tgt = _resolve_target(target)
    core = tgt.core
    lim = core.tile
    fp32 = size == 4
    init = float(core.cost.mm_init_latency_cycles)
    s_max, v_max, k_t = lim.gemm_stationary_fmax, lim.gemm_moving_fmax, min(k, lim.pmax)
    a_cycles = _orientation_cycles(m, n, k, min(m, s_max), min(n, v_max), k_t, fp32, init)
    b_cycles = _orientation_cycles(n, m, k, min(n, s_max), min(m, v_max), k_t, fp32, init)
    if b_cycles < a_cycles:
        stationary, cycles, other = "B", b_cycles, a_cycles
        m_t, n_t = min(m, v_max), min(n, s_max)
    else:
        stationary, cycles, other = "A", a_cycles, b_cycles
        m_t, n_t = min(m, s_max), min(n, v_max)
    mt, nt, kt = math.ceil(m / m_t), math.ceil(n / n_t), math.ceil(k / k_t)
    # dtype slowdown as the cost formula has it (fp32: 4 passes), measured on a long moving tile
    slowdown = matmul_cycles(1, 1 << 16, fp32, init) / matmul_cycles(1, 1 << 16, False, init)
    ideal = m * n * k / (core.pe_rows * core.pe_cols) * slowdown
    return TileMapping(m, n, k, dtype, k_t, m_t, n_t, mt, nt, kt, cycles, engine_clock_ghz(core, "tensor"),
                       int(core.pe_rows), int(core.pe_cols), ideal, stationary, other)


@dataclass(frozen=True)
class MatmulEstimate:
    """Roofline estimate of one matmul on one NeuronCore. Times in microseconds."""

    m: int
    n: int
    k: int
    dtype: str
    target: str
    flops: int
    hbm_bytes: int
    roof: Roofline
    tiles: TileMapping

    @property
    def arithmetic_intensity(self) -> float:
        """FLOP per HBM byte (perf.roofline.matmul_intensity)."""
        return matmul_intensity(self.m, self.k, self.n, itemsize(self.dtype))

    @property
    def compute_time_us(self) -> float:
        """FLOPs at the Tensor Engine peak (ideal: every PE busy every cycle)."""
        return self.flops / (self.roof.peak_tflops * 1e6)

    @property
    def memory_time_us(self) -> float:
        """HBM bytes at the DMA ceiling of one core."""
        return self.hbm_bytes / (self.roof.dma_gbytes_per_s * 1e3)

    @property
    def time_us(self) -> float:
        """Roofline time: the larger of compute and memory time (perfect overlap assumed)."""
        return max(self.compute_time_us, self.memory_time_us)

    @property
    def bound(self) -> str:
        """"compute" when the intensity is at or above the ridge point, else "memory"."""
        return "compute" if self.compute_time_us >= self.memory_time_us else "memory"

    @property
    def attainable_tflops(self) -> float:
        return float(self.roof.attainable_tflops(self.arithmetic_intensity))

    @property
    def achieved_tflops(self) -> float:
        """Same as attainable (lets viz.roofline.plot_roofline draw the estimate as a point)."""
        return self.attainable_tflops

    def summary(self) -> str:
        r, t = self.roof, self.tiles
        lines = [
            f"C[{self.m:,} x {self.n:,}] = A[{self.m:,} x {self.k:,}] @ B[{self.k:,} x {self.n:,}] in {self.dtype} on {self.target}",
            f"  FLOPs {self.flops:.3e}, HBM bytes {self.hbm_bytes / 2**20:,.2f} MiB, "
            f"intensity {self.arithmetic_intensity:,.1f} FLOP/B (ridge {r.ridge_flops_per_byte:,.0f})",
            f"  compute {self.compute_time_us:,.2f} us at {r.peak_tflops:.1f} TFLOP/s; "
            f"memory {self.memory_time_us:,.2f} us at {r.dma_gbytes_per_s:,.0f} GB/s",
            f"  roofline time {self.time_us:,.2f} us -> {self.bound}-bound, {self.attainable_tflops:,.1f} TFLOP/s attainable",
            f"  tiles: {t.m_tiles} x {t.k_tiles} x {t.n_tiles} = {t.instructions:,} nc_matmul "
            f"({t.stationary} stationary [{t.stationary_tile[0]}x{t.stationary_tile[1]}], {t.moving} moving "
            f"[{t.moving_tile[0]}x{t.moving_tile[1]}]); Tensor Engine "
            f"{t.tensor_time_us:,.2f} us, PE utilisation {100 * t.pe_utilisation:.0f}%",
        ]
        note = self.fp8_note()
        if note:
            lines.append("  note: " + note)
        return "\n".join(lines)

    def fp8_note(self) -> str:
        """For FP8 where the vendor quotes more than the BF16 rate (NC-v3+ double-row FP8): say that the
        cost model (trnsim.perf) prices FP8 matmuls at the BF16 rate, so FP8 here only halves the bytes."""
        if not self.dtype.startswith("float8"):
            return ""
        import trnsim

        vendor = trnsim.target(self.target).core.tensor_tflops
        fp8, bf16 = vendor.get("fp8"), vendor.get("bf16")
        if fp8 and bf16 and fp8 > bf16:
            return (f"the vendor quotes {fp8:g} FP8 TFLOPS vs {bf16:g} BF16 (double-row FP8); the simulator's cost "
                    "model runs FP8 matmuls at the BF16 rate, so here FP8 only halves the bytes")
        return ""


def estimate(m: int, n: int, k: int, dtype: str = "bfloat16", target: Any = "trn1") -> MatmulEstimate:
    """Roofline and tile estimate of C[M, N] = A[M, K] @ B[K, N] on one NeuronCore of ``target``."""
    m, n, k = _check_dims(m, n, k)
    itemsize(dtype)
    tgt = _resolve_target(target)
    return MatmulEstimate(m, n, k, dtype, str(tgt.name), matmul_flops(m, n, k), matmul_hbm_bytes(m, n, k, dtype),
                          roofline(tgt, dtype), tile_mapping(m, n, k, dtype, tgt))


@dataclass(frozen=True)
class MatmulSetTime:
    """Tensor Engine time of a set of matmuls, each split into tiles by :func:`tile_mapping`."""

    matmuls: int
    instructions: int
    tensor_cycles: float
    ideal_cycles: float
    tensor_clock_ghz: float

    @property
    def tensor_time_us(self) -> float:
        return self.tensor_cycles / self.tensor_clock_ghz / 1e3

    @property
    def pe_utilisation(self) -> float:
        return self.ideal_cycles / self.tensor_cycles


def with_backward(shapes: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Forward matmuls (M, N, K) plus the two backward matmuls of each: dA = dC @ B.T is (M, K, N) and
    dB = A.T @ dC is (K, N, M) (3x the forward FLOPs in all, the usual 6 FLOPs per parameter per token)."""
    out = list(shapes)
    for m, n, k in shapes:
        out += [(m, k, n), (k, n, m)]
    return out


def matmul_set_time(shapes: list[tuple[int, int, int]], dtype: str = "bfloat16", target: Any = "trn1") -> MatmulSetTime:
    """Sum :func:`tile_mapping` over matmuls given as (M, N, K): the Tensor Engine time with partly
    empty tiles and the 64-cycle start-up latency counted, against ``ideal_cycles`` at full peak."""
    tgt = _resolve_target(target)
    maps = [tile_mapping(m, n, k, dtype, tgt) for m, n, k in shapes]
    if not maps:
        raise ValueError("matmul_set_time needs at least one (M, N, K) shape")
    return MatmulSetTime(len(maps), sum(t.instructions for t in maps), sum(t.tensor_cycles for t in maps),
                         sum(t.ideal_cycles for t in maps), maps[0].tensor_clock_ghz)


# ----------------------------------------------------------------------------- memory (notebook 03)


@dataclass(frozen=True)
class MemoryLevel:
    """One level of the memory hierarchy as one NeuronCore sees it."""

    name: str
    capacity_bytes: float
    bandwidth_gbytes_per_s: float
    layout: str
    source: str


def host_instance(target: Any = "trn1") -> Any:
    """The catalog instance whose host memory :func:`hierarchy_levels` divides among cores: the
    instance of ``target``'s chip with the most NeuronCores, UltraServers excluded (trn1 -> trn1.32xlarge)."""
    from trnsim.catalog import instances

    tgt = _resolve_target(target)
    mine = [i for i in instances() if i.chip == tgt.chip.name and i.host_memory_gib and "ultraserver" not in i.name]
    mine = mine or [i for i in instances() if i.chip == tgt.chip.name and i.host_memory_gib]
    if not mine:
        raise ValueError(f"no instance with {tgt.chip.display_name} chips in the catalog lists its host memory")
    return max(mine, key=lambda i: (i.neuroncores, i.host_memory_gib))


def hierarchy_levels(target: Any = "trn1", instance: Any = None) -> list[MemoryLevel]:
    """Host DRAM, HBM, SBUF, PSUM for one core of ``target``: capacity (bytes) and bandwidth (GB/s).

    Host DRAM is the instance's host memory divided by its NeuronCores (catalog; ``instance`` defaults
    to :func:`host_instance`, e.g. trn1.32xlarge: 512 GiB for 32 cores = 16 GiB per core). HBM capacity
    and bandwidth are the chip's divided by its NeuronCores (catalog); SBUF/PSUM sizes are the core's
    (catalog); SBUF, PSUM and host bandwidths are the ~orders of magnitude of the NKI memory-hierarchy
    figure (data/memory_hierarchy.json).
    """
    from trnsim.catalog import instance as get_instance
    from trnsim.catalog.datafiles import load_json

    tgt = _resolve_target(target)
    core, chip = tgt.core, tgt.chip
    inst = host_instance(tgt) if instance is None else (
        get_instance(instance) if isinstance(instance, str) else instance)
    lv = load_json("memory_hierarchy.json")["levels"]
    per_core = chip.neuroncores
    return [
        MemoryLevel("host DRAM", inst.host_memory_gib * 2**30 / inst.neuroncores,
                    lv["host"]["bandwidth_gbytes_per_s"]["value"],
                    f"{inst.host_memory_gib:g} GiB on {inst.name} shared by {inst.neuroncores} cores, over PCIe",
                    "catalog; bandwidth N-MEM (approximate)"),
        MemoryLevel("HBM", chip.device_memory_gib * 2**30 / per_core, chip.hbm_gbytes_per_s / per_core,
                    f"{chip.device_memory_gib:g} GiB per chip shared by {per_core} cores", "catalog"),
        MemoryLevel("SBUF", core.sbuf_bytes, lv["sbuf"]["bandwidth_gbytes_per_s"]["value"],
                    f"{core.sbuf_partitions} partitions x {core.sbuf_bytes_per_partition // 1024} KiB",
                    "catalog; bandwidth N-MEM (approximate)"),
        MemoryLevel("PSUM", core.psum_bytes, lv["psum"]["bandwidth_gbytes_per_s"]["value"],
                    f"{core.psum_partitions} partitions x {core.psum_banks} banks x "
                    f"{core.psum_bank_bytes_per_partition // 1024} KiB", "catalog; bandwidth N-MEM (approximate)"),
    ]


@dataclass(frozen=True)
class DmaCost:
    """One HBM -> SBUF transfer of a [partitions, free] tile, priced by trnsim.perf.dma."""

    partitions: int
    bytes_per_partition: int
    bytes_total: int
    time_ns: float                 # isolated: fixed latency + data time of the busiest engine
    data_ns: float                 # data time only (of the busiest engine)
    fixed_ns: float
    engines_used: int
    efficiency: float              # descriptor efficiency (payload / payload + per-run overhead)

    @property
    def gbytes_per_s(self) -> float:
        """Effective bandwidth of the isolated transfer (GB/s = B/ns)."""
        return self.bytes_total / self.time_ns

    @property
    def queue_ns(self) -> float:
        """Time between transfers streamed back to back in one DMA queue: max(fixed, data) (trnsim.perf.dma)."""
        return max(self.fixed_ns, self.data_ns)

    @property
    def queued_gbytes_per_s(self) -> float:
        """Effective bandwidth of many such transfers back to back in one queue (the published DMA curve)."""
        return self.bytes_total / self.queue_ns if self.queue_ns > 0 else 0.0


def _check_tile(partitions: int, free: int, core: Any) -> None:
    pmax = core.tile.pmax
    if not 1 <= _whole("tile partitions", partitions) <= pmax:
        raise ValueError(f"tile partitions={partitions}: an SBUF tile spans 1..{pmax} partitions "
                         f"(nl.tile_size.pmax); put the larger dimension on the free axis or split it")
    if _whole("tile free size", free) < 1:
        raise ValueError(f"tile free size={free} must be >= 1 element per partition")
    usable = int(core.sbuf_capacity_bytes_per_partition)
    if free > usable:   # even one byte per element would not fit a partition
        raise ValueError(f"tile free size={free:,} elements cannot fit a partition's {usable:,} B of SBUF; use a "
                         "smaller tile")


def dma_load_cost(partitions: int, free: int, dtype: str = "bfloat16", target: Any = "trn1") -> DmaCost:
    """Price one ``nl.load`` of a [partitions, free] tile from HBM into SBUF with the DMA model."""
    from trnsim.perf.build import load
    from trnsim.perf.dma import dma_cost_ns, dma_params, dma_plan

    tgt = _resolve_target(target)
    _check_tile(partitions, free, tgt.core)
    size = itemsize(dtype)
    ins = load(int(partitions), int(free), dtype)
    params = dma_params(tgt.core, tgt.chip)
    plan = dma_plan(ins, params)
    return DmaCost(int(partitions), int(free) * size, ins.bytes_moved, dma_cost_ns(ins, params),
                   plan.data_ns_per_engine, params.fixed_ns, plan.engines_used, plan.efficiency)


MAX_SCHEDULED_TRANSFERS = 512
"""plan_tiles schedules at most this many loads and extrapolates the steady state beyond it."""


@dataclass(frozen=True)
class TilePlan:
    """A [rows, cols] HBM tensor streamed into SBUF as [partitions, free] tiles, ``buffers`` at a time."""

    rows: int
    cols: int
    dtype: str
    partitions: int
    free: int
    buffers: int
    target: str
    row_tiles: int
    col_tiles: int
    sbuf_partitions: int
    sbuf_usable_bytes_per_partition: int
    psum_banks: int
    psum_bank_bytes_per_partition: int
    psum_bank_fmax: int
    dma: DmaCost
    stream_time_us: float          # all tiles, scheduled (extrapolated beyond MAX_SCHEDULED_TRANSFERS)
    scheduled_transfers: int

    @property
    def tiles(self) -> int:
        return self.row_tiles * self.col_tiles

    @property
    def tensor_bytes(self) -> int:
        return self.rows * self.cols * itemsize(self.dtype)

    @property
    def tile_bytes_per_partition(self) -> int:
        return self.free * itemsize(self.dtype)

    @property
    def sbuf_bytes_per_partition(self) -> int:
        """SBUF bytes per partition held by the live buffers (the same offsets in every partition)."""
        return self.buffers * self.tile_bytes_per_partition

    @property
    def sbuf_fraction(self) -> float:
        """Share of the whole SBUF (partitions x usable bytes) the live buffers occupy."""
        return (self.buffers * self.tile_bytes_per_partition * self.partitions
                / (self.sbuf_partitions * self.sbuf_usable_bytes_per_partition))

    @property
    def fits_sbuf(self) -> bool:
        return self.sbuf_bytes_per_partition <= self.sbuf_usable_bytes_per_partition

    @property
    def psum_banks_per_tile(self) -> int:
        """PSUM banks one [partitions, free] FP32 matmul-result tile would need (2 KiB per bank per partition)."""
        return math.ceil(self.free * 4 / self.psum_bank_bytes_per_partition)

    @property
    def psum_banks_needed(self) -> int:
        return self.buffers * self.psum_banks_per_tile

    @property
    def fits_one_psum_bank(self) -> bool:
        """One nc_matmul output must fit in one bank: free <= psum_bank_fmax FP32 values."""
        return self.free <= self.psum_bank_fmax

    @property
    def stream_gbytes_per_s(self) -> float:
        return self.tensor_bytes / (self.stream_time_us * 1e3)

    def summary(self) -> str:
        d = self.dma
        cap = self.sbuf_usable_bytes_per_partition
        lines = [
            f"[{self.rows:,} x {self.cols:,}] {self.dtype} ({self.tensor_bytes / 2**20:,.2f} MiB) as "
            f"[{self.partitions} x {self.free:,}] tiles: {self.row_tiles} x {self.col_tiles} = {self.tiles:,} tiles",
            f"  SBUF: {self.buffers} buffer(s) x {self.tile_bytes_per_partition:,} B = "
            f"{self.sbuf_bytes_per_partition:,} B of {cap:,} B per partition "
            f"({100 * self.sbuf_bytes_per_partition / cap:.1f}%), {self.partitions} of {self.sbuf_partitions} partitions",
            f"  PSUM (as FP32 matmul results): {self.psum_banks_per_tile} bank(s) per tile, "
            f"{self.psum_banks_needed} of {self.psum_banks} for {self.buffers} buffer(s)"
            + ("" if self.fits_one_psum_bank else f"; too wide for one matmul (free <= {self.psum_bank_fmax})"),
            f"  one load: {d.bytes_per_partition:,} B/partition on {d.engines_used} DMA engine(s), "
            f"{d.time_ns:,.0f} ns alone ({d.gbytes_per_s:,.1f} GB/s), descriptor efficiency {100 * d.efficiency:.0f}%",
            f"  all {self.tiles:,} loads back to back: {self.stream_time_us:,.1f} us = {self.stream_gbytes_per_s:,.1f} GB/s"
            + ("" if self.scheduled_transfers == self.tiles
               else f" (first {self.scheduled_transfers:,} scheduled, rest extrapolated)"),
        ]
        return "\n".join(lines)


def plan_tiles(rows: int, cols: int, dtype: str = "bfloat16", partitions: int = 128, free: int = 512,
               buffers: int = 2, target: Any = "trn1") -> TilePlan:
    """Cut a [rows, cols] HBM tensor into [partitions, free] SBUF tiles and time streaming them in.

    Raises ValueError when the live buffers overflow a partition's usable SBUF, or a tile is
    larger than the tensor. Streaming time: the loads are built as trnsim.perf instructions and
    scheduled on the target's DMA engines as one in-order stream of loads from the one tensor (one DMA
    queue: each load pays max(fixed cost, data time), trnsim.perf.dma).
    """
    from trnsim.perf.build import load
    from trnsim.perf.schedule import schedule_instructions

    tgt = _resolve_target(target)
    core = tgt.core
    for name, v in (("rows", rows), ("cols", cols)):
        if not 1 <= _whole(f"tensor {name}", v) <= MAX_DIM:
            raise ValueError(f"tensor {name}={v} is out of range: use 1..{MAX_DIM:,}")
    size = itemsize(dtype)
    _check_tile(partitions, free, core)
    if partitions > rows or free > cols:
        raise ValueError(f"tile [{partitions} x {free}] is larger than the tensor [{rows} x {cols}]; "
                         "shrink the tile to at most the tensor's shape")
    if _whole("buffers", buffers) < 1:
        raise ValueError(f"buffers={buffers} must be >= 1")
    usable = int(core.sbuf_capacity_bytes_per_partition)
    need = int(buffers) * int(free) * size
    if need > usable:
        raise ValueError(f"SBUF overflow: {buffers} buffer(s) x {free:,} x {size} B = {need:,} B per partition, but a "
                         f"partition has {usable:,} B usable ({usable // 1024} KiB); use a smaller free size "
                         f"(<= {usable // (int(buffers) * size):,} elements) or fewer buffers")
    rt, ct = math.ceil(rows / partitions), math.ceil(cols / free)
    n = rt * ct
    k = min(n, MAX_SCHEDULED_TRANSFERS)
    row_bytes = cols * size
    instrs = []
    tensor_id = -1     # every tile comes from the same HBM tensor
    for i in range(k):
        ins = load(int(partitions), int(free), dtype, hbm_row_bytes=min(row_bytes, free * size), index=i,
                   hbm_alloc_id=tensor_id)
        instrs.append(ins)
    tl = schedule_instructions(instrs, core, tgt.chip, target_name=str(tgt.name))
    lat_ns = tl.latency_ns
    if k < n:   # steady state: extend at the rate of the second half of the scheduled loads
        half = k // 2
        rate_ns = (lat_ns - float(tl.end_ns[half - 1])) / (k - half)
        lat_ns += rate_ns * (n - k)
    return TilePlan(int(rows), int(cols), dtype, int(partitions), int(free), int(buffers), str(tgt.name), rt, ct,
                    int(core.sbuf_partitions), usable, int(core.psum_banks), int(core.psum_bank_bytes_per_partition),
                    int(core.tile.psum_bank_fmax), dma_load_cost(partitions, free, dtype, tgt), lat_ns / 1e3, k)


__all__ = ["MATMUL_DTYPES", "TileMapping", "MatmulEstimate", "itemsize", "matmul_flops", "matmul_hbm_bytes",
           "tile_mapping", "estimate", "MemoryLevel", "hierarchy_levels", "DmaCost", "dma_load_cost", "TilePlan",
           "plan_tiles", "MAX_SCHEDULED_TRANSFERS", "host_instance", "MatmulSetTime",
           "with_backward", "matmul_set_time"]
