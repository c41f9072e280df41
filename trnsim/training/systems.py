"""One view of the machine a plan runs on: a Neuron instance (from the catalog) or a
GPU-era reference system (from ``data/training.json``).

The estimator works per *device*: a NeuronCore (a logical NeuronCore on Trn2/Trn3 at the
default LNC) or a GPU. Per-device figures are instance totals divided evenly:
peak = instance peak / devices, memory = device memory / devices, HBM bandwidth =
device-memory bandwidth / devices.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trnsim.training._data import load, value

GIB = 2**30


class PlanError(ValueError):
    """A parallel plan (or its system) breaks a rule; the message names the rule and the fix."""


@dataclass(frozen=True)
class SystemSpec:
    """Per-device and per-node facts the estimator needs (units in the names)."""

    name: str
    kind: str  # "neuron" | "gpu"
    display_name: str
    device_name: str  # "NeuronCore" | "GPU"
    devices_per_node: int
    peak_tflops_per_device: dict[str, float]
    memory_bytes_per_device: float
    hbm_gbytes_per_s_per_device: float
    supported_tp: tuple[int, ...] | None  # None: any divisor of devices_per_node
    usd_per_node_hour: float | None
    price_note: str
    # GPU alpha-beta model (None for Neuron: trnsim.cluster times its collectives)
    intra_gbytes_per_s: float | None = None
    intra_efficiency: float | None = None
    intra_latency_us: float | None = None
    inter_gbytes_per_s: float | None = None
    inter_efficiency: float | None = None
    inter_latency_us: float | None = None
    chip_name: str | None = None
    core_version: str | None = None  # NeuronCore version ("NC-v2", ...) for engine facts
    lnc: int = 1  # physical NeuronCores per device

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s of one device for ``dtype``; PlanError if the source gives none."""
        tf = self.peak_tflops_per_device.get(dtype)
        if tf is None:
            raise PlanError(
                f"dtype={dtype!r}: {self.display_name} has no published peak for it; "
                f"use one of {sorted(self.peak_tflops_per_device)}"
            )
        return tf * 1e12

    @property
    def memory_gib_per_device(self) -> float:
        return self.memory_bytes_per_device / GIB


def gpu_system_names() -> tuple[str, ...]:
    return tuple(load("training.json")["gpu_systems"])


def system(name: str) -> SystemSpec:
    """The SystemSpec for a Neuron instance name (``trn1.32xlarge``) or a GPU system name."""
    from trnsim.catalog.validation import check_str

    check_str("instance", name, error=PlanError, what="a Neuron instance name (e.g. 'trn1.32xlarge') or a GPU system name")
    return _system(name)


@lru_cache(maxsize=None)
def _system(name: str) -> SystemSpec:
    key = str(name).strip()
    gpus = load("training.json")["gpu_systems"]
    if key.lower() in gpus:
        return _gpu_system(key.lower(), gpus[key.lower()])
    import trnsim

    from trnsim.catalog.datafiles import DataFileError

    try:
        inst = trnsim.instance(key)
    except DataFileError:
        raise  # a broken data file is a data error, not an unknown system
    except Exception as exc:  # catalog raises its own lookup error
        raise PlanError(
            f"unknown system {name!r}: not a Neuron instance in the catalog ({exc}) and not one of the "
            f"GPU reference systems {list(gpus)}"
        ) from None
    return _neuron_system(inst)


def _gpu_system(name: str, r: dict[str, Any]) -> SystemSpec:
    n = int(value(r["devices_per_node"]))
    return SystemSpec(
        name=name, kind="gpu", display_name=r["display_name"], device_name=r["device_name"], devices_per_node=n,
        peak_tflops_per_device={k: float(value(v)) for k, v in r["peak_tflops"].items()},
        memory_bytes_per_device=float(value(r["memory_gib"])) * GIB,
        hbm_gbytes_per_s_per_device=float(value(r["hbm_gbytes_per_s"])),
        supported_tp=tuple(t for t in (1, 2, 4, 8, 16, 32, 64) if t <= int(value(r["max_tp"]))),
        usd_per_node_hour=value(r["usd_per_node_hour"]), price_note="no price in the sources",
        intra_gbytes_per_s=float(value(r["intra_node_gbytes_per_s"])),
        intra_efficiency=float(value(r["intra_node_efficiency"])),
        intra_latency_us=float(value(r["intra_node_latency_us"])),
        inter_gbytes_per_s=float(value(r["inter_node_gbytes_per_s"])),
        inter_efficiency=float(value(r["inter_node_efficiency"])),
        inter_latency_us=float(value(r["inter_node_latency_us"])),
    )


def _neuron_system(inst: Any) -> SystemSpec:
    devices = int(inst.logical_neuroncores)
    chip = inst.chip_spec
    peaks: dict[str, float] = {}
    for dtype, tf in chip.peak_tflops.items():
        if tf is not None:
            peaks[dtype] = float(tf) * inst.chips / devices
    from trnsim.training.recipes import supported_tp

    supported = supported_tp(chip.name)
    if supported is not None:
        supported = tuple(t for t in supported if t <= devices)
    price = inst.on_demand_usd_per_hour
    note = (f"On-Demand ${price:g}/h ({inst.price_region or 'region not stated'}, as of {inst.price_as_of})"
            if price is not None else "no price in the sources")
    return SystemSpec(
        name=inst.name, kind="neuron", display_name=inst.display_name, device_name="NeuronCore",
        devices_per_node=devices, peak_tflops_per_device=peaks,
        memory_bytes_per_device=float(inst.device_memory_gib) * GIB / devices,
        hbm_gbytes_per_s_per_device=float(inst.device_memory_gbytes_per_s) / devices,
        supported_tp=supported, usd_per_node_hour=price, price_note=note, chip_name=chip.name,
        core_version=chip.neuroncore_version, lnc=max(1, int(inst.neuroncores) // devices),
    )
