"""Dependency-driven list scheduler: one in-order stream per engine and per DMA queue.

An instruction starts when (1) its engine has finished the previous instruction of its own
stream, (2) every instruction in ``deps`` (RAW, WAR and WAW overlaps computed by the tracer)
has finished, (3) on NC-v2, the SBUF/PSUM port it shares with another engine is free
(N-ARCH2), and (4) if it is the first use of a tile, SBUF/PSUM has room for it at that time
(``_Capacity``). A compute instruction that waits on a dependency also pays the dependent-instruction
overhead (``cost.dependent_overhead_cycles``), as far as it is exposed: it starts when the dependency is met and
overlaps whatever else the engine runs until the instruction can start. A DMA transfer is a two-stage pipeline in its queue
(queue rule, perf_model.json ``dma_queue_assignment``: on NC-v3 and NC-v4 one queue per hardware-DGE trigger
engine, transfers alternating; on NC-v2 one queue per HBM tensor, ``_queue_key``): its fixed set-up (~1.3 us)
starts when its inputs are ready and the queue's previous set-up is done, and its data then moves,
in queue order, on the earliest-free DMA engines (one transfer per engine at a time; it may fill an
idle gap left by another queue). A queue thus issues one transfer per ``max(fixed, data)``.
An ``nki.collectives`` record runs on its own in-order "collective" stream for the time
:func:`trnsim.cluster.cost_collective` gives (trnsim.perf.collective), after its dependencies.
One pass in program order: O(n log n) at worst, O(n) in the common case.
Modelling choices and their sources: data/perf_model.json.
"""
from __future__ import annotations

import dataclasses
import gc
import heapq
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trnsim.nki.trace import Instruction, Trace
from trnsim.perf import model_data
from trnsim.perf.cost import compute_cycles, dependent_overhead_cycles, engine_clock_ghz
from trnsim.perf.collective import CollectiveCost, collective_cost
from trnsim.perf.dma import DmaParams, dma_params, dma_plan
from trnsim.perf.errors import CostModelError

ENGINE_NAMES: tuple[str, ...] = ("tensor", "vector", "scalar", "gpsimd", "dma", "sync", "collective")
_ENGINE_CODE = {name: i for i, name in enumerate(ENGINE_NAMES)}
TENSOR, VECTOR, SCALAR, GPSIMD, DMA, SYNC, COLLECTIVE = range(7)
_EPS = 1e-9


@dataclass
class Timeline:
    """When each instruction ran. Times in ns from kernel start; arrays indexed by instruction.

    For DMA instructions ``start_ns`` is when data starts moving on the first engine,
    ``dma_queue_start_ns`` when its fixed set-up began in its queue and ``issue_ns`` when its inputs
    were ready.
    """

    target: str
    engine: np.ndarray                 # int8 codes into ENGINE_NAMES
    start_ns: np.ndarray
    end_ns: np.ndarray
    issue_ns: np.ndarray               # max end time of the instruction's dependencies
    overhead_ns: np.ndarray            # dependent-instruction overhead included in the duration
    pred: np.ndarray                   # instruction that determined the start (-1: none)
    dma_queue: np.ndarray              # DMA queue index (-1 for compute)
    dma_queue_start_ns: np.ndarray     # when a transfer's fixed set-up began in its queue (0 for compute)
    dma_engines_used: np.ndarray       # engines a transfer used (0 for compute)
    dma_data_ns: np.ndarray            # data-moving time of a transfer on each of its engines
    dma_bytes_per_partition: np.ndarray
    dma_efficiency: np.ndarray         # descriptor efficiency of each transfer (0 for compute)
    dma_touches_hbm: np.ndarray        # bool
    queue_names: list[str]
    dma_engine_busy_ns: np.ndarray     # data-moving time per DMA engine
    dma_engine_count: int
    opcodes: list[str]
    undocumented: dict[str, int] = field(default_factory=dict)   # opcode -> count costed by rule of thumb
    collectives: dict[int, CollectiveCost] = field(default_factory=dict)   # instruction index -> its cost
    engine_names: tuple[str, ...] = ENGINE_NAMES
    cores: int = 1                     # physical cores the instructions ran on (2 for an LNC=2 launch)
    dma_hbm_sides: np.ndarray | None = None   # int8: HBM crossings of each transfer (2 for HBM -> HBM, 0 compute)

    def hbm_sides(self) -> np.ndarray:
        """HBM crossings of each instruction's transfer (0, 1, or 2 for an HBM -> HBM copy); a Timeline built
        without ``dma_hbm_sides`` counts one per transfer that touches HBM."""
        if self.dma_hbm_sides is not None:
            return self.dma_hbm_sides
        return self.dma_touches_hbm.astype(np.int8)

    @property
    def latency_ns(self) -> float:
        return float(self.end_ns.max()) if self.end_ns.size else 0.0

    def __len__(self) -> int:
        return int(self.end_ns.size)

    def engine_busy_ns(self) -> dict[str, float]:
        """Total occupied time per compute engine; for "dma" the mean over DMA engines; "collective" the
        time spent in nki.collectives calls."""
        dur = self.end_ns - self.start_ns
        out = {}
        for code, name in enumerate(ENGINE_NAMES[:4]):
            out[name] = float(dur[self.engine == code].sum())
        out["dma"] = float(self.dma_engine_busy_ns.sum() / max(self.dma_engine_count, 1))
        out["collective"] = float(dur[self.engine == COLLECTIVE].sum())
        return out

    def critical_path(self) -> dict[str, float]:
        """Time along the critical path (walked back through ``pred``), by engine; the DMA
        fixed latency and other exposed waits are reported as "dma_fixed" and "wait"; nki.collectives
        calls as "collective"."""
        out = {name: 0.0 for name in ENGINE_NAMES[:5]}
        out["collective"] = 0.0
        out["dma_fixed"] = 0.0
        out["wait"] = 0.0
        if not len(self):
            return out
        i = int(np.argmax(self.end_ns))
        frontier = float(self.end_ns[i])
        eng, start, end, pred, data = self.engine, self.start_ns, self.end_ns, self.pred, self.dma_data_ns
        while i >= 0:
            e = int(eng[i])
            p = int(pred[i])
            p_end = float(end[p]) if p >= 0 else 0.0
            seg = float(end[i] - data[i]) if e == DMA else float(start[i])
            seg = min(max(seg, p_end), frontier)
            out[ENGINE_NAMES[e] if (e < 5 or e == COLLECTIVE) else "wait"] += frontier - seg
            if seg > p_end:
                out["dma_fixed" if e == DMA else "wait"] += seg - p_end
            frontier = min(p_end, seg)
            i = p
        return out


