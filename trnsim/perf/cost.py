"""Pure per-instruction cost formulas for the NeuronCore compute engines.

Every formula is a documented NKI cost rule (hardware.md section 9, nki.md section 1.7):
the "Estimated instruction cost" sections of the 2025-10 ``nki.isa`` docstrings (N-ISA25),
and the engine notes of the NKI architecture guides (N-ARCH2/3/4). Results are in engine
cycles at that engine's clock; ``instruction_cost_ns`` converts with the catalog clock.
The constants (MIN_II, MM_INIT_LATENCY, GPSIMD_START, static overheads, clocks) are read
from the catalog's ``CoreSpec``; nothing numeric is hidden here except the formula shapes.

The cycle counts are averages for back-to-back independent instructions (how the docs state
them). The extra fixed cost an instruction pays when it has to wait on a dependency is
``dependent_overhead_cycles`` and is added by the scheduler, which knows when that happens.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trnsim.nki.trace import Instruction, Operand
from trnsim.perf import model_data
from trnsim.perf.errors import CostModelError

COMPUTE_ENGINES: tuple[str, ...] = ("tensor", "vector", "scalar", "gpsimd")
SIXTEEN_BIT = frozenset({"bfloat16", "float16"})


@dataclass(frozen=True)
class CycleCost:
    """Cost of one instruction on its engine.

    cycles: engine cycles (average issue interval when back-to-back)
    rule: the documented formula applied, for explanations/tooltips
    documented: False when no published formula exists for the opcode and the generic
        one-input rule of thumb ``max(MIN_II, N)`` (N-ARCH2) was used instead
    """

    cycles: float
    rule: str
    documented: bool = True


def _free_size(op: Operand) -> int:
    """Elements per partition of an on-chip operand (product of the free dims)."""
    return int(math.prod(op.shape[1:])) if len(op.shape) > 1 else 1


def _elements_per_partition(instr: Instruction) -> int:
    """N of the cost formulas: ``instr.free_elements``, except for a view of a block tensor
    (e.g. ``nl.ndarray((4, 2, nl.par_dim(128), 512))``) whose shape does not start with the
    partition dim; there N = elements / partitions spanned."""
    ref = instr.writes[0] if instr.writes else (instr.reads[0] if instr.reads else None)
    if ref is not None and ref.buffer != "hbm" and len(ref.shape) > 2:
        parts = ref.region.partitions
        total = math.prod(ref.shape)
        if parts > 0 and ref.shape[0] != parts and total % parts == 0:
            return total // parts
    return int(instr.free_elements)


def _op_name(attrs: dict) -> str:
    op = attrs.get("op", attrs.get("op0", ""))
    name = getattr(op, "__name__", op)
    return str(name).lower()


def _version(core: Any) -> str:
    return str(getattr(core, "version", "NC-v2"))


def matmul_cycles(n_stationary: int, n_moving: int, fp32: bool, mm_init_cycles: float,
                  passes: float | None = None) -> float:
    """TensorE ``nc_matmul`` issue interval: ``max(min(64, N_stationary), N_moving)`` x passes (N-ISA25, N-ARCH2).

    64 is MM_INIT_LATENCY (N-ARCH2), passed in from the catalog (the fixed start-up latency of a matmul).
    ``passes`` is the dtype's cycle multiplier (data/tensor_engine.json ``matmul_passes``); when omitted,
    fp32 takes 4 passes and every other dtype 1 (the rate on every generation so far).
    """
    cycles = max(min(mm_init_cycles, n_stationary), n_moving)
    if passes is None:
        passes = 4.0 if fp32 else 1.0
    return float(passes) * cycles


def matmul_passes(core: Any, dtype: str) -> float:
    """Passes through the PE array of one MultiplyMoving for operands of ``dtype`` (data/tensor_engine.json)."""
    table = _tensor_engine_data()["matmul_passes"]
    version = _version(core)
    if version not in table:
        raise CostModelError(f"data/tensor_engine.json matmul_passes has no entry for NeuronCore {version}; "
                             f"known: {sorted(table)}")
    rates = table[version]["value"]
    return float(rates.get(dtype, rates["bfloat16"]))


def _tensor_engine_data() -> dict:
    from trnsim.catalog.datafiles import load_json

    return load_json("tensor_engine.json")


@dataclass(frozen=True)
class MatmulSplit:
    """How the profiler sees one nc_matmul: LoadWeights then MultiplyMoving (data/tensor_engine.json), in engine
    cycles. ``issue_cycles`` (the pair's issue interval, background LoadStationary overlapping the previous
    MultiplyMoving) is what the scheduler charges."""

    load_weights_cycles: float
    multiply_moving_cycles: float
    issue_cycles: float
    passes: float


def matmul_split(instr: Instruction, core: Any) -> MatmulSplit:
    """LoadWeights / MultiplyMoving cycles of an ``nc_matmul`` (or Tensor Engine transpose) instruction.

    LoadWeights of an M-column stationary takes M / 4 cycles x passes ('fast LoadStationary, up to 4x faster
    than a MultiplyMoving of the same free size', N-ARCH2); MultiplyMoving takes max(N_moving, MM_INIT_LATENCY)
    x passes. The issue interval is the documented nc_matmul formula.
    """
    c = core.cost
    attrs = instr.attrs or {}
    init = float(c.mm_init_latency_cycles)
    if instr.opcode == "nc_transpose":
        src = instr.reads[0] if instr.reads else None
        p = src.shape[0] if src is not None else instr.partitions
        f = _free_size(src) if src is not None else max(int(instr.free_elements), 1)
        passes = matmul_passes(core, src.dtype) if src is not None else 1.0
        # a matmul of the data (stationary) with a P x P identity of the same dtype (moving): both halves pay
        # the dtype's passes, as nc_matmul does (data/tensor_engine.json instructions_per_matmul, nki.isa
        # nc_transpose: "equivalent to calling nisa.nc_matmul directly with is_transpose=True")
        issue = tensor_transpose_cycles(p, f, init) * passes
        return MatmulSplit(f / _ls_speedup() * passes, min(issue, max(p, init) * passes), issue, passes)
    stat, mov = instr.reads[0], instr.reads[1]
    n_stat = int(attrs.get("stationary_free", attrs.get("n_stationary", _free_size(stat))))
    n_mov = int(attrs.get("moving_free", attrs.get("n_moving", _free_size(mov))))
    passes = max(matmul_passes(core, stat.dtype), matmul_passes(core, mov.dtype))
    issue = matmul_cycles(n_stat, n_mov, False, init, passes)
    mm = min(issue, max(n_mov, init) * passes)
    return MatmulSplit(n_stat / _ls_speedup() * passes, mm, issue, passes)


def _ls_speedup() -> float:
    return float(_tensor_engine_data()["load_stationary_speedup"]["value"])


def tensor_transpose_cycles(partitions: int, free: int, mm_init_cycles: float) -> float:
    """TensorE ``nc_transpose``: ``max(P, min(64, F))`` back-to-back (N-ISA25)."""
    return float(max(partitions, min(mm_init_cycles, free)))


def _vector_speedup(instr: Instruction, core: Any, kind: str) -> float:
    """Documented NC-v3/v4 VectorE performance modes (data/perf_model.json, N-ARCH3/4)."""
    modes = model_data.per_version("vector_perf_mode_speedup", _version(core))
    ops = instr.reads + instr.writes
    if not ops or any(o.dtype not in SIXTEEN_BIT for o in ops):
        return 1.0
    if kind == "copy_scalar":
        all_sbuf = all(o.buffer == "sbuf" for o in ops)
        contiguous = all(o.contiguous_bytes >= _free_size(o) * o.itemsize for o in ops)
        key = "copy_scalar_sbuf_16bit_contiguous" if (all_sbuf and contiguous) else "copy_scalar_other_16bit"
        return float(modes[key])
    if kind == "tensor_tensor" and all(o.buffer == "sbuf" for o in instr.reads):
        return float(modes["tensor_tensor_sbuf_16bit"])
    return 1.0


def _scalar_speedup(instr: Instruction, core: Any) -> float:
    """NC-v4 ScalarE 2x mode for BF16/FP16 in and out (N-ARCH4); 1 elsewhere."""
    ops = instr.reads + instr.writes
    if ops and all(o.dtype in SIXTEEN_BIT for o in ops):
        return float(model_data.per_version("scalar_perf_mode_speedup", _version(core)))
    return 1.0


def compute_cycles(instr: Instruction, core: Any) -> CycleCost:
    """Engine cycles of a compute instruction from the documented formulas.

    N is ``instr.free_elements`` (elements per partition processed) unless the opcode's
    formula names a specific operand. Raises CostModelError for DMA/unknown engines.
    """
    c = core.cost
    min_ii = float(c.min_ii_cycles)
    n = max(_elements_per_partition(instr), 1)
    op = instr.opcode
    eng = instr.engine
    attrs = instr.attrs or {}

    if eng not in COMPUTE_ENGINES:
        raise CostModelError(
            f"compute_cycles: instruction {instr.index} ({op}) runs on engine {eng!r}; "
            f"compute engines are {COMPUTE_ENGINES}. DMA costs come from trnsim.perf.dma.")

    if op == "nc_matmul":
        if len(instr.reads) < 2:
            raise CostModelError(f"nc_matmul instruction {instr.index} needs (stationary, moving) reads, "
                                 f"got {len(instr.reads)} operands")
        split = matmul_split(instr, core)
        mult = f"{split.passes:g}*" if split.passes != 1 else ""
        return CycleCost(split.issue_cycles, mult + "max(min(64, N_stationary), N_moving)")

    if op == "nc_transpose" and eng == "tensor":
        split = matmul_split(instr, core)
        mult = f"{split.passes:g}*" if split.passes != 1 else ""
        return CycleCost(split.issue_cycles, mult + "max(P, min(64, F))")

    if eng == "gpsimd" and op in ("iota", "affine_select", "select", "range_select_gpsimd"):
        return CycleCost(float(c.gpsimd_start_cycles) + n, "GPSIMD_START + N")

    if op in ("tensor_copy_dynamic_src", "tensor_copy_dynamic_dst"):
        return CycleCost(max(float(c.dynamic_min_ii_cycles), n), "max(MIN_II_DYNAMIC, N)")

    speed = 1.0
    if op == "activation":
        reduce = bool(attrs.get("reduce", False)) or attrs.get("reduce_op") is not None
        cyc = max(min_ii, n) + (min_ii if reduce else 0.0)
        if eng == "scalar":
            speed = _scalar_speedup(instr, core)
        return CycleCost(cyc / speed, "max(MIN_II, N)" + (" + MIN_II" if reduce else ""))
    if op == "activation_reduce":
        return CycleCost(max(min_ii, n) + min_ii, "max(MIN_II, N) + MIN_II")

    if op == "tensor_tensor":
        bufs = [o.buffer for o in instr.reads]
        one_psum = bufs.count("psum") == 1
        all16 = all(o.dtype == "bfloat16" for o in instr.reads + instr.writes)
        contiguous = all(o.contiguous_bytes >= _free_size(o) * o.itemsize for o in instr.reads)
        cheap_op = _op_name(attrs) in ("add", "multiply", "subtract", "mul", "sub")
        if one_psum or (all16 and contiguous and cheap_op and "psum" not in bufs):
            cyc, rule = max(min_ii, n), "max(MIN_II, N)"
        else:
            cyc, rule = max(min_ii, 2 * n), "max(MIN_II, 2N)"
        if eng == "vector":
            speed = _vector_speedup(instr, core, "tensor_tensor")
        return CycleCost(cyc / speed, rule)

    if op in ("tensor_scalar", "tensor_copy", "nc_stream_shuffle", "dropout", "range_select"):
        if eng == "vector" and op in ("tensor_scalar", "tensor_copy"):
            speed = _vector_speedup(instr, core, "copy_scalar")
        elif eng == "scalar" and op in ("tensor_scalar", "tensor_copy"):
            speed = _scalar_speedup(instr, core)
        return CycleCost(max(min_ii, n) / speed, "max(MIN_II, N)")

    if op == "nc_transpose":  # VectorE 32x32 block transpose
        return CycleCost(max(min_ii, n), "max(MIN_II, N)")
    if op in ("tensor_scalar_reduce",):
        return CycleCost(max(min_ii, n) + min_ii, "max(MIN_II, N) + MIN_II")
    if op == "scalar_tensor_tensor":
        all16 = all(o.dtype == "bfloat16" for o in instr.reads + instr.writes)
        sub_mul = _op_name({"op": attrs.get("op0", "")}) in ("subtract", "sub") and \
            _op_name({"op": attrs.get("op1", "")}) in ("multiply", "mul")
        if all16 and sub_mul and n % 2 == 0:
            return CycleCost(float(n), "N")
        return CycleCost(2.0 * n, "2N")
    if op == "tensor_reduce":
        src = instr.reads[0] if instr.reads else None
        dst = instr.writes[0] if instr.writes else None
        bf16 = src is not None and dst is not None and src.dtype == dst.dtype == "bfloat16"
        if bf16 and _op_name(attrs) in ("add", "max", "sum", "maximum"):
            return CycleCost(n / 2.0, "N/2")
        return CycleCost(float(n), "N")
    if op in ("tensor_tensor_scan",):
        return CycleCost(max(min_ii, 2 * n), "max(MIN_II, 2N)")
    if op == "reciprocal":
        return CycleCost(max(min_ii, 8 * n), "max(MIN_II, 8N)")
    if op == "bn_stats":
        return CycleCost(max(min_ii, n), "max(MIN_II, N)")
    if op == "bn_aggr":
        return CycleCost(max(min_ii, 13.0 * (n / 3.0)), "max(MIN_II, 13*(N/3))")
    if op == "memset":
        dst = instr.writes[0] if instr.writes else None
        zero = float(attrs.get("value", 1.0) or 0.0) == 0.0
        if zero and dst is not None and dst.dtype in SIXTEEN_BIT:
            return CycleCost(max(min_ii, n / 2.0), "max(MIN_II, N/2)")
        return CycleCost(max(min_ii, n), "max(MIN_II, N)")
    if op in ("max8", "nc_find_index8"):
        return CycleCost(float(n), "N")
    if op == "iota":
        return CycleCost(float(c.gpsimd_start_cycles) + n, "GPSIMD_START + N")
    # No published formula: the N-ARCH2 rule of thumb for a one-input instruction.
    return CycleCost(max(min_ii, n), "max(MIN_II, N) (no documented formula; rule of thumb)", documented=False)


def engine_clock_ghz(core: Any, engine: str) -> float:
    """Clock of a compute engine in GHz (catalog)."""
    try:
        return float(core.engines[engine].clock_ghz)
    except KeyError:
        raise CostModelError(f"core {_version(core)} has no engine {engine!r}; engines: {sorted(core.engines)}") from None


def dependent_overhead_cycles(core: Any) -> float:
    """Fixed cycles exposed when an instruction waits on a dependency (N-ARCH2; perf_model.json)."""
    fields = model_data.value("dependent_instruction_overhead")
    return float(sum(getattr(core.cost, f) for f in fields))


def dependent_overhead_ns(core: Any, engine: str) -> float:
    """``dependent_overhead_cycles`` at ``engine``'s clock, in ns."""
    return dependent_overhead_cycles(core) / engine_clock_ghz(core, engine)


def instruction_cost_ns(instr: Instruction, core: Any, chip: Any) -> float:
    """Time in ns one instruction occupies its engine when issued back-to-back (pure).

    Compute engines: ``compute_cycles / clock``. DMA: the isolated transfer time including the
    fixed per-transfer latency (see trnsim.perf.dma.dma_cost_ns). Sync instructions cost 0. Collectives:
    trnsim.cluster.cost_collective on the chip's generation instance (trnsim.perf.collective).
    """
    if instr.engine == "dma":
        from trnsim.perf.dma import dma_cost_ns, dma_params

        return dma_cost_ns(instr, dma_params(core, chip))
    if instr.engine == "sync":
        return 0.0
    if instr.engine == "collective":          # nki.collectives: the cluster model on this chip's instance
        from trnsim.perf.collective import collective_cost

        return collective_cost(instr, str(chip.aliases[0])).time_us * 1e3
    return compute_cycles(instr, core).cycles / engine_clock_ghz(core, instr.engine)


def tensor_peak_tflops(core: Any, fp32: bool = False) -> float:
    """TensorE peak implied by the cost formula: rows x cols x 2 FLOP x clock (/4 for fp32).

    Equals the vendor 92 / 23 TFLOPS for NC-v2 within rounding (hardware.md section 2).
    """
    peak = core.pe_rows * core.pe_cols * 2 * engine_clock_ghz(core, "tensor") / 1e3
    return peak / 4.0 if fp32 else peak


__all__ = [
    "COMPUTE_ENGINES", "CostModelError", "CycleCost", "compute_cycles", "matmul_cycles", "matmul_passes",
    "MatmulSplit", "matmul_split",
    "tensor_transpose_cycles", "engine_clock_ghz", "dependent_overhead_cycles", "dependent_overhead_ns",
    "instruction_cost_ns", "tensor_peak_tflops",
]
