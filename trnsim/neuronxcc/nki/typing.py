"""Beta 1 ``nki.typing`` (``import trnsim.neuronxcc.nki.typing as nt``): the same shape-only tensor types as
:mod:`trnsim.nki.typing`."""
from trnsim.nki.typing import *  # noqa: F401,F403
from trnsim.nki.typing import MutableTensorType, TensorSpec, __all__, mutable_tensor, tensor  # noqa: F401
