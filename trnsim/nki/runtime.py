"""The kernel runtime (layer 5): launching kernels, kernel arguments and results, ``jit`` / ``simulate``.

``run_kernel`` wraps numpy inputs as HBM tensors, runs the kernel function once per program id of
the launch (an SPMD grid, or the two physical cores of an LNC=2 launch, which run interleaved: see
:mod:`trnsim.nki.lnc`), checks and unwraps the outputs, and returns them with the
:class:`~trnsim.nki.trace.Trace`. :class:`Kernel` is an
``@nki.jit`` kernel; ``simulate(kernel)(*arrays)`` runs it on the CPU simulator (numpy in, numpy out).
"""
from __future__ import annotations

import ast
import gc
import inspect
import os
import textwrap
import warnings
from typing import Any, Callable

import numpy as np

import trnsim.nki.language  # noqa: F401  (installs the tensor operator hooks)
from trnsim.nki import context as _context
from trnsim.nki import tensors as _tensors
from trnsim.nki import dtypes as dt
from trnsim.nki._blas import single_thread_blas
from trnsim.nki._gc import promote_to_oldest_generation
from trnsim.nki.context import Context
from trnsim.nki.rules import TARGETS, KernelError, fmt_shape
from trnsim.nki.tensors import Tensor, View
from trnsim.nki.trace import Trace


def _returns_value(func: Callable) -> bool:
    try:
        src = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False

    class V(ast.NodeVisitor):
        found = False

        def visit_Return(self, node):
            if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
                V.found = True

        def visit_FunctionDef(self, node):
            if node is fn:
                self.generic_visit(node)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Lambda(self, node):
            pass
    V().visit(fn)
    return V.found


def _mutable_params(func: Callable) -> set[str]:
    from trnsim.nki import typing as nt
    out = set()
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return out
    for name, p in sig.parameters.items():
        ann = p.annotation
        if ann is nt.mutable_tensor or isinstance(ann, nt.MutableTensorType):
            out.add(name)
    return out


def _wrap_arg(ctx: Context, value, name: str, mutable: bool):
    from trnsim.nki import typing as nt
    if isinstance(value, list):
        raise KernelError("err_kernel_input_list",
                          f"kernel input `{name}` is a Python list; kernels take numpy arrays (and tuples or numbers "
                          "for compile-time parameters)",
                          f"pass a numpy array: np.asarray({name}, dtype=np.float32); for a parameter use a tuple",
                          location="")
    if isinstance(value, nt.TensorSpec):
        if not value.shape or any(s < 1 for s in value.shape):
            raise KernelError("err_invalid_shape", f"kernel input `{name}` spec has shape {list(value.shape)}",
                              "every dimension must be >= 1", location="")
        t = Tensor(ctx, value.shape, value.dtype_name, "hbm", name, kind="input")
        ctx.charge_hbm(name, t.shape, t.dtype_name, t.bytes_per_partition)
        t.alloc_id = ctx.new_alloc(name, "hbm", t.shape, t.dtype_name, t.bytes_per_partition, 1, True)
        t.mutable = mutable or not ctx.new_style
        return t, None
    if isinstance(value, np.ndarray) or (hasattr(value, "__array__") and hasattr(value, "shape")
                                         and hasattr(value, "dtype") and not isinstance(value, (Tensor, View, type))):
        # (a class such as np.float32 has __array__, shape and dtype as attributes: a dtype passed as a
        # compile-time parameter stays a parameter)
        arr = np.asarray(value)
        try:
            name_dt = dt.dtype_name(arr.dtype)
        except TypeError:
            raise KernelError("err_unsupported_dtype",
                              f"kernel input `{name}` has dtype {arr.dtype}, which NKI does not support",
                              "cast it first, e.g. x.astype(np.float32) (NKI floats: float32, bfloat16, float16, "
                              "float8_e4m3, float8_e5m2)", location="") from None
        if arr.ndim == 0:
            if isinstance(value, np.ndarray):   # numpy scalars (np.float32(2)) stay compile-time numbers
                raise KernelError("err_invalid_shape",
                                  f"kernel input `{name}` is a 0-d array (shape [], value {arr.item()!r}); kernel "
                                  "tensors have at least one dimension",
                                  f"pass it as a tensor of shape [1, 1] (np.reshape({name}, (1, 1))), or as a Python "
                                  f"number ({name}.item()) for a compile-time parameter", location="")
            return value, None
        if arr.size == 0:
            raise KernelError("err_invalid_shape", f"kernel input `{name}` has shape {list(arr.shape)} (no elements)",
                              "pass an array with every dimension >= 1", location="")
        ctx.charge_hbm(name, arr.shape, name_dt, arr.size * dt.itemsize(name_dt))
        data = None
        if ctx.numerics:
            # the caller's array itself when it is writable and already in the storage format (the kernel's writes
            # to an input land in it, as NKI 0.6 updates inputs in place); otherwise a converted copy
            st = dt.storage_dtype(name_dt)
            data = arr if (arr.dtype == st and arr.flags.writeable and isinstance(value, np.ndarray)) \
                else arr.astype(st)
        t = Tensor(ctx, arr.shape, name_dt, "hbm", name, kind="input", data=data)
        t.alloc_id = ctx.new_alloc(name, "hbm", t.shape, name_dt, t.bytes_per_partition, 1, True)
        t.mutable = mutable or not ctx.new_style
        return t, arr
    return value, None


