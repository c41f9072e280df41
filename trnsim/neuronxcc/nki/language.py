"""Beta 1 ``nki.language`` (``import trnsim.neuronxcc.nki.language as nl``): the NKI 0.6 language plus the
names NKI 0.2 removed (``arange``, ``mgrid``, ``par_dim``, ``loop_reduce``, ``static_cast``).

Everything else is :mod:`trnsim.nki.language`; kernels launched through :mod:`trnsim.neuronxcc.nki` run
with the Beta 1 rules (``mask=``, block dimensions, value-returning instructions, loop-scoped tiles).
"""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language import *  # noqa: F401,F403
from trnsim.nki.language import __all__ as _nl_all
from trnsim.nki.dtypes import (bfloat16, bool_, float8_e4m3, float8_e4m3fn, float8_e5m2, float16,  # noqa: F401
                               float32, int8, int16, int32, tfloat32, uint8, uint16, uint32)
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import IndexExpr, MGrid, ParDim


def par_dim(n: int) -> ParDim:
    """Mark the partition dimension of an on-chip tensor shape (Beta 1 block dimensions)."""
    return ParDim(n)


mgrid = MGrid()


def arange(start: int, stop: int | None = None, step: int = 1) -> IndexExpr:
    """1-D index vector; reshape with ``[:, None]`` (partition) / ``[None, :]`` (free) before indexing."""
    if stop is None:
        start, stop = 0, start
    if int(step) == 0:
        raise KernelError("err_invalid_range", "nl.arange step cannot be 0", "use a non-zero step, e.g. nl.arange(0, n, 1)")
    n = len(range(int(start), int(stop), int(step)))
    return IndexExpr(1, 0, int(start), int(step), n)


class fp32:
    """Beta 1 ``nl.fp32``: the limits of float32 (``nl.fp32.min`` is the lowest finite value, the usual
    "minus infinity" fill of a masked maximum)."""
    min = float(np.finfo(np.float32).min)
    max = float(np.finfo(np.float32).max)


def finfo(dtype):
    """Beta 1 ``nl.finfo(dtype)``: machine limits of a floating-point NKI dtype, as ``numpy.finfo`` gives them
    (``.max``, ``.min``, ``.eps``, ``.tiny``, ``.bits``, ...; bfloat16 and the fp8 formats through ml_dtypes, which
    stores them as the hardware does)."""
    import ml_dtypes
    try:
        name = _dt.dtype_name(dtype)
    except (KernelError, TypeError, ValueError, KeyError):
        raise KernelError("err_unsupported_dtype", f"nl.finfo({dtype!r}): not an NKI dtype",
                          "pass a float dtype such as nl.float32 or nl.bfloat16") from None
    if not _dt.is_float(name) or name == "tfloat32" or name in _dt.PACKED:
        raise KernelError("err_unsupported_dtype", f"nl.finfo({name}): finfo describes the IEEE-style float types "
                          "float32, float16, bfloat16 and the fp8 formats",
                          "for integer limits use numpy.iinfo; tfloat32 is float32 with 10 mantissa bits")
    return ml_dtypes.finfo(_dt.storage_dtype(name))


def rand(shape, dtype=float32, **kwargs):
    """Beta 1 ``nl.rand(shape, dtype=nl.float32, ...)``: uniform values on [0, 1) (NKI 0.6 requires dtype)."""
    from trnsim.nki.language import rand as _rand
    return _rand(shape, dtype, **kwargs)


def shared_identity_matrix(n, dtype=uint8, **kwargs):
    """Beta 1 ``nl.shared_identity_matrix(n, dtype=nl.uint8)``: an ``n`` x ``n`` identity held in shared HBM (a
    constant loaded with the model), read with ``nl.load`` (NKI 0.6 returns an SBUF tile instead)."""
    if kwargs:
        raise KernelError("err_invalid_arguments", f"nl.shared_identity_matrix got unexpected arguments {sorted(kwargs)}",
                          "call nl.shared_identity_matrix(n, dtype=...)")
    n = int(n)
    if n < 1:
        raise KernelError("err_invalid_shape", f"shared_identity_matrix(n={n}) needs n >= 1", "pass n >= 1")
    from trnsim.nki.language.constants import shared_constant
    return shared_constant(np.eye(n, dtype=_dt.storage_dtype(_dt.dtype_name(dtype))))


