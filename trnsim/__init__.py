"""trnsim: learn AWS Trainium and Inferentia on a laptop.

The package root exposes the hardware catalog (``chip``, ``instance``, ``target``,
``core`` and their plural listings) and the notebook set-up call. Subpackages:
``trnsim.nki`` (kernel language), ``trnsim.perf`` (cost model), ``trnsim.kernels``,
``trnsim.cluster``, ``trnsim.training``, ``trnsim.serving``, ``trnsim.deploy``,
``trnsim.viz`` (figures) and ``trnsim.ui`` (widgets).
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
from trnsim.datafiles import CatalogError
from trnsim.nbsetup import SEED, setup_notebook

__version__ = "0.1.0"

__all__ = [
    "CatalogError",
    "ChipSpec",
    "CoreSpec",
    "InstanceSpec",
    "SEED",
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
    "setup_notebook",
    "target",
    "targets",
]