class ReadOnlyInputWarning(RuntimeWarning):
    """A kernel wrote an input whose numpy array is read-only: the in-place update is lost."""


def _unwrap(ctx: Context, out):
    if isinstance(out, _tensors.Broadcast):
        # a broadcast view of an HBM output (``out.broadcast_to(...)``): its values, repeated along the broadcast
        # dimensions, as numpy would give them (the same checks as the view itself)
        data = _unwrap(ctx, out.view)
        return None if data is None else np.array(np.broadcast_to(data.reshape(out.view.shape), out.shape))
    if isinstance(out, (Tensor, View)):
        t = out.tensor if isinstance(out, View) else out
        if t.buffer != "hbm":
            raise KernelError("err_kernel_output_not_in_hbm",
                              f"kernel returned {t!r}; kernel outputs must be HBM tensors",
                              "allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm), nl.store "
                              "the result into it, and return it", location="")
        root = t.root if t.root is not None else t
        if not (t.written or root.written) and t.kind != "input":
            raise KernelError("err_tensor_output_not_written_to",
                              f"kernel output `{t.name or 'output'}`{fmt_shape(t.shape)} is never written",
                              "nl.store (or nisa.dma_copy) results into the output before returning it", location="")
        if not ctx.numerics:
            return None
        data = t.data if isinstance(out, Tensor) else out.tensor.data[out.npkey()]
        return np.array(data, copy=True)
    if isinstance(out, (tuple, list)):
        return type(out)(_unwrap(ctx, o) for o in out)
    if isinstance(out, dict):
        return {k: _unwrap(ctx, v) for k, v in out.items()}
    return out


def _trim_traceback(exc: BaseException) -> None:
    """End the traceback at the kernel line that broke the rule (hide trnsim.nki internals below it)."""
    from trnsim.nki.rules import _is_internal
    tb = exc.__traceback__
    last_user = None
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            last_user = tb
        tb = tb.tb_next
    if last_user is not None and last_user.tb_next is not None:
        last_user.tb_next = None


