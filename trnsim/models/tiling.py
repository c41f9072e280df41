"""Tiling for notebook 04 (pure part; the figure is in :mod:`trnsim.course.viz.tiling`): which iteration of a
kernel's tile loops writes which part of the output.

Two layers, kept apart:

* pure data: :func:`plan_coverage` predicts, from the loop choice alone, which iteration writes each
  output element (numpy, no kernel run); :func:`simulate_coverage` runs a real NKI 0.6 kernel on
  ``trnsim.nki`` (two nested loops over ``[tile_p, tile_f]`` tiles, the last tile's slices optionally
  clipped with ``min()``) and reads the answer off the simulated output, so rule violations come back
  as the simulator's own ``KernelError``. Tests check that the two agree.
* plot: :func:`trnsim.course.viz.tiling.plot_coverage` draws a :class:`Coverage` onto an ``Axes``.

The kernel follows the NKI 0.6 tensor-addition tutorial (``nki/examples/tensor_addition``): iteration
``(i, j)`` of the loops handles rows ``i*tile_p ... i*tile_p + tile_p - 1`` and columns
``j*tile_f ... j*tile_f + tile_f - 1``. A ragged last tile is handled as the NKI migration guide
(section "Deprecation of masking") describes: the slice stops at the tensor's end,
``x[i*tile_p : min((i+1)*tile_p, rows), ...]``. NKI Beta 1 used ``mask=`` predicates instead; NKI 0.2
removed them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TilingChoice:
    """One kernel: output ``[rows, cols]``, tiles of ``[tile_p, tile_f]``, loop trip counts, clipping on or off.

    ``tile_p`` is the partition-dimension size of each tile (rows, at most ``pmax`` = 128 on every
    target), ``tile_f`` the free-dimension size (columns). ``loops`` is ``(iterations along rows,
    iterations along columns)`` of the two nested tile loops. ``clip``: the last tile's slices stop at
    the output's end (``min()``); without it every tile has the full ``[tile_p, tile_f]`` size.
    """

    rows: int
    cols: int
    tile_p: int = 128
    tile_f: int = 512
    loops: tuple[int, int] = (1, 1)
    clip: bool = True
    target: str = "trn1"

    def __post_init__(self) -> None:
        for name in ("rows", "cols", "tile_p", "tile_f"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"TilingChoice.{name} must be a positive integer, got {v!r}")
        if len(self.loops) != 2 or any(int(g) < 1 for g in self.loops):
            raise ValueError(f"TilingChoice.loops must be two positive trip counts (rows, cols), got {self.loops!r}")

    @property
    def tiles_needed(self) -> tuple[int, int]:
        """Trip counts that cover the output exactly once: ceil(rows / tile_p) x ceil(cols / tile_f)."""
        return math.ceil(self.rows / self.tile_p), math.ceil(self.cols / self.tile_f)

    @property
    def iterations(self) -> int:
        return int(self.loops[0]) * int(self.loops[1])


@dataclass(frozen=True)
class Coverage:
    """What a kernel's tile loops do to the output.

    owner: float array ``[rows, cols]``; element = linear id ``i * loops[1] + j`` of the iteration that
        wrote it, NaN where nothing was written (the simulator's sentinel for unwritten memory).
        None when the kernel failed with a rule error.
    error / rule: the KernelError text (without file paths) and its rule name, "" if none.
    """

    choice: TilingChoice
    owner: np.ndarray | None
    error: str = ""
    rule: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def unwritten(self) -> int:
        """Output elements no iteration wrote (0 if the kernel failed)."""
        return 0 if self.owner is None else int(np.isnan(self.owner).sum())

    @property
    def clipped_elements(self) -> int:
        """Elements of the full-size tiles that lie beyond the output: the clipped slices leave them out."""
        c = self.choice
        covered_rows = min(c.rows, int(c.loops[0]) * c.tile_p)
        covered_cols = min(c.cols, int(c.loops[1]) * c.tile_f)
        return c.iterations * c.tile_p * c.tile_f - covered_rows * covered_cols

    @property
    def idle_iterations(self) -> int:
        """Iterations whose whole tile lies beyond the output (their clipped slices are empty)."""
        c = self.choice
        busy_i = min(int(c.loops[0]), c.tiles_needed[0])
        busy_j = min(int(c.loops[1]), c.tiles_needed[1])
        return c.iterations - busy_i * busy_j


def plan_coverage(choice: TilingChoice) -> np.ndarray:
    """Predicted owner map (see :class:`Coverage`) from the loop choice alone; no rule checks."""
    c = choice
    owner = np.full((c.rows, c.cols), np.nan)
    for i in range(int(c.loops[0])):
        for j in range(int(c.loops[1])):
            owner[i * c.tile_p:(i + 1) * c.tile_p, j * c.tile_f:(j + 1) * c.tile_f] = i * int(c.loops[1]) + j
    return owner


def _owner_kernel(tile_p: int, tile_f: int, loops: tuple[int, int], clip: bool):
    """The kernel the picture is made from: each loop iteration adds its own id to a zero tile."""
    import trnsim.nki.language as nl

    n_i, n_j = int(loops[0]), int(loops[1])

    def tile_owner(x):
        rows, cols = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in range(n_i):                       # NKI 0.6: a plain Python loop
            for j in range(n_j):
                r0, c0 = i * tile_p, j * tile_f
                r1 = min(r0 + tile_p, rows) if clip else r0 + tile_p   # clip: the last tile stops at the end
                c1 = min(c0 + tile_f, cols) if clip else c0 + tile_f
                if r1 <= r0 or c1 <= c0:
                    continue                                          # the whole tile lies beyond the output
                tile = nl.load(x[r0:r1, c0:c1])
                nl.store(out[r0:r1, c0:c1], value=nl.add(tile, float(i * n_j + j)))
        return out

    return tile_owner


def format_kernel_error(err: Exception) -> str:
    """A KernelError as the learner should read it: rule, message, fix, and the kernel line.

    The file path is left out on purpose (it differs between machines).
    """
    rule = getattr(err, "rule", "")
    detail = getattr(err, "detail", str(err))
    fix = getattr(err, "fix", "")
    source = getattr(err, "source", None)
    lines = [f"KernelError [{rule}] {detail}" if rule else f"{type(err).__name__}: {detail}"]
    if fix:
        lines.append(f"  fix: {fix}")
    if source:
        lines.append(f"  in kernel line: {source}")
    return "\n".join(lines)


def simulate_coverage(choice: TilingChoice) -> Coverage:
    """Run the owner kernel on trnsim.nki (NKI 0.6) for ``choice`` and report what it wrote (or its KernelError)."""
    import trnsim.nki as nki

    c = choice
    kernel = nki.jit(_owner_kernel(c.tile_p, c.tile_f, c.loops, c.clip), target=c.target)
    x = np.zeros((c.rows, c.cols), dtype=np.float32)
    try:
        out = nki.simulate(kernel)(x)
    except nki.KernelError as err:
        return Coverage(c, None, format_kernel_error(err), err.rule)
    return Coverage(c, np.asarray(out, dtype=np.float64), notes=_notes(c, np.asarray(out)))


def _notes(c: TilingChoice, owner: np.ndarray) -> tuple[str, ...]:
    need_i, need_j = c.tiles_needed
    notes = []
    unwritten = int(np.isnan(owner).sum())
    if unwritten:
        notes.append(f"{unwritten:,} output elements were never written (NaN): the loops run {c.loops[0]} x "
                     f"{c.loops[1]} times, fewer than the {need_i} x {need_j} tiles the output needs")
    if int(c.loops[0]) > need_i or int(c.loops[1]) > need_j:
        notes.append(f"the loops run more often than there are tiles: iterations beyond {need_i} x {need_j} "
                     "start past the end of the output and do no work")
    # a ragged edge is clipped only if the loops reach its tile (a loop that stops short leaves those rows or
    # columns unwritten, said above, and clips nothing there)
    rag_p, rag_f = c.rows % c.tile_p, c.cols % c.tile_f
    if rag_p and int(c.loops[0]) >= need_i:
        which = "the last row of tiles" if int(c.loops[0]) == need_i else \
            f"the last row of tiles that reaches the output (rows {(need_i - 1) * c.tile_p}-{c.rows - 1})"
        notes.append(f"ragged rows: {which} is clipped to {rag_p} of {c.tile_p} partitions")
    if rag_f and int(c.loops[1]) >= need_j:
        which = "the last column of tiles" if int(c.loops[1]) == need_j else \
            f"the last column of tiles that reaches the output (columns {(need_j - 1) * c.tile_f}-{c.cols - 1})"
        notes.append(f"ragged columns: {which} is clipped to {rag_f} of {c.tile_f} elements")
    return tuple(notes)


def format_coverage(cov: Coverage) -> str:
    """A short text summary of a :class:`Coverage` (what the panel prints under the picture)."""
    c = cov.choice
    head = (f"output [{c.rows}, {c.cols}], tiles [{c.tile_p}, {c.tile_f}], loops {c.loops[0]} x {c.loops[1]} = "
            f"{c.iterations} iterations, last tile {'clipped with min()' if c.clip else 'not clipped'}; "
            f"the output needs {c.tiles_needed[0]} x {c.tiles_needed[1]} tiles")
    if not cov.ok:
        return head + "\nThe simulator rejects this kernel:\n" + cov.error
    lines = [head, f"written: {c.rows * c.cols - cov.unwritten:,} of {c.rows * c.cols:,} elements; "
                   f"clipped off the full-size tiles: {cov.clipped_elements:,} elements; "
                   f"idle iterations: {cov.idle_iterations}"]
    lines += [f"- {n}" for n in cov.notes]
    return "\n".join(lines)
