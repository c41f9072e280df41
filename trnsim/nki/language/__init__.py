"""``nki.language``: the tile-level language (``import trnsim.nki.language as nl``).

Layer 4 of trnsim.nki (tensors -> context -> isa -> **language** -> runtime): every call lowers to one
or more :mod:`trnsim.nki.isa` instructions (``nl.load``/``nl.store`` -> ``dma_copy``; ``nl.matmul`` ->
``nc_matmul``; unary math -> ScalarE ``activation``; binary ops -> VectorE ``tensor_tensor`` /
``tensor_scalar``; reductions -> ``tensor_reduce``; ``nl.copy`` -> ``tensor_copy``; ``nl.transpose`` ->
``nc_transpose``), as the NKI 0.6 reference (aws-neuron-sdk ``nki/api/nki/language``) describes.

Adding names: put them in the module they belong to (or a new ``language/<topic>.py`` with an
``__all__``) and add one ``from trnsim.nki.language.<topic> import *`` line below. Build on the
instruction helpers (:mod:`trnsim.nki.isa.common`), never on :mod:`trnsim.nki.runtime`.

Names of the Beta 1 language that NKI 0.2+ removed (``arange``, ``mgrid``, ``par_dim``, ...) raise
:class:`~trnsim.nki.rules.RemovedApiError` naming the 0.6 form; Beta 1 code runs unchanged under
``import trnsim.neuronxcc.nki.language as nl``.
"""
from trnsim.nki.dtypes import (bfloat16, bool_, float8_e4m3, float8_e4m3fn, float8_e5m2, float16,  # noqa: F401
                               float32, int8, int16, int32, tfloat32, uint8, uint16, uint32)
from trnsim.nki.dtypes import (float4_e2m1fn_x4, float8_e4m3fn_x4, float8_e5m2_x4,  # noqa: F401
                               float8_e8m0fnu)
from trnsim.nki.language.buffers import *  # noqa: F401,F403
from trnsim.nki.language.tile_sizes import *  # noqa: F401,F403
from trnsim.nki.language.control import *  # noqa: F401,F403
from trnsim.nki.language.creation import *  # noqa: F401,F403
from trnsim.nki.language.memory import *  # noqa: F401,F403
from trnsim.nki.language.compute import *  # noqa: F401,F403
from trnsim.nki.language.types import *  # noqa: F401,F403
from trnsim.nki.language.queries import *  # noqa: F401,F403
from trnsim.nki.language.math_more import *  # noqa: F401,F403
from trnsim.nki.language.random_numbers import *  # noqa: F401,F403
from trnsim.nki.language.loops import *  # noqa: F401,F403
from trnsim.nki.language.constants import *  # noqa: F401,F403
from trnsim.nki.language.tile_sizes import _TileSize  # noqa: F401
from trnsim.nki.language import assign as _assign, compute as _compute
from trnsim.nki.rules import removed_api as _removed_api
from trnsim.nki.tensors import HOOKS as _HOOKS

_HOOKS.assign = _assign.assign
_HOOKS.augmented = _assign.augmented
_HOOKS.ops = _compute

# Beta 1 names removed from the language, with their current form (nki/migration/index.rst)
_REMOVED = {
    "arange": "index with slices (x[0:128, 0:512]) or access patterns (x.ap(...)); nl.arange was removed in NKI 0.2",
    "mgrid": "index with slices (x[0:128, 0:512]) or access patterns (x.ap(...)); nl.mgrid was removed in NKI 0.2",
    "par_dim": "block dimensions were removed: the partition dimension is always the first; allocate one tile per "
               "block (e.g. a Python list of tiles)",
    "loop_reduce": "accumulate explicitly: acc[...] = nl.add(acc, x) in a loop",
    "static_cast": "convert on the host with numpy (x.astype(...)) or inside the kernel with nl.copy(x, dtype=...)",
    "iota": "fill index values with the instruction nisa.iota(dst, pattern, offset=0, channel_multiplier=0); "
            "nki.language has no iota",
    "atomic_rmw": "a read-modify-write DMA into HBM is nisa.dma_compute(dst=..., srcs=[...], reduce_op=nl.add); "
                  "gather or scatter its rows with .ap(..., vector_offset=idx, indirect_dim=0)",
}


def __getattr__(name: str):
    if name in _REMOVED:
        raise _removed_api(f"nl.{name}", _REMOVED[name])
    raise AttributeError(f"module 'trnsim.nki.language' has no attribute {name!r}")


__all__ = sorted(n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, type(__import__("sys")))
                 and n not in ("annotations",))