def run_kernel(func: Callable, args: tuple, kwargs: dict, *, target: str = "trn2",
               numerics: bool = True, grid: tuple[int, ...] | None = None, name: str | None = None,
               dialect: str = "nki", lnc: int = 1, lnc_axis: int = 0):
    """Run ``func`` for every program id of the launch; returns (outputs, Trace).

    ``grid``: the SPMD launch grid (``()`` for a single instance); ``lnc``: physical NeuronCores of the
    logical core (1 or 2); a program runs on physical core ``program_id[lnc_axis] % lnc``.
    ``dialect``: "nki" (NKI 0.6 rules) or "beta1" (Beta 1 rules, ``trnsim.neuronxcc.nki``)."""
    from trnsim.nki import typing as nt
    if any(isinstance(a, nt.TensorSpec) for a in list(args) + list(kwargs.values())):
        numerics = False
    grid = tuple(int(g) for g in (grid or ()))
    if any(g < 1 for g in grid):
        raise KernelError("err_invalid_grid", f"SPMD grid {grid} has a non-positive size",
                          "every grid dimension must be >= 1", location="")
    dt.set_precise_fp_from_env()
    ctx = Context(name or getattr(func, "__name__", "kernel"), target, numerics, grid)
    ctx.dialect = dialect
    ctx.directives = dict(getattr(func, "_nki_directives", None) or {})
    if ctx.directives.get("enable_stack_allocator") and not ctx.directives.get("skip_middle_end_transformations"):
        # nki.compiler.enable_stack_allocator (Beta 1): "Must use together with skip_middle_end_transformations"
        raise KernelError("err_invalid_directive", f"kernel {getattr(func, '__name__', 'kernel')} uses "
                          "enable_stack_allocator without skip_middle_end_transformations; the stack allocator "
                          "must be used together with it", "decorate the kernel with both: "
                          "@nki.compiler.enable_stack_allocator above @nki.compiler.skip_middle_end_transformations "
                          "above @nki.jit", location="")
    ctx.lnc = int(lnc)
    if ctx.lnc > 1 and ctx.limits.neuroncore_version == "NC-v2":
        raise KernelError("err_invalid_lnc", f"an LNC={ctx.lnc} launch needs a logical NeuronCore of {ctx.lnc} "
                          f"physical cores; {target} (NeuronCore-v2) has LNC=1 only",
                          "launch with kernel[1](...) on trn1/inf2, or target trn2 / trn3", location="")
    ctx.new_style = _returns_value(func)
    mutable = _mutable_params(func)
    inputs_mutable = dialect != "beta1"   # NKI 0.6 (nki_simulator.rst): a kernel may update its input tensors
    try:
        sig = inspect.signature(func)
        bound = sig.bind_partial(*args, **kwargs)
        names = list(bound.arguments)
    except (TypeError, ValueError):
        names = [f"arg{i}" for i in range(len(args))] + list(kwargs)
    wrapped_args = []
    originals: list[tuple[Tensor, np.ndarray]] = []
    for i, a in enumerate(args):
        nm = names[i] if i < len(names) else f"arg{i}"
        w, orig = _wrap_arg(ctx, a, nm, inputs_mutable or nm in mutable)
        wrapped_args.append(w)
        if orig is not None:
            originals.append((w, orig))
    wrapped_kw = {}
    for k, a in kwargs.items():
        w, orig = _wrap_arg(ctx, a, k, inputs_mutable or k in mutable)
        wrapped_kw[k] = w
        if orig is not None:
            originals.append((w, orig))
    prev = _context._CURRENT
    prev_beta1 = _tensors.DIALECT.beta1
    _context._CURRENT = ctx
    _tensors.DIALECT.beta1 = dialect == "beta1"
    result = None
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the trace holds many small objects; cyclic GC passes over them make tracing quadratic
    blas = single_thread_blas()
    blas.__enter__()
    try:
        ids = list(np.ndindex(*grid)) if grid else [()]
        ctx.lnc_axis = lnc_axis

        def end_of_instance():
            # release everything on-chip the program instance still holds
            while len(ctx.scopes) > 1:
                ctx.pop_scope()
            for r in ctx.scopes[0]:
                t = r()
                if t is not None:
                    ctx.release(t)
            ctx.scopes = [[]]

        if ctx.lnc == 2:
            result = _run_lnc_pairs(ctx, ids, lnc_axis, func, wrapped_args, wrapped_kw, end_of_instance)
        for n_pid, pid in enumerate(ids if ctx.lnc != 2 else ()):
            ctx.program_id = tuple(int(p) for p in pid)
            ctx.core = (pid[lnc_axis] if pid else n_pid) % ctx.lnc
            ctx.shared_pos = 0
            ctx.scopes = [[]]
            ctx.loops = []
            ctx.n_affine = 0
            ctx.affine_writes = {}
            result = func(*wrapped_args, **wrapped_kw)
            end_of_instance()
        outputs = _unwrap(ctx, result)
        trace = ctx.trace()   # while the cyclic GC is still off (the trace is many small objects)
    except KernelError as exc:
        _trim_traceback(exc)
        raise
    finally:
        _context._CURRENT = prev
        _tensors.DIALECT.beta1 = prev_beta1
        ctx.active = False
        # the shared HBM tensors point back at the context (Tensor.ctx): drop them so the context, and with it
        # the instruction list, is freed by reference counting once the caller drops the Trace, not only by a
        # full collection of the cyclic GC (a large trace would otherwise stay in memory until then)
        ctx.shared = []
        blas.__exit__(None, None, None)
        if gc_was_enabled:
            promote_to_oldest_generation()   # the trace's objects skip the young generations' scans
            gc.enable()
    if ctx.numerics and (not ctx.new_style or inputs_mutable or mutable):
        # input arrays the kernel wrote are updated in place: the older convention (outputs are arguments),
        # NKI 0.6 ("input arrays are updated in-place if the kernel modified the corresponding HBM tensors",
        # nki_simulator.rst) and nt.mutable_tensor parameters
        for t, orig in originals:
            if t.written and isinstance(orig, np.ndarray) and orig.flags.writeable:
                if t.data is not orig:
                    orig[...] = t.data.astype(orig.dtype) if t.data.dtype != orig.dtype else t.data
            elif t.written and isinstance(orig, np.ndarray):
                warnings.warn(ReadOnlyInputWarning(
                    f"the kernel wrote its input `{t.name}`{fmt_shape(t.shape)}, but the numpy array passed for it "
                    "is read-only, so the update cannot be written back into it (NKI updates written inputs in "
                    f"place); pass a writable array, e.g. np.array({t.name})"), stacklevel=3)
    return outputs, trace


