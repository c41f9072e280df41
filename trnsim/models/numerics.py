"""Floating-point formats of the NeuronCore and what rounding does to numbers (notebook 07).

Pure numpy, no kernel simulator: bit layouts of fp32 / bf16 / fp16 / fp8 (sign, exponent,
mantissa fields and the decoded value), the spacing of representable numbers (ulp) and the
relative rounding error across magnitudes, round-to-nearest-even versus stochastic rounding,
and the error of long sums with a bf16 or an fp32 accumulator (why PSUM accumulates in fp32).

Every format fact (exponent and mantissa widths, bias, largest and smallest normal, machine
epsilon) is *computed* from ``numpy.finfo`` / ``ml_dtypes.finfo``, never typed in. Formats:

* fp32 and fp16: IEEE 754-2019 binary32 / binary16.
* bf16: bfloat16, 8 exponent bits like fp32 and 7 stored mantissa bits (Kalamkar et al., "A Study of
  BFLOAT16 for Deep Learning Training", arXiv:1905.12322, 2019).
* fp8_e4m3 and fp8_e5m2: 8-bit formats of Micikevicius et al., "FP8 Formats for Deep Learning",
  arXiv:2209.05433 (2022). ``fp8_e4m3`` is the IEEE-like variant with infinities (ml_dtypes
  ``float8_e4m3``, largest finite 240), which is what ``nl.float8_e4m3`` maps to in trnsim.nki;
  ``fp8_e4m3fn`` is the OCP variant without infinities (largest finite 448), listed by the NKI ISA
  docs for NeuronCore-v4 only (hardware.md section 8.2).

Error formulas (unit roundoff, ulp, summation bounds) are from N. J. Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., SIAM 2002: section 2.1 (u = 2^-p for a p-bit
significand, |fl(x) - x| <= u|x| for round to nearest), and section 4.2 (recursive summation,
|error| <= (n-1) u sum|x_i| to first order). Stochastic rounding as an unbiased rounding whose
expected value is the exact value: Connolly, Higham and Mary, "Stochastic Rounding and Its
Probabilistic Backward Error Analysis", SIAM J. Sci. Comput. 43(1), 2021. Trainium's hardware
support for stochastic rounding: AWS Trainium product page (hardware.md, source A-TRN1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import ml_dtypes
import numpy as np

ROUNDING_MODES = ("nearest", "stochastic")


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format. All numbers are computed from numpy/ml_dtypes ``finfo``.

    precision_bits (p) counts the implicit leading 1: p = mantissa_bits + 1. ``epsilon`` is the gap
    between 1 and the next larger number, 2^(1-p); ``unit_roundoff`` is eps/2, the largest relative
    error of round-to-nearest for numbers in the normal range (Higham 2002, section 2.1).
    """

    name: str
    label: str
    dtype: np.dtype
    bits: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    max_normal: float
    min_normal: float
    min_subnormal: float
    epsilon: float
    has_inf: bool
    reference: str

    @property
    def precision_bits(self) -> int:
        return self.mantissa_bits + 1

    @property
    def unit_roundoff(self) -> float:
        return self.epsilon / 2.0

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits: p * log10(2)."""
        return self.precision_bits * math.log10(2.0)

    @property
    def dynamic_range_decades(self) -> float:
        """log10(max_normal / min_normal): how many powers of ten the normal range spans."""
        return math.log10(self.max_normal / self.min_normal)

    @property
    def uint(self) -> np.dtype:
        """Unsigned integer type of the same width (to look at the bits)."""
        return np.dtype(f"uint{self.bits}")

    def __str__(self) -> str:
        return (f"{self.label}: {self.bits} bits = 1 sign + {self.exponent_bits} exponent + {self.mantissa_bits} "
                f"mantissa; bias {self.bias}; max {self.max_normal:.6g}; min normal {self.min_normal:.3g}; "
                f"eps {self.epsilon:.3g}")


_SPECS = (
    ("fp32", "FP32", np.float32, "IEEE 754-2019 binary32"),
    ("bf16", "BF16", ml_dtypes.bfloat16, "bfloat16 (Kalamkar et al. 2019, arXiv:1905.12322)"),
    ("fp16", "FP16", np.float16, "IEEE 754-2019 binary16"),
    ("fp8_e4m3", "FP8 E4M3", ml_dtypes.float8_e4m3, "FP8 E4M3, IEEE-like with inf (Micikevicius et al. 2022, "
                                                    "arXiv:2209.05433; ml_dtypes float8_e4m3)"),
    ("fp8_e4m3fn", "FP8 E4M3FN", ml_dtypes.float8_e4m3fn, "FP8 E4M3, OCP variant, no inf (Micikevicius et al. 2022; "
                                                          "NKI lists it for NeuronCore-v4)"),
    ("fp8_e5m2", "FP8 E5M2", ml_dtypes.float8_e5m2, "FP8 E5M2 (Micikevicius et al. 2022, arXiv:2209.05433)"),
)

ALIASES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8_e4m3": "fp8_e4m3",
           "float8_e4m3fn": "fp8_e4m3fn", "float8_e5m2": "fp8_e5m2", "fp8": "fp8_e4m3"}


def _build(name: str, label: str, dt, reference: str) -> FloatFormat:
    dtype = np.dtype(dt)
    fi = np.finfo(dtype) if dtype == np.float32 or dtype == np.float16 else ml_dtypes.finfo(dtype)
    bits = dtype.itemsize * 8
    has_inf = bool(np.isinf(np.array([np.inf], dtype=np.float32).astype(dtype)[0]))
    return FloatFormat(
        name=name, label=label, dtype=dtype, bits=bits, exponent_bits=int(fi.nexp), mantissa_bits=int(fi.nmant),
        bias=int(1 - fi.minexp), max_normal=float(fi.max), min_normal=float(fi.smallest_normal),
        min_subnormal=float(fi.smallest_subnormal), epsilon=float(fi.eps), has_inf=has_inf, reference=reference)


FORMATS: dict[str, FloatFormat] = {n: _build(n, lbl, dt, ref) for n, lbl, dt, ref in _SPECS}
"""All formats by short name: fp32, bf16, fp16, fp8_e4m3, fp8_e4m3fn, fp8_e5m2."""


def float_format(name: str | FloatFormat) -> FloatFormat:
    """Look a format up by short name (``"bf16"``) or numpy/NKI name (``"bfloat16"``)."""
    if isinstance(name, FloatFormat):
        return name
    key = ALIASES.get(str(name), str(name))
    if key not in FORMATS:
        raise ValueError(f"unknown float format {name!r}; known formats: {', '.join(FORMATS)} "
                         f"(aliases: {', '.join(ALIASES)})")
    return FORMATS[key]


# ----------------------------------------------------------------------------- bits and decoding

@dataclass(frozen=True)
class Decoded:
    """One value stored in a format, taken apart into its fields.

    sign, exponent, mantissa: the raw integer fields; kind: "normal", "subnormal", "zero", "inf" or
    "nan"; value: the stored value (float); formula: how the fields give the value.
    """

    fmt: FloatFormat
    sign: int
    exponent: int
    mantissa: int
    kind: str
    value: float

    @property
    def bit_string(self) -> str:
        f = self.fmt
        return (f"{self.sign:01b} {self.exponent:0{f.exponent_bits}b} {self.mantissa:0{f.mantissa_bits}b}")

    @property
    def formula(self) -> str:
        f = self.fmt
        m = 2 ** f.mantissa_bits
        s = "-" if self.sign else "+"
        if self.kind == "normal":
            return f"{s}2^({self.exponent} - {f.bias}) x (1 + {self.mantissa}/{m}) = {self.value:.8g}"
        if self.kind == "subnormal":
            return f"{s}2^(1 - {f.bias}) x ({self.mantissa}/{m}) = {self.value:.8g}  (subnormal)"
        return f"{s}{self.kind}"


def to_bits(x: float | np.ndarray, fmt: str | FloatFormat) -> np.ndarray:
    """The raw bit patterns (unsigned integers) of ``x`` rounded to ``fmt`` (round to nearest even)."""
    f = float_format(fmt)
    return round_nearest(x, f).view(f.uint)


def decode(x: float, fmt: str | FloatFormat) -> Decoded:
    """Round ``x`` to ``fmt`` (nearest even) and take the stored value apart into its fields."""
    f = float_format(fmt)
    stored = round_nearest(np.asarray([x], dtype=np.float64), f)
    return decode_bits(int(stored.view(f.uint)[0]), f)


def decode_bits(bits: int, fmt: str | FloatFormat) -> Decoded:
    """Decode a raw bit pattern of ``fmt``."""
    f = float_format(fmt)
    if not 0 <= bits < 2 ** f.bits:
        raise ValueError(f"bit pattern {bits} does not fit {f.label} ({f.bits} bits): use 0 .. {2 ** f.bits - 1}")
    sign = bits >> (f.bits - 1)
    exponent = (bits >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1)
    mantissa = bits & ((1 << f.mantissa_bits) - 1)
    value = float(np.array([bits], dtype=f.uint).view(f.dtype)[0])
    if math.isnan(value):
        kind = "nan"
    elif math.isinf(value):
        kind = "inf"
    elif exponent == 0:
        kind = "zero" if mantissa == 0 else "subnormal"
    else:
        kind = "normal"
    return Decoded(f, int(sign), int(exponent), int(mantissa), kind, value)


def representable(fmt: str | FloatFormat, finite_only: bool = True) -> np.ndarray:
    """Every value of an 8- or 16-bit format, sorted, as float64 (NaNs dropped; +0 only once)."""
    f = float_format(fmt)
    if f.bits > 16:
        raise ValueError(f"{f.label} has 2^{f.bits} values; enumerate only 8- or 16-bit formats")
    vals = np.arange(2 ** f.bits, dtype=np.uint32).astype(f.uint).view(f.dtype).astype(np.float64)
    vals = vals[~np.isnan(vals)]
    if finite_only:
        vals = vals[np.isfinite(vals)]
    return np.unique(vals)


# ----------------------------------------------------------------------------- rounding

def round_nearest(x: float | np.ndarray, fmt: str | FloatFormat) -> np.ndarray:
    """Round to ``fmt`` with round-to-nearest, ties to even (the IEEE default), returned in ``fmt``.

    Inputs are float64/float32; conversion is a single rounding (ml_dtypes converts from the
    input type directly). Values beyond the largest finite number become inf (or NaN in formats
    without inf), as in a hardware cast without saturation.
    """
    f = float_format(fmt)
    arr = np.asarray(x)
    if f.dtype == np.float32:
        return arr.astype(np.float32)
    return arr.astype(f.dtype)


def _down_up(a: np.ndarray, f: FloatFormat) -> tuple[np.ndarray, np.ndarray]:
    """For magnitudes ``a`` >= 0 (float64): the neighbours lo <= a <= hi in ``f`` (as float64)."""
    r = round_nearest(a, f)
    rv = r.astype(np.float64)
    bits = r.view(f.uint).astype(np.int64)
    lo_bits = np.where(rv > a, bits - 1, bits)
    lo = lo_bits.astype(f.uint).view(f.dtype).astype(np.float64)
    hi = (lo_bits + 1).astype(f.uint).view(f.dtype).astype(np.float64)
    exact = lo == a
    hi = np.where(exact, lo, hi)
    return lo, hi


def round_stochastic(x: float | np.ndarray, fmt: str | FloatFormat, rng: np.random.Generator) -> np.ndarray:
    """Stochastic rounding to ``fmt``: round |x| up with probability (|x| - lo) / (hi - lo).

    lo and hi are the two representable neighbours of |x|; the sign is reapplied. The expected
    value of the result equals x exactly (Connolly, Higham and Mary 2021), which is why small
    updates are not lost on average. ``rng`` must be a seeded ``np.random.Generator``.
    Raises ValueError for NaN or for values beyond the format's largest finite number.
    """
    f = float_format(fmt)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("round_stochastic needs rng=np.random.default_rng(seed) so results are reproducible")
    xv = np.asarray(x, dtype=np.float64)
    if np.isnan(xv).any():
        raise ValueError("round_stochastic: input contains NaN")
    too_big = np.abs(xv) > f.max_normal
    if too_big.any():
        bad = float(np.abs(xv)[too_big].max())
        raise ValueError(f"round_stochastic: |x| = {bad:.6g} exceeds the largest {f.label} number "
                         f"{f.max_normal:.6g}; scale the values first")
    if f.name == "bf16":
        return _stochastic_bf16(xv, rng)
    a = np.abs(xv)
    lo, hi = _down_up(a, f)
    gap = hi - lo
    p_up = np.divide(a - lo, gap, out=np.zeros_like(a), where=gap > 0)
    u = rng.random(a.shape)
    mag = np.where(u < p_up, hi, lo)
    return (np.sign(xv) * mag).astype(f.dtype)   # exact: both neighbours are representable


def _stochastic_bf16(xv: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Fast path: bf16 is the top 16 bits of fp32, so add a uniform random 16-bit integer to the fp32
    bit pattern and truncate (the usual hardware construction). The input is first an fp32 value
    (the fp32 adder's output); P(round up) = (low 16 bits) / 2^16 = (|x| - lo) / (hi - lo) exactly."""
    bits = np.ascontiguousarray(xv, dtype=np.float32).view(np.uint32)
    noise = rng.integers(0, 1 << 16, size=bits.shape, dtype=np.uint32)
    out = ((bits + noise) & np.uint32(0xFFFF0000)).view(np.float32)
    return out.astype(ml_dtypes.bfloat16).reshape(np.shape(xv))   # exact: the low 16 bits are zero