def _queue_key(ins: Instruction) -> str:
    """Display name of a transfer's DMA queue: direction and HBM tensor, e.g. "load rhs", "store out#2"."""
    attrs = ins.attrs or {}
    api = str(attrs.get("api", "dma"))
    src = ins.reads[0].buffer if ins.reads else "?"
    dst = ins.writes[0].buffer if ins.writes else "?"
    if api in ("dma_copy", "dma"):          # NKI 0.6 names one API for both directions
        api = "load" if src == "hbm" and dst != "hbm" else ("store" if dst == "hbm" and src != "hbm" else api)
    hbm = [o for o in (ins.reads if api != "store" else ins.writes) if o.buffer == "hbm"] or \
          [o for o in ins.reads + ins.writes if o.buffer == "hbm"]
    if hbm:
        name = hbm[0].name or (f"out#{hbm[0].region.alloc_id}" if api == "store" else f"hbm#{hbm[0].region.alloc_id}")
        return f"{api} {name}"
    return f"{api} {src}->{dst}"


_HWDGE_QUEUE_NAMES = ("DGE 0 (SyncE/ScalarE)", "DGE 1 (SyncE/ScalarE)")
_UNNAMED_HBM = re.compile(r"\b(out|hbm)#(\d+)")


def _readable_queue_names(names: list[str]) -> list[str]:
    """Queue labels for people: an unnamed HBM tensor the kernel made (``nl.ndarray(..., buffer=nl.shared_hbm)``
    without a name) is keyed internally by its allocation id (``store out#7``, and ``load hbm#7`` when it is read
    back); it is labelled "output", numbered by first appearance (the same number for its loads and stores)
    when there are several, or "unnamed HBM tensor" if a named tensor of the kernel is called "output"."""
    ids: list[str] = []
    for name in names:
        for _kind, aid in _UNNAMED_HBM.findall(name):
            if aid not in ids:
                ids.append(aid)
    if not ids:
        return names
    named = {part.split(" ", 1)[-1] for name in names for part in _UNNAMED_HBM.sub("", name).split(" + ")}
    word = "unnamed HBM tensor" if "output" in named else "output"

    def label(m: re.Match) -> str:
        return word if len(ids) == 1 else f"{word} {ids.index(m.group(2)) + 1}"
    return [_UNNAMED_HBM.sub(label, name) for name in names]


def _hwdge_trigger_queues(core: Any) -> int:
    """DMA queues fed by hardware-DGE trigger engines on this core (0: no hardware DGE documented, the
    per-tensor queue rule applies). perf_model.json ``dma_hwdge_trigger_queues``: NC-v3 (and NC-v4) have two DGE instances,
    commanded through the SyncE or ScalarE sequencer, and a queue ID is tied to the trigger engine (N-DMA)."""
    try:
        k = model_data.per_version("dma_hwdge_trigger_queues", str(core.version))
    except KeyError:
        return 0
    k = int(k or 0)
    if k > len(_HWDGE_QUEUE_NAMES):
        raise CostModelError(f"perf_model.json dma_hwdge_trigger_queues={k} for {core.version}: the scheduler names "
                             f"at most {len(_HWDGE_QUEUE_NAMES)} DGE queues; extend _HWDGE_QUEUE_NAMES")
    return k


def _ports(core: Any) -> list[tuple[int, int, str]]:
    try:
        pairs = model_data.per_version("shared_sbuf_psum_ports", str(core.version))
    except KeyError:
        pairs = []
    return [(_ENGINE_CODE[a], _ENGINE_CODE[b], buf) for a, b, buf in pairs]


