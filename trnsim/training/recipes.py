"""Framework facts shared by training and serving: one source of truth (``data/training.json``).

* :func:`supported_tp` - TP degrees the Neuron runtime supports per chip (NxD feature guide:
  Trn1 1, 2, 8, 16, 32; Inf2 1, 2, 4, 8, 24; Trn2 1, 2, 4, 8, 16, 32, 64).
* :func:`kv_heads_per_device` / :func:`kv_replication` - KV heads after NxD ``kv_size_multiplier``
  replication (KV heads copied up to the TP degree when TP is a multiple of them).
* :func:`padded_heads` - attention heads after padding to a multiple of TP
  (transformers-neuronx pads when TP does not divide the heads: 40 heads at TP32 -> 64).
* :func:`core_engines` - per-device DMA ceiling and Vector/Scalar engine rates.
* :func:`recipe` - the published recipes' defaults (NxD on Neuron, Megatron 2021 on GPUs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trnsim.training._data import load, value


@lru_cache(maxsize=None)
def supported_tp(chip_name: str) -> tuple[int, ...] | None:
    """TP degrees the runtime supports on ``chip_name`` ("trainium", "inferentia2", "trainium2"); None if unlisted."""
    table = load("training.json")["neuron_tp_degrees"]
    rec = table.get(chip_name)
    return None if rec is None else tuple(int(t) for t in value(rec))


def kv_replication(n_kv_heads: int, tp: int) -> int:
    """How many times each KV head is replicated so every TP rank holds one (1 when TP <= KV heads)."""
    if tp <= n_kv_heads:
        return 1
    return math.ceil(tp / n_kv_heads)


def kv_heads_per_device(n_kv_heads: int, tp: int) -> int:
    """KV heads one TP rank holds: ceil(kv / tp) when TP <= KV heads, else 1 (a replicated head)."""
    return max(1, math.ceil(n_kv_heads / tp))


def padded_heads(n_heads: int, tp: int) -> int:
    """Attention heads after padding to a multiple of ``tp`` (transformers-neuronx / NxD-Inference)."""
    return int(math.ceil(n_heads / tp) * tp)


@dataclass(frozen=True)
class CoreEngines:
    """Per-device (logical NeuronCore) streaming and non-matmul engine rates.

    dma_bytes_per_s: the DMA ceiling (16 engines x per-engine rate, x LNC);
    vector_elements_per_s / scalar_elements_per_s: lanes x clock (x LNC);
    dma_fixed_s: fixed cost of one DMA transfer (descriptor, sync, semaphore).
    """

    core_version: str
    dma_bytes_per_s: float
    vector_elements_per_s: float
    scalar_elements_per_s: float
    dma_fixed_s: float


@lru_cache(maxsize=None)
def core_engines(core_version: str, lnc: int = 1) -> CoreEngines | None:
    """Engine rates of one device of ``core_version`` ("NC-v2", ...) at ``lnc`` physical cores; None if unlisted."""
    rec = load("training.json")["neuron_core_engines"].get(core_version)
    if rec is None:
        return None
    v = {k: float(value(r)) for k, r in rec.items()}
    return CoreEngines(
        core_version=core_version,
        dma_bytes_per_s=v["dma_gbytes_per_s"] * 1e9 * lnc,
        vector_elements_per_s=v["vector_elements_per_cycle"] * v["vector_clock_ghz"] * 1e9 * lnc,
        scalar_elements_per_s=v["scalar_elements_per_cycle"] * v["scalar_clock_ghz"] * 1e9 * lnc,
        dma_fixed_s=v["dma_fixed_us"] * 1e-6,
    )


def recipe(kind: str) -> dict[str, Any]:
    """Default plan options of the published recipes for a system ``kind`` ("neuron" or "gpu")."""
    table = load("training.json")["framework_recipes"]
    if kind not in table:
        raise KeyError(f"no framework recipe for system kind {kind!r}; known: {sorted(table)}")
    return {k: value(r) for k, r in table[kind].items()}
