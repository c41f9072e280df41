"""Fuzz of nki.language, NkiTensor and nki.collectives against the NKI 0.6 reference: each confirmed problem as a
test (numpy reference, or the rule a wrong call must raise)."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from nki06_helpers import broken, hbm, sb, sim
from trnsim.nki import KernelError


def _launch(kernel, world: int, args: list) -> BaseException | None:
    """Run ``simulate_ranks`` in a thread and return what it raised; fail (rather than hang the suite) if it does
    not return within a minute."""
    import threading
    got = []

    def run():
        try:
            nki.simulate_ranks(kernel, world, args)
        except BaseException as exc:   # noqa: BLE001 - handed to the test
            got.append(exc)
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout=60)
    assert not th.is_alive(), "the launch hung"
    return got[0] if got else None


def test_a_permute_with_a_negative_rank_is_an_error_not_a_hang():
    def k(x):
        s = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="s")
        nisa.dma_copy(dst=s, src=x)
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="d")
        nisa.dma_copy(dst=d, src=x)
        ncc.collective_permute(srcs=[s], dsts=[d], source_target_pairs=[(-1, 0)])
        return d
    exc = _launch(k, 2, [(np.ones((2, 4), np.float32),) for _ in range(2)])
    assert isinstance(exc, KernelError) and exc.rule == "err_rank_not_in_replica_group", exc


def test_an_unexpected_error_while_resolving_a_collective_releases_every_rank(monkeypatch):
    from trnsim.nki import ranks

    def k(x):
        d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="d")
        ncc.all_reduce(srcs=[x], dsts=[d], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
        return d

    def boom(self):
        raise RuntimeError("resolver bug")
    monkeypatch.setattr(ranks.World, "_resolve", boom)
    exc = _launch(k, 2, [(np.ones((2, 4), np.float32),) for _ in range(2)])
    assert isinstance(exc, RuntimeError) and "resolver bug" in str(exc)


@pytest.mark.parametrize("dtype, value", [(np.uint32, 0x12345678), (np.int8, -7), (np.uint16, 40000)])
def test_bitwise_ops_keep_the_integer_type_of_their_tile(dtype, value):
    def k(x):
        r = nl.bitwise_or(sb(x), 1)
        return hbm(r)
    x = np.full((2, 4), value, dtype)
    got = sim(k, x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, x | dtype(1))


def _channels(n_channels: int, groups: list):
    """A kernel permuting one tensor per channel around the ring of ``groups`` with ``n_channels`` channels."""
    rg = ncc.ReplicaGroup(groups)

    def k(x):
        srcs, dsts = [], []
        for c in range(n_channels):
            s = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name=f"s{c}")
            nisa.dma_copy(dst=s, src=x)
            srcs.append([s])
            dsts.append([nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name=f"d{c}")])
        ncc.collective_permute_implicit(srcs_by_channel=srcs, dsts_by_channel=dsts, replica_group=rg,
                                        channel_ids=list(range(n_channels)))
        return dsts[0][0]
    return k


def test_four_channels_are_allowed_for_a_group_of_every_rank():
    args = [(np.full((2, 4), r, np.float32),) for r in range(4)]
    outs = nki.simulate_ranks(_channels(4, [[0, 1, 2, 3]]), 4, args)
    assert [float(o[0, 0]) for o in outs] == [3.0, 0.0, 1.0, 2.0]   # each rank receives its ring predecessor's
    with pytest.raises(KernelError, match="err_invalid_channel_ids") as exc:
        nki.simulate_ranks(_channels(3, [[0, 1], [2, 3]]), 4, args)
    assert "of 4 ranks" in str(exc.value)


def test_num_programs_is_an_int_and_a_launch_takes_one_number():
    seen = []

    def k(x):
        seen.append((nl.num_programs(), nl.num_programs(axes=None)))
        return hbm(sb(x))
    nki.simulate(nki.jit(k, target="trn2")[2])(np.ones((2, 2), np.float32))
    assert seen == [(2, 2), (2, 2)]
    with pytest.raises(KernelError, match="err_invalid_grid") as exc:
        nki.simulate(nki.jit(k, target="trn2")[2, 3])(np.ones((2, 2), np.float32))
    assert "one number" in str(exc.value)


def test_a_broadcast_view_answers_the_nktensor_queries():
    seen = {}

    def k(x):
        t = sb(x)
        b = t[:, 0:1].broadcast(1, 6)
        seen.update(shape=b.shape, sbuf=nl.is_sbuf(b.buffer), ndim=b.ndim, size=b.size, strides=b.strides,
                    contiguous=b.is_contiguous(), indirect=b.is_indirect())
        with pytest.raises(KernelError, match="err_unsupported_view"):
            b.reshape((4, 2, 3))
        return hbm(t)
    sim(k, np.ones((4, 6), np.float32))
    assert seen == {"shape": (4, 6), "sbuf": True, "ndim": 2, "size": 24, "strides": (6, 0), "contiguous": False,
                    "indirect": False}


def test_a_reduction_axis_below_minus_ndim_is_err_invalid_axis():
    def k(x):
        return hbm(nl.sum(sb(x), axis=-4))
    broken(k, np.ones((8, 4, 6), np.float32), rule="err_invalid_axis")


@pytest.mark.parametrize("cols, dtype, np_dtype", [((0, 32), nl.uint8, np.uint8),
                                                    ((8, 16), nl.bfloat16, ml_dtypes.bfloat16)])
def test_a_slice_whose_last_dimension_is_contiguous_can_be_viewed_as_another_dtype(cols, dtype, np_dtype):
    c0, c1 = cols

    def k(x):
        t = sb(x)
        v = t[:, c0:c1].view(dtype)
        o = nl.ndarray(v.shape, dtype=dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=v)
        return o
    x = np.random.default_rng(5).standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(sim(k, x).view(np.uint8), np.ascontiguousarray(x[:, c0:c1]).view(np_dtype).view(np.uint8))
