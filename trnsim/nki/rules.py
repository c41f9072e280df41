"""Kernel rule checking: ``KernelError``, per-target limits, and user-line location.

Every rule violation raises :class:`KernelError` (a ``ValueError``) whose message names the rule
(NKI's error-catalogue name where one exists, SDK-legacy ``general/nki/api/nki.errors.rst``), the
offending shape/value, the limit for the target, and how to fix it, and points at the kernel line
that issued the call (file:line and its source text).
"""
from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from functools import lru_cache

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
# frames in these directories are trnsim's own (errors point at the first frame outside them): trnsim/nki and the
# Beta 1 adapter trnsim/neuronxcc. Both start with the common prefix below, checked with one startswith.
_INTERNAL_DIRS = (_PKG_DIR, os.path.join(os.path.dirname(_PKG_DIR), "neuronxcc"))
TARGETS = ("trn1", "inf2", "trn2", "trn3")


class KernelError(ValueError):  # shown as trnsim.nki.KernelError (see __module__ below)
    """A kernel broke an NKI rule. ``rule`` is the rule name; ``location`` is "file:line"."""

    def __init__(self, rule: str, message: str, fix: str = "", location: str | None = None,
                 source: str | None = None):
        self.rule = rule
        self.detail = message
        self.fix = fix
        if location is None:
            location, source = user_location()
        self.location = location
        self.source = source
        text = f"[{rule}] {message}"
        if fix:
            text += f"\n  fix: {fix}"
        if location:
            text += f"\n  at {location}" + (f": {source}" if source else "")
        super().__init__(text)


KernelError.__module__ = "trnsim.nki"


def _is_internal(filename: str) -> bool:
    return filename.startswith(_INTERNAL_DIRS)


def user_frame():
    """The innermost stack frame outside trnsim.nki (the kernel line that called the API)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_INTERNAL_DIRS):
        f = f.f_back
    return f


def user_location() -> tuple[str | None, str | None]:
    """("path:line", source text) of the calling kernel line, or (None, None)."""
    f = user_frame()
    if f is None:
        return None, None
    fn, ln = f.f_code.co_filename, f.f_lineno
    src = linecache.getline(fn, ln).strip() or None
    return f"{fn}:{ln}", src


def short_location(skip: int = 0) -> str | None:
    """"file.py:42" of the calling kernel line (basename only), for trace records.

    ``skip``: number of callers above the caller known to be inside trnsim.nki (their frames are not
    inspected, which saves creating their frame objects)."""
    try:
        f = sys._getframe(1 + skip)
    except ValueError:
        f = sys._getframe(1)
    pkg = _INTERNAL_DIRS
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(pkg):
            break
        f = f.f_back
    else:
        return None
    # keyed by the code object's id and the bytecode offset (cheap; f_lineno decodes the line table); the entry
    # holds the code object, so the id cannot be reused while the entry exists
    key = (id(code), f.f_lasti)
    hit = _SHORT.get(key)
    if hit is None:
        if len(_SHORT) > 65536:
            _SHORT.clear()
        hit = _SHORT[key] = (f"{os.path.basename(code.co_filename)}:{f.f_lineno}", code)
    return hit[0]


_SHORT: dict[tuple[int, int], tuple] = {}   # (id(code), f_lasti) -> ("basename:line", code): shared strings


@dataclass(frozen=True)
class Limits:
    """Per-target NKI limits, all read from the hardware catalog (``trnsim.target(name).core``).

    Units: elements unless the name says bytes.
    """
    target: str
    pmax: int                          # partitions per SBUF/PSUM tile (nl.tile_size.pmax)
    psum_fmax: int                     # fp32 elements per partition in one PSUM bank
    psum_bank_bytes: int               # bytes per partition in one PSUM bank
    psum_banks: int                    # PSUM banks per partition
    sbuf_bytes_per_partition: int      # usable SBUF bytes per partition
    gemm_stationary_fmax: int
    gemm_moving_fmax: int
    bn_stats_fmax: int
    tensor_transpose_max: tuple[int, int]   # (partitions, free) limit of nc_transpose on TensorE
    vector_transpose_max: tuple[int, int]   # same on VectorE
    vector_free_max_sbuf: int | None
    vector_free_max_psum: int | None
    neuroncore_version: str
    hbm_bytes: int = 0                 # device memory of the chip (catalog device_memory_gib * 2**30)
    tile_gemm_moving_fmax: int = 0     # nl.tile_size.gemm_moving_fmax (gemm_moving_fmax is the ISA limit)
    psum_min_align_bytes: int | None = None   # nl.tile_size.psum_min_align (catalog tile_align)
    sbuf_min_align_bytes: int | None = None   # nl.tile_size.sbuf_min_align


def _pair(v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _from_catalog(name: str) -> Limits:
    import trnsim
    t = trnsim.target(name)
    core = t.core
    tile = core.tile
    sbuf = core.sbuf_capacity_bytes_per_partition
    return Limits(
        target=name, pmax=int(tile.pmax), psum_fmax=int(tile.psum_bank_fmax),
        psum_bank_bytes=int(core.psum_bank_bytes_per_partition), psum_banks=int(core.psum_banks),
        sbuf_bytes_per_partition=int(sbuf), gemm_stationary_fmax=int(tile.gemm_stationary_fmax),
        gemm_moving_fmax=int(tile.gemm_moving_fmax), bn_stats_fmax=int(tile.bn_stats_fmax),
        tensor_transpose_max=_pair(tile.tensor_transpose_max), vector_transpose_max=_pair(tile.vector_transpose_max),
        vector_free_max_sbuf=tile.vector_free_max_sbuf, vector_free_max_psum=tile.vector_free_max_psum,
        neuroncore_version=str(core.version), hbm_bytes=int(float(t.chip.device_memory_gib) * 2 ** 30),
        tile_gemm_moving_fmax=int(tile.nl_gemm_moving_fmax or tile.gemm_moving_fmax),
        psum_min_align_bytes=core.psum_min_align_bytes, sbuf_min_align_bytes=core.sbuf_min_align_bytes)


@lru_cache(maxsize=None)
def limits_for(target: str) -> Limits:
    """Limits of kernel target ``target`` ("trn1", "inf2", "trn2", "trn3")."""
    if target not in TARGETS:
        raise KernelError("unknown_target", f"unknown kernel target {target!r}",
                          f"use one of {', '.join(TARGETS)}", location="")
    return _from_catalog(target)


def fmt_shape(shape) -> str:
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


class RemovedApiError(KernelError, AttributeError):
    """An API of an older NKI generation used through the current one (also an AttributeError, so
    ``hasattr`` answers False). The message names the current form."""


RemovedApiError.__module__ = "trnsim.nki"


def removed_api(name: str, current_form: str) -> RemovedApiError:
    """The error for ``name``, which NKI 0.6 no longer has; ``current_form`` says what to write instead."""
    return RemovedApiError("err_removed_api", f"{name} is not part of NKI 0.6 (it belongs to NKI Beta 1, "
                           "neuronxcc.nki)",
                           f"{current_form}; or keep Beta 1 code as it is with "
                           "import trnsim.neuronxcc.nki as nki (and .language as nl, .isa as nisa)", location="")
