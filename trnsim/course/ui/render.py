"""Put a figure and text into an ``ipywidgets.Output`` by setting its state directly.

Printing inside ``with out:`` sends ordinary output messages that only a widget
front-end routes into the Output widget; nbval, which has no front-end, records them
as cell output, so a notebook cell that drives a panel in code would differ between
JupyterLab and the test run. Setting ``out.outputs`` (through ``append_*``) changes
only the widget's state, which reaches the front-end as a widget message and is the
same everywhere. It also works in plain Python (tests), where there is no kernel.
"""
from __future__ import annotations

import io
import re
from collections import OrderedDict
from typing import Any, Callable, Iterable

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatterSciNotation
from traitlets import TraitError, validate

PANEL_DPI = 85
"""Panels render at 85 dpi: an 11.5-inch figure is 978 px, inside a 1,000 px notebook column, text stays
readable (10 pt = 12 px), and the PNG costs about 70% of a 100-dpi one (tests/bench_panels.py)."""

DTYPE_ALIASES: dict[str, tuple[str, ...]] = {
    "bfloat16": ("bf16",), "float16": ("fp16", "f16"), "float32": ("fp32", "f32"),
    "float8_e4m3": ("fp8", "fp8_e4m3", "float8_e4m3fn", "fp8_e4m3fn"), "float8_e5m2": ("fp8_e5m2",),
}
"""Long dtype name -> the short names the notebooks also teach; a panel accepts either."""


class _GlyphRecorder:
    """Stands in for a RendererAgg's C++ renderer while one text is drawn: passes ``draw_text_image`` calls
    (one per glyph) through and records them; any other call marks the text as not replayable."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.glyphs: list[tuple[Any, ...]] = []
        self.other = False

    def draw_text_image(self, image: Any, x: Any, y: Any, angle: Any, gc: Any) -> None:
        self.glyphs.append((np.array(image, copy=True), x, y, angle))
        self._real.draw_text_image(image, x, y, angle, gc)

    def __getattr__(self, name: str) -> Any:
        self.other = True
        return getattr(self._real, name)


_GLYPH_CACHE: OrderedDict[Any, tuple[tuple[Any, ...], ...]] = OrderedDict()
_GLYPH_CACHE_SIZE = 4096
_TEXT_RC = ("text.hinting", "text.hinting_factor", "text.kerning_factor", "font.family")


class _TextCachingRenderer(RendererAgg):
    """RendererAgg that remembers the glyph bitmaps of each plain text it draws, keyed on everything the
    bitmaps depend on (string, font files and size, exact position, angle, dpi, canvas height, hinting,
    antialiasing), and replays them (with the current colour and clip) when the same text is drawn at the
    same place again. A panel redraw draws mostly the same tick labels, axis labels, titles and legends
    as the previous one, and FreeType layout and rendering of text was about 45% of a redraw
    (tests/bench_panels.py). The output is the same pixels: only FreeType's work is skipped."""

    def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False,
                  mtext: Any = None) -> None:
        if ismath or not hasattr(self, "_renderer"):
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        try:
            from matplotlib.font_manager import fontManager

            fonts = tuple(fontManager._find_fonts_by_props(prop))
        except AttributeError:                 # another matplotlib: draw without the cache
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        key = (s, fonts, prop.get_size_in_points(), float(x), float(y), float(angle), self.dpi, self.height,
               bool(gc.get_antialiased()), repr([mpl.rcParams.get(k) for k in _TEXT_RC]),
               repr(mtext.get_fontfeatures()) if mtext is not None and hasattr(mtext, "get_fontfeatures") else None,
               mtext.get_language() if mtext is not None and hasattr(mtext, "get_language") else None)
        glyphs = _GLYPH_CACHE.get(key)
        if glyphs is not None:
            _GLYPH_CACHE.move_to_end(key)
            for image, gx, gy, gangle in glyphs:
                self._renderer.draw_text_image(image, gx, gy, gangle, gc)
            return None
        real, rec = self._renderer, _GlyphRecorder(self._renderer)
        self._renderer = rec
        try:
            super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        finally:
            self._renderer = real
        if rec.glyphs and not rec.other:      # nothing recorded: not drawn through draw_text_image, never replay
            _GLYPH_CACHE[key] = tuple(rec.glyphs)
            if len(_GLYPH_CACHE) > _GLYPH_CACHE_SIZE:
                _GLYPH_CACHE.popitem(last=False)
        return None


class PanelCanvas(FigureCanvasAgg):
    """The Agg canvas of a panel figure: its renderer is a :class:`_TextCachingRenderer`."""

    def get_renderer(self) -> RendererAgg:
        w, h = self.figure.bbox.size
        key = (w, h, self.figure.dpi)
        if getattr(self, "_panel_renderer_key", None) != key or not isinstance(self.renderer, _TextCachingRenderer):
            self.renderer = _TextCachingRenderer(w, h, self.figure.dpi)
            self._panel_renderer_key = key
        return self.renderer


