"""Helpers every instruction uses: operand validation, result tiles, storing results, trace bookkeeping."""
from __future__ import annotations

import inspect
import math
import operator
from typing import Any, Callable
import weakref

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import as_view, check_assign_shape, current, read, write
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import DIALECT, Broadcast, Tensor, View, check_bounds, clamped_view, mask_array

# ------------------------------------------------------------------------------ helpers

def is_tile(x) -> bool:
    return isinstance(x, (Tensor, View, Broadcast))


def tile_arg(x, api: str, arg: str, buffers: tuple[str, ...] = ("sbuf", "psum"), mask=None):
    """Validate a tile operand: an NKI tile, in an allowed buffer, partition dim first.

    ``mask`` (Beta 1, element-wise instructions and bn_stats only): the instruction's ``mask=`` predicate. An on-chip
    read that reaches past the tile is then allowed where the mask is false at every out-of-range element (a ragged
    last chunk), and the operand comes back with those indices clamped into the tile: the instruction never uses
    the values read there (element-wise results are written only where the mask is true; bn_stats counts only
    masked-in elements)."""
    tx = type(x)
    if tx is View:
        v = x
    elif tx is Tensor:
        v = x.full_view()
    else:
        if not is_tile(x):
            raise KernelError("err_expected_tile", f"operand '{arg}' of '{api}' must be a tile, got "
                              f"{type(x).__name__}", "pass a tile produced by nl.load / nl.ndarray / an NKI op")
        v = as_view(x)
    t = v.tensor
    if t.buffer not in buffers:
        raise KernelError("err_unsupported_memory",
                          f"Expected operand '{arg}' of '{api}' to be in address space '{'|'.join(buffers)}', "
                          f"but got a tile in '{t.buffer}' instead.",
                          "load HBM data into SBUF with nl.load first" if t.buffer == "hbm" else
                          ("copy the PSUM tile to SBUF first (nisa.tensor_copy, or nl.copy)" if t.buffer == "psum" else
                           "use a tile in the required buffer"))
    base = v.view if type(v) is Broadcast else v
    if t.buffer != "hbm" and not base.pfirst:
        raise KernelError("err_failed_to_infer_tile_from_local_tensor",
                          f"operand '{arg}' of '{api}' ({base!r}) does not have the partition dimension first",
                          "index the block dimension(s) first, e.g. buf[i] or buf[i, :, :]")
    shape = v.shape
    if not shape or shape[0] > _pmax():
        lim = current().limits.pmax
        raise KernelError("err_num_partition_exceed_arch_limit",
                          f"number of partitions {shape[0] if shape else 0} exceed architecture limitation of "
                          f"{lim}. (operand '{arg}' of '{api}', tile {fmt_shape(shape)}; {current().target})",
                          f"tile the partition dimension into chunks of at most {lim}")
    clamped = _check_onchip_bounds(base, mask)
    if clamped is None:
        return v
    return Broadcast(clamped, tuple(v.shape)) if type(v) is Broadcast else clamped


def _check_onchip_bounds(v, mask=None):
    """err_tensor_access_out_of_bound for an on-chip slice past the tile's end (HBM accesses are checked by the
    DMA; full views, views the fast slicing path built and runtime-indexed views need no check). With a Beta 1
    ``mask`` that is false wherever the slice leaves the tile, returns the slice with its indices clamped into the
    tile (see tile_arg); otherwise None."""
    t = v.tensor
    if type(v) is View and t.buffer != "hbm" and (v.adv is not None or v.ranges is not t._full_ranges) \
            and v.runtime_index is None and not getattr(v, "inb", False):
        try:
            check_bounds(v, None)
            return None
        except KernelError as exc:
            if mask is None or current().dialect != "beta1":
                raise
            first = exc
        try:
            m = mask_array(mask, tuple(v.shape))
        except KernelError:
            raise first from None
        if m is None:
            raise first
        check_bounds(v, m)   # raises where an out-of-range element is masked in
        return clamped_view(v)
    return None


