"""``nl.tile_size``: the per-target tile constants (read from the hardware catalog)."""
from __future__ import annotations

from trnsim.nki.rules import limits_for


# ----------------------------------------------------------------------------- tile_size

class _TileSize:
    """``nl.tile_size``: per-target tile constants (current kernel's target; trn1 outside a kernel)."""

    def _lim(self):
        from trnsim.nki import context
        ctx = context._CURRENT
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


__all__ = ["tile_size"]