def panel_figure(figsize: tuple[float, float]) -> Figure:
    """A figure outside pyplot (no figure manager to create or close): cheaper for a panel redraw. It draws
    on a :class:`PanelCanvas` (Agg, with text glyphs reused between redraws)."""
    fig = Figure(figsize=figsize, dpi=PANEL_DPI)
    PanelCanvas(fig)
    return fig


def clear_artists(ax: Axes) -> None:
    """Remove what a plot function drew on ``ax`` (patches, lines, collections, texts, images, bar
    containers, legend) and reset its data limits and colour cycle, but keep the Axes, its spines and its ticks.

    ``ax.clear()`` would also rebuild every tick (a Line2D pair and a Text each) and their
    transforms, which is most of the cost of a new subplot; a plot function that sets its own
    ticks, limits and labels every time it runs draws the same picture on a cleared Axes as on a new one.
    """
    for c in list(ax.containers):
        c.remove()
    for group in (ax.patches, ax.lines, ax.collections, ax.texts, ax.images, ax.tables, ax.artists):
        for a in list(group):
            a.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.relim()
    ax.ignore_existing_data_limits = True
    ax.set_autoscale_on(True)
    ax.set_prop_cycle(None)      # the next line without a colour takes the first colour again, as on a new Axes


class PanelFigure:
    """A panel's figure, made once per layout and redrawn in place on every update.

    ``axes(key, figsize, make)`` returns the Axes ``make(fig)`` created for ``key`` the first time
    (a tuple), cleared with :func:`clear_artists` on later calls, so the plot functions draw on the
    same Figure, Axes and ticks each time. The figure keeps one Agg canvas, whose renderer (and
    its text-size cache) is reused between redraws. Titles stay at the top of their Axes
    (``axes.titley`` = 1.0): none of the panels has a top x-axis or a y offset text to lift them
    above, and placing them automatically measures every tick label of every Axes on each redraw.
    """

    def __init__(self) -> None:
        self._figures: dict[Any, tuple[Figure, tuple[Axes, ...]]] = {}
        self.figure: Figure | None = None

    def axes(self, key: Any, figsize: tuple[float, float],
             make: Callable[[Figure], tuple[Axes, ...]]) -> tuple[Axes, ...]:
        hit = self._figures.get(key)
        if hit is None:
            with mpl.rc_context({"axes.titley": 1.0}):
                fig = panel_figure(figsize)
                hit = self._figures[key] = (fig, tuple(make(fig)))
        else:
            for ax in hit[1]:
                clear_artists(ax)
        self.figure = hit[0]
        return hit[1]


_LAYOUTS: dict[Any, list[dict[str, float]]] = {}
_PARAMS = ("left", "right", "bottom", "top", "wspace", "hspace")


def cached_tight_layout(fig: Figure, key: Any) -> None:
    """``fig.tight_layout()`` the first time a figure of this ``key`` is drawn, then the same
    subplot parameters again: ``tight_layout`` draws the whole figure once more, about a third of a
    panel's redraw (tests/bench_panels.py). ``key`` should include what changes the layout
    (panel, figure size, number of axes)."""
    gridspecs: list[Any] = []
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        gs = spec.get_gridspec() if spec is not None else None
        if gs is not None and gs not in gridspecs:
            gridspecs.append(gs)
    full_key = (key, tuple(round(v, 2) for v in fig.get_size_inches()), len(fig.axes), len(gridspecs))
    saved = _LAYOUTS.get(full_key)
    if saved is not None and len(saved) == len(gridspecs):
        for gs, params in zip(gridspecs, saved):
            gs.update(**params)
        # GridSpec.update moves only the axes of a gridspec that knows its figure; a figure made with
        # fig.add_subplot() does not, so place every axes from its (updated) subplot spec explicitly
        for ax in fig.axes:
            spec = ax.get_subplotspec()
            if spec is not None:
                ax.set_position(spec.get_position(fig))
        return
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine on the figure, and savefig draws a figure with any
    # layout engine twice (once to lay it out); the layout is done, so drop it (matters for a reused figure)
    fig.set_layout_engine(None)
    _LAYOUTS[full_key] = [{k: getattr(gs.get_subplot_params(fig), k) for k in _PARAMS} for gs in gridspecs]


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
_MATHTEXT_POWER = re.compile(r"^\$\\mathdefault\{(\d+)\^\{(-?\d+)\}\}\$$")


