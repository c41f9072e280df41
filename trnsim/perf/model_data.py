"""Load data/perf_model.json: the cost model's own modelling choices (each with source and reasoning)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def perf_model_data() -> dict[str, Any]:
    """The parsed perf_model.json (via trnsim.catalog.datafiles when available, else the repo's data/ dir)."""
    from trnsim.catalog.datafiles import load_json

    return load_json("perf_model.json")


def per_version(key: str, version: str) -> Any:
    """Value of a per-NeuronCore-version record, e.g. per_version('dma_engine_bytes_per_ns', 'NC-v2')."""
    table = perf_model_data()[key]
    if version not in table:
        raise KeyError(f"perf_model.json '{key}' has no entry for NeuronCore version {version!r}; "
                       f"known: {sorted(k for k in table)}")
    return table[version]["value"]


def value(key: str) -> Any:
    return perf_model_data()[key]["value"]


def threshold(name: str) -> float:
    return perf_model_data()["bottleneck_thresholds"][name]["value"]
