"""The source of a reference kernel as a learner reads it: the ``@nki.jit`` line and the body, docstring left out
(it explains the kernel in prose; notebooks print the code next to their own explanation)."""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any


def source(kernel: Any, *, docstring: bool = False) -> str:
    """Source text of ``kernel`` (a ``@nki.jit`` kernel or a plain function), dedented; without its docstring
    unless ``docstring`` is true. The docstring is left in when it shares a line with other code (a one-line
    ``def``) or is the whole body (the function would not parse without it). Raises TypeError for anything that
    is not a function, or whose source is not available (defined in ``exec`` or at an interactive prompt)."""
    from trnsim.nki.runtime import Kernel

    func = kernel.func if isinstance(kernel, Kernel) else kernel
    if not inspect.isfunction(func) or func.__name__ == "<lambda>":
        raise TypeError(f"source() takes a kernel or a function defined with def, got {type(kernel).__name__}")
    try:
        text = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise TypeError(f"source of {func.__name__} is not available ({exc}): it was not defined in a file") from None
    if docstring:
        return text
    node = ast.parse(text).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(node.body) < 2:
        return text
    first = node.body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return text
    lines = text.splitlines(keepends=True)
    start, end = first.lineno - 1, first.end_lineno          # 0-based first line, exclusive end
    alone = (lines[start][:first.col_offset].strip() == "" and lines[end - 1][first.end_col_offset:].strip() == ""
             and node.body[1].lineno > first.end_lineno)
    if not alone:
        return text
    return "".join(lines[:start] + lines[end:])
