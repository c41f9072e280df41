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
