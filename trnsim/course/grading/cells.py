"""One exercise cell -> nbgrader cells: a solution cell and its autograder test cells.

An exercise in the course is a code cell tagged ``solution`` that computes the
answers and prints what a checker (``check_...``) says about them::

    from trnsim.course.exercises.foundations import check_flops_per_cycle
    flops_per_cycle = 128 * 128 * 2   # your answer
    print(check_flops_per_cycle(flops_per_cycle))

:func:`convert_exercise` rewrites it the nbgrader way:

* the **solution cell** keeps the imports and the givens (values the checker or later
  cells read that are not computed from an answer), sets every answer to ``...``
  (``flops_per_cycle = ...  # your answer``: a blank stays a "not answered yet" hint,
  never a ``NameError``), and puts the working between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION``. A function or class defined in the cell (a kernel) keeps its
  signature and docstring; its body is the solution region;
* each **checker call** that reads an answer becomes a test cell
  ``require(check_flops_per_cycle(flops_per_cycle))`` (:func:`trnsim.course.check.require`):
  it prints the tick when right and raises ``AssertionError`` with the checker's
  hints when not. An answer written inline in the call (marked ``# your answer``)
  becomes a named answer first, e.g. ``print(check_bound(..., "memory"))`` ->
  ``bound_answer = "memory"`` in the solution and ``require(check_bound(..., bound_answer))``.

Which names are answers: those assigned on lines marked ``# your answer``; when a cell
marks none, the names this cell computes that the checker calls read. A marked line
that only names a function defined in the cell (``answer = relu_kernel``) is kept as
it is: the function's body is the answer.

Pure functions of source text; :mod:`trnsim.course.grading.notebook` applies them to notebooks.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

ANSWER_MARK = re.compile(r"#\s*your answers?\b", re.IGNORECASE)
CHECKER_PREFIX = "check_"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
PLACEHOLDER_COMMENT = "# your answer"
TEST_HEADER = ("# Autograder test (read-only in the student version): run it to check the answer above;\n"
               "# when it is not right yet, the error message says what to fix.")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_KEPT_TYPES = (*_DEFS, ast.Import, ast.ImportFrom)  # always outside the region (a def's body is a region)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class GradingError(ValueError):
    """An exercise cell that cannot be turned into nbgrader cells; the message says why and how to fix it."""


@dataclass(frozen=True)
class TestCell:
    """One autograder test: the checker it calls and the test cell's source."""

    checker: str
    source: str


@dataclass(frozen=True)
class Exercise:
    """The nbgrader form of one exercise cell."""

    solution_source: str
    tests: tuple[TestCell, ...]
    answers: tuple[str, ...]


@dataclass
class _Stmt:
    node: ast.stmt
    start: int          # first line (1-based) of the statement itself, decorators included
    end: int            # last line
    lead: int           # first line of the comments/blank lines that precede it (travel with it)
    stored: set[str]
    read: set[str]


def checker_name(call: ast.Call) -> str:
    """``check_x`` for a call of ``check_x(...)`` or ``mod.check_x(...)``, else ``""``."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name if name.startswith(CHECKER_PREFIX) else ""


def checker_calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and checker_name(n)]


def _walk_scope(node: ast.AST):
    """``ast.walk`` that does not enter nested scopes (function bodies, comprehensions, lambdas)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, _SCOPES):
                todo.append(child)


