"""Collectives: functional execution on per-rank numpy arrays, and alpha-beta timing.

Cost model (Neuron collectives docs: "time = step latency + transfer"): a schedule runs
round by round; all transfers of a round start together and the round ends when the
busiest link has drained. For a round::

    t_round = alpha + max over links l of (bytes routed over l) / bandwidth(l)

with alpha the step latency of the slowest link class any transfer of the round uses
(1.5 us inside a node, 15 us over EFA; ``data/collectives.json``). Summing over rounds
reproduces the textbook alpha-beta formulas on a ring (e.g. ring all-reduce
2(p-1)*alpha + 2(p-1)/p * n/B) and adds link congestion wherever an algorithm's
transfers share links (mesh on a torus, several rings through one EFA NIC).
Reduction arithmetic is not timed (gamma = 0): no sourced reduction rate exists for the
collective engines, and the Neuron model has only latency and transfer terms.

Bandwidth figures follow NCCL-tests (doc/PERFORMANCE.md): algbw = S / t and
busbw = algbw x factor, factor 2(p-1)/p for all-reduce, (p-1)/p for all-gather,
reduce-scatter and all-to-all, 1 for permute. S is the per-rank buffer for all-reduce,
all-to-all and permute, and the total (gathered / scattered) size for all-gather and
reduce-scatter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from trnsim.cluster import algorithms as A
from trnsim.cluster.algorithms import OPS, AlgorithmError, Phase, Transfer
from trnsim.cluster.checks import check_bus_factor_args, check_pairs, check_run_args, check_timing_args
from trnsim.cluster.constants import constants, generation_algorithms
from trnsim.cluster.topology import Topology

ALGORITHMS = ("ring", "recursive_doubling", "recursive_halving_doubling", "mesh", "hierarchical", "auto")
SUPPORTED: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "recursive_doubling", "recursive_halving_doubling", "mesh", "hierarchical"),
    "reduce_scatter": ("ring", "recursive_halving_doubling", "mesh", "hierarchical"),
    "all_gather": ("ring", "recursive_doubling", "mesh", "hierarchical"),
    "all_to_all": ("ring", "mesh"),
    "permute": ("ring",),
}
_ALIASES = {
    ("reduce_scatter", "recursive_doubling"): "recursive_halving_doubling",
    ("all_gather", "recursive_halving_doubling"): "recursive_doubling",
}
REDUCE_OPS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "avg": np.add}


@dataclass(frozen=True)
class Step:
    """One point-to-point transfer of a functional run.

    ``bytes`` moved from rank ``src`` to rank ``dst`` in round ``round`` (0-based, across the
    whole collective) of phase ``phase``; ``link_kind`` is the slowest link class on the route.
    """

    src: int
    dst: int
    bytes: int
    link_kind: str
    phase: str
    round: int
    dst_offset: int = 0  # first element written in dst's buffer


@dataclass(frozen=True)
class PhaseTiming:
    """Time of one phase: ``rounds`` rounds, each alpha + the busiest link's drain time."""

    name: str
    rounds: int
    alpha_us: float
    beta_us: float
    bytes_per_round: int
    link_kind: str

    @property
    def time_us(self) -> float:
        return self.alpha_us + self.beta_us


@dataclass(frozen=True)
class CollectiveTiming:
    """Timing-only answer. ``steps`` counts rounds; alpha/beta split the time (us)."""

    op: str
    algorithm: str
    ranks: int
    message_bytes: int
    time_us: float
    alpha_us: float
    beta_us: float
    steps: int
    algbw_gbytes_per_s: float
    busbw_gbytes_per_s: float
    phases: tuple[PhaseTiming, ...]

    def summary(self) -> str:
        return (f"{self.op} of {_fmt_bytes(self.message_bytes)} over {self.ranks} ranks, {self.algorithm}: "
                f"{self.time_us:,.1f} us ({self.steps} steps; latency {self.alpha_us:,.1f} us + "
                f"transfer {self.beta_us:,.1f} us), algbw {self.algbw_gbytes_per_s:,.1f} GB/s, "
                f"busbw {self.busbw_gbytes_per_s:,.1f} GB/s")


@dataclass(frozen=True)
class CollectiveResult:
    """Functional answer: per-rank ``outputs``, every transfer in ``steps``, and the timing."""

    op: str
    algorithm: str
    outputs: list[np.ndarray]
    steps: list[Step]
    time_us: float
    alpha_us: float
    beta_us: float
    rounds: int
    message_bytes: int
    algbw_gbytes_per_s: float
    busbw_gbytes_per_s: float
    round_times_us: tuple[float, ...]
    snapshots: tuple[np.ndarray, ...] | None = None

    def summary(self) -> str:
        return (f"{self.op} of {_fmt_bytes(self.message_bytes)} over {len(self.outputs)} ranks, "
                f"{self.algorithm}: {self.time_us:,.1f} us in {self.rounds} rounds, {len(self.steps)} transfers, "
                f"busbw {self.busbw_gbytes_per_s:,.1f} GB/s")


