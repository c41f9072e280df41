"""Destination of the instructions added for NKI 0.6: the given ``dst`` tile (checked by the instruction),
or, in the Beta 1 value-returning form (``t = nisa.max8(src=x)``), a new SBUF result tile."""
from __future__ import annotations

from trnsim.nki.isa.common import finish, out_tile, tile_arg


def dst_or_new(dst, shape, dtype_name: str, api: str, buffers=("sbuf", "psum")):
    """(destination view, new result tensor or None)."""
    if dst is None:
        return out_tile(tuple(shape), dtype_name, "sbuf", api, None)
    return tile_arg(dst, api, "dst", buffers), None


def done(ctx, dst, new_tensor):
    """Finish the instruction; the value it returns (``dst``, or the new result tile)."""
    finish(ctx, new_tensor, None)
    return dst if new_tensor is None else new_tensor
