"""Findings of the fifth fuzz that were left open, fixed: ``.offset`` of an ``.ap`` view, a kernel returning a
broadcast view, collectives inside an LNC=2 launch under ``simulate_ranks``, and a replica group naming ranks the
launch does not have. Each test fails on the code before its fix."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import KernelError

X = np.arange(32, dtype=np.float32).reshape(4, 8)


def _copy_out(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out


@pytest.mark.parametrize("pattern, offset", [([[8, 2], [1, 4]], 6),     # crosses from row 0 into row 1
                                             ([[-8, 2], [1, 4]], 14),   # rows read backwards
                                             ([[1, 4], [8, 2]], 3),     # column-major walk
                                             ([[8, 4], [-1, 8]], 7)])   # every row reversed
def test_ap_offset_is_the_offset_it_was_given_and_round_trips(pattern, offset):
    """nki-aps.rst: offset is the element the access starts at; ``t.ap(v.get_pattern(), offset=v.offset)`` is v."""
    seen = {}

    def kern(x):
        v = x.ap(pattern, offset=offset)
        w = x.ap(pattern=v.get_pattern(), offset=v.offset)
        seen.update(offset=v.offset, pattern=v.get_pattern())
        a = nl.ndarray(tuple(n for _, n in pattern), dtype=x.dtype, buffer=nl.shared_hbm)
        b = nl.ndarray(tuple(n for _, n in pattern), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=a, src=v)
        nisa.dma_copy(dst=b, src=w)
        return a, b

    a, b = nki.simulate(nki.jit(kern))(X)
    flat = X.reshape(-1)
    expect = flat[offset + sum(np.ix_(*[st * np.arange(n) for st, n in pattern]))]
    assert seen["offset"] == offset and seen["pattern"] == [list(p) for p in pattern]
    np.testing.assert_array_equal(a, expect)
    np.testing.assert_array_equal(b, expect)


def test_on_chip_offset_counts_partitions_at_the_free_size_as_get_pattern_does():
    x = np.random.default_rng(3).standard_normal((128, 64)).astype(np.float32)
    seen = {}

    def kern(a):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        u = t[1:3, 6:10]
        v = t.ap(pattern=u.get_pattern(), offset=u.offset)
        seen.update(offset=u.offset, slice_offset=t.slice(dim=1, start=8, end=24).offset)
        out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=v)
        return out

    got = nki.simulate(nki.jit(kern))(x)
    assert seen["offset"] == 1 * 64 + 6
    assert seen["slice_offset"] == 8          # the nki-aps.rst example
    np.testing.assert_array_equal(got, x[1:3, 6:10])


def test_a_kernel_may_return_a_broadcast_view_of_its_output():
    def kern(x):
        out = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x[0:1, :])
        return out.broadcast_to((4, 8))

    got = nki.simulate(nki.jit(kern))(X)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, np.broadcast_to(X[0:1], (4, 8)))


def test_a_broadcast_view_of_an_on_chip_tile_is_still_not_an_output():
    def kern(x):
        t = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[0:1, :])
        return t.broadcast_to((4, 8))

    with pytest.raises(KernelError, match="err_kernel_output_not_in_hbm"):
        nki.simulate(nki.jit(kern))(X)


def _lnc2_launch(body):
    return nki.jit(body)[nl.spmd_dim(2, nl.nc(2))]


def test_rank_id_works_on_both_cores_of_an_lnc2_launch():
    seen = []

    def kern(x):
        seen.append((ncc.rank_id(), nl.program_id(0)))
        return _copy_out(x)

    outs = nki.simulate_ranks(_lnc2_launch(kern), 2, [(X,), (X + 1,)])
    np.testing.assert_array_equal(outs[1], X + 1)
    # spmd_dim(2, nl.nc(2)): four programs per rank (two core pairs), each knowing its rank
    assert sorted(seen) == [(r, p) for r in (0, 1) for p in range(4)]


def test_a_collective_in_an_lnc2_launch_says_what_is_not_simulated():
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
        return out

    with pytest.raises(KernelError, match="err_unsupported_collective_in_lnc2") as exc:
        nki.simulate_ranks(_lnc2_launch(kern), 2, [(X,), (X,)])
    assert "kernel[1]" in str(exc.value) and "single instance" not in str(exc.value)


def test_a_replica_group_naming_ranks_the_launch_does_not_have_is_refused():
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1], [5, 6]]), op=nl.add)
        return out

    with pytest.raises(KernelError, match="err_rank_not_in_replica_group") as exc:
        nki.simulate_ranks(nki.jit(kern), 2, [(X,), (X,)])
    assert "rank 5" in str(exc.value) and "2 ranks" in str(exc.value)


def test_writing_a_read_only_input_array_warns_that_the_update_is_lost():
    import trnsim.nki.typing as nt
    from trnsim.nki.runtime import ReadOnlyInputWarning

    def kern(x: nt.mutable_tensor):
        nl.store(x, value=nl.add(nl.load(x), 1.0))
        return x

    frozen = np.zeros((4, 8), np.float32)
    frozen.flags.writeable = False
    with pytest.warns(ReadOnlyInputWarning, match="read-only"):
        got = nki.simulate(nki.jit(kern))(frozen)
    np.testing.assert_array_equal(got, np.ones((4, 8), np.float32))   # the kernel's result is still returned
    assert not frozen.any()
    writable = np.zeros((4, 8), np.float32)
    nki.simulate(nki.jit(kern))(writable)                             # a writable one is updated in place
    np.testing.assert_array_equal(writable, np.ones((4, 8), np.float32))


def test_a_dma_reads_a_broadcast_view_as_the_stride_0_access_pattern_it_is():
    """nki-aps.rst: broadcast is built on .ap(); the same stride-0 .ap was already accepted, the view was refused
    (and nl.load of one said "expected 'hbm', got 'hbm'")."""
    row = np.arange(64, dtype=np.float32).reshape(1, 64)
    y = np.arange(128 * 64, dtype=np.float32).reshape(128, 1, 64)

    def kern(x, y):
        a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x.broadcast_to((128, 64)))            # one HBM row to every partition
        b = nl.load(x.broadcast_to((128, 64)))
        c = nl.ndarray((128, 8, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=c, src=y.broadcast(1, 8))                    # NkiTensor.broadcast, no copy
        d = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=d, src=x.ap([[0, 128], [1, 64]], offset=0))  # the same access written as .ap
        outs = []
        for tile, shape in ((a, (128, 64)), (b, (128, 64)), (c, (128, 8, 64)), (d, (128, 64))):
            o = nl.ndarray(shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=tile)
            outs.append(o)
        return tuple(outs)

    a, b, c, d = nki.simulate(nki.jit(kern))(row, y)
    for got in (a, b, d):
        np.testing.assert_array_equal(got, np.broadcast_to(row, (128, 64)))
    np.testing.assert_array_equal(c, np.broadcast_to(y, (128, 8, 64)))


def test_a_broadcast_view_is_not_a_dma_destination():
    def kern(x):
        out = nl.ndarray((1, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out.broadcast_to((4, 8)), src=x)
        return out

    with pytest.raises(KernelError, match="err_unsupported_view") as exc:
        nki.simulate(nki.jit(kern))(X)
    assert "read-only" in str(exc.value)


# ----------------------------------------------------------------------------- from the review of these fixes

def test_a_broadcast_of_a_runtime_indexed_access_is_refused_not_read_from_placeholder_rows():
    """The rows of an indirect access are known only when the DMA runs; the broadcast must not drop the
    indirection (it read row 0 for an out-of-range index, and ignored oob_mode)."""
    z = np.arange(6 * 1 * 8, dtype=np.float32).reshape(6, 1, 8)
    idx = np.array([4, 1, 5], np.int32).reshape(3, 1)

    def kern(z, idx):
        it = nl.ndarray((3, 1), nl.int32, nl.sbuf)
        nisa.dma_copy(dst=it, src=idx)
        t = nl.ndarray((3, 4, 8), nl.float32, nl.sbuf)
        nisa.dma_copy(dst=t, src=z.vector_select(0, it).broadcast_to((3, 4, 8)))
        return _copy_out(t)

    with pytest.raises(KernelError, match="err_unsupported_view") as exc:
        nki.simulate(nki.jit(kern))(z, idx)
    assert "runtime-indexed" in str(exc.value) and "then broadcast the tile" in str(exc.value)


def test_an_empty_view_still_has_an_offset():
    seen = {}

    def kern(x):
        seen.update(cols=x[:, 8:8].offset, rows=x[4:4, :].offset, mid=x[1:1, 3:5].offset)
        return _copy_out(x)

    nki.simulate(nki.jit(kern))(X)
    assert seen == {"cols": 8, "rows": 32, "mid": 8 + 3}


def test_beta1_read_modify_write_into_a_broadcast_view_is_refused_by_name():
    import trnsim.neuronxcc.nki as bnki
    import trnsim.neuronxcc.nki.isa as bisa
    import trnsim.neuronxcc.nki.language as bnl

    @bnki.jit
    def kern(x):
        out = bnl.ndarray((1, 8), dtype=bnl.float32, buffer=bnl.shared_hbm)
        bnl.store(out, value=bnl.load(x))
        t4 = bnl.ndarray((4, 8), dtype=bnl.float32, buffer=bnl.sbuf)
        t4[...] = bnl.zeros((4, 8), bnl.float32)
        bisa.dma_copy(dst=out.broadcast_to((4, 8)), src=t4, dst_rmw_op=np.add)
        return out

    with pytest.raises(KernelError, match="err_unsupported_view") as exc:
        bnki.simulate_kernel(kern, X[0:1])
    assert "read-only" in str(exc.value)
