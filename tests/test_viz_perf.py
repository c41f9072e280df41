"""Figures of the performance model draw what they claim (Agg backend, no display)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import trnsim.neuronxcc.nki as nki  # noqa: E402
import trnsim.neuronxcc.nki.language as nl  # noqa: E402
import trnsim.neuronxcc.nki.typing as nt  # noqa: E402
from trnsim.kernels import MATMUL_JOURNEY, matmul_fully_blocked, softmax  # noqa: E402
from trnsim.course.viz.compare import plot_compare  # noqa: E402
from trnsim.course.viz.memory import plot_occupancy  # noqa: E402
from trnsim.course.viz.roofline import plot_roofline  # noqa: E402
from trnsim.course.viz.timeline import plot_dma_throughput, plot_profile, plot_timeline, timeline_rows  # noqa: E402

SPEC = (nt.tensor[[1024, 512], nl.bfloat16], nt.tensor[[1024, 1024], nl.bfloat16])


@pytest.fixture(scope="module")
def profs():
    return [nki.profile(k, *SPEC) for k in MATMUL_JOURNEY]


def test_timeline_has_one_row_per_used_engine_and_dma_queue(profs):
    p = profs[-1]
    rows = timeline_rows(p)
    labels = [r[0] for r in rows]
    assert labels[:3] == ["Tensor", "TensorMatrix", "Vector"]      # neuron-profile's row names
    assert any(lab.startswith("DMA load lhsT") for lab in labels)
    assert any(lab.startswith("DMA store") for lab in labels)
    # every instruction appears in exactly one row (TensorMatrix repeats the Tensor row's matmuls)
    assert sum(len(r[2]) for r in rows if r[0] != "TensorMatrix") == p.instructions - int((p.timeline.engine == 5).sum())
    fig, ax = plt.subplots()
    plot_timeline(p, ax)
    n_dma = sum(1 for r in rows if r[1] == "dma")
    assert len(ax.collections) == len(rows) + n_dma            # DMA rows: data bars + faded set-up bars
    # TensorMatrix bars (MultiplyMoving) lie inside the Tensor bars and cover no more time
    split = p.tensor_split
    tl = p.timeline
    assert np.all(tl.end_ns[split.index] - split.multiply_moving_ns >= tl.start_ns[split.index] - 1e-9)
    assert ax.get_xlim()[1] == pytest.approx(p.latency_us)
    plt.close(fig)


def test_timeline_zoom_window_and_bad_window(profs):
    fig, ax = plt.subplots()
    plot_timeline(profs[0], ax, time_range_us=(10.0, 20.0))
    assert ax.get_xlim() == (10.0, 20.0)
    with pytest.raises(ValueError, match="start < end"):
        plot_timeline(profs[0], ax, time_range_us=(5.0, 5.0))
    plt.close(fig)


def test_roofline_points_sit_under_the_roof(profs):
    fig, ax = plt.subplots()
    plot_roofline(profs, ax)
    pts = [c.get_offsets()[0] for c in ax.collections]
    assert len(pts) == len(profs)
    from trnsim.perf.roofline import roofline
    r = roofline("trn1")
    for x, y in pts:
        assert y <= float(r.attainable_tflops(x, spec_hbm=True)) * 1.0001
    plt.close(fig)


def test_occupancy_stays_within_capacity_and_reports_peak():
    p = nki.profile(matmul_fully_blocked, *SPEC)
    fig, ax = plt.subplots()
    plot_occupancy(p, ax)
    sbuf_line = ax.get_lines()[0]
    assert np.max(sbuf_line.get_ydata()) == pytest.approx(100 * p.peak_sbuf_bytes_per_partition /
                                                          p.sbuf_capacity_bytes_per_partition)
    assert np.max(sbuf_line.get_ydata()) <= 100
    assert "SBUF: peak" in ax.get_legend().get_texts()[0].get_text()
    plt.close(fig)


def test_compare_bars_sum_to_latency(profs):
    fig, ax = plt.subplots()
    plot_compare(profs, ax, labels=["1", "2", "3", "4"])
    for y, p in zip(range(len(profs))[::-1], profs):
        widths = [b.get_width() for b in ax.patches if abs(b.get_y() + b.get_height() / 2 - y) < 1e-6]
        assert sum(widths) == pytest.approx(p.latency_us, rel=1e-6)
    with pytest.raises(ValueError, match="labels"):
        plot_compare(profs, ax, labels=["only one"])
    plt.close(fig)


def test_softmax_timeline_draws_scalar_and_vector_rows():
    x = np.zeros((512, 1024), np.float32)
    p = nki.profile(softmax, x, numerics=False)
    labels = [r[0] for r in timeline_rows(p)]
    assert "Scalar" in labels and "Vector" in labels


def test_profile_figure_has_timeline_usage_and_throughput_rows(profs):
    p = profs[0]
    fig = plot_profile(p)
    axes = fig.get_axes()
    assert len(axes) == 3
    assert "HFU" in axes[0].get_title() and "bound: dma" in axes[0].get_title()
    assert axes[1].get_ylabel() == "usage %" and axes[2].get_ylabel() == "GB/s"
    # the throughput row integrates to the bytes the DMA moved
    centres, per_bin, cum = p.dma_throughput(100)
    width_ns = p.latency_us * 1e3 / 100
    assert float(per_bin.sum() * width_ns) == pytest.approx(p.dma_bytes, rel=1e-6)
    assert cum[-1] == pytest.approx(p.dma_bytes / (p.latency_us * 1e3), rel=1e-6)
    assert per_bin.max() <= p.hbm_peak_gbytes_per_s * 1.0001
    plt.close(fig)
    fig, ax = plt.subplots()
    plot_dma_throughput(p, ax, time_range_us=(0.0, p.latency_us / 2))
    assert ax.get_xlim() == (0.0, p.latency_us / 2)
    plt.close(fig)


def test_published_vs_predicted_figure_places_each_row():
    from trnsim.perf.validation import ValidationRow
    from trnsim.course.viz.validation import plot_published_vs_predicted

    rows = [ValidationRow("trn1 set", "trn1", s, "m:k", "k", "bfloat16", pub, pred)
            for s, pub, pred in ((1, 50.0, 40.0), (2, 40.0, 41.0), (3, 20.0, 21.0), (4, 7.0, 6.5))]
    fig, ax = plt.subplots()
    plot_published_vs_predicted(rows, ax)
    pts = ax.collections[-1].get_offsets()
    assert [tuple(p) for p in pts] == [(r.published_ms, r.predicted_ms) for r in rows]
    labels = [t.get_text() for t in ax.texts]
    assert "trn1 s1 -20%" in labels and "trn1 s2 +2%" in labels
    plt.close(fig)
    with pytest.raises(ValueError, match="no rows"):
        plot_published_vs_predicted([])


def test_long_row_labels_break_and_fit_left_of_the_axes():
    from trnsim.course.viz.timeline import row_label, row_label_margin_in
    assert row_label("Tensor") == "Tensor"
    assert row_label("DMA DGE 0 (SyncE/ScalarE)") == "DMA DGE 0\n(SyncE/ScalarE)"
    assert row_label("DMA store a_really_long_output_name_here") == "DMA store a_really_long_o~"
    # trn2's DGE queue rows: the figure leaves room for the longest drawn line
    p = nki.profile(MATMUL_JOURNEY[0], *SPEC, target="trn2")
    labels = [r[0] for r in timeline_rows(p, 4)]
    assert any("(SyncE/ScalarE)" in lab for lab in labels)
    fig = plot_profile(p)
    ticks = [t.get_text() for t in fig.get_axes()[0].get_yticklabels()]
    assert "DMA DGE 0\n(SyncE/ScalarE)" in ticks
    assert fig.subplotpars.left * fig.get_figwidth() >= row_label_margin_in(labels) - 1e-9


def test_the_other_dma_queues_row_counts_them(profs):
    p = profs[0]   # stage 1: rhs loads, lhsT loads and stores on three queues
    assert timeline_rows(p, 1)[-1][0] == "DMA other (2 queues)"
    assert timeline_rows(p, 2)[-1][0] == "DMA other (1 queue)"


def test_the_other_dma_queues_row_draws_one_lane_per_queue(profs):
    # a merged row keeps its queues apart (transfers running side by side in two queues would merge into one
    # bar): one lane each, set-up and data bars, lanes not overlapping and inside the row
    p = profs[0]
    rows = timeline_rows(p, 1)
    fig, ax = plt.subplots()
    plot_timeline(p, ax, max_dma_rows=1)
    n_compute = sum(1 for r in rows if r[1] != "dma")
    assert len(ax.collections) == n_compute + 2 + 2 * 2
    merged = ax.collections[-4:]
    spans = sorted({(round(float(c.get_paths()[0].vertices[:, 1].min()), 6),
                     round(float(c.get_paths()[0].vertices[:, 1].max()), 6)) for c in merged})
    assert len(spans) == 2 and spans[0][1] <= spans[1][0]                 # two lanes, one above the other
    assert spans[0][0] >= -0.38 - 1e-9 and spans[1][1] <= 0.38 + 1e-9     # the bottom row, y = 0
    plt.close(fig)
