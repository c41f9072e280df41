"""Collective algorithms as schedules: rounds of point-to-point transfers between rank buffers.

A schedule is a list of :class:`Phase`. A phase is ``repeat`` rounds that share one
communication pattern; ``build(k)`` returns round ``k``'s transfers. Each
:class:`Transfer` copies (or reduces into) an element range of the destination's buffer
from the same range of the source's buffer. The same schedule drives both the
functional run (which moves real numpy data round by round) and the timing-only run
(which costs round 0 of each phase and multiplies by ``repeat``), so the two cannot
disagree about what an algorithm does.

A rank's "segment" is a list of element intervals ``[(lo, hi), ...]`` (usually one).
Algorithms (Thakur, Rabenseifner & Gropp 2005; Neuron collectives docs):

* ring reduce-scatter / all-gather: p-1 rounds, each rank passes one chunk to its ring
  successor; with several ring channels the data is split between them.
* recursive halving reduce-scatter / recursive doubling all-gather: log2(p) rounds with
  partner ``i xor d``; need a power-of-two group.
* mesh: one round in which every rank talks to every other rank directly.
* recursive doubling all-reduce: log2(p) rounds exchanging the whole buffer.
* non-power-of-two all-reduce (RD and RDH): the MPICH fold - the last ``p - p'`` ranks
  first send their buffer to a partner among the first ``p'`` (a power of two), which
  reduces it; the ``p'`` ranks run the algorithm; the result is sent back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

import numpy as np

Interval = tuple[int, int]
Segment = list[Interval]


class Transfer(NamedTuple):
    """Copy (``reduce=False``) or reduce (``reduce=True``) src's ``[lo, hi)`` into dst's ``[dst_lo, ...)``."""

    src: int
    dst: int
    lo: int
    hi: int
    reduce: bool
    dst_lo: int

    @property
    def elements(self) -> int:
        return self.hi - self.lo


@dataclass(frozen=True)
class Phase:
    """``repeat`` rounds of one pattern; ``build(k)`` gives round k's transfers.

    ``pattern`` (optional) gives round 0 as arrays (src, dst, elements) without building
    Transfer records; timing-only runs use it for the big one-round mesh patterns.
    """

    name: str
    repeat: int
    build: Callable[[int], list[Transfer]]
    pattern: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None


OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute")
"""The collectives trnsim.cluster models (broadcast and reduce are not)."""


class AlgorithmError(ValueError):
    """An algorithm cannot run on the given ranks or data (the message names the rule and the fix)."""


# ------------------------------------------------------------------ interval helpers


def split_interval(lo: int, hi: int, parts: int) -> list[Interval]:
    """Split [lo, hi) into ``parts`` contiguous pieces as ``np.array_split`` does."""
    n = hi - lo
    q, r = divmod(n, parts)
    out, a = [], lo
    for i in range(parts):
        b = a + q + (1 if i < r else 0)
        out.append((a, b))
        a = b
    return out


def split_segment(seg: Segment, parts: int) -> list[Segment]:
    """Split a segment (list of intervals) into ``parts`` segments of near-equal total length."""
    total = sum(b - a for a, b in seg)
    bounds = [x[0] for x in split_interval(0, total, parts)] + [total]
    out: list[Segment] = []
    for i in range(parts):
        lo_t, hi_t = bounds[i], bounds[i + 1]
        piece: Segment = []
        pos = 0
        for a, b in seg:
            n = b - a
            s, e = max(lo_t, pos), min(hi_t, pos + n)
            if e > s:
                piece.append((a + s - pos, a + e - pos))
            pos += n
        out.append(piece)
    return out


def channel_part(seg: Segment, channel: int, channels: int) -> Segment:
    """Channel ``channel``'s share of a segment: part ``channel`` of each interval (array_split rule)."""
    out: Segment = []
    for a, b in seg:
        q, r = divmod(b - a, channels)
        x = a + channel * q + min(channel, r)
        y = x + q + (1 if channel < r else 0)
        if y > x:
            out.append((x, y))
    return out


def merge(seg: Segment) -> Segment:
    """Sort and merge touching intervals."""
    out: Segment = []
    for a, b in sorted(s for s in seg if s[1] > s[0]):
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _sends(src: int, dst: int, seg: Segment, reduce: bool, shift: int = 0) -> list[Transfer]:
    return [Transfer(src, dst, a, b, reduce, a + shift) for a, b in merge(seg) if b > a]


def seg_len(seg: Segment) -> int:
    return sum(b - a for a, b in seg)


def is_pow2(p: int) -> bool:
    return p >= 1 and (p & (p - 1)) == 0


