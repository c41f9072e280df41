"""The course itself: its notebook sequence and a learner's environment check."""
from __future__ import annotations

import importlib
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

NOTEBOOKS: tuple[tuple[str, str, str], ...] = (
    ("00", "start_here", "Start here: tour, environment check, widgets and checkers"),
    ("01", "one_matmul", "One matmul: FLOPs, bytes, arithmetic intensity, roofline, a systolic array"),
    ("02", "inside_a_neuroncore", "Inside a NeuronCore: Tensor, Vector, Scalar, GpSimd engines"),
    ("03", "memory_hierarchy", "Memory hierarchy: HBM, SBUF partitions, PSUM banks, DMA cost, tiling"),
    ("04", "first_kernel", "Your first kernel in NKI 0.6: load/compute/store, tile rules, tile loops, ragged tiles"),
    ("04b", "kernel_puzzles", "Kernel puzzles: twelve NKI 0.6 kernels checked for numerics and a timing budget"),
    ("05", "matmul_kernel_journey", "The matmul kernel journey: four optimisation steps with profiles"),
    ("06", "fused_kernels", "Fused kernels: softmax, norms, attention and flash attention"),
    ("07", "numerics", "Numerics: fp32/bf16/fp8, PSUM accumulation, stochastic rounding"),
    ("08", "chips_and_instances", "Chips and instances: Inf1 to Trn3, price and performance"),
    ("09", "collectives", "Collectives: ring, recursive doubling, hierarchical all-reduce"),
    ("10", "data_parallel_tinygpt", "Train a tiny GPT data- and tensor-parallel over simulated cores"),
    ("11", "llm_training_at_scale", "LLM training at scale: parallelism planner, memory, MFU, cost"),
    ("12", "inference_on_inferentia", "Inference on Inferentia: prefill, decode, KV cache, batching"),
    ("13", "sovereign_deployment", "Sovereign deployment in ap-southeast-5 (Malaysia)"),
)

REQUIRED = ("numpy", "matplotlib", "ipywidgets", "ml_dtypes")


def notebook_filename(number: str, slug: str) -> str:
    return f"{number}_{slug}.ipynb"


def course_map_markdown(notebooks_dir: str | Path = ".") -> str:
    """A Markdown table of the course with links; notebooks not yet written are marked 'planned'."""
    root = Path(notebooks_dir)
    lines = ["| # | notebook | status |", "|---|---|---|"]
    for number, slug, title in NOTEBOOKS:
        name = notebook_filename(number, slug)
        present = (root / name).is_file()
        link = f"[{title}]({name})" if present else title
        lines.append(f"| {number} | {link} | {'ready' if present else 'planned'} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class EnvItem:
    what: str
    ok: bool
    detail: str
    fix: str = ""

    def __str__(self) -> str:
        mark = "ok  " if self.ok else "FIX "
        return f"{mark} {self.what:<28} {self.detail}" + ("" if self.ok else f"\n      -> {self.fix}")


def environment_report() -> list[EnvItem]:
    """Check what the course needs: Python, packages, the data catalog, the widget front-end package."""
    items = [
        EnvItem("Python >= 3.10", sys.version_info >= (3, 10), platform.python_version().rsplit(".", 1)[0],
                "install Python 3.10 or newer"),
    ]
    for name in REQUIRED:
        try:
            mod = importlib.import_module(name)
            items.append(EnvItem(name, True, getattr(mod, "__version__", "installed")))
        except ImportError:
            items.append(EnvItem(name, False, "missing", f"pip install {name.replace('_', '-')}"))
    try:
        from trnsim.catalog import chips, instances

        items.append(EnvItem("hardware catalog (data/)", True, f"{len(chips())} chips, {len(instances())} instances"))
    except Exception as exc:  # report, don't crash: this is a diagnostic
        items.append(EnvItem("hardware catalog (data/)", False, str(exc), "reinstall trnsim: pip install -e ."))
    try:
        import jupyterlab_widgets  # the front-end half of ipywidgets for JupyterLab

        items.append(EnvItem("widgets front-end", True, f"jupyterlab_widgets {jupyterlab_widgets.__version__}"))
    except ImportError:
        items.append(EnvItem("widgets front-end", False, "jupyterlab_widgets missing",
                             "pip install jupyterlab_widgets, then restart JupyterLab"))
    return items


def format_environment_report(items: list[EnvItem] | None = None) -> str:
    items = environment_report() if items is None else items
    verdict = "All set." if all(i.ok for i in items) else "Some items need fixing (see FIX lines)."
    return "\n".join(str(i) for i in items) + "\n" + verdict
