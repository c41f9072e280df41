"""Where the project's facts live, and how a module reads them.

``data/`` in the repository is the single home of facts. It ships inside the wheel
as ``trnsim/data`` (see ``pyproject.toml``); in an editable install it is read from
the repository. Every data file has a ``sources`` block (key -> citation, url,
as_of) and every value names one of those keys.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any


class CatalogError(ValueError):
    """A data file is missing, malformed, or a name is not in the catalog."""


class DataFileError(CatalogError):
    """A data file breaks a type, unit or range rule of :mod:`trnsim.catalog.dataschema` (a data error, not a lookup)."""


def data_dir() -> Path:
    """The folder holding the data files (installed wheel first, then the repo)."""
    package = Path(__file__).resolve().parents[1]          # trnsim/ (this file is trnsim/catalog/datafiles.py)
    for candidate in (package / "data", package.parent / "data"):
        if candidate.is_dir():
            return candidate
    raise CatalogError(
        f"trnsim's data folder was not found in {package} nor in {package.parent}; "
        "reinstall the package (pip install trnsim) or run from a checkout of the repository"
    )


@lru_cache(maxsize=None)
def load_json(name: str) -> Any:
    """Parse ``data/<name>`` once, check it against :mod:`trnsim.catalog.dataschema`, and cache it.

    Raises CatalogError naming the file (and, for a field that breaks its type, unit or range
    rule, the field path and the rule) on failure.
    """
    path = data_dir() / name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError(f"data file {path} does not exist") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"data file {path} is not valid JSON: {exc}") from None
    from trnsim.catalog.dataschema import validate_document

    validate_document(name, doc, DataFileError, where=path)
    return doc