def parallel(schedules: Sequence[list[Phase]]) -> list[Phase]:
    """Run schedules of disjoint rank groups at the same time (round k of each merged)."""
    schedules = [s for s in schedules if s]
    if not schedules:
        return []
    first = schedules[0]
    for s in schedules[1:]:
        if [(p.repeat) for p in s] != [(p.repeat) for p in first]:
            raise AlgorithmError("parallel groups must run the same algorithm on groups of the same size")
    out = []
    for i, ph in enumerate(first):
        builds = [s[i].build for s in schedules]
        pats = [s[i].pattern for s in schedules]
        pattern = None
        if all(p is not None for p in pats):
            def pattern(ps=pats):
                got = [p() for p in ps]
                return tuple(np.concatenate([g[k] for g in got]) for k in range(3))
        out.append(Phase(ph.name, ph.repeat, lambda k, bs=builds: [t for b in bs for t in b(k)], pattern))
    return out


def _mesh_pattern(group: Sequence[int], sizes_by_src_dst: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def pattern() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = len(group)
        i, j = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
        keep = i != j
        i, j = i[keep], j[keep]
        g = np.asarray(group, dtype=np.int64)
        return g[i], g[j], sizes_by_src_dst(i, j)
    return pattern


# ------------------------------------------------------------------ reduce-scatter


def _channel_lens(segs: Sequence[Segment], channels: int) -> np.ndarray:
    """(channels, positions) array: elements of channel c's part of each position's segment."""
    pos = np.array([j for j, seg in enumerate(segs) for _ in seg], dtype=np.int64)
    n = np.array([b - a for seg in segs for a, b in seg], dtype=np.int64)
    out = np.zeros((channels, len(segs)), dtype=np.int64)
    if len(n):
        q, r = np.divmod(n, channels)
        for c in range(channels):
            out[c] = np.bincount(pos, weights=q + (c < r), minlength=len(segs)).astype(np.int64)
    return out


def _ring_pattern(orders, group, segs, lag: int):
    """Round 0 of a ring phase as arrays: position i sends the chunk of position i + lag to i + 1."""
    def pattern() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lens = _channel_lens(segs, len(orders))
        pos_of = {r: j for j, r in enumerate(group)}
        src, dst, el = [], [], []
        for c, o in enumerate(orders):
            p = len(o)
            oa = np.asarray(o, dtype=np.int64)
            opos = np.array([pos_of[r] for r in o], dtype=np.int64)
            i = np.arange(p)
            src.append(oa)
            dst.append(oa[(i + 1) % p])
            el.append(lens[c][opos[(i + lag) % p]])
        return np.concatenate(src), np.concatenate(dst), np.concatenate(el)
    return pattern


def _lazy_parts(orders, group, segs):
    """Channel parts of every position's segment, in ring order, computed on first use."""
    cache: list = []

    def get() -> list[list[Segment]]:
        if not cache:
            pos_of = {r: j for j, r in enumerate(group)}
            C = len(orders)
            cache.append([[channel_part(segs[pos_of[r]], c, C) for r in o] for c, o in enumerate(orders)])
        return cache[0]
    return get


def ring_reduce_scatter(orders: Sequence[Sequence[int]], group: Sequence[int], segs: Sequence[Segment],
                        name: str = "reduce-scatter (ring)") -> list[Phase]:
    """Ring reduce-scatter: rank ``group[j]`` ends with the full reduction of ``segs[j]``.

    Each of the C ring channels (``orders``, permutations of ``group``) carries part c of
    every segment. Round s: position i sends the chunk of position (i-s-1) mod p to i+1.
    """
    p = len(group)
    if p == 1:
        return []
    parts = _lazy_parts(orders, group, segs)

    def build(s: int) -> list[Transfer]:
        out: list[Transfer] = []
        for c, o in enumerate(orders):
            for i in range(p):
                out += _sends(o[i], o[(i + 1) % p], parts()[c][(i - s - 1) % p], True)
        return out

    return [Phase(name, p - 1, build, _ring_pattern(orders, group, segs, -1))]


def ring_all_gather(orders: Sequence[Sequence[int]], group: Sequence[int], segs: Sequence[Segment],
                    name: str = "all-gather (ring)") -> list[Phase]:
    """Ring all-gather: ``group[j]`` starts with ``segs[j]``; afterwards every rank has all segments."""
    p = len(group)
    if p == 1:
        return []
    parts = _lazy_parts(orders, group, segs)

    def build(s: int) -> list[Transfer]:
        out: list[Transfer] = []
        for c, o in enumerate(orders):
            for i in range(p):
                out += _sends(o[i], o[(i + 1) % p], parts()[c][(i - s) % p], False)
        return out

    return [Phase(name, p - 1, build, _ring_pattern(orders, group, segs, 0))]


def _need_pow2(p: int, what: str) -> None:
    if not is_pow2(p):
        lower = 1 << (p.bit_length() - 1)
        raise AlgorithmError(
            f"{what} needs a power-of-two number of ranks, got {p}; use algorithm='ring' or 'mesh', "
            f"or a group of {lower} or {lower * 2} ranks"
        )


def halving_reduce_scatter(group: Sequence[int], segs: Sequence[Segment],
                           name: str = "reduce-scatter (recursive halving)") -> list[Phase]:
    """Recursive halving: log2(p) rounds; at distance d each rank sends the half it will not keep."""
    p = len(group)
    _need_pow2(p, "recursive halving reduce-scatter")
    g = np.asarray(group, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum([seg_len(x) for x in segs])]).astype(np.int64)
    phases = []
    d = p // 2
    while d >= 1:
        def build(_k: int, d=d) -> list[Transfer]:
            out: list[Transfer] = []
            for i in range(p):
                base = i & ~(2 * d - 1)
                give = range(base, base + d) if i & d else range(base + d, base + 2 * d)
                seg = [iv for j in give for iv in segs[j]]
                out += _sends(group[i], group[i ^ d], seg, True)
            return out

        def pattern(d=d):
            i = np.arange(p)
            base = i & ~(2 * d - 1)
            start = np.where(i & d, base, base + d)
            return g[i], g[i ^ d], cum[start + d] - cum[start]
        phases.append(Phase(f"{name} d={d}", 1, build, pattern))
        d //= 2
    return phases


