"""Runtime-indexed (indirect) accesses of NKI 0.6: ``.ap(scalar_offset= / vector_offset=)``, ``vector_select``,
dynamic ``select``, gather/scatter through ``nisa.dma_copy`` with ``oob_mode``, and the indirect (gather)
``nisa.dma_transpose``. Each against numpy, plus one broken rule each (KernelError naming the rule and a fix).
Kernels are written for this file after the semantics in nki/deep-dives/nki-aps.rst and the nki.isa reference."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
import trnsim.nki.typing as nt
from trnsim.nki import KernelError

rng = np.random.default_rng(2026)


def sim(fn, *arrays, target="trn2"):
    return nki.simulate(nki.jit(fn, target=target))(*arrays)


def broken(fn, *arrays, rule, target="trn2"):
    with pytest.raises(KernelError) as exc:
        sim(fn, *arrays, target=target)
    assert exc.value.rule == rule, str(exc.value)
    assert exc.value.fix
    return str(exc.value)


def rows_gather(table, rows, oob=nisa.oob_mode.error, fill=-7.0):
    """out[p, :] = table[rows[p], :] by an indirect DMA (rows: [P, 1] uint32)."""
    P, F = rows.shape[0], table.shape[1]
    idx = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    got = nl.ndarray((P, F), dtype=table.dtype, buffer=nl.sbuf)
    nisa.memset(dst=got, value=fill)
    nisa.dma_copy(dst=got, src=table.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0), oob_mode=oob)
    out = nl.ndarray((P, F), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=got)
    return out


def rows_gather_skip(table, rows):
    return rows_gather(table, rows, oob=nisa.oob_mode.skip)


def rows_scatter(values, rows, table):
    """table[rows[p], :] = values[p, :] by an indirect DMA into HBM (an input the kernel updates, as the
    reference's scatter example does; NKI 0.6 writes it back into the caller's array)."""
    P, F = values.shape
    v = nl.ndarray((P, F), dtype=values.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=v, src=values)
    idx = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    nisa.dma_copy(dst=table.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0), src=v)
    return table


def test_vector_offset_gather_matches_numpy_fancy_indexing():
    table = rng.standard_normal((300, 48)).astype(np.float32)
    rows = rng.integers(0, 300, (128, 1)).astype(np.uint32)
    np.testing.assert_array_equal(sim(rows_gather, table, rows), table[rows[:, 0]])


def test_vector_offset_scatter_writes_the_indexed_rows_only():
    table = rng.standard_normal((200, 16)).astype(np.float32)
    values = rng.standard_normal((64, 16)).astype(np.float32)
    rows = rng.permutation(200)[:64].reshape(64, 1).astype(np.uint32)
    want = table.copy()
    want[rows[:, 0]] = values
    mine = table.copy()
    np.testing.assert_array_equal(sim(rows_scatter, values, rows, mine), want)
    np.testing.assert_array_equal(mine, want)          # the input array was updated in place


def test_out_of_range_index_is_an_error_naming_the_partition_and_value():
    table = rng.standard_normal((100, 8)).astype(np.float32)
    rows = rng.integers(0, 100, (32, 1)).astype(np.uint32)
    rows[7, 0] = 100
    msg = broken(rows_gather, table, rows, rule="err_tensor_access_out_of_bound")
    assert "partition 7" in msg and "100" in msg and "oob_mode" in msg


def test_oob_mode_skip_leaves_the_skipped_rows_unwritten():
    table = rng.standard_normal((100, 8)).astype(np.float32)
    rows = rng.integers(0, 100, (32, 1)).astype(np.uint32)
    rows[[3, 30], 0] = [5000, 100]
    want = table[np.minimum(rows[:, 0], 99)].copy()
    want[[3, 30]] = -7.0
    np.testing.assert_array_equal(sim(rows_gather_skip, table, rows), want)


def test_vector_select_and_the_reference_strided_example():
    A = rng.standard_normal((128, 512)).astype(np.float32)

    def even_rows(A):
        offsets = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.iota(offsets, [[1, 1]], 0, 2)
        src = A.vector_select(0, offsets)
        assert src.is_indirect() and not A.is_indirect()
        out = nl.ndarray((64, 512), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=src)
        return out
    np.testing.assert_array_equal(sim(even_rows, A), A[0:128:2])

    def column_slice(A):
        offsets = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.iota(offsets, [[1, 1]], 1, 2)               # odd rows
        out = nl.ndarray((64, 100), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=A[:, 10:110].vector_select(0, offsets))
        return out
    np.testing.assert_array_equal(sim(column_slice, A), A[1:128:2, 10:110])


def test_scalar_offset_from_a_tile_and_from_a_register():
    A = rng.standard_normal((512, 512)).astype(np.float32)

    def from_tile(A):
        at = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.memset(at, value=3 * 128)
        out = nl.ndarray((128, 256), A.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=A.ap(pattern=[[512, 128], [1, 256]], offset=0, scalar_offset=at, indirect_dim=0))
        return out
    np.testing.assert_array_equal(sim(from_tile, A), A[384:, :256])

    def from_register(A):
        reg = nisa.register_alloc(2)
        out = nl.ndarray((128, 512), A.dtype, buffer=nl.shared_hbm)
        # indirect_dim=0 scales the register by the base tensor's row size (512): rows 2..129
        nisa.dma_copy(dst=out, src=A.ap(pattern=[[512, 128], [1, 512]], scalar_offset=reg, indirect_dim=0))
        return out
    np.testing.assert_array_equal(sim(from_register, A), A[2:130])


def test_dynamic_select_is_indirect_and_costs_in_a_timing_only_trace():
    x = rng.standard_normal((4, 128, 64)).astype(np.float32)

    def pick(x, i):
        idx = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=i)
        view = x.select(0, idx)
        assert view.is_indirect()
        out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=view)
        return out
    i = np.array([[2]], np.int32)
    np.testing.assert_array_equal(sim(pick, x, i), x[2])
    _, tr = nki.trace_kernel(nki.jit(pick, target="trn2"), nt.tensor[[4, 128, 64], nl.float32],
                             nt.tensor[[1, 1], nl.int32], numerics=False)
    load_idx, gather = tr.instructions[0], tr.instructions[1]
    assert load_idx.index in gather.deps            # the DMA waits for its index
    assert gather.bytes_moved == 128 * 64 * 4


def test_gather_reads_its_index_tile_in_the_trace():
    _, tr = nki.trace_kernel(nki.jit(rows_gather, target="trn2"), nt.tensor[[300, 48], nl.float32],
                             nt.tensor[[128, 1], nl.uint32], numerics=False)
    gather = [i for i in tr.instructions if i.attrs.get("indirect") == "vector"]
    assert len(gather) == 1 and 0 in gather[0].deps
    assert any(op.name == tr.instructions[0].writes[0].name for op in gather[0].reads)


def gather_transpose(src, idx_hbm):
    P = idx_hbm.shape[0]
    F = src.shape[1]
    idx = nl.ndarray(idx_hbm.shape, dtype=idx_hbm.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=idx_hbm)
    n = P * idx_hbm.shape[1]
    dst = nl.ndarray((F, n), dtype=src.dtype, buffer=nl.sbuf)
    nisa.memset(dst=dst, value=0)
    nisa.dma_transpose(dst=dst, src=src.ap(pattern=[[F, n], [1, F]], vector_offset=idx, indirect_dim=0), axes=(1, 0))
    out = nl.ndarray((F, n), dtype=src.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=dst)
    return out


@pytest.mark.parametrize("cols", [1, 2])
def test_indirect_dma_transpose_reads_indices_column_by_column(cols):
    src = rng.standard_normal((512, 128)).astype(ml_dtypes.bfloat16)
    idx = rng.integers(0, 512, (128, cols)).astype(np.uint32)
    flat = idx.T.flatten()[:128 * cols]
    np.testing.assert_array_equal(sim(gather_transpose, src, idx), src[flat].T)


def test_indirect_dma_transpose_limits():
    idx = rng.integers(0, 64, (128, 1)).astype(np.uint32)
    msg = broken(gather_transpose, rng.standard_normal((64, 128)).astype(np.float32), idx,
                 rule="err_indirect_transpose_limits")
    assert "2 bytes" in msg
    broken(gather_transpose, rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16), idx,
           rule="err_unsupported_on_target", target="trn1")
    broken(gather_transpose, rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16), idx.astype(np.int32),
           rule="err_indirect_transpose_limits")


def test_rules_of_runtime_offsets():
    A = np.zeros((64, 32), np.float32)

    def both(A):
        i = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        A.ap([[32, 64], [1, 32]], scalar_offset=i, vector_offset=i)
    assert "mutually exclusive" in broken(both, A, rule="err_invalid_access_pattern")

    def twice(A):
        i = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        A.vector_select(0, i).ap([[32, 64], [1, 32]], vector_offset=i)
    broken(twice, A, rule="err_invalid_access_pattern")

    def on_chip(A):
        t = nl.ndarray((64, 32), nl.float32, nl.sbuf)
        i = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        t.ap([[32, 64], [1, 32]], vector_offset=i)
    broken(on_chip, A, rule="err_unsupported_memory")

    def float_index(A):
        i = nl.ndarray((64, 1), nl.float32, nl.sbuf)
        nisa.memset(i, value=0)
        A.ap([[32, 64], [1, 32]], vector_offset=i)
    broken(float_index, A, rule="err_invalid_index")

    def wrong_count(A):
        i = nl.ndarray((32, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        A.ap([[32, 64], [1, 32]], vector_offset=i)
    broken(wrong_count, A, rule="err_shape_mismatch")

    def vector_dim1(A):
        i = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        A.ap([[32, 64], [1, 32]], vector_offset=i, indirect_dim=1)
    broken(vector_dim1, A, rule="err_invalid_access_pattern")

    def partition_dim_on_chip(A):
        t = nl.ndarray((64, 32), nl.float32, nl.sbuf)
        i = nl.ndarray((1, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        t.ap([[32, 64], [1, 8]], scalar_offset=i, indirect_dim=0)
    broken(partition_dim_on_chip, A, rule="err_partition_dim_must_be_first")

    def on_chip_out_of_range(A):
        t = nl.ndarray((64, 32), nl.float32, nl.sbuf)
        i = nl.ndarray((1, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=30)
        t.ap([[32, 64], [1, 8]], scalar_offset=i, indirect_dim=1)
    broken(on_chip_out_of_range, A, rule="err_tensor_access_out_of_bound")

    def uninitialised_register(A):
        A.ap([[32, 64], [1, 32]], scalar_offset=nisa.register_alloc(), indirect_dim=0)
    broken(uninitialised_register, A, rule="err_register_uninitialized")

    def bad_oob_mode(A):
        t = nl.ndarray((64, 32), nl.float32, nl.sbuf)
        i = nl.ndarray((64, 1), nl.int32, nl.sbuf)
        nisa.memset(i, value=0)
        nisa.dma_copy(dst=t, src=A.vector_select(0, i), oob_mode="wrap")
    broken(bad_oob_mode, A, rule="err_invalid_arguments")


def test_skip_needs_an_indirect_transpose_source():
    def direct(x):
        t = nl.ndarray((32, 16), x.dtype, nl.sbuf)
        nisa.dma_transpose(dst=t, src=x, oob_mode=nisa.oob_mode.skip)
    broken(direct, np.zeros((16, 32), ml_dtypes.bfloat16), rule="err_invalid_arguments")


# ----------------------------------------------------------------------------- permute / rearrange views

def _through_sbuf(view_fn, shape_out, dtype=nl.float32):
    def kern(x):
        t = nl.ndarray(x.shape, dtype, nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        o = nl.ndarray(shape_out, dtype, nl.sbuf)
        nisa.tensor_copy(dst=o, src=view_fn(t))
        out = nl.ndarray(shape_out, dtype, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        return out
    return kern


def test_permute_and_rearrange_views_match_numpy():
    x = rng.standard_normal((128, 4, 6)).astype(np.float32)
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t.permute((0, 2, 1)), (128, 6, 4)), x),
                                  x.transpose(0, 2, 1))
    y = rng.standard_normal((128, 24)).astype(np.float32)
    got = sim(_through_sbuf(lambda t: t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": 4}), (128, 6, 4)), y)
    np.testing.assert_array_equal(got, y.reshape(128, 4, 6).transpose(0, 2, 1))
    z = rng.standard_normal((128, 3, 5)).astype(np.float32)
    got = sim(_through_sbuf(lambda t: t.rearrange(("p", "a", "b"), ("p", ("b", "a"))), (128, 15)), z)
    np.testing.assert_array_equal(got, z.transpose(0, 2, 1).reshape(128, 15))


def test_permute_of_an_hbm_tensor_is_a_transposing_dma():
    x = rng.standard_normal((64, 128)).astype(np.float32)

    def kern(x):
        t = nl.ndarray((128, 64), nl.float32, nl.sbuf)
        nisa.dma_copy(dst=t, src=x.permute((1, 0)))
        out = nl.ndarray((128, 64), nl.float32, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    np.testing.assert_array_equal(sim(kern, x), x.T)
    _, tr = nki.trace_kernel(nki.jit(kern, target="trn2"), nt.tensor[[64, 128], nl.float32], numerics=False)
    assert tr.instructions[0].reads[0].contiguous_bytes == 4       # element by element: the slow DMA it is


def test_permute_and_rearrange_rules():
    x = np.zeros((128, 4, 6), np.float32)
    broken(_through_sbuf(lambda t: t.permute((1, 0, 2)), (4, 128, 6)), x, rule="err_partition_dim_must_be_first")
    broken(_through_sbuf(lambda t: t.permute((0, 1, 1)), (128, 4, 4)), x, rule="err_invalid_axis")
    broken(_through_sbuf(lambda t: t.rearrange(("p", "a", "b"), ("p", "a", "c")), (128, 4, 6)), x,
           rule="err_invalid_axis")
    broken(_through_sbuf(lambda t: t.rearrange(("p", "a", ("b", "c")), ("p", "a", "b", "c"), {"b": 4}),
                         (128, 4, 4, 1)), x, rule="err_unsupported_reshape")
    broken(_through_sbuf(lambda t: t.rearrange(("p", "a", "b"), (("p", "a"), "b")), (128, 6)), x,
           rule="err_partition_dim_must_be_first")


def test_permuted_and_rearranged_views_can_be_indexed_and_queried():
    """NKI 0.6: a permute / rearrange view is a tensor like any other: it can be sliced further (ints, slices,
    nl.ds; the 0.6 integer rules), and its strides / access pattern are the permuted ones."""
    x = rng.standard_normal((128, 8, 4)).astype(np.float32)
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t.permute((0, 2, 1))[:, 1:3, 2:6], (128, 2, 4)), x),
                                  x.transpose(0, 2, 1)[:, 1:3, 2:6])
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t.permute((0, 2, 1))[:, 2], (128, 8)), x),
                                  x.transpose(0, 2, 1)[:, 2])          # a free-dim int drops the dim
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t.permute((0, 2, 1))[5], (1, 4, 8)), x),
                                  x.transpose(0, 2, 1)[5:6])           # dim 0 int keeps the partition dim
    np.testing.assert_array_equal(
        sim(_through_sbuf(lambda t: t.permute((0, 2, 1))[:, nl.ds(1, 2), ::2], (128, 2, 4)), x),
        x.transpose(0, 2, 1)[:, 1:3, ::2])
    seen = {}

    def kern(x):
        t = nl.ndarray(x.shape, x.dtype, nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        p = t.permute((0, 2, 1))
        seen["p"] = (p.strides, p.get_pattern(), p.is_contiguous())
        seen["q"] = p[:, 1:3, 2:6].get_pattern()
        seen["hbm"] = (x.permute((1, 0, 2)).strides, x.rearrange(("p", "a", "b"), ("p", ("a", "b"))).is_contiguous())
        out = nl.ndarray(x.shape, x.dtype, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    sim(kern, x)
    assert seen["p"] == ((32, 1, 4), [[32, 128], [1, 4], [4, 8]], False)
    assert seen["q"] == [[32, 128], [1, 2], [4, 4]]
    assert seen["hbm"] == ((4, 32, 1), True)
    # outside the view: the documented out-of-bound error, not numpy's clipping
    broken(_through_sbuf(lambda t: t.permute((0, 2, 1))[:, 3:5, :], (128, 2, 8)), x,
           rule="err_tensor_access_out_of_bound")


def _per_element_reference(view, ops):
    """``ops`` (("permute", dims) / ("index", key)) applied by the per-element path: index arrays of every element
    (what permute / indexing of a permuted view built before the symbolic form)."""
    from trnsim.nki.tensors import _int_rules_06
    flat = view._element_index()
    for kind, arg in ops:
        if kind == "permute":
            flat = np.transpose(flat, arg)
        else:
            key = _int_rules_06(arg, flat.shape, view.tensor.buffer != "hbm")
            flat = flat[key]
            if flat.ndim == 0:
                flat = flat.reshape(1)
    return view._reordered(flat, keep_index=False)


@pytest.mark.parametrize("seed", range(40))
def test_permuted_views_are_symbolic_and_equal_to_the_per_element_form(seed, monkeypatch):
    """A permute (a reordering rearrange, and indexing of either) is held as one affine index expression per tensor
    dim, not as index arrays of every element: a permute of an 8192 x 8192 HBM input costs no memory. Random chains
    of permutes and ints / slices / nl.ds agree with the per-element form in everything the simulator reads from a
    view: its elements, shape, region, per-dim bounds, contiguous run and access pattern."""
    from trnsim.nki.tensors import DIALECT, Tensor
    from trnsim.nki.tensor_api import affine_pattern
    monkeypatch.setattr(DIALECT, "beta1", False)   # as inside an NKI 0.6 kernel
    r = np.random.default_rng(seed)
    buffer = ["sbuf", "hbm"][seed % 2]
    nd = int(r.integers(2, 5))
    t = Tensor(None, tuple(int(r.integers(1, 6)) for _ in range(nd)), "bfloat16", buffer, "x")
    v = base = t.full_view()
    ops = []
    for _ in range(int(r.integers(1, 4))):
        if r.random() < 0.5:
            rest = list(r.permutation(range(1, len(v.shape)))) if buffer == "sbuf" else None
            dims = tuple([0] + [int(d) for d in rest]) if rest is not None else \
                tuple(int(d) for d in r.permutation(len(v.shape)))
            op = ("permute", dims)
            if r.random() < 0.5:
                nxt = v.permute(dims)
            else:   # a rearrange that only reorders is the same permute
                names = "pabcd"[:len(v.shape)]
                nxt = v.rearrange(tuple(names), tuple(names[d] for d in dims))
        else:
            key = []
            for size in v.shape:
                c = r.random()
                if c < 0.2:
                    key.append(int(r.integers(0, size)))
                elif c < 0.6:
                    a = int(r.integers(0, size))
                    key.append(slice(a, int(r.integers(a + 1, size + 1)), int(r.integers(1, 3))))
                else:
                    key.append(slice(None))
            op = ("index", tuple(key))
            nxt = v[tuple(key)]
        ops.append(op)
        v = nxt
        if v.adv is None:   # a plain slice of the tensor: nothing reordered yet
            base, ops = v, []
            continue
        ref = _per_element_reference(base, ops)
        assert all(isinstance(a, int) or a.simple for a in v.adv), "index arrays were materialised"
        assert v.shape == ref.shape
        np.testing.assert_array_equal(v._element_index(), ref._element_index())
        assert v.region() == ref.region() and v.dim_bounds() == ref.dim_bounds()
        assert v.ap_run == ref.ap_run and v.contiguous_bytes() == ref.contiguous_bytes()
        # the same pattern; a size-1 dim shows its storage stride (the per-element form cannot observe it: 0)
        pat, ref_pat = affine_pattern(v), affine_pattern(ref)
        assert [(s if n > 1 else 0, n) for s, n in pat] == ref_pat


def test_a_size_one_dim_of_a_permuted_view_reports_its_storage_stride():
    seen = {}

    def kern(x):
        t = nl.ndarray((128, 1, 4), x.dtype, nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        p = t.permute((0, 2, 1))
        seen["p"] = (t.strides, p.strides, p.is_contiguous())
        out = nl.ndarray(x.shape, x.dtype, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    sim(kern, np.zeros((128, 1, 4), np.float32))
    assert seen["p"] == ((4, 4, 1), (4, 1, 4), True)   # the size-1 dim keeps t's stride 4 (it used to say 0)


def test_a_permute_of_a_large_hbm_input_costs_no_memory():
    """``a.permute((1, 0))[0:128, 0:512]`` of an 8192 x 8192 input: the per-element form took ~2 GB (a Binder
    session has 1 GiB); the symbolic view holds four numbers per dim."""
    def kern(a):
        t = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.permute((1, 0))[0:128, 0:512])
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    import tracemalloc
    tracemalloc.start()
    _, tr = nki.trace_kernel(nki.jit(kern, target="trn2"), nt.tensor[[8192, 8192], nl.bfloat16], numerics=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20, f"{peak / 2**20:.0f} MiB"
    assert tr.instructions[0].reads[0].contiguous_bytes == 2      # element by element: a transposing DMA
    x = rng.standard_normal((600, 200)).astype(np.float32)

    def small(a):
        t = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.permute((1, 0))[nl.ds(50, 128), 40:552])
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    np.testing.assert_array_equal(sim(small, x), x.T[50:178, 40:552])


def test_reshape_of_a_part_of_a_tensor_follows_its_layout():
    """NKI 0.6 NkiTensor.reshape of a slice or permute: allowed when the elements still form a strided pattern of
    the new shape, err_unsupported_reshape naming the layout otherwise (the reference: "Fails if the current memory
    layout is incompatible with the requested shape")."""
    x = rng.standard_normal((128, 8, 4)).astype(np.float32)
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t[:, 2:4].reshape((128, 8)), (128, 8)), x),
                                  x[:, 2:4].reshape(128, 8))
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t[:, :, 0:2].reshape((128, 4, 2, 2)), (128, 4, 2, 2)),
                                      x), x[:, :, 0:2].reshape(128, 4, 2, 2))
    assert "incompatible" in broken(_through_sbuf(lambda t: t[:, :, 0:2].reshape((128, 16)), (128, 16)), x,
                                    rule="err_unsupported_reshape")
    assert "incompatible" in broken(_through_sbuf(lambda t: t.permute((0, 2, 1)).reshape((128, 32)), (128, 32)), x,
                                    rule="err_unsupported_reshape")
    assert "partition" in broken(_through_sbuf(lambda t: t[:, 2:4].reshape((64, 16)), (64, 16)), x,
                                 rule="err_unsupported_reshape")

    def hbm_part(x):
        t = nl.ndarray((2, 32), x.dtype, nl.sbuf)
        nisa.dma_copy(dst=t, src=x[2:4].reshape((2, 32)))
        out = nl.ndarray((2, 32), x.dtype, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    np.testing.assert_array_equal(sim(hbm_part, x), x[2:4].reshape(2, 32))


def test_dimension_views_of_a_part_of_a_tensor():
    """flatten_dims / reshape_dim / expand_dim of a slice follow the same layout rule as reshape."""
    x = rng.standard_normal((128, 8, 4)).astype(np.float32)
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t[:, 2:4].flatten_dims(1, 2), (128, 8)), x),
                                  x[:, 2:4].reshape(128, 8))
    np.testing.assert_array_equal(sim(_through_sbuf(lambda t: t[:, 2:4].expand_dim(1), (128, 1, 2, 4)), x),
                                  x[:, None, 2:4])
    assert "flatten_dims" in broken(_through_sbuf(lambda t: t[:, :, 0:2].flatten_dims(1, 2), (128, 16)), x,
                                    rule="err_unsupported_reshape")


