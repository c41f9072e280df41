"""The x4 packed MX data types of NeuronCore-v4: ``float8_e5m2_x4``, ``float8_e4m3fn_x4``, ``float4_e2m1fn_x4``.

One element of an x4 type holds four narrow floats along the contraction (x4) dimension: the fp8 types
are 32-bit words holding four 8-bit floats, ``float4_e2m1fn_x4`` is a 16-bit word holding four 4-bit
floats (aws-neuron-sdk ``nki/api/nki/isa``: ``quantize_mx``, ``nc_matmul_mx``). Lane ``j`` (0..3) of a word
sits in bits ``[j*w, (j+1)*w)`` (``w`` = 8 or 4), i.e. the four values in memory order on a little-endian
machine. The narrow values are rounded with ml_dtypes (round to nearest even, saturating formats).

``pack_x4(values, name)`` packs float values [..., 4k] into words [..., k]; ``unpack_x4(words, name)`` gives
back float32 [..., 4k]. An x4 tensor's storage is the word array (uint32 or uint16).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

# name -> (narrow float type, bits per lane, word storage dtype)
X4_TYPES: dict[str, tuple] = {
    "float8_e5m2_x4": (ml_dtypes.float8_e5m2, 8, np.dtype(np.uint32)),
    "float8_e4m3fn_x4": (ml_dtypes.float8_e4m3fn, 8, np.dtype(np.uint32)),
    "float4_e2m1fn_x4": (ml_dtypes.float4_e2m1fn, 4, np.dtype(np.uint16)),
}
LANES = 4


def _spec(name: str):
    try:
        return X4_TYPES[name]
    except KeyError:
        raise ValueError(f"{name!r} is not an x4 packed type; use one of {sorted(X4_TYPES)}") from None


def lane_codes(values, name: str) -> np.ndarray:
    """The narrow-float bit codes (uint8, one per value) of ``values`` rounded to the lane format of ``name``."""
    narrow, bits, _ = _spec(name)
    codes = np.asarray(values, dtype=np.float32).astype(narrow).view(np.uint8)
    return codes & np.uint8((1 << bits) - 1)


def pack_x4(values, name: str) -> np.ndarray:
    """Pack float values of shape [..., 4k] into x4 words [..., k] of type ``name``."""
    narrow, bits, word = _spec(name)
    a = np.asarray(values, dtype=np.float32)
    if a.ndim == 0 or a.shape[-1] % LANES:
        raise ValueError(f"pack_x4 needs a last dimension that is a multiple of 4, got shape {a.shape}")
    codes = lane_codes(a, name).astype(word).reshape(a.shape[:-1] + (a.shape[-1] // LANES, LANES))
    out = np.zeros(codes.shape[:-1], dtype=word)
    for j in range(LANES):
        out |= codes[..., j] << word.type(bits * j)
    return out


def unpack_x4(words, name: str) -> np.ndarray:
    """Unpack x4 words [..., k] of type ``name`` into float32 values [..., 4k]."""
    narrow, bits, word = _spec(name)
    w = np.asarray(words)
    if w.dtype != word:
        w = w.astype(word)
    mask = word.type((1 << bits) - 1)
    lanes = np.stack([((w >> word.type(bits * j)) & mask).astype(np.uint8) for j in range(LANES)], axis=-1)
    vals = lanes.view(narrow).astype(np.float32)
    return vals.reshape(w.shape[:-1] + (w.shape[-1] * LANES,)) if w.ndim else vals


__all__ = ["X4_TYPES", "LANES", "pack_x4", "unpack_x4", "lane_codes"]
