"""NKI data types mapped onto numpy / ml_dtypes storage types.

Low-precision floats (bfloat16, float16, float8) are stored in their real format via
``ml_dtypes`` so values are rounded exactly as the hardware stores them; arithmetic is done
in float32 (as Vector/Scalar engines do, SDK-legacy ``nki.api.shared.rst``) and results are
cast on store. ``tfloat32`` has no numpy type: it is stored as float32 whose mantissa is
rounded (to nearest even) to 10 bits on every store.

Promotion rules follow SDK-legacy ``general/nki/api/nki.api.shared.rst`` (see
/work/shared/reference/nki.md section 1.9).
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np


class _TF32:
    """Marker type for NKI's tfloat32 (float32 storage, 10-bit mantissa)."""
    name = "tfloat32"
    itemsize = 4

    def __repr__(self) -> str:
        return "tfloat32"


tfloat32 = _TF32()


class _Packed:
    """Marker type of an MX 4-packed dtype (NeuronCore-v4 ``nc_matmul_mx`` operands): one element holds four
    fp8 (stored as uint32, byte k = value k) or four fp4 values (stored as uint16, nibble k = value k)."""

    def __init__(self, name: str, element: str, bits: int):
        self.name = name
        self.element = element          # ml_dtypes name of each packed value
        self.element_bits = bits
        self.itemsize = 4 * bits // 8

    def __repr__(self) -> str:
        return self.name


float8_e5m2_x4 = _Packed("float8_e5m2_x4", "float8_e5m2", 8)
float8_e4m3fn_x4 = _Packed("float8_e4m3fn_x4", "float8_e4m3fn", 8)
float4_e2m1fn_x4 = _Packed("float4_e2m1fn_x4", "float4_e2m1fn", 4)
PACKED: dict[str, _Packed] = {p.name: p for p in (float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4)}

float32 = np.float32
float16 = np.float16
bfloat16 = ml_dtypes.bfloat16
float8_e4m3 = ml_dtypes.float8_e4m3
float8_e4m3fn = ml_dtypes.float8_e4m3fn
float8_e5m2 = ml_dtypes.float8_e5m2
float8_e8m0fnu = ml_dtypes.float8_e8m0fnu      # MX block scale: 2**(byte - 127), 0xFF = NaN
int8 = np.int8
int16 = np.int16
int32 = np.int32
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
bool_ = np.bool_

_F32 = np.dtype(np.float32)

# canonical name -> storage numpy dtype
_STORAGE: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8_e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
    "float8_e5m2_x4": np.dtype(np.uint32),
    "float8_e4m3fn_x4": np.dtype(np.uint32),
    "float4_e2m1fn_x4": np.dtype(np.uint16),
    "tfloat32": np.dtype(np.float32),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "bool": np.dtype(np.bool_),
}
_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "float8_e4m3fnuz": None,
            "tf32": "tfloat32", "bool_": "bool", "float8e4": "float8_e4m3", "float8e5": "float8_e5m2"}

FLOAT_NAMES = frozenset({"float32", "float16", "bfloat16", "float8_e4m3", "float8_e4m3fn",
                         "float8_e5m2", "float8_e8m0fnu", "tfloat32"})
FP8_NAMES = frozenset({"float8_e4m3", "float8_e4m3fn", "float8_e5m2"})
# float widths in bits, for promotion
_FLOAT_BITS = {"float8_e4m3": 8, "float8_e4m3fn": 8, "float8_e5m2": 8, "float8_e8m0fnu": 8, "float16": 16, "bfloat16": 16,
               "tfloat32": 32, "float32": 32}


_NAME_CACHE: dict = {}


def dtype_name(dt: Any) -> str:
    """Canonical NKI dtype name for a dtype-like (numpy type, ml_dtypes type, string, tfloat32)."""
    try:
        hit = _NAME_CACHE.get(dt)
    except TypeError:
        hit = None
    if hit is not None:
        return hit
    name = _dtype_name(dt)
    try:
        _NAME_CACHE[dt] = name
    except TypeError:
        pass
    return name