def _stored_in_order(stmt: ast.stmt) -> list[str]:
    """Names an assignment binds, in the order they are written (``a, b = ...`` -> a, b)."""
    found = sorted((n.lineno, n.col_offset, n.id) for n in _walk_scope(stmt)
                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return list(dict.fromkeys(name for _, _, name in found))


def _stored(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, _DEFS):
        return {stmt.name}
    names = {n.id for n in _walk_scope(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return names


def names_read(node: ast.AST) -> set[str]:
    """Every name a statement (or a cell's tree) reads, nested scopes included."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def cell_names_read(source: str) -> set[str]:
    """Names a cell reads (empty when it is not plain Python, e.g. it has IPython magics)."""
    try:
        return names_read(ast.parse(source))
    except SyntaxError:
        return set()


def _split(source: str, where: str) -> tuple[list[str], list[_Stmt]]:
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise GradingError(f"{where}: the exercise cell is not plain Python ({err.msg}, line {err.lineno}); "
                           "move IPython magics (%, !) out of cells tagged 'solution'") from None
    lines = source.split("\n")
    stmts: list[_Stmt] = []
    prev_end = 0
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if start <= prev_end:
            raise GradingError(f"{where}: two statements share line {start}; put one statement per line")
        stmts.append(_Stmt(node, start, node.end_lineno, prev_end + 1, _stored(node), names_read(node)))
        prev_end = node.end_lineno
    return lines, stmts


def _text(lines: list[str], first: int, last: int) -> list[str]:
    return lines[first - 1:last]


def _answer_args(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """The inline answers of a marked checker call: keywords named ``answer...``; else every
    keyword when the call has only keywords; else the last positional argument."""
    named = [k for k in call.keywords if k.arg and "answer" in k.arg]
    if named:
        return named
    if not call.args:
        return [k for k in call.keywords if k.arg]
    return [call.args[-1]] if not isinstance(call.args[-1], ast.Starred) else []


def _unique(name: str, taken: set[str]) -> str:
    out, n = name, 2
    while out in taken:
        out, n = f"{name}_{n}", n + 1
    taken.add(out)
    return out


def _call_text(source: str, call: ast.Call, replaced: dict[int, str]) -> str:
    def seg(node: ast.AST) -> str:
        return replaced.get(id(node)) or ast.get_source_segment(source, node) or ast.unparse(node)

    parts = [seg(a) for a in call.args]
    for k in call.keywords:
        value = replaced.get(id(k)) or seg(k.value)
        parts.append(f"{k.arg}={value}" if k.arg else f"**{value}")
    return f"{seg(call.func)}({', '.join(parts)})"


def _body_region(lines: list[str], stmt: _Stmt, where: str) -> list[str]:
    """The text of a ``def``/``class`` with its body (after any docstring) as a solution region."""
    node = stmt.node
    body = list(node.body)
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    first = min([body[0].lineno] + [d.lineno for d in getattr(body[0], "decorator_list", [])])
    if first == node.lineno:
        raise GradingError(f"{where}: the body of {node.name} is on its def line; write it on its own lines")
    indent = " " * body[0].col_offset
    return (_text(lines, stmt.lead, first - 1) + [indent + BEGIN_SOLUTION]
            + _text(lines, first, stmt.end) + [indent + END_SOLUTION])


def convert_exercise(source: str, used_later: frozenset[str] | set[str] = frozenset(),
                     taken_names: frozenset[str] | set[str] = frozenset(), where: str = "cell") -> Exercise:
    """The nbgrader form of an exercise cell's ``source`` (see the module docstring).

    ``used_later``: names later cells of the notebook read (givens they need stay outside
    the solution region). ``taken_names``: names the notebook already uses (a name made
    for an inline answer avoids them). ``where`` names the cell in error messages.
    Raises :class:`GradingError` for a cell that is not plain Python.
    """
    lines, stmts = _split(source, where)
    taken = set(taken_names) | {n for s in stmts for n in s.stored | s.read}
    defs = {s.node.name: s for s in stmts if isinstance(s.node, _DEFS)}

    def marked(s: _Stmt) -> bool:
        return any(ANSWER_MARK.search(line) for line in _text(lines, s.start, s.end))

    def is_checker_expr(s: _Stmt) -> bool:
        return isinstance(s.node, ast.Expr) and bool(checker_calls(s.node))

    def is_alias(s: _Stmt) -> bool:  # answer = relu_kernel: the function itself is the answer
        n = s.node
        return isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in defs

    # Inline answers in marked checker calls become named answers.
    inline: dict[int, list[tuple[str, str]]] = {}      # statement index -> [(name, value text)]
    replaced: dict[int, str] = {}                      # id(arg node) -> the name that replaces it
    for i, s in enumerate(stmts):
        if is_checker_expr(s) and marked(s):
            for call in checker_calls(s.node):
                stem = checker_name(call)[len(CHECKER_PREFIX):]
                for arg in _answer_args(call):
                    value = arg.value if isinstance(arg, ast.keyword) else arg
                    base = arg.arg if isinstance(arg, ast.keyword) and arg.arg != "answer" else f"{stem}_answer"
                    name = _unique(base, taken)
                    replaced[id(arg)] = name
                    inline.setdefault(i, []).append(
                        (name, ast.get_source_segment(source, value) or ast.unparse(value)))

    answers: list[str] = []
    for i, s in enumerate(stmts):
        if marked(s) and not is_checker_expr(s) and not is_alias(s) and not isinstance(s.node, _KEPT_TYPES):
            answers += [n for n in _stored_in_order(s.node) if n not in answers]
        answers += [name for name, _ in inline.get(i, []) if name not in answers]
    if not any(marked(s) for s in stmts):  # no marks: the answers are what the checkers read that this cell computes
        computed = {n for s in stmts if not isinstance(s.node, _KEPT_TYPES) for n in s.stored}
        for s in stmts:
            if is_checker_expr(s):
                for call in checker_calls(s.node):
                    args = [*call.args, *(k.value for k in call.keywords)]
                    answers += sorted({n for a in args for n in names_read(a) if n in computed} - set(answers))
    answer_set = set(answers)
    aliases = {n for s in stmts if is_alias(s) for n in s.stored}
    graded = {i for i, s in enumerate(stmts)
              if is_checker_expr(s) and (i in inline or s.read & (answer_set | set(defs) | aliases))}

    # Kept (outside the region): imports, defs (their bodies become regions), aliases, and the
    # givens that the graded checkers or later cells read; other work goes into the region.
    needed = set(used_later)
    for i in graded:
        for call in checker_calls(stmts[i].node):
            needed |= names_read(call)
    region: set[int] = set()
    kept: set[int] = set()
    for i in range(len(stmts) - 1, -1, -1):
        s = stmts[i]
        if i in graded:
            continue
        if isinstance(s.node, _KEPT_TYPES) or is_alias(s):
            kept.add(i)
            needed |= s.read
        elif s.stored & answer_set or s.read & answer_set or (s.stored and not s.stored & needed):
            region.add(i)  # an answer, reads one, or a working step that nothing outside reads
        else:
            kept.add(i)    # a given (its inputs are needed too), or a statement that assigns nothing
            if s.stored or is_checker_expr(s):  # a checker shown failing on purpose keeps its inputs too
                needed |= s.read
    # A kept statement that reads a name only the region computes moves into the region too.
    while True:
        only_in_region = ({n for i in region for n in stmts[i].stored}
                          - {n for i in kept for n in stmts[i].stored})
        moving = {i for i in kept if not isinstance(stmts[i].node, _KEPT_TYPES) and stmts[i].read & only_in_region}
        if not moving:
            break
        kept -= moving
        region |= moving

    out: list[str] = []
    for i, s in enumerate(stmts):
        if i in kept:
            out += _body_region(lines, s, where) if isinstance(s.node, _DEFS) else _text(lines, s.lead, s.end)
    trailing = lines[stmts[-1].end:] if stmts else lines
    body: list[str] = []
    for i, s in enumerate(stmts):
        if i in region:
            body += _text(lines, s.lead, s.end)
        for name, value in inline.get(i, []):
            body.append(f"{name} = {value}")
    while out and not out[-1].strip():
        out.pop()
    if answers:
        if out:
            out.append("")
        out += [f"{name} = ...  {PLACEHOLDER_COMMENT}" for name in answers]
    trailing = [t for t in trailing if t.strip()]  # comments after the last statement go with the working
    while body and not body[0].strip():
        body.pop(0)
    if body:
        out += [BEGIN_SOLUTION, *body, *trailing, END_SOLUTION]
    else:
        out += trailing

    tests = []
    for i in sorted(graded):
        for call in checker_calls(stmts[i].node):
            text = _call_text(source, call, replaced)
            tests.append(TestCell(checker_name(call),
                                  f"{TEST_HEADER}\nfrom trnsim.course.check import require\n\nrequire({text})"))
    return Exercise("\n".join(out).rstrip("\n"), tuple(tests), tuple(answers))
