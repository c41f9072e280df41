"""SPMD tiling for notebook 04 (pure part; the figure is in :mod:`trnsim.viz.tiling`): which program instance writes which part of the output.

Two layers, kept apart:

* pure data: :func:`plan_coverage` predicts, from the launch choice alone, which program writes
  each output element (numpy, no kernel run); :func:`simulate_coverage` runs a real
  ``trnsim.nki`` kernel (one ``[tile_p, tile_f]`` tile per program, optional masks) and reads the
  answer off the simulated output, so rule violations come back as the simulator's own
  ``KernelError``. Tests check that the two agree.
* plot: :func:`trnsim.viz.tiling.plot_coverage` draws a :class:`Coverage` onto an ``Axes``.

The kernel follows the SPMD tensor-add tutorial (SDK-legacy
``general/nki/tutorials/spmd_tensor_addition.rst``): program ``(i, j)`` of the grid handles rows
``i*tile_p ... i*tile_p + tile_p - 1`` and columns ``j*tile_f ... j*tile_f + tile_f - 1``; the ragged
last tile is handled with ``mask=(index < size)`` (nki.md section 1.4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TilingChoice:
    """One launch: output ``[rows, cols]``, tiles of ``[tile_p, tile_f]``, an SPMD grid, masks on or off.

    ``tile_p`` is the partition-dimension size of each tile (rows, at most ``pmax`` = 128 on every
    target), ``tile_f`` the free-dimension size (columns). ``grid`` is ``(programs along rows,
    programs along columns)``.
    """

    rows: int
    cols: int
    tile_p: int = 128
    tile_f: int = 512
    grid: tuple[int, int] = (1, 1)
    masked: bool = True
    target: str = "trn1"

    def __post_init__(self) -> None:
        for name in ("rows", "cols", "tile_p", "tile_f"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"TilingChoice.{name} must be a positive integer, got {v!r}")
        if len(self.grid) != 2 or any(int(g) < 1 for g in self.grid):
            raise ValueError(f"TilingChoice.grid must be two positive integers (rows, cols), got {self.grid!r}")

    @property
    def tiles_needed(self) -> tuple[int, int]:
        """Grid that covers the output exactly once: ceil(rows / tile_p) x ceil(cols / tile_f)."""
        return math.ceil(self.rows / self.tile_p), math.ceil(self.cols / self.tile_f)

    @property
    def programs(self) -> int:
        return int(self.grid[0]) * int(self.grid[1])


@dataclass(frozen=True)
class Coverage:
    """What a launch does to the output.

    owner: float array ``[rows, cols]``; element = linear id ``i * grid[1] + j`` of the program that
        wrote it, NaN where nothing was written (the simulator's sentinel for unwritten memory).
        None when the launch failed with a rule error.
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
        """Output elements no program wrote (0 if the launch failed)."""
        return 0 if self.owner is None else int(np.isnan(self.owner).sum())

    @property
    def masked_lanes(self) -> int:
        """Tile elements that fall outside the output and are switched off by the mask."""
        c = self.choice
        covered_rows = min(c.rows, int(c.grid[0]) * c.tile_p)
        covered_cols = min(c.cols, int(c.grid[1]) * c.tile_f)
        return c.programs * c.tile_p * c.tile_f - covered_rows * covered_cols

    @property
    def idle_programs(self) -> int:
        """Programs whose whole tile lies outside the output (they do nothing)."""
        c = self.choice
        busy_i = min(int(c.grid[0]), c.tiles_needed[0])
        busy_j = min(int(c.grid[1]), c.tiles_needed[1])
        return c.programs - busy_i * busy_j


def plan_coverage(choice: TilingChoice) -> np.ndarray:
    """Predicted owner map (see :class:`Coverage`) from the launch choice alone; no rule checks."""
    c = choice
    owner = np.full((c.rows, c.cols), np.nan)
    for i in range(int(c.grid[0])):
        for j in range(int(c.grid[1])):
            owner[i * c.tile_p:(i + 1) * c.tile_p, j * c.tile_f:(j + 1) * c.tile_f] = i * int(c.grid[1]) + j
    return owner


def _owner_kernel(tile_p: int, tile_f: int, masked: bool):
    """The SPMD kernel the picture is made from: each program adds its own id to a zero tile."""
    import trnsim.neuronxcc.nki.language as nl

    def tile_owner(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        rows = i * tile_p + nl.arange(tile_p)[:, None]   # partition index of this program's tile
        cols = j * tile_f + nl.arange(tile_f)[None, :]   # free index
        my_id = float(i * nl.num_programs(1) + j)
        if masked:
            inside = (rows < x.shape[0]) & (cols < x.shape[1])
            tile = nl.load(x[rows, cols], mask=inside)
            nl.store(out[rows, cols], value=nl.add(tile, my_id), mask=inside)
        else:
            tile = nl.load(x[rows, cols])
            nl.store(out[rows, cols], value=nl.add(tile, my_id))
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
    """Run the owner kernel on trnsim.nki for ``choice`` and report what it wrote (or its KernelError)."""
    import trnsim.neuronxcc.nki as nki

    c = choice
    kernel = _owner_kernel(c.tile_p, c.tile_f, c.masked)
    kernel = nki.jit(kernel, target=c.target)[int(c.grid[0]), int(c.grid[1])]
    x = np.zeros((c.rows, c.cols), dtype=np.float32)
    try:
        out = nki.simulate_kernel(kernel, x)
    except nki.KernelError as err:
        return Coverage(c, None, format_kernel_error(err), err.rule)
    return Coverage(c, np.asarray(out, dtype=np.float64), notes=_notes(c, np.asarray(out)))


def _notes(c: TilingChoice, owner: np.ndarray) -> tuple[str, ...]:
    need_i, need_j = c.tiles_needed
    notes = []
    unwritten = int(np.isnan(owner).sum())
    if unwritten:
        notes.append(f"{unwritten:,} output elements were never written (NaN): the grid {c.grid[0]} x {c.grid[1]} "
                     f"is smaller than the {need_i} x {need_j} tiles the output needs")
    if int(c.grid[0]) > need_i or int(c.grid[1]) > need_j:
        notes.append(f"the grid has more programs than tiles: programs beyond {need_i} x {need_j} are masked off "
                     "completely and do no work")
    rag_p, rag_f = c.rows % c.tile_p, c.cols % c.tile_f
    if rag_p:
        notes.append(f"ragged rows: the last row of tiles has {rag_p} of {c.tile_p} partitions inside the output")
    if rag_f:
        notes.append(f"ragged columns: the last column of tiles has {rag_f} of {c.tile_f} elements inside the output")
    return tuple(notes)


def format_coverage(cov: Coverage) -> str:
    """A short text summary of a :class:`Coverage` (what the panel prints under the picture)."""
    c = cov.choice
    head = (f"output [{c.rows}, {c.cols}], tiles [{c.tile_p}, {c.tile_f}], grid {c.grid[0]} x {c.grid[1]} = "
            f"{c.programs} programs, masks {'on' if c.masked else 'off'}; "
            f"the output needs {c.tiles_needed[0]} x {c.tiles_needed[1]} tiles")
    if not cov.ok:
        return head + "\nThe simulator rejects this launch:\n" + cov.error
    lines = [head, f"written: {c.rows * c.cols - cov.unwritten:,} of {c.rows * c.cols:,} elements; "
                   f"masked-off lanes: {cov.masked_lanes:,}; idle programs: {cov.idle_programs}"]
    lines += [f"- {n}" for n in cov.notes]
    return "\n".join(lines)
