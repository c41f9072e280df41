"""nc_matmul on NeuronCore-v4: the moving free size may reach 8192 when dst is a bfloat16 PSUM tile (the whole
PSUM counted in bf16 elements); 4096 stays the limit for a float32 dst and on older targets."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from nki06_helpers import hbm, new, sb, sim
from trnsim.nki import KernelError


def _mm(odt):
    def k(a, b):
        A, B = sb(a), sb(b)
        d = new((a.shape[1], b.shape[1]), odt, nl.psum)
        nisa.nc_matmul(d, A, B)
        o = new(d.shape, nl.float32)
        nisa.tensor_copy(o, d)
        return hbm(o)
    return k


def test_bf16_dst_takes_8192_moving_columns_on_trn3():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 16)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 8192)).astype(ml_dtypes.bfloat16)
    got = sim(_mm(nl.bfloat16), a, b, target="trn3")
    ref = (a.astype(np.float32).T @ b.astype(np.float32)).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=1e-2, atol=1e-2)


def test_fp32_dst_keeps_4096_limit_on_trn3():
    a = np.zeros((128, 16), ml_dtypes.bfloat16)
    b = np.zeros((128, 8192), ml_dtypes.bfloat16)
    # an 8192-wide fp32 PSUM tile is refused (at allocation or by the matmul), never silently accepted
    with pytest.raises(KernelError):
        sim(_mm(nl.float32), a, b, target="trn3")


def test_bf16_dst_over_8192_refused_on_trn3():
    a = np.zeros((128, 16), ml_dtypes.bfloat16)
    b = np.zeros((128, 8704), ml_dtypes.bfloat16)
    with pytest.raises(KernelError):
        sim(_mm(nl.bfloat16), a, b, target="trn3")
