"""Notebook 02: build a tiny instruction sequence, run it on a simulated NeuronCore, see its timeline.

The model (step kinds, the kernel a sequence becomes, its profile) is :mod:`trnsim.models.engines`;
figure: ``trnsim.course.viz.timeline.plot_timeline``. The panel only wires dropdowns and sliders to these,
and :func:`outline_instructions` marks instruction starts on the timeline.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from trnsim.catalog import target as get_target
from trnsim.course.ui.render import Choice, fit_labels, missing_choices, panel_figure, show
from trnsim.models.engines import ENGINE_LABELS, ENGINES, PRESETS, STEP_KINDS, SequenceError, SequenceResult, run_sequence

def outline_instructions(ax: Any, profile: Any) -> Any:
    """Overlay on ``trnsim.course.viz.timeline.plot_timeline``: a white tick at each compute instruction's start,
    so back-to-back instructions on one engine read as separate blocks (small sequences only)."""
    from trnsim.course.viz.timeline import timeline_rows

    tl = profile.timeline
    rows = timeline_rows(profile)
    for r, (_, eng, idx) in enumerate(rows):
        if eng == "dma":
            continue
        y = len(rows) - 1 - r
        starts = tl.start_ns[idx] / 1e3
        ax.vlines(starts[1:] if starts.size > 1 else [], y - 0.38, y + 0.38, colors="white", lw=1.5)
    return ax


NO_STEP = "(none)"


class EnginePanel:
    """Pick up to four steps and their engines, a tile size and a tile count; see the engine timeline."""

    def __init__(self, preset: str = "unfused: scale, bias, exp on Scalar", free: int = 512, tiles: int = 1,
                 target: str = "trn1", max_steps: int = 4) -> None:
        kinds = [(NO_STEP, NO_STEP)] + [(s.label, s.key) for s in STEP_KINDS.values()]
        self.preset = Choice(options=list(PRESETS), value=preset, description="preset",
                                       layout=widgets.Layout(width="360px"))
        self.kind = [Choice(options=kinds, value=NO_STEP, description=f"step {i + 1}",
                                      layout=widgets.Layout(width="330px")) for i in range(max_steps)]
        self.engine = [Choice(options=[(ENGINE_LABELS[e], e) for e in ENGINES], value="scalar",
                                        layout=widgets.Layout(width="150px")) for _ in range(max_steps)]
        self.free = widgets.IntSlider(value=free, min=16, max=2048, step=16, description="free size",
                                      continuous_update=False)
        self.tiles = widgets.IntSlider(value=tiles, min=1, max=6, description="tiles", continuous_update=False)
        from trnsim.course.ui.matmul import target_choice

        self.target = target_choice(target)
        self.out = widgets.Output(layout=widgets.Layout(min_height="380px"))
        self.result: SequenceResult | None = None
        self.summary = ""
        self.error = ""
        self._quiet = False
        self.preset.observe(self._on_preset, names="value")
        for k, e in zip(self.kind, self.engine):
            k.observe(lambda change, e=e: self._on_kind(change, e), names="value")
        for w in self.engine + [self.free, self.tiles, self.target]:
            w.observe(self._on_change, names="value")
        self.apply_preset(preset)

    @property
    def steps(self) -> list[tuple[str, str]]:
        return [(k.value, e.value) for k, e in zip(self.kind, self.engine) if k.value != NO_STEP]

    def apply_preset(self, name: str | None) -> None:
        """Set the step dropdowns from a preset, then run once (None, no preset picked: the output area says so)."""
        if name is None:
            self.update()
            return
        if name not in PRESETS:
            raise ValueError(f"preset={name!r}: choose one of {', '.join(repr(k) for k in PRESETS)}")
        seq = PRESETS[name]
        self._quiet = True
        try:
            for i, (k, e) in enumerate(zip(self.kind, self.engine)):
                k.value = seq[i][0] if i < len(seq) else NO_STEP
                e.value = seq[i][1] if i < len(seq) else "scalar"
        finally:
            self._quiet = False
        self.update()

    def _on_preset(self, change) -> None:
        self.apply_preset(change["new"])

    def _on_kind(self, change, engine: widgets.Dropdown) -> None:
        """A new operation in a step: move its engine to one that can run it (if needed), then rerun."""
        if self._quiet:
            return
        kind = STEP_KINDS.get(change["new"])
        if kind is not None and engine.value not in kind.engines:
            self._quiet = True
            try:
                engine.value = kind.engines[0]
            finally:
                self._quiet = False
        self.update()

    def _on_change(self, _change) -> None:
        if not self._quiet:
            self.update()

    def update(self) -> None:
        """Run the sequence and redraw; a step that cannot run is explained in the output area."""
        from trnsim.course.viz.timeline import plot_timeline

        self.error = missing_choices([self.target, self.preset, *self.kind,
                                      *((f"step {i + 1} engine", e) for i, e in enumerate(self.engine))])
        if self.error:
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        try:
            pmax = get_target(self.target.value).core.tile.pmax
            self.result = run_sequence(self.steps, pmax, self.free.value, self.tiles.value, self.target.value)
        except SequenceError as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot run this sequence: {exc}")
            return
        self.summary = self.result.summary()
        fig = panel_figure((11, 3.4))
        ax = fig.add_subplot()
        plot_timeline(self.result.profile, ax, title=f"{self.result.latency_us:.2f} us on {self.result.target}")
        outline_instructions(ax, self.result.profile)
        fig.subplots_adjust(left=0.16, right=0.98, bottom=0.16, top=0.88)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        rows = [widgets.HBox([k, e]) for k, e in zip(self.kind, self.engine)]
        return fit_labels(widgets.VBox([self.preset, *rows, widgets.HBox([self.free, self.tiles, self.target]), self.out]))


__all__ = ["EnginePanel", "outline_instructions"]
