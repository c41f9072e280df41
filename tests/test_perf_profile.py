"""Profile built from hand-made traces: counts, occupancy, roofline, bottleneck summary."""
import pytest

import trnsim
from trnsim.nki.trace import Allocation, Trace
from trnsim.perf import build as B
from trnsim.perf.profile import profile_trace
from trnsim.perf.roofline import matmul_intensity, roofline


def _trace(instrs, allocs=()):
    for i, x in enumerate(instrs):
        x.index = i
    return Trace("hand", "trn1", instrs, list(allocs), (), False)


def _dma_bound(free=64):
    # 32 loads of 128 x free bf16 (tiny per-partition payloads), each followed by a short activation
    instrs, allocs = [], []
    for i in range(32):
        ld = B.load(128, free, deps=())
        instrs.append(ld)
        act = B.elementwise("activation", "scalar", 128, free, "bfloat16", deps=(len(instrs) - 1,))
        instrs.append(act)
        aid = ld.writes[0].region.alloc_id
        allocs.append(Allocation(aid, f"t{i}", "sbuf", (128, free), "bfloat16", free * 2, 128,
                                 len(instrs) - 2, len(instrs) - 1, False))
    return instrs, allocs


def test_counts_equal_analytic_sums():
    instrs, allocs = _dma_bound(512)
    instrs.append(B.matmul(128, 128, 512))
    p = profile_trace(_trace(instrs, allocs), "trn1")
    assert p.dma_transfers == 32
    assert p.dma_bytes == 32 * 128 * 512 * 2 == p.hbm_bytes
    assert p.flops == 2 * 128 * 128 * 512 + 32 * 128 * 512
    assert p.tensor_flops == 2 * 128 * 128 * 512
    assert p.instructions == 65
    assert p.latency_us == pytest.approx(p.timeline.latency_ns / 1e3)
    assert p.dma_bytes_per_partition_median == 1024
    assert p.achieved_tflops == pytest.approx(p.flops / (p.latency_us * 1e-6) / 1e12)
    assert p.hbm_gbytes_per_s == pytest.approx(p.hbm_bytes / (p.latency_us * 1e3))
    for e, u in p.engine_utilisation.items():
        assert 0 <= u <= 1 + 1e-9, e


def test_occupancy_peak_is_sum_of_live_allocations():
    instrs, allocs = _dma_bound(512)
    p = profile_trace(_trace(instrs, allocs), "trn1")
    # all 32 loads are independent and start early, so many tiles are live at once
    assert 1024 <= p.peak_sbuf_bytes_per_partition <= 32 * 1024
    assert p.peak_psum_bytes_per_partition == 0
    assert p.occupancy.sbuf_bytes_per_partition[-1] == 0          # everything freed at the end
    assert p.sbuf_capacity_bytes_per_partition == trnsim.target("trn1").core.sbuf_usable_bytes_per_partition


def test_summary_names_dma_bottleneck_with_small_payload_advice():
    instrs, allocs = _dma_bound(64)          # 128 B per partition
    p = profile_trace(_trace(instrs, allocs), "trn1")
    assert p.bottleneck == "dma"
    s = p.summary()
    assert s.count("DMA-bound") == 1 and "128 B per partition" in s and "more bytes per transfer" in s
    assert "not bandwidth" in s and "Matmul" not in s


def test_summary_names_tensor_bottleneck():
    instrs = [B.matmul(128, 128, 512, deps=((i - 1,) if i else ())) for i in range(64)]
    p = profile_trace(_trace(instrs), "trn1")
    assert p.bottleneck == "tensor"
    assert "Tensor Engine-bound" in p.summary()
    assert p.pct_of_tensor_peak == pytest.approx(100.0, rel=1e-6)


