"""An nbgrader course folder made from the course notebooks (``python -m trnsim nbgrader-course DIR``).

nbgrader wants ``DIR/source/<assignment>/<notebook>.ipynb`` and a ``DIR/nbgrader_config.py``;
each notebook becomes one assignment named after it (``00_start_here``, ...), with the
notebooks' licence beside it. The copies are synced to nbgrader form on the way
(:func:`trnsim.course.grading.notebook.sync_notebook`), so a checkout whose notebooks were
edited after the last ``nbgrader-sync`` still gives a working course. Everything nbgrader
writes later (``release/``, ``submitted/``, ``autograded/``, ``feedback/``,
``gradebook.db``) is left alone when the folder is made again.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from trnsim.course.grading.notebook import notebooks_in, sync_notebook

CONFIG_NAME = "nbgrader_config.py"
EXTRA_FILES = ("LICENSE.md",)
#: Seconds nbgrader's autograder waits for one cell: some checks run the simulator's
#: kernels and profiles, which take tens of seconds on a busy 2-core machine.
CELL_TIMEOUT_S = 600

CONFIG_TEXT = f'''\
# nbgrader configuration for the trnsim course, written by `python -m trnsim nbgrader-course`.
# Run nbgrader from this folder. One assignment per notebook: source/<assignment>/<assignment>.ipynb.
c = get_config()  # noqa: F821 (nbgrader provides get_config)

c.CourseDirectory.course_id = "trnsim"
# Some exercise checks run the simulator's kernels and profiles: allow each cell this many seconds.
c.Execute.timeout = {CELL_TIMEOUT_S}
'''


@dataclass(frozen=True)
class Assignment:
    """One assignment of the course folder: its name, source notebook and autograded points."""

    name: str
    notebook: Path
    points: float


def show_answer_cells(nb) -> int:
    """Un-collapse the answer cells of an assignment copy; returns how many were collapsed.

    The repository's notebooks collapse worked solutions (``jupyter.source_hidden`` and ``outputs_hidden``) so a
    reader does not see the answer at a glance; in a learner's assignment the same cell holds the stub to
    fill in, and a collapsed stub (or its collapsed output) would be easy to miss.
    """
    shown = 0
    for cell in nb.cells:
        jmeta = cell.get("metadata", {}).get("jupyter", {})
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            hidden = jmeta.pop("source_hidden", False)
            jmeta.pop("outputs_hidden", None)
            shown += bool(hidden)
        if "jupyter" in cell.get("metadata", {}) and not jmeta:
            del cell["metadata"]["jupyter"]
    return shown


def write_course(course_dir: str | Path, notebooks_dir: str | Path) -> list[Assignment]:
    """Write ``course_dir/nbgrader_config.py`` and one ``source/<assignment>/`` per notebook.

    An existing ``source/<assignment>/`` is replaced; an existing ``nbgrader_config.py``
    is kept (an instructor may have edited it).
    """
    src_dir, course = Path(notebooks_dir), Path(course_dir)
    found = notebooks_in(src_dir)
    if not found:
        raise FileNotFoundError(f"no notebooks (*.ipynb) in {src_dir.resolve()}; pass --notebooks DIR")
    if course.resolve() == src_dir.resolve() or src_dir.resolve() in course.resolve().parents:
        raise ValueError(f"the course folder {course} is inside the notebooks folder {src_dir}; "
                         "choose a folder outside it, e.g. course/")
    source = course / "source"
    source.mkdir(parents=True, exist_ok=True)
    config = course / CONFIG_NAME
    if not config.exists():
        config.write_text(CONFIG_TEXT)
    assignments = []
    for path in found:
        nb, report = sync_notebook(nbformat.read(path, as_version=4), where=path.name)
        show_answer_cells(nb)
        target = source / path.stem
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        nbformat.write(nb, target / path.name)
        for extra in EXTRA_FILES:
            if (src_dir / extra).is_file():
                shutil.copyfile(src_dir / extra, target / extra)
        assignments.append(Assignment(path.stem, target / path.name, report.points))
    return assignments