def round_to(x: float | np.ndarray, fmt: str | FloatFormat, mode: str = "nearest",
             rng: np.random.Generator | None = None) -> np.ndarray:
    """Round with ``mode`` "nearest" (ties to even) or "stochastic" (needs ``rng``)."""
    if mode == "nearest":
        return round_nearest(x, fmt)
    if mode == "stochastic":
        if rng is None:
            raise ValueError("stochastic rounding needs rng=np.random.default_rng(seed)")
        return round_stochastic(x, fmt, rng)
    raise ValueError(f"unknown rounding mode {mode!r}; use one of {ROUNDING_MODES}")


def neighbours(x: float, fmt: str | FloatFormat) -> tuple[float, float]:
    """The representable numbers just below and just above ``x`` (equal if x is representable)."""
    f = float_format(fmt)
    lo, hi = _down_up(np.asarray([abs(float(x))]), f)
    if x < 0:
        return -float(hi[0]), -float(lo[0])
    return float(lo[0]), float(hi[0])


def adjacent(x: float, fmt: "str | FloatFormat") -> tuple[float | None, float | None]:
    """The representable numbers just below and just above a representable ``x`` in ``fmt``
    (None where there is no finite one: beyond the largest finite number).

    Probes a quarter of the spacing away on each side: below a power of two the spacing halves, so a
    quarter of ``ulp(x)`` still lies between ``x`` and its lower neighbour.
    """
    f = float_format(fmt)
    quarter = float(ulp(x, f)) / 4
    below = neighbours(x - quarter, f)[0]
    above = neighbours(x + quarter, f)[1]

    def ok(v: float, side: int) -> bool:
        return math.isfinite(v) and abs(v) <= f.max_normal and (v - x) * side > 0

    return (below if ok(below, -1) else None), (above if ok(above, 1) else None)


