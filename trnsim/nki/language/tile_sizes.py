"""``nl.tile_size``: the per-target tile constants (read from the hardware catalog)."""
from __future__ import annotations

from trnsim.nki.language.types import NKIObject
from trnsim.nki.rules import limits_for


# ----------------------------------------------------------------------------- tile_size

class _TileSize(NKIObject):
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
        """The moving free size kernels tile by (512; NC-v4's nc_matmul accepts up to 4096, see the catalog)."""
        return self._lim().tile_gemm_moving_fmax

    @property
    def bn_stats_fmax(self) -> int:
        return self._lim().bn_stats_fmax

    @property
    def total_available_sbuf_size(self) -> int:
        """Usable SBUF bytes per partition (deprecated in NKI 0.4 for ``sbuf_fmax_bytes``)."""
        return self._lim().sbuf_bytes_per_partition

    @property
    def psum_bank_fmax_bytes(self) -> int:
        """Bytes per partition of one PSUM bank."""
        return self._lim().psum_bank_bytes

    @property
    def sbuf_fmax_bytes(self) -> int:
        """Usable SBUF bytes per partition (the largest free size of an SBUF tile, in bytes)."""
        return self._lim().sbuf_bytes_per_partition

    @property
    def sbuf_fmax(self) -> int:
        """Usable SBUF per partition in fp32 elements."""
        return self._lim().sbuf_bytes_per_partition // 4

    @property
    def sbuf_size_bytes(self) -> int:
        """Total SBUF capacity in bytes, all partitions (catalog bytes per partition x partitions)."""
        import trnsim
        lim = self._lim()
        return int(trnsim.target(lim.target).core.sbuf_bytes_per_partition) * lim.pmax

    @property
    def psum_min_align(self) -> int:
        """Minimum byte alignment of a PSUM free-dimension address (catalog ``tile_align``, source K-KLR)."""
        return self._align("psum_min_align_bytes")

    @property
    def sbuf_min_align(self) -> int:
        """Minimum byte alignment of an SBUF free-dimension address (catalog ``tile_align``, source K-KLR)."""
        return self._align("sbuf_min_align_bytes")

    def _align(self, field: str) -> int:
        lim = self._lim()
        value = getattr(lim, field)
        if value is None:
            from trnsim.nki.rules import KernelError
            raise KernelError("err_unsupported_on_target", f"nl.tile_size.{field.replace('_bytes', '')} has no catalog "
                              f"value for {lim.target} ({lim.neuroncore_version})",
                              "use a NeuronCore-v2+ target (trn1, trn2, trn3)")
        return int(value)


tile_size = _TileSize()


__all__ = ["tile_size"]
