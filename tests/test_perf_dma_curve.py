"""The DMA model reproduces AWS's throughput-vs-transfer-size curve (data/dma_throughput_curve.json).

A single queue streams 64 back-to-back [128, B] loads from one HBM tensor; the scheduler's steady-state
throughput, as a fraction of the core's DMA peak, must match each published point within +-15% for B from
256 B to 64 KiB. The model's inputs are only the per-transfer fixed cost, the per-engine rate and the
engine count (catalog); the curve is never read by the model.
"""
import pytest

import trnsim
from trnsim.catalog.datafiles import load_json
from trnsim.nki.trace import Instruction, Operand, Region
from trnsim.perf.dma import dma_params, stream_throughput_fraction
from trnsim.perf.schedule import schedule_instructions

CURVE = load_json("dma_throughput_curve.json")
POINTS = [(p["bytes_per_partition"], p["fraction_of_peak"]) for p in CURVE["points"]]
T1 = trnsim.target("trn1")
N_LOADS = 64


def _stream(bytes_per_partition: int, n: int = N_LOADS) -> list[Instruction]:
    """n loads of [128, B] from consecutive rows of ONE HBM tensor (so one queue), into fresh SBUF tiles."""
    out = []
    for i in range(n):
        src = Operand("x", "hbm", (128, bytes_per_partition), "uint8", 1,
                      Region("hbm", 1, 0, 1, i * 128 * bytes_per_partition, (i + 1) * 128 * bytes_per_partition),
                      bytes_per_partition)
        dst = Operand("t", "sbuf", (128, bytes_per_partition), "uint8", 1,
                      Region("sbuf", 100 + i, 0, 128, 0, bytes_per_partition), bytes_per_partition)
        attrs = {"api": "load", "partitions": 128, "bytes_per_partition": bytes_per_partition}
        out.append(Instruction(i, "dma_copy", "dma", (src,), (dst,), attrs, 0, 128 * bytes_per_partition, (),
                               bytes_per_partition, 128, None))
    return out


def _measured_fraction(bytes_per_partition: int) -> float:
    ins = _stream(bytes_per_partition)
    tl = schedule_instructions(ins, T1.core, T1.chip, "trn1")
    assert len(set(tl.dma_queue.tolist())) == 1                     # really a single queue
    # steady state: from the first transfer's end to the last one's, N-1 transfers completed
    span_ns = float(tl.end_ns[-1] - tl.end_ns[0])
    bytes_per_ns = (N_LOADS - 1) * 128 * bytes_per_partition / span_ns
    return bytes_per_ns / dma_params(T1.core, T1.chip).peak_bytes_per_ns


@pytest.mark.parametrize("bpp,published", POINTS)
def test_single_queue_stream_reproduces_published_curve(bpp, published):
    got = _measured_fraction(bpp)
    print(f"[128, {bpp:>6} B] published {published:.2f} of peak, trnsim {got:.3f} ({100 * (got / published - 1):+.1f}%)")
    assert got == pytest.approx(published, rel=0.15)
    # the scheduler agrees with the closed form of the same model
    assert got == pytest.approx(stream_throughput_fraction(bpp, dma_params(T1.core, T1.chip)), rel=1e-6)


def test_curve_covers_256_bytes_to_64_kib():
    sizes = [b for b, _ in POINTS]
    assert min(sizes) == 256 and max(sizes) == 64 * 1024 and sizes == sorted(sizes)


def test_small_transfers_are_rate_limited_and_two_queues_overlap_their_fixed_cost():
    p = dma_params(T1.core, T1.chip)
    # below the knee a queue moves one transfer per fixed cost: doubling B doubles throughput
    assert stream_throughput_fraction(512, p) == pytest.approx(2 * stream_throughput_fraction(256, p))
    # two tensors' loads go to two queues and overlap their fixed costs: twice the transfers in the same time
    a = _stream(256, 32)
    b = _stream(256, 32)
    for j, ins in enumerate(b):
        src = ins.reads[0]
        ins.reads = (Operand("y", "hbm", src.shape, "uint8", 1, Region("hbm", 2, 0, 1, src.region.byte_start,
                                                                       src.region.byte_stop), 256),)
    inter = [x for pair in zip(a, b) for x in pair]
    for i, ins in enumerate(inter):
        ins.index = i
    two = schedule_instructions(inter, T1.core, T1.chip, "trn1")
    one = schedule_instructions(_stream(256, 32), T1.core, T1.chip, "trn1")
    assert len(set(two.dma_queue.tolist())) == 2
    assert two.latency_ns == pytest.approx(one.latency_ns, rel=0.02)


def test_stream_fraction_rejects_bad_sizes():
    with pytest.raises(ValueError, match="bytes_per_partition=0"):
        stream_throughput_fraction(0, dma_params(T1.core, T1.chip))


def test_published_curve_is_scaled_to_the_core_peak_and_drawn_beside_the_model():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.models.matmul_math import dma_load_cost
    from trnsim.perf.dma import published_curve
    from trnsim.course.viz.hierarchy import plot_dma_curve

    params = dma_params(T1.core, T1.chip)
    pts = published_curve(params)
    assert pts[0] == (256, pytest.approx(0.10 * 272.0))
    fig, ax = plt.subplots()
    plot_dma_curve(ax, [dma_load_cost(128, f) for f in (128, 1024, 8192)], published=pts)
    assert [tuple(p) for p in ax.collections[0].get_offsets()] == [(b, pytest.approx(g)) for b, g in pts]
    plt.close(fig)