def _dtype_name(dt: Any) -> str:
    if dt is tfloat32 or isinstance(dt, _TF32):
        return "tfloat32"
    if isinstance(dt, _Packed):
        return dt.name
    if isinstance(dt, str):
        key = _ALIASES.get(dt, dt)
        if key in _STORAGE:
            return key
        raise TypeError(f"unsupported NKI dtype {dt!r}; use one of {sorted(_STORAGE)}")
    try:
        name = np.dtype(dt).name
    except TypeError as exc:
        raise TypeError(f"unsupported NKI dtype {dt!r}; use one of {sorted(_STORAGE)}") from exc
    if name in _STORAGE:
        return name
    raise TypeError(f"unsupported NKI dtype {name!r}; use one of {sorted(_STORAGE)}")


class _Precision:
    """The simulator's floating-point mode (nki_simulator.rst, ``NKI_PRECISE_FP``): ``exact`` (the default,
    ``NKI_PRECISE_FP=1``) stores bfloat16 / float16 / float8 values in their own formats, rounding like the
    hardware; with ``NKI_PRECISE_FP=0`` they are stored as float32 without rounding, to separate a kernel's
    logic errors from precision loss. Set by the runtime at every launch from the environment."""
    exact = True


PRECISION = _Precision()
NARROW_FLOATS = frozenset({"float16", "bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"})   # not the MX scales


def set_precise_fp_from_env() -> None:
    """Read ``NKI_PRECISE_FP`` ("0" turns precise mode off; anything else, or unset, keeps it on)."""
    import os
    PRECISION.exact = os.environ.get("NKI_PRECISE_FP", "1").strip() != "0"


def storage_dtype(name: str) -> np.dtype:
    """numpy dtype used to store values of NKI dtype ``name`` (float32 for the narrow floats when
    ``NKI_PRECISE_FP=0``)."""
    if not PRECISION.exact and name in NARROW_FLOATS:
        return _F32
    return _STORAGE[name]


def require_exact_bits(api: str, *names: str) -> None:
    """Bit-level reinterpretation (``.view(dtype)``, ``.ap(dtype=...)``) needs the real storage formats: refused
    with ``NKI_PRECISE_FP=0``, where narrow floats are held as float32."""
    if not PRECISION.exact and any(n in NARROW_FLOATS for n in names):
        from trnsim.nki.rules import KernelError
        raise KernelError("err_unsupported_dtype", f"{api} reinterprets the bits of {' / '.join(names)}, but "
                          "NKI_PRECISE_FP=0 stores narrow floats as float32", "run with NKI_PRECISE_FP=1 (the default)")


def value_dtype(name: str) -> np.dtype:
    """The numpy dtype of NKI dtype ``name`` itself (its range and bits), whatever the storage mode."""
    return _STORAGE[name]


def itemsize(name: str) -> int:
    """Bytes per element of NKI dtype ``name``."""
    return _ITEMSIZE[name]


def is_float(name: str) -> bool:
    return name in FLOAT_NAMES


def is_int(name: str) -> bool:
    """True for the integer NKI dtypes (int8 ... uint32; not bool or packed words)."""
    st = _STORAGE.get(name)
    return st is not None and name not in PACKED and np.dtype(st).kind in "iu"


def dtype_object(name: str) -> Any:
    """The user-facing dtype object (what ``nl.<name>`` is) for a canonical name."""
    if name == "tfloat32":
        return tfloat32
    if name in PACKED:
        return PACKED[name]
    return _STORAGE[name].type


def is_packed(name: str) -> bool:
    """True for the MX 4-packed dtypes (their storage words are bit patterns, never converted by value)."""
    return name in PACKED


def _round_tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 values to tf32 precision (10 explicit mantissa bits, round to nearest even)."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    bits = a.view(np.uint32)
    finite = np.isfinite(a)
    lsb = (bits >> 13) & 1
    rounded = ((bits + np.uint32(0x0FFF) + lsb) & np.uint32(0xFFFFE000)).astype(np.uint32)
    out = np.where(finite, rounded, bits).astype(np.uint32)
    return out.view(np.float32)