def schedule(trace: Trace, target: Any = None) -> Timeline:
    """Schedule a trace on ``target`` (name or TargetSpec; default ``trace.target``)."""
    tgt = _resolve_target(target if target is not None else trace.target)
    if len({ins.core for ins in trace.instructions}) > 1:
        return _schedule_cores(trace.instructions, tgt.core, tgt.chip, str(tgt.name), trace.allocations)
    return schedule_instructions(trace.instructions, tgt.core, tgt.chip, target_name=str(tgt.name),
                                 allocations=trace.allocations)


def _resolve_target(target: Any) -> Any:
    if isinstance(target, str):
        import trnsim

        return trnsim.target(target)
    return target


@contextmanager
def no_gc():
    """Pause Python's cyclic garbage collector. The scheduler and profile allocate many small short-lived
    tuples; with a large trace in memory the collector would rescan the whole trace again and again.
    Nothing they create forms reference cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _DmaEngine:
    """One DMA engine's busy time: ``tail`` (end of the last transfer) plus recent idle gaps that a
    later, independent transfer from another queue may fill (16 queues per engine, round robin,
    N-DMA), so a transfer waiting on its inputs does not hold up ready ones."""

    __slots__ = ("tail", "last", "gaps")
    MAX_GAPS = 8

    def __init__(self, tail: float = 0.0, last: int = -1, gaps: list | None = None):
        self.tail = tail
        self.last = last
        self.gaps: list[list] = gaps if gaps is not None else []   # [start, end, instruction ending at start]

    def copy(self) -> "_DmaEngine":
        return _DmaEngine(self.tail, self.last, [g[:] for g in self.gaps])

    def slot(self, t0: float, d: float) -> tuple[float, int, int]:
        """Earliest start >= t0 for ``d`` ns: (start, gap index or -1, instruction the start follows)."""
        for j, g in enumerate(self.gaps):
            st = g[0] if g[0] > t0 else t0
            if st + d <= g[1] + _EPS:
                return st, j, g[2]
        return (self.tail if self.tail > t0 else t0), -1, self.last

    def commit(self, st: float, d: float, j: int, idx: int, min_fill: float = _EPS) -> None:
        """Occupy [st, st + d]; idle gaps shorter than ``min_fill`` (the shortest transfer seen so far,
        which could never fit in them) are not kept."""
        f = st + d
        if j >= 0:
            gs, ge, gp = self.gaps[j]
            new = []
            keep = min_fill
            if st - gs > keep:
                new.append([gs, st, gp])
            if ge - f > keep:
                new.append([f, ge, idx])
            self.gaps[j:j + 1] = new
            if len(self.gaps) > self.MAX_GAPS:
                del self.gaps[0]
            return
        if st - self.tail > min_fill:
            self.gaps.append([self.tail, st, self.last])
            if len(self.gaps) > self.MAX_GAPS:
                del self.gaps[0]
        self.tail = f
        self.last = idx


class _Capacity:
    """On-chip capacity as a scheduling resource (SBUF bytes or PSUM bytes in whole banks, per partition).

    The tracer guarantees that the tensors live in *program order* fit. In time, a later tile's
    first use (typically its load) may run ahead of the instructions that release earlier tiles;
    this keeps such prefetching within capacity: a first use at time t waits until the tiles still
    in use at t (released in program order, but whose last use ends after t) leave room for it.

    Each in-order stream (a compute engine, a DMA queue) asks at non-decreasing times, so it keeps
    its own heap of released tiles and drops those that ended before its current time for good:
    O(log n) per tile per stream.
    """

    __slots__ = ("cap", "live", "released", "views")

    def __init__(self, cap: float):
        self.cap = float(cap)
        self.live = 0.0                 # bytes first-used and not yet released in program order
        self.released: list[tuple[float, float, int]] = []   # (end of last use, bytes, instruction)
        self.views: dict[Any, list] = {}                      # stream -> [heap, pending bytes]

    def earliest(self, stream: Any, nbytes: float, t: float) -> tuple[float, int]:
        """Earliest start >= t for ``stream`` at which ``nbytes`` more fit, and the instruction whose
        end frees the room (-1 if no wait)."""
        view = self.views.get(stream)
        if view is None:
            heap = [r for r in self.released if r[0] > t]
            heapq.heapify(heap)
            view = self.views[stream] = [heap, sum(r[1] for r in heap)]
        heap = view[0]
        pending = view[1]
        while heap and heap[0][0] <= t:
            pending -= heapq.heappop(heap)[1]
        budget = self.cap - self.live - nbytes
        t_min, p_min = t, -1
        while heap and pending > budget:
            end_j, b, j = heapq.heappop(heap)
            pending -= b
            t_min, p_min = end_j, j
        view[1] = pending
        return t_min, p_min

    def release(self, nbytes: float, end: float, idx: int) -> None:
        self.live -= nbytes
        rec = (end, nbytes, idx)
        self.released.append(rec)
        for view in self.views.values():
            heapq.heappush(view[0], rec)
            view[1] += nbytes


def _tile_groups(instructions: list[Instruction], onchip: dict) -> dict:
    """Per on-chip allocation: the byte ranges (per partition) its instructions touch, merged where they
    overlap, each with its first and last use: {alloc_id: [[byte_start, byte_stop, first, last], ...]}.

    A buffer that holds several tiles (e.g. ``nl.ndarray((64, nl.par_dim(128), 512))`` filled tile by tile)
    then frees each tile's slot after that tile's last use, as the compiler's allocator does, instead of
    holding the whole buffer until its last tile is consumed. Computed from the trace's operand regions."""
    seen: dict = {}
    for ins in instructions:
        idx = ins.index
        for o in ins.reads + ins.writes:
            r = o.region
            aid = r.alloc_id
            if aid not in onchip:
                continue
            key = (aid, r.byte_start, r.byte_stop)
            rec = seen.get(key)
            if rec is None:
                seen[key] = [idx, idx]
            else:
                rec[1] = idx
    by_alloc: dict = {}
    for (aid, b0, b1), (f, l) in seen.items():
        by_alloc.setdefault(aid, []).append([b0, b1, f, l])
    out = {}
    for aid, regs in by_alloc.items():
        regs.sort()
        merged = [regs[0][:]]
        for b0, b1, f, l in regs[1:]:
            cur = merged[-1]
            if b0 < cur[1]:                      # overlapping views of the same bytes: one group
                cur[1] = max(cur[1], b1)
                cur[2] = min(cur[2], f)
                cur[3] = max(cur[3], l)
            else:
                merged.append([b0, b1, f, l])
        out[aid] = merged
    return out


