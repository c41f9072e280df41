"""``python -m trnsim lite``: the whole course as a static JupyterLite site.

The site runs entirely in the learner's browser (Pyodide, Python compiled to
WebAssembly) and can be served by any static web server. It is built with
``jupyterlite-core`` and ``jupyterlite-pyodide-kernel`` (install them with
``pip install jupyterlite-core==0.8.6 jupyterlite-pyodide-kernel==0.8.6``):

1. the trnsim wheel is built from the checkout (or taken from ``--wheel``) and
   shipped inside the site (``pypi/``), so ``piplite`` installs it locally;
2. every notebook is copied into the site with one extra first code cell, the
   *lite guard*, that installs trnsim and the matching ipywidgets only when
   running under Pyodide (``sys.platform == "emscripten"``), and gives up with a
   message naming what could not be downloaded after :data:`INSTALL_TIMEOUT_S`;
   a markdown note above it says what a kernel stuck on "Connecting" means.
   Copies are written with one string per multi-line field (:func:`write_joined`).
   The repository's notebooks are not touched, so nbval and CPython runs see no change;
3. the copies get the Pyodide kernelspec, and the site's browser storage is named
   after a hash of its contents, so learners who opened an older build of the
   site see the new notebooks instead of their cached copies.

What the browser still fetches from the network is listed in :data:`NETWORK_NOTE`.
"""
from __future__ import annotations

import copy
import hashlib
import importlib.metadata as md
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

GUARD_TAG = "trnsim-lite-setup"
LITE_KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
REQUIRED_BUILD_PACKAGES = ("jupyterlite-core", "jupyterlite-pyodide-kernel")
NETWORK_NOTE = (
    "The site needs the network for: the Pyodide runtime and its packages numpy, matplotlib and ml_dtypes "
    "(jsDelivr CDN), and ipywidgets with jupyterlab_widgets (PyPI). The trnsim wheel, the notebooks, "
    "the data files and the widgets front-end are served from the site itself."
)


class LiteBuildError(RuntimeError):
    """The JupyterLite site could not be built; the message says what to install or change."""


@dataclass(frozen=True)
class LiteSite:
    """A built site: its folder, the notebooks and wheel it serves, and its storage name."""

    output_dir: Path
    notebooks: tuple[str, ...]
    wheel: str
    storage_name: str
    extensions: tuple[str, ...] = field(default_factory=tuple)

    def url_for(self, notebook: str, base: str = "") -> str:
        """Path (relative to the site root, or under ``base``) that opens one notebook in JupyterLab."""
        return f"{base.rstrip('/') + '/' if base else ''}lab/index.html?path={notebook}"


INSTALL_TIMEOUT_S = 180
"""The guard gives up after this many seconds and says what could not be downloaded."""

OFFLINE_HELP = (
    "The browser could not download the course's Python packages within {timeout} s. It needs to reach "
    "cdn.jsdelivr.net (the Pyodide runtime and numpy, matplotlib, ml_dtypes) and pypi.org / "
    "files.pythonhosted.org (ipywidgets). Check the network, or ask your instructor to serve them from the "
    "site itself: README, 'JupyterLite', fully offline room (jupyter lite build --pyodide <pyodide tarball>, "
    "and the ipywidgets wheels in --piplite-wheels). Then reload the page and run this cell again."
)


def guard_source(packages: list[str], timeout_s: int = INSTALL_TIMEOUT_S) -> str:
    """The first code cell of every lite copy: a no-op outside Pyodide; under Pyodide it installs the
    packages and, if that takes longer than ``timeout_s``, stops and prints what is missing."""
    listed = ", ".join(f'"{p}"' for p in packages)
    help_text = OFFLINE_HELP.format(timeout=timeout_s)
    return (
        "# JupyterLite only: install the course's packages inside the browser.\n"
        "# In a normal Jupyter (CPython) this cell does nothing.\n"
        "import sys\n"
        'if sys.platform == "emscripten":\n'
        "    import asyncio\n"
        "    import piplite\n"
        "    try:\n"
        f"        await asyncio.wait_for(piplite.install([{listed}]), timeout={int(timeout_s)})\n"
        '        print("trnsim is installed: run the next cells.")\n'
        "    except asyncio.TimeoutError:\n"
        f"        print({help_text!r})"
    )


GUARD_NOTE = (
    "**JupyterLite:** run the next cell first; it installs trnsim in your browser (about a minute the first "
    "time). If the notebook's kernel indicator stays on *Connecting* or *Starting* for more than two minutes, "
    "the browser could not download the Python runtime (Pyodide) from cdn.jsdelivr.net: check the network, or "
    "ask your instructor to serve the runtime from the site (README, 'JupyterLite')."
)