def atomic_rmw(dst, value, op, *, mask=None):
    """Beta 1 ``nl.atomic_rmw(dst, value, op)``: ``dst = op(dst, value)`` on HBM ``dst`` (often indexed by a tile of
    row numbers, ``t[idx_tile, i_f]``), as one read-modify-write DMA; rows that name the same HBM row all land.
    NKI 0.6 removed it: a read-modify-write DMA is ``nisa.dma_compute``."""
    from trnsim.nki.isa.dma import _dma_copy_beta1
    from trnsim.nki.context import as_view
    from trnsim.nki.isa.common import is_tile
    for v, arg in ((dst, "dst"), (value, "value")):
        if not is_tile(v):
            raise KernelError("err_expected_tile", f"operand '{arg}' of nl.atomic_rmw must be a tensor or tile, got "
                              f"{type(v).__name__}", "pass an HBM tensor (or an indirect access of one) as dst and an "
                              "SBUF tile as value")
    if as_view(dst).tensor.buffer != "hbm":
        raise KernelError("err_unsupported_memory", "nl.atomic_rmw updates an HBM tensor",
                          "pass an HBM tensor (or an indirect access of one) as dst")
    return _dma_copy_beta1(dst=dst, src=value, dst_rmw_op=op, mask=mask)


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kwargs):
    """Beta 1 ``nl.loop_reduce(x, op, loop_indices, dtype=None, mask=None)``: reduce ``x`` into the destination
    over loop iterations. "The destination tile is also the rhs input to ``op``": ``acc[...] = nl.loop_reduce(x,
    op=np.add, loop_indices=[k])`` is ``acc[...] = nisa.tensor_tensor(data1=acc, data2=x, op=np.add)`` (the
    reference's own equivalent), the destination initialised before the loop (``nl.zeros``). The destination is
    read from the statement the call sits in (Beta 1 traced the kernel's source; so does this), so the call must
    be the right-hand side of an assignment. ``loop_indices`` only guides the compiler's loop optimisations.
    ``dtype`` defaults to ``x``'s; ``name=`` is accepted and ignored."""
    kwargs.pop("name", None)
    if kwargs:
        raise KernelError("err_invalid_arguments", f"nl.loop_reduce got unexpected arguments {sorted(kwargs)}",
                          "call nl.loop_reduce(x, op, loop_indices, dtype=..., mask=...)")
    if loop_indices is None:
        raise KernelError("err_invalid_arguments", "nl.loop_reduce needs loop_indices (the loop indices the "
                          "reduction runs over)", "pass loop_indices=[k] with k the nl.affine_range index")
    from trnsim.neuronxcc.nki import isa as _nisa
    from trnsim.nki.isa.common import is_tile
    if not is_tile(x):
        raise KernelError("err_expected_tile", f"operand 'x' of nl.loop_reduce must be a tile, got {type(x).__name__}",
                          "pass the tile to reduce (e.g. the PSUM tile of a matmul accumulation group)")
    dst, by_name = _assignment_target_value("loop_reduce")
    if dtype is None:
        dtype = x.dtype
    res = _nisa.tensor_tensor(dst, x, op=op, dtype=dtype, mask=mask)
    if by_name:
        # ``b = nl.loop_reduce(a, ...)`` (the reference's form): b keeps its tile, which now holds the reduction
        # (rebinding b to a tile made inside the loop would end with the iteration)
        dst[...] = res
        return dst
    return res


def _assignment_target_value(fn_name: str):
    """The current value of the assignment target of the kernel statement calling ``nl.<fn_name>`` (``acc`` in
    ``acc = nl.f(...)``, the view ``acc[i, :]`` in ``acc[i, :] = nl.f(...)``), evaluated in the kernel's frame, and
    whether the target is a plain name."""
    import ast
    import linecache

    from trnsim.nki.rules import user_frame
    f = user_frame()
    api = f"nl.{fn_name}"
    how = (f"write it as the right-hand side of an assignment whose target is the reduction's destination, "
           f"initialised before the loop: acc = nl.zeros(...); ...; acc[...] = {api}(x, op=np.add, loop_indices=[k])")
    if f is None:
        raise KernelError("err_unsupported_api", f"{api} is called outside a kernel", how)
    fname, line = f.f_code.co_filename, f.f_lineno
    tree = _parsed_source(fname, linecache.getlines(fname, f.f_globals))
    stmt = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and \
                    node.lineno <= line <= (node.end_lineno or node.lineno):
                calls = [c for c in ast.walk(node.value) if isinstance(c, ast.Call) and
                         (getattr(c.func, "attr", None) == fn_name or getattr(c.func, "id", None) == fn_name)]
                if calls and node.value in calls:
                    stmt = node
    if stmt is None:
        raise KernelError("err_unsupported_api", f"{api} must be the whole right-hand side of an assignment: its "
                          "destination (the assignment's target) is also its other input", how)
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if len(targets) != 1 or isinstance(targets[0], (ast.Tuple, ast.List, ast.Starred)):
        raise KernelError("err_unsupported_api", f"{api} assigns to one destination, got "
                          f"`{ast.unparse(stmt)}`", how)
    target = targets[0]
    load = ast.fix_missing_locations(ast.Expression(_as_load(target)))
    try:
        value = eval(compile(load, fname, "eval"), f.f_globals, dict(f.f_locals))
        return value, isinstance(target, ast.Name)
    except NameError:
        base = ast.unparse(target).split("[")[0]
        raise KernelError("err_unsupported_api", f"the destination `{ast.unparse(target)}` of {api} is not defined "
                          "before the call: the reduction adds into it", "initialise it before the loop, e.g. "
                          f"{base} = nl.zeros(shape, dtype=nl.float32, buffer=nl.sbuf)") from None


def _as_load(node):
    import ast
    import copy
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return node


_PARSED: dict = {}


def _parsed_source(fname: str, lines: list[str]):
    """The module AST of a kernel's source file (cached by file name and text; None if it has no source)."""
    import ast
    text = "".join(lines)
    if not text:
        return None
    key = (fname, hash(text))
    tree = _PARSED.get(key)
    if tree is None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        if len(_PARSED) > 64:
            _PARSED.clear()
        _PARSED[key] = tree
    return tree


def static_cast(x, dtype):
    """Host-side helper: round a numpy array to an NKI dtype (returns numpy)."""
    return _dt.cast(np.asarray(x, dtype=np.float32), _dt.dtype_name(dtype)).astype(_dt.storage_dtype(
        _dt.dtype_name(dtype)))



__all__ = list(_nl_all) + ["par_dim", "mgrid", "arange", "loop_reduce", "static_cast", "fp32", "finfo",
                          "shared_identity_matrix", "atomic_rmw"]