def shown_digits(fmt: str | FloatFormat) -> int:
    """Significant digits that print a format's adjacent numbers distinctly (fp32 neighbours of 1000 need 9:
    999.999939; formats of at most 10 mantissa bits, 7)."""
    return 9 if float_format(fmt).mantissa_bits > 10 else 7


def stochastic_up_probability(x: float, fmt: str | FloatFormat) -> float:
    """Probability that stochastic rounding sends |x| to the larger-magnitude neighbour: (|x| - lo) / (hi - lo)."""
    lo, hi = neighbours(abs(float(x)), fmt)
    return 0.0 if hi == lo else (abs(float(x)) - lo) / (hi - lo)


def ulp(x: float | np.ndarray, fmt: str | FloatFormat) -> np.ndarray:
    """Spacing of ``fmt`` numbers in the binade of |x|: 2^(max(e, e_min) - m) (Higham 2002, section 2.1).

    e = floor(log2|x|), e_min = 1 - bias, m = mantissa bits. Below the normal range the spacing is
    the smallest subnormal. ulp(0) is the smallest subnormal.
    """
    f = float_format(fmt)
    a = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, f.min_normal)))
    e = np.maximum(e, 1 - f.bias)
    return np.ldexp(1.0, (e - f.mantissa_bits).astype(int))