def _capacity_tables(allocations: Any, core: Any, n: int, instructions: list[Instruction] | None = None):
    """Per instruction index: the (kind, bytes) of tiles it uses first / last (None when none).

    With ``instructions``, a multi-tile buffer is split into the tile slots its instructions touch
    (``_tile_groups``), each released after its own last use."""
    if not allocations:
        return None, None, {}
    firsts: list = [None] * (n + 1)
    lasts: list = [None] * (n + 1)
    bank = float(core.psum_bank_bytes_per_partition or core.psum_bytes_per_partition)
    caps = {0: _Capacity(core.sbuf_capacity_bytes_per_partition),
            1: _Capacity(core.psum_bytes_per_partition)}
    onchip = {}
    for a in allocations:
        fu = a.first_use
        if fu < 0:
            continue
        buf = a.buffer
        if buf == "hbm" or a.is_kernel_io or a.last_use >= n:
            continue
        onchip[a.alloc_id] = a
    groups = _tile_groups(instructions, onchip) if instructions is not None else {}
    for aid, a in onchip.items():
        kind = 0 if a.buffer == "sbuf" else 1
        parts = groups.get(aid)
        if parts is None or len(parts) < 2:     # one tile: the tracer's first/last use is the authority
            parts = [[0, a.bytes_per_partition, a.first_use, a.last_use]]
        else:
            parts = [[b0, b1, max(fu, a.first_use), min(max(lu, fu), a.last_use)] for b0, b1, fu, lu in parts]
        for b0, b1, fu, lu in parts:
            b = float(b1 - b0)
            if kind == 1:
                b = bank * max(1, -(-int(b) // int(bank)))
            rec = (kind, b)
            f = firsts[fu]
            if f is None:
                firsts[fu] = [rec]
            else:
                f.append(rec)
            f = lasts[lu]
            if f is None:
                lasts[lu] = [rec]
            else:
                f.append(rec)
    return firsts, lasts, caps


def schedule_instructions(instructions: list[Instruction], core: Any, chip: Any,
                          target_name: str = "", allocations: Any = None) -> Timeline:
    """Schedule a list of instructions (index i at position i) on one core (see _schedule)."""
    with no_gc():
        return _schedule(instructions, core, chip, target_name, allocations)


def _schedule(instructions: list[Instruction], core: Any, chip: Any,
              target_name: str = "", allocations: Any = None,
              ext_ready: dict[int, tuple[float, int]] | None = None) -> Timeline:
    """Schedule a list of instructions (index i at position i) on one core. Pure, O(n log n) at worst
    (O(n) without allocations). With ``allocations`` (from the Trace), SBUF/PSUM capacity limits how
    far tiles can be prefetched (see _Capacity). ``ext_ready`` (used by :func:`_schedule_cores`) maps a
    position to (earliest start in ns, global index of the other core's instruction that sets it); such a
    start records ``pred = -2 - global index``."""
    n = len(instructions)
    for pos, ins in enumerate(instructions):
        if ins.index != pos:
            raise CostModelError(
                f"instruction at position {pos} has index {ins.index}; the scheduler needs "
                "instructions in program order with index == position (as trace_kernel produces)")

    params: DmaParams = dma_params(core, chip)
    clocks = [engine_clock_ghz(core, name) for name in ENGINE_NAMES[:4]]
    ovh_cyc = dependent_overhead_cycles(core)
    ovh_ns = [ovh_cyc / c for c in clocks]
    ports = _ports(core)
    # port table: for an engine code and buffer, the shared port id
    port_of: dict[tuple[int, str], int] = {}
    for pid, (a, b, buf) in enumerate(ports):
        port_of[(a, buf)] = pid
        port_of[(b, buf)] = pid
    port_engines = {a for a, _, _ in ports} | {b for _, b, _ in ports}
    port_free = [0.0] * len(ports)
    port_last = [-1] * len(ports)

    start = [0.0] * n
    end = [0.0] * n
    issue = [0.0] * n
    ovh = [0.0] * n
    pred = [-1] * n
    code = [0] * n
    queue = [-1] * n
    used = [0] * n
    dma_data = [0.0] * n
    dma_bpp = [0.0] * n
    dma_eff = [0.0] * n
    dma_hbm = [False] * n
    dma_sides = [0] * n
    opcodes = [""] * n
    eng_free = [0.0] * len(ENGINE_NAMES)
    eng_last = [-1] * len(ENGINE_NAMES)
    coll_costs: dict[int, CollectiveCost] = {}
    coll_cache: dict[tuple, CollectiveCost] = {}
    n_dma = params.engines
    min_data = float("inf")
    shared = _DmaEngine()
    dma_eng: list[_DmaEngine] = [shared] * n_dma      # one shared object while all engines are in step
    dma_uniform = True
    dma_busy = [0.0] * n_dma
    dma_range = range(n_dma)
    queue_ids: dict[str, int] = {}
    queue_raw: dict[tuple, int] = {}
    dma_cache: dict[tuple, Any] = {}
    uniform_busy = 0.0
    n_queues = int(model_data.value("dma_queues_per_engine"))
    queue_names: list[str] = []
    queue_setup_free: list[float] = []     # per queue: when the next transfer's set-up may begin
    queue_data_free: list[float] = []      # per queue: end of its last transfer's data (in-order)
    queue_last: list[int] = []
    queue_start = [0.0] * n
    cycle_cache: dict[tuple, float] = {}
    undocumented: dict[str, int] = {}
    fixed = params.fixed_ns
    firsts, lasts, caps = _capacity_tables(allocations, core, n, instructions)
    # queue rule (perf_model.json dma_queue_assignment): with hardware DGE, one queue per trigger engine
    n_trig = _hwdge_trigger_queues(core)
    for name in _HWDGE_QUEUE_NAMES[:n_trig]:
        queue_names.append(name)
        queue_setup_free.append(0.0)
        queue_data_free.append(0.0)
        queue_last.append(-1)
    n_trig_dma = 0

    for i, ins in enumerate(instructions):
        if lasts is not None and i:
            la = lasts[i - 1]
            if la:
                for kind, b in la:
                    caps[kind].release(b, end[i - 1], i - 1)
        e = _ENGINE_CODE.get(ins.engine)
        if e is None:
            raise CostModelError(f"instruction {i} ({ins.opcode}) has unknown engine {ins.engine!r}; "
                                 f"known engines: {ENGINE_NAMES}")
        code[i] = e
        opcodes[i] = ins.opcode
        ready = 0.0
        crit = -1
        ready_other = -1.0   # latest end among deps on other engines (tensor rule)
        for d in ins.deps:
            t = end[d]
            if t > ready:
                ready, crit = t, d
            if code[d] != e and t > ready_other:
                ready_other = t
        if ext_ready is not None:
            x = ext_ready.get(i)
            if x is not None:
                if x[0] > ready:
                    ready, crit = x[0], -2 - x[1]
                if x[0] > ready_other:
                    ready_other = x[0]
        issue[i] = ready
        fa = firsts[i] if firsts is not None else None

        if e == DMA:
            attrs = ins.attrs
            rd, wr = ins.reads, ins.writes
            if len(rd) == 1 and len(wr) == 1:        # the usual one-source, one-destination copy
                r0, w0 = rd[0], wr[0]
                rb, wb = r0.buffer, w0.buffer
                hbm_id = r0.region.alloc_id if rb == "hbm" else (w0.region.alloc_id if wb == "hbm" else None)
                hbm_read = rb == "hbm"
                sig = (r0.contiguous_bytes, rb, w0.contiguous_bytes, wb)
            else:
                sig_l = []
                hbm_id = None
                hbm_read = False
                for o in rd + wr:
                    sig_l.append(o.contiguous_bytes)
                    sig_l.append(o.buffer)
                    if o.buffer == "hbm" and hbm_id is None:
                        hbm_id = o.region.alloc_id
                        hbm_read = any(o is r for r in rd)
                sig = tuple(sig_l)
            api = attrs.get("api", "dma")
            dkey = (ins.bytes_moved, ins.partitions, attrs.get("partitions"), attrs.get("bytes_per_partition"),
                    sig, api, hbm_id)
            hit = dma_cache.get(dkey)
            if hit is None:
                plan = dma_plan(ins, params)
            if n_trig:                               # hardware DGE: alternate over the trigger engines' queues
                if hit is None:
                    hit = dma_cache[dkey] = (plan, -1)
                q = n_trig_dma % n_trig
                n_trig_dma += 1
            elif hit is None:
                # direction is part of the key: NKI 0.6's dma_copy names one API for loads and stores, and a
                # load and a store of the same HBM tensor are different streams ("load x" / "store x", _queue_key)
                qraw = (api, hbm_id, hbm_read) if hbm_id is not None else (api, None, sig)
                q = queue_raw.get(qraw)
                if q is None:
                    qk = _queue_key(ins)
                    q = queue_ids.get(qk)
                    if q is None:
                        q = len(queue_ids)
                        if q >= n_queues:            # 16 queues per engine (N-DMA): later streams share them
                            q = q % n_queues
                            queue_names[q] += f" + {qk}" if len(queue_names[q]) < 60 else ""
                        else:
                            queue_names.append(qk)
                            queue_setup_free.append(0.0)
                            queue_data_free.append(0.0)
                            queue_last.append(-1)
                        queue_ids[qk] = q
                    queue_raw[qraw] = q
                hit = dma_cache[dkey] = (plan, q)
            if not n_trig:
                plan, q = hit
            else:
                plan = hit[0]
            k = plan.engines_used
            queue[i] = q
            used[i] = k
            # stage 1: the transfer's fixed set-up, in order within its queue (perf_model.json dma_queue_occupancy)
            t0, t0_pred = ready, crit
            if queue_setup_free[q] > t0:
                t0, t0_pred = queue_setup_free[q], queue_last[q]
            if fa:
                for kind, b in fa:
                    t_k, p_k = caps[kind].earliest(("dma", q), b, t0)
                    if t_k > t0:
                        t0, t0_pred = t_k, p_k
                for kind, b in fa:
                    caps[kind].live += b
            data = plan.data_ns_per_engine
            setup_end = t0 + fixed
            queue_setup_free[q] = setup_end if setup_end > t0 + data else t0 + data
            queue_start[i] = t0
            # stage 2: the data, after the set-up and the queue's previous data, on free engines
            td = setup_end
            if queue_data_free[q] > td:
                td = queue_data_free[q]
            if data < min_data:
                min_data = data
            dma_data[i] = data
            dma_bpp[i] = plan.bytes_per_partition
            dma_eff[i] = plan.efficiency
            dma_hbm[i] = plan.touches_hbm
            dma_sides[i] = plan.hbm_sides
            if dma_uniform and k >= n_dma:
                eng0 = dma_eng[0]
                s0, j0, p0 = eng0.slot(td, data)
                eng0.commit(s0, data, j0, i, min_data)
                uniform_busy += data
                start[i] = s0
                end[i] = s0 + data
                pred[i] = t0_pred if s0 <= td + _EPS else p0
                queue_data_free[q] = s0 + data
                queue_last[q] = i
                continue
            if dma_uniform:
                dma_eng = [shared.copy() for _ in dma_range]
                dma_uniform = False
            slots = [dma_eng[de].slot(td, data) for de in dma_range]
            engines = dma_range if k >= n_dma else sorted(dma_range, key=lambda de: slots[de][0])[:k]
            s_min = float("inf")
            f_max = -1.0
            p = -1
            for de in engines:
                st, j, pj = slots[de]
                f = st + data
                if st < s_min:
                    s_min = st
                if f > f_max:
                    f_max = f
                    p = t0_pred if st <= td + _EPS else pj
                dma_eng[de].commit(st, data, j, i, min_data)
                dma_busy[de] += data
            if k >= n_dma:
                e0 = dma_eng[0]
                if not e0.gaps and all(x.tail == e0.tail and not x.gaps for x in dma_eng):
                    shared = e0
                    dma_eng = [shared] * n_dma
                    dma_uniform = True
            start[i] = s_min
            end[i] = f_max
            pred[i] = p
            queue_data_free[q] = f_max
            queue_last[q] = i
            continue

        if e == COLLECTIVE:
            a = ins.attrs or {}
            try:
                ckey = (ins.opcode, a.get("bytes_per_rank"), a.get("replica_group_size"),
                        ins.reads[0].shape if ins.reads else None)
                cc = coll_cache.get(ckey)
            except TypeError:
                ckey, cc = None, None
            if cc is None:
                cc = collective_cost(ins, target_name or str(chip.aliases[0]))
                if ckey is not None:
                    coll_cache[ckey] = cc
            coll_costs[i] = cc if cc.index == i else dataclasses.replace(cc, index=i)
            free = eng_free[e]
            s = ready if ready > free else free
            start[i] = s
            end[i] = s + cc.time_us * 1e3
            pred[i] = crit if ready > free else eng_last[e]
            if fa:
                for kind, b in fa:
                    caps[kind].live += b
            eng_free[e] = end[i]
            eng_last[e] = i
            continue

        if e == SYNC:
            free = eng_free[e]
            s = ready if ready > free else free
            start[i] = end[i] = s
            pred[i] = crit if ready > free else eng_last[e]
            if fa:
                for kind, b in fa:
                    caps[kind].live += b
            eng_free[e] = s
            eng_last[e] = i
            continue

        # compute engines
        # the cost depends on opcode, N, operand dtypes/buffers/contiguity and attrs; reads/writes of one
        # kernel line differ only in their regions, so the line plus those properties is a safe key
        # (every operand's dtype, buffer, contiguity and shape: the Vector / GpSimd performance modes depend on all of
        # them, destination included; a helper called from one line with different layouts must not share a price)
        key = (ins.source_line, ins.opcode, e, ins.free_elements, ins.partitions,
               tuple([(o.dtype, o.buffer, o.contiguous_bytes, o.shape) for o in ins.reads]),
               tuple([(o.dtype, o.buffer, o.contiguous_bytes, o.shape) for o in ins.writes]),
               tuple(ins.attrs.items()) if ins.attrs else ())
        try:
            cyc = cycle_cache.get(key)
        except TypeError:          # unhashable attribute value: price without the cache
            key, cyc = None, None
        if cyc is None:
            cc = compute_cycles(ins, core)
            cyc = cc.cycles
            if not cc.documented:
                undocumented[ins.opcode] = undocumented.get(ins.opcode, 0) + 1
            if key is not None:
                cycle_cache[key] = cyc
        elif ins.opcode in undocumented:
            undocumented[ins.opcode] += 1
        dur = cyc / clocks[e]
        free = eng_free[e]
        s = free
        p = eng_last[e]
        if ready > s:
            s, p = ready, crit
        if ports and e in port_engines:
            for o in ins.reads + ins.writes:
                pid = port_of.get((e, o.buffer))
                if pid is not None and port_free[pid] > s:
                    s, p = port_free[pid], port_last[pid]
        if fa:
            for kind, b in fa:
                t_k, p_k = caps[kind].earliest(e, b, s)
                if t_k > s:
                    s, p = t_k, p_k
            for kind, b in fa:
                caps[kind].live += b
        if ins.deps:
            # the dependency's semaphore fires at r_dep; the instruction's start-up (static overhead + SBUF/PSUM
            # access start-up, data/perf_model.json dependent_instruction_overhead) begins then, and overlaps
            # whatever else the engine runs until s: only the part after s is exposed (all of it when the engine
            # sat idle waiting, none when earlier work outlasts it)
            r_dep = ready_other if e == TENSOR else ready   # (Tensor: -1 when it waits on matmuls only: none)
            exposed = r_dep + ovh_ns[e] - s if r_dep >= 0.0 else 0.0
            if exposed > _EPS:
                if exposed > ovh_ns[e]:
                    exposed = ovh_ns[e]
                dur += exposed
                ovh[i] = exposed
        f = s + dur
        start[i] = s
        end[i] = f
        pred[i] = p
        eng_free[e] = f
        eng_last[e] = i
        if ports and e in port_engines:
            for o in ins.reads + ins.writes:
                pid = port_of.get((e, o.buffer))
                if pid is not None:
                    port_free[pid] = f
                    port_last[pid] = i

    return Timeline(
        target=target_name,
        engine=np.asarray(code, dtype=np.int8),
        start_ns=np.asarray(start, dtype=np.float64),
        end_ns=np.asarray(end, dtype=np.float64),
        issue_ns=np.asarray(issue, dtype=np.float64),
        overhead_ns=np.asarray(ovh, dtype=np.float64),
        pred=np.asarray(pred, dtype=np.int64),
        dma_queue=np.asarray(queue, dtype=np.int32),
        dma_queue_start_ns=np.asarray(queue_start, dtype=np.float64),
        dma_engines_used=np.asarray(used, dtype=np.int16),
        dma_data_ns=np.asarray(dma_data, dtype=np.float64),
        dma_bytes_per_partition=np.asarray(dma_bpp, dtype=np.float64),
        dma_efficiency=np.asarray(dma_eff, dtype=np.float64),
        dma_touches_hbm=np.asarray(dma_hbm, dtype=bool),
        dma_hbm_sides=np.asarray(dma_sides, dtype=np.int8),
        queue_names=_readable_queue_names(queue_names),
        dma_engine_busy_ns=np.asarray(dma_busy, dtype=np.float64) + uniform_busy,
        dma_engine_count=n_dma,
        opcodes=opcodes,
        undocumented=undocumented,
        collectives=coll_costs,
    )


_MAX_CORE_ROUNDS = 200


def _cross_core_inputs(instructions: list[Instruction], core_of: list[int]) -> dict[int, int]:
    """Per instruction, its sync partner on the other core (``attrs["partner"]``): a core_barrier passes when
    both cores arrived, a sendrecv receives once the other core has posted. A partner's arrival is its issue
    time (its inputs ready); the waits are mutual, so both settle on the later arrival.

    Dependencies the trace records between the cores' other instructions are not waits: they come from the
    order in which the simulator interleaved the two cores, which the hardware does not keep; only the
    synchronisation instructions order the cores."""
    out: dict[int, int] = {}
    for i, ins in enumerate(instructions):
        partner = ins.attrs.get("partner") if ins.attrs else None
        if partner is not None and core_of[partner] != core_of[i]:
            out[i] = int(partner)
    return out


def _core_local(instructions: list[Instruction], idx: list[int], where: dict[int, tuple[int, int]]) -> list:
    """One core's instructions renumbered 0..k-1 with their same-core dependencies, plus: every later
    instruction of the core that touches a core_barrier's ``data`` tensor waits for that barrier (what the
    barrier is for: the other core's writes before it are visible after it)."""
    out = []
    barrier_of: dict[int, int] = {}
    for k, g in enumerate(idx):
        ins = instructions[g]
        deps = {where[d][1] for d in ins.deps if where[d][0] == where[g][0]}
        touched = {o.region.alloc_id for o in ins.reads + ins.writes}
        for aid in touched:
            b = barrier_of.get(aid)
            if b is not None:
                deps.add(b)
        if ins.opcode == "core_barrier":
            for aid in touched:
                barrier_of[aid] = k
        out.append(dataclasses.replace(ins, index=k, deps=tuple(sorted(deps))))
    return out


def _local_allocations(allocations: Any, where: dict[int, tuple[int, int]], c: int) -> list:
    """The allocations whose first and last use are on core ``c``, renumbered to its local positions."""
    out = []
    for a in allocations or ():
        fu, lu = where.get(a.first_use), where.get(a.last_use)
        if fu is None or lu is None or fu[0] != c or lu[0] != c:
            continue
        out.append(dataclasses.replace(a, first_use=fu[1], last_use=lu[1]))
    return out


def _schedule_cores(instructions: list[Instruction], core: Any, chip: Any, target_name: str,
                    allocations: Any = None) -> Timeline:
    """Schedule an LNC=2 trace: each physical core's instructions on that core's own engines, DMA queues and
    engines and SBUF/PSUM (the single-core scheduler, once per core), with the sync partners one core waits
    for on the other (:func:`_cross_core_inputs`) as earliest starts. The cores are scheduled in turn with the other's latest
    times until no time changes (starts only move later, so this settles; at most ``_MAX_CORE_ROUNDS``
    rounds). Returns one Timeline over the global instruction indices; ``cores`` is the core count and the DMA
    queues and engines of both cores are listed side by side."""
    n = len(instructions)
    core_of = [int(ins.core) for ins in instructions]
    cores = sorted(set(core_of))
    groups = {c: [i for i in range(n) if core_of[i] == c] for c in cores}
    where = {g: (c, k) for c, idx in groups.items() for k, g in enumerate(idx)}
    local = {c: _core_local(instructions, idx, where) for c, idx in groups.items()}
    allocs = {c: _local_allocations(allocations, where, c) for c in cores}
    partner_of = _cross_core_inputs(instructions, core_of)
    start = np.zeros(n)
    end = np.zeros(n)
    issue = np.zeros(n)
    tls: dict[int, Timeline] = {}
    for _ in range(_MAX_CORE_ROUNDS):
        changed = False
        for c, idx in groups.items():
            ext = {}
            for k, g in enumerate(idx):
                j = partner_of.get(g)
                if j is not None:
                    ext[k] = (float(issue[j]), j)
            tl = _schedule(local[c], core, chip, target_name, allocs[c], ext_ready=ext)
            gi = np.asarray(idx, dtype=np.int64)
            if not changed and (np.abs(start[gi] - tl.start_ns).max(initial=0.0) > _EPS
                                or np.abs(end[gi] - tl.end_ns).max(initial=0.0) > _EPS):
                changed = True
            start[gi] = tl.start_ns
            end[gi] = tl.end_ns
            issue[gi] = tl.issue_ns
            tls[c] = tl
        if not changed:
            break
    else:
        raise CostModelError(f"the two cores' schedules did not settle in {_MAX_CORE_ROUNDS} rounds")
    return _merge_core_timelines(tls, groups, n, target_name)


def _merge_core_timelines(tls: dict[int, Timeline], groups: dict[int, list[int]], n: int,
                          target_name: str) -> Timeline:
    """One Timeline over global instruction indices from per-core Timelines (see _schedule_cores)."""
    arrays = {name: np.zeros(n, dtype=getattr(next(iter(tls.values())), name).dtype)
              for name in ("engine", "start_ns", "end_ns", "issue_ns", "overhead_ns", "pred", "dma_queue",
                           "dma_queue_start_ns", "dma_engines_used", "dma_data_ns", "dma_bytes_per_partition",
                           "dma_efficiency", "dma_touches_hbm", "dma_hbm_sides")}
    opcodes = [""] * n
    queue_names: list[str] = []
    busy = []
    engines = 0
    undocumented: dict[str, int] = {}
    collectives: dict[int, CollectiveCost] = {}
    for c, tl in sorted(tls.items()):
        gi = np.asarray(groups[c], dtype=np.int64)
        for name in arrays:
            arrays[name][gi] = getattr(tl, name)
        p = tl.pred
        arrays["pred"][gi] = np.where(p >= 0, gi[np.clip(p, 0, None)], np.where(p <= -2, -p - 2, -1))
        q = tl.dma_queue
        arrays["dma_queue"][gi] = np.where(q >= 0, q + len(queue_names), -1)
        queue_names += [f"core {c}: {name}" for name in tl.queue_names]
        busy.append(tl.dma_engine_busy_ns)
        engines += tl.dma_engine_count
        for k, g in enumerate(groups[c]):
            opcodes[g] = tl.opcodes[k]
        for op, cnt in tl.undocumented.items():
            undocumented[op] = undocumented.get(op, 0) + cnt
        for k, cc in tl.collectives.items():
            collectives[groups[c][k]] = dataclasses.replace(cc, index=groups[c][k])
    return Timeline(target=target_name, queue_names=queue_names, dma_engine_busy_ns=np.concatenate(busy),
                    dma_engine_count=engines, opcodes=opcodes, undocumented=undocumented, collectives=collectives,
                    cores=len(tls), **arrays)


__all__ = ["ENGINE_NAMES", "Timeline", "schedule", "schedule_instructions"]