def _pmax() -> int:
    return current().limits.pmax


def free_size(shape) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def check_free_limit(v, api: str, arg: str) -> None:
    lim = current().limits
    t = v.tensor
    cap = lim.vector_free_max_psum if t.buffer == "psum" else lim.vector_free_max_sbuf
    n = free_size(v.shape)
    if cap is not None and n > cap:
        raise KernelError("err_free_size_exceed_arch_limit",
                          f"operand '{arg}' of '{api}' has {n} elements per partition; the limit for a "
                          f"{t.buffer.upper()} "
                          f"operand is {cap} on {lim.target}",
                          "split the free dimension into smaller tiles")


def out_tile(shape, dtype_name: str, buffer: str, api: str, dst=None, *, allowed=("sbuf", "psum")):
    ctx = current()
    if dst is not None:
        if not is_tile(dst):
            raise KernelError("err_expected_tile", f"operand 'dst' of '{api}' must be a tile, got {type(dst).__name__}",
                              "pass a tile allocated with nl.ndarray(shape, dtype, buffer=nl.sbuf)")
        d = as_view(dst)
        _check_onchip_bounds(d)
        if isinstance(d, Broadcast):
            raise KernelError("err_unsupported_assignment", "cannot write into a broadcast view", "write into a tile")
        if d.tensor.buffer not in allowed:
            raise KernelError("err_unsupported_memory",
                              f"Expected operand 'dst' of '{api}' to be in address space '{'|'.join(allowed)}', but "
                              f"got a tile in '{d.tensor.buffer}' instead.",
                              (f"allocate dst in {' or '.join(b.upper() for b in allowed)}: "
                               f"nl.ndarray(shape, dtype, buffer=nl.{allowed[0]})"
                               + ("; results reach HBM through SBUF with a DMA (nisa.dma_copy / nl.store)"
                                  if d.tensor.buffer == "hbm" else "")))
        if tuple(d.shape) != tuple(shape):
            if not (math.prod(d.shape) == math.prod(shape) and d.shape[0] == shape[0]):
                if not DIALECT.beta1 and math.prod(d.shape) > math.prod(shape):
                    # NKI 0.6 destination passing: an instruction writes exactly its result's elements into dst;
                    # it does not broadcast a [P, 1] result across a wider dst (a smaller dst is refused below)
                    n_res, n_dst = math.prod(shape[1:]), math.prod(d.shape[1:])
                    raise KernelError("err_shape_mismatch",
                                      f"'{api}' produces {fmt_shape(shape)} ({n_res} element{'s' if n_res != 1 else ''}"
                                      f" per partition) but dst is {fmt_shape(d.shape)} ({n_dst} elements per "
                                      "partition): the instruction does not broadcast its result",
                                      f"allocate or index dst as {fmt_shape(shape)}, e.g. "
                                      f"nl.ndarray({tuple(shape)}, dtype, buffer=nl.sbuf)")
                check_assign_shape(d, shape, api)
        return d, None
    t = ctx.new_tensor(shape, dtype_name, buffer, api=api, temp=True)
    return t.full_view(), t


def finish(ctx, out_tensor, vals32=None) -> None:
    if out_tensor is not None:
        ctx.last_out = weakref.ref(out_tensor)
        ctx.last_out_index = len(ctx.instructions) - 1
        ctx.last_vals = vals32
    else:
        ctx.last_out = None
        ctx.last_vals = None


def store_result(ctx, dview, vals, mask):
    dview.tensor.mm_open = dview.tensor.buffer == "psum"   # a written PSUM location accumulates the next matmul
    ctx.last_mask = mask
    if ctx.numerics:
        if vals.shape != dview.shape:
            vals = vals.reshape(dview.shape) if vals.size == math.prod(dview.shape) else \
                np.broadcast_to(vals, dview.shape)
        write(dview, vals, mask)
        if dview.tensor.acc is not None:
            dview.tensor.acc[dview.npkey()] = True if mask is None else (mask | dview.tensor.acc[dview.npkey()])


