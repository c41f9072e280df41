"""Widget: block sizes of the fully blocked matmul -> latency, utilisation, SBUF use (notebook 05).

Thin wiring only: numbers come from :func:`trnsim.models.journey.evaluate_blocks` (the
simulator), plots from :mod:`trnsim.course.viz.timeline` and :mod:`trnsim.course.viz.journey`. Drive it in code
by setting ``panel.size.value``, ``panel.block_m.value``, ``panel.block_n.value`` and
``panel.block_k.value``; read ``panel.result``, ``panel.summary`` and ``panel.error`` (the
simulator's ``KernelError`` text when the blocks do not fit in SBUF).
"""
from __future__ import annotations

import ipywidgets as widgets

from trnsim.models.journey import BlockResult, evaluate_blocks
from trnsim.course.ui.render import Choice, PanelFigure, cached_tight_layout, fit_labels, missing_choices, show
from trnsim.course.viz.journey import plot_engine_utilisation, plot_sbuf_budget
from trnsim.course.viz.timeline import plot_timeline

BLOCK_CHOICES = (1, 2, 4, 8, 16, 32)
SIZES = (1024, 2048)
TILE_ROWS, TILE_COLS = 128, 512     # a block counts tiles of 128 rows (M, K) or 512 columns (N)


def block_choices(size: int) -> dict[str, tuple[int, ...]]:
    """Block factors that fit a size^3 matmul: at most size/128 tiles along M and K, size/512 along N.

    Larger factors would make the kernel run a smaller block than the one reported, so the panel
    never offers them.
    """
    limits = {"m": size // TILE_ROWS, "n": max(1, size // TILE_COLS), "k": size // TILE_ROWS}
    return {d: tuple(b for b in BLOCK_CHOICES if b <= lim) for d, lim in limits.items()}


def _layout(fig):
    gs = fig.add_gridspec(2, 2, height_ratios=(1.25, 1))
    return fig.add_subplot(gs[0, :]), fig.add_subplot(gs[1, 0]), fig.add_subplot(gs[1, 1])


class BlockPanel:
    """Pick block sizes (in tiles) for ``matmul_fully_blocked``; ``show()`` returns the widget."""

    def __init__(self, size: int = 2048, block_m: int = 16, block_n: int = 2, block_k: int = 8,
                 target: str = "trn1") -> None:
        style = {"description_width": "150px"}
        self.target = target
        if size not in SIZES:
            raise ValueError(f"size={size}: choose one of {SIZES}")
        ok = block_choices(size)
        for d, v in (("m", block_m), ("n", block_n), ("k", block_k)):
            if v not in ok[d]:
                raise ValueError(f"block_{d}={v} does not fit a {size}^3 matmul: choose one of {ok[d]}")
        self.size = Choice(options=list(SIZES), value=size, description="M = N = K", style=style)
        self.block_m = Choice(options=list(ok["m"]), value=block_m,
                                        description="M block (x128 rows)", style=style)
        self.block_n = Choice(options=list(ok["n"]), value=block_n,
                                        description="N block (x512 cols)", style=style)
        self.block_k = Choice(options=list(ok["k"]), value=block_k,
                                        description="K block (x128)", style=style)
        self._quiet = False
        self.out = widgets.Output(layout=widgets.Layout(min_height="520px"))
        self.result: BlockResult | None = None
        self._figure = PanelFigure()
        self.summary = ""
        self.error = ""
        for w in (self.size, self.block_m, self.block_n, self.block_k):
            w.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, change) -> None:
        if self._quiet:
            return
        if change is not None and change.get("owner") is self.size and self.size.value is not None:
            ok = block_choices(self.size.value)
            self._quiet = True
            try:
                for d, w in (("m", self.block_m), ("n", self.block_n), ("k", self.block_k)):
                    keep = w.value if w.value in ok[d] else ok[d][-1]
                    w.options = list(ok[d])
                    w.value = keep
            finally:
                self._quiet = False
        self.update()

    def update(self) -> None:
        """Profile the chosen blocks and redraw; a choice that does not fit is shown, not raised."""
        missing = missing_choices([self.size, self.block_m, self.block_n, self.block_k])
        if missing:
            self.result, self.summary, self.error = None, "", missing
            show(self.out, error=missing)
            return
        r = evaluate_blocks(self.size.value, self.block_m.value, self.block_n.value, self.block_k.value,
                            self.target)
        self.result = r
        self.summary = r.summary()
        self.error = r.error
        if not r.ok:
            (ax,) = self._figure.axes("does not fit", (9, 2.4), lambda fig: (fig.add_subplot(),))
            plot_sbuf_budget(ax, r.budget)
            fig = self._figure.figure
            cached_tight_layout(fig, type(self).__name__)
            show(self.out, fig, r.summary(), error="This block choice does not fit:\n" + r.error)
            return
        ax_time, ax_util, ax_sbuf = self._figure.axes("fits", (11, 5.8), _layout)
        plot_timeline(r.profile, ax_time, max_dma_rows=3)
        plot_engine_utilisation(ax_util, r.profile)
        plot_sbuf_budget(ax_sbuf, r.budget)
        fig = self._figure.figure
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.HBox([widgets.VBox([self.size, self.block_m]), widgets.VBox([self.block_n, self.block_k])])
        return fit_labels(widgets.VBox([controls, self.out]))


__all__ = ["BlockPanel", "BLOCK_CHOICES", "SIZES", "block_choices"]