def runtime_packages(wheel_version: str) -> list[str]:
    """What the guard installs: trnsim from the site, and the ipywidgets pair matching the built front-end."""
    pins = [f"trnsim=={wheel_version}"]
    for dist in ("ipywidgets", "jupyterlab_widgets"):
        try:
            pins.append(f"{dist}=={md.version(dist)}")
        except md.PackageNotFoundError:
            raise LiteBuildError(f"{dist} is not installed; the site's widgets front-end comes from it: "
                                 f"pip install {dist}") from None
    return pins


def has_guard(nb: nbformat.NotebookNode) -> bool:
    return any(c.cell_type == "code" and ("piplite" in c.source or GUARD_TAG in c.metadata.get("tags", []))
               for c in nb.cells)


def lite_copy(nb: nbformat.NotebookNode, packages: list[str]) -> nbformat.NotebookNode:
    """A copy of ``nb`` ready for JupyterLite: guard cell first (unless one exists), Pyodide kernelspec."""
    out = copy.deepcopy(nb)
    if not has_guard(out):
        cell = nbformat.v4.new_code_cell(guard_source(packages), metadata={"tags": [GUARD_TAG]})
        note = nbformat.v4.new_markdown_cell(GUARD_NOTE, metadata={"tags": [GUARD_TAG]})
        if out.nbformat_minor < 5:  # cell ids exist from nbformat 4.5 on
            cell.pop("id", None)
            note.pop("id", None)
        first_code = next((i for i, c in enumerate(out.cells) if c.cell_type == "code"), len(out.cells))
        out.cells[first_code:first_code] = [note, cell]
    out.metadata["kernelspec"] = dict(LITE_KERNELSPEC)
    out.metadata.pop("widgets", None)
    return out


