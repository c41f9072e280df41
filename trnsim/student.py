"""Student copies of the course: notebooks with the exercise solutions taken out.

Instructors keep the full notebooks; learners get copies in which every cell tagged
``solution`` (cell metadata ``"tags"``) is replaced by a stub:

* a code cell keeps its imports, the *given* values the checker needs (for example
  ``need_gib = 70e9 * 2 / 2**30``) and its checker call (``print(check_...(...))``);
  each answer (an assignment marked ``# your answer``, or, when none is marked, a
  name the checker is given) becomes ``name = ...  # your answer``; an answer written
  inline in a checker call marked ``# your answer`` (the argument named ``answer...``,
  else the last positional one) becomes ``...``. Running the
  stub prints the checker's "not answered yet" hint instead of crashing
  (:func:`trnsim.check.not_answered`);
* a Markdown cell (a worked answer) is replaced by a one-line note;
* outputs and execution counts of those cells are cleared. Every other cell is
  copied unchanged, outputs included.

:func:`verify_student_copy` executes a copy (nbclient, a fresh kernel) and reports
any cell that errors and any stub whose checker does not answer with a hint.
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from trnsim.check import FAIL_MARK

SOLUTION_TAG = "solution"
STUB_HEADER = "# Exercise: your answer here. Replace each ... with your answer, then run the cell."
MARKDOWN_STUB = "*The worked answer is not part of the student copy. Ask your instructor, or try it yourself first.*"
NO_CHECKER_STUB = "# Your answer here (the solution was removed from the student copy)."
ANSWER_MARK = re.compile(r"#\s*your answer", re.IGNORECASE)
CHECKER_PREFIX = "check_"
NOT_ANSWERED = "not answered yet"


@dataclass(frozen=True)
class StubbedCell:
    """One solution cell replaced in a copy: its index, kind and the answer names stubbed."""

    index: int
    cell_type: str
    answers: tuple[str, ...] = ()
    has_checker: bool = False


@dataclass(frozen=True)
class StudentCopy:
    """The result of copying one notebook: where it was written and what was replaced."""

    source: Path
    target: Path
    stubbed: tuple[StubbedCell, ...] = field(default_factory=tuple)


def is_solution(cell) -> bool:
    return SOLUTION_TAG in (cell.get("metadata", {}).get("tags") or [])


def _checker_calls(node: ast.AST) -> list[ast.Call]:
    calls = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name.startswith(CHECKER_PREFIX):
                calls.append(sub)
    return calls


def _assigned(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]  # a solution kernel or helper defined in the cell is an answer too
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    names: list[str] = []
    for t in targets:
        for sub in ast.walk(t):
            if isinstance(sub, ast.Name) and sub.id not in names:
                names.append(sub.id)
    return names


def _used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _blank_inline_answers(stmt: ast.stmt) -> str:
    """A checker call written with its answer inline, ``print(check_x(6, 4, 18))  # your answer``:
    the answer argument (a keyword whose name contains "answer", else the last positional
    argument; every keyword when the call has only keywords) becomes ``...``."""
    stmt = copy.deepcopy(stmt)
    for call in _checker_calls(stmt):
        named = [k for k in call.keywords if k.arg and "answer" in k.arg]
        if not named and not call.args:  # answers given only as keywords: all of them
            named = [k for k in call.keywords if k.arg]
        if named:
            for k in named:
                k.value = ast.Constant(Ellipsis)
        elif call.args:
            call.args[-1] = ast.Constant(Ellipsis)
    return ast.unparse(stmt) + "  # your answer: replace the ..."


def stub_code(source: str, used_later: frozenset[str] = frozenset()) -> tuple[str, tuple[str, ...], bool]:
    """Return (stub source, answer names, whether a checker call was kept) for a solution cell.

    ``used_later`` are names that later cells of the notebook read: assignments of those that
    are not answers (and do not depend on one) are kept, so the rest of the notebook still runs.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics or top-level await: keep only the checker lines
        kept = [line for line in source.splitlines() if CHECKER_PREFIX in line and not line.lstrip().startswith("#")]
        return "\n".join([STUB_HEADER if kept else NO_CHECKER_STUB, *kept]), (), bool(kept)
    lines = source.splitlines()
    stmts = tree.body

    def text(stmt: ast.stmt) -> str:
        return "\n".join(lines[stmt.lineno - 1: stmt.end_lineno])

    checkers = [s for s in stmts if _checker_calls(s)]
    marked = [s for s in stmts if _assigned(s) and ANSWER_MARK.search(text(s))]
    answers: list[str] = []
    for s in marked:
        answers += [n for n in _assigned(s) if n not in answers]
    if not marked:  # no marks: the answers are the checker's arguments that this cell computes
        defined = {n for s in stmts for n in _assigned(s)}
        for s in checkers:
            for call in _checker_calls(s):
                for arg in [*call.args, *(k.value for k in call.keywords)]:
                    answers += [n for n in sorted(_used(arg)) if n in defined and n not in answers]
    answer_set = set(answers)

    # Givens: non-answer assignments that the checker calls or later cells read (transitively),
    # unless they are computed from an answer.
    needed = (set().union(*(_used(s) for s in checkers)) | set(used_later)) - answer_set
    keep: set[int] = set()
    for i in range(len(stmts) - 1, -1, -1):
        s = stmts[i]
        names = set(_assigned(s))
        if s in checkers or isinstance(s, (ast.Import, ast.ImportFrom)):
            keep.add(i)
        elif names and not names & answer_set and names & needed and not _used(s) & answer_set:
            keep.add(i)
            needed |= _used(s) - answer_set
    # Other statements (an exercise's description, say) stay if they read no answer and nothing dropped.
    dropped = {n for i, s in enumerate(stmts) if i not in keep for n in _assigned(s)}
    for i, s in enumerate(stmts):
        if i not in keep and not _assigned(s) and not _used(s) & (answer_set | dropped):
            keep.add(i)
    out = [STUB_HEADER if checkers else NO_CHECKER_STUB]
    stubbed: set[str] = set()
    for i, s in enumerate(stmts):
        names = _assigned(s)
        if names and set(names) & answer_set and s not in checkers:
            for name in names:
                if name in answer_set and name not in stubbed:
                    out.append(f"{name} = ...  # your answer")
                    stubbed.add(name)
        elif s in checkers and ANSWER_MARK.search(text(s)):
            out.append(_blank_inline_answers(s))
        elif i in keep:
            out.append(text(s))
    for name in answers:  # an answer only computed inside a non-assignment (rare): still define it
        if name not in stubbed:
            out.insert(1, f"{name} = ...  # your answer")
    return "\n".join(out), tuple(answers), bool(checkers)