def _fmt_bytes(n: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:.4g} {unit}"
    return f"{int(n)} B"


def bus_factor(op: str, ranks: int) -> float:
    """NCCL-tests busbw factor for ``op`` over ``ranks`` ranks."""
    check_bus_factor_args(op, ranks)
    p = ranks
    if op == "all_reduce":
        return 2.0 * (p - 1) / p
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (p - 1) / p
    if op == "permute":
        return 1.0
    raise _op_error(op)


def _op_error(op: str) -> ValueError:
    return ValueError(f"unknown collective {op!r}; choose one of {', '.join(OPS)}")


# ------------------------------------------------------------------ algorithm choice


def runs_on(algorithm: str, topo: Topology) -> bool:
    """True when the Neuron runtime of ``topo``'s generation runs ``algorithm`` by itself for this group.

    From ``data/collectives.json`` ``generation_algorithms``: trn1/inf2 (NC-v2) run a ring,
    and the all-to-all (mesh) pattern only for exactly 16 ranks (Neuron 2.12 release notes);
    Trn2 runs Mesh, RDH and KangaRing. Hierarchical applies whenever ranks span nodes.
    """
    if algorithm in ("hierarchical", "auto"):
        return True
    gen = getattr(topo.spec, "generation", "") or ""
    table = generation_algorithms(gen)
    rule = table.get(algorithm, "any" if not gen else [])
    if rule == "any":
        return True
    return topo.size in rule


def choose_algorithm(op: str, message_bytes: int, topo: Topology) -> str:
    """The automatic choice the runtime makes (Neuron intra/inter-node collectives docs, release notes).

    Several nodes (or the instances of a Trn2 UltraServer) with equal ranks each:
    hierarchical. Inside one node on Trn2: mesh below ``mesh_max_bytes`` (1 MB), recursive
    doubling/halving up to ``rdh_max_bytes`` (56 MB), ring above (KangaRing: the ring
    runs over two edge-disjoint Hamiltonian cycles in both directions). Recursive
    algorithms fall back to ring when they need a power-of-two group and do not have one.
    On trn1/inf2 (NC-v2) only the algorithms :func:`runs_on` allows are chosen: a ring,
    except mesh for small messages on exactly 16 ranks. All-to-all uses mesh and permute
    uses ring.
    """
    check_timing_args(op, message_bytes, topo, "auto", None)
    if op not in OPS:
        raise _op_error(op)
    if op == "permute":
        return "ring"
    if op == "all_to_all":
        return "mesh"
    c = constants()
    h = topo.hierarchy()
    if h is not None and len({len(g) for g in h}) == 1 and len(h[0]) > 1:
        return "hierarchical"
    if message_bytes < c.mesh_max_bytes and runs_on("mesh", topo):
        return "mesh"
    if message_bytes < c.rdh_max_bytes:
        rec = "recursive_halving_doubling" if op != "all_gather" else "recursive_doubling"
        if (op == "all_reduce" or A.is_pow2(topo.size)) and runs_on(rec, topo):
            return rec
    return "ring"


def _resolve(op: str, algorithm: str, message_bytes: int, topo: Topology) -> str:
    if op not in OPS:
        raise _op_error(op)
    if algorithm == "auto":
        return choose_algorithm(op, message_bytes, topo)
    algorithm = _ALIASES.get((op, algorithm), algorithm)
    if algorithm not in SUPPORTED[op]:
        raise AlgorithmError(
            f"algorithm {algorithm!r} is not available for {op}; choose one of "
            f"{', '.join(SUPPORTED[op] + ('auto',))}"
            + (" (permute is ring-only: neighbours must be physically connected)" if op == "permute" else "")
        )
    return algorithm


# ------------------------------------------------------------------ schedules


def _flat_allreduce(algo: str, orders, group: list[int], region: A.Segment,
                    rec_group: list[int] | None = None) -> list[Phase]:
    if algo == "ring":
        return A.ring_all_reduce(orders, group, region)
    if algo == "recursive_doubling":
        return A.doubling_all_reduce(rec_group or group, region)
    if algo == "recursive_halving_doubling":
        return A.rdh_all_reduce(rec_group or group, region)
    if algo == "mesh":
        return A.mesh_all_reduce(group, region)
    raise AlgorithmError(f"no flat all-reduce algorithm {algo!r}")


def _stage_algo(requested: str, stage_bytes: int, p: int, op: str, topo: Topology | None = None) -> str:
    if requested != "auto":
        return requested
    c = constants()
    gen = getattr(topo.spec, "generation", "") if topo is not None else ""
    table = generation_algorithms(gen) if gen else {}

    def ok(algo: str) -> bool:
        rule = table.get(algo, "any") if gen else "any"
        return rule == "any" or p in rule
    if stage_bytes < c.mesh_max_bytes and ok("mesh"):
        return "mesh"
    if stage_bytes < c.rdh_max_bytes and (op == "all_reduce" or A.is_pow2(p)) and ok("recursive_halving_doubling"):
        return "recursive_halving_doubling"
    return "ring"