def reduce_res_view(reduce_res, P: int):
    """The view of a ``reduce_res=`` operand: one element per partition, ``[P, 1]`` (err_shape_mismatch otherwise)."""
    rv = as_view(reduce_res)
    if rv.shape[0] != P or free_size(rv.shape) != 1:
        raise KernelError("err_shape_mismatch", f"reduce_res must be [{P}, 1], got {fmt_shape(rv.shape)}",
                          f"allocate it as nl.ndarray(({P}, 1), nl.float32)")
    return rv


def bit_pattern(vals: np.ndarray, dview) -> np.ndarray:
    """A bitvec result as ``dview``'s integer storage: the low bits of each pattern, no saturation (bitvec
    operators "treat all input elements as bit patterns without any data type casting", nki.isa.tensor_tensor;
    an int8 -1 stored as uint8 is 255, and 0x12345678 stored as int16 is 0x5678). Non-integer results and
    destinations are returned unchanged (they take the ordinary conversion)."""
    st = dview.tensor.data.dtype if dview.tensor.data is not None else None
    if st is None or st.kind not in "iu" or vals.dtype.kind not in "iu":
        return vals
    return vals.astype(st, copy=False)   # integer -> integer astype keeps the low bits (two's complement)


def refuse_gpsimd_psum(api: str, why: str, **operands) -> None:
    """err_unsupported_memory if any named operand (a View) is in PSUM: "GpSimd Engine cannot access PSUM"
    (nki.isa tensor_copy, tensor_tensor, tensor_scalar, memset, iota, rng; the architecture guides)."""
    for arg, v in operands.items():
        if v is not None and getattr(getattr(v, "tensor", None), "buffer", None) == "psum":
            raise KernelError("err_unsupported_memory",
                              f"'{api}' runs on the GpSimd Engine ({why}), which cannot access PSUM, but {arg} "
                              f"{fmt_shape(v.shape)} is in PSUM",
                              "run it on the Vector Engine (engine=nisa.engine.vector), or copy the PSUM tile to "
                              "SBUF first (nisa.tensor_copy)")


def check_explicit_accumulate(ctx, psum_tensor, api: str) -> None:
    """``accumulate=True`` given explicitly onto a PSUM tile whose value a zero fill (``nl.zeros(...,
    buffer=nl.psum)``, ``memset(0)``) wrote and no matmul has written since: "Only valid after the PSUM location
    has been initialized by a matmul with accumulate=False", and on NeuronCore-v2/v3 a location value-initialized
    by a non-matmul instruction (e.g. memset) is not supported (nki.isa.nc_matmul). The default accumulate=None
    stays fine: the compiler folds the zero fill into the first matmul."""
    if psum_tensor.mm_open or not psum_tensor.written or psum_tensor.psum_other_value or ctx.dialect == "beta1" \
            or ctx.limits.neuroncore_version not in ("NC-v2", "NC-v3"):
        return
    raise KernelError("err_matmul_accumulate_onto_non_matmul_value",
                      f"'{api}' with accumulate=True adds onto PSUM tile {psum_tensor.name or 'tile'}"
                      f"{fmt_shape(psum_tensor.shape)}, which a zero fill (nl.zeros / memset) initialised, not a "
                      f"matmul; on {ctx.target} ({ctx.limits.neuroncore_version}) accumulating onto a value a "
                      "non-matmul instruction wrote is undefined behaviour on the hardware",
                      "leave accumulate at its default (None: the compiler folds the zero fill into the first "
                      "matmul) or start the group with accumulate=False (e.g. accumulate=(k > 0)); then the zero "
                      "fill is not needed")


