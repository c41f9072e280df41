"""Checkers for notebooks 01-03 (one matmul, inside a NeuronCore, the memory hierarchy).

Each checker recomputes the answer with the simulator's own functions (matmul math, systolic
stepper, catalog, DMA model), so it stays right if the data is corrected, and its hints name the
idea behind the most likely mistake.
"""
from __future__ import annotations

from typing import Any

from trnsim.course.check import CheckResult, combine, expect_close, expect_equal
from trnsim.models.matmul_math import estimate, itemsize, matmul_flops, matmul_hbm_bytes
from trnsim.models.systolic import systolic_cycles



def _close(title: str, got: Any, want: Any, *, rtol: float, atol: float = 0.0, unit: str = "",
           hint: str = "") -> CheckResult:
    """expect_close without its generic "a factor of 2: FLOPs ..." hint, for quantities that are not FLOPs."""
    res = expect_close(title, got, want, rtol=rtol, atol=atol, unit=unit, hint=hint)
    if res.passed:
        return res
    return CheckResult(False, res.title, res.message, tuple(h for h in res.hints if "FLOPs count" not in h))


# ----------------------------------------------------------------------------- notebook 01


def check_matmul_counts(m: int, n: int, k: int, dtype: str, flops: Any, hbm_bytes: Any,
                        intensity: Any) -> CheckResult:
    """Notebook 01: FLOPs, minimum HBM bytes and arithmetic intensity of C[M, N] = A[M, K] @ B[K, N]."""
    want_f = matmul_flops(m, n, k)
    want_b = matmul_hbm_bytes(m, n, k, dtype)
    size = itemsize(dtype)
    bytes_hint = f"read A (M*K) and B (K*N), write C (M*N), each element {size} bytes in {dtype}"
    elements = m * k + k * n + m * n
    # 0.1%: an answer written with four significant figures (2.147e9) is right; a slip is never that close
    bytes_check = _close("HBM bytes", hbm_bytes, want_b, rtol=1e-3, unit="B")
    if not bytes_check.passed and bytes_check.message != "not answered yet":
        extra = [h for h in bytes_check.hints if h.startswith("off by a factor")]   # the generic units hint
        if isinstance(hbm_bytes, (int, float)) and hbm_bytes > 0 and abs(hbm_bytes * 2**20 / want_b - 1) < 1e-2:
            extra.append("that is the answer in MiB; the question asks for bytes (x 2^20)")
        try:
            got = float(hbm_bytes)
        except (TypeError, ValueError):
            got = None
        if got is not None:
            def near(x: float) -> bool:   # the same 0.1% as a right answer: rounded answers get the hint too
                return abs(got - x) <= 1e-3 * x
            for wrong_size in (1, 2, 4):
                if wrong_size != size and near(wrong_size * elements):
                    extra.append(f"you used {wrong_size} bytes per element; {dtype} has {size}")
            if near(size * (m * k + k * n)):
                extra.append("the result C [M, N] must be written back to HBM too")
        bytes_check = CheckResult(False, bytes_check.title, bytes_check.message, tuple(extra) + (bytes_hint,))
    elif not bytes_check.passed:
        bytes_check = _close("HBM bytes", hbm_bytes, want_b, rtol=1e-3, hint=bytes_hint)
    return combine(f"matmul {m}x{k} @ {k}x{n} in {dtype}", [
        expect_close("FLOPs", flops, want_f, rtol=1e-3,
                     hint="each of the M*N outputs needs K multiplies and K adds: 2*M*N*K"),
        bytes_check,
        _close("arithmetic intensity", intensity, want_f / want_b, rtol=0.01, unit="FLOP/B",
                     hint="FLOPs divided by HBM bytes"),
    ])


def check_bound(m: int, n: int, k: int, dtype: str, target: str, answer: Any) -> CheckResult:
    """Notebook 01: is this matmul compute-bound or memory-bound on one core of ``target``?"""
    est = estimate(m, n, k, dtype, target)
    title = f"bound of {m}x{k} @ {k}x{n} ({dtype}, {target})"
    if isinstance(answer, str):
        answer = answer.strip().lower().replace("-bound", "").replace(" bound", "").replace("_bound", "")
    return expect_equal(title, answer, est.bound,
                        hint=f"compare the intensity {est.arithmetic_intensity:,.1f} FLOP/B with the ridge point "
                             f"{est.roof.ridge_flops_per_byte:,.0f} FLOP/B (peak TFLOP/s / DMA GB/s): below it, "
                             "memory sets the pace")


