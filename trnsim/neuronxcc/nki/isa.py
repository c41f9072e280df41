"""Beta 1 ``nki.isa`` (``import trnsim.neuronxcc.nki.isa as nisa``): the instructions of :mod:`trnsim.nki.isa`,
which accept both the Beta 1 value-returning forms (``t = nisa.nc_matmul(stationary, moving)``) and the
destination-first forms."""
from trnsim.nki.isa import *  # noqa: F401,F403
from trnsim.nki.isa import __all__  # noqa: F401
