"""Kernel performance (notebooks 05 and 06): the matmul journey and the fusion comparisons.

Pure functions only (no widgets, no plotting, no checkers; those are in :mod:`trnsim.course.exercises.kernels_perf`):

* Notebook 05, the matmul journey: :func:`journey_traffic` counts the HBM bytes each of the four
  stages of NKI's matrix-multiplication tutorial moves (from its loop structure: which tile is
  loaded how often) and :func:`journey_transfers` the DMA transfers; :func:`journey_envelope` turns
  FLOPs, bytes and transfers into lower bounds on latency; :func:`published_journey` sets the
  simulator's latency next to the published trn1 measurements (data/kernel_validation.json);
  :func:`sbuf_budget` adds up the SBUF bytes per partition the fully blocked kernel keeps live, and
  :func:`evaluate_blocks` profiles one block choice (or returns the simulator's ``KernelError``).
* Notebook 06, fusion: :func:`softmax_two_pass` is an unfused softmax (the exponentials make a
  round trip through HBM and the row sum is a separate Vector Engine pass), :func:`attention_traffic`
  counts the HBM bytes of unfused and flash attention, :func:`compare_fusion` profiles a pair.

All times in microseconds, traffic in bytes unless a name says otherwise. Hardware constants come
from the catalog (``trnsim.target(name).core``); the cost model is ``trnsim.perf``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping

from trnsim.catalog import target as _target

STAGES = ("tiled", "hoisted", "block_free", "fully_blocked")
STAGE_LABELS = {"tiled": "1 tiled", "hoisted": "2 hoisted loads", "block_free": "3 blocked M, N",
                "fully_blocked": "4 fully blocked"}
STAGE_WHY = {
    "tiled": "baseline: both operand tiles are reloaded inside the K loop for every output tile",
    "hoisted": "a K-column of lhsT is loaded once per M tile and reused for every N tile",
    "block_free": "each loaded tile feeds several matmuls: traffic falls by the M and N block factors",
    "fully_blocked": "big DMAs (a whole block row per transfer), reuse over M and N blocks, loads overlap matmuls",
}
# Block factors of the reference kernels: block_free's defaults, and the NKI tutorial's fully optimised
# kernel (TILES_IN_BLOCK_M=16, N=2, K=8; SDK-legacy matrix_multiplication_nki_kernels.py, nki.md 1.8).
DEFAULT_BLOCKS: Mapping[str, Mapping[str, int]] = {
    "tiled": {}, "hoisted": {},
    "block_free": {"tiles_in_block_m": 2, "tiles_in_block_n": 2},
    "fully_blocked": {"tiles_in_block_m": 16, "tiles_in_block_n": 2, "tiles_in_block_k": 8},
}


def matmul_tiles(target: str = "trn1") -> tuple[int, int, int]:
    """(TILE_M, TILE_N, TILE_K) the journey kernels use: stationary free max, moving free size that
    fills one PSUM bank (min(gemm_moving_fmax, psum_bank_fmax)), and the partition count."""
    t = _target(target).core.tile
    return t.gemm_stationary_fmax, min(t.gemm_moving_fmax, t.psum_bank_fmax), t.pmax


def _kernel(stage: str):
    from trnsim.kernels import matmul as mm

    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")
    return getattr(mm, f"matmul_{stage}")


def _clamped_blocks(stage: str, M: int, N: int, K: int, blocks: Mapping[str, int] | None,
                    target: str) -> dict[str, int]:
    """Block factors as the kernel uses them (fully_blocked shrinks blocks to the matrix size)."""
    tm, tn, tk = matmul_tiles(target)
    b = dict(DEFAULT_BLOCKS[stage])
    b.update(blocks or {})
    if stage == "fully_blocked":
        b["tiles_in_block_m"] = max(1, min(b["tiles_in_block_m"], M // tm))
        b["tiles_in_block_n"] = max(1, min(b["tiles_in_block_n"], N // tn))
        b["tiles_in_block_k"] = max(1, min(b["tiles_in_block_k"], K // tk))
    return b


@dataclass(frozen=True)
class Traffic:
    """HBM bytes a matmul kernel moves, split by tensor."""

    lhsT_bytes: int
    rhs_bytes: int
    out_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.lhsT_bytes + self.rhs_bytes + self.out_bytes


def journey_traffic(stage: str, M: int, N: int, K: int, *, itemsize: int = 2,
                    blocks: Mapping[str, int] | None = None, target: str = "trn1") -> Traffic:
    """HBM bytes of one journey stage for ``result[M, N] = lhsT[K, M].T @ rhs[K, N]``.

    Counted from each kernel's loops: every operand is read (number of times it is reloaded) x its
    size, the output is written once. Reload factors: tiled - lhsT N/TILE_N times, rhs M/TILE_M
    times; hoisted - lhsT once, rhs M/TILE_M times; block_free - lhsT once, rhs M/BLOCK_M times;
    fully_blocked - lhsT N/BLOCK_N times, rhs M/BLOCK_M times.
    """
    tm, tn, _ = matmul_tiles(target)
    b = _clamped_blocks(stage, M, N, K, blocks, target)
    a_bytes, b_bytes, c_bytes = M * K * itemsize, K * N * itemsize, M * N * itemsize
    if stage == "tiled":
        ra, rb = N // tn, M // tm
    elif stage == "hoisted":
        ra, rb = 1, M // tm
    elif stage == "block_free":
        ra, rb = 1, M // (tm * b["tiles_in_block_m"])
    else:
        ra, rb = N // (tn * b["tiles_in_block_n"]), M // (tm * b["tiles_in_block_m"])
    return Traffic(a_bytes * ra, b_bytes * rb, c_bytes)


def journey_transfers(stage: str, M: int, N: int, K: int, *, itemsize: int = 2,
                      blocks: Mapping[str, int] | None = None, target: str = "trn1") -> dict[str, tuple[int, int]]:
    """DMA transfers of one journey stage, per HBM tensor: ``{"lhsT": (count, bytes each), "rhs": ..., "out": ...}``.

    Counted from each kernel's loops like :func:`journey_traffic`: one ``nl.load`` or ``nl.store`` is one
    transfer. tiled: a [128, 128] lhsT tile and a [128, 512] rhs tile per matmul; hoisted and block_free:
    lhsT once per [128, 128] tile, rhs per [128, 512] tile as often as it is reloaded; fully_blocked: one
    [128, BLOCK_M] lhsT row and one [128, BLOCK_N] rhs row per 128 rows of K per output block. The output
    is stored as [128, 512] tiles ([128, BLOCK_N] rows for fully_blocked).
    """
    tm, tn, tk = matmul_tiles(target)
    b = _clamped_blocks(stage, M, N, K, blocks, target)
    mt, nt_, kt = M // tm, N // tn, K // tk
    tile_a, tile_b, tile_c = tk * tm * itemsize, tk * tn * itemsize, tm * tn * itemsize
    if stage == "tiled":
        return {"lhsT": (mt * nt_ * kt, tile_a), "rhs": (mt * nt_ * kt, tile_b), "out": (mt * nt_, tile_c)}
    if stage == "hoisted":
        return {"lhsT": (mt * kt, tile_a), "rhs": (mt * nt_ * kt, tile_b), "out": (mt * nt_, tile_c)}
    if stage == "block_free":
        return {"lhsT": (mt * kt, tile_a), "rhs": (mt // b["tiles_in_block_m"] * nt_ * kt, tile_b),
                "out": (mt * nt_, tile_c)}
    bm, bn = b["tiles_in_block_m"], b["tiles_in_block_n"]
    steps = (mt // bm) * (nt_ // bn) * kt
    return {"lhsT": (steps, tile_a * bm), "rhs": (steps, tile_b * bn), "out": (mt * (nt_ // bn), tile_c * bn)}


def dma_queue_us(count: int, bytes_each: float, target: str = "trn1") -> float:
    """Time one in-order DMA queue needs for ``count`` transfers of ``bytes_each`` (each spread over all engines).

    A queue completes one transfer per max(fixed cost, data time) (perf_model.json ``dma_queue_occupancy``;
    the fixed cost is the catalog's ``dma_fixed_cost_ns``, about 1.3 us), plus one fixed cost to start.
    """
    c = _target(target).core
    fixed_ns = float(c.dma_fixed_cost_ns)
    data_ns = bytes_each / dma_gbytes_per_s(target)          # GB/s == B/ns
    return (count * max(fixed_ns, data_ns) + (fixed_ns if count else 0.0)) / 1e3


def queue_groups(target: str = "trn1") -> int:
    """How the transfers of a kernel share DMA queues on ``target``: 0 = one in-order queue per HBM tensor
    (NC-v2, trnsim's rule), k > 0 = all transfers alternate over k hardware-DGE queues (NC-v3, NC-v4).
    perf_model.json ``dma_queue_assignment`` / ``dma_hwdge_trigger_queues``."""
    from trnsim.perf import model_data

    try:
        return int(model_data.per_version("dma_hwdge_trigger_queues", str(_target(target).core.version)) or 0)
    except KeyError:
        return 0


@dataclass(frozen=True)
class Envelope:
    """Back-of-envelope lower bounds for one kernel: compute at Tensor Engine peak, traffic at the DMA
    ceiling, and (when the transfers are counted) the busiest DMA queue at one transfer per ~1.3 us."""

    flops: int
    hbm_bytes: int
    compute_us: float
    dma_us: float
    queue_us: float = 0.0          # busiest in-order DMA queue (0 when transfers were not counted)
    queue_name: str = ""           # which stream that is ("rhs", or "2 DGE queues")

    @property
    def bound_us(self) -> float:
        """The largest of the lower bounds (the kernel cannot be faster than any of them)."""
        return max(self.compute_us, self.dma_us, self.queue_us)

    @property
    def limiter(self) -> str:
        if self.compute_us >= max(self.dma_us, self.queue_us):
            return "Tensor Engine"
        if self.dma_us >= self.queue_us:
            return "DMA"
        return f"DMA transfers ({self.queue_name})"


def dma_gbytes_per_s(target: str = "trn1", cores: int = 1) -> float:
    """Streaming rate of ``cores`` NeuronCores, GB/s: DMA engines x per-engine rate, capped by the cores' share
    of the chip's HBM bandwidth (catalog). On trn1 the engines bind (272 GB/s a core); on trn2 the HBM share,
    362.5 GB/s a core, is just below its engines' 368 GB/s, and the scheduler caps transfers that touch HBM
    at it too: the scheduler's own ceiling, ``trnsim.perf.dma.DmaParams.peak_bytes_per_ns``."""
    from trnsim.perf.dma import dma_params

    t = _target(target)
    return cores * dma_params(t.core, t.chip).peak_bytes_per_ns   # B/ns == GB/s


def envelope(flops: int, hbm_bytes: int, target: str = "trn1", dtype: str = "bf16",
             transfers: Mapping[str, tuple[int, int]] | None = None) -> Envelope:
    """Lower bounds: ``flops / Tensor Engine peak``, ``bytes / (DMA engines x engine rate)`` and, with
    ``transfers`` ({tensor: (count, bytes each)}), the busiest DMA queue (:func:`dma_queue_us`): one queue per
    tensor on NC-v2, the transfers spread evenly over the hardware-DGE queues on NC-v3 and NC-v4."""
    c = _target(target).core
    peak = c.tensor_peak_tflops(dtype)
    queue_us, queue_name = 0.0, ""
    if transfers:
        groups = queue_groups(target)
        if groups:
            total = sum(dma_queue_us(n, b, target) for n, b in transfers.values())
            queue_us, queue_name = total / groups, f"{groups} DGE queues"
        else:
            per = {name: dma_queue_us(n, b, target) for name, (n, b) in transfers.items()}
            queue_us = max(per.values())
            queue_name = " and ".join(name for name, t in per.items() if t >= 0.999 * queue_us)
    return Envelope(int(flops), int(hbm_bytes), flops / (peak * 1e12) * 1e6,
                    hbm_bytes / (dma_gbytes_per_s(target) * 1e9) * 1e6, queue_us, queue_name)


def journey_envelope(stage: str, M: int, N: int, K: int, *, itemsize: int = 2,
                     blocks: Mapping[str, int] | None = None, target: str = "trn1") -> Envelope:
    """:func:`envelope` of one journey stage: 2*M*N*K FLOPs, :func:`journey_traffic` bytes and
    :func:`journey_transfers` transfers."""
    tr = journey_traffic(stage, M, N, K, itemsize=itemsize, blocks=blocks, target=target)
    xf = journey_transfers(stage, M, N, K, itemsize=itemsize, blocks=blocks, target=target)
    return envelope(2 * M * N * K, tr.total_bytes, target, "bf16" if itemsize <= 2 else "fp32", xf)


@functools.lru_cache(maxsize=64)
def _profile_stage_cached(stage: str, M: int, N: int, K: int, blocks: tuple, target: str):
    return _profile_stage(stage, M, N, K, blocks, target)


def _profile_stage(stage: str, M: int, N: int, K: int, blocks: tuple, target: str):
    import trnsim.nki.language as nl
    import trnsim.nki.typing as nt
    from trnsim.perf import profile

    a = nt.tensor[[K, M], nl.bfloat16]
    b = nt.tensor[[K, N], nl.bfloat16]
    return profile(_kernel(stage), a, b, target=target, numerics=False, **dict(blocks))


def profile_stage(stage: str, M: int, N: int, K: int, *, blocks: Mapping[str, int] | None = None,
                  target: str = "trn1"):
    """Timing-only Profile of one journey stage on bf16 inputs (cached per configuration)."""
    b = dict(DEFAULT_BLOCKS[stage])
    b.update(blocks or {})
    return _profile_stage_cached(stage, int(M), int(N), int(K), tuple(sorted(b.items())), target)


@dataclass(frozen=True)
class StageRow:
    """One line of the journey table: the stage, its envelope and its simulated profile."""

    stage: str
    envelope: Envelope
    traffic: Traffic
    profile: Any = field(repr=False)

    @property
    def label(self) -> str:
        return STAGE_LABELS[self.stage]


def journey(M: int, N: int, K: int, target: str = "trn1") -> list[StageRow]:
    """All four stages at their default blocks: envelope + timing-only profile each."""
    rows = []
    for s in STAGES:
        rows.append(StageRow(s, journey_envelope(s, M, N, K, target=target),
                             journey_traffic(s, M, N, K, target=target), profile_stage(s, M, N, K, target=target)))
    return rows


def format_journey(rows: list[StageRow]) -> str:
    """Fixed-width table: estimate vs simulator per stage (latency to 1 us, % to 1 decimal, GB/s to 1 GB/s)."""
    head = (f"{'stage':<17}{'HBM est':>9}{'HBM sim':>9}{'bound':>8}{'simulated':>11}{'HBM rate':>10}{'% peak':>8}"
            f"{'speed-up':>10}  bottleneck")
    lines = [head, f"{'':<17}{'(MiB)':>9}{'(MiB)':>9}{'(us)':>8}{'(us)':>11}{'(GB/s)':>10}"]
    base = rows[0].profile.latency_us if rows else 1.0
    for r in rows:
        p = r.profile
        lines.append(f"{r.label:<17}{r.traffic.total_bytes / 2**20:>9.0f}{p.hbm_bytes / 2**20:>9.0f}"
                     f"{r.envelope.bound_us:>8.0f}{p.latency_us:>11.0f}{p.hbm_gbytes_per_s:>10.0f}"
                     f"{p.pct_of_tensor_peak:>7.1f}%{base / p.latency_us:>9.1f}x  {p.bottleneck}")
    return "\n".join(lines)


# ---------------------------------------------------------------- predicted vs published (real trn1)

@dataclass(frozen=True)
class PublishedStage:
    """One journey stage at the size AWS measured: back-of-envelope, simulated, and the published latency."""

    stage: str
    shape: tuple[int, int, int]                  # M, N, K
    target: str
    envelope: Envelope
    predicted_ms: float                          # simulated latency (Profile.latency_us / 1000)
    pct_of_tensor_peak: float                    # simulated (Profile.pct_of_tensor_peak)
    bottleneck: str                              # simulated (Profile.bottleneck)
    published_ms: float
    published_hfu_pct: float | None = None
    published_kernel: str = ""
    source: str = ""

    @property
    def label(self) -> str:
        return STAGE_LABELS[self.stage]

    @property
    def error_pct(self) -> float:
        """(predicted - published) / published, in percent."""
        return 100.0 * (self.predicted_ms - self.published_ms) / self.published_ms


def published_journey(target: str = "trn1") -> list[PublishedStage]:
    """The four stages at the shape of the published measurements of NKI's matmul tutorial.

    Published latencies come from data/kernel_validation.json (validation rows, never inputs to the cost
    model; :mod:`trnsim.perf.validation`); each row names the trnsim kernel that takes the same step.
    Each stage is costed like :func:`profile_stage` (timing-only, bf16) and its :func:`journey_envelope`; only the
    numbers are kept (not the ~100k-instruction profiles, which would hold hundreds of MiB in a notebook).
    """
    from trnsim.perf import validation

    k, m = validation._SHAPE["lhsT"]          # the published problem: lhsT [K, M], rhs [K, N]
    n = validation._SHAPE["rhs"][1]
    by_kernel = {f"trnsim.kernels.matmul:matmul_{s}": s for s in STAGES}
    rows = [r for r in validation.validation_data()["rows"]
            if r["target"] == target and r["kernel"] in by_kernel]
    if not rows:
        have = sorted({r["target"] for r in validation.validation_data()["rows"] if r["kernel"] in by_kernel})
        raise ValueError(f"published_journey(target={target!r}): the matmul journey was published for {have}")
    out = []
    for r in sorted(rows, key=lambda r: int(r["stage"])):
        if r["dtype"] != "bfloat16" or r.get("kwargs"):
            raise ValueError(f"published row {r['published_kernel']}: journey stages are costed in bf16 at their "
                             f"default blocks, the row has dtype {r['dtype']} and kwargs {r.get('kwargs')}")
        s = by_kernel[r["kernel"]]
        prof = _profile_stage(s, m, n, k, tuple(sorted(DEFAULT_BLOCKS[s].items())), target)
        out.append(PublishedStage(s, (m, n, k), target, journey_envelope(s, m, n, k, target=target),
                                  prof.latency_us / 1e3, prof.pct_of_tensor_peak, prof.bottleneck,
                                  float(r["latency_ms"]), r.get("hfu_pct"), r["published_kernel"], r["source"]))
        del prof
    return out


def format_published(rows: list[PublishedStage]) -> str:
    """Fixed-width table: envelope bound, simulated and published latency (ms), error, % of peak vs published HFU."""
    if not rows:
        return ""
    m, n, k = rows[0].shape
    head = (f"{'stage':<17}{'envelope':>9}{'simulated':>11}{'published':>11}{'error':>8}"
            f"{'speed-up':>12}{'% of peak':>11}  envelope limiter")
    lines = [f"lhsT [{k}, {m}] x rhs [{k}, {n}] bf16, one {rows[0].target} NeuronCore", head,
             f"{'':<17}{'(ms)':>9}{'(ms)':>11}{'(ms)':>11}{'':>8}{'sim / pub':>12}{'sim / pub':>11}"]
    for r in rows:
        hfu = f"{r.published_hfu_pct:.0f}" if r.published_hfu_pct is not None else "-"
        spd = f"{rows[0].predicted_ms / r.predicted_ms:.1f} / {rows[0].published_ms / r.published_ms:.1f}"
        pk = f"{r.pct_of_tensor_peak:.0f} / {hfu}"
        lines.append(f"{r.label:<17}{r.envelope.bound_us / 1e3:>9.1f}{r.predicted_ms:>11.1f}{r.published_ms:>11.1f}"
                     f"{r.error_pct:>+7.1f}%{spd:>12}{pk:>11}  {r.envelope.limiter}")
    errs = sorted(abs(r.error_pct) for r in rows)
    mid = len(errs) // 2
    med = errs[mid] if len(errs) % 2 else 0.5 * (errs[mid - 1] + errs[mid])
    lines.append(f"median |error| {med:.1f}% over {len(rows)} stages")
    return "\n".join(lines)


# ---------------------------------------------------------------- block choice (fully blocked kernel)

@dataclass(frozen=True)
class SbufBudget:
    """SBUF bytes per partition the fully blocked kernel keeps live in one K step (program order).

    ``accumulator``: tbm x tbn fp32 [128, TILE_N] output tiles; ``lhsT_block``: tbk x [128, BLOCK_M];
    ``rhs_block``: tbk x [128, BLOCK_N]. This is what the allocator checks when the K-step buffers are
    allocated; the simulator's timeline may hold more (next step's buffers while the current ones
    are read), which is how loads overlap matmuls.
    """

    accumulator: int
    lhsT_block: int
    rhs_block: int
    capacity: int

    @property
    def total(self) -> int:
        return self.accumulator + self.lhsT_block + self.rhs_block

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def parts(self) -> dict[str, int]:
        return {"fp32 accumulator": self.accumulator, "lhsT block": self.lhsT_block, "rhs block": self.rhs_block}


def sbuf_budget(size: int, tiles_in_block_m: int, tiles_in_block_n: int, tiles_in_block_k: int, *,
                itemsize: int = 2, target: str = "trn1") -> SbufBudget:
    """:class:`SbufBudget` of ``matmul_fully_blocked`` on square ``size`` matrices (blocks clamped as the kernel does)."""
    tm, tn, _ = matmul_tiles(target)
    b = _clamped_blocks("fully_blocked", size, size, size,
                        {"tiles_in_block_m": tiles_in_block_m, "tiles_in_block_n": tiles_in_block_n,
                         "tiles_in_block_k": tiles_in_block_k}, target)
    bm, bn, bk = b["tiles_in_block_m"], b["tiles_in_block_n"], b["tiles_in_block_k"]
    core = _target(target).core
    cap = int(core.sbuf_capacity_bytes_per_partition)
    return SbufBudget(bm * bn * tn * 4, bk * bm * tm * itemsize, bk * bn * tn * itemsize, cap)


@dataclass(frozen=True)
class BlockResult:
    """Outcome of one block choice: a profile, or the error the simulator raised (then profile is None)."""

    size: int
    blocks: tuple[int, int, int]
    budget: SbufBudget
    profile: Any = field(default=None, repr=False)
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.profile is not None

    def summary(self) -> str:
        bm, bn, bk = self.blocks
        head = (f"{self.size} x {self.size} x {self.size} bf16, blocks M {bm} x N {bn} x K {bk} tiles; "
                f"SBUF per partition (one K step): {self.budget.total / 1024:.0f} of "
                f"{self.budget.capacity / 1024:.0f} KiB")
        if not self.ok:
            return head + "\n" + self.error
        p = self.profile
        util = ", ".join(f"{k} {100 * p.engine_utilisation[k]:.0f}%" for k in ("tensor", "vector", "dma"))
        return (head + f"\nlatency {p.latency_us:.0f} us, {p.pct_of_tensor_peak:.1f}% of Tensor Engine peak, "
                f"HBM {p.hbm_bytes / 2**20:.0f} MiB, bottleneck {p.bottleneck}\n"
                f"busy: {util}; peak SBUF in the timeline {p.peak_sbuf_bytes_per_partition / 1024:.0f} KiB")


def evaluate_blocks(size: int, tiles_in_block_m: int, tiles_in_block_n: int, tiles_in_block_k: int,
                    target: str = "trn1") -> BlockResult:
    """Profile ``matmul_fully_blocked`` with these block factors, or capture why it cannot run."""
    from trnsim.nki import KernelError
    from trnsim.models.tiling import format_kernel_error

    blocks = {"tiles_in_block_m": int(tiles_in_block_m), "tiles_in_block_n": int(tiles_in_block_n),
              "tiles_in_block_k": int(tiles_in_block_k)}
    for k, v in blocks.items():
        if v < 1:
            raise ValueError(f"{k}={v}: a block holds at least one tile")
    budget = sbuf_budget(size, **blocks, target=target)
    try:
        prof = profile_stage("fully_blocked", size, size, size, blocks=blocks, target=target)
    except KernelError as err:
        return BlockResult(size, tuple(blocks.values()), budget, None, format_kernel_error(err))
    except ValueError as err:
        return BlockResult(size, tuple(blocks.values()), budget, None, f"ValueError: {err}")
    return BlockResult(size, tuple(blocks.values()), budget, prof)


# ---------------------------------------------------------------- notebook 06: fusion

def _softmax_two_pass_impl(x):
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl

    R, C = x.shape
    if R % 128:
        raise ValueError(f"softmax_two_pass: rows={R} is not a multiple of 128; pad the rows")
    P = nl.tile_size.pmax
    exps = nl.ndarray((R, C), dtype=nl.float32, buffer=nl.hbm, name="exps")
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // P):                  # pass 1: exp(x - rowmax) -> HBM
        t = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, :])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True)
        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max)
        nisa.dma_copy(dst=exps[i * P:(i + 1) * P, :], src=e)
    for i in range(R // P):                  # pass 2: read exp back, row sum on the Vector Engine, divide
        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=e, src=exps[i * P:(i + 1) * P, :])
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=row_sum, op=nl.add, data=e, axis=1)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=row_sum)
        y = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=y)
    return out


