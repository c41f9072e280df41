"""Checkers for kernel performance (notebooks 05 and 06), on top of :mod:`trnsim.models.journey`.

Each returns a :class:`trnsim.course.check.CheckResult` with hints that name the idea to revisit:
:func:`check_traffic` and :func:`check_block_choice` (the matmul journey), :func:`check_fused_softmax`
(a one-pass softmax against :data:`trnsim.models.journey.softmax_two_pass`).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from trnsim.catalog import target as _target
from trnsim.course.check import CheckResult, expect_close, not_answered
from trnsim.models.journey import (evaluate_blocks, journey_traffic, matmul_tiles, profile_stage, rowwise_traffic,
                                    softmax_two_pass)


# ---------------------------------------------------------------- notebook 05 checkers

def _uneven_blocks(size: int, tiles_in_block: tuple[int, int, int],
                   target: str) -> list[tuple[str, int, int, int]]:
    """(dim, tiles_in_block, tile size, block size) of each dimension of a square ``size`` matmul that
    ``matmul_fully_blocked`` cannot tile evenly (its blocks, as the kernel sizes them)."""
    from trnsim.kernels.matmul import tiles_per_block

    tm, tn, tk = matmul_tiles(target)
    out = []
    for dim, tiles, tile in zip("MNK", tiles_in_block, (tm, tn, tk)):
        t = tiles_per_block(size, tile, int(tiles))
        if size % (t * tile):
            out.append((dim, t, tile, t * tile))
    return out


def check_traffic(answer_mib: float, size: int = 2048, tiles_in_block_m: int = 4, tiles_in_block_n: int = 2,
                  target: str = "trn1") -> CheckResult:
    """Notebook 05: HBM traffic (MiB) of ``matmul_block_free`` on square bf16 ``size`` matrices.

    The reference answer is the simulator's own DMA count (``Profile.hbm_bytes``).
    """
    title = f"HBM traffic of block_free ({tiles_in_block_m} x {tiles_in_block_n} blocks, {size}^3 bf16)"
    if answer_mib is None or answer_mib is Ellipsis:
        return not_answered(title, "lhsT once, rhs once per M block, the output once")
    blocks = {"tiles_in_block_m": tiles_in_block_m, "tiles_in_block_n": tiles_in_block_n}
    want = profile_stage("block_free", size, size, size, blocks=blocks, target=target).hbm_bytes / 2**20
    tr = journey_traffic("block_free", size, size, size, blocks=blocks, target=target)
    res = expect_close(title, answer_mib, want, rtol=0.02, unit="MiB",
                       hint="lhsT is loaded once; rhs once per M block of "
                            f"{tiles_in_block_m} x 128 rows; the result is stored once; 2 bytes per bf16")
    if res.passed:
        return res
    got = float(answer_mib)
    one = size * size * 2 / 2**20
    extra = []
    if np.isclose(got, want - one, rtol=0.02):
        extra.append(f"you left out the output: {size} x {size} bf16 = {one:.0f} MiB is written once")
    elif np.isclose(got, (tr.lhsT_bytes + tr.out_bytes) / 2**20 + size * size * 2 * (size // 128) / 2**20, rtol=0.02):
        extra.append("that is the hoisted kernel's traffic: blocking M means rhs is reloaded once per M *block*, "
                     f"not once per 128-row tile ({size // (128 * tiles_in_block_m)} times, not {size // 128})")
    elif np.isclose(got, 3 * one, rtol=0.02):
        extra.append("that is the ideal (every matrix moved once); block_free still reloads rhs for every M block")
    elif np.isclose(got, 2 * want, rtol=0.02) or np.isclose(got, want / 2, rtol=0.02):
        extra.append("off by a factor of 2: a bf16 element is 2 bytes")
    elif np.isclose(got, want * 2**20 / 1e6, rtol=0.01):
        extra.append(f"you computed MB (10^6 bytes); the question asks for MiB (2^20 bytes): "
                     f"{want * 2**20 / 1e6:.1f} MB = {want:.0f} MiB")
    base = tuple(h for h in res.hints if "FLOPs" not in h)
    return CheckResult(False, res.title, res.message, base + tuple(extra))


def check_block_choice(tiles_in_block_m: int, tiles_in_block_n: int, tiles_in_block_k: int, *,
                       size: int = 2048, goal_pct: float = 75.0, target: str = "trn1") -> CheckResult:
    """Notebook 05: blocks for ``matmul_fully_blocked`` that fit in SBUF and reach ``goal_pct`` of peak."""
    title = f"block choice reaching {goal_pct:.0f}% of Tensor Engine peak at {size}^3"
    if any(v is None or v is Ellipsis for v in (tiles_in_block_m, tiles_in_block_n, tiles_in_block_k)):
        return not_answered(title, "try the panel above: block sizes are counts of 128 x 512 tiles")
    tm, tn, tk = matmul_tiles(target)
    for dim, tiles, tile in zip("MNK", (tiles_in_block_m, tiles_in_block_n, tiles_in_block_k), (tm, tn, tk)):
        if int(tiles) > size // tile:
            # the kernel would quietly shrink the block to the matrix (kernels.matmul.tiles_per_block): say so
            # rather than grade a block that cannot exist
            return CheckResult(False, title, f"a {dim} block of {int(tiles)} tiles is larger than the matrix: "
                                             f"{dim} = {size} holds {size // tile} tiles of {tile}",
                               (f"tiles_in_block_{dim.lower()} can be at most {size // tile} at this size (the kernel "
                                "would clamp it there, so the answer would not be the block you chose)",))
    uneven = _uneven_blocks(size, (tiles_in_block_m, tiles_in_block_n, tiles_in_block_k), target)
    if uneven:
        dim, tiles, tile, block = uneven[0]
        return CheckResult(False, title, f"the kernel does not run: {dim} = {size} is not a multiple of the {dim} "
                                         f"block, {tiles} x {tile} = {block} ({size} / {block} = {size / block:.2f})",
                           ("M, N, K must be divisible by tiles_in_block x tile size; use powers of two ("
                            + ", ".join(f"tiles_in_block_{d.lower()} = {t} gives {d} blocks of {b}"
                                        for d, t, _, b in uneven) + ")",))
    r = evaluate_blocks(size, tiles_in_block_m, tiles_in_block_n, tiles_in_block_k, target)
    if not r.ok:
        parts = r.budget.parts()
        big = max(parts, key=parts.get)
        if r.budget.total > r.budget.capacity or "sbuf" in r.error.lower():
            hint = (f"SBUF needs {r.budget.total / 1024:.0f} KiB per partition, {r.budget.capacity / 1024:.0f} "
                    f"KiB are usable; the biggest part is the {big} ({parts[big] / 1024:.0f} KiB): shrink it")
        else:
            hint = "read the simulator's error above; the panel shows the same choice with its timeline"
        return CheckResult(False, title, "the kernel does not run: " + r.error.splitlines()[0], (hint,))
    p = r.profile
    if p.pct_of_tensor_peak >= goal_pct:
        return CheckResult(True, title, f"{p.pct_of_tensor_peak:.1f}% of peak in {p.latency_us:.0f} us")
    hints = []
    steps = (size // (int(tiles_in_block_m) * tm)) * (size // (int(tiles_in_block_n) * tn)) * \
        (size // (int(tiles_in_block_k) * tk))
    at_max = int(tiles_in_block_m) * tm == size and int(tiles_in_block_n) * tn == size
    if p.bottleneck == "dma" and steps <= 2:
        # so few steps that the loads have nothing to overlap with
        hints.append(f"the blocks make only {steps} step(s) (output blocks x K steps), so the loads of a step have "
                     "little or no other step's matmuls to overlap with and the Tensor Engine waits for them; "
                     "smaller blocks make more steps: one step's loads then run while another step's matmuls do")
    elif p.bottleneck == "dma" and at_max:
        # M and N blocks already cover the matrix: every tile is loaded once, more reuse is impossible
        hints.append("the M and N blocks already cover the whole matrix, so every tile is loaded once; what is left "
                     "is the number of transfers: a bigger K block makes fewer, larger ones")
    elif p.bottleneck == "dma":
        hints.append(f"still DMA-bound ({p.hbm_bytes / 2**20:.0f} MiB of HBM traffic in {p.dma_transfers} transfers, "
                     f"each paying a fixed cost of {_target(target).core.dma_fixed_cost_ns / 1e3:.1f} us): bigger M and "
                     "N blocks mean each loaded tile feeds "
                     "more matmuls, a bigger K block fewer, larger transfers")
    if r.budget.total > 0.6 * r.budget.capacity:
        hints.append(f"the blocks use {r.budget.total / 1024:.0f} of {r.budget.capacity / 1024:.0f} KiB in one K step, "
                     "so the next output block's accumulator and operands cannot be allocated while this one "
                     "is still in use: the Tensor Engine waits between blocks (see the gap in the timeline); "
                     "a smaller M or K block frees room for double buffering")
    if p.bottleneck == "vector":
        hints.append(f"the Vector Engine limits: every K step adds each 128 x 512 PSUM result into the SBUF "
                     f"accumulator (one tensor_tensor add per output tile and K step, {size // (int(tiles_in_block_k) * tk)} "
                     "K steps here); a bigger K block accumulates more of K in PSUM and makes fewer adds")
    if not hints:
        hints.append(f"bottleneck {p.bottleneck}: compare the timelines of a few choices in the panel")
    return CheckResult(False, title, f"{p.pct_of_tensor_peak:.1f}% of peak ({p.latency_us:.0f} us), "
                                     f"goal {goal_pct:.0f}%", tuple(hints))


# ---------------------------------------------------------------- notebook 06 checker

def _reductions(profile: Any) -> int:
    """Number of Vector Engine reduction instructions (``tensor_reduce``) in a profiled kernel."""
    return sum(1 for ins in profile.trace.instructions if ins.opcode == "tensor_reduce")


FUSION_CHECK_SHAPE = (256, 512)
FUSION_PROFILE_SHAPE = (2048, 1024)


FUSION_LARGE_SCALE = 30.0
"""Scale of the checker's second, large-logit input (|x| up to ~150: exp(x) overflows fp32 above ~88.7)."""