def _rec_sorted(group, segs, rec_pos):
    perm = sorted(range(len(group)), key=lambda y: rec_pos.get(group[y], y))
    return [group[y] for y in perm], [segs[y] for y in perm]


def _rs(algo: str, orders, group, segs, name, rec_pos=None) -> list[Phase]:
    if algo == "ring":
        return A.ring_reduce_scatter(orders, group, segs, name + " (ring)")
    if algo == "mesh":
        return A.mesh_reduce_scatter(group, segs, name + " (mesh)")
    g2, s2 = _rec_sorted(group, segs, rec_pos or {})
    return A.halving_reduce_scatter(g2, s2, name + " (recursive halving)")


def _ag(algo: str, orders, group, segs, name, rec_pos=None) -> list[Phase]:
    if algo == "ring":
        return A.ring_all_gather(orders, group, segs, name + " (ring)")
    if algo == "mesh":
        return A.mesh_all_gather(group, segs, name + " (mesh)")
    g2, s2 = _rec_sorted(group, segs, rec_pos or {})
    return A.doubling_all_gather(g2, s2, name + " (recursive doubling)")


def _restricted_orders(orders: list[list[int]], members: Sequence[int]) -> list[list[int]]:
    """Ring orders restricted to ``members``; rotations of one ring count once (same links, same load)."""
    keep = set(members)
    out: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for o in orders:
        r = [x for x in o if x in keep]
        if not r:
            continue
        k = r.index(min(r))
        canon = tuple(r[k:] + r[:k])
        if canon not in seen:
            seen.add(canon)
            out.append(list(canon))
    return out


def _same_layout(topo: Topology, h: list[list[int]]) -> bool:
    """True when every node group has the same local placement (instance, chip, core) in the same order."""
    def layout(g: list[int]) -> list[tuple[int, int, int]]:
        base_inst = min(topo.ranks[r].instance for r in g)
        return [(topo.ranks[r].instance - base_inst, topo.ranks[r].chip_in_instance, topo.ranks[r].core) for r in g]
    first = layout(h[0])
    return all(layout(g) == first for g in h[1:])


def _hierarchy(topo: Topology) -> list[list[int]]:
    h = topo.hierarchy()
    if h is None or len(h) < 2:
        raise AlgorithmError(
            f"hierarchical needs ranks on at least two nodes (or two instances of a Trn2 UltraServer); "
            f"{topo.label} has one; use 'ring', 'mesh' or a recursive algorithm, or nodes >= 2"
        )
    sizes = {len(g) for g in h}
    if len(sizes) != 1:
        raise AlgorithmError(
            f"hierarchical needs the same number of ranks on every node; {topo.label} has {sorted(sizes)}; "
            "make the group a whole number of ranks per node, or use 'ring'"
        )
    return h


