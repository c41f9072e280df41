"""Notebook 02's engine model: which operation runs on which engine, a step sequence as a real kernel, its profile.

:data:`STEP_KINDS` says which operation can run on which engine (NKI architecture guide, N-ARCH2);
:func:`build_kernel` turns a list of (step, engine) pairs into a real NKI 0.6 kernel (``nisa.tensor_scalar`` /
``activation`` / ``tensor_tensor`` / ``nc_matmul`` with the chosen ``engine=``), and :func:`run_sequence`
traces it and profiles it with ``trnsim.perf`` (scheduler and cost formulas; nothing is re-implemented here)
and checks the numbers against numpy. The widget panel is :class:`trnsim.course.ui.engines.EnginePanel`.
"""
from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

SCALE = 2.0
BIAS = 0.5


@dataclass(frozen=True)
class StepKind:
    """One operation a step can do, and the engines that can run it."""

    key: str
    label: str
    engines: tuple[str, ...]
    isa: str                       # the nki.isa instruction it becomes


STEP_KINDS: dict[str, StepKind] = {s.key: s for s in (
    StepKind("scale", f"multiply by {SCALE:g}", ("vector", "scalar", "gpsimd"), "tensor_scalar"),
    StepKind("bias", f"add {BIAS:g}", ("vector", "scalar", "gpsimd"), "tensor_scalar"),
    StepKind("scale_bias", f"{SCALE:g}x + {BIAS:g} in one two-op tensor_scalar", ("vector", "scalar", "gpsimd"),
             "tensor_scalar"),
    StepKind("exp", "exp(x)", ("scalar",), "activation"),
    StepKind("fused", f"exp({SCALE:g}x + {BIAS:g}) in one activation", ("scalar",), "activation"),
    StepKind("square", "x * x", ("vector", "gpsimd"), "tensor_tensor"),
    StepKind("matmul", "matmul: W.T @ x (W is [P x P])", ("tensor",), "nc_matmul"),
    StepKind("copy", "copy", ("vector", "scalar", "gpsimd"), "tensor_copy"),
)}
ENGINES = ("tensor", "vector", "scalar", "gpsimd")
ENGINE_LABELS = {"tensor": "Tensor (PE)", "vector": "Vector (DVE)", "scalar": "Scalar (ACT)",
                 "gpsimd": "GpSimd (POOL)"}

PRESETS: dict[str, tuple[tuple[str, str], ...]] = {
    "unfused: scale, bias, exp on Scalar": (("scale", "scalar"), ("bias", "scalar"), ("exp", "scalar")),
    "fused: one activation": (("fused", "scalar"),),
    "two-op tensor_scalar, then exp on Scalar": (("scale_bias", "scalar"), ("exp", "scalar")),
    "unfused, spread over engines": (("scale", "vector"), ("bias", "gpsimd"), ("exp", "scalar")),
    "matmul, then fused activation": (("matmul", "tensor"), ("fused", "scalar")),
}


class SequenceError(ValueError):
    """A step sequence that cannot run (wrong engine for an operation, bad sizes)."""


