"""Run the official NKI tutorial kernels on trnsim with only their import lines changed (developer script).

Usage::

    python tests/run_official_tutorials.py PATH [PATH ...] [--only SUBSTRING] [--list] [--timeout S]

Each PATH is a checkout, or a bare git mirror, of aws-neuron/nki-samples (its ``src/nki_samples/tutorials``)
or aws-neuron/aws-neuron-sdk (its ``nki/examples``, plus ``nki/deep-dives/src/mxfp-matmul``: the current NKI 0.6
form of nki-samples' mxfp-matmul tutorial; from a bare mirror also the classic Beta 1 tutorials of
``general/nki/examples`` at Neuron 2.26, rows of kind "sdk-beta1"). Nothing is downloaded and no code of theirs is copied
into this repository: each tutorial directory is extracted to a temporary directory with only the import
lines rewritten (``import nki`` -> ``import trnsim.nki as nki``, ``neuronxcc.nki`` -> ``trnsim.neuronxcc.nki``,
``torch_neuronx.nki_jit`` -> ``trnsim.nki.jit``), and every row runs in its own Python process (a tutorial
file may set environment variables or keep module-level state such as an SBUF allocator).

A row either runs the file as ``__main__`` when its main block needs only numpy (the file's own check then
decides: an exception, a failed assert or a printed "differ" fails the row), or calls a kernel with numpy
inputs and compares with the file's own numpy reference (``np_average_pool_2D``, ``numpy_attention``) or
a numpy reference written here (matmul, mamba, the MX goldens of ``mx_cpu_utils``). A few documentation
snippets are broken on purpose or by accident (a layout-violation example, a snippet with a syntax error);
their rows expect that error. A row is "stale" when the nki-samples file uses an API that NKI 0.6 removed (the
aws-neuron-sdk copy has the current form) and trnsim refuses it with the documented error; the kernel is run
again through its current copy. Prints a pass/fail table; exit status 1 if a row fails. With no PATH it
prints a message and exits 0 (skipped).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

SAMPLES_DIR = "src/nki_samples/tutorials"
SDK_DIR = "nki/examples"
# the classic (Beta 1, neuronxcc.nki) tutorial kernels as the aws-neuron-sdk last published them: Neuron 2.26's
# general/nki/examples, read from a bare mirror at that commit (rows of kind "sdk-beta1")
BETA1_SDK_REV = "8a38e733"
BETA1_SDK_DIR = "general/nki/examples"

# ----------------------------------------------------------------------------------------------- sources


class Source:
    """Files of one repository, from a work tree or a bare git directory (read with ``git show``)."""

    def __init__(self, path: str, rev: str = "HEAD"):
        self.path = os.path.abspath(path)
        self.rev = rev   # the commit read from a bare mirror (a work tree is read as it is)
        self.bare = not os.path.isdir(os.path.join(self.path, ".git")) and os.path.isfile(
            os.path.join(self.path, "HEAD")) and os.path.isdir(os.path.join(self.path, "objects"))
        self.kind = None
        for kind, d in (("samples", SAMPLES_DIR), ("sdk", SDK_DIR)):
            if d in self.list(d):
                self.kind = kind

    def list(self, under: str) -> list[str]:
        if self.bare:
            r = subprocess.run(["git", "-C", self.path, "ls-tree", "-r", "--name-only", self.rev, under + "/"],
                               capture_output=True, text=True)
            names = r.stdout.split()
            return names + ([under] if names else [])
        root = os.path.join(self.path, under)
        if not os.path.isdir(root):
            return []
        out = [under]
        for dp, _, fs in os.walk(root):
            out += [os.path.relpath(os.path.join(dp, f), self.path) for f in fs]
        return out

    def read(self, rel: str) -> str:
        if self.bare:
            return subprocess.run(["git", "-C", self.path, "show", f"{self.rev}:{rel}"], capture_output=True, text=True,
                                  check=True).stdout
        with open(os.path.join(self.path, rel), encoding="utf-8") as f:
            return f.read()


# ----------------------------------------------------------------------------------------------- imports

_IMPORT_RULES = [
    # import nki [as x]  /  import neuronxcc.nki [as x]
    (re.compile(r"^(\s*)import\s+(?:neuronxcc\.)?nki\s*$"), None),
    (re.compile(r"^(\s*)import\s+nki(\.[\w.]+)?\s+as\s+(\w+)\s*$"), r"\1import trnsim.nki\2 as \3"),
    (re.compile(r"^(\s*)import\s+neuronxcc\.nki(\.[\w.]+)?\s+as\s+(\w+)\s*$"), r"\1import trnsim.neuronxcc.nki\2 as \3"),
    (re.compile(r"^(\s*)from\s+neuronxcc\s+import\s+nki\b"), r"\1from trnsim.neuronxcc import nki"),
    (re.compile(r"^(\s*)from\s+nki(\.[\w.]+)?\s+import\b"), r"\1from trnsim.nki\2 import"),
    (re.compile(r"^(\s*)from\s+neuronxcc\.nki(\.[\w.]+)?\s+import\b"), r"\1from trnsim.neuronxcc.nki\2 import"),
    (re.compile(r"^(\s*)from\s+torch_neuronx\s+import\s+nki_jit\s*$"), r"\1from trnsim.nki import jit as nki_jit"),
]


def rewrite_imports(src: str) -> tuple[str, int]:
    """``src`` with only its NKI import lines pointed at trnsim; returns (text, lines changed)."""
    out, n = [], 0
    for line in src.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        new = body
        for pat, rep in _IMPORT_RULES:
            m = pat.match(body)
            if not m:
                continue
            if rep is None:   # bare `import nki` / `import neuronxcc.nki`
                pkg = "trnsim.neuronxcc.nki" if "neuronxcc" in body else "trnsim.nki"
                new = f"{m.group(1)}import {pkg} as nki"
            else:
                new = pat.sub(rep, body)
            break
        if new != body:
            n += 1
        out.append(new + line[len(body):])
    return "".join(out), n


def extract(src: Source, under: str, into: str) -> int:
    """Write every .py file of ``under`` (one tutorial directory) into ``into`` with rewritten imports."""
    changed = 0
    os.makedirs(into, exist_ok=True)
    for rel in src.list(under):
        if not rel.endswith(".py") or os.path.dirname(rel) != under:
            continue
        text, n = rewrite_imports(src.read(rel))
        changed += n
        with open(os.path.join(into, os.path.basename(rel)), "w", encoding="utf-8") as f:
            f.write(text)
    return changed


# ----------------------------------------------------------------------------------------------- rows
# (repo kind, tutorial directory relative to the repo's tutorial root, file, row name, how)
# how: ("main",) run as __main__; ("expect", ExceptionName, text) the file must raise that; or a driver name.

ROWS = [
    ("samples", "tensor_addition", "tensor_addition_nki_kernels.py", "tensor_add (SPMD grid)", ("main",)),
    ("samples", "tensor_addition", "spmd_tensor_addition_nki_kernels.py", "spmd_tensor_add", ("main",)),
    ("samples", "tensor_addition", "spmd_multiple_nc_tensor_addition_nki_kernels.py", "tensor_add LNC=2 (nc(2))",
     ("main",)),
    ("samples", "transpose2d", "transpose2d_nki_kernels.py", "transpose2d", ("main",)),
    ("samples", "average_pool2d", "average_pool2d_nki_kernels.py", "average_pool2d", ("main",)),
] + [
    ("samples", "matrix_multiplication", "matrix_multiplication_nki_kernels.py", k, ("matmul", k))
    for k in ("nki_matmul_basic_", "nki_matmul_tiled_", "nki_matmul_block_free_dimension_",
              "nki_matmul_fully_optimized_")
] + [
    ("samples", "fused_mamba", "mamba_nki_kernels.py", k, ("mamba", k)) for k in ("mamba_v1", "mamba_v2", "mamba_v3")
] + [
    ("samples", "attention_fwd_performance", "test_attention.py", f"attn_fwd_{v}", ("attention", f"attn_fwd_{v}"))
    for v in ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v8a", "v9", "v10", "v11")
] + [
    ("samples", "matrix_multiplication", "matrix_multiplication_nki_kernels.py", "nki_matmul_hoist_load_",
     ("stale", "err_invalid_arguments", "passes dtype= to nisa.tensor_copy, which NKI 0.6 does not have (the "
      "aws-neuron-sdk copy dropped it)", ("matmul", "nki_matmul_hoist_load_")))
] + [
    (kind, sub, "mx_kernels.py", f"{k} {d}", how(("mx", k, d)))
    for kind, sub, how in (
        ("samples", "mxfp-matmul", lambda h: ("stale", "err_removed_api", "uses @nki.jit(platform_target='trn3'), "
                                               "an error since NKI 0.3 (migration guide)", h)),
        ("sdk", "/nki/deep-dives/src/mxfp-matmul", lambda h: h))
    for k, d in (("kernel_offline_quantized_mx_matmul", "float8_e5m2"),
                 ("kernel_offline_quantized_mx_matmul", "float4_e2m1fn"),
                 ("kernel_on_device_quantize_matmul_mx", "float4_e2m1fn/float8_e5m2"),
                 ("kernel_on_device_quantize_matmul_mx", "float8_e5m2/float8_e5m2"),
                 ("kernel_copy_strided_quantize_matmul_mx", "float8_e5m2 tensor_copy"),
                 ("kernel_copy_strided_quantize_matmul_mx", "float8_e5m2 dma"))
] + [
    ("sdk", "/nki/deep-dives/src/mxfp-matmul", "mx_kernels.py", f"kernel_copy_strided_quantize_matmul_mx_packed_scale {d}",
     ("mx", "kernel_copy_strided_quantize_matmul_mx_packed_scale", d))
    for d in ("float8_e5m2 tensor_copy", "float8_e5m2 dma")
] + [
    ("sdk", ".", "getting_started_baremetal.py", "getting_started_baremetal", ("main",)),
    ("sdk", "simulate", "nki_simulate_example.py", "nki_simulate_example", ("main",)),
    ("sdk", "tensor_addition", "tensor_addition_nki_kernels.py", "nki_tensor_add", ("add06",)),
    ("sdk", "transpose2d", "transpose2d_nki_kernels.py", "transpose2d", ("main",)),
    ("sdk", "average_pool2d", "average_pool2d_nki_kernels.py", "average_pool2d", ("main",)),
    ("sdk", ".", "index-case-1.py", "tensor_split (index case 1)", ("split",)),
    ("sdk", ".", "index-case-3.py", "tensor_maxpool (.ap, index case 3)", ("maxpool",)),
    ("sdk", ".", "layout-pass.py", "layout-pass tensor_exp", ("exp", (128, 512))),
    ("sdk", ".", "layout-violation.py", "layout-violation (error on purpose)", ("expect_kernel_error", (256, 512))),
    ("sdk", ".", "layout-loop.py", "layout-loop (snippet: i_f undefined)", ("expect", "NameError", "i_f", (256, 512))),
    ("sdk", ".", "layout-dynamic-loop.py", "layout-dynamic-loop (snippet: syntax)", ("expect", "SyntaxError", "", None)),
] + [
    ("sdk", "matrix_multiplication", "matrix_multiplication_nki_kernels.py", k, ("matmul", k))
    for k in ("nki_matmul_basic_", "nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_",
              "nki_matmul_fully_optimized_")
] + [
    ("sdk", "fused_mamba", "mamba_nki_kernels.py", k, ("mamba", k)) for k in ("mamba_v1", "mamba_v2", "mamba_v3")
] + [
    ("sdk-beta1", ".", "getting_started_baremetal.py", "getting_started_baremetal (Beta 1)", ("main",)),
    ("sdk-beta1", "tensor_addition", "spmd_tensor_addition_nki_kernels.py", "spmd_tensor_add (Beta 1)", ("main",)),
    ("sdk-beta1", "tensor_addition", "spmd_multiple_nc_tensor_addition_nki_kernels.py",
     "tensor_add nc(2) grid (Beta 1)", ("main",)),
    ("sdk-beta1", "transpose2d", "transpose2d_nki_kernels.py", "transpose2d (Beta 1)", ("main",)),
    ("sdk-beta1", "average_pool2d", "average_pool2d_nki_kernels.py", "average_pool2d (Beta 1)", ("main",)),
    ("sdk-beta1", "rmsnorm", "rmsnorm_nki_kernels.py", "rmsnorm (Beta 1)", ("main",)),
] + [
    ("sdk-beta1", "layernorm", "layernorm_nki_kernel.py", f"{k} {r}x{c} (Beta 1)", ("layernorm", k, r, c))
    for k in ("nki_layernorm_kernel_v1", "nki_layernorm_kernel_v2") for r, c in ((300, 1000), (4096, 8192))
] + [
    ("sdk-beta1", "matrix_multiplication", "matrix_multiplication_nki_kernels.py", k + " (Beta 1)", ("matmul", k))
    for k in ("nki_matmul_basic_", "nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_",
              "nki_matmul_fully_optimized_")
] + [
    ("sdk-beta1", "fused_mamba", "mamba_nki_kernels.py", k + " (Beta 1)", ("mamba", k))
    for k in ("mamba_v1", "mamba_v2", "mamba_v3")
]


# ----------------------------------------------------------------------------------------------- drivers
# Each driver gets the loaded module (a dict) and returns (ok, detail). References are numpy.


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def _close(out, ref, atol, rtol):
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return False, f"shape {out.shape} != reference {ref.shape}"
    err = float(np.max(np.abs(out - ref))) if out.size else 0.0
    ok = bool(np.allclose(out, ref, atol=atol, rtol=rtol))
    return ok, f"max |err| {err:.3g} (atol {atol}, rtol {rtol})"


def drive_matmul(mod, name):
    rng = np.random.default_rng(0)
    bf16 = _bf16()
    if name == "nki_matmul_basic_":
        lhs, rhs = rng.random((64, 128)), rng.random((128, 512))      # the tutorial's small case
    else:
        lhs, rhs = rng.random((4096, 1024)), rng.random((1024, 2048))  # the tutorial's large case
    lhsT = np.ascontiguousarray(lhs.T).astype(bf16)
    rhs = rhs.astype(bf16)
    out = mod[name](lhsT, rhs)
    ref = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    return _close(out, ref, atol=1e-4, rtol=1e-2)


def _mamba_numpy(delta, u, A, B, C):
    """y[b, c, t] = sum_s C[b, s, t] * h[b, c, s, t]; h_t = exp(delta_t * A) * h_{t-1} + delta_t * B_t * u_t."""
    dA = np.exp(delta[:, :, None, :] * A[None, :, :, None])
    dBu = delta[:, :, None, :] * B[:, None, :, :] * u[:, :, None, :]
    h = np.zeros(dA.shape[:-1], dtype=np.float64)
    out = np.empty_like(dA)
    for t in range(dA.shape[-1]):
        h = dA[..., t] * h + dBu[..., t]
        out[..., t] = h
    return (C[:, None, :, :] * out).sum(axis=2)


def drive_layernorm(mod, name, rows, cols):
    """The tutorial's kernels against numpy's layer norm (its own main compares v1 with v1); 300 x 1000 is the size
    its latency table uses, 4096 x 8192 the size its run command uses."""
    rng = np.random.default_rng(0)
    x = rng.random((rows, cols)).astype(np.float32)
    g = rng.random(cols).astype(np.float32)
    b = rng.random(cols).astype(np.float32)
    out = mod[name](x, 1e-5, g, b)
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * g + b
    return _close(out, ref, atol=1e-4, rtol=1e-4)


def drive_mamba(mod, name):
    rng = np.random.default_rng(0)
    batch, channels, state, seq = 1, 256, 16, 2048   # the file's default configuration
    f32 = np.float32
    delta = rng.uniform(0.01, 0.1, (batch, channels, seq)).astype(f32)
    u = rng.standard_normal((batch, channels, seq)).astype(f32)
    A = -rng.uniform(0.1, 1.0, (channels, state)).astype(f32)
    B = rng.standard_normal((batch, state, seq)).astype(f32)
    C = rng.standard_normal((batch, state, seq)).astype(f32)
    out = mod[name](delta, u, A, B, C)
    ref = _mamba_numpy(*(x.astype(np.float64) for x in (delta, u, A, B, C)))
    return _close(out, ref, atol=1e-3, rtol=1e-3)


def drive_attention(mod, name):
    # the accuracy mode of the file's own test_attn_tutorial: float32 inputs in [-1, 1), numpy_attention,
    # np.allclose(atol=1e-2); seqlen 128 for v1 and v2 (no tiling), 4096 otherwise
    np.random.seed(0)
    version = mod[name]
    seqlen = 128 if name in ("attn_fwd_v1", "attn_fwd_v2") else 4096
    d_head = 128
    nl = mod["nl"]
    q, k, v = ((np.random.random_sample([d_head, seqlen]) - 0.5) * 2 for _ in range(3))
    q, k, v = (nl.static_cast(x, nl.float32) for x in (q, k, v))
    ref = mod["numpy_attention"](q, k, v)
    out = version(q, k, v)
    return _close(out, ref, atol=1e-2, rtol=1e-5)


def drive_mx(mod, name, dtypes):
    import ml_dtypes as mld
    import mx_cpu_utils as cpu   # the tutorial's own numpy goldens (in the extracted directory)
    nl = mod["nl"]
    x4 = {mld.float8_e5m2: nl.float8_e5m2_x4, mld.float8_e4m3fn: nl.float8_e4m3fn_x4,
          mld.float4_e2m1fn: nl.float4_e2m1fn_x4}
    np.random.seed(0)
    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn3"   # mx_toplevel.py compiles with --target trn3
    kernel = mod[name]
    if name == "kernel_offline_quantized_mx_matmul":
        qd = getattr(mld, dtypes)
        M, K, N = 128, 128, 512
        _, _, st, st_s = cpu.generate_stabilized_mx_data(qd, (K, M * 4))
        _, _, mv, mv_s = cpu.generate_stabilized_mx_data(qd, (K, N * 4))
        out = kernel(st, st_s, mv, mv_s, x4[qd])
        ref = cpu.nc_matmul_mx_golden(st, mv, st_s, mv_s, qd, qd)
    elif name == "kernel_on_device_quantize_matmul_mx":
        qs, qm = (getattr(mld, d) for d in dtypes.split("/"))
        M, K, N = 128, 128, 512
        _, _, st, st_s = cpu.generate_stabilized_mx_data(qs, (K, M * 4))
        mv_data, _, _, _ = cpu.generate_stabilized_mx_data(qm, (K, N * 4))
        out = kernel(st, st_s, mv_data.astype(mld.bfloat16), x4[qs], x4[qm])
        mv_q, mv_s = cpu.quantize_mx_golden(mv_data, qm)
        ref = cpu.nc_matmul_mx_golden(st, mv_q, st_s, mv_s, qs, qm)
    else:   # kernel_copy_strided_quantize_matmul_mx[_packed_scale]
        qd = mld.float8_e5m2
        use_tensor_copy = dtypes.endswith("tensor_copy")
        K, M, N = 512, 128, 512
        st, _, _, _ = cpu.generate_stabilized_mx_data(qd, (K, M))
        mv, _, _, _ = cpu.generate_stabilized_mx_data(qd, (K, N))
        out = kernel(st.astype(mld.bfloat16), mv.astype(mld.bfloat16), x4[qd], use_tensor_copy)
        ref = st.astype(np.float32).T @ mv.astype(np.float32)
    return _close(out, ref, atol=5e-2, rtol=5e-2)   # the tutorial's compare_and_print_results tolerances


def drive_add06(mod):
    rng = np.random.default_rng(0)
    a = rng.random((256, 1024)).astype(np.float16)
    b = rng.random((256, 1024)).astype(np.float16)
    out = mod["nki_tensor_add"](a, b)
    return _close(out, a.astype(np.float32) + b.astype(np.float32), atol=1e-4, rtol=1e-2)


def drive_split(mod):
    x = np.arange(4 * 5, dtype=np.float32).reshape(4, 5).astype(_bf16())   # the file's torch example, in numpy
    even, odd = mod["tensor_split_kernel_"](x)
    ok1, d1 = _close(even, x[:, 0::2].astype(np.float32), 0, 0)
    ok2, d2 = _close(odd, x[:, 1::2].astype(np.float32), 0, 0)
    return ok1 and ok2, f"even: {d1}; odd: {d2}"


def drive_maxpool(mod):
    C, H, W, P = 2, 6, 6, 2
    x = np.arange(C * H * W, dtype=np.float32).reshape(C, H, W).astype(_bf16())
    out = mod["tensor_maxpool_kernel_"](x, P)
    ref = x.astype(np.float32).reshape(C, H // P, P, W // P, P).max(axis=(2, 4))
    return _close(out, ref, 0, 0)


def drive_exp(mod, shape):
    x = np.ones(shape, dtype=np.float32).astype(_bf16())
    out = mod["tensor_exp_kernel_"](x)
    return _close(out, np.exp(x.astype(np.float32)), atol=1e-2, rtol=1e-2)


def drive_expect_kernel_error(mod, shape):
    from trnsim.nki import KernelError
    x = np.ones(shape, dtype=np.float32).astype(_bf16())
    try:
        mod["tensor_exp_kernel_"](x)
    except KernelError as exc:
        return True, f"KernelError {exc.rule} (expected: this example shows the violation)"
    return False, "no KernelError for a 256-partition tile"


# ----------------------------------------------------------------------------------------------- child


def run_row(index: int, workdir: str) -> dict:
    kind, sub, fname, label, how = ROWS[index]
    os.chdir(workdir)
    sys.path.insert(0, workdir)
    path = os.path.join(workdir, fname)
    buf = io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(buf):
            if how[0] == "main":
                sys.argv = [path]
                runpy.run_path(path, run_name="__main__")
                out = buf.getvalue()
                ok = "differ" not in out.lower()
                detail = "ran as __main__; the file's own numpy check passed" if ok else "the file printed 'differ'"
            elif how[0] == "expect":
                try:
                    mod = runpy.run_path(path, run_name="tutorial")
                    if how[3] is not None:
                        mod["tensor_exp_kernel_"](np.ones(how[3], dtype=np.float32))
                    ok, detail = False, f"expected {how[1]}, got no error"
                except Exception as exc:  # noqa: BLE001  (the row checks the exception's type)
                    ok = type(exc).__name__ == how[1] and how[2] in str(exc)
                    detail = f"{type(exc).__name__} in the snippet itself ({'expected' if ok else 'unexpected'})"
            elif how[0] == "stale":
                from trnsim.nki import KernelError
                try:
                    mod = runpy.run_path(path, run_name="tutorial")
                    ok, detail = globals()["drive_" + how[3][0]](mod, *how[3][1:])
                except KernelError as exc:
                    if exc.rule != how[1]:
                        raise
                    ok, detail = "stale", f"{exc.rule}: the file {how[2]}"
            else:
                mod = runpy.run_path(path, run_name="tutorial")
                driver = globals()["drive_" + how[0]]
                ok, detail = driver(mod, *how[1:])
    except Exception as exc:  # noqa: BLE001  (a row reports any failure)
        ok = False
        last = traceback.extract_tb(exc.__traceback__)
        where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(last)
                      if f.filename.startswith(workdir)), "")
        detail = f"{type(exc).__name__}{' at ' + where if where else ''}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    return {"ok": ok if ok == "stale" else bool(ok), "detail": detail, "seconds": round(time.perf_counter() - t0, 2)}


# ----------------------------------------------------------------------------------------------- parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="checkouts or bare mirrors of aws-neuron/nki-samples, aws-neuron-sdk")
    ap.add_argument("--only", default="", help="run only rows whose name or file contains this text")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per row")
    ap.add_argument("--child", nargs=2, metavar=("ROW", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print("@@RESULT@@" + json.dumps(run_row(int(args.child[0]), args.child[1])))
        return 0
    if not args.paths:
        print("skipped: give the path of a checkout (or bare git mirror) of aws-neuron/nki-samples and/or "
              "aws-neuron/aws-neuron-sdk; this script downloads nothing")
        return 0
    sources = {}
    for p in args.paths:
        s = Source(p)
        if s.kind is None:
            print(f"skipped {p}: neither {SAMPLES_DIR} nor {SDK_DIR} found there")
            continue
        sources[s.kind] = s
    if "sdk" in sources and sources["sdk"].bare:
        old = Source(sources["sdk"].path, BETA1_SDK_REV)
        if old.list(BETA1_SDK_DIR):
            old.kind = "sdk-beta1"
            sources["sdk-beta1"] = old
    if not sources:
        return 0
    rows = [(i, r) for i, r in enumerate(ROWS) if r[0] in sources
            and (not args.only or args.only in r[3] or args.only in r[2] or args.only in r[1])]
    failed = stale = 0
    with tempfile.TemporaryDirectory(prefix="trnsim-official-") as tmp:
        dirs = {}
        print(f"{'repo':9} {'file':52} {'kernel':40} {'result':6} {'s':>7}  detail")
        for i, (kind, sub, fname, label, how) in rows:
            key = (kind, sub)
            if key not in dirs:
                root = {"samples": SAMPLES_DIR, "sdk": SDK_DIR, "sdk-beta1": BETA1_SDK_DIR}[kind]
                under = sub[1:] if sub.startswith("/") else root if sub == "." else f"{root}/{sub}"
                dirs[key] = os.path.join(tmp, kind, sub.strip("/").replace(".", "_top").replace("/", "_"))
                extract(sources[kind], under, dirs[key])
            env = dict(os.environ)
            env.pop("NEURON_PLATFORM_TARGET_OVERRIDE", None)
            try:
                r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(i), dirs[key]],
                                   capture_output=True, text=True, timeout=args.timeout, env=env)
                line = next((ln for ln in r.stdout.splitlines() if ln.startswith("@@RESULT@@")), None)
                res = json.loads(line[len("@@RESULT@@"):]) if line else {
                    "ok": False, "seconds": 0, "detail": "child crashed: " + (r.stderr.strip().splitlines() or [""])[-1]}
            except subprocess.TimeoutExpired:
                res = {"ok": False, "seconds": args.timeout, "detail": "timed out"}
            failed += not res["ok"]
            stale += res["ok"] == "stale"
            rel = sub[1:] + "/" + fname if sub.startswith("/") else f"{sub}/{fname}" if sub != "." else fname
            status = "stale" if res["ok"] == "stale" else "pass" if res["ok"] else "FAIL"
            print(f"{kind:9} {rel:52} {label:40} {status:6} {res['seconds']:7.1f}  {res['detail']}", flush=True)
    print(f"\n{len(rows) - failed - stale} of {len(rows)} rows pass, {failed} fail, {stale} stale (the file uses an "
          "API NKI 0.6 removed and trnsim refuses it with the documented error)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