def _jit(func):
    import trnsim.nki as nki

    return nki.jit(func)


softmax_two_pass = _jit(_softmax_two_pass_impl)
softmax_two_pass.__doc__ = """Unfused row softmax of x [R, C] (R a multiple of 128): two passes over HBM (NKI 0.6).

Pass 1 computes ``exp(x - rowmax)`` on the Scalar Engine and stores it to an HBM scratch tensor;
pass 2 loads it back, sums each row with a separate Vector Engine reduction (``nisa.tensor_reduce``),
and multiplies by the reciprocal. Four tensor-sized HBM transfers instead of two, and one extra
reduction per tile: the baseline for notebook 06's fusion exercise (compare ``trnsim.kernels.softmax``).
"""

WORKLOADS = ("softmax", "normalisation", "attention")
PAIR_LABELS = {"softmax": ("softmax, two passes", "softmax, fused"),
               "normalisation": ("layernorm", "rmsnorm"),
               "attention": ("attention (unfused)", "flash attention")}


def rowwise_traffic(rows: int, cols: int, itemsize: int = 4, hbm_passes: int = 1) -> int:
    """HBM bytes of a row-wise kernel that streams x in and out ``hbm_passes`` times.

    One pass reads x and writes the output (2 x rows x cols x itemsize); every extra pass stores an
    intermediate of the same size and reads it back (another 2x). Broadcast parameters (gamma, beta:
    one row each) are ignored.
    """
    return 2 * hbm_passes * rows * cols * itemsize