def _run_lnc_pairs(ctx: Context, ids: list, lnc_axis: int, func: Callable, args: list, kwargs: dict,
                   end_of_instance: Callable):
    """An LNC=2 launch: program instances 2i and 2i+1 along the ``nc`` axis are the two physical cores of one
    pair; each pair runs interleaved (:class:`trnsim.nki.lnc.LncPair`), pairs one after another."""
    from trnsim.nki.lnc import PER_PROGRAM, LncPair, fresh_program_state
    pairs: dict = {}
    for n_pid, pid in enumerate(ids):
        pid = tuple(int(p) for p in pid)
        key = pid[:lnc_axis] + (pid[lnc_axis] // 2,) + pid[lnc_axis + 1:] if pid else (n_pid // 2,)
        core = (pid[lnc_axis] if pid else n_pid) % 2
        pairs.setdefault(key, []).append((pid, core))

    def body(pid, core):
        out = func(*args, **kwargs)
        end_of_instance()
        return out

    result = None
    for programs in pairs.values():
        baseline = {k: getattr(ctx, k) for k in PER_PROGRAM}
        run = LncPair(ctx, programs, lambda pid, core: fresh_program_state(ctx, pid, core))
        ctx.lnc_run = run
        try:
            result = run.run(body)
        finally:
            ctx.lnc_run = None
            for k, v in baseline.items():
                setattr(ctx, k, v)
    return result


# ---------------------------------------------------------------------------- launching

_PLATFORM = {"trn1": "trn1", "gen2": "trn1", "inf2": "inf2", "trn2": "trn2", "gen3": "trn2", "trn3": "trn3",
             "gen4": "trn3"}
DEFAULT_TARGET = "trn2"
DIALECTS = ("nki", "beta1")


def platform_target(name) -> str:
    """Kernel target of a platform name (trn1|inf2|gen2, trn2|gen3, trn3|gen4), as NKI spells them."""
    key = str(name).strip().lower()
    if key in TARGETS:
        return key
    if key in _PLATFORM:
        return _PLATFORM[key]
    raise KernelError("unknown_target", f"unknown platform target {name!r}",
                      "use trn1 (or gen2), inf2, trn2 (or gen3) or trn3 (or gen4)", location="")


def default_target() -> str:
    """Kernel target: NEURON_PLATFORM_TARGET_OVERRIDE (trn1|inf2|gen2, trn2|gen3, trn3|gen4) or "trn2"."""
    env = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip()
    return platform_target(env) if env else DEFAULT_TARGET


class Kernel:
    """An ``@nki.jit`` kernel. Calling it with numpy arrays simulates it (as ``NKI_SIMULATOR=1`` does).

    ``kernel[2](...)`` launches it on a logical NeuronCore of two physical cores (LNC=2: two program
    instances, ``nl.program_id(0)`` 0 and 1, ``nl.num_programs()`` 2); grids with an ``nl.spmd_dim`` entry
    (``kernel[nl.spmd_dim(n, nl.nc(2)), m]``) are accepted, plain multi-number grids ``kernel[g0, g1]`` only for
    Beta 1 kernels. ``last_trace`` holds the trace of the latest call.
    ``dialect`` is "nki" (NKI 0.6 rules) or "beta1" (``trnsim.neuronxcc.nki``).
    """

    def __init__(self, func: Callable, grid: tuple[int, ...] | None = None, target: str | None = None,
                 options: dict | None = None, dialect: str = "nki", lnc: int = 1, lnc_axis: int = 0):
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {DIALECTS}, got {dialect!r}")
        self.func = func
        self.grid = grid
        self.target = target
        self.options = options or {}
        self.dialect = dialect
        self.lnc = lnc
        self.lnc_axis = lnc_axis
        self.last_trace: Trace | None = None
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid) -> "Kernel":
        g = grid if isinstance(grid, tuple) else (grid,)
        lnc = 1
        for x in g:
            lnc = max(lnc, int(getattr(x, "lnc", 1)))
        if self.dialect == "nki" and len(g) > 1 and not any(hasattr(x, "lnc") for x in g):
            raise KernelError("err_invalid_grid",
                              f"kernel[{', '.join(str(int(x)) for x in g)}]: an NKI 0.6 launch takes one number in "
                              "brackets, the LNC degree (lnc.rst: 'The bracket syntax must contain only one number')",
                              "launch with kernel[1](...) or kernel[2](...); loop over the work inside the kernel (or "
                              "run an SPMD grid of Beta 1 kernels under trnsim.neuronxcc.nki)", location="")
        if self.dialect == "nki" and len(g) == 1 and not hasattr(g[0], "lnc"):
            lnc = int(g[0])   # kernel[lnc]: the LNC degree
            if lnc not in (1, 2):
                raise KernelError("err_invalid_lnc",
                                  f"kernel[{lnc}] launches on {lnc} NeuronCores; a logical NeuronCore has 1 or 2",
                                  "launch with kernel[1](...) or kernel[2](...) (LNC=2 on trn2 / trn3)",
                                  location="")
        for x in g:
            if int(x) < 1:
                raise KernelError("err_invalid_grid", f"launch grid {tuple(int(v) for v in g)} has a size below 1",
                                  "every grid dimension must be >= 1", location="")
        axis = next((k for k, x in enumerate(g) if int(getattr(x, "lnc", 1)) > 1), 0)
        return Kernel(self.func, tuple(int(x) for x in g), self.target, self.options, self.dialect, lnc, axis)

    def __call__(self, *args, **kwargs):
        if _context._CURRENT is not None:
            if self.grid:
                raise KernelError("err_nested_kernel_with_spmd_grid",
                                  "a kernel called from inside another kernel cannot have an SPMD grid",
                                  "call the inner kernel without [grid] (it runs inline)")
            return self.func(*args, **kwargs)
        outputs, trace = run_kernel(self.func, args, kwargs, target=self.target or default_target(),
                                    grid=self.grid, name=self.__name__, dialect=self.dialect, lnc=self.lnc,
                                    lnc_axis=self.lnc_axis)
        self.last_trace = trace
        return outputs

    def __repr__(self) -> str:
        return f"<nki kernel {self.__name__}" + (f"[{', '.join(map(str, self.grid))}]" if self.grid else "") + ">"


