"""A pytest fixture that serves trnsim a private, editable copy of data/ (for corrupted-data tests).

Import it into a test module with ``from datafile_fixture import tmp_data  # noqa: F401``.
Every trnsim cache is cleared on entry and exit, so the real data is back for the next test.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

import trnsim.catalog.datafiles as datafiles


def clear_trnsim_caches() -> None:
    """Clear every functools cache of every loaded trnsim module (and the model catalog)."""
    for name, mod in list(sys.modules.items()):
        if not (name == "trnsim" or name.startswith("trnsim.")) or mod is None:
            continue
        for obj in list(vars(mod).values()):
            clear = getattr(obj, "cache_clear", None)
            if callable(clear) and getattr(obj, "__module__", None) == name:
                clear()
        if name == "trnsim.training.models":
            mod._MODELS = None


class DataCopy:
    """``edit(name, fn)`` applies ``fn`` to the parsed copy of ``data/<name>`` and writes it back."""

    def __init__(self, folder: Path):
        self.folder = folder

    def edit(self, name: str, fn: Callable[[Any], Any]) -> None:
        path = self.folder / name
        doc = json.loads(path.read_text(encoding="utf-8"))
        fn(doc)
        path.write_text(json.dumps(doc), encoding="utf-8")  # NaN is written as the literal NaN
        clear_trnsim_caches()


@pytest.fixture
def tmp_data(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    shutil.copytree(datafiles.data_dir(), folder)
    monkeypatch.setattr(datafiles, "data_dir", lambda: folder)
    clear_trnsim_caches()
    yield DataCopy(folder)
    monkeypatch.undo()
    clear_trnsim_caches()