def attention_traffic(seq: int, d: int, *, fused: bool, itemsize: int = 2, tile: int = 128) -> int:
    """HBM bytes of single-head attention (``trnsim.kernels.attention``/``flash_attention``), Sq = Sk = seq.

    Both read Q once, K and V once per 128-query tile (seq/128 times) and write O once. The unfused
    kernel also writes the fp32 scores S (seq^2 x 4 B), reads them back, writes the probabilities P
    (seq^2 x itemsize) and reads them back.
    """
    qo = 2 * seq * d * itemsize
    kv = 2 * (seq // tile) * seq * d * itemsize
    if fused:
        return qo + kv
    return qo + kv + 2 * seq * seq * 4 + 2 * seq * seq * itemsize


@functools.lru_cache(maxsize=64)
def _profile_pair(workload: str, length: int, cols: int, target: str):
    import trnsim.nki.typing as nt
    from trnsim import kernels
    from trnsim.perf import profile

    if workload == "softmax":
        x = nt.tensor[[length, cols], "float32"]
        return (profile(softmax_two_pass, x, target=target, numerics=False),
                profile(kernels.softmax, x, target=target, numerics=False))
    if workload == "normalisation":
        x = nt.tensor[[length, cols], "float32"]
        g = nt.tensor[[1, cols], "float32"]
        return (profile(kernels.layernorm, x, g, g, target=target, numerics=False),
                profile(kernels.rmsnorm, x, g, target=target, numerics=False))
    q = nt.tensor[[ATTENTION_HEAD_DIM, length], "bfloat16"]
    v = nt.tensor[[length, ATTENTION_HEAD_DIM], "bfloat16"]
    return (profile(kernels.attention, q, q, v, target=target, numerics=False),
            profile(kernels.flash_attention, q, q, v, target=target, numerics=False))


ATTENTION_HEAD_DIM = 128
"""Head dimension used for attention in notebook 06 (d = 128 fills the partitions)."""


@dataclass(frozen=True)
class FusionResult:
    """Two kernels doing the same job, profiled on the same shape, with envelope traffic estimates."""

    workload: str
    length: int
    cols: int
    labels: tuple[str, str]
    profiles: tuple[Any, Any] = field(repr=False)
    estimated_bytes: tuple[int, int]

    @property
    def speedup(self) -> float:
        return self.profiles[0].latency_us / self.profiles[1].latency_us

    @property
    def traffic_ratio(self) -> float:
        return self.profiles[0].hbm_bytes / self.profiles[1].hbm_bytes

    def summary(self) -> str:
        shape = (f"Sq = Sk = {self.length}, d = {ATTENTION_HEAD_DIM}, bf16" if self.workload == "attention"
                 else f"[{self.length}, {self.cols}] fp32")
        lines = [f"{self.workload}: {shape}"]
        for lab, p in zip(self.labels, self.profiles):
            util = ", ".join(f"{k} {100 * p.engine_utilisation[k]:.0f}%" for k in ("tensor", "vector", "scalar", "dma")
                             if p.instructions_by_engine.get(k, 0))
            lines.append(f"  {lab:<22} {p.latency_us:8.0f} us  HBM {p.hbm_bytes / 2**20:7.1f} MiB  "
                         f"{p.instructions:5d} instr  bottleneck {p.bottleneck:<7} busy: {util}")
        lines.append(f"  second vs first: {self.speedup:.1f}x faster, {self.traffic_ratio:.1f}x less HBM traffic")
        return "\n".join(lines)


def compare_fusion(workload: str, length: int, cols: int = 1024, target: str = "trn1") -> FusionResult:
    """Profile the two kernels of ``workload`` (timing-only) and estimate their HBM traffic.

    ``length`` is the number of rows (softmax, normalisation) or the sequence length (attention);
    ``cols`` the row length of the row-wise kernels (ignored for attention).
    """
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}")
    if length % 128 or length <= 0:
        raise ValueError(f"length={length} must be a positive multiple of 128 (one row per partition per tile)")
    profs = _profile_pair(workload, int(length), int(cols), target)
    if workload == "softmax":
        est = (rowwise_traffic(length, cols, 4, 2), rowwise_traffic(length, cols, 4, 1))
    elif workload == "normalisation":
        est = (rowwise_traffic(length, cols, 4, 1), rowwise_traffic(length, cols, 4, 1))
    else:
        est = (attention_traffic(length, ATTENTION_HEAD_DIM, fused=False),
               attention_traffic(length, ATTENTION_HEAD_DIM, fused=True))
    return FusionResult(workload, int(length), int(cols), PAIR_LABELS[workload], profs, est)


__all__ = [
    "STAGES", "STAGE_LABELS", "STAGE_WHY", "DEFAULT_BLOCKS", "matmul_tiles", "Traffic", "journey_traffic",
    "Envelope", "envelope", "dma_gbytes_per_s", "journey_envelope", "journey_transfers", "dma_queue_us",
    "queue_groups", "PublishedStage", "published_journey", "format_published", "profile_stage", "StageRow",
    "journey", "format_journey", "SbufBudget", "sbuf_budget", "BlockResult", "evaluate_blocks", "softmax_two_pass",
    "WORKLOADS", "PAIR_LABELS", "rowwise_traffic", "attention_traffic", "ATTENTION_HEAD_DIM", "FusionResult",
    "compare_fusion",
]