def check_accumulate(ctx, psum_tensor, api: str) -> None:
    """A matmul accumulating onto a PSUM value that a non-matmul instruction wrote (memset to a non-zero value,
    tensor_copy, activation, an assignment): "On NeuronCore-v2 and NeuronCore-v3, matmul accumulating into a PSUM
    location that was value-initialized by a non-matmul instruction ... is not supported and is undefined behavior
    on hardware" (nki.isa.nc_matmul). NeuronCore-v4 supports it; Beta 1 kernels keep their old behaviour. (A zero
    fill is folded into the first matmul, as the compiler does, so ``nl.zeros(..., buffer=nl.psum)`` is fine.)"""
    if not psum_tensor.psum_other_value or ctx.dialect == "beta1" or \
            ctx.limits.neuroncore_version not in ("NC-v2", "NC-v3"):
        return
    raise KernelError("err_matmul_accumulate_onto_non_matmul_value",
                      f"'{api}' accumulates onto PSUM tile {psum_tensor.name or 'tile'}{fmt_shape(psum_tensor.shape)}, "
                      f"whose value was written by a non-matmul instruction (memset, tensor_copy, activation, an "
                      f"assignment); on {ctx.target} ({ctx.limits.neuroncore_version}) that is undefined behaviour on "
                      "the hardware",
                      "start the accumulation group with accumulate=False (or a fresh PSUM tile) and add the initial "
                      "value afterwards with nisa.tensor_tensor; NeuronCore-v4 (trn3) supports accumulating onto it")


def result_of(dst_given, out_tensor, dview):
    if dst_given is not None:
        return dst_given
    return out_tensor


def dtype_arg(dtype, api: str = "", arg: str = "dtype") -> str:
    """The NKI dtype name of a ``dtype=`` argument; KernelError (err_unsupported_dtype) for anything else."""
    try:
        return dt.dtype_name(dtype)
    except TypeError as exc:
        where = f" of '{api}'" if api else ""
        raise KernelError("err_unsupported_dtype", f"{arg}={dtype!r}{where} is not an NKI dtype ({exc})",
                          "use nl.float32, nl.bfloat16, nl.float16, nl.float8_e4m3, nl.int32, ... (or the matching "
                          "numpy dtype)") from None


def dtype_or(dtype, default: str, api: str = "") -> str:
    return default if dtype is None else dtype_arg(dtype, api)


def scalar_or_vector(x, P: int, api: str, arg: str, reads: list, *, optional: bool = False):
    """Scalar operand (python number) or per-partition vector tile [P, 1] -> (value or array, is_vec).
    ``None`` is ``(None, False)`` for an ``optional`` operand and a KernelError for a required one (it would
    compute as NaN)."""
    if x is None:
        if optional:
            return None, False
        raise KernelError("err_operand_type", f"operand '{arg}' of '{api}' is None, but it is required",
                          f"pass {arg}=<a Python number or a [{P}, 1] tile>")
    if is_tile(x):
        v = tile_arg(x, api, arg)
        if v.shape[0] != P or free_size(v.shape) != 1:
            raise KernelError("err_activation_scale_scalar_or_vector" if arg == "scale" else "err_operand_shape",
                              f"operand '{arg}' of '{api}' must be a scalar or a [{P}, 1] per-partition vector, "
                              f"got {fmt_shape(v.shape)}",
                              "reduce it to one value per partition first (e.g. nl.sum(x, axis=1))")
        reads.append(v)
        return v, True
    if isinstance(x, (int, float, np.integer, np.floating, bool, np.bool_)):
        return float(x), False
    raise KernelError("err_operand_type", f"operand '{arg}' of '{api}' has unsupported type {type(x).__name__}",
                      "pass a Python number or a [P, 1] tile")


def require_fp32_vector(v, is_vec: bool, api: str, arg: str) -> None:
    """A [P, 1] tile operand documented as "Supported dtypes: float32" / "(FP32)" must be float32."""
    if is_vec and v.tensor.dtype_name != "float32":
        raise KernelError("err_unsupported_dtype", f"{arg} of '{api}' is a {v.tensor.dtype_name} tile; it must be "
                          "float32", f"keep {arg} in an nl.float32 [P, 1] tile (or pass a number)")


