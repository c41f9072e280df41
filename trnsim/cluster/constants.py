"""Collective-communication constants read from ``data/collectives.json``.

Only collective-specific facts live here (per-step latencies, the documented
algorithm sweet spots, EFA NIC counts the catalog lacks). Instance facts (chips,
NeuronLink bandwidth, topology, EFA bandwidth) come from :mod:`trnsim.catalog`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trnsim.catalog.datafiles import CatalogError, load_json

DATA_FILE = "collectives.json"


@dataclass(frozen=True)
class CollectiveConstants:
    """Values used by the cost model, each traceable to ``data/collectives.json``.

    intra_node_hop_latency_us: step latency for a transfer that stays inside one node
        (NeuronLink, switch or chip-local); the docs give 1-2 us, the midpoint is used.
    inter_node_hop_latency_us: step latency for a transfer over EFA (about 15 us).
    mesh_max_bytes / rdh_max_bytes: intra-node "auto" thresholds (Mesh below 1 MB,
        RDH up to 56 MB, ring above).
    trn2_efa_nics_per_instance: one 200 Gbps EFA NIC per Trainium2 chip.
    rank_bus_gbytes_per_s: nccom-test 2-rank bus-bandwidth plateau (GB/s = 1e9 B/s), read as
        a per-rank streaming ceiling on the generations in ``rank_bus_ceiling_generations``.
    host_floor_us / host_floor_max_bytes: nccom-test 2-rank all-reduce floor (a host-launched op)
        and the largest size at which it is flat.
    """

    intra_node_hop_latency_us: float
    intra_node_hop_latency_us_low: float
    intra_node_hop_latency_us_high: float
    inter_node_hop_latency_us: float
    mesh_max_bytes: int
    rdh_max_bytes: int
    multi_node_default: str
    torus_hamiltonian_cycles: int
    trn2_efa_nics_per_instance: int
    rank_bus_gbytes_per_s: float
    rank_bus_ceiling_generations: tuple[str, ...]
    host_floor_us: float
    host_floor_max_bytes: int


def _value(doc: dict[str, Any], section: str, key: str) -> Any:
    try:
        rec = doc[section][key]
        src = rec["source"]
        if src not in doc["sources"]:
            raise KeyError(f"source {src!r}")
        return rec["value"]
    except KeyError as exc:
        raise CatalogError(
            f"{DATA_FILE}: entry {section}.{key} is missing or has no valid source ({exc}); "
            "restore it from the repository's data/ folder"
        ) from None


@lru_cache(maxsize=1)
def constants() -> CollectiveConstants:
    """Load (once) and return the collective constants."""
    doc = load_json(DATA_FILE)
    return CollectiveConstants(
        intra_node_hop_latency_us=float(_value(doc, "latency", "intra_node_hop_latency_us")),
        intra_node_hop_latency_us_low=float(_value(doc, "latency", "intra_node_hop_latency_us_low")),
        intra_node_hop_latency_us_high=float(_value(doc, "latency", "intra_node_hop_latency_us_high")),
        inter_node_hop_latency_us=float(_value(doc, "latency", "inter_node_hop_latency_us")),
        mesh_max_bytes=int(_value(doc, "algorithm_choice", "mesh_max_bytes")),
        rdh_max_bytes=int(_value(doc, "algorithm_choice", "rdh_max_bytes")),
        multi_node_default=str(_value(doc, "algorithm_choice", "multi_node_default")),
        torus_hamiltonian_cycles=int(_value(doc, "topology", "torus_hamiltonian_cycles")),
        trn2_efa_nics_per_instance=int(_value(doc, "topology", "trn2_efa_nics_per_instance")),
        rank_bus_gbytes_per_s=float(_value(doc, "micro_benchmarks", "nccom_allreduce_2rank_busbw_gibytes_per_s"))
        * 2**30 / 1e9,
        rank_bus_ceiling_generations=tuple(_value(doc, "assumptions", "rank_bus_ceiling_generation")),
        host_floor_us=float(_value(doc, "micro_benchmarks", "nccom_allreduce_2rank_floor_us")),
        host_floor_max_bytes=int(_value(doc, "micro_benchmarks", "nccom_allreduce_2rank_floor_max_bytes")),
    )


def generation_algorithms(generation: str) -> dict[str, Any]:
    """{algorithm: "any" | [rank counts]} the runtime of ``generation`` ("NC-v2", ...) runs by itself."""
    doc = load_json(DATA_FILE)
    table = doc["generation_algorithms"]
    if generation not in table:
        return {"ring": "any", "mesh": "any", "recursive_halving_doubling": "any", "recursive_doubling": "any"}
    rec = table[generation]
    if rec.get("source") not in doc["sources"]:
        raise CatalogError(f"{DATA_FILE}: generation_algorithms.{generation} has no valid source")
    return dict(rec["value"])


def fact(section: str, key: str) -> Any:
    """Any value of ``data/collectives.json`` by section and key (for notebooks and tests)."""
    return _value(load_json(DATA_FILE), section, key)
