"""trnsim: learn AWS Trainium and Inferentia on a laptop.

The package root exposes the hardware catalog (``chip``, ``instance``, ``target``,
``core`` and their plural listings). The tree reads as the architecture:

The simulator (never imports the course):
``trnsim.catalog`` (hardware records, data files, their schema, shared argument checks),
``trnsim.models`` (analytic teaching models), ``trnsim.nki`` (kernel language, NKI 0.6),
``trnsim.neuronxcc`` (retired NKI Beta 1 compatibility layer), ``trnsim.perf`` (cost model),
``trnsim.kernels``, ``trnsim.cluster``, ``trnsim.training``, ``trnsim.serving``, ``trnsim.deploy``.

The course around it: ``trnsim.course`` (notebook set-up, course map, checkers and exercises,
grading, JupyterLite build, doctor, the ``python -m trnsim`` CLI, and on top ``viz`` figures
and ``ui`` widget panels). Notebooks start with ``from trnsim.course import setup_notebook``.
"""
from trnsim.catalog import (
    ChipSpec,
    CoreSpec,
    InstanceSpec,
    Source,
    TargetSpec,
    chip,
    chips,
    conflicts,
    core,
    cores,
    instance,
    instances,
    target,
    targets,
)
from trnsim.catalog.datafiles import CatalogError

__version__ = "0.1.0"

__all__ = [
    "CatalogError",
    "ChipSpec",
    "CoreSpec",
    "InstanceSpec",
    "Source",
    "TargetSpec",
    "__version__",
    "chip",
    "chips",
    "conflicts",
    "core",
    "cores",
    "instance",
    "instances",
    "target",
    "targets",
]