def jit(fn: Callable | None = None, **kwargs) -> Any:
    """``@nki.jit``: make ``fn`` an NKI kernel (a :class:`Kernel`).

    As in NKI 0.6 the target comes from ``NEURON_PLATFORM_TARGET_OVERRIDE`` (default trn2 here);
    ``platform_target=`` is refused (NKI 0.3+ raises an error for it) and ``mode=`` is ignored. trnsim
    extension: ``target="trn1"`` pins the kernel's target (used by the course to compare generations).
    """
    if "platform_target" in kwargs:
        raise KernelError("err_removed_api", "nki.jit(platform_target=...) was removed in NKI 0.3",
                          "set the environment variable NEURON_PLATFORM_TARGET_OVERRIDE (trn1, trn2, trn3) "
                          "before launching, or nki.jit(target=...) in trnsim", location="")
    kwargs.pop("mode", None)
    target = kwargs.pop("target", None)
    target = platform_target(target) if target is not None else None

    def wrap(f: Callable) -> Kernel:
        if isinstance(f, Kernel):
            return Kernel(f.func, f.grid, target or f.target, f.options, f.dialect, f.lnc, f.lnc_axis)
        if not callable(f):
            raise TypeError(f"nki.jit decorates a kernel function, got {type(f).__name__}")
        return Kernel(f, None, target, dict(kwargs))

    return wrap(fn) if fn is not None else wrap


