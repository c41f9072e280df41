"""trnsim.kernels.source: a reference kernel's code as notebook 05 prints it (decorator and body, no docstring)."""
import pytest

from trnsim import kernels


def test_source_drops_the_docstring_and_keeps_the_code():
    text = kernels.source(kernels.matmul_tiled)
    assert text.startswith("@nki.jit\ndef matmul_tiled(lhsT, rhs):\n")
    assert "Stage 1, basic tiling" not in text and '"""' not in text
    assert "nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)" in text
    assert text.rstrip().endswith("return result")
    full = kernels.source(kernels.matmul_tiled, docstring=True)
    assert "Stage 1, basic tiling" in full and len(full) > len(text)


def test_source_of_a_plain_function_without_docstring_and_bad_input():
    def f(x):
        return x + 1
    assert kernels.source(f) == "def f(x):\n    return x + 1\n"
    with pytest.raises(TypeError, match="takes a kernel or a function"):
        kernels.source(42)


def test_source_keeps_docstrings_it_cannot_cut_cleanly(tmp_path, monkeypatch):
    (tmp_path / "srcfns_case.py").write_text(
        'def one(x): "doc"; return x\n'
        'def two(x):\n    """a"""; y = 1\n    return y\n'
        'def doc_only():\n    """only a docstring"""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    import srcfns_case as m
    assert kernels.source(m.one) == 'def one(x): "doc"; return x\n'                 # one line: kept whole
    assert "y = 1" in kernels.source(m.two)                                         # code after it on its line
    assert kernels.source(m.doc_only) == 'def doc_only():\n    """only a docstring"""\n'   # still valid Python


def test_source_refuses_what_has_no_def_or_no_file():
    import functools
    ns: dict = {}
    exec("def g(x):\n    return x\n", ns)
    for bad in (lambda x: x, ns["g"], functools.partial(kernels.matmul_tiled, 1)):
        with pytest.raises(TypeError):
            kernels.source(bad)
