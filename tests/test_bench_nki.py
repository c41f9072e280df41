"""Simulation-speed benchmarks for trnsim.nki (run with --benchmark-enable to measure).

Figures (``extra_info`` of each benchmark): instructions traced per second of wall time
(``instructions_per_s``) and of process CPU time (``instructions_per_cpu_s``; the CI machine is shared,
so CPU time is the steadier figure), for timing-only traces (``numerics=False``, shape-only
``nt.tensor`` inputs) and for traces with numerics. The headline timing-only case is stage 1 of the
matmul journey (``trnsim.kernels.matmul_tiled``); its full-size [4096, 8192] @ [8192, 8192] bf16 trace
(99,328 instructions) is measured outside the suite, a 2048^3 trace runs here so the body stays quick
when benchmarks are disabled.

Also here: checks that the tracer's fast paths change nothing (timing-only traces equal the numerics
traces instruction for instruction; the fast record constructors build the same records as the
dataclasses).
"""
import dataclasses
import time

import ml_dtypes
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.language as nl
import trnsim.neuronxcc.nki.typing as nt
from nki_tutorial_kernels import matmul_tiled, softmax
from trnsim.kernels import MATMUL_JOURNEY
from trnsim.kernels import matmul_tiled as stage1_matmul
from trnsim.nki import trace as tr_mod


def _trace_rate(benchmark, fn):
    cpu_s: list[float] = []

    def timed():
        c0 = time.process_time()
        res = fn()
        cpu_s.append(time.process_time() - c0)
        return res

    out, tr = benchmark(timed)
    n = len(tr.instructions)
    benchmark.extra_info["instructions"] = n
    if cpu_s and min(cpu_s) > 0:
        benchmark.extra_info["instructions_per_cpu_s"] = n / min(cpu_s)
    if benchmark.stats is not None:
        benchmark.extra_info["instructions_per_s"] = n / benchmark.stats.stats.mean
    return out, tr


def test_bench_trace_stage1_matmul_timing_only(benchmark):
    """Stage 1 of the matmul journey, 2048^3 bf16, shapes only: 4 x 16 output tiles x (16 x 3 + 2) instructions."""
    a = nt.tensor[[2048, 2048], nl.bfloat16]
    b = nt.tensor[[2048, 2048], nl.bfloat16]
    out, tr = _trace_rate(benchmark, lambda: nki.trace_kernel(stage1_matmul, a, b, numerics=False))
    assert out is None and not tr.numerics
    assert len(tr.instructions) == 16 * 4 * (16 * 3 + 2)
    assert sum(i.opcode == "nc_matmul" for i in tr.instructions) == 16 * 4 * 16
    assert sum(i.flops for i in tr.instructions) == 2 * 2048 ** 3


def test_bench_trace_matmul_timing_only(benchmark):
    """2048^3 bf16 tiled matmul (tutorial version), shapes only (3200 instructions)."""
    a = nt.tensor[[2048, 2048], nl.bfloat16]
    b = nt.tensor[[2048, 2048], nl.bfloat16]
    out, tr = _trace_rate(benchmark, lambda: nki.trace_kernel(matmul_tiled, a, b))
    assert out is None and len(tr.instructions) == 16 * 4 * (16 * 3 + 2)
    assert sum(i.opcode == "nc_matmul" for i in tr.instructions) == 16 * 4 * 16


