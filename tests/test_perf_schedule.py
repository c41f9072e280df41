"""Scheduler properties on hand-built instruction lists."""
import numpy as np
import pytest

import trnsim
from trnsim.perf import build as B
from trnsim.perf import CostModelError
from trnsim.perf.cost import dependent_overhead_ns, instruction_cost_ns
from trnsim.perf.dma import dma_params, dma_plan
from trnsim.perf.schedule import schedule_instructions

T1 = trnsim.target("trn1")
C, CH = T1.core, T1.chip


def run(instrs, tgt=T1):
    for i, ins in enumerate(instrs):
        ins.index = i
    return schedule_instructions(instrs, tgt.core, tgt.chip, tgt.name)


def ns(ins):
    return instruction_cost_ns(ins, C, CH)


def test_dependent_chain_serialises_with_overheads():
    a = B.elementwise("activation", "scalar", 128, 512)
    b = B.elementwise("tensor_scalar", "vector", 128, 512, deps=(0,))
    c = B.elementwise("activation", "scalar", 128, 512, deps=(1,))
    tl = run([a, b, c])
    want = ns(a) + ns(b) + ns(c) + dependent_overhead_ns(C, "vector") + dependent_overhead_ns(C, "scalar")
    assert tl.latency_ns == pytest.approx(want)
    assert tl.start_ns[1] == pytest.approx(tl.end_ns[0])
    assert list(tl.pred) == [-1, 0, 1]


def test_independent_engines_overlap():
    a = B.elementwise("activation", "scalar", 128, 2048)
    b = B.elementwise("tensor_scalar", "vector", 128, 2048)
    m = B.matmul(128, 128, 512)
    tl = run([a, b, m])
    assert tl.latency_ns == pytest.approx(max(ns(a), ns(b), ns(m)))
    assert np.all(tl.start_ns == 0)


def test_same_engine_in_order_without_deps_pays_no_overhead():
    ins = [B.elementwise("tensor_scalar", "vector", 128, 512) for _ in range(4)]
    tl = run(ins)
    assert tl.latency_ns == pytest.approx(4 * ns(ins[0]))
    assert tl.overhead_ns.sum() == 0


def test_accumulating_matmuls_are_pipelined():
    mm = [B.matmul(128, 128, 512, deps=((i - 1,) if i else ())) for i in range(8)]
    tl = run(mm)
    assert tl.latency_ns == pytest.approx(8 * 512 / 2.8)


def test_nc_v2_vector_and_gpsimd_share_the_sbuf_port():
    v = B.elementwise("tensor_scalar", "vector", 128, 1024)
    g = B.elementwise("tensor_scalar", "gpsimd", 128, 1024)
    tl1 = run([v, g])
    assert tl1.latency_ns == pytest.approx(ns(v) + ns(g))
    T2 = trnsim.target("trn2")
    tl2 = run([B.elementwise("tensor_scalar", "vector", 128, 1024), B.elementwise("tensor_scalar", "gpsimd", 128, 1024)], T2)
    assert tl2.latency_ns < tl2.end_ns.sum()   # lifted on NC-v3: they overlap


def _loop(n_iter, n_buf, free=2048):
    """for i: load tile -> buf[i % n_buf]; scalar activation on it; store result.
    WAR: load i waits for the activation of iteration i - n_buf (the buffer's last reader)."""
    instrs = []
    act_idx = []
    for i in range(n_iter):
        deps = (act_idx[i - n_buf],) if i >= n_buf else ()
        instrs.append(B.load(128, free, "float32", deps=deps))
        ld = len(instrs) - 1
        instrs.append(B.elementwise("activation", "scalar", 128, free, "float32", deps=(ld,)))
        act_idx.append(len(instrs) - 1)
    return instrs


def test_double_buffering_shortens_dma_bound_loop():
    single = run(_loop(16, 1)).latency_ns
    double = run(_loop(16, 2)).latency_ns
    triple = run(_loop(16, 3)).latency_ns
    assert double < 0.8 * single
    assert triple <= double + 1e-6


