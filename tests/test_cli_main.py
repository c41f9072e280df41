"""The ``python -m trnsim`` entry point."""
from __future__ import annotations

import subprocess
import sys

import pytest

from trnsim.course.cli import build_parser


def test_help_lists_the_commands():
    proc = subprocess.run([sys.executable, "-m", "trnsim", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for command in ("doctor", "nbgrader-course", "nbgrader-sync", "lite"):
        assert command in proc.stdout


def test_unknown_command_is_an_error():
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["teach"])
    assert exc.value.code == 2


def test_nbgrader_commands_report_an_empty_folder(tmp_path, capsys):
    from trnsim.course.cli import main

    assert main(["nbgrader-course", str(tmp_path / "course"), "--notebooks", str(tmp_path)]) == 2
    assert "no notebooks" in capsys.readouterr().err
    assert main(["nbgrader-sync", "--notebooks", str(tmp_path)]) == 2
    assert "no notebooks" in capsys.readouterr().err


def _measure_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent / "measure_notebooks.py"
    spec = importlib.util.spec_from_file_location("measure_notebooks", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_measure_reads_peak_memory_and_flags_the_limit():
    import os

    m = _measure_module()
    peak = m.peak_rss_bytes(os.getpid())
    if os.path.exists(f"/proc/{os.getpid()}/status"):
        assert peak is not None and 10 * m.MIB < peak < 64 * 2**30
    assert m.peak_rss_bytes(2**31 - 1) is None  # no such process
    rows = [m.Measurement("a.ipynb", 3.0, 500.0, 4), m.Measurement("b.ipynb", 9.0, 1500.0, 4),
            m.Measurement("c.ipynb", 1.0, None, 2, "ZeroDivisionError: division by zero")]
    text = m.table(rows, 1024.0)
    assert "| a.ipynb | 4 | 3.0 | 500 | yes |" in text
    assert "| b.ipynb | 4 | 9.0 | 1,500 | NO |" in text and "error: ZeroDivisionError" in text