def as_kernel(kernel, dialect: str = "nki") -> Kernel:
    """``kernel`` as a :class:`Kernel` (a plain function is wrapped; objects with a ``.kernel`` attribute, e.g.
    a benchmark wrapper, are unwrapped)."""
    if isinstance(kernel, Kernel):
        return kernel
    inner = getattr(kernel, "kernel", None)
    if inner is not None and callable(inner):
        return as_kernel(inner, dialect)
    if not callable(kernel):
        raise TypeError(f"expected a kernel function, got {type(kernel).__name__}: pass the kernel itself, e.g. "
                        "nki.simulate(my_kernel)(a, b) or profile(my_kernel, a, b), not the result of calling it")
    return Kernel(kernel, None, None, None, dialect)


def simulate(kernel) -> Callable:
    """``nki.simulate(kernel)(*arrays)``: run ``kernel`` on the CPU simulator; numpy in, numpy out.

    ``kernel`` is an ``@nki.jit`` kernel, an LNC launch ``kernel[2]``, or a plain function (wrapped).
    The returned callable records the trace on the kernel (``kernel.last_trace``).
    """
    k = as_kernel(kernel)

    def run(*args, **kwargs):
        outputs, trace = run_kernel(k.func, args, kwargs, target=k.target or default_target(), grid=k.grid,
                                    name=k.__name__, dialect=k.dialect, lnc=k.lnc, lnc_axis=k.lnc_axis)
        k.last_trace = trace
        if kernel is not k and isinstance(kernel, Kernel):
            kernel.last_trace = trace
        return outputs

    run.__name__ = f"simulate({k.__name__})"
    run.__wrapped__ = k
    return run


def trace_kernel(kernel, *args, target: str | None = None, numerics: bool = True, grid=None,
                 dialect: str | None = None, **kwargs):
    """Run ``kernel`` and return ``(outputs, Trace)`` (trnsim's bridge to the performance model).

    ``args`` are numpy arrays or ``nt.tensor[[shape], dtype]`` specs (specs imply numerics=False).
    With ``numerics=False`` no data is computed and outputs are None. ``grid`` overrides the kernel's
    launch grid; ``dialect`` overrides the kernel's ("nki" for plain functions).
    """
    k = as_kernel(kernel)
    if grid is not None and not isinstance(grid, tuple):
        grid = tuple(grid) if isinstance(grid, list) else (int(grid),)
    return run_kernel(k.func, args, kwargs, target=target or k.target or default_target(), numerics=numerics,
                      grid=grid if grid is not None else k.grid, name=k.__name__, dialect=dialect or k.dialect,
                      lnc=k.lnc if grid is None else 1, lnc_axis=k.lnc_axis)
