"""Beta 1 ``nki.isa`` (``import trnsim.neuronxcc.nki.isa as nisa``): the instructions of :mod:`trnsim.nki.isa`,
which accept both the Beta 1 value-returning forms (``t = nisa.nc_matmul(stationary, moving)``) and the
destination-first forms."""
from trnsim.nki.isa import *  # noqa: F401,F403
from trnsim.nki.isa import __all__  # noqa: F401
from trnsim.nki.isa.enums import engine as _engine

# Beta 1 spelled the engine selectors as module constants
tensor_engine = _engine.tensor
vector_engine = _engine.vector
scalar_engine = _engine.scalar
gpsimd_engine = _engine.gpsimd
unknown_engine = _engine.unknown
__all__ = list(__all__) + ["tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine", "unknown_engine"]
