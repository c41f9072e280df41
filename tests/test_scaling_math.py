"""trnsim.training.scaling against hand-worked numbers."""
import math

import pytest

import trnsim.training as tr
from trnsim.training import scaling as sc

LLAMA2_7B_LAYER = 4 * 4096 * 4096 + 3 * 4096 * 11008  # Q, K, V, O (no GQA) + SwiGLU MLP


def test_layer_flops_by_hand():
    assert tr.model("llama2-7b").matmul_params_per_layer == LLAMA2_7B_LAYER
    assert sc.layer_train_flops("llama2-7b", 4096) == 6 * LLAMA2_7B_LAYER * 4096


def test_dp_and_zero_volumes():
    dp = sc.dp_layer_costs("llama2-7b", 4096, 32, 100e12, 50e9)
    assert dp.comm_bytes == pytest.approx(2 * 31 / 32 * 2 * LLAMA2_7B_LAYER)
    z1 = sc.dp_layer_costs("llama2-7b", 4096, 32, 100e12, 50e9, zero_stage=1)
    z3 = sc.dp_layer_costs("llama2-7b", 4096, 32, 100e12, 50e9, zero_stage=3)
    assert z1.comm_bytes == dp.comm_bytes
    assert z3.comm_bytes == pytest.approx(1.5 * dp.comm_bytes)
    assert dp.compute_s == pytest.approx(6 * LLAMA2_7B_LAYER * 4096 / 100e12)
    assert dp.comm_s == pytest.approx(dp.comm_bytes / 50e9)


def test_dp_critical_tokens_is_where_compute_equals_comm():
    c, w = 95e12, 56e9
    t_star = sc.dp_critical_tokens(32, c, w)
    assert t_star == pytest.approx(2 / 3 * 31 / 32 * c / w)
    at = sc.dp_layer_costs("llama2-7b", t_star, 32, c, w)
    assert at.compute_s == pytest.approx(at.comm_s)
    assert sc.dp_layer_costs("llama2-7b", 1.1 * t_star, 32, c, w).compute_bound
    assert not sc.dp_layer_costs("llama2-7b", 0.9 * t_star, 32, c, w).compute_bound
    assert sc.dp_critical_tokens(32, c, w, zero_stage=3) == pytest.approx(1.5 * t_star)


def test_tp_volume_and_limit():
    assert sc.tp_wire_bytes_per_element(False) == 16   # 4 all-reduces x 2 passes x 2 bytes
    assert sc.tp_wire_bytes_per_element(True) == 24    # (2 AG + 2 RS + 4 AG) x 2 bytes + 2 RS x 4 bytes
    plain = sc.tp_layer_costs("llama2-7b", 4096, 8, 95e12, 56e9, sequence_parallel=False)
    assert plain.comm_bytes == pytest.approx(16 * 7 / 8 * 4096 * 4096)
    t = sc.tp_layer_costs("llama2-7b", 4096, 8, 95e12, 56e9)
    assert t.comm_bytes == pytest.approx(24 * 7 / 8 * 4096 * 4096)
    assert t.flops == pytest.approx(6 * LLAMA2_7B_LAYER * 4096 / 8)
    # plain: t - 1 <= 3 P W / (8 d C) = 3 * 202,375,168 * 56e9 / (8 * 4096 * 95e12) = 10.92 -> t = 11
    assert sc.tp_max_compute_bound("llama2-7b", 95e12, 56e9, sequence_parallel=False) == 11
    assert sc.tp_layer_costs("llama2-7b", 4096, 11, 95e12, 56e9, sequence_parallel=False).compute_bound
    assert not sc.tp_layer_costs("llama2-7b", 4096, 12, 95e12, 56e9, sequence_parallel=False).compute_bound
    # NxD SP: t - 1 <= P W / (4 d C) = 7.28 -> t = 8
    assert sc.tp_max_compute_bound("llama2-7b", 95e12, 56e9) == 8
    assert sc.tp_layer_costs("llama2-7b", 4096, 8, 95e12, 56e9).compute_bound
    assert not sc.tp_layer_costs("llama2-7b", 4096, 9, 95e12, 56e9).compute_bound