def _vec_values(x, is_vec, numerics):
    if not numerics or x is None:
        return None
    if is_vec:
        return read(x).reshape(x.shape[0], *([1] * 1))
    return np.float32(x)


def bcast_free(a: np.ndarray, ndim: int) -> np.ndarray:
    """Reshape a [P, 1] vector for broadcasting against an ndim-D tile."""
    return a.reshape((a.shape[0],) + (1,) * (ndim - 1))



# ------------------------------------------------------------------------------ NKI 0.6 signatures

REQUIRED = object()
_HINTS = {
    "mask": "mask= was removed in NKI 0.2: slice the tiles to the valid region instead (x[0:n, 0:m])",
    "dtype": "NKI 0.6 instructions write into dst= and take its dtype: allocate dst with the dtype you want",
}


def two_forms(api: str, params: list[tuple[str, Any]], beta1: Callable, nki06: Callable) -> Callable:
    """The public function of an instruction whose NKI 0.6 and Beta 1 signatures differ.

    Under the ``nki`` dialect the call is bound to ``params`` (NKI 0.6 order, ``(name, default)``, default
    ``REQUIRED`` for required ones; ``dst`` first) and ``nki06(**bound)`` runs; Beta 1 keyword arguments the
    current API removed (``mask=``, ``dtype=``) raise a KernelError naming the current form. Under the
    ``beta1`` dialect ``beta1(*args, **kwargs)`` runs unchanged."""
    names = [p for p, _ in params]
    signature = f"{api}(" + ", ".join(n if d is REQUIRED else f"{n}={getattr(d, '__name__', d)!r}"
                                      for n, d in params if n != "name") + ")"

    defaults = {n: d for n, d in params if d is not REQUIRED}
    required = tuple(n for n, d in params if d is REQUIRED)
    nameset = frozenset(names) | {"dtype"}

    def bind_slow(args, kwargs) -> None:
        """Raise the KernelError for a call the generated binder refused (wrong count, unknown or repeated name);
        anything else keeps Python's TypeError."""
        if len(args) > len(names):
            raise KernelError("err_invalid_arguments", f"nisa.{api} takes at most {len(names)} arguments "
                              f"({', '.join(names)}), got {len(args)}",
                              f"call nisa.{api}({', '.join(required)}, ...)")
        if not nameset.issuperset(kwargs):
            k = next(k for k in kwargs if k not in nameset)
            hint = _HINTS.get(k, f"nisa.{api} takes {', '.join(names)}")
            raise KernelError("err_invalid_arguments", f"nisa.{api} has no argument {k}= in NKI 0.6", hint)
        twice = [k for k in kwargs if k in names[:len(args)]]
        if twice:
            raise KernelError("err_invalid_arguments", f"nisa.{api} got {twice[0]} twice", "pass it once")

    # where the destination lives: a matmul (and the Tensor Engine transpose) writes PSUM, everything else SBUF
    dst_buffer = {"nc_matmul": "nl.psum", "nc_matmul_mx": "nl.psum",
                  "nc_transpose": "nl.psum; nl.sbuf when engine=nisa.vector_engine"}.get(api, "nl.sbuf")

    def missing(bound: dict) -> None:
        n = next(n for n in required if bound[n] is REQUIRED)
        raise KernelError("err_missing_argument", f"nisa.{api} needs {n}=",
                          f"call nisa.{signature}: NKI 0.6 instructions take the destination first and "
                          f"write into it (dst = nl.ndarray(shape, dtype, buffer={dst_buffer})); Beta 1 "
                          "value-returning calls run under import trnsim.neuronxcc.nki")

    # The binder is a generated function with the NKI 0.6 signature (plus the removed dtype=, checked below), so
    # Python itself binds positional and keyword arguments: it returns them as a tuple in ``names`` order.
    namespace = {"_R": REQUIRED, "_missing": missing, "_defaults": defaults}
    params_src = ", ".join(f"{n}=_R" if n in required else f"{n}=_defaults[{n!r}]" for n in names)
    body = f"    if {' or '.join(f'{n} is _R' for n in required)}:\n        _missing(locals())\n" if required else ""
    exec(f"def _bind({params_src}, *, dtype=None):\n{body}    return ({', '.join(names)},), dtype\n", namespace)
    binder = namespace["_bind"]
    dst_at = names.index("dst") if "dst" in names else None
    sig = inspect.signature(nki06)
    if list(sig.parameters) != names:   # nki06 is called positionally, in ``names`` order
        raise TypeError(f"two_forms({api!r}): {nki06.__name__} parameters {list(sig.parameters)} != {names}")

    def fn(*args, **kwargs):
        if current().dialect == "beta1":
            return beta1(*args, **kwargs)
        try:
            values, out_dtype = binder(*args, **kwargs)
        except TypeError:
            bind_slow(args, kwargs)
            raise
        if out_dtype is not None and dst_at is not None and is_tile(values[dst_at]):
            want, have = dtype_arg(out_dtype, api), as_view(values[dst_at]).tensor.dtype_name
            if want != have:
                raise KernelError("err_invalid_arguments",
                                  f"nisa.{api}(dtype={want}) differs from dst's dtype {have}: NKI 0.6 instructions "
                                  "write dst's dtype", _HINTS["dtype"])
        return nki06(*values)

    fn.__name__ = api
    fn.__qualname__ = api
    fn.__doc__ = (nki06.__doc__ or "") + f"\n\n    NKI 0.6 signature: {signature}"
    return fn