def write_joined(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write ``nb`` with every multi-line text as ONE string.

    ``nbformat.write`` stores multi-line sources and outputs as lists of lines, which the notebook
    format allows; the site's viewer showed such stored outputs joined with commas (every line after
    the first started with ","). One string per field reads the same everywhere.
    """
    nbformat.validate(nb)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def repo_root() -> Path | None:
    here = Path(__file__).resolve().parents[2]        # trnsim/course/<this>.py -> the checkout
    return here if (here / "pyproject.toml").is_file() else None


def build_wheel(dest: Path) -> Path:
    """Build trnsim's wheel from the checkout without network access (no build isolation)."""
    root = repo_root()
    if root is None:
        raise LiteBuildError("trnsim is not running from a source checkout, so its wheel cannot be built here; "
                             "pass an existing wheel with --wheel PATH (pip download trnsim --no-deps)")
    dest.mkdir(parents=True, exist_ok=True)
    commands = [
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dest), str(root)],
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dest), str(root)],
    ]
    errors = []
    for cmd in commands:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(dest.glob("trnsim-*-py3-none-any.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[-1]
        errors.append(f"{' '.join(cmd[:4])}: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    raise LiteBuildError("could not build the trnsim wheel (needs the 'build' and 'hatchling' packages: "
                         "pip install build hatchling): " + "; ".join(errors))


def _check_build_tools() -> None:
    missing = []
    for dist in REQUIRED_BUILD_PACKAGES:
        try:
            md.version(dist)
        except md.PackageNotFoundError:
            missing.append(dist)
    if missing:
        raise LiteBuildError(f"missing {', '.join(missing)}: pip install jupyterlite-core==0.8.6 "
                             "jupyterlite-pyodide-kernel==0.8.6 (the versions this command is tested with)")


def _wheel_version(wheel: Path) -> str:
    parts = wheel.name.split("-")
    if len(parts) < 5 or parts[0] != "trnsim":
        raise LiteBuildError(f"{wheel.name} is not a trnsim wheel (expected trnsim-VERSION-py3-none-any.whl)")
    return parts[1]


def check_output_dir(output_dir: Path, notebooks_dir: Path) -> None:
    """Refuse an output folder whose replacement could delete someone's work: the current folder or one above
    it, the home folder, the notebooks folder or one above it, or a non-empty folder that is not an earlier
    JupyterLite site (it has no ``jupyter-lite.json``). ``build_site`` deletes and rebuilds the folder."""
    out = Path(output_dir).resolve()
    protected = (Path.cwd().resolve(), Path(notebooks_dir).resolve(), Path.home().resolve())
    for p in protected:
        if out == p or out in p.parents:
            raise LiteBuildError(f"--output-dir {out} would replace {p} (or a folder containing it): the site folder "
                                 "is deleted and rebuilt; pass a new folder such as _output")
    if out.is_dir() and any(out.iterdir()) and not (out / "jupyter-lite.json").is_file():
        raise LiteBuildError(f"--output-dir {out} is not empty and is not an earlier JupyterLite site (no "
                             "jupyter-lite.json); the site folder is deleted and rebuilt, so pass a new or empty "
                             "folder such as _output")
    if out.exists() and not out.is_dir():
        raise LiteBuildError(f"--output-dir {out} is a file; pass a folder")


def build_site(output_dir: str | Path, notebooks_dir: str | Path, wheel: str | Path | None = None,
               log=None) -> LiteSite:
    """Build the JupyterLite site into ``output_dir`` (replaced if it exists and is an earlier site, see
    :func:`check_output_dir`) and check it."""
    _check_build_tools()
    notebooks_dir, output_dir = Path(notebooks_dir), Path(output_dir).resolve()
    check_output_dir(output_dir, notebooks_dir)
    sources = sorted(notebooks_dir.glob("*.ipynb"))
    if not sources:
        raise LiteBuildError(f"no notebooks (*.ipynb) in {notebooks_dir.resolve()}; pass --notebooks DIR")
    with tempfile.TemporaryDirectory(prefix="trnsim-lite-") as tmp:
        work = Path(tmp)
        wheel_path = Path(wheel).resolve() if wheel else build_wheel(work / "dist")
        if not wheel_path.is_file():
            raise LiteBuildError(f"wheel {wheel_path} does not exist")
        packages = runtime_packages(_wheel_version(wheel_path))
        contents = work / "contents"
        contents.mkdir()
        digest = hashlib.sha256(wheel_path.read_bytes())
        for src in sources:
            nb = lite_copy(nbformat.read(src, as_version=4), packages)
            write_joined(nb, contents / src.name)
            digest.update((contents / src.name).read_bytes())
        for extra in ("LICENSE.md",):
            if (notebooks_dir / extra).is_file():
                shutil.copy(notebooks_dir / extra, contents / extra)
        storage = f"trnsim-{_wheel_version(wheel_path)}-{digest.hexdigest()[:10]}"
        lite_dir = work / "lite"
        lite_dir.mkdir()
        (lite_dir / "jupyter-lite.json").write_text(json.dumps({
            "jupyter-lite-schema-version": 0,
            "jupyter-config-data": {"appName": "trnsim course", "contentsStorageName": storage},
        }, indent=2))
        if output_dir.exists():
            shutil.rmtree(output_dir)
        cmd = [sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(lite_dir),
               "--contents", str(contents), "--piplite-wheels", str(wheel_path),
               "--output-dir", str(output_dir)]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if log is not None:
            log.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise LiteBuildError(f"jupyter lite build failed (exit {proc.returncode}):\n{tail}")
        site = LiteSite(output_dir, tuple(p.name for p in sources), wheel_path.name, storage,
                        installed_extensions(output_dir))
    problems = check_site(site)
    if problems:
        raise LiteBuildError("the site was built but is incomplete:\n  " + "\n  ".join(problems))
    return site


def installed_extensions(site_dir: Path) -> tuple[str, ...]:
    """Names of the front-end extensions a built site serves (``extensions/[@scope/]name``)."""
    ext = site_dir / "extensions"
    found = [p.parent.relative_to(ext).as_posix() for pattern in ("*/package.json", "@*/*/package.json")
             for p in ext.glob(pattern)]
    return tuple(sorted(found))


def check_site(site: LiteSite) -> list[str]:
    """What a site must contain to work in a room: every notebook (with its guard), the wheel, the widgets."""
    root = site.output_dir
    problems = []
    for name in site.notebooks:
        path = root / "files" / name
        if not path.is_file():
            problems.append(f"notebook {name} missing from files/")
            continue
        nb = nbformat.read(path, as_version=4)
        if not has_guard(nb):
            problems.append(f"notebook {name} has no JupyterLite install cell")
        raw = json.loads(path.read_text(encoding="utf-8"))
        if any(isinstance(v, list) for c in raw["cells"] for o in c.get("outputs", [])
               for v in ([o.get("text")] + list(o.get("data", {}).values()))):
            problems.append(f"notebook {name} stores outputs as lists of lines (shown comma-joined in the site)")
    if not (root / "pypi" / site.wheel).is_file():
        problems.append(f"wheel {site.wheel} missing from pypi/")
    try:
        index = json.loads((root / "pypi" / "all.json").read_text())
        if "trnsim" not in index:
            problems.append("pypi/all.json does not list trnsim")
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(f"pypi/all.json unreadable: {exc}")
    if not (root / "extensions" / "@jupyter-widgets" / "jupyterlab-manager" / "package.json").is_file():
        problems.append("the widgets front-end (@jupyter-widgets/jupyterlab-manager) is not in extensions/: "
                        "install jupyterlab_widgets in the build environment")
    try:
        config = json.loads((root / "jupyter-lite.json").read_text())["jupyter-config-data"]
        if config.get("contentsStorageName") != site.storage_name:
            problems.append("jupyter-lite.json does not carry the site's contentsStorageName")
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        problems.append(f"jupyter-lite.json unreadable: {exc}")
    return problems
