"""Widgets for notebook 09: a collective explorer and a step-by-step ring all-reduce.

Thin wiring only: numbers come from :mod:`trnsim.cluster`, plots from
:mod:`trnsim.course.viz.collectives`. Drive them in code by setting control values and read
``panel.result``, ``panel.summary`` and ``panel.error``.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from trnsim.catalog import instances
from trnsim.cluster import OPS, AlgorithmError, TopologyError, collective_time, topology
from trnsim.cluster.analysis import RingAnimation, auto_regions, ring_allreduce_animation, size_sweep
from trnsim.cluster.collectives import CollectiveTiming
from trnsim.cluster.topology import Topology
from trnsim.catalog.datafiles import CatalogError
from trnsim.course.ui.render import Choice, missing_choices, show
from trnsim.course.viz.collectives import draw_ring_step, plot_time_vs_size

SWEEP_SIZES = tuple(2**k for k in range(10, 33, 2))  # 1 KiB .. 4 GiB
ALGORITHM_CHOICES = ("auto", "ring", "recursive_doubling", "recursive_halving_doubling", "mesh", "hierarchical")


def _multi_chip_instances() -> list[str]:
    return [i.name for i in instances()]


class CollectivesPanel:
    """Op, size, topology, nodes, ranks, algorithm -> time, algbw and busbw, with a time-vs-size curve.

    Controls: ``op``, ``size_log2`` (message size = 2**value bytes), ``instance``, ``nodes``,
    ``ranks``, ``algorithm``. Results: ``result`` (CollectiveTiming), ``summary``, ``error``.
    """

    def __init__(self, op: str = "all_reduce", size_log2: int = 24, instance: str = "trn1.32xlarge",
                 nodes: int = 1, ranks: int | None = None, algorithm: str = "auto") -> None:
        narrow = dict(layout=widgets.Layout(width="250px"), style={"description_width": "70px"})
        self.op = Choice(options=list(OPS), value=op, description="op", **narrow)
        self.size_log2 = widgets.IntSlider(value=size_log2, min=10, max=32, description="log2 bytes",
                                           continuous_update=False)
        self.size_label = widgets.Label()
        self.instance = Choice(options=_multi_chip_instances(), value=instance, description="instance",
                                         **narrow)
        self.nodes = widgets.IntSlider(value=nodes, min=1, max=16, description="nodes", continuous_update=False)
        self.ranks = widgets.IntSlider(value=2, min=1, max=2, description="ranks", continuous_update=False)
        self.algorithm = Choice(options=list(ALGORITHM_CHOICES), value=algorithm, description="algorithm",
                                          **narrow)
        self.out = widgets.Output(layout=widgets.Layout(min_height="380px", max_width="720px"))
        self.result: CollectiveTiming | None = None
        self.summary = ""
        self.error = ""
        self._topos: dict[tuple[str, int], Topology] = {}
        self._groups: dict[tuple[str, int, int], Topology] = {}
        self._sweeps: dict[tuple, dict] = {}
        self._busy = False
        self._sync_ranks(ranks)
        for w in (self.op, self.size_log2, self.ranks, self.algorithm):
            w.observe(self._on_change, names="value")
        for w in (self.instance, self.nodes):
            w.observe(self._on_topology, names="value")
        self.update()

    # ------------------------------------------------------------------ wiring
    def _full_topology(self) -> Topology:
        key = (self.instance.value, int(self.nodes.value))
        if key not in self._topos:
            self._topos[key] = topology(*key)
        return self._topos[key]

    def _sync_ranks(self, wanted: int | None = None) -> None:
        self._busy = True
        try:
            try:
                size = self._full_topology().size
            except (TopologyError, CatalogError, ValueError):
                size = self.ranks.max
            self.ranks.max = max(size, 1)
            self.ranks.min = 1
            self.ranks.value = min(size, wanted) if wanted else size
        finally:
            self._busy = False

    def _on_topology(self, _change) -> None:
        self._sync_ranks(None)
        self.update()

    def _on_change(self, _change) -> None:
        if not self._busy:
            self.update()

    def _group(self) -> Topology:
        key = (self.instance.value, int(self.nodes.value), int(self.ranks.value))
        if key not in self._groups:
            full = self._full_topology()
            self._groups[key] = full if key[2] == full.size else full.group(key[2])
        return self._groups[key]

    # ------------------------------------------------------------------ compute + draw
    def compute(self) -> CollectiveTiming:
        """The pure part: time the chosen collective (raises on a bad combination)."""
        return collective_time(self.op.value, 2 ** int(self.size_log2.value), self._group(), self.algorithm.value)

    def update(self) -> None:
        """Recompute and redraw; a bad combination is reported in the output area, not raised."""
        n = 2 ** int(self.size_log2.value)
        self.size_label.value = f"S = {n:,} bytes"
        self.error = missing_choices([self.op, self.instance, self.algorithm])
        if not self.error and int(self.ranks.value) < 2:   # 0 us at every size: an empty log-scale plot
            self.error = (f"ranks = {self.ranks.value}: one rank has no one to exchange data with, so every "
                          "collective takes 0 us; pick 2 or more ranks")
        if self.error:
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        try:
            topo = self._group()
            self.result = self.compute()
            key = (self.instance.value, self.nodes.value, self.ranks.value, self.op.value, self.algorithm.value)
            if key not in self._sweeps:
                algos = ["ring"] if self.algorithm.value == "auto" else [self.algorithm.value]  # ring: the baseline
                self._sweeps[key] = size_sweep(self.op.value, topo, SWEEP_SIZES, algos)
            sweep = self._sweeps[key]
        except (AlgorithmError, TopologyError, CatalogError, ValueError) as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot run this collective: {self.error}")
            return
        r = self.result
        self.summary = (f"{topo.describe()}\n{r.summary()}\n"
                        f"alpha (latency) share {100 * r.alpha_us / r.time_us if r.time_us else 0:.0f}%")
        fig, ax = plt.subplots(figsize=(7.5, 4.0))
        plot_time_vs_size(ax, SWEEP_SIZES, sweep, auto_regions(self.op.value, topo, SWEEP_SIZES),
                          highlight=(n, r.time_us),
                          title=f"{self.op.value} on {topo.label}: {r.time_us:,.1f} us, "
                                f"busbw {r.busbw_gbytes_per_s:,.1f} GB/s")
        show(self.out, fig, self.summary)  # savefig(bbox_inches="tight") lays the figure out

    def show(self) -> widgets.Widget:
        controls = widgets.VBox([self.op, self.size_log2, self.size_label, self.instance, self.nodes, self.ranks,
                                 self.algorithm], layout=widgets.Layout(width="270px", flex="0 0 270px"))
        return widgets.HBox([controls, self.out])


class RingStepPanel:
    """Step through a one-channel ring all-reduce on a topology (default: one rank per Trn1 chip).

    ``step`` (IntSlider, linked to the ``play`` button) picks how many rounds are done.
    Results: ``state`` (rank x chunk contribution counts), ``summary``, ``error``.
    """

    def __init__(self, topo: Topology | None = None, message_bytes: int = 16 * 2**20, interval_ms: int = 600):
        if topo is None:
            full = topology("trn1.32xlarge")
            cpc = full.spec.cores_per_chip
            topo = full.group(list(range(0, full.size, cpc)), label="trn1.32xlarge, one rank per chip")
        self.topo = topo
        self.error = ""
        self.summary = ""
        self.anim: RingAnimation | None = None
        self.state = None
        try:
            self.anim = ring_allreduce_animation(topo, message_bytes)
            rounds = self.anim.rounds
        except (AlgorithmError, ValueError) as exc:
            self.error, rounds = str(exc), 0
        # continuous_update=False: a fast drag redraws once at the end, never leaving stale text beside a new value
        self.step = widgets.IntSlider(value=0, min=0, max=rounds, description="step", continuous_update=False)
        self.play = widgets.Play(value=0, min=0, max=rounds, interval=interval_ms, description="play")
        self.link = widgets.jslink((self.play, "value"), (self.step, "value"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="330px"))
        self.step.observe(lambda _c: self.update(), names="value")
        self.update()

    def update(self) -> None:
        if self.anim is None:
            show(self.out, error=f"Cannot animate: {self.error}")
            return
        k = int(self.step.value)
        self.state = self.anim.states[k]
        self.summary = self.anim.describe(k)
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.5, 4.0), gridspec_kw={"width_ratios": [1.1, 1]})
        draw_ring_step(a1, a2, self.anim, self.topo, k)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        return widgets.VBox([widgets.HBox([self.play, self.step]), self.out])
