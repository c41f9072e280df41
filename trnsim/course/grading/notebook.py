"""Every exercise of a notebook as nbgrader cells, idempotently (``python -m trnsim nbgrader-sync``).

A code cell tagged ``solution`` that has no ``nbgrader`` metadata yet is converted by
:func:`trnsim.course.grading.cells.convert_exercise`: it becomes an nbgrader *autograded
answer* cell (``solution: true``) followed by one read-only *autograder test* cell per
checker call (``grade: true``, ``locked: true``, :data:`POINTS_PER_TEST` points). A
Markdown cell tagged ``solution`` (a written answer) becomes a *manually graded answer*
(``solution`` and ``grade``, :data:`POINTS_PER_WRITTEN_ANSWER` points): nbgrader requires
written answers to be graded by hand.

Cells that already carry ``nbgrader`` metadata are left as they are, so running the sync
again changes nothing; after an exercise is converted, edit it in its nbgrader form.
Converted cells have no outputs until the notebook is executed again.
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from trnsim.course.grading.cells import (BEGIN_SOLUTION, CHECKER_PREFIX, GradingError, cell_names_read, checker_calls,
                                  convert_exercise)

SOLUTION_TAG = "solution"
SCHEMA_VERSION = 3          # nbgrader's cell metadata schema (nbgrader 0.9)
POINTS_PER_TEST = 1
POINTS_PER_WRITTEN_ANSWER = 1
_ID_OK = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class NotebookSync:
    """What syncing one notebook did (or, with ``write=False``, would do)."""

    path: Path
    converted: tuple[str, ...] = field(default_factory=tuple)   # grade ids of the newly converted answer cells
    tests_added: tuple[str, ...] = field(default_factory=tuple)  # grade ids of the new test cells
    points: float = 0.0                                          # autograded points in the notebook after the sync
    untested: tuple[str, ...] = field(default_factory=tuple)     # converted cells that call a checker but got no test

    @property
    def changed(self) -> bool:
        return bool(self.converted)


def is_solution_tagged(cell) -> bool:
    return SOLUTION_TAG in (cell.get("metadata", {}).get("tags") or [])


def nbgrader_meta(cell) -> dict:
    """The cell's ``nbgrader`` metadata (empty when it has none)."""
    return dict(cell.get("metadata", {}).get("nbgrader") or {})


def is_test_cell(cell) -> bool:
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _meta(grade_id: str, *, solution: bool, grade: bool, locked: bool, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def _unique(base: str, taken: set[str]) -> str:
    base = _ID_OK.sub("_", base)[:60]
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    taken.add(out)
    return out


def autograded_points(nb) -> float:
    """Points of the notebook's autograder test cells."""
    return float(sum(nbgrader_meta(c).get("points") or 0 for c in nb.cells if is_test_cell(c)))


def sync_notebook(nb, where: str = "notebook") -> tuple[nbformat.NotebookNode, NotebookSync]:
    """Return a copy of ``nb`` with every not-yet-converted exercise in nbgrader form, and what changed.

    ``where`` names the notebook in errors (:class:`~trnsim.course.grading.cells.GradingError`).
    """
    out = copy.deepcopy(nb)
    grade_ids = {nbgrader_meta(c)["grade_id"] for c in out.cells if nbgrader_meta(c).get("grade_id")}
    cell_ids = {c.get("id") for c in out.cells if c.get("id")}
    notebook_names = set().union(*(cell_names_read(c.source) for c in out.cells if c.cell_type == "code"))
    read_after: list[set[str]] = []  # names read by the code cells after cell i
    later: set[str] = set()
    for cell in reversed(out.cells):
        read_after.append(set(later))
        if cell.cell_type == "code":
            later |= cell_names_read(cell.source)
    read_after.reverse()

    cells, converted, tests_added, untested = [], [], [], []
    for index, cell in enumerate(out.cells):
        cells.append(cell)
        if not is_solution_tagged(cell) or "nbgrader" in cell.get("metadata", {}):
            continue
        cell_id = cell.get("id") or f"cell{index}"
        if cell.cell_type == "markdown":
            gid = _unique(f"written_{cell_id}", grade_ids)
            cell.metadata["nbgrader"] = _meta(gid, solution=True, grade=True, locked=False,
                                              points=POINTS_PER_WRITTEN_ANSWER)
            converted.append(gid)
            continue
        if cell.cell_type != "code":
            continue
        if BEGIN_SOLUTION in cell.source:
            raise GradingError(f"{where} cell {index}: it has {BEGIN_SOLUTION} but no nbgrader metadata; "
                               "remove the markers (the sync adds them) or add the metadata by hand")
        exercise = convert_exercise(cell.source, read_after[index], notebook_names, where=f"{where} cell {index}")
        if not exercise.tests and checker_calls(ast.parse(cell.source)):
            untested.append(f"{where} cell {index}: it calls a checker, but not as a statement of its own that reads "
                            "an answer, so no autograder test was made; write print(check_...(answer))")
        first = exercise.tests[0].checker[len(CHECKER_PREFIX):] if exercise.tests else cell_id
        gid = _unique(f"answer_{first}", grade_ids)
        cell.source = exercise.solution_source
        cell.outputs = []
        cell.execution_count = None
        cell.metadata["nbgrader"] = _meta(gid, solution=True, grade=False, locked=False)
        # the repository's copy keeps the worked answer collapsed, its code and what it prints (the course
        # copies un-collapse it: trnsim.course.grading.course.show_answer_cells)
        cell.metadata.setdefault("jupyter", {}).update(source_hidden=True, outputs_hidden=True)
        converted.append(gid)
        for n, test in enumerate(exercise.tests, start=1):
            test_gid = _unique(f"test_{test.checker[len(CHECKER_PREFIX):]}", grade_ids)
            test_id = _unique(f"{cell_id[:50]}-test{n}", cell_ids)
            test_cell = nbformat.v4.new_code_cell(test.source, metadata={
                "nbgrader": _meta(test_gid, solution=False, grade=True, locked=True, points=POINTS_PER_TEST)})
            if "id" in cell:
                test_cell["id"] = test_id
            else:
                test_cell.pop("id", None)
            cells.append(test_cell)
            tests_added.append(test_gid)
    out.cells = cells
    return out, NotebookSync(Path(where), tuple(converted), tuple(tests_added), autograded_points(out),
                             tuple(untested))


def notebooks_in(folder: str | Path) -> list[Path]:
    """The course notebooks in ``folder`` (``*.ipynb``, hidden files excluded), sorted."""
    return sorted(p for p in Path(folder).glob("*.ipynb") if not p.name.startswith("."))


def sync_notebooks(folder: str | Path, write: bool = True) -> list[NotebookSync]:
    """Sync every notebook in ``folder``; write the ones that change (unless ``write`` is False)."""
    found = notebooks_in(folder)
    if not found:
        raise FileNotFoundError(f"no notebooks (*.ipynb) in {Path(folder).resolve()}; pass --notebooks DIR")
    results = []
    for path in found:
        nb = nbformat.read(path, as_version=4)
        synced, report = sync_notebook(nb, where=path.name)
        if report.changed and write:
            nbformat.validate(synced)
            nbformat.write(synced, path)
        results.append(NotebookSync(path, report.converted, report.tests_added, report.points, report.untested))
    return results
