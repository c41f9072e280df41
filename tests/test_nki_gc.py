"""The trace's objects skip the cyclic collector's young-generation scans (trnsim.nki._gc), without leaking."""
import gc
import weakref

import numpy as np

import trnsim.nki as nki
import trnsim.nki.language as nl
from trnsim.nki._gc import promote_to_oldest_generation


class _Node:
    pass


def test_promoted_cycles_are_still_collected():
    a, b = _Node(), _Node()
    a.other, b.other = b, a                     # a reference cycle only the cyclic collector can free
    probe = weakref.ref(a)
    gc.disable()
    try:
        assert promote_to_oldest_generation()
        assert gc.get_count()[0] < 10           # the youngest generation starts empty again
    finally:
        gc.enable()
    del a, b
    gc.collect()
    assert probe() is None


def test_a_frozen_application_is_left_alone():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert not promote_to_oldest_generation()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_a_kernel_runs_trace_lands_in_the_oldest_generation():
    def kern(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        for i in range(8):
            nl.store(out[i * 16:(i + 1) * 16], nl.exp(nl.load(x[i * 16:(i + 1) * 16])))
        return out
    x = np.zeros((128, 64), np.float32)
    k = nki.jit(kern)
    got = nki.simulate(k)(x)
    np.testing.assert_array_equal(got, np.ones_like(x))
    trace_ids = {id(i) for i in k.last_trace.instructions}
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert trace_ids <= oldest                   # promoted unscanned, not left for the young collections


def test_a_dropped_trace_is_freed_without_the_cyclic_collector():
    """The run's context must not sit in a reference cycle that keeps the instruction list alive: dropping the
    Trace frees its instructions by reference counting (a large trace would otherwise wait for a full GC)."""
    import trnsim.nki.typing as nt
    from trnsim.nki.trace import Instruction

    k = nki.jit(lambda a, b: _mm(a, b))
    gc.disable()
    try:
        _, tr = nki.trace_kernel(k, nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16],
                                 numerics=False)
        probe = weakref.ref(tr.instructions[0]) if hasattr(tr.instructions[0], "__weakref__") else None
        ids = {id(i) for i in tr.instructions}
        k.last_trace = None
        del tr
        alive = [o for o in gc.get_objects() if id(o) in ids and isinstance(o, Instruction)]
        assert not alive, f"{len(alive)} instructions still alive"
        assert probe is None or probe() is None
    finally:
        gc.enable()


def _mm(a, b):
    from trnsim.kernels.matmul import matmul_tiled
    return matmul_tiled.func(a, b)
