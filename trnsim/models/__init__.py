"""Analytic teaching models of the simulator: closed-form counts and costs the notebooks reason with.

Each module is pure (numbers in, numbers out, from the catalog and the cost model); none imports the
course. :mod:`~trnsim.models.matmul_math` (one matmul's FLOPs, bytes, tiles, roofline estimate),
:mod:`~trnsim.models.systolic` (the systolic array), :mod:`~trnsim.models.tiling` (tile shapes and the
simulator's error formatting), :mod:`~trnsim.models.numerics` (number formats), :mod:`~trnsim.models.compare`
(chips and instances side by side), :mod:`~trnsim.models.calibration` (leave-one-out residual factors) and
:mod:`~trnsim.models.journey` (the matmul journey's traffic and block choices, and the fusion comparisons).
"""
