"""``python -m trnsim doctor``: check a learner's environment and say exactly what to fix.

Builds on :func:`trnsim.course.course_map.environment_report` (Python, the four runtime packages,
the hardware catalog, the widgets front-end package) and adds what a workshop needs:

* every data file in ``data/`` parses and names its sources;
* the kernel side (``ipykernel``) and the JupyterLab widgets extension are installed
  where JupyterLab looks for them (``@jupyter-widgets/jupyterlab-manager``);
* ipywidgets and its JupyterLab front-end are a matching pair (ipywidgets 8 needs
  jupyterlab_widgets 3);
* installed versions match the pinned stack in ``binder/requirements.txt`` (when run
  from a checkout), since the notebooks' stored outputs were made with those pins;
* enough memory: the course is written to stay within :data:`MEMORY_FLOOR_GIB`
  (Binder's guaranteed 1 GiB), so a machine or container with less available
  memory is flagged.

Every failed item carries the command that fixes it.
"""
from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import sys
from pathlib import Path

from trnsim.course.course_map import EnvItem, environment_report

MEMORY_FLOOR_GIB = 1.0
"""Binder guarantees at least 1 GiB per user (mybinder user guide, user-guidelines.md);
every course notebook is measured to stay below it (tests/measure_notebooks.py)."""

WIDGETS_LABEXTENSION = "@jupyter-widgets/jupyterlab-manager"
GIB = 2**30


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def repo_root() -> Path | None:
    """The checkout this trnsim is imported from, or None for an installed wheel."""
    here = Path(__file__).resolve().parents[2]        # trnsim/course/<this>.py -> the checkout
    return here if (here / "pyproject.toml").is_file() and (here / "notebooks").is_dir() else None


def check_data_files() -> list[EnvItem]:
    """Each data/*.json parses and has a ``sources`` block."""
    try:
        from trnsim.catalog.datafiles import data_dir

        folder = data_dir()
    except Exception as exc:  # a diagnostic reports, never crashes
        return [EnvItem("data files", False, str(exc), "reinstall trnsim: pip install -e . (from the repository root)")]
    files = sorted(folder.glob("*.json"))
    if not files:
        return [EnvItem("data files", False, f"no *.json in {folder}", "reinstall trnsim: pip install -e .")]
    bad = []
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(doc, dict) or "sources" not in doc:
                bad.append(f"{path.name} (no 'sources' block)")
        except (OSError, json.JSONDecodeError) as exc:
            bad.append(f"{path.name} ({exc})")
    if bad:
        return [EnvItem("data files", False, "unreadable: " + ", ".join(bad),
                        "restore data/ from the repository (git checkout -- data/) and reinstall: pip install -e .")]
    return [EnvItem("data files", True, f"{len(files)} files in {folder}")]


def check_kernel_and_extension() -> list[EnvItem]:
    """ipykernel importable; the widgets labextension present on JupyterLab's search path."""
    items = []
    kernel = _version("ipykernel")
    items.append(EnvItem("Jupyter kernel (ipykernel)", kernel is not None, kernel or "missing",
                         "pip install ipykernel"))
    try:
        from jupyter_core.paths import jupyter_path

        paths = [Path(p) / WIDGETS_LABEXTENSION for p in jupyter_path("labextensions")]
    except ImportError:
        paths = [Path(sys.prefix) / "share" / "jupyter" / "labextensions" / WIDGETS_LABEXTENSION]
    found = next((p for p in paths if (p / "package.json").is_file()), None)
    lab = _version("jupyterlab")
    if lab is None:
        # the extension's files alone prove nothing: without JupyterLab there is no front-end to load them
        where = f"{WIDGETS_LABEXTENSION} files present, but " if found is not None else ""
        items.append(EnvItem("JupyterLab widgets extension", False, f"{where}JupyterLab is not installed",
                             "pip install 'jupyterlab>=4.2' 'jupyterlab_widgets>=3,<4' (or open the course on "
                             "Binder or JupyterLite), then start it with: jupyter lab"))
        return items
    if found is None:
        items.append(EnvItem("JupyterLab widgets extension", False, f"{WIDGETS_LABEXTENSION} not found",
                             "pip install 'jupyterlab_widgets>=3,<4', then restart JupyterLab "
                             "(without it every panel shows 'Error displaying widget')"))
    else:
        version = json.loads((found / "package.json").read_text(encoding="utf-8")).get("version", "?")
        items.append(EnvItem("JupyterLab widgets extension", True,
                             f"{WIDGETS_LABEXTENSION} {version} (JupyterLab {lab})"))
    return items


