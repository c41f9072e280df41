"""The README's kernel example ("Using the package") runs as written, in NKI 0.6, and its quoted output is current.

The block is read out of README.md and executed, so the README cannot drift from the simulator again
(it once used ``nl.mgrid``, removed in NKI 0.2).
"""
import contextlib
import io
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def kernel_example() -> str:
    """The python block of the "Using the package" section that defines a kernel."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Using the package", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    kernels = [b for b in blocks if "@nki.jit" in b]
    assert len(kernels) == 1, f"expected one kernel example in 'Using the package', found {len(kernels)}"
    return kernels[0]


def test_readme_kernel_example_runs_and_its_quoted_output_is_current():
    code = kernel_example()
    assert "trnsim.neuronxcc" not in code                       # the example is NKI 0.6, not Beta 1
    namespace: dict = {"__name__": "readme_example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), namespace)     # the block's own assert checks the values
    a, b, c, prof = (namespace[k] for k in ("a", "b", "c", "prof"))
    assert a.shape[0] % 128 != 0                                # the example shows a ragged last tile
    assert c.shape == a.shape and not np.isnan(c).any()
    np.testing.assert_allclose(c, a + b, rtol=0, atol=0)
    printed = out.getvalue().splitlines()
    assert printed[0] == f"{prof.latency_us:.2f} us"
    quoted = re.search(r'print\(prof\.summary\(\)\)\s*#\s*"(.*?)\s*\.\.\."', code)
    assert quoted, "the README quotes the start of the summary in a comment after print(prof.summary())"
    assert printed[1].startswith(quoted.group(1)), (quoted.group(1), printed[1])