def pattern_values(pattern, offset: int, channel_multiplier: int, partitions: int, api: str,
                   dst_shape=None) -> np.ndarray:
    """``offset + channel_multiplier * p + sum(step_k * i_k)`` of an iota-style ``pattern`` [[step, num], ...]:
    int64 array [partitions, prod(num)]. With ``dst_shape`` the pattern's element count must be the destination's
    free size (checked before any values are made)."""
    try:
        pairs = [(operator.index(p[0]), operator.index(p[1])) for p in pattern]
    except (TypeError, ValueError, IndexError):
        raise KernelError("err_invalid_access_pattern", f"pattern {pattern!r} of '{api}' is not a list of "
                          "[step, num] integer pairs", "write pattern=[[step, num], ...] (up to 4 pairs)") from None
    if not 1 <= len(pairs) <= 4 or any(n < 1 for _, n in pairs):
        raise KernelError("err_invalid_access_pattern", f"pattern {pairs} of '{api}' needs 1-4 pairs with num >= 1",
                          "write pattern=[[step, num], ...] (up to 4 pairs)")
    for arg, v in (("offset", offset), ("channel_multiplier", channel_multiplier)):
        try:
            operator.index(v)
        except TypeError:
            raise KernelError("err_invalid_arguments", f"{arg}={v!r} of '{api}' must be an integer",
                              f"pass {arg} as a Python int") from None
    count = math.prod(n for _, n in pairs)
    if dst_shape is not None and count != free_size(dst_shape):
        raise KernelError("err_shape_mismatch", f"{api} pattern {pairs} makes {count} values per partition but dst "
                          f"{fmt_shape(dst_shape)} holds {free_size(dst_shape)}",
                          "make the pattern's counts multiply to dst's free size")
    vals = np.zeros([n for _, n in pairs], dtype=np.int64)
    for k, (step, n) in enumerate(pairs):
        shp = [1] * len(pairs)
        shp[k] = n
        vals = vals + (step * np.arange(n, dtype=np.int64)).reshape(shp)
    flat = vals.reshape(1, -1)
    return int(offset) + int(channel_multiplier) * np.arange(partitions, dtype=np.int64)[:, None] + flat