def relative_error(x: float | np.ndarray, fmt: str | FloatFormat, mode: str = "nearest",
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """|round(x) - x| / |x| for nonzero x (float64)."""
    xv = np.asarray(x, dtype=np.float64)
    r = round_to(xv, fmt, mode, rng).astype(np.float64)
    return np.abs(r - xv) / np.abs(xv)


@dataclass(frozen=True)
class ErrorSweep:
    """Rounding error of one format over a range of magnitudes (for the ulp figure)."""

    fmt: FloatFormat
    magnitudes: np.ndarray       # sample points (log-spaced)
    ulp: np.ndarray              # spacing at each magnitude
    relative_error: np.ndarray   # round-to-nearest relative error of each sample
    overflow: np.ndarray         # True where the magnitude exceeds max_normal


def error_sweep(fmt: str | FloatFormat, lo: float, hi: float, n: int = 2000,
                rng: np.random.Generator | None = None) -> ErrorSweep:
    """Sample ``n`` log-spaced magnitudes in [lo, hi] (jittered with ``rng`` if given) and measure rounding.

    Values above the format's range are flagged in ``overflow`` and get NaN error.
    """
    f = float_format(fmt)
    if not 0 < lo < hi:
        raise ValueError(f"error_sweep needs 0 < lo < hi, got lo={lo}, hi={hi}")
    logs = np.linspace(math.log10(lo), math.log10(hi), n)
    if rng is not None:
        logs = logs + rng.uniform(-0.5, 0.5, n) * (logs[1] - logs[0] if n > 1 else 0.0)
    mags = 10.0 ** logs
    over = mags > f.max_normal
    rel = np.full(n, np.nan)
    ok = ~over
    rel[ok] = relative_error(mags[ok], f)
    return ErrorSweep(f, mags, ulp(mags, f), rel, over)


# ----------------------------------------------------------------------------- accumulation

@dataclass(frozen=True)
class SumResult:
    """A running sum kept in an accumulator format.

    partial: the running sum after each addition (the stored accumulator, as float64);
    exact: the running sum of the same fp32 inputs computed in float64 (the reference).
    """

    acc: FloatFormat
    mode: str
    partial: np.ndarray
    exact: np.ndarray

    @property
    def total(self) -> float:
        """Final value of the sum (mean over the independent sums for 2-D inputs)."""
        return float(np.mean(self.partial[-1]))

    @property
    def exact_total(self) -> float:
        return float(np.mean(self.exact[-1]))

    @property
    def relative_error(self) -> float:
        """|final - exact| / |exact| (mean over the independent sums for 2-D inputs)."""
        e = self.exact[-1]
        err = np.abs(self.partial[-1] - e) / np.where(e != 0, np.abs(e), 1.0)
        return float(np.mean(err))


def accumulate(values: Sequence[float] | np.ndarray, acc: str | FloatFormat = "fp32", mode: str = "nearest",
               rng: np.random.Generator | None = None, start: float = 0.0) -> SumResult:
    """Add ``values`` one by one into an accumulator held in format ``acc``.

    Each step computes ``s + v`` in fp32 and rounds the result to ``acc`` with ``mode``. With acc
    fp32 this is ordinary fp32 summation (PSUM on NeuronCore-v2/v3, where the NKI 0.6 ``nc_matmul``
    reference requires a float32 destination and the Tensor Engine accumulates in float32); with acc bf16 it is what NeuronCore-v4 does for a
    BF16 PSUM tensor: "upcast to FP32, added, then rounded back (RNE or SR)" (hardware.md
    section 8.3). ``values`` may be 1-D (one sum) or 2-D ``[steps, sums]`` (independent sums in
    parallel). Returns partial sums with the same leading dimension as ``values``.
    """
    f = float_format(acc)
    v = np.asarray(values, dtype=np.float64)
    if v.ndim not in (1, 2) or v.shape[0] == 0:
        raise ValueError(f"accumulate needs a non-empty 1-D or 2-D [steps, sums] array, got shape {v.shape}")
    if mode not in ROUNDING_MODES:
        raise ValueError(f"unknown rounding mode {mode!r}; use one of {ROUNDING_MODES}")
    if mode == "stochastic" and rng is None:
        raise ValueError("stochastic accumulation needs rng=np.random.default_rng(seed)")
    vf = v.astype(np.float32)
    s = round_to(np.full(v.shape[1:], start, dtype=np.float64), f, mode, rng).astype(np.float32)
    exact = start + np.cumsum(vf.astype(np.float64), axis=0)
    if f.dtype == np.float32:   # fp32 adder into an fp32 accumulator: numpy's cumsum is the same sequential sum
        partial = np.cumsum(np.concatenate([s[None], vf]), axis=0, dtype=np.float32)[1:].astype(np.float64)
        return SumResult(f, mode, partial, exact)
    partial = np.empty(v.shape, dtype=np.float64)
    if f.name == "bf16":
        _accumulate_bf16(s, vf, mode, rng, partial)
        return SumResult(f, mode, partial, exact)
    for k in range(v.shape[0]):
        t = s + vf[k]                                   # fp32 adder
        if f.dtype != np.float32:
            t = round_to(t.astype(np.float64), f, mode, rng).astype(np.float32)
        s = t
        partial[k] = s
    return SumResult(f, mode, partial, exact)


def _accumulate_bf16(s: np.ndarray, vf: np.ndarray, mode: str, rng: np.random.Generator | None,
                     partial: np.ndarray) -> None:
    """The bf16 accumulator loop on fp32 bit patterns (bf16 = top 16 bits of fp32), same results as
    ``round_to`` but without per-step conversions: RNE adds 0x7FFF plus the lowest kept bit and
    truncates; SR adds a uniform random 16-bit integer and truncates. Sums stay far from overflow."""
    mask = np.uint32(0xFFFF0000)
    s = np.array(s, dtype=np.float32)
    noise = rng.integers(0, 1 << 16, size=vf.shape, dtype=np.uint32) if mode == "stochastic" else None
    for k in range(vf.shape[0]):
        b = np.atleast_1d(s + vf[k]).view(np.uint32)
        if noise is None:
            b = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) & mask
        else:
            b = (b + np.atleast_1d(noise[k])) & mask
        s = b.view(np.float32).reshape(s.shape)
        partial[k] = s


