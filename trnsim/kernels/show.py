"""The source of a reference kernel as a learner reads it: the ``@nki.jit`` line and the body, docstring left out
(it explains the kernel in prose; notebooks print the code next to their own explanation)."""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any


def source(kernel: Any, *, docstring: bool = False) -> str:
    """Source text of ``kernel`` (a ``@nki.jit`` kernel or a plain function), dedented; without its docstring
    unless ``docstring`` is true. Raises TypeError for anything that is not a function defined in a file."""
    func = getattr(kernel, "func", kernel)
    if not inspect.isfunction(func):
        raise TypeError(f"source() takes a kernel or a function, got {type(kernel).__name__}")
    text = textwrap.dedent(inspect.getsource(func))
    if docstring:
        return text
    node = ast.parse(text).body[0]
    first = node.body[0] if node.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return text
    lines = text.splitlines(keepends=True)
    # drop the docstring's lines (1-based, inclusive), keep everything else as written
    return "".join(lines[:first.lineno - 1] + lines[first.end_lineno:])
