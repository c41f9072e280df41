"""The scaling figures draw what the step lists say."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from trnsim.serving import decode_math as dm  # noqa: E402
from trnsim.training import pipeline as pl, scaling as sc  # noqa: E402
from trnsim.course.viz import scaling as vsc  # noqa: E402


def test_pipeline_figure_has_one_bar_per_step():
    s = pl.schedule("interleaved", 4, 8, 2)
    fig, ax = plt.subplots()
    vsc.plot_pipeline_schedule(ax, s)
    assert len(ax.patches) == len(s.steps)
    assert ax.get_xlim() == (0, s.makespan)
    assert "bubble 15.8%" in ax.get_title()
    plt.close(fig)


def test_overlap_figure_marks_exposed_time():
    tl = sc.overlap_timeline([2e-3] * 3, [1e-3, 3e-3, 1e-3])
    fig, ax = plt.subplots()
    vsc.plot_overlap_timeline(ax, tl)
    assert any("exposed 2 ms" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_decode_figure_labels_bounds():
    terms = [dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, b, 128) for b in (1, 1024)]
    fig, ax = plt.subplots()
    vsc.plot_decode_terms(ax, terms)
    assert [t.get_text() for t in ax.texts] == ["M", "C"]
    plt.close(fig)