def doubling_all_gather(group: Sequence[int], segs: Sequence[Segment],
                        name: str = "all-gather (recursive doubling)") -> list[Phase]:
    """Recursive doubling: log2(p) rounds; at distance d each rank sends the d segments it holds."""
    p = len(group)
    _need_pow2(p, "recursive doubling all-gather")
    g = np.asarray(group, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum([seg_len(x) for x in segs])]).astype(np.int64)
    phases = []
    d = 1
    while d < p:
        def build(_k: int, d=d) -> list[Transfer]:
            out: list[Transfer] = []
            for i in range(p):
                base = i & ~(d - 1)
                seg = [iv for j in range(base, base + d) for iv in segs[j]]
                out += _sends(group[i], group[i ^ d], seg, False)
            return out

        def pattern(d=d):
            i = np.arange(p)
            base = i & ~(d - 1)
            return g[i], g[i ^ d], cum[base + d] - cum[base]
        phases.append(Phase(f"{name} d={d}", 1, build, pattern))
        d *= 2
    return phases


def mesh_reduce_scatter(group: Sequence[int], segs: Sequence[Segment],
                        name: str = "reduce-scatter (mesh)") -> list[Phase]:
    """Mesh: one round; every rank sends segment j straight to rank j, which reduces."""
    p = len(group)
    if p == 1:
        return []

    def build(_k: int) -> list[Transfer]:
        return [t for i in range(p) for j in range(p) if j != i
                for t in _sends(group[i], group[j], segs[j], True)]

    lens = np.array([seg_len(s) for s in segs], dtype=np.int64)
    return [Phase(name, 1, build, _mesh_pattern(group, lambda i, j: lens[j]))]


def mesh_all_gather(group: Sequence[int], segs: Sequence[Segment],
                    name: str = "all-gather (mesh)") -> list[Phase]:
    """Mesh: one round; every rank sends its segment straight to every other rank."""
    p = len(group)
    if p == 1:
        return []

    def build(_k: int) -> list[Transfer]:
        return [t for i in range(p) for j in range(p) if j != i
                for t in _sends(group[i], group[j], segs[i], False)]

    lens = np.array([seg_len(s) for s in segs], dtype=np.int64)
    return [Phase(name, 1, build, _mesh_pattern(group, lambda i, j: lens[i]))]


# ------------------------------------------------------------------ all-reduce


def _fold(group: Sequence[int], region: Segment, core: Callable[[list[int]], list[Phase]],
          label: str) -> list[Phase]:
    """MPICH non-power-of-two fold around a power-of-two all-reduce ``core``."""
    p = len(group)
    p2 = 1 << (p.bit_length() - 1)
    rem = p - p2
    if rem == 0:
        return core(list(group))
    extra = list(range(p2, p))

    def fold_in(_k: int) -> list[Transfer]:
        return [t for i in extra for t in _sends(group[i], group[i - p2], region, True)]

    def fold_out(_k: int) -> list[Transfer]:
        return [t for i in extra for t in _sends(group[i - p2], group[i], region, False)]

    g = np.asarray(group, dtype=np.int64)
    ex = np.asarray(extra, dtype=np.int64)
    size = np.full(len(extra), seg_len(region), dtype=np.int64)
    return ([Phase(f"{label} fold-in {rem} extra ranks", 1, fold_in, lambda: (g[ex], g[ex - p2], size))]
            + core(list(group[:p2]))
            + [Phase(f"{label} fold-out {rem} extra ranks", 1, fold_out, lambda: (g[ex - p2], g[ex], size))])


