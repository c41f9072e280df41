"""The wheel ships the data catalog, and the package imports from the wheel alone."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
    )
    (whl,) = out.glob("trnsim-*.whl")
    return whl


def test_wheel_contains_every_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for data_file in (REPO / "data").glob("*"):
        if data_file.is_file():
            assert f"trnsim/data/{data_file.name}" in names, data_file.name


def test_installed_wheel_works_from_another_directory(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site))
    code = "import trnsim; print(trnsim.__file__); print(trnsim.chip('trn1'))"
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    first, second = res.stdout.splitlines()[:2]
    assert first.startswith(str(site)), first  # imported from the wheel, not from the repository
    assert second.startswith("Trainium (trn1")
