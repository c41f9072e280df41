"""Checkers for notebook 04 (your first kernel), in NKI 0.6.

:func:`check_relu_kernel` runs the learner's kernel on the trnsim.nki (NKI 0.6) simulator against
numpy on several shapes (one tile, several full tiles, a ragged last tile) and turns every way it can
go wrong into a specific hint: the simulator's own ``KernelError`` (partition rule, out-of-bound access
of an unclipped ragged tile, a full-size SBUF tile against a clipped slice, output never written), a
wrong output shape, rows nobody wrote (a loop that rounds down, a slice that ignores the loop index, an
off-by-one ``min()`` bound), and wrong values (no compute).

:func:`check_grid` checks a back-of-envelope answer: how many iterations a tile loop needs and how many
partitions the clipped last tile has.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from trnsim.course.check import CheckResult, combine, expect_equal, not_answered
from trnsim.models.tiling import format_kernel_error

TITLE = "ReLU kernel against numpy"
TILE_ROWS = 128
"""Rows per tile in the exercise: one full tile of partitions (nl.tile_size.pmax on every target)."""

CASES: tuple[tuple[int, int], ...] = ((128, 64), (384, 256), (300, 512))
"""Shapes the checker runs: one tile, three full tiles, and a ragged last tile (300 = 2 x 128 + 44)."""

_CLIP = "x[i * 128 : min((i + 1) * 128, x.shape[0]), :]"

_RULE_HINTS = {
    "err_num_partition_exceed_arch_limit":
        "a tile has at most 128 partitions (nl.tile_size.pmax): loop over the rows in tiles of 128, "
        "for i in range(math.ceil(x.shape[0] / 128)), and copy only the slice " + _CLIP,
    "err_tensor_access_out_of_bound":
        "the last tile hangs over the end of x (300 rows = 2 x 128 + 44): clip its slice at the end of the "
        "tensor with min(), " + _CLIP + ", on the load and on the store",
    "err_shape_mismatch":
        "the clipped last tile has fewer rows (n = hi - lo) than the [128, C] SBUF tile: use the same "
        "number of rows on both sides, tile[0:n, :] with x[lo:hi, :] (nl.load(x[lo:hi, :]) makes an "
        "[n, C] tile by itself)",
    "err_tensor_output_not_written_to":
        "the output is never written: finish each iteration with nisa.dma_copy(dst=out[lo:hi, :], "
        "src=...) or nl.store(out[lo:hi, :], value=...)",
    "err_unsupported_memory":
        "compute engines read SBUF tiles, not HBM tensors: copy the input into SBUF first (nisa.dma_copy "
        "or nl.load), compute on the tile, then copy the result back to HBM",
}


def relu_reference(x: np.ndarray) -> np.ndarray:
    """What the kernel must return: ``max(x, 0)`` elementwise (numpy)."""
    return np.maximum(x, 0.0)


def _as_kernel(kernel: Any):
    import trnsim.nki as nki

    if isinstance(kernel, nki.Kernel):
        return nki.jit(kernel.func, target=kernel.target)
    return nki.jit(kernel)


def run_case(kernel: Any, shape: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, Any]:
    """Run ``kernel(x)`` (one launch, no grid) on seeded data of ``shape``; returns (x, output)."""
    import trnsim.nki as nki

    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    out = nki.simulate(_as_kernel(kernel))(x)
    return x, out


def check_relu_kernel(kernel: Callable | None, seed: int = 0) -> CheckResult:
    """Check an NKI 0.6 kernel that computes ``max(x, 0)`` for ``x`` of shape ``[R, C]`` (C <= 512, any R).

    The checker runs it once, ``nki.simulate(kernel)(x)``: the kernel itself loops over the
    ``ceil(R / 128)`` row tiles. Passes when the output matches numpy on every shape in :data:`CASES`.
    """
    import trnsim.nki as nki

    if kernel is None or kernel is Ellipsis:
        return not_answered(TITLE, "define relu_kernel(x) with @nki.jit and pass it to the checker")
    if not callable(kernel):
        return CheckResult(False, TITLE, f"expected a kernel function, got {type(kernel).__name__}",
                           ("pass the function itself, check_relu_kernel(relu_kernel), without calling it",))
    for shape in CASES:
        tiles = math.ceil(shape[0] / TILE_ROWS)
        where = f"on x of shape {list(shape)} ({tiles} row tile{'s' if tiles != 1 else ''})"
        try:
            x, out = run_case(kernel, shape, seed)
        except NotImplementedError:   # the student version's blank kernel body
            return not_answered(TITLE, "write the body of relu_kernel in place of raise NotImplementedError()")
        except nki.KernelError as err:
            hint = _RULE_HINTS.get(err.rule, "read the rule and the fix the simulator suggests")
            if err.rule == "err_unsupported_memory" and "'psum'" in str(err):
                # the result tile is in PSUM, which a DMA cannot read: the input side is not the problem
                hint = ("a DMA cannot read PSUM: allocate the result tile in SBUF (buffer=nl.sbuf), or copy the "
                        "PSUM tile to an SBUF tile with nisa.tensor_copy before copying it to HBM")
            return CheckResult(False, TITLE, f"the simulator rejected the kernel {where}:\n"
                               + _indent(format_kernel_error(err)), (hint,))
        except Exception as err:  # a Python error inside the learner's code: show it, do not crash
            return CheckResult(False, TITLE, f"the kernel raised {type(err).__name__} {where}: {err}",
                               ("run it yourself with nki.simulate(relu_kernel)(x) to see the traceback",))
        result = _compare(x, out, shape, where)
        if not result.passed:
            return result
    shapes = ", ".join(str(list(s)) for s in CASES)
    return CheckResult(True, TITLE, f"matches numpy on {len(CASES)} shapes ({shapes}), ragged last tile included")


def _compare(x: np.ndarray, out: Any, shape: tuple[int, int], where: str) -> CheckResult:
    want = relu_reference(x)
    if out is None:
        return CheckResult(False, TITLE, f"the kernel returned nothing {where}",
                           ("allocate out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm) and "
                            "end the kernel with return out",))
    if isinstance(out, (tuple, list)):
        return CheckResult(False, TITLE, f"the kernel returned {len(out)} outputs {where}; expected one array",
                           ("return only the output tensor",))
    out = np.asarray(out)
    if out.shape != want.shape:
        return CheckResult(False, TITLE, f"output shape {list(out.shape)}, expected {list(want.shape)} {where}",
                           ("allocate the output with the input's shape: nl.ndarray(x.shape, ...)",))
    nan_rows = np.flatnonzero(np.isnan(out).any(axis=1))
    if nan_rows.size:
        what = f"rows {_ranges(nan_rows)} were" if nan_rows.size > 1 else f"row {int(nan_rows[0])} was"
        return CheckResult(False, TITLE, f"{what} never written {where}",
                           (_nan_hint(nan_rows, shape[0]),))
    if np.allclose(out, want, rtol=1e-6, atol=1e-6):
        return CheckResult(True, TITLE)
    if np.allclose(out, x):
        return CheckResult(False, TITLE, f"the output equals the input {where}",
                           ("the compute step is missing: apply nisa.activation(dst=..., op=nl.relu, data=tile) "
                            "or nl.maximum(tile, 0.0) before the copy back to HBM",))
    if np.allclose(out, np.abs(x)) or np.allclose(out, -want):
        return CheckResult(False, TITLE, f"negative inputs are not mapped to 0 {where}",
                           ("ReLU keeps positives and replaces negatives by 0: op=nl.relu, or nl.maximum(tile, 0.0)",))
    bad = ~np.isclose(out, want, rtol=1e-6, atol=1e-6)
    r, c = (int(v) for v in np.argwhere(bad)[0])
    return CheckResult(False, TITLE, f"{int(bad.sum())} of {bad.size} values differ {where}; first at "
                       f"[{r}, {c}]: got {out[r, c]:.4g}, expected {want[r, c]:.4g} (x = {x[r, c]:.4g})",
                       ("compare your tile computation with np.maximum(x, 0) on that element",))


def _nan_hint(nan_rows: np.ndarray, n_rows: int) -> str:
    contiguous_tail = nan_rows[-1] == n_rows - 1 and nan_rows.size == nan_rows[-1] - nan_rows[0] + 1
    if contiguous_tail and nan_rows[0] == TILE_ROWS and n_rows > 2 * TILE_ROWS:
        return ("only the first tile was written: every iteration copied rows 0..127. Make the slice move "
                "with the loop index, " + _CLIP)
    if contiguous_tail and nan_rows[0] % TILE_ROWS == 0:
        return (f"the loop stops before the last tile: {n_rows} // 128 rounds down. Loop "
                f"math.ceil(x.shape[0] / 128) times and clip the last tile with min(), " + _CLIP)
    if contiguous_tail:
        return (f"the last row(s) were left out: an off-by-one bound. Rows run 0 .. {n_rows - 1}, so the last "
                f"tile ends at min((i + 1) * 128, x.shape[0]) (not x.shape[0] - 1); a slice's end is exclusive")
    return "some tiles were not stored: iteration i must copy rows i*128 .. min((i+1)*128, R) - 1 back to out"


def _ranges(idx: np.ndarray) -> str:
    """'128..255, 300' style description of sorted integer indices."""
    parts, start, prev = [], int(idx[0]), int(idx[0])
    for v in (int(i) for i in idx[1:]):
        if v != prev + 1:
            parts.append(f"{start}..{prev}" if prev > start else f"{start}")
            start = v
        prev = v
    parts.append(f"{start}..{prev}" if prev > start else f"{start}")
    return ", ".join(parts)


def _indent(text: str) -> str:
    return "\n".join("   " + line for line in text.splitlines())


def check_grid(rows: int, tile_p: int, iterations: int | None, active_in_last_tile: int | None) -> CheckResult:
    """Back-of-envelope: iterations a tile loop needs over the rows, and partitions of the clipped last tile."""
    want_iterations = math.ceil(rows / tile_p)
    want_active = rows - (want_iterations - 1) * tile_p
    return combine("tile loop over a ragged tensor", [
        expect_equal("iterations of the row loop", iterations, want_iterations,
                     hint=f"ceil({rows} / {tile_p}): round up, or the rows after the last full tile get no tile"),
        # (neither hint states the other part's answer: a learner who misses both still has work to do)
        expect_equal("partitions in the clipped last tile", active_in_last_tile, want_active,
                     hint=f"the rows left after the full tiles: {rows} - (iterations - 1) x {tile_p}, with the "
                          "iteration count of the first part"),
    ])
