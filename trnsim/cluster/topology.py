"""Cluster topologies: which rank sits on which chip, and which links a transfer crosses.

A :class:`Topology` is a set of *ranks* (NeuronCores, or logical cores where LNC
applies) placed on chips, chips placed in instances, instances in nodes. A transfer
between two ranks follows a *route*: a tuple of directed physical links, each with a
bandwidth (GB/s = 1e9 B/s, per direction) and a step latency (us).

Shapes built from the catalog (``trnsim.instance``):

* ``single``  one chip; every transfer is chip-local (DMA through device memory).
* ``chain``   Inf1: chips in a line (no wrap-around).
* ``ring``    Inf2: chips in a ring.
* ``torus2d`` Trn1/Trn2: a 4x4 2D torus; dimension-order routing (X then Y, shortest way).
* ``ultraserver-ring`` Trn2 UltraServer: four 4x4 tori; chips with the same (x, y) form a
  ring across the instances (the Z dimension). Routing goes Z first, then X, Y.
* ``switched`` Trn3 UltraServer: each chip has one port into a non-blocking NeuronSwitch.
* ``nodes > 1``: copies of the above joined by EFA. Each node has ``efa_devices`` NICs
  (Trn2: one per chip, from ``data/collectives.json``); a chip uses NIC
  ``chip * nics // chips``; the fabric between nodes is non-blocking. For a Trn2
  UltraServer node the catalog's 3,200 Gbit/s is taken for the whole UltraServer (the docs
  list the same figure for one instance and for the UltraServer; see the catalog note).

Per-link bandwidth is the catalog's per-chip NeuronLink bandwidth divided by the
chip's ``neuronlink_links`` (the Inf2 figure's 96 GiB/s per link for 192 GiB/s per
chip is the check of that rule), applied per direction. Z links get the catalog's
inter-instance bandwidth per chip split over the chip's two Z neighbours.
Chip-local transfers use the chip's DMA bandwidth (device-memory bandwidth if the
catalog has no DMA figure). Latencies: ``data/collectives.json``. On NeuronCore-v2
(trn1, inf2) every rank also streams at most the nccom-test bus-bandwidth plateau
(52.83 GiB/s) per direction (``rank_gbytes_per_s``; a named assumption in
``data/collectives.json``). The per-direction reading of the per-chip NeuronLink
figure is the named assumption ``neuronlink_per_chip_reading``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Sequence

import numpy as np

from trnsim.catalog.validation import check_int, check_number, check_positive, check_str, is_int, type_error
from trnsim.cluster.constants import constants

LINK_KINDS = ("chip-local", "neuronlink", "neuronlink-z", "switch", "efa")
"""Link classes, fastest-latency first. A route's ``link_kind`` is its slowest link's class."""


class TopologyError(ValueError):
    """A topology request that the hardware or the catalog cannot satisfy."""


MAX_RANKS = 65_536
"""Simulator limit: ranks in one topology (every rank, link and route is built in memory)."""


# ---------------------------------------------------------------- argument checks (the public functions' boundary)

def check_topology_args(instance_name: Any, nodes: Any, lnc: Any, ranks_per_node: int | None = None) -> None:
    """Arguments of :func:`trnsim.cluster.topology` (``ranks_per_node`` once the instance is known)."""
    check_str("instance_name", instance_name, error=TopologyError, what="an instance name such as 'trn1.32xlarge'")
    check_int("nodes", nodes, error=TopologyError, min_value=1, max_value=MAX_RANKS, allow_integral_float=False,
              fix="a cluster needs a whole number of instances >= 1")
    if lnc is not None:
        check_int("lnc", lnc, error=TopologyError, min_value=1, max_value=2, allow_integral_float=False,
                  fix="Logical NeuronCore config is 1 or 2 (None for the instance default)")
    if ranks_per_node is not None and nodes * ranks_per_node > MAX_RANKS:
        raise TopologyError(
            f"nodes={nodes}: {nodes:,} x {ranks_per_node} ranks of {instance_name} = {nodes * ranks_per_node:,} ranks "
            f"exceeds the simulator limit of {MAX_RANKS:,}; use nodes <= {MAX_RANKS // ranks_per_node:,} "
            "(collective timing per node count extrapolates beyond that)")


def check_ring_args(ranks: Any, link_gbytes_per_s: Any, hop_latency_us: Any) -> None:
    """Arguments of :func:`trnsim.cluster.ring_topology`."""
    check_int("ranks", ranks, error=TopologyError, min_value=1, max_value=MAX_RANKS, allow_integral_float=False,
              fix="a ring needs a whole number of ranks >= 1")
    check_positive("link_gbytes_per_s", link_gbytes_per_s, error=TopologyError,
                   fix="a positive bandwidth in GB/s per link direction, e.g. 100")
    if hop_latency_us is not None:
        check_number("hop_latency_us", hop_latency_us, error=TopologyError, min_value=0.0,
                     fix="a step latency in microseconds (None for the documented intra-node value)")


def check_group_args(ranks: Any, size: int) -> None:
    """``Topology.group(ranks)``: a whole number of ranks, or an iterable of whole-number rank indices."""
    if isinstance(ranks, (str, bytes, bool)) or not (is_int(ranks) or hasattr(ranks, "__iter__")):
        raise type_error(TopologyError)(
            f"ranks={ranks!r}: must be a group size (an int in [1, {size}]) or a list of rank indices")
    if is_int(ranks):
        return
    members = list(ranks)
    if len(members) > MAX_RANKS:
        raise TopologyError(f"ranks: {len(members):,} members exceed the simulator limit of {MAX_RANKS:,}")
    for r in members:
        check_int("ranks[]", r, error=TopologyError, min_value=0, max_value=size - 1, allow_integral_float=False,
                  fix="rank indices of this topology")


@dataclass(frozen=True)
class Link:
    """One directed physical link. ``gbytes_per_s`` is per direction (1 GB = 1e9 bytes)."""

    index: int
    kind: str
    label: str
    gbytes_per_s: float
    latency_us: float


@dataclass(frozen=True)
class RankInfo:
    """Where one rank lives. ``chip`` is the global chip index in the whole topology."""

    rank: int
    global_rank: int
    node: int
    instance: int
    chip: int
    chip_in_instance: int
    core: int


@dataclass(frozen=True)
class _Spec:
    """Everything the fabric needs, resolved from the catalog (or given for a synthetic ring)."""

    name: str
    kind: str  # single | chain | ring | torus2d | ultraserver-ring | switched
    torus_shape: tuple[int, ...]  # per-instance chip grid (rows, cols) for tori; (n,) otherwise
    nodes: int
    instances_per_node: int
    chips_per_instance: int
    cores_per_chip: int
    lnc: int
    link_gbytes_per_s: float  # per NeuronLink per direction
    z_link_gbytes_per_s: float | None
    switch_port_gbytes_per_s: float | None
    local_gbytes_per_s: float
    efa_nics_per_node: int
    efa_nic_gbytes_per_s: float | None
    intra_latency_us: float
    inter_latency_us: float
    unidirectional: bool = False  # synthetic textbook ring: one direction only
    generation: str = ""  # NeuronCore version ("NC-v2", ...): which algorithms the runtime runs
    rank_gbytes_per_s: float | None = None  # per-rank collective streaming ceiling (None: links only)


class _Fabric:
    """Physical links and routes of a whole topology (shared by all its sub-groups)."""

    def __init__(self, spec: _Spec):
        self.spec = spec
        s = spec
        self.chips_per_node = s.instances_per_node * s.chips_per_instance
        self.n_chips = s.nodes * self.chips_per_node
        self.n_ranks = self.n_chips * s.cores_per_chip
        self.links: list[Link] = []
        self._link_ids: dict[tuple, int] = {}
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}

    # ---------------------------------------------------------------- placement
    def place(self, global_rank: int) -> tuple[int, int, int, int, int]:
        """(node, instance, chip, chip_in_instance, core) of a global rank."""
        s = self.spec
        chip, core = divmod(global_rank, s.cores_per_chip)
        node, in_node = divmod(chip, self.chips_per_node)
        inst, cii = divmod(in_node, s.chips_per_instance)
        return node, inst, chip, cii, core

    # ---------------------------------------------------------------- links
    def _link(self, key: tuple, kind: str, label: str, gbps: float, lat: float) -> int:
        idx = self._link_ids.get(key)
        if idx is None:
            idx = len(self.links)
            self.links.append(Link(idx, kind, label, gbps, lat))
            self._link_ids[key] = idx
        return idx

    def _nl(self, node: int, inst: int, a: int, b: int) -> int:
        s = self.spec
        return self._link(("nl", node, inst, a, b), "neuronlink",
                          f"node {node} inst {inst}: chip {a} -> chip {b}", s.link_gbytes_per_s, s.intra_latency_us)

    def _intra_instance_route(self, node: int, inst: int, a: int, b: int) -> list[int]:
        s = self.spec
        if a == b:
            return []
        if s.kind in ("ring", "chain"):
            n = s.chips_per_instance
            if s.kind == "chain":
                step = 1 if b > a else -1
            else:
                fwd = (b - a) % n
                step = 1 if fwd <= n - fwd else -1
            path, cur = [], a
            while cur != b:
                nxt = (cur + step) % n
                path.append(self._nl(node, inst, cur, nxt))
                cur = nxt
            return path
        if s.kind in ("torus2d", "ultraserver-ring"):
            rows, cols = s.torus_shape
            (ra, ca), (rb, cb) = divmod(a, cols), divmod(b, cols)
            path: list[int] = []
            cur_r, cur_c = ra, ca
            for dim, size, target in ((1, cols, cb), (0, rows, rb)):
                cur = cur_c if dim == 1 else cur_r
                fwd = (target - cur) % size
                step = 1 if fwd <= size - fwd else -1
                while cur != target:
                    nxt = (cur + step) % size
                    if dim == 1:
                        src, dst = cur_r * cols + cur, cur_r * cols + nxt
                        cur_c = nxt
                    else:
                        src, dst = cur * cols + cur_c, nxt * cols + cur_c
                        cur_r = nxt
                    path.append(self._nl(node, inst, src, dst))
                    cur = nxt
            return path
        raise TopologyError(f"no intra-instance route for topology kind {s.kind!r}")

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Directed links a transfer from global rank ``src`` to ``dst`` crosses (cached)."""
        key = (src, dst)
        r = self._routes.get(key)
        if r is not None:
            return r
        s = self.spec
        na, ia, ca, cia, _ = self.place(src)
        nb, ib, cb, cib, _ = self.place(dst)
        path: list[int]
        if ca == cb:
            path = [self._link(("local", ca), "chip-local", f"chip {ca} local DMA", s.local_gbytes_per_s,
                               s.intra_latency_us)]
        elif na != nb:
            chips = self.chips_per_node
            nic_a = (ca - na * chips) * s.efa_nics_per_node // chips
            nic_b = (cb - nb * chips) * s.efa_nics_per_node // chips
            assert s.efa_nic_gbytes_per_s is not None
            path = [
                self._link(("efa-out", na, nic_a), "efa", f"node {na} EFA NIC {nic_a} out",
                           s.efa_nic_gbytes_per_s, s.inter_latency_us),
                self._link(("efa-in", nb, nic_b), "efa", f"node {nb} EFA NIC {nic_b} in",
                           s.efa_nic_gbytes_per_s, s.inter_latency_us),
            ]
        elif s.kind == "switched":
            assert s.switch_port_gbytes_per_s is not None
            path = [
                self._link(("sw-up", ca), "switch", f"chip {ca} -> switch", s.switch_port_gbytes_per_s,
                           s.intra_latency_us),
                self._link(("sw-down", cb), "switch", f"switch -> chip {cb}", s.switch_port_gbytes_per_s,
                           s.intra_latency_us),
            ]
        else:
            path = []
            if ia != ib:  # UltraServer: Z ring between same-position chips first
                n_inst = s.instances_per_node
                fwd = (ib - ia) % n_inst
                step = 1 if fwd <= n_inst - fwd else -1
                cur = ia
                assert s.z_link_gbytes_per_s is not None
                while cur != ib:
                    nxt = (cur + step) % n_inst
                    path.append(self._link(("z", na, cia, cur, nxt), "neuronlink-z",
                                           f"node {na} pos {cia}: inst {cur} -> inst {nxt}",
                                           s.z_link_gbytes_per_s, s.intra_latency_us))
                    cur = nxt
            path += self._intra_instance_route(na, ib, cia, cib)
        r = tuple(path)
        self._routes[key] = r
        return r

    # ---------------------------------------------------------------- rings
    def chip_cycles(self) -> list[list[int]]:
        """Directed chip orders (within one instance, or one switched node) used by ring algorithms."""
        s = self.spec
        n = s.chips_per_instance
        if s.kind == "single":
            return [[0]]
        if s.kind in ("ring", "chain"):
            fwd = list(range(n))
            return [fwd] if s.unidirectional else [fwd, fwd[::-1]]
        if s.kind == "switched":
            return [list(range(self.chips_per_node))]
        cycles = _torus_hamiltonian_cycles(tuple(s.torus_shape), constants().torus_hamiltonian_cycles)
        out: list[list[int]] = []
        for c in cycles:
            out += [list(c), list(c[::-1])]
        return out

    def ring_orders(self) -> list[list[int]]:
        """Directed rank orders over all ranks: one per ring channel (edge-disjoint inside an instance)."""
        s = self.spec
        cycles = self.chip_cycles()
        rotations = 1
        if s.nodes > 1:
            # one ring channel per EFA NIC where possible: rotate each cycle so that the
            # node-to-node hop leaves from a different chip (and so a different NIC).
            rotations = max(1, s.efa_nics_per_node // len(cycles))
        orders = []
        for rot in range(rotations):
            for cyc in cycles:
                shift = (rot * len(cyc)) // rotations
                cyc_r = cyc[shift:] + cyc[:shift]
                order: list[int] = []
                for node in range(s.nodes):
                    if s.kind == "switched":
                        chips = [node * self.chips_per_node + c for c in cyc_r]
                    else:
                        chips = [node * self.chips_per_node + inst * s.chips_per_instance + c
                                 for inst in range(s.instances_per_node) for c in cyc_r]
                    for chip in chips:
                        order += [chip * s.cores_per_chip + k for k in range(s.cores_per_chip)]
                orders.append(order)
        return orders


@lru_cache(maxsize=None)
def _torus_hamiltonian_cycles(shape: tuple[int, ...], wanted: int) -> tuple[tuple[int, ...], ...]:
    """Edge-disjoint Hamiltonian cycles of a rows x cols torus (chip indices row-major).

    Searches for a Hamiltonian cycle whose complement (every chip keeps two unused
    links) is itself one Hamiltonian cycle, as KangaRing's two non-overlapping cycles on
    the 16-chip torus. Falls back to one boustrophedon cycle if ``wanted`` is 1 or no pair exists.
    """
    rows, cols = shape
    n = rows * cols

    def nbrs(v: int) -> list[int]:
        r, c = divmod(v, cols)
        cand = [r * cols + (c + 1) % cols, r * cols + (c - 1) % cols,
                ((r + 1) % rows) * cols + c, ((r - 1) % rows) * cols + c]
        out = []
        for w in cand:
            if w != v and w not in out:
                out.append(w)
        return out

    adj = {v: nbrs(v) for v in range(n)}

    def snake() -> tuple[int, ...]:
        order = []
        for r in range(rows):
            cs = range(cols) if r % 2 == 0 else range(cols - 1, -1, -1)
            order += [r * cols + c for c in cs]
        return tuple(order)

    if wanted < 2 or any(len(a) != 4 for a in adj.values()):
        return (snake(),)

    def complement_cycle(cyc: list[int]) -> tuple[int, ...] | None:
        used = {frozenset((cyc[i], cyc[(i + 1) % n])) for i in range(n)}
        rest = {v: [w for w in adj[v] if frozenset((v, w)) not in used] for v in range(n)}
        if any(len(r) != 2 for r in rest.values()):
            return None
        order, prev, cur = [0], None, 0
        while True:
            nxt = rest[cur][0] if rest[cur][0] != prev else rest[cur][1]
            if nxt == 0:
                break
            order.append(nxt)
            prev, cur = cur, nxt
        return tuple(order) if len(order) == n else None

    path, seen = [0], {0}

    def dfs() -> tuple[int, ...] | None:
        v = path[-1]
        if len(path) == n:
            if 0 in adj[v]:
                return complement_cycle(path)
            return None
        for w in adj[v]:
            if w not in seen:
                path.append(w)
                seen.add(w)
                got = dfs()
                if got is not None:
                    return got
                path.pop()
                seen.discard(w)
        return None

    second = dfs()
    if second is None:
        return (snake(),)
    return (tuple(path), second)


class Topology:
    """A communicator: an ordered set of ranks on a physical fabric.

    Attributes: ``name`` (instance name or a label), ``kind`` (topology shape), ``nodes``,
    ``lnc``, ``size`` (number of ranks), ``ranks`` (tuple of :class:`RankInfo`).
    Use :meth:`group` for a sub-communicator (e.g. a TP group of 8 ranks).
    """

    def __init__(self, fabric: _Fabric, members: Sequence[int] | None = None, label: str | None = None):
        self._fabric = fabric
        self._members = tuple(range(fabric.n_ranks)) if members is None else tuple(int(m) for m in members)
        s = fabric.spec
        self.name = s.name
        self.kind = s.kind
        self.nodes = s.nodes
        self.lnc = s.lnc
        self.label = label or (s.name if s.nodes == 1 else f"{s.nodes} x {s.name}")
        infos = []
        for i, g in enumerate(self._members):
            node, inst, chip, cii, core = fabric.place(g)
            infos.append(RankInfo(i, g, node, inst, chip, cii, core))
        self.ranks: tuple[RankInfo, ...] = tuple(infos)
        self._index = {g: i for i, g in enumerate(self._members)}
        self._chips = np.array([r.chip for r in infos], dtype=np.int64)
        self._orders: list[list[int]] | None = None
        self._recursive: list[int] | None = None
        self._route_cache: dict[tuple[int, int], tuple[tuple[int, ...], str, float]] = {}

    # ---------------------------------------------------------------- basics
    @property
    def size(self) -> int:
        """Number of ranks in this communicator."""
        return len(self._members)

    @property
    def spec(self) -> _Spec:
        """Resolved physical facts (read-only): ``kind``, ``torus_shape``, ``nodes``, ``instances_per_node``,
        ``chips_per_instance``, ``cores_per_chip``, ``lnc``, ``link_gbytes_per_s``, ``z_link_gbytes_per_s``,
        ``switch_port_gbytes_per_s``, ``local_gbytes_per_s``, ``efa_nics_per_node``, ``efa_nic_gbytes_per_s``,
        ``intra_latency_us``, ``inter_latency_us``."""
        return self._fabric.spec

    @property
    def links(self) -> list[Link]:
        """Physical links created so far (links are created when a route first uses them)."""
        return self._fabric.links

    def __repr__(self) -> str:
        return f"Topology({self.label!r}, kind={self.kind!r}, ranks={self.size})"

    def describe(self) -> str:
        """One paragraph: ranks, placement and link bandwidths."""
        s = self.spec
        parts = [
            f"{self.label}: {self.size} ranks ({s.cores_per_chip} per chip, LNC={s.lnc}) on "
            f"{len({r.chip for r in self.ranks})} chips, topology {s.kind}"
        ]
        if s.kind in ("chain", "ring", "torus2d", "ultraserver-ring"):
            parts.append(f"NeuronLink {s.link_gbytes_per_s:.1f} GB/s per link per direction")
        if s.z_link_gbytes_per_s:
            parts.append(f"Z links {s.z_link_gbytes_per_s:.1f} GB/s")
        if s.switch_port_gbytes_per_s:
            parts.append(f"switch port {s.switch_port_gbytes_per_s:.1f} GB/s")
        if s.nodes > 1 and s.efa_nic_gbytes_per_s:
            parts.append(f"EFA {s.efa_nics_per_node} NICs x {s.efa_nic_gbytes_per_s:.2f} GB/s per node")
        parts.append(f"step latency {s.intra_latency_us:g} us inside a node"
                     + (f", {s.inter_latency_us:g} us over EFA" if s.nodes > 1 else ""))
        return "; ".join(parts)

    # ---------------------------------------------------------------- groups
    def group(self, ranks: int | Iterable[int], label: str | None = None) -> "Topology":
        """Sub-communicator of this topology's ranks ``0..ranks-1`` (an int) or of the given ranks."""
        check_group_args(ranks, self.size)
        if isinstance(ranks, int):
            if not 1 <= ranks <= self.size:
                raise TopologyError(
                    f"group size {ranks} is outside 1..{self.size} (the ranks of {self.label}); "
                    "pick a size within the topology or add nodes"
                )
            sel = list(range(ranks))
        else:
            sel = [int(r) for r in ranks]
            if not sel or len(set(sel)) != len(sel) or min(sel) < 0 or max(sel) >= self.size:
                raise TopologyError(
                    f"group ranks {sel[:8]}{'...' if len(sel) > 8 else ''} must be distinct ranks in "
                    f"0..{self.size - 1} of {self.label}"
                )
        members = [self._members[i] for i in sel]
        return Topology(self._fabric, members, label or f"{self.label} [{len(members)} ranks]")

    # ---------------------------------------------------------------- routes and rings
    def route(self, src: int, dst: int) -> tuple[tuple[int, ...], str, float]:
        """(link indices, slowest link kind, step latency in us) for a transfer src -> dst (local ranks)."""
        key = (src, dst)
        got = self._route_cache.get(key)
        if got is None:
            links = self._fabric.route(self._members[src], self._members[dst])
            objs = [self._fabric.links[i] for i in links]
            slow = min(objs, key=lambda l: (l.gbytes_per_s, -LINK_KINDS.index(l.kind)))
            got = (links, slow.kind, max(l.latency_us for l in objs))
            self._route_cache[key] = got
        return got

    @property
    def chip_index(self) -> "np.ndarray":
        """Global chip index of every local rank (int array, for vectorised costing)."""
        return self._chips

    def chip_route(self, chip_a: int, chip_b: int) -> tuple[tuple[int, ...], str, float]:
        """(link indices, slowest link kind, step latency in us) between two global chips."""
        key = (-1 - chip_a, chip_b)
        got = self._route_cache.get(key)
        if got is None:
            cpc = self.spec.cores_per_chip
            links = self._fabric.route(chip_a * cpc, chip_b * cpc)
            objs = [self._fabric.links[i] for i in links]
            slow = min(objs, key=lambda l: (l.gbytes_per_s, -LINK_KINDS.index(l.kind)))
            got = (links, slow.kind, max(l.latency_us for l in objs))
            self._route_cache[key] = got
        return got

    def recursive_order(self) -> list[int]:
        """Rank order for recursive doubling/halving: partner ``i xor d`` is a direct neighbour.

        A 4x4 torus is a 4D hypercube once each ring of 4 is numbered in Gray code
        (0, 1, 3, 2), which is how the Neuron docs run RDH on the 16-chip torus. Position bits,
        lowest first: node, instance, chip (Gray-coded per torus dimension), core - so the
        first recursive-halving round (half the data) runs over the fastest, chip-local links
        and the slowest links (EFA) carry the smallest pieces.
        """
        s = self.spec
        gray_pos = {0: 0, 1: 1, 2: 3, 3: 2}

        def chip_code(cii: int) -> int:
            if s.kind in ("torus2d", "ultraserver-ring") and all(d in (2, 4) for d in s.torus_shape):
                rows, cols = s.torus_shape
                r, c = divmod(cii, cols)
                inv = {v: k for k, v in gray_pos.items()} if cols == 4 else {0: 0, 1: 1}
                invr = {v: k for k, v in gray_pos.items()} if rows == 4 else {0: 0, 1: 1}
                return invr[r] * cols + inv[c]
            return cii

        if self._recursive is None:
            keys = [(r.core, chip_code(r.chip_in_instance), r.instance, r.node) for r in self.ranks]
            self._recursive = sorted(range(self.size), key=lambda i: keys[i])
        return list(self._recursive)

    def ring_orders(self) -> list[list[int]]:
        """Directed ring orders (local rank indices), one per ring channel.

        Inside a torus these follow two edge-disjoint Hamiltonian cycles in both directions
        (KangaRing's two cycles); ranks on one chip are neighbours in every order. A group
        keeps the full topology's orders restricted to its ranks.
        """
        if self._orders is None:
            orders: list[list[int]] = []
            seen: set[tuple[int, ...]] = set()
            for order in self._fabric.ring_orders():
                local = tuple(self._index[g] for g in order if g in self._index)
                if local not in seen:
                    seen.add(local)
                    orders.append(list(local))
            self._orders = orders
        return [list(o) for o in self._orders]

    def hierarchy(self) -> list[list[int]] | None:
        """Ranks grouped by node (or by instance inside one Trn2 UltraServer) for hierarchical algorithms.

        None when all ranks share one node (and one instance). Groups list local ranks in rank order.
        """
        s = self.spec
        if len({r.node for r in self.ranks}) > 1:
            key = [r.node for r in self.ranks]
        elif s.kind == "ultraserver-ring" and len({r.instance for r in self.ranks}) > 1:
            key = [r.instance for r in self.ranks]
        else:
            return None
        groups: dict[int, list[int]] = {}
        for i, k in enumerate(key):
            groups.setdefault(k, []).append(i)
        return [groups[k] for k in sorted(groups)]


# -------------------------------------------------------------------- constructors


def topology(instance_name: str, nodes: int = 1, lnc: int | None = None) -> Topology:
    """Build the topology of ``nodes`` instances of ``instance_name`` (catalog name).

    Ranks are NeuronCores; with LNC (Trn2/Trn3) they are logical cores (LNC=2 groups two
    physical cores). ``lnc=None`` uses the catalog default (physical / logical cores).
    Multi-node clusters are joined by EFA. Raises :class:`TopologyError` with the rule
    broken and the fix.
    """
    check_topology_args(instance_name, nodes, lnc)
    from trnsim.catalog import chip as _chip
    from trnsim.catalog import instance as _instance

    inst = _instance(instance_name)
    ch = _chip(inst.chip)
    c = constants()
    if not isinstance(nodes, int) or nodes < 1:
        raise TopologyError(f"nodes={nodes!r}: a cluster needs a whole number of instances >= 1")
    default_lnc = max(1, inst.neuroncores // inst.logical_neuroncores)
    check_topology_args(instance_name, nodes, lnc, inst.neuroncores // (lnc or default_lnc))
    if lnc is None:
        lnc = default_lnc
    supports_lnc = ch.neuroncore_version in ("NC-v3", "NC-v4")
    if lnc not in (1, 2) or (lnc == 2 and not supports_lnc):
        raise TopologyError(
            f"lnc={lnc!r} is not valid for {inst.name} ({ch.display_name}, {ch.neuroncore_version}): "
            "Logical NeuronCore config is 1 or 2, and LNC=2 exists only on Trainium2/Trainium3; "
            f"use lnc=1{' or 2' if supports_lnc else ''} (or None for the default {default_lnc})"
        )
    cores_per_chip = ch.neuroncores // lnc

    kind = inst.topology
    shape = tuple(inst.topology_shape)
    instances_per_node, chips_per_instance, torus_shape = 1, inst.chips, shape
    z_gbps = None
    switch_gbps = None
    if kind == "ultraserver-ring":
        torus_shape = shape[-2:]
        chips_per_instance = torus_shape[0] * torus_shape[1]
        instances_per_node = inst.chips // chips_per_instance
        if inst.inter_instance_neuronlink_gbytes_per_s_per_chip is None:
            raise TopologyError(f"{inst.name}: the catalog has no inter-instance NeuronLink bandwidth")
        z_gbps = inst.inter_instance_neuronlink_gbytes_per_s_per_chip / 2  # two Z neighbours per chip
    elif kind == "switched":
        instances_per_node = shape[0] if len(shape) == 2 else 1
        chips_per_instance = inst.chips // instances_per_node
        switch_gbps = inst.neuronlink_gbytes_per_s_per_chip
    link_gbps = 0.0
    if kind in ("chain", "ring", "torus2d", "ultraserver-ring"):
        if not inst.neuronlink_gbytes_per_s_per_chip or not ch.neuronlink_links:
            raise TopologyError(f"{inst.name}: the catalog has no NeuronLink bandwidth for topology {kind!r}")
        link_gbps = inst.neuronlink_gbytes_per_s_per_chip / ch.neuronlink_links
    local_gbps = ch.dma_gbytes_per_s or ch.hbm_gbytes_per_s

    nics = 1
    nic_gbps = None
    if nodes > 1:
        if not inst.efa_gbits_per_s:
            raise TopologyError(
                f"{inst.name} has no EFA bandwidth in the catalog, so it cannot form a {nodes}-node "
                "cluster; use nodes=1 or an EFA instance (trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge, ...)"
            )
        if inst.efa_devices:
            nics = inst.efa_devices
        elif ch.neuroncore_version == "NC-v3":
            nics = c.trn2_efa_nics_per_instance * max(1, inst.chips // 16)
        else:
            nics = 1
        nic_gbps = inst.efa_gbits_per_s / 8.0 / nics

    spec = _Spec(
        name=inst.name, kind=kind, torus_shape=tuple(torus_shape), nodes=nodes,
        instances_per_node=instances_per_node, chips_per_instance=chips_per_instance,
        cores_per_chip=cores_per_chip, lnc=lnc, link_gbytes_per_s=link_gbps,
        z_link_gbytes_per_s=z_gbps, switch_port_gbytes_per_s=switch_gbps, local_gbytes_per_s=local_gbps,
        efa_nics_per_node=nics, efa_nic_gbytes_per_s=nic_gbps,
        intra_latency_us=c.intra_node_hop_latency_us, inter_latency_us=c.inter_node_hop_latency_us,
        generation=ch.neuroncore_version,
        rank_gbytes_per_s=(c.rank_bus_gbytes_per_s if ch.neuroncore_version in c.rank_bus_ceiling_generations
                           else None),
    )
    return Topology(_Fabric(spec))


def ring_topology(ranks: int, link_gbytes_per_s: float, hop_latency_us: float | None = None) -> Topology:
    """A synthetic one-direction ring of ``ranks`` single-core chips (exercises, textbook checks).

    Ring algorithms use the one direction only, as in the textbook formula
    2(p-1)*alpha + 2(p-1)/p * n/B. Each directed link carries ``link_gbytes_per_s``; the step latency defaults to the
    documented intra-node hop latency.
    """
    check_ring_args(ranks, link_gbytes_per_s, hop_latency_us)
    if not isinstance(ranks, int) or ranks < 1:
        raise TopologyError(f"ranks={ranks!r}: a ring needs a whole number of ranks >= 1")
    if not link_gbytes_per_s or link_gbytes_per_s <= 0:
        raise TopologyError(f"link_gbytes_per_s={link_gbytes_per_s!r} must be a positive bandwidth in GB/s")
    lat = constants().intra_node_hop_latency_us if hop_latency_us is None else float(hop_latency_us)
    if lat < 0:
        raise TopologyError(f"hop_latency_us={hop_latency_us!r} must be >= 0")
    spec = _Spec(
        name=f"ring-{ranks}", kind="ring" if ranks > 1 else "single", torus_shape=(ranks,), nodes=1,
        instances_per_node=1, chips_per_instance=ranks, cores_per_chip=1, lnc=1,
        link_gbytes_per_s=float(link_gbytes_per_s), z_link_gbytes_per_s=None, switch_port_gbytes_per_s=None,
        local_gbytes_per_s=float(link_gbytes_per_s), efa_nics_per_node=1, efa_nic_gbytes_per_s=None,
        intra_latency_us=lat, inter_latency_us=lat, unidirectional=True,
    )
    return Topology(_Fabric(spec), label=f"synthetic ring of {ranks} ranks at {link_gbytes_per_s:g} GB/s")
