"""The kernel puzzle ladder (notebook 04b): twelve small NKI 0.6 kernels, each checked for numerics and speed.

Each :class:`Puzzle` carries a short story, a numpy reference, a seeded input generator, the target it is timed
on and hints that name the idea (never the answer). :func:`check_puzzle` runs a learner's kernel on trnsim.nki
and returns a :class:`trnsim.course.check.CheckResult`:

1. a blank answer (``None`` / ``...``) -> "not answered yet";
2. the simulator's ``KernelError`` -> its rule, message and fix (:func:`trnsim.models.tiling.format_kernel_error`) and
   a hint for that rule;
3. numerics against numpy, with a specific hint for each typical wrong output (bias never added, the future
   kept by a causal mask, a softmax that overflowed, one K tile instead of the sum over K, ...);
4. the puzzle's resource rules (an SBUF budget per partition, HBM traffic), from the simulated profile;
5. time: the simulated latency (``trnsim.perf.profile``) against a budget.

The budget is a multiple of a roofline *floor* for the shape: the compulsory HBM bytes (inputs read once,
output written once) at the core's DMA rate (DMA engines x engine rate, from the catalog) or the matmul FLOPs
at the Tensor Engine's peak, whichever is longer (plus the collective's own time for the collective puzzle).
The multiple is calibrated on the worked solution in :mod:`trnsim.course.exercises.puzzle_solutions`:
``budget_factor = 1.2 x solution time / floor``, computed when first needed, so a kernel passes when it is
within 1.2x of the worked solution. Small kernels sit far above their floor because every DMA transfer pays a
fixed cost the floor leaves out; the factor says how far.

LNC=2: ``trnsim.perf.profile`` schedules each physical core on its own engines (ordered across cores only by
core_barrier / sendrecv); the checker also reports each core's finish time (:func:`per_core_latency_us`).
The floor for that puzzle uses both cores' DMA rate.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from trnsim.catalog import target as _target
from trnsim.course.check import CheckResult, not_answered
from trnsim.course.exercises.puzzle_spec import MASK_VALUE, ONLINE_CHUNK, RMS_EPS, WORLD
from trnsim.models.journey import dma_gbytes_per_s
from trnsim.models.tiling import format_kernel_error

SLACK = 1.2
"""A kernel passes the timing check within this factor of the worked solution's simulated time."""

Diagnosis = Callable[..., "tuple[str, str] | None"]


@dataclass(frozen=True)
class Puzzle:
    """One rung of the ladder."""

    name: str
    title: str
    story: str
    reference: Callable[..., np.ndarray]        # numpy: inputs -> expected output
    make_inputs: Callable[[np.random.Generator], tuple]
    idea: str                                   # the hint when the kernel is too slow: names the idea
    stub: str                                   # the kernel's signature and docstring, for the notebook
    flops: Callable[..., int] = lambda *a: 0    # Tensor Engine FLOPs the computation needs (matmul puzzles)
    target: str = "trn2"
    lnc: int = 1
    world: int = 1
    seed: int = 0
    rtol: float = 1e-4
    atol: float = 1e-4
    sbuf_limit: Callable[..., int] | None = None     # bytes per partition the kernel may keep live
    sbuf_rule: str = ""
    traffic_limit: float | None = None               # HBM bytes allowed, as a multiple of the compulsory bytes
    traffic_hint: str = ""
    diagnoses: tuple[Diagnosis, ...] = field(default_factory=tuple)   # (inputs, out, want) -> (msg, hint)|None

    def inputs(self) -> tuple:
        """The checker's inputs (seeded: every call returns the same arrays). For a multi-rank puzzle, one
        argument tuple per rank."""
        return self.make_inputs(np.random.default_rng(self.seed))

    def expected(self) -> Any:
        """The numpy reference on :meth:`inputs` (for the collective: the result every rank must hold)."""
        return self.reference(*self.inputs())


# ------------------------------------------------------------------------------------- numpy references


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _softmax(x: np.ndarray, axis: int = 1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _gelu(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + _erf(x64 / math.sqrt(2.0)))).astype(np.float32)


def _causal(s: np.ndarray) -> np.ndarray:
    q, k = np.indices(s.shape)
    return np.where(k <= q, s, MASK_VALUE).astype(np.float32)


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + RMS_EPS) * g


def _attention(q_t: np.ndarray, k_t: np.ndarray, v: np.ndarray, scale: float | None = None) -> np.ndarray:
    d = q_t.shape[0]
    s = q_t.astype(np.float64).T @ k_t * (1.0 / math.sqrt(d) if scale is None else scale)
    return _softmax(s) @ v


# --------------------------------------------------------------------- typical wrong outputs, diagnosed


def _same(a: Any, b: Any, rtol: float = 1e-3, atol: float = 1e-3) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _d_bias_missing(x, b, out, want):
    if _same(out, x):
        return ("the output equals x: the bias was never added",
                "load b once, stretch its single row over the 128 partitions (a broadcast), then add it to each tile")
    if _same(out, x + b[0, 0]):
        return ("every column got b[0, 0]: one number was added, not the bias row",
                "add the whole row b[0, :], broadcast across the partitions, not a single element")
    return None


