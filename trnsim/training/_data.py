"""Load this package's JSON data files (``data/models.json``, ``data/training.json``)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any


@lru_cache(maxsize=None)
def load(name: str) -> dict[str, Any]:
    """Return the parsed JSON file ``name`` from the project's data directory.

    Uses ``trnsim.catalog.datafiles.load_json`` when the project provides it; otherwise reads the
    repository's ``data/`` directory or the wheel's ``trnsim/data`` copy.
    """
    try:
        from trnsim.catalog.datafiles import load_json  # type: ignore[attr-defined]
    except ImportError:
        load_json = None
    if load_json is not None:
        return load_json(name)
    here = Path(__file__).resolve()
    for folder in (here.parents[2] / "data", here.parents[1] / "data"):
        path = folder / name
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
    raise FileNotFoundError(f"data file {name!r} not found next to the trnsim package")


def value(record: Any) -> Any:
    """The ``value`` of a ``{"value": ..., "unit": ..., "source": ...}`` record (or the record itself)."""
    if isinstance(record, dict) and "value" in record:
        return record["value"]
    return record
