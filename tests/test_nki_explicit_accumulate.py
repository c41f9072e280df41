"""nc_matmul(accumulate=True) onto a zero-filled PSUM tile: refused on NeuronCore-v2/v3 (nki.isa.nc_matmul: valid only
after a matmul with accumulate=False initialised the location; a memset-initialised location is not supported
there), allowed with the default accumulate=None and on NeuronCore-v4."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from nki06_helpers import sim


def _kernel(first_accumulate):
    def k(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        x, y = nl.load(a), nl.load(b)
        nisa.nc_matmul(dst=acc, stationary=x, moving=y, accumulate=first_accumulate)
        nisa.nc_matmul(dst=acc, stationary=x, moving=y, accumulate=True)
        nl.store(out, nl.copy(acc))
        return out
    return k


A = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((128, 512)).astype(np.float32)


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_explicit_accumulate_onto_zero_fill_is_refused_on_v2_v3(target):
    with pytest.raises(nki.KernelError, match="err_matmul_accumulate_onto_non_matmul_value") as e:
        sim(_kernel(True), A, B, target=target)
    assert "zero fill" in str(e.value) and "accumulate=False" in str(e.value)


@pytest.mark.parametrize("first", [None, False])
def test_default_or_overwrite_first_is_fine(first):
    got = sim(_kernel(first), A, B, target="trn2")
    np.testing.assert_allclose(got, 2 * (A.T @ B), rtol=1e-4, atol=1e-4)


def test_neuroncore_v4_accepts_it():
    got = sim(_kernel(True), A, B, target="trn3")
    np.testing.assert_allclose(got, 2 * (A.T @ B), rtol=1e-4, atol=1e-4)