def validate_steps(steps: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Check every (step, engine) pair; SequenceError names the rule and the engines that would work."""
    out = []
    in_psum = False
    for i, (kind, engine) in enumerate(steps, start=1):
        if kind not in STEP_KINDS:
            raise SequenceError(f"step {i}: unknown operation {kind!r}; choose one of {', '.join(STEP_KINDS)}")
        sk = STEP_KINDS[kind]
        if engine not in sk.engines:
            names = " or ".join(ENGINE_LABELS[e] for e in sk.engines)
            raise SequenceError(f"step {i}: '{sk.label}' ({sk.isa}) cannot run on the {ENGINE_LABELS.get(engine, engine)} "
                                f"engine; it runs on the {names} engine (NKI architecture guide)")
        if in_psum and engine == "gpsimd":
            raise SequenceError(f"step {i}: the GpSimd engine cannot access PSUM, where the matmul result is; "
                                "use the Vector or Scalar engine for the first step after a matmul")
        if kind == "matmul" and in_psum:
            raise SequenceError(f"step {i}: the Tensor Engine reads only SBUF, but the previous matmul left its result "
                                "in PSUM; copy it to SBUF first (a 'copy' step on Vector or Scalar)")
        in_psum = kind == "matmul"
        out.append((kind, engine))
    return out


def build_kernel(steps: Sequence[tuple[str, str]], tiles: int) -> Any:
    """An NKI 0.6 kernel ``kernel(x, w)`` applying ``steps`` to each of ``tiles`` [P, F] tiles of x.

    All loads are issued first (so no load queues behind a store), then each tile is transformed by
    the steps on their engines (each writing FP32 into a tile it allocates: ``nisa.*(dst=...)``), copied
    out of PSUM by the Vector Engine if the last step was a matmul (DMA stores from SBUF) or cast to
    FP32 there if there are no steps, and stored (DMA).
    """
    import trnsim.nki as nki
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl

    steps = validate_steps(steps)
    uses_w = any(k == "matmul" for k, _ in steps)
    uses_bias = any(k == "fused" for k, _ in steps)
    # a step before a matmul writes FP32, and nc_matmul needs both operands in one precision class:
    # then the weights are used in FP32 too (and the Tensor Engine runs at its FP32 rate, 1/4 of BF16)
    fp32_matmul = any(k == "matmul" and i > 0 for i, (k, _) in enumerate(steps))
    engines = {"vector": nisa.engine.vector, "scalar": nisa.engine.scalar, "gpsimd": nisa.engine.gpsimd}

    def fp32_copy(src: Any, buffer: Any = None) -> Any:
        dst = nl.ndarray(src.shape, dtype=nl.float32, buffer=buffer or nl.sbuf)
        nisa.tensor_copy(dst=dst, src=src, engine=nisa.engine.vector)
        return dst

    def apply(kind: str, engine: str, t: Any, w_tile: Any, w_tile32: Any, bias_tile: Any) -> Any:
        if kind == "matmul":   # every step writes FP32, so step choices never change the bytes stored
            w_ = w_tile if t.dtype == w_tile.dtype else w_tile32
            dst = nl.ndarray((w_.shape[1], t.shape[1]), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=dst, stationary=w_, moving=t)
            return dst
        dst = nl.ndarray(t.shape, dtype=nl.float32, buffer=nl.sbuf)
        eng = engines[engine]
        if kind == "scale":
            nisa.tensor_scalar(dst=dst, data=t, op0=nl.multiply, operand0=SCALE, engine=eng)
        elif kind == "bias":
            nisa.tensor_scalar(dst=dst, data=t, op0=nl.add, operand0=BIAS, engine=eng)
        elif kind == "scale_bias":   # (x * SCALE) + BIAS: tensor_scalar applies two ops in one pass
            nisa.tensor_scalar(dst=dst, data=t, op0=nl.multiply, operand0=SCALE, op1=nl.add, operand1=BIAS,
                               engine=eng)
        elif kind == "exp":
            nisa.activation(dst=dst, op=nl.exp, data=t)
        elif kind == "fused":
            nisa.activation(dst=dst, op=nl.exp, data=t, scale=SCALE, bias=bias_tile)
        elif kind == "square":
            nisa.tensor_tensor(dst=dst, data1=t, data2=t, op=nl.multiply, engine=eng)
        else:
            nisa.tensor_copy(dst=dst, src=t, engine=eng)
        return dst

    def sequence_kernel(x, w):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        p = w.shape[0]
        w_tile = nl.load(w) if uses_w else None
        w_tile32 = fp32_copy(w_tile) if fp32_matmul else None
        bias_tile = nl.full((p, 1), BIAS, dtype=nl.float32) if uses_bias else None
        xs = [nl.load(x[t * p:(t + 1) * p, :]) for t in range(tiles)]   # every load first: none waits on a store
        for t in range(tiles):
            cur = xs[t]
            for kind, engine in steps:
                cur = apply(kind, engine, cur, w_tile, w_tile32, bias_tile)
            if not steps or steps[-1][0] == "matmul":
                cur = fp32_copy(cur)
            nisa.dma_copy(dst=out[t * p:(t + 1) * p, :], src=cur)
        return out

    return nki.jit(sequence_kernel)


def reference(steps: Sequence[tuple[str, str]], x: np.ndarray, w: np.ndarray, tiles: int) -> np.ndarray:
    """What the sequence computes, in float32 numpy from the same (bf16) inputs, for checking the simulator."""
    p = w.shape[0]
    out = np.empty(x.shape, dtype=np.float32)
    for t in range(tiles):
        cur = x[t * p:(t + 1) * p].astype(np.float32)
        for kind, _ in steps:
            if kind == "scale":
                cur = cur * SCALE
            elif kind == "bias":
                cur = cur + BIAS
            elif kind == "scale_bias":
                cur = cur * SCALE + BIAS
            elif kind == "exp":
                cur = np.exp(cur)
            elif kind == "fused":
                cur = np.exp(SCALE * cur + BIAS)
            elif kind == "square":
                cur = cur * cur
            elif kind == "matmul":
                cur = w.astype(np.float32).T @ cur
        out[t * p:(t + 1) * p] = cur
    return out


@dataclass(frozen=True)
class SequenceResult:
    """A step sequence run on a simulated NeuronCore."""

    steps: tuple[tuple[str, str], ...]
    partitions: int
    free: int
    tiles: int
    target: str
    profile: Any                   # trnsim.perf Profile (timeline, per-engine busy time, ...)
    max_rel_error: float           # simulator output vs numpy float32, relative to max |reference| (finite part)
    overflowed: int = 0            # elements where both overflow fp32 (inf / nan in the same place)

    @property
    def latency_us(self) -> float:
        return float(self.profile.latency_us)

    @property
    def compute_instructions(self) -> int:
        by = self.profile.instructions_by_engine
        return int(sum(by.get(e, 0) for e in ENGINES))

    def engine_busy_us(self) -> dict[str, float]:
        return {e: float(self.profile.engine_busy_us[e]) for e in ENGINES + ("dma",)}

    def instruction_table(self) -> str:
        """One line per instruction: engine, opcode, start and duration (ns)."""
        tl = self.profile.timeline
        lines = [f"{'#':>3} {'engine':<7} {'instruction':<14} {'start ns':>9} {'ns':>7}"]
        for i, ins in enumerate(self.profile.trace.instructions):
            lines.append(f"{i:>3} {ins.engine:<7} {ins.opcode:<14} {tl.start_ns[i]:>9,.0f} "
                         f"{tl.end_ns[i] - tl.start_ns[i]:>7,.0f}")
        return "\n".join(lines)

    def summary(self) -> str:
        busy = self.engine_busy_us()
        used = ", ".join(f"{ENGINE_LABELS[e].split()[0]} {busy[e]:.2f}" for e in ENGINES if busy[e] > 0)
        ops = " -> ".join(f"{STEP_KINDS[k].label} @{e}" for k, e in self.steps) or "(no compute)"
        return (f"{self.tiles} tile(s) of [{self.partitions} x {self.free}] on {self.target}: {ops}\n"
                f"  latency {self.latency_us:.2f} us; {self.compute_instructions} compute instructions; "
                f"busy us: {used}; DMA {busy['dma']:.2f} (per engine)\n"
                f"  {self.numerics_check()}")

    def numerics_check(self, rtol: float = 1e-5) -> str:
        """One line: does the simulator's output match numpy within ``rtol`` (relative to max |reference|)?"""
        if self.max_rel_error <= rtol:
            extra = (f"; {self.overflowed:,} elements overflow fp32 to inf/nan in both, as they would on the "
                     "hardware: scale the inputs down" if self.overflowed else "")
            return f"result matches numpy (max relative error below {rtol:.0e}){extra}"
        return f"result DIFFERS from numpy: max relative error {self.max_rel_error:.2e} > {rtol:.0e}"


def run_sequence(steps: Sequence[tuple[str, str]], partitions: int = 128, free: int = 512, tiles: int = 1,
                 target: str = "trn1", seed: int = 0) -> SequenceResult:
    """Trace and profile the sequence on ``target`` with real numerics (small inputs; well under 100 ms)."""
    from trnsim.nki import KernelError
    from trnsim.perf.profile import profile

    import trnsim

    steps = validate_steps(steps)
    pmax = trnsim.target(target).core.tile.pmax
    for name, v in (("partitions", partitions), ("free", free), ("tiles", tiles)):
        # a count: NaN, infinity, a fraction or a bool would reach int() as a raw ValueError or be truncated
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, float)) or not np.isfinite(v) or v != int(v):
            raise SequenceError(f"{name}={v!r}: must be a whole number")
    if not 1 <= int(partitions) <= pmax:
        raise SequenceError(f"partitions={partitions}: a tile spans 1..{pmax} partitions (nl.tile_size.pmax)")
    if not 1 <= int(free) <= 4096:
        raise SequenceError(f"free={free}: this demo uses 1..4096 elements per partition")
    if not 1 <= int(tiles) <= 8:
        raise SequenceError(f"tiles={tiles}: this demo runs 1..8 tiles")
    import ml_dtypes

    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((tiles * partitions, free)) * 0.5).astype(ml_dtypes.bfloat16)
    w = (rng.standard_normal((partitions, partitions)) / np.sqrt(partitions)).astype(ml_dtypes.bfloat16)
    kernel = build_kernel(steps, int(tiles))
    try:
        prof = profile(kernel, x, w, target=target)
    except KernelError as exc:   # drop the "at <file>:<line>" pointer: it points into this generated kernel
        msg = "\n".join(line for line in str(exc).splitlines() if not line.lstrip().startswith("at "))
        raise SequenceError(msg) from None
    with np.errstate(over="ignore", invalid="ignore"):   # an overflowing chain is reported, not warned about
        ref = np.asarray(reference(steps, x, w, int(tiles)), dtype=np.float64)
    got = np.asarray(prof.outputs, dtype=np.float64)
    fin = np.isfinite(ref) & np.isfinite(got)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))          # the same inf / nan where not finite
    if not (fin | same).all():
        err = math.inf                                              # finite on one side only: a real mismatch
    else:
        scale = float(np.max(np.abs(ref[fin]))) if fin.any() else 1.0
        err = float(np.max(np.abs(got[fin] - ref[fin]))) / (scale or 1.0) if fin.any() else 0.0
    return SequenceResult(tuple(steps), int(partitions), int(free), int(tiles), str(target), prof, err,
                          int((~fin).sum()))


__all__ = ["SCALE", "BIAS", "STEP_KINDS", "PRESETS", "ENGINES", "ENGINE_LABELS", "StepKind", "SequenceError",
           "SequenceResult", "validate_steps", "build_kernel", "reference", "run_sequence"]
