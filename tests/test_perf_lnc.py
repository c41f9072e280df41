"""The timing model of LNC=2 launches: each physical core schedules on its own engines, DMA queues and
engines, and waits for the other only where the kernel synchronises them (core_barrier, sendrecv, shared HBM
written before a barrier)."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
import trnsim.nki.typing as nt
from trnsim.perf import profile
from trnsim.perf.schedule import schedule

ROWS, COLS = 4096, 2048


def _add_rows(a, b, out, lo, hi):
    for r in nl.affine_range((hi - lo) // 128):
        r0 = lo + r * 128
        nl.store(out[r0:r0 + 128], nl.add(nl.load(a[r0:r0 + 128]), nl.load(b[r0:r0 + 128])))


@nki.jit
def add_one_core(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    _add_rows(a, b, out, 0, a.shape[0])
    return out


@nki.jit
def add_split(a, b):
    """Each core of an LNC=2 launch adds half of the rows."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    half = a.shape[0] // 2
    c = nl.program_id(0)
    _add_rows(a, b, out, c * half, (c + 1) * half)
    return out


SPEC = (nt.tensor[[ROWS, COLS], nl.float32], nt.tensor[[ROWS, COLS], nl.float32])


def test_two_cores_split_the_work_and_the_time():
    one = profile(add_one_core, *SPEC, target="trn2", numerics=False)
    two = profile(add_split[2], *SPEC, target="trn2", numerics=False)
    assert two.timeline.cores == 2 and one.timeline.cores == 1
    assert two.latency_us == pytest.approx(one.latency_us / 2, rel=0.05)
    # the DMA queues of both cores are listed, and the logical core's DMA ceiling is two cores' worth
    assert any(q.startswith("core 1: ") for q in two.timeline.queue_names)
    assert two.hbm_peak_gbytes_per_s == pytest.approx(2 * one.hbm_peak_gbytes_per_s)
    assert two.timeline.dma_engine_count == 2 * one.timeline.dma_engine_count


def test_numerics_of_the_split_kernel():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((512, 256)).astype(np.float32)
    b = rng.standard_normal((512, 256)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(add_split[2])(a, b), a + b)


@nki.jit
def unbalanced_then_barrier(a, b):
    """Core 0 adds three quarters of the rows, core 1 one quarter; after a barrier each core adds 128 more
    rows. The barrier makes core 1's second part wait for core 0's first."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    c = nl.program_id(0)
    q = a.shape[0] // 4
    if c == 0:
        _add_rows(a, b, out, 0, 3 * q - 256)
    else:
        _add_rows(a, b, out, 3 * q - 256, 4 * q - 256)
    nisa.core_barrier(out, (0, 1))
    lo = 4 * q - 256 + 128 * c
    _add_rows(a, b, out, lo, lo + 128)
    return out


def test_core_barrier_holds_the_faster_core():
    p = profile(unbalanced_then_barrier[2], *SPEC, target="trn2", numerics=False)
    ins = p.trace.instructions
    tl = p.timeline
    barriers = [i.index for i in ins if i.opcode == "core_barrier"]
    assert len(barriers) == 2
    b0, b1 = sorted(barriers, key=lambda i: ins[i].core)
    assert ins[b0].attrs["partner"] == b1 and ins[b1].attrs["partner"] == b0
    # both barriers pass together, when the slower core (core 0) arrives
    assert tl.start_ns[b1] == pytest.approx(tl.start_ns[b0], abs=1.0)
    core1_before = max(tl.end_ns[i.index] for i in ins if i.core == 1 and i.index < b1)
    assert tl.start_ns[b1] > core1_before + 1000          # core 1 idled at the barrier (> 1 us)
    # core 1's store into `out` after the barrier waits for it (the barrier orders accesses to its data)
    stores = [i.index for i in ins if i.core == 1 and i.index > b1 and i.opcode == "dma_copy"
              and i.writes[0].buffer == "hbm"]
    assert stores and min(tl.start_ns[k] for k in stores) >= tl.end_ns[b1] - 1e-6


@nki.jit
def exchange(a):
    """Each core loads its half, sends it to the other core, and stores what it received."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    c = nl.program_id(0)
    half = a.shape[0] // 2
    mine = nl.load(a[c * half:c * half + 128])
    got = nl.ndarray((128, a.shape[1]), a.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=mine, dst=got, send_to_rank=1 - c, recv_from_rank=1 - c, pipe_id=0)
    nl.store(out[(1 - c) * half:(1 - c) * half + 128], got)
    return out


def test_sendrecv_receives_after_the_partner_posts():
    a = np.arange(256 * 64, dtype=np.float32).reshape(256, 64)
    got = nki.simulate(exchange[2])(a)
    np.testing.assert_array_equal(got[0:128], a[0:128])
    np.testing.assert_array_equal(got[128:256], a[128:256])
    p = profile(exchange[2], nt.tensor[[256, 64], nl.float32], target="trn2", numerics=False)
    ins, tl = p.trace.instructions, p.timeline
    sr = [i for i in ins if i.opcode == "sendrecv"]
    assert len(sr) == 2
    for s in sr:
        partner = s.attrs["partner"]
        assert ins[partner].core != s.core
        assert tl.start_ns[s.index] >= tl.start_ns[partner] - 1e-6


def test_single_core_traces_schedule_as_before():
    one = profile(add_one_core, *SPEC, target="trn2", numerics=False)
    tl = schedule(one.trace, "trn2")
    assert tl.cores == 1 and tl.latency_ns == pytest.approx(one.latency_us * 1e3)


def test_timeline_rows_show_each_cores_engines():
    from trnsim.course.viz.timeline import timeline_rows
    p = profile(add_split[2], nt.tensor[[512, 256], nl.float32], nt.tensor[[512, 256], nl.float32], target="trn2",
                numerics=False)
    labels = [label for label, _, _ in timeline_rows(p, max_dma_rows=8)]
    assert "Vector (core 0)" in labels and "Vector (core 1)" in labels
    assert any(label.startswith("DMA core 1: ") for label in labels)
