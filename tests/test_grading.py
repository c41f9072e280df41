"""Exercise cells -> nbgrader cells: conversion, idempotent sync, course folder, require()."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from trnsim.course.check import CheckResult, ExerciseNotPassed, accepts_stubs, expect_close, require
from trnsim.course.cli import main
from trnsim.course.grading.cells import BEGIN_SOLUTION, END_SOLUTION, GradingError, convert_exercise
from trnsim.course.grading.course import CONFIG_NAME, write_course
from trnsim.course.grading.notebook import (is_solution_tagged, is_test_cell, nbgrader_meta, notebooks_in, sync_notebook,
                                     sync_notebooks)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader's default code stub for Python


def release(source: str) -> str:
    """What ``nbgrader generate_assignment`` makes of a solution cell (its ClearSolutions step)."""
    return re.sub(r"( *)### BEGIN SOLUTION\n.*?### END SOLUTION",
                  lambda m: "\n".join(m.group(1) + line for line in STUB.split("\n")), source, flags=re.S)


@accepts_stubs
def check_thing(value):
    """Thing"""
    return expect_close("Thing", value, 42, hint="six times seven")


@accepts_stubs
def check_pair(need, value):
    """Pair"""
    return expect_close("Pair", value, 7 * need, hint="six times seven")


def run(solution: str, tests: list[str], blank: bool) -> tuple[list, dict]:
    """Run a solution cell (released if ``blank``) then its test cells, like nbgrader does; return the errors."""
    ns: dict = {"check_thing": check_thing, "check_other": check_thing, "check_pair": check_pair}
    errors = []
    for src in [release(solution) if blank else solution, *tests]:
        try:
            exec(compile(src, "<cell>", "exec"), ns)
        except Exception as err:  # noqa: BLE001 - the test inspects what each cell raised
            errors.append(err)
    return errors, ns


def test_marked_answers_become_placeholders_and_the_working_a_region():
    src = ("from math import pi\n"
           "need = 6\n"
           "helper = 7\n"
           "answer = helper * need   # your answer\n"
           "print(f'{answer:.1f}')\n"
           "print(check_pair(need, answer))\n"
           "# six times seven\n")
    ex = convert_exercise(src)
    assert ex.answers == ("answer",)
    lines = ex.solution_source.split("\n")
    assert lines[:2] == ["from math import pi", "need = 6"]              # the given stays outside
    assert "answer = ...  # your answer" in lines
    region = lines[lines.index(BEGIN_SOLUTION) + 1:lines.index(END_SOLUTION)]
    assert region == ["helper = 7", "answer = helper * need   # your answer", "print(f'{answer:.1f}')",
                      "# six times seven"]                             # a closing comment stays hidden
    assert "check_pair" not in ex.solution_source                       # the checker moved to a test cell
    assert [t.checker for t in ex.tests] == ["check_pair"]
    assert ex.tests[0].source.endswith("require(check_pair(need, answer))")
    out_ok, _ = run(ex.solution_source, [t.source for t in ex.tests], blank=False)
    assert out_ok == []
    out_blank, ns = run(ex.solution_source, [t.source for t in ex.tests], blank=True)
    assert [type(e) for e in out_blank] == [NotImplementedError, ExerciseNotPassed]  # a hint, not a NameError
    assert "not answered yet" in str(out_blank[1]) and ns["need"] == 6
    wrong = ex.solution_source.replace("helper * need", "helper + need")
    out_wrong, _ = run(wrong, [t.source for t in ex.tests], blank=False)
    assert [type(e) for e in out_wrong] == [ExerciseNotPassed] and "six times seven" in str(out_wrong[0])


def test_inline_answers_get_names_and_keywords_keep_theirs():
    src = ("answer = 1\n"
           "print(check_thing(40 + 2))  # your answer\n"
           "print(check_other(value=42, answer=42))  # your answers\n")
    ex = convert_exercise(src, taken_names={"thing_answer"})
    assert ex.answers == ("thing_answer_2", "other_answer")  # no clash with names in use
    assert "thing_answer_2 = 40 + 2" in ex.solution_source and "other_answer = 42" in ex.solution_source
    assert [t.source.split("\n")[-1] for t in ex.tests] == [
        "require(check_thing(thing_answer_2))", "require(check_other(value=42, answer=other_answer))"]
    ex = convert_exercise("print(check_thing(needs_tia=True, hours=72))  # your answers\n")
    assert ex.answers == ("needs_tia", "hours")
    assert ex.tests[0].source.endswith("require(check_thing(needs_tia=needs_tia, hours=hours))")


def test_unmarked_cells_grade_what_the_checker_reads():
    ex = convert_exercise("a, b = 3, 4\nc = (a * a + b * b) ** 0.5\nprint(check_thing(c))\n")
    assert ex.answers == ("c",) and "c = ...  # your answer" in ex.solution_source
    assert release(ex.solution_source).count("** 0.5") == 0


def test_a_kernel_keeps_its_signature_and_docstring_and_its_body_is_the_region():
    src = ('@nki.jit\ndef my_kernel(x):\n    """Doubles x."""\n    y = x * 2\n    return y\n\n\n'
           "answer = my_kernel   # your answer: the kernel itself\nprint(check_thing(answer))\n")
    ex = convert_exercise(src)
    student = release(ex.solution_source)
    assert '@nki.jit\ndef my_kernel(x):\n    """Doubles x."""\n    # YOUR CODE HERE\n    raise NotImplementedError()' \
        in student
    assert "x * 2" not in student and "answer = my_kernel   # your answer: the kernel itself" in student
    assert ex.answers == () and ex.tests[0].source.endswith("require(check_thing(answer))")
    compile(student, "<student>", "exec")


def test_givens_that_later_cells_read_stay_and_what_reads_the_region_moves_in():
    src = ("p, alpha = 8, 1.5\n"
           "step = p * alpha\n"
           "shown = step + 1\n"
           "work = 2 * alpha\n"
           "print(work)\n"
           "ans = 3.5 * step   # your answer\n"
           "print(check_thing(ans))\n")
    ex = convert_exercise(src, used_later={"shown"})
    outside, region = ex.solution_source.split(BEGIN_SOLUTION)
    assert "p, alpha = 8, 1.5\nstep = p * alpha\nshown = step + 1" in outside  # givens a later cell needs
    # work is solution working nobody else reads, so the print of it moves into the region with it
    assert "work = 2 * alpha\nprint(work)" in region and "work" not in outside
    errors, ns = run(ex.solution_source, [t.source for t in ex.tests], blank=False)
    assert errors == [] and ns["shown"] == 13.0
    errors, ns = run(ex.solution_source, [t.source for t in ex.tests], blank=True)
    assert [type(e) for e in errors] == [NotImplementedError, ExerciseNotPassed] and ns["shown"] == 13.0


def test_a_checker_call_that_reads_no_answer_stays_as_a_demonstration():
    src = ("t = 5\nprint(check_thing(t))   # a wrong answer, to show the hint\n"
           "x = 42  # your answer\nprint(check_thing(x))\n")
    ex = convert_exercise(src)
    assert "print(check_thing(t))" in ex.solution_source.split(BEGIN_SOLUTION)[0]
    assert [t.source.split("\n")[-1] for t in ex.tests] == ["require(check_thing(x))"]


def test_cells_that_cannot_be_converted_say_why():
    with pytest.raises(GradingError, match="not plain Python.*magics"):
        convert_exercise("%timeit 1 + 1\nprint(check_thing(1))\n", where="nb cell 3")
    with pytest.raises(GradingError, match="own lines"):
        convert_exercise("def k(x): return x\nprint(check_thing(k))\n")
    with pytest.raises(GradingError, match="one statement per line"):
        convert_exercise("a = 1; b = 2  # your answer\nprint(check_thing(b))\n")


def test_require_prints_a_pass_and_raises_the_hints_on_a_fail(capsys):
    assert require(CheckResult(True, "T", "42 is right")) is None
    assert "42 is right" in capsys.readouterr().out
    with pytest.raises(ExerciseNotPassed, match="hint: six") as exc:
        require(CheckResult(False, "T", "wrong", ("six",)))
    assert isinstance(exc.value, AssertionError) and not exc.value.result.passed
    with pytest.raises(TypeError, match=r"require\(check_"):
        require(True)


def _exercise_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"),
                nbformat.v4.new_code_cell("n = 4\nsecret = n * n  # your answer\nprint(check_thing(secret))",
                                          metadata={"tags": ["solution"]},
                                          outputs=[nbformat.v4.new_output("stream", text="ok\n")], execution_count=1),
                nbformat.v4.new_code_cell("print(n + 1)"),
                nbformat.v4.new_markdown_cell("Why? Because.", metadata={"tags": ["solution"]})]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i}"
    return nb


def test_sync_notebook_adds_nbgrader_cells_once():
    nb = _exercise_notebook()
    synced, report = sync_notebook(nb)
    assert report.changed and report.points == 1 and nb.cells[1].outputs  # the original is not modified
    code, test = synced.cells[1], synced.cells[2]
    assert nbgrader_meta(code) == {"grade": False, "grade_id": "answer_thing", "locked": False,
                                   "schema_version": 3, "solution": True, "task": False}
    assert code.outputs == [] and "n = 4" in code.source.split(BEGIN_SOLUTION)[0]
    assert is_test_cell(test) and test["id"] == "c1-test1"
    assert nbgrader_meta(test) == {"grade": True, "grade_id": "test_thing", "locked": True, "points": 1,
                                   "schema_version": 3, "solution": False, "task": False}
    written = synced.cells[4]
    assert nbgrader_meta(written)["solution"] and nbgrader_meta(written)["grade"]  # nbgrader: graded by hand
    nbformat.validate(synced)
    again, report2 = sync_notebook(synced)
    assert not report2.changed and again == synced


def test_sync_refuses_markers_without_metadata():
    nb = _exercise_notebook()
    nb.cells[1].source = f"{BEGIN_SOLUTION}\nx = 1\n{END_SOLUTION}"
    with pytest.raises(GradingError, match="no nbgrader metadata"):
        sync_notebook(nb, where="x.ipynb")


def test_cli_sync_is_idempotent_and_check_reports(tmp_path, capsys):
    nbformat.write(_exercise_notebook(), tmp_path / "01_x.ipynb")
    assert main(["nbgrader-sync", "--notebooks", str(tmp_path), "--check"]) == 1
    assert main(["nbgrader-sync", "--notebooks", str(tmp_path)]) == 0
    first = (tmp_path / "01_x.ipynb").read_bytes()
    assert main(["nbgrader-sync", "--notebooks", str(tmp_path)]) == 0
    assert (tmp_path / "01_x.ipynb").read_bytes() == first
    assert main(["nbgrader-sync", "--notebooks", str(tmp_path), "--check"]) == 0
    assert "already in nbgrader form; 1 autograded point(s)" in capsys.readouterr().out


def test_course_folder_layout(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    nbformat.write(_exercise_notebook(), nbs / "01_x.ipynb")
    (nbs / "LICENSE.md").write_text("CC BY 4.0")
    course = tmp_path / "course"
    (course).mkdir()
    (course / CONFIG_NAME).write_text("c = get_config()  # the instructor's own\n")
    [a] = write_course(course, nbs)
    assert a.name == "01_x" and a.points == 1
    nb = nbformat.read(course / "source" / "01_x" / "01_x.ipynb", as_version=4)
    assert any(is_test_cell(c) for c in nb.cells)                      # synced on the way
    assert (course / "source" / "01_x" / "LICENSE.md").read_text() == "CC BY 4.0"
    assert (course / CONFIG_NAME).read_text().endswith("the instructor's own\n")  # kept
    with pytest.raises(ValueError, match="inside the notebooks folder"):
        write_course(nbs / "course", nbs)


def test_course_copies_show_the_collapsed_answer_cells(tmp_path):
    (tmp_path / "nbs").mkdir()
    nb = _exercise_notebook()
    for cell in nb.cells:
        if "solution" in cell.get("metadata", {}).get("tags", []):
            cell.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
    nbformat.write(nb, tmp_path / "nbs" / "01_x.ipynb")
    write_course(tmp_path / "c", tmp_path / "nbs")
    copy = nbformat.read(tmp_path / "c" / "source" / "01_x" / "01_x.ipynb", as_version=4)
    answers = [c for c in copy.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    assert answers and not any(c.metadata.get("jupyter", {}).get("source_hidden") for c in answers)
    assert not any(c.metadata.get("jupyter", {}).get("outputs_hidden") for c in answers)


def test_fresh_course_config_sets_the_cell_timeout(tmp_path):
    (tmp_path / "nbs").mkdir()
    nbformat.write(_exercise_notebook(), tmp_path / "nbs" / "01_x.ipynb")
    write_course(tmp_path / "c", tmp_path / "nbs")
    text = (tmp_path / "c" / CONFIG_NAME).read_text()
    assert "c.Execute.timeout = " in text and 'course_id = "trnsim"' in text


def test_the_course_notebooks_are_nbgrader_assignments(tmp_path):
    """Every exercise of the course is in nbgrader form (run python -m trnsim nbgrader-sync if not)."""
    snapshot = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, snapshot)
    results = sync_notebooks(snapshot, write=False)
    assert [r.path.name for r in results if r.changed] == []
    assert sum(r.points for r in results) > 0
    for path in notebooks_in(snapshot):
        for cell in nbformat.read(path, as_version=4).cells:
            if is_solution_tagged(cell):
                assert nbgrader_meta(cell).get("solution"), f"{path.name}: {cell.source[:60]!r}"


def test_a_blank_busbw_answer_is_not_answered_yet():
    """Found by the nbgrader blank-submission test: the busbw checker said "got Ellipsis" with no hint."""
    from trnsim.course.exercises.cluster import check_busbw

    result = check_busbw(..., 1000.0, 100_000_000, 8)
    assert not result.passed and result.message == "not answered yet" and "bus factor" in str(result)


def test_sync_warns_about_an_exercise_whose_checker_call_gives_no_test():
    nb = _exercise_notebook()
    nb.cells[1].source = "secret = 16  # your answer\nresult = check_thing(secret)\nprint(result)"
    _, report = sync_notebook(nb, where="x.ipynb")
    assert report.changed and report.tests_added == ()
    assert len(report.untested) == 1 and "x.ipynb cell 1" in report.untested[0]


def test_worked_answers_are_collapsed_in_the_repository_notebooks():
    """A reader of the repository's notebooks meets each worked answer collapsed (issue 14), and the sync
    collapses every cell it converts."""
    open_answers = []
    for path in notebooks_in(NOTEBOOKS):
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
                j = cell.metadata.get("jupyter", {})
                if not (j.get("source_hidden") and j.get("outputs_hidden")):   # what it prints is the answer too
                    open_answers.append(f"{path.name} cell {index}")
    assert open_answers == []
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("answer = 6 * 7   # your answer\nprint(check_thing(answer))",
                                  metadata={"tags": ["solution"]})])
    synced, _ = sync_notebook(nb)
    assert synced.cells[0].metadata["jupyter"]["source_hidden"] is True
    assert synced.cells[0].metadata["jupyter"]["outputs_hidden"] is True
