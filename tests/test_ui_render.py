"""Panel redraw machinery (trnsim.course.ui.render): a reused figure and the glyph cache draw the same
pixels as a fresh matplotlib figure (issue 14, panel speed)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from trnsim.course.ui import render
from trnsim.course.ui.render import PANEL_DPI, PanelCanvas, PanelFigure, clear_artists, panel_figure


def _pixels(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def _draw(ax, k: int) -> None:
    """A small plot with bars, a line, text, an annotation, a legend and a title that depend on k."""
    ax.bar(range(4), [k, 2 * k, 3, 1], color="#1f77b4", label=f"bars {k}")
    ax.plot([0, 3], [0, 3 * k], color="#d62728", label="line")
    ax.plot([0, 3], [1, k], lw=2)            # colour from the property cycle: the first one on a new Axes
    ax.text(0.5, k, f"{k} of 10", fontsize=8)
    ax.annotate(f"peak {3 * k}", (3, 3 * k), xytext=(-30, 10), textcoords="offset points",
                arrowprops=dict(arrowstyle="->"))
    ax.set_xticks(range(4))
    ax.set_xticklabels(["Tensor", "Vector", "Scalar", "DMA"])
    ax.set_ylabel("busy (%)")
    ax.legend(loc="upper left", fontsize=7)
    ax.set_title(f"k = {k}: 10³ GB/s", fontsize=10)


def _fresh(k: int) -> np.ndarray:
    fig = Figure(figsize=(5, 3), dpi=PANEL_DPI)
    FigureCanvasAgg(fig)                      # plain matplotlib, no glyph cache
    _draw(fig.add_subplot(), k)
    return _pixels(fig)


def test_panel_canvas_draws_the_same_pixels_as_plain_agg_and_reuses_glyphs():
    render._GLYPH_CACHE.clear()
    fig = panel_figure((5, 3))
    assert isinstance(fig.canvas, PanelCanvas)
    _draw(fig.add_subplot(), 2)
    first = _pixels(fig)
    cached = len(render._GLYPH_CACHE)
    assert cached >= 10                       # tick labels, title, legend, texts were recorded
    second = _pixels(fig)                     # every text now replayed from the cache
    assert len(render._GLYPH_CACHE) == cached
    plain = _fresh(2)
    assert first.shape == plain.shape
    assert np.array_equal(first, plain) and np.array_equal(second, plain)
    assert (plain[..., :3] < 100).any()       # the picture has dark (text) pixels, not a blank canvas


def test_reused_figure_draws_what_a_new_figure_draws():
    """PanelFigure clears the Axes (clear_artists) and the plot function redraws: same pixels as a new figure,
    including a legend without the previous call's bars."""
    pf = PanelFigure()
    for k in (2, 5, 2, 7):
        (ax,) = pf.axes("one", (5, 3), lambda fig: (fig.add_subplot(),))
        _draw(ax, k)
        assert len(ax.containers) == 1 and len(ax.get_legend().get_texts()) == 2
        assert np.array_equal(_pixels(pf.figure), _fresh(k)), k
    assert len(pf._figures) == 1


def test_clear_artists_resets_autoscaling():
    fig = panel_figure((4, 3))
    ax = fig.add_subplot()
    ax.plot([0, 1000], [0, 1000])
    ax.set_xlim(0, 5)
    clear_artists(ax)
    ax.plot([0, 2], [0, 3])
    assert not ax.lines[1:] and not ax.patches
    assert ax.get_xlim()[1] < 10 and ax.get_ylim()[1] < 10