def summation_error_bound(n: int, fmt: str | FloatFormat) -> float:
    """First-order worst-case relative error of recursive summation of n positive terms: (n - 1) u.

    Higham 2002, eq. (4.4): |s_hat - s| <= gamma_{n-1} sum|x_i|, gamma_k = k u / (1 - k u) ~ k u.
    Returns min(1, (n-1) u): the bound is useless beyond that.
    """
    f = float_format(fmt)
    return min(1.0, (n - 1) * f.unit_roundoff)


# ----------------------------------------------------------------------------- matmul accuracy

@dataclass(frozen=True)
class MatmulAccuracy:
    """Relative error of ``A.T @ B`` with inputs rounded to ``fmt`` and fp32 accumulation."""

    fmt: FloatFormat
    k: int
    relative_error: float        # ||C - C_exact||_F / ||C_exact||_F
    input_rounding_error: float  # mean relative rounding error of the inputs


def matmul_accuracy(fmt: str | FloatFormat, k: int = 512, m: int = 32, n: int = 32,
                    rng: np.random.Generator | None = None, scale: float = 1.0) -> MatmulAccuracy:
    """Round standard-normal inputs (times ``scale``) to ``fmt``, multiply exactly, accumulate in fp32.

    Products of two inputs of at most 11 significant bits are exact in fp32 (24 bits), as the
    Tensor Engine's are; the sum over k is carried out in fp32 (PSUM). The reference is float64
    arithmetic on the unrounded fp32 inputs.
    """
    f = float_format(fmt)
    rng = rng if rng is not None else np.random.default_rng(0)
    a = (rng.standard_normal((k, m)) * scale).astype(np.float32)
    b = (rng.standard_normal((k, n)) * scale).astype(np.float32)
    ar = round_nearest(a, f).astype(np.float64)
    br = round_nearest(b, f).astype(np.float64)
    if not (np.isfinite(ar).all() and np.isfinite(br).all()):
        raise ValueError(f"inputs overflow {f.label} (max {f.max_normal:.6g}) at scale {scale:g}; scale them down")
    prods = ar[:, :, None] * br[:, None, :]                      # [k, m, n], exact
    acc = accumulate(prods.reshape(k, m * n), "fp32").partial[-1].reshape(m, n)
    exact = a.astype(np.float64).T @ b.astype(np.float64)
    rel = float(np.linalg.norm(acc - exact) / np.linalg.norm(exact))
    inp = float(np.mean(np.abs(ar - a) / np.maximum(np.abs(a), np.finfo(np.float32).tiny)))
    return MatmulAccuracy(f, k, rel, inp)