def test_summary_names_vector_bottleneck_and_overhead():
    instrs = [B.elementwise("tensor_tensor", "vector", 128, 8, n_inputs=2, deps=((i - 1,) if i else ()))
              for i in range(50)]
    p = profile_trace(_trace(instrs), "trn1")
    s = p.summary()
    assert "Vector Engine-bound" in s and "fixed overhead" in s


def test_roofline_ridge_and_intensity():
    r = roofline("trn1")
    assert r.peak_tflops == pytest.approx(91.75, abs=0.01)
    assert r.dma_gbytes_per_s == pytest.approx(16 * 17)
    assert r.hbm_ridge_flops_per_byte == pytest.approx(91750.4 / (trnsim.target("trn1").chip.hbm_gbytes_per_s / 2))
    assert float(r.attainable_tflops(1.0)) == pytest.approx(0.272)
    assert float(r.attainable_tflops(1e6)) == pytest.approx(r.peak_tflops)
    # nki.md s.4.3 matmul intensity formula for 2-byte types
    assert matmul_intensity(4096, 8192, 8192) == pytest.approx(2 * 4096 * 8192 * 8192 / (2 * (4096 * 8192 + 8192 * 8192 + 4096 * 8192)))
    with pytest.raises(ValueError, match="not a TensorE matmul dtype"):
        roofline("trn1", "int64")


def test_sbuf_capacity_limits_prefetch():
    # 150 independent loads of 2 KiB per partition (300 KiB total > 176 KiB usable), each consumed by a
    # slow activation: loads run ahead only until SBUF is full.
    instrs, allocs = [], []
    for i in range(150):
        ld = B.load(128, 512, "float32")
        instrs.append(ld)
        instrs.append(B.elementwise("activation", "scalar", 128, 8192, "float32", deps=(len(instrs) - 1,)))
        allocs.append(Allocation(ld.writes[0].region.alloc_id, f"t{i}", "sbuf", (128, 512), "float32", 2048, 128,
                                 len(instrs) - 2, len(instrs) - 1, False))
    p = profile_trace(_trace(instrs, allocs), "trn1")
    cap = p.sbuf_capacity_bytes_per_partition
    assert p.peak_sbuf_bytes_per_partition <= cap
    assert p.peak_sbuf_bytes_per_partition >= cap - 2 * 2048      # it does fill up
    free_run = profile_trace(_trace(instrs, []), "trn1")          # no allocations: unlimited prefetch
    assert free_run.latency_us <= p.latency_us + 1e-9


def test_empty_kernel_profile():
    p = profile_trace(_trace([]), "trn1")
    assert p.latency_us == 0 and p.bottleneck == "none" and p.instructions == 0
    assert "nothing to run" in p.summary()


def test_profile_runs_on_the_kernels_own_target_and_names_a_misspelt_keyword(monkeypatch):
    """profile() without target= costs the kernel where nki.simulate runs it: the kernel's own target, else
    NEURON_PLATFORM_TARGET_OVERRIDE, else trn2 (it used to be trn1 whatever the kernel said). A keyword that is
    neither a profile() argument nor a kernel parameter is an error naming the closest one."""
    import trnsim.nki as nki
    import trnsim.nki.isa as nisa
    import trnsim.nki.language as nl
    import trnsim.nki.typing as nt
    from trnsim.nki import KernelError
    from trnsim.perf import profile

    def body(x):
        t = nl.ndarray(x.shape, x.dtype, nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        out = nl.ndarray(x.shape, x.dtype, nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    spec = nt.tensor[[128, 512], nl.float32]
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    assert profile(nki.jit(body), spec).target == "trn2"
    assert profile(nki.jit(body, target="trn3"), spec).target == "trn3"
    assert profile(nki.jit(body, target="trn3"), spec, target="trn1").target == "trn1"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    assert profile(nki.jit(body), spec).target == "trn1"
    with pytest.raises(KernelError, match="did you mean target=") as exc:
        profile(nki.jit(body), spec, traget="trn1")
    assert exc.value.rule == "err_invalid_arguments"
