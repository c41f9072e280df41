"""``nki.language``: the classic NKI tile-level API (``import trnsim.nki.language as nl``).

Each call lowers to one ISA instruction (see :mod:`trnsim.nki.isa`) as described in SDK-legacy
``general/nki/api/nki/language/__init__.py``: ``nl.load``/``nl.store`` -> ``dma_copy``;
``nl.matmul`` -> ``nc_matmul``; unary math -> ScalarE ``activation``; binary ops -> VectorE
``tensor_tensor`` (two tiles) or ``tensor_scalar`` (a tile and a scalar / [P, 1] vector);
reductions -> ``tensor_reduce``; ``nl.copy`` -> ``tensor_copy``; ``nl.transpose`` -> ``nc_transpose``.
"""
from __future__ import annotations

import builtins
from weakref import ref as _weakref

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki import isa as _isa
from trnsim.nki.dtypes import (bfloat16, bool_, float8_e4m3, float8_e4m3fn, float8_e5m2, float16,  # noqa: F401
                               float32, int8, int16, int32, tfloat32, uint8, uint16, uint32)
from trnsim.nki.rules import KernelError, fmt_shape, limits_for
from trnsim.nki.runtime import as_view, current
from trnsim.nki.tensors import Broadcast, DynSlice, IndexExpr, MGrid, ParDim, Tensor, View
from trnsim.nki.tensors import check_bounds as _check_bounds


# ----------------------------------------------------------------------------- buffers

class _Buffer:
    __slots__ = ("name", "kind")

    def __init__(self, name: str, kind: str):
        self.name, self.kind = name, kind

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = _Buffer("sbuf", "sbuf")
psum = _Buffer("psum", "psum")
hbm = _Buffer("hbm", "private")
private_hbm = _Buffer("private_hbm", "private")
shared_hbm = _Buffer("shared_hbm", "shared")


def par_dim(n: int) -> ParDim:
    """Mark the partition dimension of an on-chip tensor shape."""
    return ParDim(n)


def ds(start: int, size: int, step: int = 1) -> DynSlice:
    """Slice of ``size`` elements starting at ``start``."""
    return DynSlice(start, size, step)


mgrid = MGrid()


def arange(start: int, stop: int | None = None, step: int = 1) -> IndexExpr:
    """1-D index vector; reshape with ``[:, None]`` (partition) / ``[None, :]`` (free) before indexing."""
    if stop is None:
        start, stop = 0, start
    n = len(range(int(start), int(stop), int(step)))
    return IndexExpr(1, 0, int(start), int(step), n)


# ----------------------------------------------------------------------------- tile_size

class _TileSize:
    """``nl.tile_size``: per-target tile constants (current kernel's target; trn1 outside a kernel)."""

    def _lim(self):
        from trnsim.nki import runtime
        ctx = runtime._CURRENT
        return ctx.limits if ctx is not None else limits_for("trn1")

    @property
    def pmax(self) -> int:
        return self._lim().pmax

    @property
    def psum_fmax(self) -> int:
        return self._lim().psum_fmax

    @property
    def psum_bank_fmax(self) -> int:
        return self._lim().psum_fmax

    @property
    def psum_num_banks(self) -> int:
        return self._lim().psum_banks

    @property
    def gemm_stationary_fmax(self) -> int:
        return self._lim().gemm_stationary_fmax

    @property
    def gemm_moving_fmax(self) -> int:
        return self._lim().gemm_moving_fmax

    @property
    def bn_stats_fmax(self) -> int:
        return self._lim().bn_stats_fmax

    @property
    def total_available_sbuf_size(self) -> int:
        return self._lim().sbuf_bytes_per_partition


tile_size = _TileSize()


# ----------------------------------------------------------------------------- SPMD / loops

def program_id(axis: int = 0) -> int:
    """Index of this SPMD program instance along ``axis``."""
    ctx = current()
    if axis >= len(ctx.grid):
        if not ctx.grid and axis == 0:
            return 0
        raise KernelError("err_invalid_axis", f"program_id({axis}) but the launch grid is {ctx.grid}",
                          "launch with kernel[g0, g1, ...](...) with enough dimensions")
    return ctx.program_id[axis]


