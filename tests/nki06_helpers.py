"""Small helpers shared by the NKI 0.6 instruction tests: run a kernel on a target, move arrays between HBM and
SBUF inside a kernel, and expect a rule violation. Import with ``from nki06_helpers import sim, sb, hbm, new, broken``."""
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import KernelError


def sim(fn, *arrays, target="trn2"):
    """Simulate kernel function ``fn`` (jitted for ``target``) on numpy ``arrays``; its numpy outputs."""
    return nki.simulate(nki.jit(fn, target=target))(*arrays)


def sb(x, dtype=None):
    """An SBUF copy of HBM tensor ``x`` (dma_copy casts to ``dtype`` if given)."""
    t = nl.ndarray(x.shape, dtype=dtype or x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def hbm(t):
    """An HBM output holding on-chip tile ``t``."""
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def new(shape, dtype, buffer=None):
    """An uninitialised on-chip tile (SBUF unless ``buffer`` says otherwise)."""
    return nl.ndarray(shape, dtype=dtype, buffer=buffer or nl.sbuf)


def broken(fn, *arrays, rule, target="trn2"):
    """Run ``fn``, expect KernelError ``rule`` with a fix; the error's text."""
    with pytest.raises(KernelError) as exc:
        sim(fn, *arrays, target=target)
    assert exc.value.rule == rule, str(exc.value)
    assert exc.value.fix, "every rule violation names a fix"
    return str(exc.value)
