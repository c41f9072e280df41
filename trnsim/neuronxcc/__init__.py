"""``trnsim.neuronxcc``: the retired NKI Beta 1 namespace (``neuronxcc.nki``), kept as a compatibility layer.

``import neuronxcc.nki as nki`` becomes ``import trnsim.neuronxcc.nki as nki`` (only the import lines
change). New code uses :mod:`trnsim.nki` (NKI 0.6).
"""
