"""Collective-communication constants read from ``data/collectives.json``.

Only collective-specific facts live here (per-step latencies, the documented
algorithm sweet spots, EFA NIC counts the catalog lacks). Instance facts (chips,
NeuronLink bandwidth, topology, EFA bandwidth) come from :mod:`trnsim.catalog`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trnsim.datafiles import CatalogError, load_json

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
    )


def fact(section: str, key: str) -> Any:
    """Any value of ``data/collectives.json`` by section and key (for notebooks and tests)."""
    return _value(load_json(DATA_FILE), section, key)