def test_bench_matmul_1024_bf16_numerics(benchmark):
    """1024^3 bf16 tiled matmul with numerics on (the issue's headline figure)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((1024, 1024)).astype(ml_dtypes.bfloat16)
    out, tr = _trace_rate(benchmark, lambda: nki.trace_kernel(matmul_tiled, a, b))
    want = a.astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_allclose(out.astype(np.float32), want, rtol=2 ** -8, atol=2 ** -8 * np.abs(want).max())


def test_bench_softmax_numerics(benchmark):
    """Row softmax of [4096, 512] fp32 (elementwise-heavy kernel with numerics)."""
    x = np.random.default_rng(0).standard_normal((4096, 512)).astype(np.float32)
    out, tr = _trace_rate(benchmark, lambda: nki.trace_kernel(softmax, x))
    assert out.shape == x.shape


def _records(tr):
    """Everything a trace consumer sees, except the numerics flag."""
    return ([dataclasses.astuple(i) for i in tr.instructions], [dataclasses.astuple(a) for a in tr.allocations],
            tr.grid, tr.peak_sbuf_bytes_per_partition, tr.peak_psum_banks)


@pytest.mark.parametrize("stage", range(len(MATMUL_JOURNEY)))
def test_timing_only_trace_equals_numerics_trace(stage):
    """The timing-only fast paths record exactly what the numerics path records (operands, regions,
    dependencies, attrs, source lines, allocations, peaks)."""
    kernel = MATMUL_JOURNEY[stage]
    rng = np.random.default_rng(stage)
    a = rng.standard_normal((512, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((512, 1024)).astype(ml_dtypes.bfloat16)
    out, with_numerics = nki.trace_kernel(kernel, a, b, numerics=True)
    none, timing_only = nki.trace_kernel(kernel, a, b, numerics=False)
    assert none is None and out is not None
    assert len(timing_only.instructions) > 0
    assert _records(timing_only) == _records(with_numerics)
    _, from_specs = nki.trace_kernel(kernel, nt.tensor[[512, 256], nl.bfloat16], nt.tensor[[512, 1024], nl.bfloat16])
    assert _records(from_specs) == _records(with_numerics)


def test_fast_record_constructors_match_dataclasses():
    """trace.make_* build the same (equal, equally hashed, still frozen where frozen) records as the dataclass
    constructors (Allocation and Instruction are mutable: the tracer updates them)."""
    reg = tr_mod.Region("sbuf", 3, 0, 128, 0, 1024)
    fast_reg = tr_mod.make_region("sbuf", 3, 0, 128, 0, 1024)
    assert fast_reg == reg and hash(fast_reg) == hash(reg) and repr(fast_reg) == repr(reg)
    op = tr_mod.Operand("x", "sbuf", (128, 512), "bfloat16", 2, reg, 1024)
    fast_op = tr_mod.make_operand("x", "sbuf", (128, 512), "bfloat16", 2, fast_reg, 1024)
    assert fast_op == op and hash(fast_op) == hash(op) and repr(fast_op) == repr(op)
    alloc = tr_mod.Allocation(1, "t", "psum", (128, 512), "float32", 2048, 128, 4, 9, False)
    fast_alloc = tr_mod.make_allocation(1, "t", "psum", (128, 512), "float32", 2048, 128, 4, 9, False)
    assert fast_alloc == alloc and repr(fast_alloc) == repr(alloc)
    ins = tr_mod.Instruction(7, "nc_matmul", "tensor", (op,), (op,), {"accumulate": True}, 10, 0, (1, 3), 512, 128,
                             "k.py:3", (0,))
    fast_ins = tr_mod.make_instruction(7, "nc_matmul", "tensor", (op,), (op,), {"accumulate": True}, 10, 0, (1, 3),
                                       512, 128, "k.py:3", (0,))
    assert fast_ins == ins and dataclasses.astuple(fast_ins) == dataclasses.astuple(ins)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast_op.name = "y"
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast_reg.byte_start = 1


def test_dead_tiles_leave_the_dependency_tables():
    """A tile nothing can reach any more drops its access records (the tables stay as small as the live tiles,
    not as large as everything the kernel ever allocated)."""
    import trnsim.nki as nki06
    import trnsim.nki.language as nl06
    import trnsim.nki.typing as nt06
    from trnsim.nki.context import current

    sizes = []

    @nki06.jit
    def kernel(x):
        out = nl06.ndarray((128, 64), dtype=x.dtype, buffer=nl06.shared_hbm)
        for i in nl06.sequential_range(32):
            t = nl06.load(x[i * 128:(i + 1) * 128, :])
            sizes.append(len(current().writes))
        nl06.store(out, value=t)
        return out

    _, tr = nki06.trace_kernel(kernel, nt06.tensor[[4096, 64], nl06.float32], numerics=False)
    assert len(sizes) == 32 and max(sizes) <= 2
    # the records still name every allocation the kernel used, with its first and last use
    loads = [a for a in tr.allocations if a.buffer == "sbuf"]
    assert len(loads) == 32 and all(0 <= a.first_use <= a.last_use for a in loads)
