"""``python -m trnsim lite``: the JupyterLite site holds every notebook (with its guard) and the wheel."""
from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import nbformat
import pytest

from trnsim.course.lite import (GUARD_TAG, INSTALL_TIMEOUT_S, LiteBuildError, guard_source, has_guard, lite_copy,
                         runtime_packages, write_joined)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
HAVE_LITE = all(importlib.util.find_spec(m) for m in ("jupyterlite_core", "jupyterlite_pyodide_kernel"))


def test_guard_is_a_no_op_under_cpython():
    """The guard cell runs in IPython (top-level await allowed) and neither prints nor imports piplite."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    result = shell.run_cell(guard_source(["trnsim==0.1.0", "ipywidgets==8.1.9"]), store_history=False)
    assert result.success, result.error_in_exec or result.error_before_exec
    assert "piplite" not in shell.user_ns


def test_lite_copy_inserts_the_guard_once_before_the_first_code_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("import trnsim")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out = lite_copy(nb, ["trnsim==0.1.0"])
    assert [c.cell_type for c in out.cells] == ["markdown", "markdown", "code", "code"]
    note, guard = out.cells[1], out.cells[2]
    assert GUARD_TAG in note.metadata["tags"] and "Connecting" in note.source and "Pyodide" in note.source
    assert GUARD_TAG in guard.metadata["tags"] and 'piplite.install(["trnsim==0.1.0"])' in guard.source
    assert out.metadata["kernelspec"]["name"] == "python"
    nbformat.validate(out)
    assert len(lite_copy(out, ["trnsim==0.1.0"]).cells) == 4      # idempotent
    assert not has_guard(nb) and nb.metadata["kernelspec"]["name"] == "python3"  # original untouched


def test_guard_gives_up_with_a_message_after_a_timeout():
    """Under Pyodide the install is wrapped in asyncio.wait_for; on timeout it prints what could not be
    fetched (the CDN and PyPI hosts) and how to serve them locally, instead of hanging."""
    src = guard_source(["trnsim==0.1.0"], timeout_s=5)
    assert "asyncio.wait_for(piplite.install" in src and "timeout=5" in src
    assert "except asyncio.TimeoutError" in src and "cdn.jsdelivr.net" in src and "--pyodide" in src
    assert f"timeout={INSTALL_TIMEOUT_S}" in guard_source(["trnsim==0.1.0"])
    compile(src.replace("await ", ""), "guard", "exec")          # valid Python apart from top-level await


def test_lite_copies_store_multiline_outputs_as_one_string(tmp_path):
    """nbformat.write splits multi-line outputs into lists of lines, which the site showed joined with
    commas; the site's copies keep one string per field."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1); print(2)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="line one\nline two\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "a\nb"}, execution_count=1)]
    nb.cells = [cell]
    path = tmp_path / "x.ipynb"
    write_joined(lite_copy(nb, ["trnsim==0.1.0"]), path)
    raw = json.loads(path.read_text())
    outs = [c for c in raw["cells"] if c["cell_type"] == "code"][-1]["outputs"]
    assert outs[0]["text"] == "line one\nline two\n" and outs[1]["data"]["text/plain"] == "a\nb"
    assert nbformat.read(path, as_version=4).cells[-1].outputs[0].text == "line one\nline two\n"


def test_runtime_packages_pin_the_widgets_pair_of_this_environment():
    import ipywidgets

    pins = runtime_packages("0.1.0")
    assert pins[0] == "trnsim==0.1.0" and f"ipywidgets=={ipywidgets.__version__}" in pins
    assert any(p.startswith("jupyterlab_widgets==3.") for p in pins)


@pytest.mark.skipif(not HAVE_LITE, reason="jupyterlite-core and jupyterlite-pyodide-kernel are not installed "
                                          "(pip install jupyterlite-core==0.8.6 jupyterlite-pyodide-kernel==0.8.6)")