def test_dma_transpose_of_a_scalar_offset_source():
    """NKI 0.5+: dma_transpose reads a source shifted by a runtime scalar (.ap(scalar_offset=...)); with
    oob_mode=skip an offset outside the source skips the transfer, with the default it is an error."""
    def kern(oob):
        def k(s, i):
            isb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=isb, src=i)
            d = nl.ndarray((16, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.memset(dst=d, value=-1.0)
            nisa.dma_transpose(dst=d, src=s.ap(pattern=[[16, 16], [1, 16]], scalar_offset=isb, indirect_dim=0),
                               oob_mode=oob)
            out = nl.ndarray((16, 16), dtype=nl.bfloat16, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=d)
            return out
        return k
    s = np.arange(4 * 16 * 16, dtype=np.float32).reshape(4, 16, 16).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(sim(kern(nisa.oob_mode.error), s, np.array([[2]], np.int32)), s[2].T)
    skipped = sim(kern(nisa.oob_mode.skip), s, np.array([[7]], np.int32))
    assert (skipped.astype(np.float32) == -1).all()
    broken(kern(nisa.oob_mode.error), s, np.array([[7]], np.int32), rule="err_tensor_access_out_of_bound")


def test_ap_offset_on_an_offset_view_warns_about_the_two_readings():
    """NkiTensor.ap's docstring adds offset= to the view's offset; the nki-aps deep-dive says .ap ignores it. trnsim
    follows the deep-dive and warns where the two differ (an explicit offset on a view not starting at 0)."""
    def kern(x):
        t = nl.ndarray((8, 3), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, 4:].ap(pattern=[[24, 8], [1, 3]], offset=2))
        out = nl.ndarray((8, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    x = np.arange(192, dtype=np.float32).reshape(8, 24)
    with pytest.warns(nki.ApOffsetWarning, match="reference disagrees"):
        got = sim(kern, x)
    np.testing.assert_array_equal(got[0], x[0, 2:5])           # the deep-dive's reading: absolute offset 2

    def whole(x):                                               # unambiguous: no warning
        t = nl.ndarray((8, 3), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[24, 8], [1, 3]], offset=6))
        out = nl.ndarray((8, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", nki.ApOffsetWarning)
        np.testing.assert_array_equal(sim(whole, x)[0], x[0, 6:9])
