"""Multi-rank launches: ``simulate_ranks(kernel, world_size, per_rank_args)`` runs one kernel instance per rank
and executes :mod:`trnsim.nki.collectives` between them (trnsim extension; NKI's own simulator does not run
collectives).

Each rank runs in its own Python thread, but only one rank runs at a time: a rank runs until it reaches a
collective (or ends), then hands over to the next runnable rank in rank order. When no rank can run, every
sub-group whose ranks all wait at the same collective is resolved (the data are exchanged) and its ranks
become runnable again. The order is therefore deterministic, the tracer's module state is never touched by
two threads at once, and the running rank's kernel context is installed in
``trnsim.nki.context._CURRENT`` whenever it resumes. Ranks that wait for each other in a way that can never
complete (a rank ends, or calls a different collective, while its sub-group waits) raise
``err_collective_mismatch`` naming who waits for what.
"""
from __future__ import annotations

import gc
import threading
from typing import Any, Callable, Sequence

import numpy as np

from trnsim.nki._gc import promote_to_oldest_generation
from trnsim.nki import collectives as _coll
from trnsim.nki import context as _context
from trnsim.nki.rules import KernelError
from trnsim.nki.runtime import as_kernel, default_target, run_kernel
from trnsim.nki.trace import Trace


class _Abort(BaseException):
    """Raised inside a waiting rank when another rank failed (unwinds its kernel)."""


class World:
    """The ranks of one launch and the baton that lets one of them run at a time."""

    def __init__(self, size: int):
        self.size = size
        self.cv = threading.Condition()
        self.running: int | None = None
        self.state = ["ready"] * size          # ready | blocked | done | failed
        self.waiting: dict[int, _coll.Arrival] = {}
        self.contexts: list[Any] = [None] * size
        self.aborted = False

    # called in a rank's thread -------------------------------------------------------------
    def wait_collective(self, a: "_coll.Arrival") -> None:
        bad = [m for m in a.members if m >= self.size]
        if bad:
            raise KernelError("err_rank_not_in_replica_group", f"{a.api}: rank {bad[0]} of the replica group does not "
                              f"exist in a launch of {self.size} ranks", f"use rank ids 0..{self.size - 1}")
        ctx = _context._CURRENT
        with self.cv:
            self.waiting[a.rank] = a
            self.state[a.rank] = "blocked"
            self.running = None
            self.cv.notify_all()
            while self.running != a.rank and not self.aborted:
                self.cv.wait()
            if self.aborted:
                raise _Abort()
        _context._CURRENT = ctx
        err = getattr(a, "error", None)
        if err is not None:
            raise err

    def _wait_turn(self, rank: int) -> None:
        with self.cv:
            while self.running != rank and not self.aborted:
                self.cv.wait()
            if self.aborted:
                raise _Abort()

    def _finish(self, rank: int, state: str) -> None:
        with self.cv:
            self.state[rank] = state
            if self.running == rank:
                self.running = None
            self.cv.notify_all()

    # called in the launching thread --------------------------------------------------------
    def _give(self, rank: int) -> None:
        with self.cv:
            self.state[rank] = "running"
            self.running = rank
            self.cv.notify_all()
            while self.running == rank:
                self.cv.wait()

    def _resolve(self) -> bool:
        """Exchange data for every sub-group whose ranks all wait at the same collective; False if none can."""
        done_any = False
        handled: set[int] = set()
        for r in sorted(self.waiting):
            if r in handled:
                continue
            a = self.waiting[r]
            members = a.members
            if not all(self.state[m] == "blocked" and m in self.waiting for m in members):
                continue
            arr = {m: self.waiting[m] for m in members}
            for m, b in arr.items():
                if b.api != a.api or b.members != members:
                    err = KernelError("err_collective_mismatch",
                                      f"rank {r} waits in {a.api} over ranks {list(members)} while rank {m} waits in "
                                      f"{b.api} over ranks {list(b.members)}",
                                      "every rank of a sub-group must issue the same collectives in the same order",
                                      location="")
                    raise err
            try:
                a.resolve(arr)
            except KernelError:
                raise
            except Exception as exc:   # a bug in resolving is reported, never left to hang the launch
                raise KernelError("err_collective_mismatch", f"{a.api} over ranks {list(members)} could not be "
                                  f"resolved: {type(exc).__name__}: {exc}",
                                  "check the collective's arguments (rank ids, groups, shapes) on every rank",
                                  location="") from exc
            for m in members:
                del self.waiting[m]
                self.state[m] = "ready"
                handled.add(m)
            done_any = True
        return done_any

    def _deadlock(self) -> KernelError:
        lines = []
        for r, a in sorted(self.waiting.items()):
            missing = [m for m in a.members if m not in self.waiting or self.waiting[m].api != a.api]
            why = ", ".join(f"rank {m} {'ended' if self.state[m] == 'done' else 'is elsewhere'}" for m in missing)
            lines.append(f"rank {r} waits in {a.api} for ranks {list(a.members)} ({why})")
        return KernelError("err_collective_mismatch", "; ".join(lines),
                           "every rank listed in a replica group must call the same collective", location="")


