"""Measure every course notebook: wall time to run all cells, and the kernel's peak memory.

Usage (from the repository root)::

    python tests/measure_notebooks.py [NOTEBOOK ...] [--limit-mib 1024] [--json out.json]

Each notebook runs top to bottom in its own fresh kernel (nbclient, the same kernel
JupyterLab starts), in its own folder, one at a time. Peak memory is the kernel
process's high-water mark of resident memory (``VmHWM`` in ``/proc/<pid>/status``,
Linux), read after every cell (it only grows); it includes Python, numpy,
matplotlib and everything the notebook created. Times are wall-clock seconds on this
machine and include the kernel's start-up.

Prints a Markdown table and exits with status 1 when a notebook fails or its peak is
above the limit (default 1024 MiB, Binder's guaranteed memory).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

REPO = Path(__file__).resolve().parent.parent
MIB = 2**20


@dataclass(frozen=True)
class Measurement:
    notebook: str
    seconds: float
    peak_mib: float | None
    code_cells: int
    error: str = ""


def peak_rss_bytes(pid: int) -> int | None:
    """High-water mark of resident memory of process ``pid`` (Linux), or None where unavailable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def measure(path: Path, timeout_s: int = 600) -> Measurement:
    nb = nbformat.read(path, as_version=4)
    peak: list[int | None] = [None]

    def after_cell(**_kwargs) -> None:
        """VmHWM only grows, so the reading after the last cell is the notebook's peak."""
        provisioner = getattr(client.km, "provisioner", None) if client.km else None
        pid = getattr(provisioner, "pid", None)
        reading = peak_rss_bytes(pid) if pid else None
        if reading is not None:
            peak[0] = max(peak[0] or 0, reading)

    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.on_cell_executed = after_cell
    error = ""
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as exc:
        error = str(exc).strip().splitlines()[-1][:200]
    except Exception as exc:  # a timeout or a dead kernel is a result to report, not a crash
        error = f"{type(exc).__name__}: {exc}"[:200]
    seconds = time.perf_counter() - start
    code = sum(1 for c in nb.cells if c.cell_type == "code")
    return Measurement(path.name, seconds, peak[0] / MIB if peak[0] else None, code, error)


def table(rows: list[Measurement], limit_mib: float) -> str:
    lines = ["| notebook | code cells | run time (s) | peak kernel memory (MiB) | within limit |",
             "|---|---:|---:|---:|---|"]
    for r in rows:
        peak = f"{r.peak_mib:,.0f}" if r.peak_mib is not None else "n/a"
        ok = "error: " + r.error if r.error else ("yes" if r.peak_mib is not None and r.peak_mib <= limit_mib
                                                  else "NO" if r.peak_mib is not None else "unknown")
        lines.append(f"| {r.notebook} | {r.code_cells} | {r.seconds:.1f} | {peak} | {ok} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--limit-mib", type=float, default=1024.0)
    parser.add_argument("--json", type=Path, default=None, help="also write the measurements here")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((REPO / "notebooks").glob("*.ipynb"))
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 2
    rows = []
    for path in paths:
        rows.append(measure(path.resolve()))
        print(f"measured {path.name}: {rows[-1].seconds:.1f} s", file=sys.stderr, flush=True)
    print(table(rows, args.limit_mib))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    bad = [r for r in rows if r.error or r.peak_mib is None or r.peak_mib > args.limit_mib]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