def schedule(op: str, topo: Topology, algorithm: str, n: int, *, itemsize: int = 1,
             pairs: Sequence[tuple[int, int]] | None = None,
             intra_algorithm: str = "auto", inter_algorithm: str = "ring",
             ring_channels: int | None = None, representative: bool = False) -> list[Phase]:
    """Phases of ``op`` with ``algorithm`` (already resolved, not 'auto') on ``n`` elements per rank.

    ``n`` is the per-rank buffer length of all-reduce / reduce-scatter / all-to-all /
    permute inputs and the per-rank *input* length of all-gather. Buffers: all-reduce and
    reduce-scatter length n; all-gather p*n; all-to-all and permute 2n (send | receive).

    ``representative=True`` (timing only) builds the intra-node stages of a hierarchical
    algorithm for the first node alone when every node holds the same local layout: those
    stages use disjoint links in every node, so each round's cost is the same. Transfers
    of the other nodes are then missing from the phases, so never execute such a schedule.
    """
    p = topo.size
    group = list(range(p))
    orders = topo.ring_orders()
    if ring_channels is not None:
        if not isinstance(ring_channels, int) or not 1 <= ring_channels <= len(orders):
            raise AlgorithmError(f"ring_channels={ring_channels!r}: {topo.label} has {len(orders)} ring "
                                 f"channels; pick 1..{len(orders)} (or None for all)")
        orders = orders[:ring_channels]
    region: A.Segment = [(0, n)]
    for label, val, allowed in (("intra_algorithm", intra_algorithm, ("auto", "ring", "mesh", "recursive_halving_doubling")),
                                ("inter_algorithm", inter_algorithm, ("auto", "ring", "recursive_doubling",
                                                                      "recursive_halving_doubling", "mesh"))):
        if val not in allowed:
            raise AlgorithmError(f"{label}={val!r} is not a hierarchical stage algorithm; choose one of {allowed}")
    if inter_algorithm == "auto":
        inter_algorithm = "ring"

    def intra_groups(h: list[list[int]]) -> list[list[int]]:
        return h[:1] if representative and _same_layout(topo, h) else h
    rec = topo.recursive_order()
    rec_pos = {r: i for i, r in enumerate(rec)}
    if op == "all_reduce":
        if algorithm != "hierarchical":
            return _flat_allreduce(algorithm, orders, group, region, rec)
        h = _hierarchy(topo)
        X, Y = len(h), len(h[0])
        segs = A.split_segment(region, Y)
        intra = _stage_algo(intra_algorithm, n * itemsize, Y, "reduce_scatter", topo)
        rs = A.parallel([_rs(intra, _restricted_orders(orders, g), g, segs, "intra-node reduce-scatter", rec_pos)
                         for g in intra_groups(h)])
        inter_groups = [[h[x][y] for x in range(X)] for y in range(Y)]
        inter = A.parallel([
            _flat_allreduce(inter_algorithm, [ig, ig[::-1]] if X > 2 else [ig], ig, segs[y])
            for y, ig in enumerate(inter_groups)
        ])
        inter = [Phase("inter-node " + ph.name, ph.repeat, ph.build, ph.pattern) for ph in inter]
        ag = A.parallel([_ag(intra, _restricted_orders(orders, g), g, segs, "intra-node all-gather", rec_pos)
                         for g in intra_groups(h)])
        return rs + inter + ag
    if op == "reduce_scatter":
        segs_p = A.split_segment(region, p)
        if algorithm == "ring":
            return A.ring_reduce_scatter(orders, group, segs_p)
        if algorithm == "mesh":
            return A.mesh_reduce_scatter(group, segs_p)
        if algorithm == "recursive_halving_doubling":
            return A.halving_reduce_scatter(rec, [segs_p[r] for r in rec])
        h = _hierarchy(topo)
        X, Y = len(h), len(h[0])
        intra = _stage_algo(intra_algorithm, n * itemsize, Y, "reduce_scatter", topo)
        intra_segs = [[iv for x in range(X) for iv in segs_p[h[x][y]]] for y in range(Y)]
        rs1 = A.parallel([_rs(intra, _restricted_orders(orders, g), g, intra_segs, "intra-node reduce-scatter", rec_pos)
                          for g in intra_groups(h)])
        inter_groups = [[h[x][y] for x in range(X)] for y in range(Y)]
        inter_rs = {"recursive_doubling": "recursive_halving_doubling"}.get(inter_algorithm, inter_algorithm)
        rs2 = A.parallel([_rs(inter_rs,
                              [ig, ig[::-1]] if X > 2 else [ig], ig,
                              [segs_p[r] for r in ig], "inter-node reduce-scatter") for ig in inter_groups])
        return rs1 + rs2
    if op == "all_gather":
        segs_p: list[A.Segment] = [[(j * n, (j + 1) * n)] for j in range(p)]
        if algorithm == "ring":
            return A.ring_all_gather(orders, group, segs_p)
        if algorithm == "mesh":
            return A.mesh_all_gather(group, segs_p)
        if algorithm == "recursive_doubling":
            return A.doubling_all_gather(rec, [segs_p[r] for r in rec])
        h = _hierarchy(topo)
        X, Y = len(h), len(h[0])
        inter_groups = [[h[x][y] for x in range(X)] for y in range(Y)]
        ag1 = A.parallel([_ag(inter_algorithm,
                              [ig, ig[::-1]] if X > 2 else [ig], ig,
                              [segs_p[r] for r in ig], "inter-node all-gather") for ig in inter_groups])
        intra = _stage_algo(intra_algorithm, p * n * itemsize, Y, "all_gather", topo)
        intra_segs = [[iv for x in range(X) for iv in segs_p[h[x][y]]] for y in range(Y)]
        ag2 = A.parallel([_ag(intra, _restricted_orders(orders, g), g, intra_segs, "intra-node all-gather", rec_pos)
                          for g in intra_groups(h)])
        return ag1 + ag2
    if op == "all_to_all":
        if n % p:
            raise AlgorithmError(
                f"all_to_all splits each rank's buffer into {p} equal blocks, but {n} elements is not a "
                f"multiple of {p}; pad the arrays to a multiple of {p}"
            )
        blocks = A.split_interval(0, n, p)
        if algorithm == "mesh":
            return A.mesh_all_to_all(group, blocks, n)
        return A.shift_all_to_all(group, blocks, n)
    if op == "permute":
        if pairs is None:
            pairs = [(s, d) for s, d in permute_pairs(topo) if s != d]
        return A.neighbour_permute(list(pairs), n)
    raise _op_error(op)


def permute_pairs(topo: Topology, shift: int = 1) -> list[tuple[int, int]]:
    """(src, dst) pairs of a ring shift by ``shift`` positions along the first ring order."""
    order = topo.ring_orders()[0]
    p = len(order)
    return [(order[i], order[(i + shift) % p]) for i in range(p)]


# ------------------------------------------------------------------ cost model


