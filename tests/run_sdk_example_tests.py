"""Run the NKI API reference's own example tests on trnsim's Beta 1 layer (developer script, not part of the suite).

Usage::

    python tests/run_sdk_example_tests.py PATH [--only SUBSTRING] [--timeout S]
    python tests/run_sdk_example_tests.py MIRROR --rev 8a38e733 --dir general/nki/test   # Neuron 2.26's set

PATH is a checkout, or a bare git mirror, of aws-neuron/aws-neuron-sdk. Its ``nki/test`` folder holds the example
kernels that the ``nki.isa`` / ``nki.language`` reference pages include or link to ("the full NKI code example with
equivalent numpy implementation"), each a unittest that checks the kernel against numpy (``general/nki/test`` at
Neuron 2.26, the last release of the Beta 1 documentation, holds the older set; ``--rev`` reads a bare mirror at that
commit). They are written for NKI
Beta 1 (``neuronxcc.nki``, ``@nki.jit(mode="simulation")``). Nothing is downloaded and nothing of theirs is copied
into this repository: the files are extracted to a temporary directory with only their import lines rewritten
(``neuronxcc.nki`` -> ``trnsim.neuronxcc.nki``, the rules of ``run_official_tutorials.py``) and run with pytest in a
child process. Only their ``unittest.TestCase`` tests are collected (one file names a kernel ``test_...``).

A few tests disagree with trnsim on purpose; ``DIFFERENCES`` lists each with the reason, and such a test must fail
(a difference that starts passing is reported, so the list stays true). Prints one row per test; exit status 1 if a
test fails that is not listed, or a listed one passes.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_official_tutorials import Source, rewrite_imports  # noqa: E402

TEST_DIR = "nki/test"

# test id (file::class::method) -> why trnsim answers differently (each is checked to still fail)
DIFFERENCES = {
    "test_nki_isa_activation.py::TestNkiIsaExamplesActivation::test_activation":
        "activation(..., dtype=nl.bfloat16) rounds its result to bfloat16, as the engine writes it; the test compares "
        "with the exact fp32 value at rtol 1e-5",
    "test_nki_isa_dma_copy.py::TestNkiIsaExamplesTensorCopy::test_indirect_load_oob_err_negative":
        "an out-of-bounds indirect read is KernelError err_tensor_access_out_of_bound naming the index tile's "
        "partition and value; the test expects NKI's simulator's raw numpy IndexError text",
    "test_nki_isa_dma_copy.py::TestNkiIsaExamplesTensorCopy::test_indirect_store_oob_err_negative":
        "as above, for an indirect write",
    "test_nki_isa_nc_match_replace8.py::TestNkiIsaExamplesMatchReplace8::test_nc_match_replace_indices8_mask":
        "mask=(ix < n // 2 and iy < m // 2) uses Python 'and', which keeps only the second comparison; trnsim refuses "
        "it (err_control_flow_condition_depending_on_arange: combine predicates with &)",
    "test_nki_isa_range_select.py::TestNkiIsaExamplesRangeSelect::test_range_select_example":
        "the kernel returns its SBUF tile instead of the HBM tensor it stored into; kernel outputs must be HBM "
        "tensors (err_kernel_output_not_in_hbm)",
    # Neuron 2.26 only (general/nki/test)
    "test_nki_isa_tensor_copy_dynamic.py::TestNkiExampleNisaTensorCopyDynSrc::test_tensor_copy_dyn_src_0":
        "nisa.tensor_copy_dynamic_src (removed with Beta 1) is not simulated: err_unsupported_api names its NKI 0.6 "
        "form (a view with a runtime index)",
    "test_nki_isa_tensor_copy_dynamic.py::TestNkiExampleNisaTensorCopyDynSrc::test_tensor_copy_dyn_src_1":
        "as above",
}

_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+::\S+::\S+)")


def extract(src: Source, into: str, only: str = "", test_dir: str = TEST_DIR) -> list[str]:
    """Write the .py files of ``test_dir`` into ``into`` with rewritten imports; their names."""
    names = []
    for rel in src.list(test_dir):
        base = os.path.basename(rel)
        if not rel.endswith(".py") or os.path.dirname(rel) != test_dir or (only and only not in base):
            continue
        text, _ = rewrite_imports(src.read(rel))
        with open(os.path.join(into, base), "w", encoding="utf-8") as f:
            f.write(text)
        names.append(base)
    return sorted(names)


def run(into: str, files: list[str], timeout: float) -> tuple[dict[str, str], str]:
    """pytest over ``files`` in ``into``: {test id: outcome} and pytest's output (collection errors included)."""
    env = dict(os.environ)
    env.pop("NEURON_PLATFORM_TARGET_OVERRIDE", None)
    cmd = [sys.executable, "-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider", "-o", "python_functions=__none__",
           "--continue-on-collection-errors", *files]
    r = subprocess.run(cmd, cwd=into, capture_output=True, text=True, timeout=timeout, env=env)
    outcomes = {}
    for line in r.stdout.splitlines():
        m = _LINE.match(line.strip())
        if m:
            outcomes[m.group(2)] = m.group(1)
    for line in r.stdout.splitlines():    # a file that failed to import: one row for the file
        m = re.match(r"^ERROR (\S+\.py)(?: - (.*))?$", line.strip())
        if m and "::" not in m.group(1):
            outcomes[m.group(1)] = "ERROR " + (m.group(2) or "")
    return outcomes, r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", help="checkout or bare mirror of aws-neuron/aws-neuron-sdk")
    ap.add_argument("--only", default="", help="run only files whose name contains this text")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds for the whole run")
    ap.add_argument("--rev", default="HEAD", help="commit to read from a bare mirror (default HEAD)")
    ap.add_argument("--dir", default=TEST_DIR, help=f"folder of example tests (default {TEST_DIR})")
    args = ap.parse_args(argv)
    if not args.path:
        print("skipped: give the path of a checkout (or bare git mirror) of aws-neuron/aws-neuron-sdk; this script "
              "downloads nothing")
        return 0
    src = Source(args.path, args.rev)
    if not src.list(args.dir):
        print(f"skipped {args.path}: no {args.dir} there (at {args.rev})")
        return 0
    with tempfile.TemporaryDirectory(prefix="trnsim-sdk-tests-") as tmp:
        files = extract(src, tmp, args.only, args.dir)
        outcomes, log = run(tmp, files, args.timeout)
    if not outcomes:
        print(log[-3000:])
        return 1
    bad = 0
    print(f"{'test':100} result")
    for tid in sorted(outcomes):
        got = outcomes[tid]
        ok = got in ("PASSED", "XPASS", "XFAIL")
        note = ""
        if tid in DIFFERENCES:
            note = "expected difference: " + DIFFERENCES[tid]
            if ok:
                note = "LISTED AS A DIFFERENCE BUT PASSES: update DIFFERENCES"
                bad += 1
            got = "differs" if not ok else got
        elif not ok:
            bad += 1
        print(f"{tid:100} {got:8} {note}")
    ran = {tid.split("::")[0] for tid in outcomes}
    for tid in DIFFERENCES:
        if tid not in outcomes and tid.split("::")[0] in ran:
            print(f"{tid:100} missing  (listed in DIFFERENCES, not run)")
    passed = sum(1 for t, o in outcomes.items() if o in ("PASSED", "XPASS", "XFAIL") and t not in DIFFERENCES)
    differs = sum(1 for t in outcomes if t in DIFFERENCES and outcomes[t] not in ("PASSED", "XPASS", "XFAIL"))
    print(f"\n{passed} of {len(outcomes)} tests pass, {differs} differ on purpose (listed above), {bad} unexpected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