def names_read(source: str) -> set[str]:
    """Names a cell reads (empty when the cell is not plain Python, e.g. has magics)."""
    try:
        return _used(ast.parse(source))
    except SyntaxError:
        return set()


def make_student_notebook(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, tuple[StubbedCell, ...]]:
    """A copy of ``nb`` with its solution cells stubbed (``nb`` itself is not changed)."""
    out = copy.deepcopy(nb)
    stubbed: list[StubbedCell] = []
    read_after: list[frozenset[str]] = []  # names read by the code cells after cell i
    later: set[str] = set()
    for cell in reversed(out.cells):
        read_after.append(frozenset(later))
        if cell.cell_type == "code":
            later |= names_read(cell.source)
    read_after.reverse()
    for index, cell in enumerate(out.cells):
        if not is_solution(cell):
            continue
        if cell.cell_type == "code":
            source, answers, has_checker = stub_code(cell.source, read_after[index])
            cell.source = source
            cell.outputs = []
            cell.execution_count = None
            stubbed.append(StubbedCell(index, "code", answers, has_checker))
        else:
            cell.source = MARKDOWN_STUB
            cell.pop("attachments", None)
            stubbed.append(StubbedCell(index, cell.cell_type))
        tags = [t for t in cell.metadata.get("tags", []) if t != SOLUTION_TAG] + ["exercise"]
        cell.metadata["tags"] = tags
        # the course collapses its solution cells (jupyter.source_hidden); a learner's stub must be visible
        jupyter_md = cell.metadata.get("jupyter")
        if isinstance(jupyter_md, dict):
            jupyter_md.pop("source_hidden", None)
            jupyter_md.pop("outputs_hidden", None)
            if not jupyter_md:
                cell.metadata.pop("jupyter")
    return out, tuple(stubbed)


def notebooks_in(folder: str | Path) -> list[Path]:
    """The course notebooks in ``folder`` (``NN_topic.ipynb``), sorted."""
    return sorted(p for p in Path(folder).glob("*.ipynb") if not p.name.startswith("."))


def write_student_copies(out_dir: str | Path, notebooks_dir: str | Path) -> list[StudentCopy]:
    """Write a student copy of every notebook in ``notebooks_dir`` into ``out_dir``."""
    src_dir, dst_dir = Path(notebooks_dir), Path(out_dir)
    found = notebooks_in(src_dir)
    if not found:
        raise FileNotFoundError(f"no notebooks (*.ipynb) in {src_dir.resolve()}; pass --notebooks DIR")
    if dst_dir.resolve() == src_dir.resolve():
        raise ValueError(f"the output folder {dst_dir} is the notebooks folder itself; choose another, e.g. student_copies/")
    dst_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for path in found:
        nb = nbformat.read(path, as_version=4)
        student, stubbed = make_student_notebook(nb)
        target = dst_dir / path.name
        nbformat.write(student, target)
        results.append(StudentCopy(path, target, stubbed))
    for extra in ("LICENSE.md",):
        if (src_dir / extra).is_file():
            (dst_dir / extra).write_bytes((src_dir / extra).read_bytes())
    return results


def verify_student_copy(path: str | Path, timeout_s: int = 300) -> list[str]:
    """Run a student copy in a fresh kernel; return the problems found (empty when all is well).

    A problem is a cell that raised, or a stubbed exercise cell whose checker did not answer
    with "not answered yet".
    """
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if errors:
            why = (" (a checker or a later cell computes with an answer that is still ...; it should "
                   "return trnsim.check.not_answered for None/...)") if "ellipsis" in errors[0].evalue else ""
            problems.append(f"{path.name} cell {index}: {errors[0].ename}: {errors[0].evalue}{why}")
            continue
        if cell.source.startswith(STUB_HEADER):
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            if NOT_ANSWERED not in text and not (FAIL_MARK in text and "hint" in text):
                problems.append(f"{path.name} cell {index}: the stub ran but its checker gave no "
                                f"'{NOT_ANSWERED}' or failing hint (got {text.strip()[:120]!r})")
    return problems