def _as_args(a) -> tuple:
    if isinstance(a, tuple):
        return a
    if isinstance(a, list):
        return tuple(a)
    return (a,)


def trace_ranks(kernel, world_size: int, per_rank_args: Sequence | Callable[[int], Any], *,
                per_rank_kwargs: Sequence[dict] | None = None, target: str | None = None,
                numerics: bool = True) -> tuple[list, list[Trace]]:
    """Run ``kernel`` once per rank (0..world_size-1) with collectives between them; returns (outputs per rank,
    Trace per rank). ``per_rank_args[r]`` (or ``per_rank_args(r)``) is rank r's argument tuple (a single array
    is one argument). ``numerics=False`` traces shapes only (outputs are None)."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise KernelError("err_invalid_world_size", f"world_size={world_size!r} must be a positive int",
                          "pass the number of ranks, e.g. 4", location="")
    if callable(per_rank_args):
        args = [_as_args(per_rank_args(r)) for r in range(world_size)]
    else:
        if isinstance(per_rank_args, (str, bytes)) or not hasattr(per_rank_args, "__len__"):
            raise KernelError("err_invalid_arguments", "per_rank_args must be a list with one argument tuple per rank "
                              "(or a function rank -> arguments)", "pass e.g. [(x0,), (x1,)]", location="")
        if len(per_rank_args) != world_size:
            raise KernelError("err_invalid_arguments", f"per_rank_args has {len(per_rank_args)} entries for "
                              f"world_size={world_size}", "give one argument tuple per rank", location="")
        args = [_as_args(a) for a in per_rank_args]
    kwargs = list(per_rank_kwargs) if per_rank_kwargs is not None else [{} for _ in range(world_size)]
    # each rank has its own device memory: a kernel that writes an input must not reach another rank's copy
    # (run_kernel hands a writable numpy input to the kernel as is)
    args = [tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in rank_args) for rank_args in args]
    if len(kwargs) != world_size:
        raise KernelError("err_invalid_arguments", f"per_rank_kwargs has {len(kwargs)} entries for "
                          f"world_size={world_size}", "give one dict per rank", location="")
    k = as_kernel(kernel)
    tgt = target or k.target or default_target()
    world = World(world_size)
    outputs: list = [None] * world_size
    traces: list = [None] * world_size
    errors: list = [None] * world_size
    saved_ctx = _context._CURRENT
    gc_was = gc.isenabled()

    def body(r: int) -> None:
        try:
            world._wait_turn(r)
            _coll._RANK.world = world
            _coll._RANK.rank = r
            out, tr = run_kernel(k.func, args[r], kwargs[r], target=tgt, numerics=numerics, grid=k.grid,
                                 name=f"{k.__name__}[rank {r}]", dialect=k.dialect, lnc=k.lnc)
            outputs[r], traces[r] = out, tr
            world._finish(r, "done")
        except _Abort:
            world._finish(r, "failed")
        except BaseException as exc:   # handed to the launching thread
            errors[r] = exc
            world._finish(r, "failed")

    threads = [threading.Thread(target=body, args=(r,), name=f"trnsim-rank-{r}", daemon=True)
               for r in range(world_size)]
    for t in threads:
        t.start()
    failure: BaseException | None = None
    try:
        while True:
            if any(e is not None for e in errors):
                failure = next(e for e in errors if e is not None)
                break
            ready = [r for r in range(world_size) if world.state[r] == "ready"]
            if ready:
                world._give(ready[0])
                continue
            if not world.waiting:
                break
            try:
                progressed = world._resolve()
            except KernelError as exc:
                failure = exc
                break
            if not progressed:
                failure = world._deadlock()
                break
    except BaseException as exc:   # anything leaving the loop (even KeyboardInterrupt) releases the rank threads
        if failure is None:
            failure = exc
        raise
    finally:
        with world.cv:
            if failure is not None or any(e is not None for e in errors):
                world.aborted = True
            world.cv.notify_all()
        for t in threads:
            t.join()
        _context._CURRENT = saved_ctx
        if gc_was:
            promote_to_oldest_generation()
            gc.enable()
        _coll._RANK.__dict__.clear()
    if failure is not None:
        raise failure
    k.last_trace = traces[0]
    return outputs, traces


def simulate_ranks(kernel, world_size: int, per_rank_args: Sequence | Callable[[int], Any], *,
                   per_rank_kwargs: Sequence[dict] | None = None, target: str | None = None) -> list:
    """Run ``kernel`` on ``world_size`` simulated ranks (numpy in, numpy out): ``outs[r]`` is rank r's output.
    The per-rank traces are kept on the kernel as ``kernel.last_rank_traces`` (a list, one Trace per rank)."""
    outputs, traces = trace_ranks(kernel, world_size, per_rank_args, per_rank_kwargs=per_rank_kwargs, target=target)
    for obj in {id(kernel): kernel, id(as_kernel(kernel)): as_kernel(kernel)}.values():
        try:
            obj.last_rank_traces = traces
        except AttributeError:
            pass
    return outputs


__all__ = ["simulate_ranks", "trace_ranks", "World"]
