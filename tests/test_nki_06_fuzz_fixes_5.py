"""Findings of a fifth fuzz (nki.collectives, NkiTensor view chains, nki.compiler), fixed; each test fails on the
code before its fix."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import KernelError


def test_a_reducing_collective_refuses_mx_packed_words():
    # the packed words were added as raw uint32: four 1.0 values per word came back as four 128.0
    rg = ncc.ReplicaGroup([[0, 1]])

    @nki.jit
    def k(x):
        s = nl.ndarray((2, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
        o = nl.ndarray((2, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=s, src=x)
        ncc.all_reduce(srcs=[s], dsts=[o], replica_group=rg, op=nl.add)
        return o

    one = np.full((2, 2), 0x38383838, np.uint32)
    with pytest.raises(KernelError, match="err_unsupported_dtype") as exc:
        nki.simulate_ranks(k, 2, [(one,), (one,)])
    assert "packed" in str(exc.value)


@pytest.mark.parametrize("chain", ["reshape_reshape", "view_reshape", "expand_reshape"])
def test_a_second_view_of_a_reshaped_on_chip_tensor(chain):
    # the second view asked for the truth value of the on-chip root tensor (err_ambiguous_tensor_truth_value)
    @nki.jit
    def k(x):
        t = nl.ndarray((2, 6), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        if chain == "reshape_reshape":
            u = t.reshape((2, 2, 3)).reshape((2, 3, 2))
        elif chain == "view_reshape":
            u = t.view(nl.int32).reshape((2, 3, 2))
        else:
            u = t.expand_dim(1).reshape((2, 3, 2))
        o = nl.ndarray((2, 3, 2), dtype=u.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=u)
        return o

    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    out = nki.simulate(k)(x)
    want = x.view(np.int32) if chain == "view_reshape" else x
    np.testing.assert_array_equal(out, want.reshape(2, 3, 2))


def test_a_collective_mismatch_names_what_differs():
    @nki.jit
    def k(x):
        o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        pairs = [(0, 1), (1, 0)] if ncc.rank_id() == 0 else [(0, 1)]
        ncc.collective_permute(srcs=[x], dsts=[o], source_target_pairs=pairs)
        return o

    with pytest.raises(KernelError, match="err_collective_mismatch") as exc:
        nki.simulate_ranks(k, 2, [(np.ones((2, 2), np.float32),)] * 2)
    assert "((0, 1), (1, 0)) vs ((0, 1),)" in str(exc.value)