def test_latency_never_below_compute_or_hbm_floor():
    rng = np.random.default_rng(0)
    p = dma_params(C, CH)
    for trial in range(20):
        instrs = []
        for i in range(60):
            kind = rng.integers(0, 4)
            deps = tuple(sorted(set(int(d) for d in rng.integers(0, i, size=rng.integers(0, 3))))) if i else ()
            if kind == 0:
                instrs.append(B.load(int(rng.choice([8, 64, 128])), int(rng.choice([64, 512, 2048])), deps=deps))
            elif kind == 1:
                instrs.append(B.matmul(128, 128, int(rng.choice([64, 512])), deps=deps))
            elif kind == 2:
                instrs.append(B.elementwise("activation", "scalar", 128, int(rng.integers(1, 4096)), deps=deps))
            else:
                instrs.append(B.elementwise("tensor_tensor", "vector", 128, int(rng.integers(1, 4096)), n_inputs=2, deps=deps))
        tl = run(instrs)
        busy = tl.engine_busy_ns()
        for eng in ("tensor", "vector", "scalar"):
            floor = sum(ns(x) for x in instrs if x.engine == eng)
            assert tl.latency_ns >= floor - 1e-6
            assert busy[eng] >= floor - 1e-6
        hbm_bytes = sum(x.bytes_moved for x in instrs if x.engine == "dma")
        assert tl.latency_ns >= hbm_bytes / p.hbm_core_bytes_per_ns - 1e-6
        assert tl.latency_ns >= hbm_bytes / p.peak_bytes_per_ns - 1e-6
        # every instruction starts after its dependencies end
        for x in instrs:
            for d in x.deps:
                assert tl.start_ns[x.index] >= tl.end_ns[d] - 1e-9
        cp = tl.critical_path()
        assert sum(cp.values()) == pytest.approx(tl.latency_ns, rel=1e-9)


def test_dma_fixed_latency_exposed_only_when_waiting():
    # two independent loads overlap their fixed latency; a dependent one pays it again
    a, b = B.load(128, 512), B.load(128, 512)
    tl = run([a, b])
    data = dma_plan(a, dma_params(C, CH)).data_ns_per_engine
    assert tl.latency_ns == pytest.approx(1300 + 2 * data)
    a, b = B.load(128, 512), B.load(128, 512, deps=(0,))
    tl = run([a, b])
    assert tl.latency_ns == pytest.approx(2 * (1300 + data))


def test_bad_engine_and_bad_order_are_clear_errors():
    x = B.elementwise("tensor_scalar", "warp", 128, 4)
    with pytest.raises(CostModelError, match="unknown engine 'warp'"):
        run([x])
    a, b = B.elementwise("activation", "scalar", 1, 1), B.elementwise("activation", "scalar", 1, 1)
    a.index, b.index = 1, 0
    with pytest.raises(CostModelError, match="program order"):
        schedule_instructions([a, b], C, CH)


def _two_pass_through_hbm(style):
    """Store a tile to an HBM scratch tensor, then load it back (as a two-pass softmax does), four times."""
    import trnsim.nki as nki
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl

    @nki.jit
    def k(a):
        scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm, name="scratch")
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in range(a.shape[0] // 128):
            rows = slice(i * 128, (i + 1) * 128)
            if style == "nl":
                nl.store(scratch[rows, :], nl.load(a[rows, :]))
            else:
                t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=a[rows, :])
                nisa.dma_copy(dst=scratch[rows, :], src=t)
        for i in range(a.shape[0] // 128):
            rows = slice(i * 128, (i + 1) * 128)
            if style == "nl":
                nl.store(out[rows, :], nl.load(scratch[rows, :]))
            else:
                u = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=u, src=scratch[rows, :])
                nisa.dma_copy(dst=out[rows, :], src=u)
        return out

    return k


def test_dma_copy_and_load_store_use_the_same_queues():
    """NKI 0.6's dma_copy names one API for both directions; a load and a store of the same HBM tensor are still
    two streams ("load scratch", "store scratch"), exactly as with nl.load / nl.store."""
    import trnsim.nki.language as nl
    import trnsim.nki.typing as nt
    from trnsim.perf import profile

    spec = nt.tensor[[512, 2048], nl.float32]
    p_nl = profile(_two_pass_through_hbm("nl"), spec, target="trn1")
    p_isa = profile(_two_pass_through_hbm("isa"), spec, target="trn1")
    names = set(p_isa.timeline.queue_names)
    assert {"load scratch", "store scratch"} <= names, names
    assert p_isa.latency_us == pytest.approx(p_nl.latency_us, rel=1e-9)


def test_unnamed_hbm_tensors_get_readable_queue_labels():
    """A queue of an unnamed HBM tensor is labelled "store output" (numbered only when there are several), not
    with its internal allocation key ("store out#2")."""
    from trnsim.perf.schedule import _readable_queue_names
    assert _readable_queue_names(["load x", "store out#5"]) == ["load x", "store output"]
    assert _readable_queue_names(["load x", "store out#9", "load hbm#9", "store out#4 + store out#9"]) == \
        ["load x", "store output 1", "load output 1", "store output 2 + store output 1"]   # one number per tensor
    assert _readable_queue_names(["load output", "store out#3"]) == ["load output", "store unnamed HBM tensor"]
    import trnsim.nki as nki
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl
    import trnsim.nki.typing as nt
    from trnsim.perf import profile

    def k(x):
        t = nl.ndarray((128, 512), nl.float32, nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        out = nl.ndarray((128, 512), nl.float32, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    names = profile(nki.jit(k), nt.tensor[[128, 512], nl.float32], target="trn1").timeline.queue_names
    assert "store output" in names and not any("#" in n for n in names), names
