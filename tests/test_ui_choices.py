"""Panels accept every name the notebooks teach, name the valid choices on a bad value, and never
raise on None (issue 14, classroom delivery)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import pytest
from traitlets import TraitError

from trnsim.course.ui.intro import ChipExplorer
from trnsim.course.ui.matmul import RooflinePanel
from trnsim.course.ui.memory import MemoryPanel
from trnsim.course.ui.render import dtype_choice, missing_choices, resolve_dtype


def test_dtype_aliases_both_ways():
    assert resolve_dtype("bf16") == "bfloat16" and resolve_dtype("bfloat16") == "bf16"
    assert resolve_dtype("FP32") == "float32"
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("int4")
    c = dtype_choice(["bfloat16", "float32"], "bf16")
    assert c.value == "bfloat16"
    c.value = "fp32"
    assert c.value == "float32"
    with pytest.raises(TraitError, match="'bfloat16', 'float32'"):
        c.value = "int4"


@pytest.mark.parametrize("panel_cls", [RooflinePanel, MemoryPanel])
def test_matmul_and_memory_panels_take_taught_names(panel_cls):
    p = panel_cls()
    p.dtype.value = "bf16"
    p.target.value = "trainium2"
    assert p.dtype.value == "bfloat16" and p.target.value == "trn2"
    assert p.error == "" and p.result.target == "trn2"
    with pytest.raises(TraitError, match="'trn1', 'inf2', 'trn2', 'trn3'"):
        p.target.value = "trn9"
    p.dtype.value = None                        # no selection: a message, never an exception
    assert p.result is None and p.error.startswith("choose the dtype")
    assert any(o["output_type"] == "stream" and o["name"] == "stderr" for o in p.out.outputs)
    p.dtype.value = "float32"
    assert p.error == "" and p.result is not None


def test_chip_explorer_takes_short_names_and_none():
    e = ChipExplorer()
    e.chip.value = "trn2"
    assert e.chip.value == "trainium2" and "Trainium2" in e.summary
    e.chip.value = None
    assert e.error.startswith("choose the chip")
    with pytest.raises(TraitError, match="'trainium2'"):
        e.chip.value = "h100"


def test_missing_choices_names_the_empty_controls():
    class W:
        def __init__(self, d, v):
            self.description, self.value = d, v

    assert missing_choices([W("dtype", None), W("target", "trn1")]) == "choose the dtype to see the result"
    assert missing_choices([W("dtype", "bf16")]) == ""


def test_cached_tight_layout_places_the_axes_the_second_time_too():
    """The cached layout is applied to a new figure's axes (a legend outside the axes stays inside the figure)."""
    import matplotlib
    matplotlib.use("Agg")
    from trnsim.course.ui.render import cached_tight_layout, panel_figure

    positions = []
    for _ in range(2):
        fig = panel_figure((8, 3))
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1], label="a rather long legend label outside the axes")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        cached_tight_layout(fig, "test_cached_tight_layout")
        positions.append(ax.get_position().x1)
    assert positions[0] < 0.8          # tight_layout made room for the legend on the right
    assert positions[1] == positions[0]


def test_panel_log_axes_label_powers_of_ten_without_mathtext():
    """Panels draw log-axis labels as plain text with superscripts ("10³"), the same numbers as mathtext."""
    import matplotlib
    matplotlib.use("Agg")
    from trnsim.course.ui.render import panel_figure, plain_log_labels

    fig = panel_figure((4, 3))
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_xlim(1e-2, 1e4)
    plain_log_labels(fig)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "10\u00b3" in labels and "10\u207b\u00b2" in labels
    assert not any("$" in lab for lab in labels)
