"""nisa.topk: K (val_dst's free size) must stay below 32768 even when n allows more."""
import ml_dtypes
import numpy as np

import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from nki06_helpers import broken, hbm, new, sb, sim


def _topk(k_):
    def k(a):
        v = new((16, k_), nl.bfloat16)
        i = new((16, k_), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=sb(a), n=16 * a.shape[1])
        return hbm(i)
    return k


def test_k_32768_refused():
    src = np.zeros((16, 2048), ml_dtypes.bfloat16)          # n = 32768
    assert "32768" in broken(_topk(32768), src, rule="err_invalid_arguments")


def test_small_k_still_runs():
    src = np.arange(16 * 4, dtype=np.float32).reshape(4, 16).T.astype(ml_dtypes.bfloat16)   # snake j -> value j
    got = sim(_topk(8), np.ascontiguousarray(src))
    np.testing.assert_array_equal(got[0], np.arange(56, 64))