def round_cost(topo: Topology, transfers: Sequence[Transfer], itemsize: int) -> tuple[float, float, str]:
    """(alpha_us, beta_us, slowest link kind) of one round of simultaneous transfers."""
    if not transfers:
        return 0.0, 0.0, ""
    arr = np.array([(t.src, t.dst, t.hi - t.lo) for t in transfers], dtype=np.int64)
    return pattern_cost(topo, arr[:, 0], arr[:, 1], arr[:, 2] * itemsize)


def pattern_cost(topo: Topology, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> tuple[float, float, str]:
    """Cost of one round given arrays of (src rank, dst rank, bytes).

    Bytes are first summed per (source chip, destination chip) pair (routes depend on
    chips only), then routed; each link's load / bandwidth gives its drain time and the
    round takes alpha (slowest latency class used) + the longest drain time.
    """
    if len(src) == 0:
        return 0.0, 0.0, ""
    chips = topo.chip_index
    ca, cb = chips[src], chips[dst]
    n_chips = int(chips.max()) + 1 if len(chips) else 1
    key = ca * n_chips + cb
    w = nbytes.astype(np.float64)
    if n_chips * n_chips <= _DENSE_PAIR_LIMIT:       # dense per-pair sums: no sort
        present = np.flatnonzero(np.bincount(key, minlength=n_chips * n_chips))
        per_pair = np.bincount(key, weights=w, minlength=n_chips * n_chips)[present]
    else:
        present, inv = np.unique(key, return_inverse=True)
        per_pair = np.bincount(inv, weights=w)
    plan = _route_plan(topo, present, n_chips)
    links = topo.links
    # a link's load: the bytes of every chip pair routed over it, summed in pair order
    loads = np.bincount(plan.entry_link, weights=per_pair[plan.entry_pair], minlength=len(links))
    beta, kind = 0.0, ""
    if len(plan.link_order):
        used = plan.link_order                       # links in order of first use
        tt = loads[used] / plan.link_gbytes_per_s * 1e-3   # bytes / (GB/s) = ns; * 1e-3 -> us
        beta = float(tt.max())
        # slowest drain; on a tie the lowest-bandwidth link, then the first used, names the kind
        ties = np.flatnonzero(tt == beta)
        pick = ties[np.argmin(plan.link_gbytes_per_s[ties])]
        kind = links[int(used[pick])].kind
    ceiling = getattr(topo.spec, "rank_gbytes_per_s", None)
    if ceiling:
        # per-rank streaming ceiling (nccom-test busbw plateau): busiest sender or receiver
        per_rank = max(float(np.bincount(src, weights=w).max()), float(np.bincount(dst, weights=w).max()))
        tt_rank = per_rank / ceiling * 1e-3
        if tt_rank > beta:
            beta, kind = tt_rank, "rank-ceiling"
    return plan.alpha_us, beta, kind


_DENSE_PAIR_LIMIT = 1 << 22      # chip-pair tables up to 4M entries (32 MB of float64) are summed densely
_ROUTE_PLANS_PER_TOPOLOGY = 64


@dataclass(frozen=True)
class _RoutePlan:
    """Routes of one set of communicating chip pairs, flattened for vectorised link loads.

    ``entry_pair[i]`` (index into the pair list) crosses link ``entry_link[i]``; entries are in pair order,
    then path order. ``link_order`` lists the links used, in order of first use, with their bandwidths;
    ``alpha_us`` is the largest route latency of the pairs."""

    entry_pair: np.ndarray
    entry_link: np.ndarray
    link_order: np.ndarray
    link_gbytes_per_s: np.ndarray
    alpha_us: float


def _route_plan(topo: Topology, pairs: np.ndarray, n_chips: int) -> _RoutePlan:
    """Route every (source chip, destination chip) pair of ``pairs`` (keys ``a * n_chips + b``, sorted) once per
    topology: a size sweep costs the same communication pattern at many sizes."""
    cache = topo.__dict__.setdefault("_route_plans", {})
    fingerprint = pairs.astype(np.int64, copy=False).tobytes()
    plan = cache.get(fingerprint)
    if plan is not None:
        return plan
    entry_pair: list[int] = []
    entry_link: list[int] = []
    first_use: dict[int, None] = {}
    alpha = 0.0
    for i, k in enumerate(pairs.tolist()):
        a_chip, b_chip = divmod(k, n_chips)
        path, _, lat = topo.chip_route(a_chip, b_chip)
        for l in path:
            entry_pair.append(i)
            entry_link.append(l)
            first_use[l] = None
        if lat > alpha:
            alpha = lat
    order = np.fromiter(first_use, dtype=np.int64, count=len(first_use))
    links = topo.links
    plan = _RoutePlan(np.asarray(entry_pair, dtype=np.int64), np.asarray(entry_link, dtype=np.int64), order,
                      np.array([links[l].gbytes_per_s for l in order.tolist()], dtype=np.float64), float(alpha))
    if len(cache) >= _ROUTE_PLANS_PER_TOPOLOGY:
        cache.pop(next(iter(cache)))
    cache[fingerprint] = plan
    return plan


def time_schedule(topo: Topology, phases: Sequence[Phase], itemsize: int) -> list[PhaseTiming]:
    """Cost each phase from its round 0 (all rounds of a phase share one pattern)."""
    out = []
    for ph in phases:
        if ph.pattern is not None:
            src, dst, el = ph.pattern()
            a, b, kind = pattern_cost(topo, src, dst, el * itemsize)
            nbytes = int(el.sum()) * itemsize
        else:
            tr = ph.build(0)
            a, b, kind = round_cost(topo, tr, itemsize)
            nbytes = sum(t.hi - t.lo for t in tr) * itemsize
        out.append(PhaseTiming(ph.name, ph.repeat, a * ph.repeat, b * ph.repeat, nbytes, kind))
    return out


def _elements_for(op: str, message_bytes: int, p: int) -> int:
    if op == "all_gather":
        return max(0, message_bytes // p)
    return int(message_bytes)


def collective_time(op: str, message_bytes: int, topo: Topology, algorithm: str = "auto", *,
                    intra_algorithm: str = "auto", inter_algorithm: str = "ring",
                    ring_channels: int | None = None) -> CollectiveTiming:
    """Time ``op`` on ``message_bytes`` without moving data (fast; for estimators and widgets).

    ``message_bytes`` is S of NCCL-tests: the per-rank buffer for all_reduce, all_to_all and
    permute; the total gathered (all_gather) or scattered (reduce_scatter) size.
    """
    check_timing_args(op, message_bytes, topo, algorithm, ring_channels)
    if op not in OPS:
        raise _op_error(op)
    try:
        message_bytes = int(message_bytes)
    except (TypeError, ValueError):
        raise ValueError(f"message_bytes={message_bytes!r} must be a whole number of bytes") from None
    if message_bytes < 0:
        raise ValueError(f"message_bytes={message_bytes} must be >= 0")
    p = topo.size
    algo = _resolve(op, algorithm, message_bytes, topo)
    cache = topo.__dict__.setdefault("_timing_cache", {})
    key = (op, message_bytes, algo, intra_algorithm, inter_algorithm, ring_channels)
    if key in cache:
        return cache[key]
    n = _elements_for(op, message_bytes, p)
    if op == "all_to_all" and p > 1 and n % p:
        n -= n % p  # timing only: whole blocks
    phases = schedule(op, topo, algo, n, itemsize=1, intra_algorithm=intra_algorithm,
                      inter_algorithm=inter_algorithm, ring_channels=ring_channels, representative=True)
    pt = time_schedule(topo, phases, 1)
    result = _timing(op, algo, p, message_bytes, pt)
    if len(cache) < 4096:
        cache[key] = result
    return result


def _timing(op: str, algo: str, p: int, message_bytes: int, pt: list[PhaseTiming]) -> CollectiveTiming:
    alpha = sum(x.alpha_us for x in pt)
    beta = sum(x.beta_us for x in pt)
    t = alpha + beta
    algbw = message_bytes / (t * 1e3) if t > 0 else 0.0
    busbw = algbw * bus_factor(op, p) if p > 1 else 0.0
    return CollectiveTiming(op, algo, p, message_bytes, t, alpha, beta, sum(x.rounds for x in pt),
                            algbw, busbw, tuple(pt))


# ------------------------------------------------------------------ functional execution


def _check_arrays(arrays: Sequence[Any], topo: Topology, op: str) -> list[np.ndarray]:
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op} takes a list of per-rank numpy arrays (one per rank), got {type(arrays).__name__}")
    if len(arrays) != topo.size:
        raise ValueError(
            f"{op}: got {len(arrays)} arrays but {topo.label} has {topo.size} ranks; pass one array per rank "
            f"(or use topo.group({len(arrays)}) for a smaller communicator)"
        )
    arrs = [np.asarray(a) for a in arrays]
    shapes = {a.shape for a in arrs}
    dtypes = {a.dtype for a in arrs}
    if len(shapes) != 1 or len(dtypes) != 1:
        raise ValueError(f"{op}: every rank's array must have the same shape and dtype; got shapes "
                         f"{sorted(map(str, shapes))[:4]} and dtypes {sorted(map(str, dtypes))[:4]}")
    return arrs


def _execute(topo: Topology, phases: Sequence[Phase], bufs: np.ndarray, ufunc, record: bool,
             snapshot: bool) -> tuple[list[Step], list[float], float, float, list[np.ndarray]]:
    itemsize = bufs.dtype.itemsize
    steps: list[Step] = []
    times: list[float] = []
    snaps: list[np.ndarray] = [bufs.copy()] if snapshot else []
    alpha_t = beta_t = 0.0
    rnd = 0
    for ph in phases:
        for k in range(ph.repeat):
            tr = ph.build(k)
            a, b, _ = round_cost(topo, tr, itemsize)
            alpha_t += a
            beta_t += b
            times.append(a + b)
            payload = [bufs[t.src, t.lo:t.hi].copy() for t in tr]  # everyone sends before anyone receives
            for t, data in zip(tr, payload):
                dst = bufs[t.dst, t.dst_lo:t.dst_lo + (t.hi - t.lo)]
                if t.reduce:
                    ufunc(dst, data, out=dst)
                else:
                    dst[...] = data
                if record:
                    steps.append(Step(t.src, t.dst, (t.hi - t.lo) * itemsize, topo.route(t.src, t.dst)[1],
                                      ph.name, rnd, t.dst_lo))
            if snapshot:
                snaps.append(bufs.copy())
            rnd += 1
    return steps, times, alpha_t, beta_t, snaps


def _finish(op: str, algo: str, outputs: list[np.ndarray], steps, times, a, b, message_bytes: int, p: int,
            snaps) -> CollectiveResult:
    t = a + b
    algbw = message_bytes / (t * 1e3) if t > 0 else 0.0
    busbw = algbw * bus_factor(op, p) if p > 1 else 0.0
    return CollectiveResult(op, algo, outputs, steps, t, a, b, len(times), message_bytes, algbw, busbw,
                            tuple(times), tuple(snaps) if snaps else None)


def _reduce_op(op: str):
    if op not in REDUCE_OPS:
        raise ValueError(f"reduction op {op!r} is not supported; choose one of {', '.join(REDUCE_OPS)}")
    return REDUCE_OPS[op]


def _fill_value(dtype: np.dtype):
    return np.nan if np.issubdtype(dtype, np.floating) or dtype.kind == "V" else 0


def all_reduce(arrays: Sequence[Any], topo: Topology, algorithm: str = "auto", op: str = "sum", *,
               record_steps: bool = True, snapshots: bool = False,
               intra_algorithm: str = "auto", inter_algorithm: str = "ring",
               ring_channels: int | None = None) -> CollectiveResult:
    """All-reduce per-rank arrays by moving chunks step by step; every output equals the reduction.

    ``op``: sum, prod, max, min or avg (sum divided by the rank count at the end).
    ``snapshots=True`` keeps every rank's buffer after each round (for animations).
    ``ring_channels`` limits ring algorithms to the first k ring orders (default: all).
    """
    check_run_args("all_reduce", arrays, topo, algorithm, record_steps=record_steps, snapshots=snapshots,
                   ring_channels=ring_channels)
    arrs = _check_arrays(arrays, topo, "all_reduce")
    ufunc = _reduce_op(op)
    shape, p = arrs[0].shape, topo.size
    bufs = np.stack([a.reshape(-1) for a in arrs]).copy()
    n = bufs.shape[1]
    nbytes = n * bufs.dtype.itemsize
    algo = _resolve("all_reduce", algorithm, nbytes, topo)
    phases = schedule("all_reduce", topo, algo, n, itemsize=bufs.dtype.itemsize,
                      intra_algorithm=intra_algorithm, inter_algorithm=inter_algorithm,
                      ring_channels=ring_channels)
    steps, times, a, b, snaps = _execute(topo, phases, bufs, ufunc, record_steps, snapshots)
    if op == "avg":
        bufs = (bufs / p).astype(bufs.dtype) if np.issubdtype(bufs.dtype, np.floating) else bufs // p
    outputs = [bufs[r].reshape(shape).copy() for r in range(p)]
    return _finish("all_reduce", algo, outputs, steps, times, a, b, nbytes, p, snaps)


def reduce_scatter(arrays: Sequence[Any], topo: Topology, algorithm: str = "auto", op: str = "sum", *,
                   record_steps: bool = True, snapshots: bool = False,
                   intra_algorithm: str = "auto", inter_algorithm: str = "ring",
                   ring_channels: int | None = None) -> CollectiveResult:
    """Reduce-scatter: rank r gets block r (``np.array_split`` of the flattened buffer) of the reduction."""
    check_run_args("reduce_scatter", arrays, topo, algorithm, record_steps=record_steps, snapshots=snapshots,
                   ring_channels=ring_channels)
    arrs = _check_arrays(arrays, topo, "reduce_scatter")
    ufunc = _reduce_op(op)
    p = topo.size
    bufs = np.stack([a.reshape(-1) for a in arrs]).copy()
    n = bufs.shape[1]
    nbytes = n * bufs.dtype.itemsize
    algo = _resolve("reduce_scatter", algorithm, nbytes, topo)
    phases = schedule("reduce_scatter", topo, algo, n, itemsize=bufs.dtype.itemsize,
                      intra_algorithm=intra_algorithm, inter_algorithm=inter_algorithm,
                      ring_channels=ring_channels)
    steps, times, a, b, snaps = _execute(topo, phases, bufs, ufunc, record_steps, snapshots)
    segs = A.split_interval(0, n, p)
    outputs = [bufs[r, lo:hi].copy() for r, (lo, hi) in enumerate(segs)]
    if op == "avg":
        outputs = [(o / p).astype(o.dtype) if np.issubdtype(o.dtype, np.floating) else o // p for o in outputs]
    return _finish("reduce_scatter", algo, outputs, steps, times, a, b, nbytes, p, snaps)


def all_gather(arrays: Sequence[Any], topo: Topology, algorithm: str = "auto", *,
               record_steps: bool = True, snapshots: bool = False,
               intra_algorithm: str = "auto", inter_algorithm: str = "ring",
               ring_channels: int | None = None) -> CollectiveResult:
    """All-gather: every rank ends with the concatenation of all ranks' flattened arrays (rank order)."""
    check_run_args("all_gather", arrays, topo, algorithm, record_steps=record_steps, snapshots=snapshots,
                   ring_channels=ring_channels)
    arrs = _check_arrays(arrays, topo, "all_gather")
    p = topo.size
    flat = [a.reshape(-1) for a in arrs]
    c = flat[0].size
    dtype = flat[0].dtype
    bufs = np.full((p, p * c), _fill_value(dtype), dtype=dtype)  # unknown data starts as NaN
    for r in range(p):
        bufs[r, r * c:(r + 1) * c] = flat[r]
    nbytes = p * c * dtype.itemsize
    algo = _resolve("all_gather", algorithm, nbytes, topo)
    phases = schedule("all_gather", topo, algo, c, itemsize=dtype.itemsize,
                      intra_algorithm=intra_algorithm, inter_algorithm=inter_algorithm,
                      ring_channels=ring_channels)
    steps, times, a, b, snaps = _execute(topo, phases, bufs, np.add, record_steps, snapshots)
    outputs = [bufs[r].copy() for r in range(p)]
    return _finish("all_gather", algo, outputs, steps, times, a, b, nbytes, p, snaps)


def all_to_all(arrays: Sequence[Any], topo: Topology, algorithm: str = "auto", *,
               record_steps: bool = True) -> CollectiveResult:
    """All-to-all: rank j's output block i is rank i's input block j (p equal blocks per rank)."""
    check_run_args("all_to_all", arrays, topo, algorithm, record_steps=record_steps)
    arrs = _check_arrays(arrays, topo, "all_to_all")
    p = topo.size
    flat = [a.reshape(-1) for a in arrs]
    n = flat[0].size
    dtype = flat[0].dtype
    nbytes = n * dtype.itemsize
    algo = _resolve("all_to_all", algorithm, nbytes, topo)
    phases = schedule("all_to_all", topo, algo, n, itemsize=dtype.itemsize)
    bufs = np.full((p, 2 * n), _fill_value(dtype), dtype=dtype)
    for r in range(p):
        bufs[r, :n] = flat[r]
    blk = n // p
    for r in range(p):  # a rank's own block stays local (no transfer)
        bufs[r, n + r * blk:n + (r + 1) * blk] = flat[r][r * blk:(r + 1) * blk]
    steps, times, a, b, _ = _execute(topo, phases, bufs, np.add, record_steps, False)
    outputs = [bufs[r, n:].reshape(arrs[0].shape).copy() for r in range(p)]
    return _finish("all_to_all", algo, outputs, steps, times, a, b, nbytes, p, None)


def permute(arrays: Sequence[Any], topo: Topology, algorithm: str = "auto", *,
            pairs: Sequence[tuple[int, int]] | None = None, shift: int = 1,
            record_steps: bool = True) -> CollectiveResult:
    """Collective permute: each (src, dst) pair sends src's array to dst (default: ring shift by ``shift``).

    Ring-only as on Neuron: by default ranks pass to their successor on the first ring
    order. A rank that no pair targets gets zeros (XLA CollectivePermute semantics).
    """
    check_run_args("permute", arrays, topo, algorithm, record_steps=record_steps)
    check_pairs(pairs, shift)
    arrs = _check_arrays(arrays, topo, "permute")
    p = topo.size
    flat = [a.reshape(-1) for a in arrs]
    n = flat[0].size
    dtype = flat[0].dtype
    nbytes = n * dtype.itemsize
    algo = _resolve("permute", algorithm, nbytes, topo)
    if pairs is None:
        pairs = permute_pairs(topo, shift)
    pairs = [(int(s), int(d)) for s, d in pairs]
    dsts = [d for _, d in pairs]
    if len(set(dsts)) != len(dsts) or any(not (0 <= x < p) for pr in pairs for x in pr):
        raise ValueError(f"permute pairs must name ranks in 0..{p - 1} and each destination at most once; "
                         f"got {pairs[:6]}")
    phases = schedule("permute", topo, algo, n, pairs=[(s, d) for s, d in pairs if s != d])
    bufs = np.zeros((p, 2 * n), dtype=dtype)
    for r in range(p):
        bufs[r, :n] = flat[r]
    for s, d in pairs:  # a rank sending to itself keeps its data locally (no transfer)
        if s == d:
            bufs[d, n:] = flat[s]
    steps, times, a, b, _ = _execute(topo, phases, bufs, np.add, record_steps, False)
    outputs = [bufs[r, n:].reshape(arrs[0].shape).copy() for r in range(p)]
    return _finish("permute", algo, outputs, steps, times, a, b, nbytes, p, None)
