"""Read this package's data files (``data/regions.json``, ``data/residency.json``)."""
from __future__ import annotations

from typing import Any

from trnsim.catalog.datafiles import load_json


def regions_data() -> dict[str, Any]:
    """The parsed ``data/regions.json`` (cached by :func:`trnsim.catalog.datafiles.load_json`)."""
    return load_json("regions.json")


def residency_data() -> dict[str, Any]:
    """The parsed ``data/residency.json``."""
    return load_json("residency.json")


def value(record: Any) -> Any:
    """The ``value`` of a ``{"value", "unit", "source"}`` record, or the record itself."""
    if isinstance(record, dict) and "value" in record:
        return record["value"]
    return record


def cite(data: dict[str, Any], key: str) -> str:
    """A one-line citation ``citation (as of DATE)`` for a source key of ``data``."""
    src = data["sources"].get(key)
    if src is None:
        return key
    url = f" <{src['url']}>" if src.get("url") else ""
    return f"{src['citation']}{url} (as of {src['as_of']})"
