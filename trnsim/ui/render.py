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

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes at 100 dpi and close it (so it is not also shown inline).

    No ``bbox_inches="tight"``: it draws the figure twice; panels call ``tight_layout`` instead.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


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