def check_tile_count(m: int, n: int, k: int, answer: Any, target: str = "trn1") -> CheckResult:
    """Notebook 01: how many ``nc_matmul`` instructions the 128 x 128 Tensor Engine needs."""
    import trnsim

    lim = trnsim.target(target).core.tile
    sf, mf, kp = lim.gemm_stationary_fmax, lim.gemm_moving_fmax, lim.pmax
    kt = -(-k // kp)
    a_stat = -(-m // sf) * kt * -(-n // mf)     # A stationary (the NKI matmul tutorial's lhsT tiles): C tiles
    b_stat = -(-n // sf) * kt * -(-m // mf)     # B stationary: C.T tiles
    title = f"nc_matmul instructions for {m}x{k} @ {k}x{n}"
    hint = (f"A stationary: ceil(M/{sf}) x ceil(K/{kp}) x ceil(N/{mf}) = {a_stat:,}; B stationary (C.T = B.T A.T): "
            f"ceil(N/{sf}) x ceil(K/{kp}) x ceil(M/{mf}) = {b_stat:,}" if a_stat != b_stat else
            f"ceil(M/{sf}) x ceil(K/{kp}) x ceil(N/{mf}): stationary tiles are at most {kp} x {sf}, moving tiles "
            f"{kp} partitions x {mf}; one instruction per (stationary tile, moving tile) pair, K tiles accumulate "
            "in one PSUM tile")
    # either orientation is a valid mapping (tile_mapping keeps the cheaper one): both counts are right
    for want, which in ((a_stat, "A stationary"), (b_stat, "B stationary")):
        res = _close(title, answer, want, rtol=0, hint=hint)
        if res.passed:
            return CheckResult(True, title, f"{want:,} is right ({which}" + (
                f"; with {'B' if which.startswith('A') else 'A'} stationary it would be "
                f"{b_stat if which.startswith('A') else a_stat:,})" if a_stat != b_stat else ")"))
    return _close(title, answer, min(a_stat, b_stat), rtol=0, hint=hint)


def check_systolic_cycles(k: int, m: int, n: int, answer: Any) -> CheckResult:
    """Notebook 01: cycles for one isolated pass of a K x M array over N moving columns."""
    want = systolic_cycles(k, m, n)
    hints = "N cycles to stream the moving columns, plus K - 1 of skew to fill the rows and M - 1 to drain the columns"
    res = _close(f"cycles for K={k}, M={m}, N={n}", answer, want, rtol=0, hint=hints)
    if not res.passed and answer is not None and answer is not Ellipsis:
        try:
            a = int(answer)
        except (TypeError, ValueError):
            return res
        if a == n:
            extra = "N alone is the steady-state cost (what back-to-back matmuls pay); an isolated pass also fills and drains"
        elif a == k * m * n:
            extra = "K*M*N counts multiply-adds; the array does K*M of them per cycle in parallel"
        elif a in (n + k + m, n + k + m - 1):
            extra = "count from cycle 0: the last result leaves at the end of cycle (N-1) + (K-1) + (M-1)"
        else:
            extra = ""
        if extra:
            return CheckResult(False, res.title, res.message, res.hints + (extra,))
    return res


# ----------------------------------------------------------------------------- notebook 03


def check_tile_footprint(partitions: int, free: int, dtype: str, bytes_per_partition: Any,
                         percent_of_partition: Any, target: str = "trn1") -> CheckResult:
    """Notebook 03: SBUF bytes per partition of a [partitions, free] tile, and % of a partition's usable SBUF."""
    import trnsim

    core = trnsim.target(target).core
    usable = core.sbuf_capacity_bytes_per_partition
    want = free * itemsize(dtype)
    parts = [_close("bytes per partition", bytes_per_partition, want, rtol=0, unit="B",
                          hint=f"a tile uses free x itemsize bytes in EACH partition it spans ({itemsize(dtype)} B per "
                               f"{dtype}); the {partitions} partitions are side by side, not added up")]
    if isinstance(bytes_per_partition, (int, float)) and bytes_per_partition == want * partitions:
        parts[0] = CheckResult(False, "bytes per partition", f"you have {bytes_per_partition:,}, the whole tile's bytes",
                               (f"divide by the {partitions} partitions: each holds one row of {free:,} elements",))
    # a percentage rounded to one decimal (4.5 for 4.545) is right: atol 0.05 percentage points
    parts.append(_close("% of one partition's usable SBUF", percent_of_partition, 100 * want / usable, rtol=0.01,
                        atol=0.05, unit="%", hint=f"bytes per partition / {usable:,} usable bytes per partition x 100"))
    return combine(f"[{partitions} x {free}] {dtype} tile in SBUF", parts)


def check_psum_banks(free: int, answer: Any, target: str = "trn1") -> CheckResult:
    """Notebook 03: PSUM banks a [128, free] FP32 accumulation tile needs."""
    import trnsim

    core = trnsim.target(target).core
    bank = core.psum_bank_bytes_per_partition
    want = -(-free * 4 // bank)
    return _close(f"PSUM banks for a [128 x {free}] FP32 result", answer, want, rtol=0,
                        hint=f"PSUM accumulates in FP32 (4 B); one bank holds {bank:,} B = {bank // 4} FP32 values per "
                             "partition; round up")


def check_dma_time(partitions: int, free: int, dtype: str, answer_ns: Any, target: str = "trn1") -> CheckResult:
    """Notebook 03: time of one isolated HBM -> SBUF load, within 10% of the simulator's DMA model."""
    import trnsim

    from trnsim.models.matmul_math import dma_load_cost

    core = trnsim.target(target).core
    d = dma_load_cost(partitions, free, dtype, target)
    from trnsim.perf.dma import partitions_on_busiest_engine

    busiest = partitions_on_busiest_engine(partitions, d.engines_used, core.dma_partitions_per_engine)
    per_engine = busiest * d.bytes_per_partition
    hint = (f"fixed {core.dma_fixed_cost_ns:,} ns + bytes of the busiest engine / {core.dma_engine_gbytes_per_s} B/ns; "
            f"{partitions} partitions use {d.engines_used} engine(s), each serving a block of up to "
            f"{core.dma_partitions_per_engine} partitions, so the busiest moves {busiest} partitions = {per_engine:,} B")
    res = _close(f"one [{partitions} x {free}] {dtype} load on {target}", answer_ns, d.time_ns, rtol=0.1,
                       unit="ns", hint=hint)
    if not res.passed and isinstance(answer_ns, (int, float)) and abs(answer_ns - (d.time_ns - d.fixed_ns)) < 0.1 * d.time_ns:
        return CheckResult(False, res.title, res.message, res.hints + (
            f"you left out the fixed ~{core.dma_fixed_cost_ns:,} ns every transfer pays before data moves",))
    return res


# ----------------------------------------------------------------------------- notebook 02


def check_engine_for(step: str, answer: Any) -> CheckResult:
    """Notebook 02: which engine runs a step (see trnsim.models.engines.STEP_KINDS); one-engine steps only."""
    from trnsim.models.engines import STEP_KINDS

    kind = STEP_KINDS[step]
    if isinstance(answer, str):
        answer = answer.strip().lower().replace(" engine", "")
    # the NKI docs' short names (TensorE, ScalarE, VectorE, GpSimdE) and the profiler's (PE, ACT, DVE, POOL)
    aliases = {"pe": "tensor", "act": "scalar", "dve": "vector", "pool": "gpsimd", "tensore": "tensor",
               "scalare": "scalar", "vectore": "vector", "gpsimde": "gpsimd"}
    answer = aliases.get(answer, answer) if isinstance(answer, str) else answer
    want = kind.engines[0] if len(kind.engines) == 1 else kind.engines
    if isinstance(want, tuple):
        return expect_equal(f"engine for '{kind.label}'", answer in want, True,
                            hint=f"{kind.isa} runs on any of {', '.join(want)}")
    return expect_equal(f"engine for '{kind.label}'", answer, want,
                        hint={"tensor": "only the Tensor Engine multiplies matrices (SBUF in, PSUM out)",
                              "scalar": "activation functions func(scale*x + bias) run on the Scalar Engine (ACT)",
                              }.get(want, f"{kind.isa} runs on the {want} engine"))


def check_instruction_ns(opcode: str, engine: str, free: int, answer_ns: Any, target: str = "trn1") -> CheckResult:
    """Notebook 02: time of one elementwise instruction on [128, free], from the perf cost formulas."""
    import trnsim

    from trnsim.perf.build import elementwise
    from trnsim.perf.cost import instruction_cost_ns

    tgt = trnsim.target(target)
    want = instruction_cost_ns(elementwise(opcode, engine, 128, free), tgt.core, tgt.chip)
    clock = tgt.core.engines[engine].clock_ghz
    min_ii = tgt.core.cost.min_ii_cycles
    res = _close(f"{opcode} on {engine}, [128 x {free}], {target}", answer_ns, want, rtol=0.02, unit="ns",
                 hint=f"max(MIN_II = {min_ii}, N = {free}) cycles at the {engine} clock of {clock} GHz; "
                      "all 128 partitions work in parallel, so partitions do not multiply the time")
    if not res.passed and isinstance(answer_ns, (int, float)) and answer_ns > 0:
        extra = None
        cycles = max(min_ii, free)
        dep = tgt.core.cost.static_overhead_cycles + tgt.core.cost.sbuf_access_overhead_cycles
        if abs(answer_ns / want - 128) < 2:
            extra = "you multiplied by the 128 partitions; they run in parallel lanes"
        elif abs(answer_ns - (cycles + dep) / clock) <= 0.02 * answer_ns:
            extra = (f"that includes the {dep}-cycle start-up a dependent instruction pays; the question asks for one "
                     "instruction back to back, without it")
        elif abs(answer_ns - cycles * clock) <= 0.02 * answer_ns:
            extra = f"that multiplies by the clock; a time is cycles / clock (GHz = cycles per ns): {cycles} / {clock}"
        elif free < min_ii and abs(answer_ns - free / clock) <= 0.02 * answer_ns:
            extra = f"below {min_ii} elements the MIN_II floor applies: an instruction takes at least {min_ii} cycles"
        if extra:
            return CheckResult(False, res.title, res.message, res.hints + (extra,))
    return res


FUSION_BASELINES = {
    "three": "unfused: scale, bias, exp on Scalar",
    "two-op": "two-op tensor_scalar, then exp on Scalar",
}
"""The unfused versions notebook 02 compares with one fused activation: three single-op instructions
(the naive baseline) or the fair one, a two-op ``tensor_scalar`` (x * scale + bias) then ``exp``."""


def check_fusion_speedup(free: int, answer: Any, target: str = "trn1", baseline: str = "two-op",
                         measure: str = "scalar") -> CheckResult:
    """Notebook 02: what fusing into one activation gains over the unfused ``baseline`` on a [128, free] tile.

    ``baseline="two-op"`` (the fair comparison: tensor_scalar already does scale and bias in one pass)
    or ``"three"`` (three single-op instructions). ``measure="scalar"``: the Scalar Engine's busy time, unfused /
    fused; ``"kernel"``: the whole single-tile kernel's latency (load, compute, store), unfused / fused.
    """
    from trnsim.models.engines import PRESETS, run_sequence

    if baseline not in FUSION_BASELINES:
        raise ValueError(f"baseline={baseline!r}: use one of {', '.join(FUSION_BASELINES)}")
    if measure not in ("scalar", "kernel"):
        raise ValueError(f"measure={measure!r}: use 'scalar' (engine busy time) or 'kernel' (latency)")
    unf = run_sequence(PRESETS[FUSION_BASELINES[baseline]], 128, free, 1, target)
    fus = run_sequence(PRESETS["fused: one activation"], 128, free, 1, target)
    engine = unf.engine_busy_us()["scalar"] / fus.engine_busy_us()["scalar"]
    steps = "two instructions (tensor_scalar with two ops, then exp)" if baseline == "two-op" else "three instructions"
    want = engine if measure == "scalar" else unf.latency_us / fus.latency_us
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 0 and \
            abs(answer * want - 1) < 0.05 and want > 1.05:
        return CheckResult(False, f"fusion speed-up over {baseline}, [128 x {free}]",
                           f"you have {answer:.3g} x, expected about {want:.3g} x",
                           ("that is the ratio upside down: a speed-up is unfused time / fused time, above 1",))
    if measure == "scalar":
        return _close(f"fusion speed-up over {baseline} on the Scalar Engine, [128 x {free}]", answer, engine,
                      rtol=0.05, unit="x", hint="activation costs max(MIN_II, N) cycles whether or not it also scales "
                                                f"and adds a bias, so {steps} take about that many times as long as one")
    res = _close(f"whole-kernel speed-up of fusion over {baseline}, one [128 x {free}] tile", answer, want, rtol=0.02,
                 unit="x", hint="latency of the unfused kernel / latency of the fused one, from run_sequence(...)"
                                ".latency_us: the load and the store take as long in both")
    if res.passed or not isinstance(answer, (int, float)) or not abs(answer / engine - 1) < 0.05:
        return res
    return CheckResult(False, res.title, res.message, res.hints + (
        f"{engine:.1f}x is the Scalar Engine's busy time; the kernel also waits for its load and its store, which "
        "fusion does not shorten",))


__all__ = ["check_matmul_counts", "check_bound", "check_tile_count", "check_systolic_cycles",
           "check_tile_footprint", "check_psum_banks", "check_dma_time", "check_engine_for",
           "check_instruction_ns", "check_fusion_speedup"]
