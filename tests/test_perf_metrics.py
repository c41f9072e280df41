"""neuron-profile metrics and the Tensor Engine as the profiler sees it (hand-made traces, exact values)."""
import numpy as np
import pytest

import trnsim
from trnsim.nki.trace import Trace
from trnsim.perf import build as B
from trnsim.perf.cost import compute_cycles, engine_clock_ghz, matmul_passes, matmul_split
from trnsim.perf.metrics import union_length
from trnsim.perf.profile import profile_trace

T1, T2 = trnsim.target("trn1"), trnsim.target("trn2")


def _trace(instrs, target="trn1"):
    for i, x in enumerate(instrs):
        x.index = i
    return Trace("hand", target, instrs, [], (), False)


def _brute_union(starts, ends):
    grid = np.zeros(2000, dtype=bool)
    for s, e in zip(starts, ends):
        grid[int(s):int(e)] = True
    return float(grid.sum())


def test_union_length_matches_brute_force():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 1500, 200).astype(float)
    e = s + rng.integers(1, 300, 200)
    assert union_length(s, e) == pytest.approx(_brute_union(s, e))
    assert union_length(np.array([]), np.array([])) == 0.0


def test_fp32_runs_four_passes_on_every_generation_from_data():
    for tgt in (T1, T2, trnsim.target("trn3")):
        assert matmul_passes(tgt.core, "float32") == 4
        assert matmul_passes(tgt.core, "bfloat16") == 1
    bf, fp = B.matmul(128, 128, 512, "bfloat16"), B.matmul(128, 128, 512, "float32")
    assert compute_cycles(fp, T2.core).cycles == 4 * compute_cycles(bf, T2.core).cycles == 4 * 512
    # 32768 fp32 [128x128]x[128x512] matmuls on trn2 at 2.4 GHz: the tutorial's ~28 ms Tensor Engine floor
    assert 32768 * 2048 / engine_clock_ghz(T2.core, "tensor") / 1e6 == pytest.approx(27.96, abs=0.01)


def test_matmul_is_loadweights_plus_multiplymoving():
    sp = matmul_split(B.matmul(128, 128, 512), T1.core)
    assert sp.load_weights_cycles == 128 / 4            # fast LoadStationary: 4x a MultiplyMoving of equal size
    assert sp.multiply_moving_cycles == 512 and sp.issue_cycles == 512
    # the short operand should move: a vector as moving costs the start-up latency, not the matrix width
    vec_moving = matmul_split(B.matmul(128, 128, 1), T1.core)
    mat_moving = matmul_split(B.matmul(128, 1, 128), T1.core)
    assert vec_moving.issue_cycles == T1.core.cost.mm_init_latency_cycles == 64
    assert mat_moving.issue_cycles == 128 > vec_moving.issue_cycles


def test_profile_counts_two_tensor_instructions_per_matmul_and_hfu():
    n = 16
    instrs = [B.matmul(128, 128, 512, deps=((i - 1,) if i else ())) for i in range(n)]
    instrs.append(B.instruction("nc_transpose", "tensor", (B.operand((128, 128)),), (B.operand((128, 128), "float32", "psum"),),
                                flops=2 * 128 * 128 * 128))
    instrs.append(B.elementwise("tensor_copy", "vector", 128, 512, deps=(n - 1,)))
    p = profile_trace(_trace(instrs), "trn1")
    m = p.metrics
    assert p.matmul_instruction_count == 2 * n
    assert p.tensor_engine_instruction_count == 2 * (n + 1)           # the transpose is a matmul too
    assert m.instruction_count["vector"] == 1
    lat_s = p.latency_us * 1e-6
    peak = 2 * 128 * 128 * engine_clock_ghz(T1.core, "tensor") * 1e9
    assert p.hfu_pct == pytest.approx(100 * (2 * 128 * 128 * 512 * n + 2 * 128 ** 3) / (peak * lat_s))
    assert p.mfu_pct == pytest.approx(100 * 2 * 128 * 128 * 512 * n / (peak * lat_s))   # transposes excluded
    # back to back matmuls: the engine is active for their union, TensorMatrix for the MultiplyMoving parts
    assert 0 < m.tensor_matrix_active_time_us <= m.active_time_us["tensor"] <= p.latency_us
    assert m.active_time_pct["tensor"] == pytest.approx(100 * m.active_time_us["tensor"] / p.latency_us)
    assert m.dma_active_time_us == 0 and m.mfu_max_achievable_estimated_pct == 100.0   # no HBM traffic


def test_dma_active_time_and_mfu_max_achievable():
    instrs = [B.load(128, 1024, deps=()), B.matmul(128, 128, 512, deps=(0,))]
    p = profile_trace(_trace(instrs), "trn1")
    m = p.metrics
    data_ns = p.timeline.dma_data_ns[0]
    assert m.dma_active_time_us == pytest.approx(data_ns / 1e3)
    hbm_stack = T1.chip.hbm_gbytes_per_s / 2           # trn1: 2 HBM stacks, one per NeuronCore
    ai = 2 * 128 * 128 * 512 / (128 * 1024 * 2)
    assert m.mfu_max_achievable_estimated_pct == pytest.approx(100 * ai / (m.peak_ops_per_s / (hbm_stack * 1e9)))
    assert m.mbu_estimated_pct == pytest.approx(100 * 128 * 1024 * 2 / (p.latency_us * 1e3 * hbm_stack))
    assert "Matmul Instruction Count" in p.neuron_profile_table()


def test_hbm_max_bandwidth_is_one_stack():
    """profile-schema-reference: MBU and MFU max achievable divide by one HBM stack's bandwidth, the same for LNC1
    and LNC2. On trn2 (2.9 TB/s, 4 stacks, 8 NeuronCores) that is 725 GB/s, twice one core's share."""
    instrs = [B.load(128, 1024, deps=()), B.matmul(128, 128, 512, deps=(0,))]
    m = profile_trace(_trace(instrs), "trn2").metrics
    assert m.hbm_max_gbytes_per_s == pytest.approx(2900 / 4)
    ai = 2 * 128 * 128 * 512 / (128 * 1024 * 2)
    assert m.mfu_max_achievable_estimated_pct == pytest.approx(100 * ai / (m.peak_ops_per_s / (725 * 1e9)))
