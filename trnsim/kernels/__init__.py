"""Reference kernels written in trnsim.nki, each with the optimisation it demonstrates in its docstring.

- Matmul journey (NKI tutorial sequence): ``matmul_tiled`` -> ``matmul_hoisted`` -> ``matmul_block_free``
  -> ``matmul_fully_blocked`` (``MATMUL_JOURNEY``).
- ``tensor_add``, ``transpose2d``.
- ``softmax``, ``rmsnorm``, ``layernorm``.
- ``attention`` (unfused, scores through HBM) and ``flash_attention`` (fused, online softmax).

``reference`` holds the numpy definitions the kernels are tested against; ``source(kernel)`` returns a kernel's
code without its docstring, for printing next to an explanation.
"""
from trnsim.kernels.attention import attention, flash_attention
from trnsim.kernels.basic import tensor_add, transpose2d
from trnsim.kernels.matmul import (
    MATMUL_JOURNEY, matmul_block_free, matmul_fully_blocked, matmul_hoisted, matmul_tiled,
)
from trnsim.kernels.normalization import layernorm, rmsnorm, softmax
from trnsim.kernels.show import source

__all__ = [
    "MATMUL_JOURNEY", "matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_fully_blocked",
    "tensor_add", "transpose2d", "softmax", "rmsnorm", "layernorm", "attention", "flash_attention", "source",
]