def doubling_all_reduce(group: Sequence[int], region: Segment) -> list[Phase]:
    """Recursive doubling all-reduce: log2(p) rounds exchanging (and reducing) the whole buffer."""
    def core(g: list[int]) -> list[Phase]:
        p = len(g)
        phases = []
        d = 1
        while d < p:
            def build(_k: int, d=d) -> list[Transfer]:
                return [t for i in range(p) for t in _sends(g[i], g[i ^ d], region, True)]

            def pattern(d=d):
                ga = np.asarray(g, dtype=np.int64)
                i = np.arange(p)
                return ga[i], ga[i ^ d], np.full(p, seg_len(region), dtype=np.int64)
            phases.append(Phase(f"all-reduce (recursive doubling) d={d}", 1, build, pattern))
            d *= 2
        return phases
    return _fold(group, region, core, "all-reduce (recursive doubling)")


def rdh_all_reduce(group: Sequence[int], region: Segment) -> list[Phase]:
    """Rabenseifner / RDH: recursive-halving reduce-scatter then recursive-doubling all-gather."""
    def core(g: list[int]) -> list[Phase]:
        segs = split_segment(region, len(g))
        return halving_reduce_scatter(g, segs) + doubling_all_gather(g, segs)
    return _fold(group, region, core, "all-reduce (RDH)")


def ring_all_reduce(orders: Sequence[Sequence[int]], group: Sequence[int], region: Segment) -> list[Phase]:
    """Ring all-reduce = ring reduce-scatter + ring all-gather over the same ring channels."""
    segs = split_segment(region, len(group))
    return (ring_reduce_scatter(orders, group, segs, "all-reduce: reduce-scatter (ring)")
            + ring_all_gather(orders, group, segs, "all-reduce: all-gather (ring)"))


def mesh_all_reduce(group: Sequence[int], region: Segment) -> list[Phase]:
    """Mesh all-reduce (Neuron 'Mesh'): mesh reduce-scatter then mesh all-gather, two rounds."""
    segs = split_segment(region, len(group))
    return (mesh_reduce_scatter(group, segs, "all-reduce: reduce-scatter (mesh)")
            + mesh_all_gather(group, segs, "all-reduce: all-gather (mesh)"))


# ------------------------------------------------------------------ all-to-all and permute


def mesh_all_to_all(group: Sequence[int], blocks: Sequence[Interval], recv_offset: int) -> list[Phase]:
    """One round: rank i sends its send block j to rank j, landing at recv_offset + block i.

    Each rank's buffer is [send area | receive area]; ``blocks[j]`` is block j's range
    inside an area (the send area starts at 0, the receive area at ``recv_offset``).
    """
    p = len(group)
    if p == 1:
        return []

    def build(_k: int) -> list[Transfer]:
        return [_a2a(group, blocks, recv_offset, i, j) for i in range(p) for j in range(p)
                if j != i and blocks[j][1] > blocks[j][0]]

    lens = np.array([b - a for a, b in blocks], dtype=np.int64)
    return [Phase("all-to-all (mesh)", 1, build, _mesh_pattern(group, lambda i, j: lens[j]))]


def _a2a(group: Sequence[int], blocks: Sequence[Interval], recv_offset: int, i: int, j: int) -> Transfer:
    a, b = blocks[j]
    ra = recv_offset + blocks[i][0]
    return Transfer(group[i], group[j], a, b, False, ra)


def shift_all_to_all(group: Sequence[int], blocks: Sequence[Interval], recv_offset: int) -> list[Phase]:
    """p-1 rounds: in round k rank i sends its block i+k+1 to rank i+k+1 (pairwise shift exchange)."""
    p = len(group)
    if p == 1:
        return []

    def build(k: int) -> list[Transfer]:
        return [_a2a(group, blocks, recv_offset, i, (i + k + 1) % p) for i in range(p)
                if blocks[(i + k + 1) % p][1] > blocks[(i + k + 1) % p][0]]

    return [Phase("all-to-all (ring shift)", p - 1, build)]


def neighbour_permute(pairs: Sequence[tuple[int, int]], length: int) -> list[Phase]:
    """One round: each (src, dst) pair copies src's buffer [0, length) to dst's [length, 2*length)."""
    def build(_k: int) -> list[Transfer]:
        return [Transfer(s, d, 0, length, False, length) for s, d in pairs if length > 0]

    return [Phase("permute", 1, build)] if pairs else []