class UnicodeLogFormatter(LogFormatterSciNotation):
    """Log-axis tick labels as plain text with Unicode superscripts ("10³"), not mathtext: the same
    labels, but mathtext parsing is about a fifth of a log-axis panel's redraw (tests/bench_panels.py)."""

    def __call__(self, x: float, pos: Any = None) -> str:
        label = super().__call__(x, pos)
        m = _MATHTEXT_POWER.match(label)
        return f"{m.group(1)}{m.group(2).translate(_SUPERSCRIPT)}" if m else label


def plain_log_labels(fig: Figure) -> None:
    """Give every log-scaled axis of ``fig`` a :class:`UnicodeLogFormatter` (major and minor ticks)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            for get, set_ in ((axis.get_major_formatter, axis.set_major_formatter),
                              (axis.get_minor_formatter, axis.set_minor_formatter)):
                f = get()
                if type(f) is LogFormatterSciNotation:
                    set_(UnicodeLogFormatter(base=f._base, labelOnlyBase=f.labelOnlyBase,
                                             minor_thresholds=f.minor_thresholds))


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes at :data:`PANEL_DPI` and close it (so it is not also shown inline).

    No ``bbox_inches="tight"``: it draws the figure twice; panels call ``tight_layout`` instead.
    Log-axis labels are drawn as plain text (:func:`plain_log_labels`).
    """
    plain_log_labels(fig)
    buf = io.BytesIO()
    # zlib level 1: a few times faster to encode than the default 6, for a somewhat larger PNG
    fig.savefig(buf, format="png", dpi=PANEL_DPI, pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return buf.getvalue()


class Choice(widgets.Dropdown):
    """A Dropdown that accepts every name the course teaches for an option and names the valid
    choices on a bad value.

    ``resolve`` maps a name the options do not list ("bf16", "trn2") to an option value, or raises
    ValueError. ``None`` is allowed (no selection): the panel shows "choose the ..." instead of raising.
    """

    def __init__(self, *args: Any, resolve: Callable[[Any], Any] | None = None, **kwargs: Any) -> None:
        self._resolve = resolve
        super().__init__(*args, **kwargs)

    @validate("value")
    def _validate_value(self, proposal: Any) -> Any:
        value = proposal.value
        if value is None:
            return None
        values = list(self._options_values)
        if value in values:
            return value
        resolve = getattr(self, "_resolve", None)
        if resolve is not None:
            try:
                alt = resolve(value)
            except (ValueError, KeyError, TypeError):
                alt = None
            if alt in values:
                return alt
        shown = ", ".join(repr(v) for v in values)
        raise TraitError(f"{self.description or 'choice'}={value!r} is not one of the choices: {shown}")


def resolve_dtype(name: Any) -> str:
    """'bf16' -> 'bfloat16' and 'bfloat16' -> 'bf16' etc. (the caller keeps whichever is an option)."""
    key = str(name).strip().lower()
    for long, shorts in DTYPE_ALIASES.items():
        if key == long:
            return shorts[0]
        if key in shorts:
            return long
    raise ValueError(f"unknown dtype {name!r}")


def dtype_choice(options: Iterable[Any], value: Any, description: str = "dtype", **kwargs: Any) -> Choice:
    """A dtype dropdown that accepts the long and the short names ("bfloat16" and "bf16")."""
    c = Choice(options=list(options), value=None, description=description, resolve=resolve_dtype, **kwargs)
    c.value = value
    return c


def fit_labels(root: widgets.Widget) -> widgets.Widget:
    """Give every control under ``root`` whose description width is the 80 px default a label as wide as
    its text (``"initial"``), so no description is cut with an ellipsis; returns ``root``."""
    stack = [root]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()) or ())
        style = getattr(w, "style", None)
        if getattr(w, "description", "") and style is not None and hasattr(style, "description_width"):
            if not style.description_width:
                style.description_width = "initial"
    return root


def missing_choices(controls: Iterable[Any]) -> str:
    """"choose the <description>" for every control left at None ("" when every control has a value).

    A control whose description does not say what it is (an engine dropdown beside "step 1") can be
    passed as a ``(name, control)`` pair: "choose the step 1 engine". A panel calls this before it reads its
    controls, so a Dropdown set to None from code gives this message instead of an error from deep inside.
    """
    names = []
    for c in controls:
        name, w = c if isinstance(c, tuple) else (getattr(c, "description", "") or "value", c)
        if getattr(w, "value", 0) is None:
            names.append(name)
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"choose the {listed} to see the result"


def show(out: widgets.Output, fig: Figure | None = None, text: str = "", error: str = "") -> None:
    """Replace what ``out`` shows with an optional figure, text, and an error message."""
    out.outputs = ()
    if error:
        out.append_stderr(error.rstrip("\n") + "\n")
    if fig is not None:
        from IPython.display import Image

        out.append_display_data(Image(data=figure_png(fig), format="png"))
    elif error:
        plt.close("all")
    if text:
        out.append_stdout(text.rstrip("\n") + "\n")