def test_pp_stage():
    s = sc.pp_stage_costs("llama2-7b", 4096, 4, 95e12, 50e9)
    assert s.flops == pytest.approx(8 * 6 * LLAMA2_7B_LAYER * 4096)
    assert s.comm_bytes == 2 * 4096 * 4096 * 2
    assert sc.pp_stage_costs("llama2-7b", 4096, 1, 95e12, 50e9).comm_bytes == 0
    with pytest.raises(sc.ScalingError, match="pp=5 must divide the 32 layers"):
        sc.pp_stage_costs("llama2-7b", 4096, 5, 95e12, 50e9)


def test_pp_min_layers_is_where_a_stage_turns_compute_bound():
    c, w = 95e12, 5e9                       # a slow link, so the limit exceeds one layer
    m = tr.model("gpt2-small")
    need = sc.pp_min_layers_per_stage(m, c, w)
    assert need == pytest.approx(2 / 3 * 768 * c / (m.matmul_params_per_layer * w))
    assert 1 < need < 2
    assert not sc.pp_stage_costs(m, 1024, 12, c, w).compute_bound   # 1 layer per stage
    assert sc.pp_stage_costs(m, 1024, 6, c, w).compute_bound        # 2 layers per stage


def test_zero_state_bytes():
    p = 7e9
    assert sc.zero_state_bytes_per_device(p, 8, 0) == 16 * p
    assert sc.zero_state_bytes_per_device(p, 8, 1) == pytest.approx(p * (4 + 12 / 8))
    assert sc.zero_state_bytes_per_device(p, 8, 2) == pytest.approx(p * (2 + 14 / 8))
    assert sc.zero_state_bytes_per_device(p, 8, 3) == pytest.approx(p * 16 / 8)


def test_overlap_timeline_by_hand():
    # 3 layers, 2 ms backward each; comm 1, 3, 1 ms (layer 0, 1, 2). Backward runs layer 2, 1, 0.
    tl = sc.overlap_timeline([2e-3] * 3, [1e-3, 3e-3, 1e-3])
    assert [c[0] for c in tl.compute] == [2, 1, 0]
    # layer 2 comm 2-3 ms; layer 1 comm 4-7 ms; layer 0 waits for the stream: 7-8 ms; compute ends at 6 ms
    assert tl.comm[1][1:] == pytest.approx((4e-3, 7e-3))
    assert tl.comm[2][1:] == pytest.approx((7e-3, 8e-3))
    assert tl.exposed_comm_s == pytest.approx(2e-3)
    assert tl.serial_s == pytest.approx(11e-3)


def test_numpy_numbers_are_accepted():
    import numpy as np

    a = sc.dp_layer_costs("llama2-7b", np.float64(4096), np.int64(32), np.float64(95e12), 56e9)
    assert a == sc.dp_layer_costs("llama2-7b", 4096, 32, 95e12, 56e9)


def test_busbw_from_simulator_is_positive_and_finite():
    w = sc.ring_busbw_bytes_per_s("trn1.32xlarge", 8)
    assert math.isfinite(w) and 1e9 < w < 1e12


@pytest.mark.parametrize("call, match", [
    (lambda: sc.dp_layer_costs("llama2-7b", 4096, 0, 1e12, 1e9), "dp=0 must be >= 1"),
    (lambda: sc.dp_layer_costs("llama2-7b", 4096, 2.5, 1e12, 1e9), "dp=2.5 must be a whole number"),
    (lambda: sc.dp_layer_costs("llama2-7b", 4096, 8, 1e12, 1e9, zero_stage=4), "zero_stage=4"),
    (lambda: sc.tp_layer_costs("llama2-7b", -1, 8, 1e12, 1e9), "tokens=-1 must be a finite number > 0"),
    (lambda: sc.tp_layer_costs("llama2-7b", 4096, 8, float("nan"), 1e9), "peak_flops_per_s=nan"),
    (lambda: sc.dp_critical_tokens(True, 1e12, 1e9), "dp=True"),
    (lambda: sc.overlap_timeline([1.0, 1.0], [1.0]), "1 entries but backward_s_per_layer has 2"),
    (lambda: sc.overlap_timeline([], []), "empty"),
    (lambda: sc.overlap_timeline([1.0], [-1.0]), r"comm_s_per_layer\[0\]=-1.0"),
    (lambda: sc.ring_busbw_bytes_per_s("trn1.32xlarge", 1), "ranks=1 must be >= 2"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises(sc.ScalingError, match=match):
        call()