def cast(values: np.ndarray, name: str) -> np.ndarray:
    """Convert computed values (usually float32) to the storage of NKI dtype ``name``.

    Floats round to nearest even (numpy/ml_dtypes casts); float -> int conversion rounds to
    nearest and saturates at the integer range (the hardware's output conversion), and an integer
    converted to another integer type saturates the same way.
    """
    if name == "tfloat32":
        return _round_tf32(values)
    if not PRECISION.exact and name in NARROW_FLOATS:
        return values if values.dtype == _F32 else values.astype(_F32)
    st = _STORAGE[name]
    if values.dtype == st:
        return values
    if name in PACKED:   # packed words are written raw (DMA, quantize_mx); only zero fills convert
        if values.dtype.kind in "iu" or not np.any(values):
            return np.zeros(values.shape, dtype=st) if values.dtype.kind == "f" else values.astype(st)
        from trnsim.nki.rules import KernelError
        raise KernelError("err_unsupported_dtype", f"{name} holds packed words (four narrow floats each); a "
                          "computed float value cannot be written into it", "quantize with nisa.quantize_mx, or pack "
                          "on the host with trnsim.nki.packed.pack_x4 and DMA the words in")
    if st.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(st)
        with np.errstate(invalid="ignore"):
            v = np.rint(values.astype(np.float64))
            v = np.nan_to_num(v, nan=0.0, posinf=info.max, neginf=info.min)
            return np.clip(v, info.min, info.max).astype(st)
    if st.kind in "iu" and values.dtype.kind in "iu":   # integer -> another integer type saturates too
        info = np.iinfo(st)
        return np.clip(values, info.min, info.max).astype(st)
    if st.kind == "b":
        return values.astype(bool)
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(st)


def promote(a: str, b: str) -> str:
    """Output dtype of a binary op on dtypes ``a`` and ``b`` (NKI promotion rules).

    (float, int) -> the float; (float, float) -> the wider, or float32 for two different 16-bit
    floats and bfloat16 for two different fp8 formats; (int, int) -> the wider integer
    (int32 with uint32 -> float32).
    """
    if a == b:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        ba, bb = _FLOAT_BITS[a], _FLOAT_BITS[b]
        if ba != bb:
            return a if ba > bb else b
        if ba == 8:
            return "bfloat16"
        return "float32"
    if a == "bool":
        return b
    if b == "bool":
        return a
    sa, sb = _STORAGE[a], _STORAGE[b]
    if {a, b} == {"int32", "uint32"}:
        return "float32"
    if sa.kind == sb.kind:
        return a if sa.itemsize >= sb.itemsize else b
    # signed/unsigned mix: the signed type wide enough for both
    size = max(sa.itemsize * (2 if sa.kind == "u" else 1), sb.itemsize * (2 if sb.kind == "u" else 1))
    return {1: "int8", 2: "int16", 4: "int32"}.get(size, "float32")


def scalar_dtype(value: Any) -> str:
    """Weak type of a Python scalar (bool -> uint8, int -> int32, float -> float32)."""
    if isinstance(value, (bool, np.bool_)):
        return "uint8"
    if isinstance(value, (int, np.integer)):
        return "int32"
    return "float32"


def compute_dtype(name: str) -> np.dtype:
    """numpy dtype used for arithmetic on values of ``name`` (float32 for floats, int64 for ints)."""
    return np.dtype(np.float32) if is_float(name) else np.dtype(np.int64) if name != "bool" else np.dtype(np.float32)


ALL_DTYPE_NAMES = tuple(_STORAGE)
_ITEMSIZE = {n: (4 if n == "tfloat32" else d.itemsize) for n, d in _STORAGE.items()}

# Names of the x4 packed MX types (``nl.float8_e5m2_x4`` ...), as used by the language layer.
X4_NAMES = frozenset(PACKED)
