"""``python -m trnsim doctor``: every check reports, and failures carry the fix."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from trnsim.course import doctor
from trnsim.course.cli import main


def test_doctor_runs_as_a_module_in_this_environment():
    proc = subprocess.run([sys.executable, "-m", "trnsim", "doctor"], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    for what in ("numpy", "hardware catalog", "data files", "JupyterLab widgets extension",
                 "ipywidgets / front-end pair", "memory"):
        assert any(what in line for line in lines), f"doctor did not report {what!r}:\n{proc.stdout}"
    bad = [line for line in lines if line.startswith("FIX")]
    # exit status agrees with the report
    assert (proc.returncode == 0) == (not bad), proc.stdout
    assert lines[-1].startswith("All set") if not bad else "to fix" in lines[-1]


def test_failed_items_say_what_to_run(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "available_memory_bytes", lambda: (256 * 2**20, "left under the container's limit"))
    monkeypatch.setattr(doctor, "_version", lambda dist: {"ipywidgets": "7.8.1", "jupyterlab_widgets": "1.1.7"}
                        .get(dist, "1.0"))
    items = doctor.check_memory() + doctor.check_widget_pair()
    assert [i.ok for i in items] == [False, False]
    assert "0.2 GiB" in items[0].detail and "Shut Down All Kernels" in items[0].fix
    assert "ipywidgets>=8.1,<9" in items[1].fix
    monkeypatch.setattr(doctor, "doctor_report", lambda: items)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert sum(line.strip().startswith("->") for line in out.splitlines()) == 2 and "2 item(s) to fix" in out


def test_missing_widgets_extension_is_reported(monkeypatch, tmp_path):
    import jupyter_core.paths

    monkeypatch.setattr(jupyter_core.paths, "jupyter_path", lambda *parts: [str(tmp_path)])
    ext = [i for i in doctor.check_kernel_and_extension() if "extension" in i.what][0]
    assert not ext.ok and "Error displaying widget" in ext.fix
    (tmp_path / doctor.WIDGETS_LABEXTENSION).mkdir(parents=True)
    (tmp_path / doctor.WIDGETS_LABEXTENSION / "package.json").write_text('{"version": "5.0.16"}')
    ext = [i for i in doctor.check_kernel_and_extension() if "extension" in i.what][0]
    assert ext.ok and "5.0.16" in ext.detail


def test_widgets_extension_is_not_ok_without_jupyterlab(monkeypatch, tmp_path):
    """The labextension's files (installed with jupyterlab_widgets) are no front-end by themselves."""
    import jupyter_core.paths

    monkeypatch.setattr(jupyter_core.paths, "jupyter_path", lambda *parts: [str(tmp_path)])
    (tmp_path / doctor.WIDGETS_LABEXTENSION).mkdir(parents=True)
    (tmp_path / doctor.WIDGETS_LABEXTENSION / "package.json").write_text('{"version": "5.0.16"}')
    real = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda dist: None if dist == "jupyterlab" else real(dist))
    ext = [i for i in doctor.check_kernel_and_extension() if "extension" in i.what][0]
    assert not ext.ok and "JupyterLab is not installed" in ext.detail and "pip install 'jupyterlab" in ext.fix


def test_version_drift_against_pins(tmp_path):
    import numpy

    req = tmp_path / "requirements.txt"
    req.write_text("# pins\nnumpy==0.0.1\nmatplotlib == 99.0 ; python_version>'3'\n")
    assert doctor.pinned_versions(req) == {"numpy": "0.0.1", "matplotlib": "99.0"}
    [item] = doctor.check_pins(req, names=("numpy", "matplotlib"))
    assert not item.ok and f"numpy {numpy.__version__} (pinned 0.0.1)" in item.detail
    assert "pip install -r" in item.fix
    req.write_text(f"numpy=={numpy.__version__}\n")
    assert doctor.check_pins(req, names=("numpy",))[0].ok


def test_broken_data_file_is_named(monkeypatch, tmp_path):
    import trnsim.catalog.datafiles

    (tmp_path / "good.json").write_text('{"sources": {}}')
    (tmp_path / "bad.json").write_text("{not json")
    monkeypatch.setattr(trnsim.catalog.datafiles, "data_dir", lambda: tmp_path)
    [item] = doctor.check_data_files()
    assert not item.ok and "bad.json" in item.detail and "good.json" not in item.detail


def test_a_crashing_check_is_reported_not_raised(monkeypatch):
    def boom():
        raise RuntimeError("kaput")

    monkeypatch.setattr(doctor, "check_memory", boom)
    items = doctor.doctor_report()
    assert any(not i.ok and "kaput" in i.detail for i in items)


def test_memory_reading_is_plausible():
    avail, what = doctor.available_memory_bytes()
    if Path("/proc/meminfo").exists():
        assert avail is not None and 0 < avail < 2**50 and what
