"""Student copies: solution cells stubbed, outputs cleared, everything else unchanged, stubs give hints."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from trnsim.cli import main
from trnsim.student import (MARKDOWN_STUB, SOLUTION_TAG, STUB_HEADER, is_solution, make_student_notebook,
                            notebooks_in, stub_code, verify_student_copy, write_student_copies)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
COURSE = notebooks_in(NOTEBOOKS)


def _run(source: str) -> dict:
    """Execute stub source with a checker that records what it was given."""
    seen: dict = {}

    def check_thing(*args):
        seen["args"] = args
        return "checked"

    namespace = {"check_thing": check_thing, "print": lambda *a: None}
    exec(compile(source, "<stub>", "exec"), namespace)
    return seen


def test_marked_answers_become_ellipsis_and_givens_stay():
    src = ("from math import pi\n"
           "need = 70e9 * 2 / 2**30\n"
           "helper = [x for x in range(3)]\n"
           "answer = min(helper) + need   # your answer\n"
           "print(f'{answer:.1f}')\n"
           "print(check_thing(need, answer))\n")
    stub, answers, has_checker = stub_code(src)
    assert answers == ("answer",) and has_checker
    assert stub.splitlines()[0] == STUB_HEADER
    assert "answer = ...  # your answer" in stub
    assert "need = 70e9 * 2 / 2**30" in stub          # the checker needs this given
    assert "helper" not in stub and "min(" not in stub  # solution steps are gone
    assert "print(f'{answer:.1f}')" not in stub        # would crash on ...
    assert _run(stub)["args"] == (70e9 * 2 / 2**30, Ellipsis)


def test_unmarked_answers_are_the_checkers_arguments():
    src = "a, b = 3, 4\nc = (a * a + b * b) ** 0.5\nprint(check_thing(c))\n"
    stub, answers, _ = stub_code(src)
    assert answers == ("c",)
    assert "** 0.5" not in stub
    assert _run(stub)["args"] == (Ellipsis,)


def test_tuple_answer_and_cell_without_checker():
    stub, answers, _ = stub_code("x, y = 1, 2  # your answer\nprint(check_thing(x, y))\n")
    assert answers == ("x", "y") and _run(stub)["args"] == (Ellipsis, Ellipsis)
    stub, answers, has_checker = stub_code("import numpy as np\nresult = np.eye(3)  # your answer\n")
    assert not has_checker and "np.eye" not in stub and "import numpy as np" in stub


def test_unparsable_cell_keeps_only_checker_lines():
    stub, _, has_checker = stub_code("%timeit 1 + 1\nsecret = 42\nprint(check_thing(secret))\n")
    assert has_checker and "42" not in stub and "check_thing(secret)" in stub


def test_make_student_notebook_only_touches_solution_cells():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("x = 1\nprint(x)", outputs=[nbformat.v4.new_output("stream", text="1\n")],
                                  execution_count=1),
        nbformat.v4.new_code_cell("ans = 2 * 21  # your answer\nprint(check_thing(ans))",
                                  metadata={"tags": [SOLUTION_TAG, "nbval-ignore-output"],
                                            "jupyter": {"source_hidden": True}},
                                  outputs=[nbformat.v4.new_output("stream", text="ok 42\n")], execution_count=2),
        nbformat.v4.new_markdown_cell("<details>Answer: 42</details>", metadata={"tags": [SOLUTION_TAG]}),
    ]
    student, stubbed = make_student_notebook(nb)
    assert [s.index for s in stubbed] == [2, 3]
    assert student.cells[1] == nb.cells[1]                      # untouched, outputs kept
    assert student.cells[2].outputs == [] and student.cells[2].execution_count is None
    assert "21" not in student.cells[2].source and student.cells[3].source == MARKDOWN_STUB
    assert student.cells[2].metadata["tags"] == ["nbval-ignore-output", "exercise"]
    assert "jupyter" not in student.cells[2].metadata          # the collapsed solution's stub is visible
    assert nb.cells[2].outputs and "21" in nb.cells[2].source  # the original is not modified


@pytest.mark.skipif(not COURSE, reason="no notebooks in notebooks/")
def test_cli_writes_a_copy_of_every_notebook(tmp_path, capsys):
    import shutil

    snapshot = tmp_path / "notebooks"  # a fixed copy: the course may be edited while the test runs
    shutil.copytree(NOTEBOOKS, snapshot)
    assert main(["student-copies", str(tmp_path / "out"), "--notebooks", str(snapshot)]) == 0
    out = capsys.readouterr().out
    for src in notebooks_in(snapshot):
        original = nbformat.read(src, as_version=4)
        copy_ = nbformat.read(tmp_path / "out" / src.name, as_version=4)
        nbformat.validate(copy_)
        assert src.name in out
        assert len(copy_.cells) == len(original.cells)
        for before, after in zip(original.cells, copy_.cells):
            if is_solution(before):
                assert not is_solution(after)
                assert after.get("outputs", []) == []
                if before.cell_type == "code":
                    # no line of the solution that computes an answer survives
                    for line in before.source.splitlines():
                        if "# your answer" in line:
                            assert line.strip() not in after.source
            else:
                assert after == before


def test_solution_cells_exist_in_the_course():
    """The course marks its exercise solutions (otherwise student copies would hand them out)."""
    tagged = [src.name for src in COURSE if any(is_solution(c) for c in nbformat.read(src, as_version=4).cells)]
    assert "00_start_here.ipynb" in tagged


def test_stubbed_copy_of_notebook_00_runs_and_its_checkers_give_hints(tmp_path):
    copies = write_student_copies(tmp_path, NOTEBOOKS)
    target = next(c.target for c in copies if c.target.name == "00_start_here.ipynb")
    assert verify_student_copy(target) == []
    nb = nbformat.read(target, as_version=4)
    stubs = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(STUB_HEADER)]
    assert stubs and all(c.outputs == [] for c in stubs)


def test_verify_reports_a_stub_that_gives_no_hint(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(STUB_HEADER + "\nx = ...\nprint('fine')"),
                nbformat.v4.new_code_cell("1 / 0")]
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, path)
    problems = verify_student_copy(path)
    assert len(problems) == 2
    assert "not answered yet" in problems[0] and "ZeroDivisionError" in problems[1]


def test_refuses_to_overwrite_the_course(tmp_path):
    with pytest.raises(ValueError, match="notebooks folder itself"):
        write_student_copies(NOTEBOOKS, NOTEBOOKS)
    with pytest.raises(FileNotFoundError, match="no notebooks"):
        write_student_copies(tmp_path / "o", tmp_path)


def test_inline_answers_in_checker_calls_are_blanked():
    src = ("print(check_thing(6, 4, 10, 10 + 6 + 4 - 2))   # your answer\n"
           "print(check_thing(16, 'trn2', answer='memory'))  # your answer\n")
    stub, _, has_checker = stub_code(src)
    assert has_checker and "10 + 6" not in stub and "memory" not in stub
    assert "check_thing(6, 4, 10, ...)" in stub and "answer=..." in stub
    seen = []
    exec(compile(stub, "<stub>", "exec"), {"check_thing": lambda *a, **k: seen.append((a, k)), "print": lambda *a: None})
    assert seen == [((6, 4, 10, Ellipsis), {}), ((16, "trn2"), {"answer": Ellipsis})]


def test_givens_that_later_cells_read_are_kept_and_descriptions_stay():
    src = ("print(EXERCISE.describe())\n"
           "p, alpha = 8, 1.5\n"
           "step = p * alpha\n"
           "derived = answer_like = 0\n"
           "ans = 2 * (p - 1) * alpha   # your answer\n"
           "twice = ans * 2\n"
           "print(f'{ans}')\n"
           "print(check_thing(ans))\n")
    stub, answers, _ = stub_code(src, frozenset({"p", "alpha", "twice"}))
    assert answers == ("ans",)
    assert "print(EXERCISE.describe())" in stub and "p, alpha = 8, 1.5" in stub
    assert "step =" not in stub                      # nobody reads it
    assert "twice" not in stub                       # read later, but computed from the answer
    assert "print(f'{ans}')" not in stub


def test_keyword_only_inline_answers_are_all_blanked():
    stub, _, _ = stub_code("print(check_thing(needs_tia=True, hours=72))  # your answers\n")
    assert "needs_tia=..." in stub and "hours=..." in stub and "72" not in stub


def test_make_student_notebook_keeps_what_later_cells_need():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("n = 4\nsecret = n * n  # your answer\nprint(check_thing(secret))",
                                          metadata={"tags": [SOLUTION_TAG]}),
                nbformat.v4.new_code_cell("print(n + 1)")]
    student, _ = make_student_notebook(nb)
    assert "n = 4" in student.cells[0].source and "n * n" not in student.cells[0].source


def test_solution_kernels_defined_with_def_are_stubbed():
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook()
    cell = new_code_cell("@nki.jit\ndef my_kernel(x):\n    return secret_solution(x)\n\nprint(check_kernel(my_kernel))")
    cell.metadata["tags"] = ["solution"]
    nb.cells.append(cell)
    student, stubbed = make_student_notebook(nb)
    src = student.cells[0].source
    assert len(stubbed) == 1
    assert "secret_solution" not in src and "check_kernel(" in src