def _d_not_transposed(x, out, want):
    P, F = x.shape
    blocks = np.concatenate([x[:, j * 128:(j + 1) * 128] for j in range(F // 128)], axis=0)
    if _same(out, blocks):
        return ("each 128 x 128 block of x landed in its place untransposed",
                "the Tensor Engine's transpose (nc_transpose) swaps a block's partition and free axes; a copy does not")
    if _same(out, x.T[::-1]) or _same(out, x.T[:, ::-1]):
        return ("the rows or columns of the transpose come out reversed", "check the order of the blocks you store")
    return None


def _d_column_sum(x, out, want):
    if _same(out, want / x.shape[0]) or _same(out, x.mean(axis=0, keepdims=True)):
        return ("off by a factor of 128: that is the mean over the rows, not the sum",
                "a ones column adds the rows; a column of 1/128 averages them")
    if _same(out, x[:1]):
        return ("the output is row 0 of x: nothing was summed",
                "the Tensor Engine sums over the partition axis of its operands; multiply by a column of ones")
    return None


def _d_causal(s, out, want):
    q, k = np.indices(s.shape)
    if _same(out, np.where(k >= q, s, MASK_VALUE)):
        return ("you kept the upper triangle (the future) and masked the past",
                "keep s[q, k] when k <= q, i.e. when q - k >= 0: the partition index q counts +1, the column k -1")
    if _same(out, np.where(k < q, s, MASK_VALUE)):
        return ("the diagonal was masked: a query must see its own key",
                "keep s[q, k] for q - k >= 0: with greater_equal the expression needs no offset (an offset of -1 "
                "or a strict greater does this)")
    if _same(out, np.where(k == q, s, MASK_VALUE)):
        return ("only the diagonal was kept: the comparison tested q - k == 0",
                "affine_select's cmp_op defaults to nl.equal: pass cmp_op=nl.greater_equal")
    return None


def _d_softmax(x, out, want):
    if not np.all(np.isfinite(out)):
        return ("the output has inf or NaN: exp overflowed (these logits reach 100 and more)",
                "subtract each row's maximum before the exponential; softmax does not change, exp stays <= 1")
    if _same(out, _softmax(x, axis=0)):
        return ("the columns sum to 1, not the rows",
                "reduce along the free axis (axis=1): a row lives in one partition")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    if _same(out, e):
        return ("the rows do not sum to 1: the normalisation is missing",
                "divide each row by its sum (multiply by the reciprocal of the [128, 1] row sum)")
    return None


def _d_rmsnorm(x, g, out, want):
    ms = (x.astype(np.float64) ** 2).mean(axis=1, keepdims=True)
    inv = 1.0 / np.sqrt(ms + RMS_EPS)
    if _same(out, x * inv):
        return ("gamma is missing", "multiply by gamma [1, C], broadcast across the partitions")
    if _same(out, x / np.sqrt(ms) * g):
        return ("eps is missing: the rows of tiny values (every 16th row here) come out too large",
                "rsqrt(mean(x^2) + 1e-6): add eps before the square root (the activation's bias argument)")
    if _same(out, x * inv / math.sqrt(x.shape[1]) * g) or _same(out, x / np.sqrt((x ** 2).sum(1, keepdims=True)) * g):
        return (f"off by sqrt(C) = {math.sqrt(x.shape[1]):.1f}: you divided by the root of the sum, not of the mean",
                "mean = sum / C: the activation's scale argument can divide by C for free")
    c = x - x.mean(axis=1, keepdims=True)
    if _same(out, c / np.sqrt((c ** 2).mean(axis=1, keepdims=True) + RMS_EPS) * g):
        return ("you subtracted the mean: that is LayerNorm", "RMSNorm does not centre the rows; scale by 1/rms only")
    return None


def _d_matmul(lhsT, rhs, out, want):
    K = lhsT.shape[0]
    for k in range(K // 128):
        part = lhsT[k * 128:(k + 1) * 128].T @ rhs[k * 128:(k + 1) * 128]
        if _same(out, part, rtol=1e-3, atol=1e-2):
            return (f"only K tile {k} of {K // 128} reached the output",
                    "the K tiles must accumulate: keep one PSUM tile for the whole K loop, so each nc_matmul "
                    "adds to it")
    if _same(out, want / (K // 128), rtol=1e-3, atol=1e-2):
        return ("the output is the average over the K tiles", "accumulate the K tiles; do not divide")
    return None


def _d_logsumexp(x, out, want):
    C = x.shape[1]
    if _same(out, x.max(axis=1, keepdims=True)):
        return ("the output is the row max: the sum of exponentials is missing", "logsumexp = m + log(sum(exp(x - m)))")
    m = np.full((x.shape[0], 1), -np.inf)
    no_rescale = np.zeros((x.shape[0], 1))
    for j in range(C // ONLINE_CHUNK):
        c = x[:, j * ONLINE_CHUNK:(j + 1) * ONLINE_CHUNK].astype(np.float64)
        m = np.maximum(m, c.max(axis=1, keepdims=True))
        no_rescale += np.exp(c - m).sum(axis=1, keepdims=True)
    if _same(out, m + np.log(no_rescale)):
        return ("the running sum was not rescaled when the running max grew",
                "when the max rises from m_old to m_new, multiply the sum so far by exp(m_old - m_new)")
    return None


def _attention_no_rescale(q_t: np.ndarray, k_t: np.ndarray, v: np.ndarray, block: int = 512) -> np.ndarray:
    """Blockwise attention whose running sum and output are NOT rescaled when the running max grows (the
    online-softmax slip): each key block's exp uses the running max at that block."""
    d = q_t.shape[0]
    s = (q_t.astype(np.float64).T @ k_t) / np.sqrt(d)
    m = np.full((s.shape[0], 1), -np.inf)
    acc = np.zeros((s.shape[0], v.shape[1]))
    l_sum = np.zeros((s.shape[0], 1))
    for j in range(s.shape[1] // block):
        sb = s[:, j * block:(j + 1) * block]
        m = np.maximum(m, sb.max(axis=1, keepdims=True))
        p = np.exp(sb - m)
        l_sum += p.sum(axis=1, keepdims=True)
        acc += p @ v[j * block:(j + 1) * block]
    return acc / l_sum


def _d_attention(q_t, k_t, v, out, want):
    if _same(out, _attention(q_t, k_t, v, scale=1.0)):
        return ("the scores were not scaled", "softmax(Q K^T / sqrt(d)): scale the scores by 1/sqrt(d) inside the exp")
    # a kernel may walk the keys in blocks of 128, 256 or 512 (one PSUM bank of fp32 scores is 512 wide)
    sk = k_t.shape[1]
    if any(sk % blk == 0 and _same(out, _attention_no_rescale(q_t, k_t, v, blk)) for blk in (128, 256, 512)
           if blk < sk):
        return ("the running sum and output were not rescaled when the running max grew in a later key block",
                "per key block: corr = exp(m_old - m_new); multiply the running sum and the output accumulator by "
                "corr before adding the block's terms")
    return None


def _d_gelu(x, out, want):
    half = x.shape[0] // 2
    if np.isnan(out[half:]).all() and not np.isnan(out[:half]).any():
        return ("only the first half of the rows was written: both cores wrote the same half",
                "offset each core's rows by nl.program_id(0) x (rows per core)")
    if np.isnan(out[:half]).all() and not np.isnan(out[half:]).any():
        return ("only the second half of the rows was written", "core 0 owns rows 0 .. R/2 - 1, core 1 the rest")
    return None


def _d_mean(gs, out, want):
    total = np.sum(gs, axis=0)
    if _same(out, total):
        return (f"off by a factor of {len(gs)}: that is the sum over the ranks, not the mean",
                f"divide the all-reduced sum by the number of ranks ({len(gs)})")
    return None


# ------------------------------------------------------------------------------------------ the ladder


def _mm_inputs(rng):
    return _f32(rng, 512, 128), _f32(rng, 512, 1024)


def _rms_inputs(rng):
    # every 16th row is tiny (rms about 1e-3), so eps = 1e-6 in rsqrt(mean(x^2) + eps) changes its result by ~30%
    x, g = _f32(rng, 256, 512), _f32(rng, 1, 512)
    x[::16] *= np.float32(1e-3)
    return x, g


def _flash_inputs(rng):
    # two 512-key blocks, so a kernel without the online rescaling between blocks gives wrong values
    return _f32(rng, 64, 256), _f32(rng, 64, 1024), _f32(rng, 1024, 64)


PUZZLES: dict[str, Puzzle] = {p.name: p for p in (
    Puzzle(
        "broadcast_add", "1. Broadcast add",
        "A bias row b [1, C] must be added to every row of activations x [R, C]. Rows live on partitions, so "
        "the one bias row has to reach all 128 partitions of each tile.",
        lambda x, b: x + b, lambda rng: (_f32(rng, 512, 512), _f32(rng, 1, 512)),
        "the bias is the same for every tile: load it once, outside the row loop, and broadcast it",
        "def broadcast_add(x, b):\n    \"\"\"x [R, C] (R a multiple of 128) + b [1, C] -> [R, C].\"\"\"",
        diagnoses=(_d_bias_missing,)),
    Puzzle(
        "transpose_te", "2. Transpose on the Tensor Engine",
        "x [128, F] arrives in HBM and, once loaded, sits in SBUF on 128 partitions; the next kernel wants x.T [F, 128]. A DMA could shuffle "
        "it element by element; the Tensor Engine transposes a 128 x 128 block in one instruction (into PSUM).",
        lambda x: x.T.copy(), lambda rng: (_f32(rng, 128, 512),),
        "load x once and transpose 128 x 128 blocks on the Tensor Engine, copying each out of PSUM",
        "def transpose_te(x):\n    \"\"\"x [128, F] (F a multiple of 128) -> x.T [F, 128].\"\"\"",
        diagnoses=(_d_not_transposed,)),
    Puzzle(
        "column_sum", "3. Sum over partitions as a matmul",
        "The Vector Engine reduces along the free axis (within a partition). A sum over the 128 partitions "
        "needs an engine that works across them: the Tensor Engine contracts over them in every matmul. (GpSimd's "
        "nisa.tensor_partition_reduce reduces across partitions too, but AWS gives no cycle formula for it, so "
        "trnsim's time for it is a rule of thumb and the checker says so.)",
        lambda x: x.sum(axis=0, keepdims=True), lambda rng: (_f32(rng, 128, 512),),
        "one matmul: a [128, 1] column of ones against x contracts the partition axis",
        "def column_sum(x):\n    \"\"\"x [128, C] (C <= 512) -> [1, C], the sum of each column.\"\"\"",
        flops=lambda x: 2 * x.shape[0] * x.shape[1], diagnoses=(_d_column_sum,)),
    Puzzle(
        "causal_mask", "4. Causal mask",
        "In a decoder, query q may only attend to keys k <= q. Scores s [128, 128] have queries on partitions "
        "and keys on the free axis; everything above the diagonal must become -30000 before the softmax.",
        _causal, lambda rng: (_f32(rng, 128, 128),),
        "the condition q - k >= 0 is affine in the partition and free indices: one affine_select, no index tile",
        "def causal_mask(s):\n    \"\"\"s [128, 128] -> s where key <= query, else -30000.\"\"\"",
        diagnoses=(_d_causal,)),
    Puzzle(
        "row_softmax", "5. Row softmax",
        "Attention turns each row of scores into probabilities. These logits are large (standard deviation "
        "30), so a naive exp overflows float32.",
        lambda x: _softmax(x.astype(np.float64)).astype(np.float32),
        lambda rng: (_f32(rng, 256, 512, scale=30.0),),
        "one activation can compute exp(x - max) and its row sum together; divide by multiplying with a reciprocal",
        "def row_softmax(x):\n    \"\"\"x [R, C] (R a multiple of 128) -> softmax along each row.\"\"\"",
        rtol=1e-4, atol=1e-6, diagnoses=(_d_softmax,)),
    Puzzle(
        "rmsnorm", "6. RMSNorm",
        "Llama-style models normalise each token by its root mean square and a learned gain gamma [1, C]: "
        "out = x / sqrt(mean(x^2) + 1e-6) * gamma.",
        lambda x, g: _rmsnorm(x, g).astype(np.float32), _rms_inputs,
        "square-and-sum in one activation, rsqrt(sum / C + eps) in another; gamma loaded once and broadcast",
        "def rmsnorm(x, gamma):\n"
        "    \"\"\"x [R, C] (R a multiple of 128), gamma [1, C] -> RMSNorm(x) * gamma (eps 1e-6).\"\"\"",
        diagnoses=(_d_rmsnorm,)),
    Puzzle(
        "tiled_matmul", "7. Tiled matmul",
        "out [M, N] = lhsT.T @ rhs with K = 512: the Tensor Engine contracts at most 128 rows at a time and a "
        "PSUM tile holds at most 512 fp32 columns, so K and N must be tiled.",
        lambda a, b: (a.astype(np.float64).T @ b).astype(np.float32), _mm_inputs,
        "load each lhsT tile once (outside the N loop) and let the K tiles accumulate in one PSUM tile",
        "def tiled_matmul(lhsT, rhs):\n"
        "    \"\"\"lhsT [K, 128], rhs [K, N] (K multiple of 128, N of 512) -> [128, N] float32.\"\"\"",
        flops=lambda a, b: 2 * a.shape[1] * b.shape[1] * a.shape[0], rtol=1e-4, atol=1e-3,
        diagnoses=(_d_matmul,)),
    Puzzle(
        "double_buffer", "8. Double buffering",
        "exp over a long tensor, with SBUF so tight that only two [128, C] tiles fit. With one buffer the DMA "
        "and the Scalar Engine take turns; with two, tile i+1 loads while tile i is computed.",
        lambda x: np.exp(x.astype(np.float64)).astype(np.float32), lambda rng: (_f32(rng, 1024, 512),),
        "two buffers used alternately (i % 2): the load of one tile overlaps the exp of the other",
        "def double_buffer(x):\n"
        "    \"\"\"exp(x) for x [R, C] (R a multiple of 128), with at most two [128, C] SBUF tiles.\"\"\"",
        rtol=1e-5, atol=1e-6,
        sbuf_limit=lambda x: 2 * x.shape[1] * x.itemsize,
        sbuf_rule="at most two [128, C] tiles may be live in SBUF (allocate the buffers once and reuse them)"),
    Puzzle(
        "online_logsumexp", "9. Online softmax",
        "The softmax normaliser log(sum(exp(x))) of rows too long to hold: x [128, 8192] must stream through "
        "SBUF in 512-column chunks, keeping only a running max m and a running sum l per row.",
        lambda x: _logsumexp(x.astype(np.float64)).astype(np.float32), lambda rng: (_f32(rng, 128, 8192, scale=10.0),),
        "one pass: per chunk, new max, rescale the running sum by exp(m_old - m_new), add the chunk's exp-sum",
        "def online_logsumexp(x):\n"
        "    \"\"\"x [128, C] (C a multiple of 512) -> [128, 1] float32, log(sum(exp(x), axis=1)).\"\"\"",
        rtol=1e-5, atol=1e-4,
        sbuf_limit=lambda x: x.shape[1] * x.itemsize,
        sbuf_rule="never hold a whole row (C x 4 bytes per partition) in SBUF: stream 512-column chunks",
        traffic_limit=1.0, traffic_hint="x is read twice: a first pass for the max and a second for the sum is "
                                        "not online; keep a running max and rescale the running sum instead",
        diagnoses=(_d_logsumexp,)),
    Puzzle(
        "flash_attention", "10. Flash attention",
        "softmax(Q K^T / sqrt(d)) V for two 128-query tiles against 1024 keys (d = 64). The scores never go "
        "to HBM, and K and V are small enough to stay resident in SBUF for every query tile.",
        lambda q, k, v: _attention(q, k, v).astype(np.float32), _flash_inputs,
        "load K and V once for all query tiles; take keys in blocks as wide as a PSUM bank of scores (512), "
        "and per block: "
        "scores, online softmax update, P^T V accumulated in PSUM",
        "def flash_attention(q_t, k_t, v):\n"
        "    \"\"\"q_t [d, Sq], k_t [d, Sk], v [Sk, d] (Sq a multiple of 128, Sk of 512) -> [Sq, d] float32.\"\"\"",
        flops=lambda q, k, v: 4 * q.shape[1] * k.shape[1] * q.shape[0], rtol=1e-3, atol=1e-4,
        traffic_limit=1.0, traffic_hint="K and V are read more than once: load them before the query loop",
        diagnoses=(_d_attention,)),
    Puzzle(
        "two_core_gelu", "11. Two cores (LNC=2)",
        "On Trn2 a logical NeuronCore is two physical cores. Launched as kernel[2], the kernel body runs once "
        "per core; nl.program_id(0) says which. GELU over x [1024, 512] should take half the time on two.",
        lambda x: _gelu(x), lambda rng: (_f32(rng, 1024, 512),),
        "split the rows: core nl.program_id(0) takes rows program_id x R/2 ... (program_id + 1) x R/2 - 1",
        "def two_core_gelu(x):\n"
        "    \"\"\"gelu(x) for x [R, C]; launched as two_core_gelu[2] (each core takes half the rows).\"\"\"",
        lnc=2, rtol=1e-5, atol=1e-5, diagnoses=(_d_gelu,)),
    Puzzle(
        "mean_all_reduce", "12. A collective: mean gradient",
        "Data parallelism: each of 4 ranks holds its gradient g [128, 512]; every rank must end with the mean. "
        "nki.collectives.all_reduce sums tiles across ranks inside the kernel.",
        lambda *gs: (np.sum(gs, axis=0) / len(gs)).astype(np.float32),
        lambda rng: tuple(_f32(rng, 128, 512) for _ in range(WORLD)),
        "load, one all_reduce (op=nl.add) over all ranks, scale by 1/ranks, store",
        "def mean_all_reduce(g):\n    \"\"\"g [128, C] on each of 4 ranks -> the mean over ranks, on every rank.\"\"\"",
        world=WORLD, rtol=1e-5, atol=1e-5, diagnoses=(_d_mean,)),
)}
"""The ladder, easiest first."""

_RULE_HINTS = {
    "err_num_partition_exceed_arch_limit": "a tile has at most 128 partitions: slice 128 rows at a time",
    "err_tensor_access_out_of_bound": "an index runs past the end of a tensor: check the slice bounds",
    "err_tensor_output_not_written_to": "the output is never written: store the result into it",
    "err_unsupported_memory": "engines read SBUF (or PSUM) tiles, not HBM tensors: load first",
    "err_missing_argument": "NKI 0.6 instructions write into a destination: nisa.<op>(dst=..., ...)",
    "err_removed_api": "that is a Beta 1 name; use the NKI 0.6 form the message gives",
}


def _rule_hint(err: Exception, puzzle: str = "") -> str:
    """The hint for a KernelError: by rule, refined by what the message says went where (and the puzzle)."""
    rule, text = getattr(err, "rule", ""), str(err)
    if rule == "err_num_partition_exceed_arch_limit" and puzzle == "column_sum":
        return ("the sum [1, C] has a single partition: nc_matmul's result has one partition per column of the "
                "stationary operand, so the ones vector [128, 1] is stationary and x the moving operand")
    if rule == "err_unsupported_memory":
        if "got a tile in 'hbm'" in text:
            return "engines read SBUF (or PSUM) tiles, not HBM tensors: load first"
        if "address space 'psum'" in text:
            return "this instruction writes the Tensor Engine's PSUM: allocate its dst with buffer=nl.psum"
        if "got a tile in 'psum'" in text:
            return "PSUM results go through SBUF: nisa.tensor_copy them into an SBUF tile first"
        return "each operand must sit in the memory the message names: read which one and where it is"
    if rule == "err_num_partition_exceed_arch_limit" and "nc_matmul" in text:
        return ("a matmul's result has as many partitions as the stationary operand has columns: if that is too "
                "many, swap which operand is stationary and which is moving")
    return _RULE_HINTS.get(rule, "read the rule and the fix the simulator gives")


# ------------------------------------------------------------------------------------------ timing


@dataclass(frozen=True)
class Floor:
    """The roofline floor of a puzzle's shape: the longer of DMA and Tensor Engine time (plus a collective)."""

    dma_us: float
    tensor_us: float
    collective_us: float = 0.0

    @property
    def us(self) -> float:
        return max(self.dma_us, self.tensor_us) + self.collective_us

    @property
    def limiter(self) -> str:
        base = "DMA" if self.dma_us >= self.tensor_us else "Tensor Engine"
        return base + (" + all-reduce" if self.collective_us else "")


def floor(name: str) -> Floor:
    """The roofline floor of puzzle ``name`` for its checker's shapes.

    DMA: inputs read once and the output written once (per rank for the collective) at the DMA rate of the
    cores the kernel runs on. Tensor Engine: the puzzle's matmul FLOPs at the core's peak for the input dtype.
    Collective: the all-reduce's time from trnsim.cluster.cost_collective (the model the profile uses)."""
    from trnsim.cluster import cost_collective

    p = PUZZLES[name]
    args = p.inputs()
    core = _target(p.target).core
    if p.world > 1:
        rank_args = (args[0],)
        out_bytes = args[0].nbytes
        coll = cost_collective("all_reduce", args[0].nbytes, p.world, p.target, launch="graph").time_us
    else:
        rank_args = args
        out_bytes = np.asarray(p.reference(*args)).nbytes
        coll = 0.0
    nbytes = sum(a.nbytes for a in rank_args) + out_bytes
    dtype = "fp32" if rank_args[0].dtype == np.float32 else "bf16"
    peak = core.tensor_peak_tflops(dtype)
    return Floor(nbytes / (dma_gbytes_per_s(p.target, p.lnc) * 1e9) * 1e6,
                 p.flops(*rank_args) / (peak * 1e12) * 1e6, coll)


def per_core_latency_us(prof: Any) -> list[float]:
    """When each physical core of a profiled LNC=2 launch finishes (us): the latest end of its instructions in
    the profile's two-core timeline. A core with no work is 0."""
    tl = prof.timeline
    core_of = np.fromiter((ins.core for ins in prof.trace.instructions), dtype=np.int64,
                          count=len(prof.trace.instructions))
    return [float(tl.end_ns[core_of == c].max(initial=0.0)) / 1e3 for c in range(max(1, int(prof.trace.lnc)))]


@dataclass(frozen=True)
class Run:
    """One puzzle kernel run: its output and simulated numbers (times in us)."""

    output: Any
    latency_us: float
    peak_sbuf_bytes_per_partition: int
    hbm_bytes: int
    core_latency_us: tuple[float, ...] = ()
    uninitialized_reads: tuple[str, ...] = ()    # the simulator's UninitializedReadWarning messages, in order
    undocumented_costs: tuple[str, ...] = ()     # Profile.notes: instructions timed by a rule of thumb


def _as_kernel(kernel: Any, lnc: int):
    import trnsim.nki as nki

    k = kernel if isinstance(kernel, nki.Kernel) else nki.jit(kernel)
    if lnc > 1 and getattr(k, "lnc", 1) != lnc:
        k = k[lnc]
    return k


def run(name: str, kernel: Any) -> Run:
    """Run ``kernel`` on puzzle ``name``'s inputs and profile it (raises the simulator's KernelError). The
    trace's uninitialised reads (its UninitializedReadWarning messages, once each even over several ranks) come
    with the Run, so the checker can name an uninitialised read as the cause of undefined output values."""
    from trnsim.perf import profile, profile_ranks

    p = PUZZLES[name]
    args = p.inputs()
    if p.world > 1:
        profs = profile_ranks(_as_kernel(kernel, 1), p.world, [(a,) for a in args], target=p.target, numerics=True)
        uninit = tuple(dict.fromkeys(m for q in profs for m in q.trace.uninitialized_reads))
        return Run([q.outputs for q in profs], max(q.latency_us for q in profs),
                   max(q.peak_sbuf_bytes_per_partition for q in profs), max(q.hbm_bytes for q in profs),
                   uninitialized_reads=uninit, undocumented_costs=tuple(sorted({n for q in profs for n in q.notes})))
    prof = profile(_as_kernel(kernel, p.lnc), *args, target=p.target)
    lat = prof.latency_us
    cores: tuple[float, ...] = ()
    if p.lnc > 1:
        cores = tuple(per_core_latency_us(prof))
    return Run(prof.outputs, lat, prof.peak_sbuf_bytes_per_partition, prof.hbm_bytes, cores,
               tuple(dict.fromkeys(prof.trace.uninitialized_reads)), prof.notes)


@functools.lru_cache(maxsize=None)
def solution_time_us(name: str) -> float:
    """Simulated time of the worked solution (trnsim.course.exercises.puzzle_solutions)."""
    from trnsim.course.exercises.puzzle_solutions import SOLUTIONS

    return run(name, SOLUTIONS[name]).latency_us


def budget_factor(name: str) -> float:
    """How many times the floor a kernel may take: 1.2 x the worked solution's time over the floor."""
    return SLACK * solution_time_us(name) / floor(name).us


def budget_us(name: str) -> float:
    return budget_factor(name) * floor(name).us


# ------------------------------------------------------------------------------------------ the checker


def _indent(text: str) -> str:
    return "\n".join("   " + line for line in text.splitlines())


def _compare(p: Puzzle, args: tuple, out: Any) -> CheckResult | None:
    """None when the output matches numpy; else a failed result with the most specific hint found."""
    want = p.reference(*args)
    if p.world > 1:
        outs = out
        for r, o in enumerate(outs):
            res = _compare_one(p, args, o, want, f" on rank {r}")
            if res is not None:
                return res
        return None
    return _compare_one(p, args, out, want, "")


def _compare_one(p: Puzzle, args: tuple, out: Any, want: np.ndarray, where: str) -> CheckResult | None:
    title = p.title
    if out is None:
        return CheckResult(False, title, f"the kernel returned nothing{where}",
                           ("allocate out = nl.ndarray(shape, dtype=..., buffer=nl.shared_hbm) and return it",))
    if isinstance(out, (tuple, list)):
        return CheckResult(False, title, f"the kernel returned {len(out)} outputs{where}; expected one array",
                           ("return only the output tensor",))
    out = np.asarray(out, dtype=np.float64)
    if out.shape != want.shape:
        return CheckResult(False, title, f"output shape {list(out.shape)}{where}, expected {list(want.shape)}",
                           ("allocate the output with the shape the docstring gives",))
    if np.allclose(out, want, rtol=p.rtol, atol=p.atol):
        return None
    for diag in p.diagnoses:
        found = diag(*(args if p.world == 1 else (args,)), out, want)
        if found:
            return CheckResult(False, title, found[0] + where, (found[1],))
    nan = np.isnan(out)
    if nan.any():
        idx = tuple(int(i) for i in np.argwhere(nan)[0])
        return CheckResult(False, title, f"{int(nan.sum())} of {nan.size} output values were never written{where} "
                           f"(first at {list(idx)})", ("every output element must be stored exactly once: "
                                                       "check the loop bounds and the slices you store to",))
    bad = ~np.isclose(out, want, rtol=p.rtol, atol=p.atol)
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return CheckResult(False, title, f"{int(bad.sum())} of {bad.size} values differ{where}; first at {list(idx)}: "
                       f"got {out[idx]:.6g}, expected {want[idx]:.6g}",
                       ("compare your kernel with the numpy reference on that element",))


def check_puzzle(name: str, kernel: Any, *, keep: list | None = None) -> CheckResult:
    """Check a learner's kernel for puzzle ``name``: numerics against numpy, resource rules, then the
    simulated time against the budget (see the module docstring). ``keep``: a list the kernel's
    :class:`Run` is appended to (when it ran), so a caller can reuse the simulated numbers."""
    import trnsim.nki as nki

    if name not in PUZZLES:
        raise ValueError(f"unknown puzzle {name!r}; choose one of {', '.join(PUZZLES)}")
    p = PUZZLES[name]
    title = p.title
    if kernel is None or kernel is Ellipsis:
        return not_answered(title)
    if not callable(kernel):
        return CheckResult(False, title, f"expected a kernel function, got {type(kernel).__name__}",
                           ("pass the kernel itself, without calling it",))
    try:
        r = run(name, kernel)
        if keep is not None:
            keep.append(r)
    except nki.KernelError as err:
        hint = _rule_hint(err, name)
        return CheckResult(False, title, "the simulator rejected the kernel:\n" + _indent(format_kernel_error(err)),
                           (hint,))
    except NotImplementedError:  # the student copy's stub body (nbgrader's raise NotImplementedError())
        return not_answered(title, "write the kernel's body in place of raise NotImplementedError(), keeping "
                                   "its def line and docstring")
    except Exception as err:  # a Python error in the learner's code: show it, do not crash
        return CheckResult(False, title, f"the kernel raised {type(err).__name__}: {err}",
                           ("run it on the inputs yourself with nki.simulate(kernel)(*inputs) to see the traceback",))
    args = p.inputs()
    bad = _compare(p, args, r.output)
    if bad is not None:
        if r.uninitialized_reads and "were never written" in bad.message:
            # undefined values reached the output (the simulator's NaN fill) and no specific diagnosis matched: the
            # uninitialised read is the likely cause, not missing stores
            first = r.uninitialized_reads[0]
            more = len(r.uninitialized_reads) - 1
            return CheckResult(False, title, f"wrong output: the kernel reads memory before anything wrote it. "
                               f"{first}" + (f" ({more} more such read{'s' if more > 1 else ''})" if more else ""),
                               ("initialise it first: nl.zeros / nisa.memset for an accumulator, and let the first "
                                "matmul into a PSUM tile overwrite it (accumulate=None or False), not add to it",))
        return bad
    rank_args = args[:1] if p.world > 1 else args
    if p.sbuf_limit is not None:
        limit = p.sbuf_limit(*rank_args)
        if r.peak_sbuf_bytes_per_partition > limit:
            return CheckResult(False, title, f"right values, but the kernel keeps {r.peak_sbuf_bytes_per_partition:,} "
                               f"bytes per partition live in SBUF; this puzzle allows {limit:,}", (p.sbuf_rule,))
    if p.traffic_limit is not None:
        compulsory = sum(a.nbytes for a in rank_args) + np.asarray(p.reference(*args)).nbytes
        if r.hbm_bytes > p.traffic_limit * compulsory:
            return CheckResult(False, title, f"right values, but the kernel moves {r.hbm_bytes:,} HBM bytes, "
                               f"{r.hbm_bytes / compulsory:.1f}x the {compulsory:,} it must", (p.traffic_hint,))
    f = floor(name)
    factor = budget_factor(name)
    x = r.latency_us / f.us
    cores = ""
    if r.core_latency_us:
        cores = " (per core: " + ", ".join(f"{t:,.2f}" for t in r.core_latency_us) + " us)"
    timing = (f"{r.latency_us:,.2f} us{cores} = {x:.2f}x the {f.limiter} floor of {f.us:,.2f} us; "
              f"budget: within {factor:.2f}x ({factor * f.us:,.2f} us)")
    if r.undocumented_costs:
        # the time rests on an instruction AWS gives no cycle formula for: not a claim about the hardware
        timing += ("; this time is not a hardware claim: " + "; ".join(r.undocumented_costs))
    if r.latency_us <= factor * f.us * (1 + 1e-9):
        return CheckResult(True, title, "matches numpy; " + timing)
    hints = [p.idea]
    if p.lnc > 1 and r.core_latency_us and min(r.core_latency_us) < 0.25 * max(r.core_latency_us):
        hints.insert(0, "one core does almost all the work")
    return CheckResult(False, title, "right values, but too slow: " + timing, tuple(hints))


@dataclass(frozen=True)
class Standing:
    """One leaderboard row (times in us; ``time_us`` None unless the kernel ran with right values: solved, or
    right but over its budget or a resource rule, then ``passed`` is False)."""

    name: str
    title: str
    time_us: float | None
    floor_us: float
    budget_us: float
    limiter: str
    passed: bool


def leaderboard(answers: Mapping[str, Any]) -> list[Standing]:
    """Each puzzle's standing: the learner's simulated time (from ``answers``, name -> kernel) vs its budget."""
    rows = []
    for name, p in PUZZLES.items():
        k = answers.get(name)
        kept: list[Run] = []
        res = check_puzzle(name, k, keep=kept) if k is not None and k is not Ellipsis else None
        # a time for every kernel with right values: solved, or over its budget (too slow / a resource rule)
        right = res is not None and kept and (res.passed or res.message.startswith("right values"))
        t = kept[0].latency_us if right else None
        f = floor(name)
        rows.append(Standing(name, p.title, t, f.us, budget_us(name), f.limiter, bool(res and res.passed)))
    return rows


def leaderboard_table(rows: Sequence[Standing]) -> str:
    """The leaderboard as fixed-width text (times rounded to 0.01 us)."""
    lines = [f"{'puzzle':<36} {'floor us':>9} {'budget us':>10} {'yours us':>9} {'x floor':>8}  status"]
    for r in rows:
        yours = f"{r.time_us:9.2f}" if r.time_us is not None else f"{'-':>9}"
        xf = f"{r.time_us / r.floor_us:8.1f}" if r.time_us is not None else f"{'-':>8}"
        status = "solved" if r.passed else ("right values, not accepted" if r.time_us is not None else "open")
        lines.append(f"{r.title:<36} {r.floor_us:9.2f} {r.budget_us:10.2f} {yours} {xf}  {status}")
    return "\n".join(lines)