def _run_softmax(kern: Any, x: np.ndarray, title: str) -> tuple[np.ndarray | None, CheckResult | None]:
    """Simulate ``kern(x)``; (output as float64 or None, None) or (None, the failed CheckResult)."""
    import trnsim.nki as nki
    from trnsim.models.tiling import format_kernel_error

    try:
        with np.errstate(all="ignore"):   # an overflowing kernel is reported below, not as a numpy warning
            got = nki.simulate(kern)(x)
    except NotImplementedError:   # the student version's blank kernel body
        return None, CheckResult(False, title, "not answered yet",
                                 ("write the body of softmax_fused between the markers (replace the "
                                  "raise NotImplementedError()) and run the cell again",))
    except nki.KernelError as err:
        return None, CheckResult(False, title, "the simulator rejected the kernel",
                                 (format_kernel_error(err).replace("\n", "\n   "),))
    except Exception as err:  # a learner's kernel can fail in any way; report it, do not crash the notebook
        return None, CheckResult(False, title, f"the kernel raised {type(err).__name__}: {err}",
                                 ("run softmax_fused on a small input yourself to see where it fails",))
    return (np.asarray(got, dtype=np.float64) if got is not None else None), None


def check_fused_softmax(kernel: Callable | None, seed: int = 0) -> CheckResult:
    """Notebook 06: a one-pass softmax kernel - right numbers, half the HBM traffic of
    :data:`softmax_two_pass`, and no separate row-sum reduction.

    Correctness on a seeded fp32 [256, 512] input (standard normal x 4) against numpy, then on a second
    one with large logits (x :data:`FUSION_LARGE_SCALE`), where a kernel that skips the row max overflows;
    traffic and instruction mix from a timing-only profile on [2048, 1024] fp32.
    """
    import trnsim.nki as nki
    import trnsim.nki.typing as nt
    from trnsim.kernels import reference
    from trnsim.perf import profile

    title = "fused softmax"
    if kernel is None or kernel is Ellipsis:
        return not_answered(title, "define softmax_fused(x) with @nki.jit and pass the function to the checker")
    if not callable(kernel):
        return CheckResult(False, title, f"expected a kernel function, got {type(kernel).__name__}",
                           ("pass the function itself, check_fused_softmax(softmax_fused), without calling it",))
    kern = kernel if isinstance(kernel, nki.Kernel) else nki.jit(kernel)
    x = np.random.default_rng(seed).standard_normal(FUSION_CHECK_SHAPE).astype(np.float32) * 4
    got, failed = _run_softmax(kern, x, title)
    if failed is not None:
        return failed
    want = reference.softmax(x)
    if got is None or got.shape != want.shape:
        return CheckResult(False, title, f"expected an output of shape {want.shape}, got "
                                         f"{None if got is None else got.shape}",
                           ("allocate out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm), copy each result "
                            "tile into it with nisa.dma_copy(dst=out[...], src=...), and return it",))
    if not np.allclose(got, want, rtol=1e-3, atol=1e-6):
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        if np.allclose(got, e, rtol=1e-3, atol=1e-6) or np.allclose(got, np.exp(x), rtol=1e-3, atol=1e-6):
            hints = ["the rows do not sum to 1: multiply exp(x - max) by the reciprocal of its row sum"]
        elif np.allclose(got, e * e.sum(axis=1, keepdims=True), rtol=1e-3, atol=1e-6):
            hints = ["you multiplied by the row sum: multiply by its reciprocal (nisa.reciprocal(dst=inv, data=row_sum))"]
        else:
            hints = ["compare with numpy on one tile: e = exp(x - rowmax), out = e / rowsum(e); "
                     "every tile must load and store its own 128 rows"]
        err = float(np.abs(got - want).max())
        return CheckResult(False, title, f"wrong values (max |kernel - numpy| = {err:.2e})", tuple(hints))
    # Large logits: exp(x) without the row max (or with bias=+max) is right for the small inputs above,
    # but overflows fp32 (exp(x) = inf for x > 88.7) once the logits are large, as real attention scores can be.
    big = np.random.default_rng(seed + 1).standard_normal(FUSION_CHECK_SHAPE).astype(np.float32) * FUSION_LARGE_SCALE
    got, failed = _run_softmax(kern, big, title)
    if failed is not None:
        return failed
    want = reference.softmax(big)
    if got is None or got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-6):
        bad = 0 if got is None or got.shape != want.shape else int((~np.isfinite(got)).sum())
        what = f"{bad:,} of {want.size:,} outputs are inf or NaN" if bad else "wrong values"
        return CheckResult(False, title, f"right for inputs x 4, but not for large logits (inputs x "
                                         f"{FUSION_LARGE_SCALE:g}): {what}",
                           ("subtract each row's max before the exp (exp overflows to inf for large logits): "
                            "nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True), then "
                            "nisa.activation(..., data=t, bias=neg_max, ...)",))
    spec = nt.tensor[list(FUSION_PROFILE_SHAPE), "float32"]
    try:
        mine = profile(kern, spec, numerics=False, target="trn1")
    except Exception as err:  # noqa: BLE001 - shown to the learner
        return CheckResult(False, title, f"correct on {FUSION_CHECK_SHAPE}, but profiling on {FUSION_PROFILE_SHAPE} "
                                         f"failed: {err}", ("the kernel must work for any rows multiple of 128",))
    base = profile(softmax_two_pass, spec, numerics=False, target="trn1")
    one_pass = rowwise_traffic(*FUSION_PROFILE_SHAPE, 4, 1)
    problems = []
    two_passes = mine.hbm_bytes > 1.05 * one_pass
    if two_passes:
        problems.append(f"your kernel moves {mine.hbm_bytes / 2**20:.0f} MiB between HBM and SBUF, the two-pass "
                        f"baseline {base.hbm_bytes / 2**20:.0f} MiB, one pass needs {one_pass / 2**20:.0f} MiB "
                        "(read x once, write the output once): keep exp(x - max) in SBUF instead of storing it "
                        "to HBM and loading it back")
    if _reductions(mine) > _reductions(reference_profile_fused()):
        problems.append("the row sum is still a separate Vector Engine reduction (nisa.tensor_reduce or nl.sum): "
                        "let the exp activation produce it, nisa.activation(dst=e, op=nl.exp, data=t, "
                        "bias=neg_max, reduce_op=nl.add, reduce_res=row_sum, "
                        "reduce_cmd=nisa.reduce_cmd.reset_reduce)")
    if problems:
        # one pass over HBM with a separate reduction is fused as far as traffic goes: name what is missing
        what = "right numbers, but not fused yet" if two_passes else \
            "right numbers in one pass over HBM, but the row sum must come from the exp activation itself"
        return CheckResult(False, title, what, tuple(problems))
    return CheckResult(True, title, f"right numbers; {base.hbm_bytes / mine.hbm_bytes:.1f}x less HBM traffic and "
                                    f"{base.latency_us / mine.latency_us:.1f}x faster than two passes "
                                    f"({mine.latency_us:.0f} us vs {base.latency_us:.0f} us on {FUSION_PROFILE_SHAPE})")


@functools.lru_cache(maxsize=1)
def reference_profile_fused():
    """Timing-only profile of ``trnsim.kernels.softmax`` on :data:`FUSION_PROFILE_SHAPE` (the fused reference)."""
    import trnsim.nki.typing as nt
    from trnsim.kernels import softmax
    from trnsim.perf import profile

    return profile(softmax, nt.tensor[list(FUSION_PROFILE_SHAPE), "float32"], numerics=False, target="trn1")


__all__ = [
    "check_traffic", "check_block_choice", "check_fused_softmax", "reference_profile_fused",
]