# ----------------------------------------------------------------------------- speed (catalog)

CATALOG_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
                 "fp8_e4m3fn": "fp8"}
"""Format -> key of ``CoreSpec.tensor_tflops`` (vendor per-core Tensor Engine figures)."""


@dataclass(frozen=True)
class SpeedRow:
    fmt: FloatFormat
    target: str
    tensor_tflops: float | None     # vendor per-NeuronCore dense figure (None: format not listed)
    speedup_vs_bf16: float | None
    source: str


def tensor_speed(fmt: str | FloatFormat, target: str = "trn1") -> SpeedRow:
    """Tensor Engine dense TFLOPS of one NeuronCore for ``fmt`` on ``target``, from the catalog.

    Uses the vendor per-core figures ``trnsim.target(t).core.tensor_tflops`` (NC-v2: 92 BF16/FP8,
    23 FP32; NC-v3: 79 BF16, 158 FP8, 20 FP32; hardware.md section 2).
    """
    from trnsim.catalog import target as _target

    f = float_format(fmt)
    core = _target(target).core
    key = CATALOG_DTYPE[f.name]
    tf = core.tensor_tflops.get(key)
    bf = core.tensor_tflops.get("bf16")
    src = core.sources.get("tensor_tflops")
    return SpeedRow(f, target, None if tf is None else float(tf),
                    None if tf is None or not bf else float(tf) / float(bf),
                    f"{src.citation} (as of {src.as_of})" if src is not None else "hardware catalog")


def format_table(names: Iterable[str] = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")) -> str:
    """A fixed-width table of format facts, all computed from ml_dtypes."""
    head = f"{'format':<11}{'bits':>5}{'exp':>5}{'man':>5}{'bias':>6}{'max':>13}{'min normal':>12}" \
           f"{'eps':>11}{'digits':>8}{'decades':>9}"
    lines = [head, "-" * len(head)]
    for n in names:
        f = float_format(n)
        lines.append(f"{f.label:<11}{f.bits:>5}{f.exponent_bits:>5}{f.mantissa_bits:>5}{f.bias:>6}"
                     f"{f.max_normal:>13.4g}{f.min_normal:>12.3g}{f.epsilon:>11.3g}{f.decimal_digits:>8.1f}"
                     f"{f.dynamic_range_decades:>9.1f}")
    return "\n".join(lines)
