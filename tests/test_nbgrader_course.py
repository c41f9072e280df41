"""End to end with real nbgrader: every notebook released, solved and blank submissions autograded.

The README's instructor workflow, run literally: ``python -m trnsim nbgrader-course``,
``nbgrader generate_assignment "*"``, submissions in ``submitted/<student>/<assignment>/``,
``nbgrader autograde "*"``, ``nbgrader export`` and ``nbgrader generate_feedback``.
Student ``solved`` fills every solution region in with the instructor's solution and must get
full marks; student ``blank`` hands the released notebooks back untouched and must get zero,
every test failing with the checker's hint (never a NameError or a crash). The two students
are graded in two copies of the course folder at once (two cores), about 2-3 minutes.

Needs the ``grade`` extra (``pip install -e ".[grade]"``); without nbgrader it is skipped.
"""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -e '.[grade]' to run the "
                                       "nbgrader autograding test of every notebook")

from trnsim.course.cli import main  # noqa: E402
from trnsim.course.grading.cells import BEGIN_SOLUTION, END_SOLUTION  # noqa: E402
from trnsim.course.grading.notebook import autograded_points, is_test_cell, nbgrader_meta, notebooks_in  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
STUDENTS = ("solved", "blank")
TIMEOUT_S = 1500


def _nbgrader(course: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=course, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _finish(proc: subprocess.Popen, what: str) -> str:
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"{what} failed (exit {proc.returncode}):\n{out[-4000:]}"
    return out


def _solved(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The released notebook with every solution cell written as the instructor's solution."""
    answers = {nbgrader_meta(c)["grade_id"]: c.source for c in source.cells if nbgrader_meta(c).get("solution")}
    out = nbformat.from_dict(release)
    for cell in out.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            cell.source = "\n".join(line for line in answers[meta["grade_id"]].split("\n")
                                    if BEGIN_SOLUTION not in line and END_SOLUTION not in line)
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("nbgrader")
    snapshot = root / "notebooks"  # a fixed copy: the course may be edited while the test runs
    shutil.copytree(NOTEBOOKS, snapshot)
    course = root / "course"
    assert main(["nbgrader-course", str(course), "--notebooks", str(snapshot)]) == 0
    _finish(_nbgrader(course, "generate_assignment", "*"), "nbgrader generate_assignment")
    names = sorted(p.name for p in (course / "release").iterdir())
    assert names == [p.stem for p in notebooks_in(snapshot)]
    points = {}
    for name in names:
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        points[name] = autograded_points(source)
        for student, nb in (("solved", _solved(release, source)), ("blank", release)):
            folder = course / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{name}.ipynb")
    # Grade the two students at once, each in its own copy of the course folder (own gradebook).
    copies = {"solved": course, "blank": root / "course_blank"}
    shutil.copytree(course, copies["blank"])
    procs = {s: _nbgrader(copies[s], "autograde", "*", "--student", s) for s in STUDENTS}
    for student, proc in procs.items():
        _finish(proc, f"nbgrader autograde (student {student})")
    scores = {}
    for student in STUDENTS:
        _finish(_nbgrader(copies[student], "export"), "nbgrader export")
        with open(copies[student] / "grades.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row["student_id"] == student:
                    scores[(row["assignment"], student)] = (float(row["score"]), float(row["max_score"]))
    return {"names": names, "points": points, "scores": scores, "copies": copies}


def _autograded(graded: dict, student: str, name: str) -> nbformat.NotebookNode:
    return nbformat.read(graded["copies"][student] / "autograded" / student / name / f"{name}.ipynb", as_version=4)


def test_every_notebook_is_an_assignment_with_autograded_points(graded):
    assert graded["names"] and all(graded["points"][n] > 0 for n in graded["names"])


def test_solved_submissions_get_full_marks(graded):
    for name in graded["names"]:
        score, max_score = graded["scores"][(name, "solved")]
        assert max_score == graded["points"][name], name
        assert score == max_score, f"{name}: {score} of {max_score}"
        nb = _autograded(graded, "solved", name)
        for index, cell in enumerate(nb.cells):
            errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
            assert not errors, f"{name} cell {index}: {errors[0].ename}: {errors[0].evalue}"
            if is_test_cell(cell):
                assert "\u2705" in "".join(o.get("text", "") for o in cell.outputs), f"{name} cell {index}"


def test_blank_submissions_score_zero_with_hints_not_errors(graded):
    for name in graded["names"]:
        score, max_score = graded["scores"][(name, "blank")]
        assert (score, max_score) == (0.0, graded["points"][name]), name
        nb = _autograded(graded, "blank", name)
        tests = [c for c in nb.cells if is_test_cell(c)]
        assert tests, name
        for cell in tests:
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert [e.ename for e in errors] == ["ExerciseNotPassed"], \
                f"{name} {nbgrader_meta(cell)['grade_id']}: {[(e.ename, e.evalue) for e in errors]}"
            assert "\u274c" in errors[0].evalue and "hint:" in errors[0].evalue, errors[0].evalue


def test_feedback_shows_the_learner_the_hints(graded):
    course, name = graded["copies"]["blank"], graded["names"][0]
    _finish(_nbgrader(course, "generate_feedback", name, "--student", "blank"), "nbgrader generate_feedback")
    html = (course / "feedback" / "blank" / name / f"{name}.html").read_text()
    assert "not answered yet" in html and "hint:" in html
