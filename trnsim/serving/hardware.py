"""What an inference server needs to know about an instance: per-device compute, memory, bandwidth.

A *device* is what tensor parallelism splits a model over: a logical NeuronCore on Neuron
instances (from :func:`trnsim.instance` and :func:`trnsim.chip`), a GPU on GPU instances
(from ``data/regions.json``: NVIDIA L4 in g6, the only accelerator offered in ap-southeast-5).

Per-device figures are instance totals divided by devices (cores of a chip share its HBM):
``tflops = chip peak x chips / devices``, ``hbm bytes/s = instance device-memory bandwidth /
devices``, ``memory = instance device memory / devices``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import trnsim
from trnsim.catalog.datafiles import CatalogError, DataFileError, load_json

GIB = 2**30
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per element of each storage dtype (a definition, not a measured constant)."""
MODES = ("static", "continuous")
"""Batching modes of :func:`trnsim.serving.simulate`: a static batch, or continuous batching."""


class ServingError(ValueError):
    """Bad serving input (unknown instance, TP degree, batch, tokens...), with the rule and the fix."""


@dataclass(frozen=True)
class ServingHardware:
    """Per-device view of one instance type for LLM serving.

    ``accelerator`` names the chip/GPU (power assumptions key on it); ``devices`` is how many
    TP ranks the instance offers; ``usd_per_hour`` is the catalog's listed price (None = no public
    price) with ``price_note`` saying where it is from.
    """

    instance: str
    kind: str  # "neuron" | "gpu"
    accelerator: str
    accelerators: int
    devices: int
    device_tflops: Mapping[str, float]
    device_memory_bytes: float
    device_hbm_bytes_per_s: float
    usd_per_hour: float | None
    price_note: str
    core_version: str | None = None  # NeuronCore version (Neuron only): engine facts
    lnc: int = 1  # physical NeuronCores per device

    @property
    def device_label(self) -> str:
        return "NeuronCore" if self.kind == "neuron" else "GPU"


def _neuron(name: str) -> ServingHardware:
    inst = trnsim.instance(name)
    chip = trnsim.chip(inst.chip)
    devices = int(inst.logical_neuroncores)
    tflops = {k: float(v) * inst.chips / devices for k, v in chip.peak_tflops.items() if v is not None}
    region = inst.price_region or "region not named by AWS's benchmark price table"
    price_note = (
        f"On-Demand ${inst.on_demand_usd_per_hour:g}/h ({region}, as of {inst.price_as_of})"
        if inst.on_demand_usd_per_hour is not None else "no price in the sources"
    )
    return ServingHardware(
        instance=inst.name, kind="neuron", accelerator=chip.name, accelerators=int(inst.chips), devices=devices,
        device_tflops=tflops, device_memory_bytes=float(inst.device_memory_gib) * GIB / devices,
        device_hbm_bytes_per_s=float(inst.device_memory_gbytes_per_s) * 1e9 / devices,
        usd_per_hour=inst.on_demand_usd_per_hour, price_note=price_note,
        core_version=chip.neuroncore_version, lnc=max(1, int(inst.neuroncores) // devices),
    )


def _gpu(name: str) -> ServingHardware:
    data = load_json("regions.json")
    rec = data["gpu_instances"][name]
    gpu = data["gpus"][rec["gpu"]]
    n = int(rec["gpus"]["value"])
    price = data["prices_usd_per_hour"].get("us-east-1", {}).get(name)
    usd = price["value"] if price else None
    dense = float(gpu["bf16_dense_tflops"]["value"])
    return ServingHardware(
        instance=name, kind="gpu", accelerator=rec["gpu"], accelerators=n, devices=n,
        device_tflops={"bf16": dense, "fp16": dense},
        device_memory_bytes=float(gpu["memory_gbytes"]["value"]) * 1e9,
        device_hbm_bytes_per_s=float(gpu["memory_gbytes_per_s"]["value"]) * 1e9,
        usd_per_hour=usd, price_note="us-east-1 on-demand (Karpenter, 2026-07-20)" if usd else "no price in the sources",
    )


def gpu_instance_names() -> tuple[str, ...]:
    return tuple(load_json("regions.json")["gpu_instances"])


def serving_hardware(name: str) -> ServingHardware:
    """The :class:`ServingHardware` for an instance name (Neuron from the catalog, GPU from regions.json)."""
    from trnsim.catalog.validation import check_str

    check_str("instance", name, error=ServingError, what="an instance name such as 'inf2.48xlarge'")
    return _serving_hardware(name)


@lru_cache(maxsize=None)
def _serving_hardware(name: str) -> ServingHardware:
    if name in gpu_instance_names():
        return _gpu(name)
    try:
        return _neuron(name)
    except DataFileError:
        raise  # a broken data file is a data error, not an unknown instance
    except CatalogError as exc:
        raise ServingError(
            f"unknown instance {name!r} for serving ({exc}). GPU options: {', '.join(gpu_instance_names())}"
        ) from None