def check_widget_pair() -> list[EnvItem]:
    """ipywidgets 8 talks only to jupyterlab_widgets 3 (and widgetsnbextension 4)."""
    ipyw, labw = _version("ipywidgets"), _version("jupyterlab_widgets")
    if ipyw is None or labw is None:
        return []  # already reported as missing by environment_report
    ok = ipyw.split(".")[0] == "8" and labw.split(".")[0] == "3"
    return [EnvItem("ipywidgets / front-end pair", ok, f"ipywidgets {ipyw}, jupyterlab_widgets {labw}",
                    "pip install 'ipywidgets>=8.1,<9' 'jupyterlab_widgets>=3,<4', then restart JupyterLab")]


def pinned_versions(requirements: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file, keys normalised (PEP 503)."""
    pins = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([^\s;#]+)", line)
        if m:
            pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return pins


def check_pins(requirements: Path | None = None,
               names: tuple[str, ...] = ("numpy", "matplotlib", "ipywidgets", "ml_dtypes", "jupyterlab",
                                         "jupyterlab_widgets", "ipykernel")) -> list[EnvItem]:
    """Installed versions of the packages that shape the notebooks' outputs vs the pinned stack."""
    if requirements is None:
        root = repo_root()
        requirements = root / "binder" / "requirements.txt" if root else None
    if requirements is None or not requirements.is_file():
        return []  # an installed wheel has no pin file; nothing to compare against
    pins = pinned_versions(requirements)
    drift = []
    for name in names:
        key = re.sub(r"[-_.]+", "-", name).lower()
        have, want = _version(name), pins.get(key)
        if want and have and have != want:
            drift.append((name, have, want))
    if not drift:
        return [EnvItem("versions match the pins", True, f"{requirements.parent.name}/{requirements.name}")]
    detail = ", ".join(f"{n} {h} (pinned {w})" for n, h, w in drift)
    fix = f"pip install -r {requirements} -e . (stored notebook outputs were made with the pinned versions)"
    return [EnvItem("versions match the pins", False, detail, fix)]


def available_memory_bytes() -> tuple[int | None, str]:
    """Memory this process may still use: the smaller of MemAvailable and the cgroup limit left."""
    candidates: list[tuple[int, str]] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                candidates.append((int(line.split()[1]) * 1024, "available system memory"))
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            raw = Path(limit_file).read_text().strip()
            if raw != "max" and int(raw) < 2**60:
                used = int(Path(usage_file).read_text().strip())
                candidates.append((int(raw) - used, "left under the container's memory limit"))
            break
        except (OSError, ValueError):
            continue
    if not candidates and hasattr(os, "sysconf"):
        try:
            candidates.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free physical memory"))
        except (ValueError, OSError):
            pass
    if not candidates:
        return None, "unknown"
    return min(candidates)


def check_memory(floor_gib: float = MEMORY_FLOOR_GIB) -> list[EnvItem]:
    avail, what = available_memory_bytes()
    if avail is None:
        return [EnvItem("memory", True, "could not be measured on this system (nothing to fix)")]
    ok = avail >= floor_gib * GIB
    return [EnvItem(f"memory >= {floor_gib:g} GiB free", ok, f"{avail / GIB:.1f} GiB {what}",
                    f"close other notebooks or programs (Kernel > Shut Down All Kernels) until {floor_gib:g} GiB "
                    "is free; each course notebook needs up to that much")]


def doctor_report() -> list[EnvItem]:
    """Everything :func:`trnsim.course.course_map.environment_report` checks, plus the workshop checks."""
    items = list(environment_report())
    for extra in (check_data_files, check_kernel_and_extension, check_widget_pair, check_pins, check_memory):
        try:
            items += extra()
        except Exception as exc:  # one broken check must not hide the others
            items.append(EnvItem(extra.__name__, False, f"the check itself failed: {exc}",
                                 "report this to the course maintainers"))
    return items


def format_doctor_report(items: list[EnvItem] | None = None) -> str:
    items = doctor_report() if items is None else items
    bad = [i for i in items if not i.ok]
    lines = [str(i) for i in items]
    if bad:
        lines.append(f"{len(bad)} item(s) to fix: run the command after each '->' and then run "
                     "`python -m trnsim doctor` again.")
    else:
        lines.append("All set: every check passed.")
    return "\n".join(lines)