def test_build_site_holds_every_notebook_and_the_wheel(tmp_path, capsys):
    from trnsim.course.cli import main

    import shutil

    snapshot = tmp_path / "notebooks"  # a fixed copy: the course may be edited while the test runs
    shutil.copytree(NOTEBOOKS, snapshot)
    out = tmp_path / "site"
    assert main(["lite", "--output-dir", str(out), "--notebooks", str(snapshot)]) == 0
    printed = capsys.readouterr().out
    assert "http.server" in printed and "Pyodide runtime" in printed
    course = sorted(p.name for p in snapshot.glob("*.ipynb"))
    assert course
    for name in course:
        nb = nbformat.read(out / "files" / name, as_version=4)
        original = nbformat.read(snapshot / name, as_version=4)
        assert has_guard(nb) and len(nb.cells) == len(original.cells) + 2
        assert [c.source for c in nb.cells if GUARD_TAG not in c.metadata.get("tags", [])] == \
               [c.source for c in original.cells]
    wheels = list((out / "pypi").glob("trnsim-*-py3-none-any.whl"))
    assert len(wheels) == 1
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "trnsim/__init__.py" in names and "trnsim/data/hardware.json" in names
    assert "trnsim" in json.loads((out / "pypi" / "all.json").read_text())
    config = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    assert config["contentsStorageName"].startswith("trnsim-")
    loaded = {e["name"] for e in config["federated_extensions"]}
    assert {"@jupyter-widgets/jupyterlab-manager", "@jupyterlite/pyodide-kernel-extension"} <= loaded
    piplite_urls = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]["pipliteUrls"]
    assert any(u.startswith("./pypi/all.json") for u in piplite_urls)
    assert (out / "index.html").is_file() and (out / "lab" / "index.html").is_file()


def test_build_site_explains_a_missing_wheel(tmp_path):
    from trnsim.course.lite import build_site

    if not HAVE_LITE:
        with pytest.raises(LiteBuildError, match="pip install jupyterlite-core"):
            build_site(tmp_path / "o", NOTEBOOKS, wheel=tmp_path / "nope.whl")
        return
    with pytest.raises(LiteBuildError, match="does not exist"):
        build_site(tmp_path / "o", NOTEBOOKS, wheel=tmp_path / "nope.whl")
    with pytest.raises(LiteBuildError, match="no notebooks"):
        build_site(tmp_path / "o", tmp_path)


def test_the_output_folder_is_never_a_folder_with_someone_elses_work(tmp_path, monkeypatch):
    """`lite --output-dir .` used to delete the whole checkout (.git included): the site folder is deleted and
    rebuilt, so the current folder, the home folder, the notebooks folder, anything above them, and a non-empty
    folder that is not an earlier site are refused before anything is touched."""
    from trnsim.course.lite import check_output_dir

    work = tmp_path / "checkout"
    (work / "notebooks").mkdir(parents=True)
    (work / ".git").mkdir()
    monkeypatch.chdir(work)
    for bad in (work, tmp_path, work / "notebooks"):
        with pytest.raises(LiteBuildError, match="would replace"):
            check_output_dir(bad, work / "notebooks")
    mine = work / "my_files"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x")
    with pytest.raises(LiteBuildError, match="not an earlier JupyterLite site"):
        check_output_dir(mine, work / "notebooks")
    assert (mine / "thesis.tex").is_file() and (work / ".git").is_dir()
    site = work / "_output"
    site.mkdir()
    (site / "jupyter-lite.json").write_text("{}")
    check_output_dir(site, work / "notebooks")          # an earlier site: replaced
    check_output_dir(work / "new_dir", work / "notebooks")
    from trnsim.course.cli import main
    if HAVE_LITE:   # through the command line too (without the build tools it stops earlier, also harmlessly)
        assert main(["lite", "--output-dir", ".", "--notebooks", "notebooks"]) != 0
    assert (work / ".git").is_dir()