def num_programs(axes: int | None = None):
    """Size of the SPMD grid along ``axes`` (all axes as a tuple when None)."""
    ctx = current()
    g = ctx.grid or (1,)
    if axes is None:
        return g if len(g) > 1 else g[0]
    if isinstance(axes, (tuple, list)):
        return tuple(g[a] for a in axes)
    if axes >= len(g):
        raise KernelError("err_invalid_axis", f"num_programs({axes}) but the launch grid is {ctx.grid}",
                          "use an axis of the grid")
    return g[axes]


def program_ndim() -> int:
    return len(current().grid)


def spmd_dim(*args):
    return int(np.prod([int(a) for a in args]))


def nc(n: int) -> int:
    return int(n)


_LOOP_UID = [0]


def _loop(kind: str, args):
    r = range(*[int(a) for a in args])
    ctx = current()
    _LOOP_UID[0] += 1
    uid = _LOOP_UID[0]
    try:
        for i in r:
            ctx.push_scope(kind, uid, i)
            try:
                yield i
            finally:
                ctx.pop_scope()
    finally:
        ctx.forget_loop(uid)


def affine_range(*args, **kwargs):
    """Parallel loop (no loop-carried dependency except associative accumulation). Unrolled at trace time;
    tiles created in an iteration are released at its end."""
    return _loop("affine_range", args)


def sequential_range(*args, **kwargs):
    """Loop with a loop-carried dependency. Unrolled at trace time."""
    return _loop("sequential_range", args)


def static_range(*args, **kwargs):
    """Fully unrolled loop."""
    return _loop("static_range", args)


# ----------------------------------------------------------------------------- creation

def _shape_pdim(shape) -> tuple[tuple[int, ...], int]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(shape)
    pd = [k for k, s in enumerate(shape) if isinstance(s, ParDim)]
    return tuple(int(s) for s in shape), (pd[0] if pd else 0)


def _buf(buffer) -> tuple[str, str]:
    if buffer is None:
        return "sbuf", "local"
    if isinstance(buffer, _Buffer):
        return ("hbm", buffer.kind) if buffer.kind in ("private", "shared") else (buffer.kind, "local")
    if isinstance(buffer, str) and buffer in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm"):
        return {"sbuf": ("sbuf", "local"), "psum": ("psum", "local"), "hbm": ("hbm", "private"),
                "shared_hbm": ("hbm", "shared"), "private_hbm": ("hbm", "private")}[buffer]
    raise KernelError("err_unsupported_buffer", f"unknown buffer {buffer!r}",
                      "use nl.sbuf, nl.psum, nl.hbm, nl.private_hbm or nl.shared_hbm")


def ndarray(shape, dtype, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    """Allocate an uninitialised tensor (SBUF by default; floats read as NaN until written)."""
    return _alloc(shape, dtype, buffer, name, "uninit", "ndarray")


_ALLOC_ARGS: dict = {}   # (shape, dtype, buffer) -> (shape, pdim, buffer name, kind, dtype name), plain-int shapes


def _alloc_args(shape, dtype, buffer):
    """Normalised (shape, pdim, buffer name, kind, dtype name) of an allocation call (memoised when the shape is a
    tuple of plain ints: ``nl.par_dim`` entries compare equal to ints, so they never use the memo)."""
    key = None
    if type(shape) is tuple:
        for s in shape:
            if type(s) is not int:
                break
        else:
            key = (shape, dtype, buffer)
            try:
                hit = _ALLOC_ARGS.get(key)
            except TypeError:
                key = hit = None
            if hit is not None:
                return hit
    shape, pd = _shape_pdim(shape)
    bname, kind = _buf(buffer)
    dname = _dt.dtype_name(dtype)
    res = (shape, pd, bname, kind, dname)
    if key is not None and len(_ALLOC_ARGS) < 4096:
        _ALLOC_ARGS[key] = res
    return res


def _alloc(shape, dtype, buffer, name, fill, api) -> Tensor:
    ctx = current()
    shape, pd, bname, kind, dname = _alloc_args(shape, dtype, buffer)
    if bname == "hbm":
        if fill != "uninit":
            raise KernelError("err_hbm_tensor_with_init_value_not_supported",
                              f"HBM tensor {name or api}{fmt_shape(shape)} cannot be created with an init value",
                              "create it with nl.ndarray(..., buffer=nl.shared_hbm) and store data into it")
        if kind == "shared":
            if len(ctx.scopes) > 1:
                raise KernelError("err_shared_hbm_must_in_kernel_level",
                                  "nl.shared_hbm tensors must be allocated at kernel level, not inside a loop",
                                  "move the nl.ndarray(..., buffer=nl.shared_hbm) call before the loops")
            pos = ctx.shared_pos
            ctx.shared_pos += 1
            if pos < len(ctx.shared):
                t = ctx.shared[pos]
                if t.shape != shape or t.dtype_name != dname:
                    raise KernelError("err_spmd_shared_mismatch",
                                      f"SPMD instances allocate different shared_hbm tensors ({fmt_shape(t.shape)} "
                                      f"{t.dtype_name} vs {fmt_shape(shape)} {dname})",
                                      "every program instance must allocate the same shared outputs")
                return t
        t = Tensor(ctx, shape, dname, "hbm", name, kind="shared" if kind == "shared" else "private")
        t.depth = len(ctx.loops)
        t.alloc_id = ctx.new_alloc(name, "hbm", shape, dname, t.bytes_per_partition, 1, kind == "shared")
        if ctx.numerics:
            t.data = np.full(shape, np.nan if _dt.is_float(dname) else 0, dtype=_dt.storage_dtype(dname))
        if kind == "shared":
            ctx.shared.append(t)
        return t
    t = ctx.new_tensor(shape, dname, bname, name, pdim=pd, fill=fill, api=api)
    if fill != "uninit" and bname == "sbuf":
        _isa._memset_into(t.full_view(), float(fill))
    return t


def zeros(shape, dtype, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    """Allocate a zero-filled tensor (SBUF memset; a PSUM accumulator's zero fill is folded into its
    first matmul, as the compiler does, and records no instruction)."""
    return _alloc(shape, dtype, buffer, name, 0.0, "zeros")


def ones(shape, dtype, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    return _alloc(shape, dtype, buffer, name, 1.0, "ones")


def full(shape, fill_value, dtype, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    return _alloc(shape, dtype, buffer, name, float(fill_value), "full")


def zeros_like(a, dtype=None, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def empty_like(a, dtype=None, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def ones_like(a, dtype=None, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    return ones(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def full_like(a, fill_value, dtype=None, *, buffer=None, name: str = "", **kwargs) -> Tensor:
    return full(a.shape, fill_value, dtype or a.dtype, buffer=buffer, name=name)


# ----------------------------------------------------------------------------- memory

def load(src, *, mask=None, dtype=None, **kwargs) -> Tensor:
    """Load an HBM tensor region into a new SBUF tile (partition dim = first dim of the access)."""
    ctx = current()
    s = as_view(src)
    if not isinstance(s, (View,)) or s.tensor.buffer != "hbm":
        buf = s.tensor.buffer if hasattr(s, "tensor") else type(src).__name__
        raise KernelError("err_unsupported_memory",
                          f"Expected operand 'src' of 'load' to be in address space 'hbm', but got a tile in "
                          f"'{buf}' instead.",
                          "nl.load reads kernel inputs (HBM); use nl.copy for on-chip copies")
    shape = tuple(s.shape)
    if len(shape) < 2:
        shape = shape + (1,) if shape else (1, 1)
    st = s.tensor
    dname = _dt.dtype_name(dtype) if dtype is not None else st.dtype_name
    t = ctx.new_tensor(shape, dname, "sbuf", api="load", temp=True)
    if mask is None and not ctx.numerics and dname == st.dtype_name and len(s.shape) >= 2:
        # timing-only, unmasked, uncast load: the same checks and record as _isa._dma(t.full_view(), s, None,
        # "load"), without its general mask / cast / numerics handling
        if s.adv is not None or s.ranges is not st._full_ranges:
            _check_bounds(s, None)
        ctx.last_mask = None
        parts = shape[0]
        free = 1
        for x in shape[1:]:
            free *= x
        nbytes = parts * free * st.itemsize
        ctx.emit("dma_copy", "dma", (s,), (t.full_view(),),
                 {"api": "load", "partitions": parts, "bytes_per_partition": nbytes // builtins.max(1, parts),
                  "src": "hbm", "dst": "sbuf"}, 0, nbytes, free, parts)
        ctx.last_out = _weakref(t)
        ctx.last_out_index = len(ctx.instructions) - 1
        ctx.last_vals = None
        return t
    _isa._dma(t.full_view(), s, mask, "load")
    mask_written = ctx.last_mask
    _isa._finish(ctx, t, None)
    ctx.last_mask = mask_written
    return t


def load_transpose2d(src, *, mask=None, dtype=None, **kwargs) -> Tensor:
    """Load a 2-D HBM region transposed (DMA transpose; slow on hardware)."""
    ctx = current()
    s = as_view(src)
    if s.tensor.buffer != "hbm" or len(s.shape) != 2:
        raise KernelError("err_unsupported_memory", "load_transpose2d reads a 2-D HBM access",
                          "pass in_tensor[rows, cols] from HBM")
    F, P = s.shape
    dname = _dt.dtype_name(dtype) if dtype is not None else s.tensor.dtype_name
    t = ctx.new_tensor((P, F), dname, "sbuf", api="load_transpose2d")
    from trnsim.nki.runtime import read, write
    from trnsim.nki.tensors import check_bounds
    check_bounds(s, None)
    ctx.last_mask = None
    if ctx.numerics:
        write(t.full_view(), read(s).T)
    ctx.emit("dma_copy", "dma", (s,), (t.full_view(),),
             {"api": "load_transpose2d", "transpose": True, "partitions": P,
              "bytes_per_partition": F * s.tensor.itemsize, "src": "hbm", "dst": "sbuf"},
             0, P * F * s.tensor.itemsize, F, P)
    _isa._finish(ctx, t, None)
    return t


def store(dst, value, *, mask=None, **kwargs) -> None:
    """Store an SBUF tile into HBM (a PSUM value is first copied to SBUF, as the compiler does)."""
    d = as_view(dst)
    if d.tensor.buffer != "hbm":
        raise KernelError("err_unsupported_memory",
                          f"Expected operand 'dst' of 'store' to be in address space 'hbm', but got a tile in "
                          f"'{d.tensor.buffer}' instead.",
                          "nl.store writes HBM tensors; use dst[...] = value or nl.copy for on-chip copies")
    if not isinstance(value, (Tensor, View, Broadcast)):
        raise KernelError("err_expected_tile", f"nl.store value must be a tile, got {type(value).__name__}",
                          "store an SBUF tile")
    v = as_view(value)
    if isinstance(v, Broadcast):
        v = as_view(copy(v))
    if v.tensor.buffer == "psum":
        v = as_view(copy(v))
    if v.tensor.buffer == "hbm":
        raise KernelError("err_unsupported_memory",
                          "Expected operand 'value' of 'store' to be in address space 'sbuf', but got a tile in "
                          "'hbm' instead.", "load it into SBUF first (nl.load)")
    _isa._dma(d, v, mask, "store")


# ----------------------------------------------------------------------------- compute

def matmul(x, y, *, transpose_x: bool = False, mask=None, **kwargs) -> Tensor:
    """``x @ y`` into a new PSUM tile (fp32). With ``transpose_x=True``, ``x`` is already [K, M] and the
    result is ``x.T @ y`` (one nc_matmul); otherwise x [M, K] is first transposed on the Tensor Engine."""
    if not transpose_x:
        xt = _isa._transpose(x, "tensor", api="transpose")
        xs = copy(xt, dtype=as_view(x).tensor.dtype_name)
        return _isa._matmul(xs, y, mask=mask, api="matmul", extra_attrs={"transpose_x": False})
    return _isa._matmul(x, y, mask=mask, api="matmul", extra_attrs={"transpose_x": True})


def transpose(x, *, dtype=None, mask=None, **kwargs) -> Tensor:
    """Swap the partition and free axes of a 2-D tile (Tensor Engine; <= 128 x 128)."""
    return _isa._transpose(x, "tensor", mask=mask, dtype=dtype, api="transpose")


def copy(src, *, mask=None, dtype=None, _dst=None, **kwargs):
    """Copy a tile (e.g. PSUM -> SBUF), casting to ``dtype``."""
    return _isa._copy(src, dtype, mask, _dst, "vector", api="copy")


def broadcast_to(src, shape) -> Broadcast:
    return as_view(src).broadcast_to(shape)


def _is_tile(x) -> bool:
    return isinstance(x, (Tensor, View, Broadcast))


def _free1(v) -> bool:
    return builtins.all(s == 1 for s in v.shape[1:])


def _binary(name: str, x, y, dtype=None, mask=None, _dst=None):
    xt, yt = _is_tile(x), _is_tile(y)
    if not xt and not yt:
        return _isa.ALU[name](np.float32(x), np.float32(y)).item()
    if xt and yt:
        xv, yv = as_view(x), as_view(y)
        xs, ys = tuple(xv.shape), tuple(yv.shape)
        if xs != ys and xs[0] == ys[0]:
            if _free1(yv) and not _free1(xv) and not isinstance(yv, Broadcast):
                return _isa._ts(xv, name, yv, False, dtype=dtype, mask=mask, dst=_dst, api=name)
            if _free1(xv) and not _free1(yv) and not isinstance(xv, Broadcast):
                return _isa._ts(yv, name, xv, True, dtype=dtype, mask=mask, dst=_dst, api=name)
        return _isa._tt(xv, yv, name, dtype, mask, _dst, api=name, pbcast_ok=True)
    if xt:
        return _isa._ts(x, name, y, False, dtype=dtype, mask=mask, dst=_dst, api=name)
    return _isa._ts(y, name, x, True, dtype=dtype, mask=mask, dst=_dst, api=name)


def _make_binary(name: str):
    def fn(x, y, *, dtype=None, mask=None, _dst=None, **kwargs):
        return _binary(name, x, y, dtype, mask, _dst)
    fn.__name__ = name
    fn.__doc__ = f"Element-wise {name} of two tiles (or a tile and a scalar / [P, 1] vector), fp32 arithmetic."
    fn._nki_op = name
    return fn


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
power = _make_binary("power")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")
logical_xor = _make_binary("logical_xor")
bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")
left_shift = _make_binary("left_shift")
right_shift = _make_binary("right_shift")
mod = _make_binary("mod")


def _make_unary(name: str):
    def fn(x, *, dtype=None, mask=None, **kwargs):
        return _isa._activation(name, x, dtype=dtype, mask=mask, api=name)
    fn.__name__ = name
    fn.__doc__ = f"Element-wise {name} on the Scalar Engine (activation instruction, fp32 internally)."
    fn._nki_op = name
    return fn


exp = _make_unary("exp")
log = _make_unary("log")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
relu = _make_unary("relu")
gelu = _make_unary("gelu")
gelu_apprx_tanh = _make_unary("gelu_apprx_tanh")
gelu_dx = _make_unary("gelu_dx")
silu = _make_unary("silu")
silu_dx = _make_unary("silu_dx")
softplus = _make_unary("softplus")
mish = _make_unary("mish")
sqrt = _make_unary("sqrt")
rsqrt = _make_unary("rsqrt")
square = _make_unary("square")
abs = _make_unary("abs")  # noqa: A001
sign = _make_unary("sign")
sin = _make_unary("sin")
cos = _make_unary("cos")
arctan = _make_unary("arctan")
erf = _make_unary("erf")
erf_dx = _make_unary("erf_dx")
negative = _make_unary("negative")
ceil = _make_unary("ceil")
floor = _make_unary("floor")
trunc = _make_unary("trunc")
logical_not = _make_unary("logical_not")
identity = _make_unary("identity")
identity._nki_op = "identity"


def reciprocal(x, *, dtype=None, mask=None, **kwargs):
    return _isa._activation("reciprocal", x, dtype=dtype, mask=mask, api="reciprocal")


reciprocal._nki_op = "reciprocal"
copy._nki_op = "copy"


def _make_reduce(name: str, op: str):
    def fn(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
        return _isa._reduce(op, x, axis, dtype, mask, False, keepdims, api=name, name_override=op, strict=False)
    fn.__name__ = name
    fn.__doc__ = (f"{name} along free axes (never axis 0, the partition axis); result keeps >= 2 dims. Any free "
                  "axes are accepted (the compiler reorders the access pattern so they become innermost).")
    return fn


sum = _make_reduce("sum", "add")  # noqa: A001
max = _make_reduce("max", "maximum")  # noqa: A001
min = _make_reduce("min", "minimum")  # noqa: A001
prod = _make_reduce("prod", "multiply")
mean = _make_reduce("mean", "mean")
var = _make_reduce("var", "var")
all = _make_reduce("all", "logical_and")  # noqa: A001
sum._nki_op = "add"
max._nki_op = "maximum"
min._nki_op = "minimum"
prod._nki_op = "multiply"


def where(condition, x, y, *, dtype=None, mask=None, **kwargs):
    """Select ``x`` where ``condition`` is non-zero else ``y`` (VectorE select)."""
    ctx = current()
    c = _isa.tile_arg(condition, "where", "condition")
    shape = tuple(c.shape)
    reads = [c]
    xs = []
    for a, nm in ((x, "x"), (y, "y")):
        if _is_tile(a):
            v = _isa.tile_arg(a, "where", nm)
            reads.append(v)
            xs.append(v)
        else:
            xs.append(float(a))
    odt = _dt.dtype_name(dtype) if dtype is not None else next(
        (v.tensor.dtype_name for v in xs if not isinstance(v, float)), "float32")
    dview, out_t = _isa._out_tile(shape, odt, "sbuf", "where")
    res = None
    if ctx.numerics:
        from trnsim.nki.runtime import read
        vals = [read(v) if not isinstance(v, float) else np.float32(v) for v in xs]
        res = np.where(read(c) != 0, vals[0], vals[1]).astype(np.float32)
        res = np.broadcast_to(res, shape)
        _isa._store_result(ctx, dview, res, None)
    n = _isa._free(shape)
    ctx.emit("select", "vector", reads, (dview,), {}, n * shape[0], 0, n, shape[0])
    _isa._finish(ctx, out_t, res)
    return out_t


def softmax(x, axis, *, dtype=None, mask=None, **kwargs):
    """Softmax along free ``axis`` = exp(x - max) / sum (four instructions)."""
    mx = max(x, axis=axis, keepdims=True)
    e = _isa._ts(x, "subtract", mx, False, api="softmax")
    e = exp(e)
    s = sum(e, axis=axis, keepdims=True)
    return _isa._ts(e, "divide", s, False, dtype=dtype, api="softmax")


def static_cast(x, dtype):
    """Host-side helper: round a numpy array to an NKI dtype (returns numpy)."""
    return _dt.cast(np.asarray(x, dtype=np.float32), _dt.dtype_name(dtype)).astype(_dt.storage_dtype(
        _dt.dtype_name(dtype)))


def device_print(prefix: str, x, **kwargs) -> None:
    """Print a tile's values (simulation only)."""
    ctx = current()
    if ctx.numerics and _is_tile(x):
        from trnsim.nki.runtime import read
        print(prefix, read(as_view(x)))
    else:
        print(prefix, x)


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kwargs):
    raise KernelError("err_unsupported_api", "nl.loop_reduce is not supported by trnsim",
                      "accumulate explicitly with acc[...] = nl.add(acc, x) in a sequential_range loop")


__all__ = [n for n, v in list(globals().items())
           if not n.startswith("_") and not isinstance(v, type(np)) and n not in ("annotations", "Tensor", "View",
                                                                                  "Broadcast", "DynSlice", "IndexExpr",
                                                                                  "MGrid", "ParDim", "KernelError",
                                                                                  "fmt_shape", "limits_for",
                                                                                  "as_view", "current")]
