"""The two physical cores of an LNC=2 launch, run interleaved (part of the kernel runtime).

Each program instance of a core pair runs its kernel body in its own thread, but only one thread runs at
a time and the hand-off is deterministic: a core runs until it must wait for the other (at a
``nisa.sendrecv`` whose peer has not sent yet, or at a ``nisa.core_barrier`` the peer has not reached), or
until its program ends; then the other core runs. So data flows both ways through ``sendrecv``, and a
barrier really orders the two cores' accesses to shared HBM. A core that waits for a peer that has
finished, or two cores waiting for each other at different rendezvous, is a deadlock: a KernelError
naming both waits.

The tracing state that belongs to one program instance (program id, core, loop scopes, live on-chip
tiles and their SBUF/PSUM usage, the last instruction's result) is swapped in and out of the shared
:class:`~trnsim.nki.context.Context` at every hand-off; the instruction list, allocations and shared HBM
tensors stay common to both cores.
"""
from __future__ import annotations

import threading
from typing import Callable

from trnsim.nki import _threadstate
from trnsim.nki.rules import KernelError

# Context attributes private to one program instance (swapped at every hand-off)
PER_PROGRAM = ("program_id", "core", "shared_pos", "scopes", "loops", "n_affine", "affine_writes", "sbuf_used",
               "psum_banks_used", "live", "deferred", "peak_pending", "last_out", "last_out_index", "last_vals",
               "last_mask", "directive_attrs")

_DEADLOCK_FIX = ("both cores of an LNC=2 launch must call every nisa.sendrecv (same pipe_id, same order) and "
                 "every nisa.core_barrier the same number of times; do not put one under "
                 "`if nl.program_id(0) == ...` unless the other core makes the matching call")


class _Abort(BaseException):
    """Unwinds a program thread when the launch stops (the other core raised, or a deadlock)."""


class _Program:
    def __init__(self, pid: tuple, core: int, state: dict):
        self.pid = pid
        self.core = core
        self.state = state
        self.go = threading.Event()
        self.waiting: tuple[Callable[[], bool], str] | None = None
        self.done = False
        self.error: BaseException | None = None
        self.result = None
        self.thread: threading.Thread | None = None


class LncPair:
    """Runs the program instances of one LNC=2 core pair interleaved; ``ctx.lnc_run`` while it runs."""

    def __init__(self, ctx, programs: list[tuple[tuple, int]], fresh_state: Callable[[tuple, int], dict]):
        self.ctx = ctx
        self.progs = [_Program(pid, core, fresh_state(pid, core)) for pid, core in programs]
        self.running: _Program | None = None
        self.yielded = threading.Event()
        self.abort = False

    # ---------------------------------------------------------------- state hand-off
    def _swap_in(self, p: _Program) -> None:
        for k in PER_PROGRAM:
            setattr(self.ctx, k, p.state[k])
        self.running = p

    def _swap_out(self, p: _Program) -> None:
        for k in PER_PROGRAM:
            p.state[k] = getattr(self.ctx, k)

    # ---------------------------------------------------------------- called from program threads
    def wait(self, ready: Callable[[], bool], what: str) -> None:
        """Block the running core until ``ready()`` (the peer has sent / arrived); ``what`` names the wait."""
        if ready():
            return
        p = self.running
        p.waiting = (ready, what)
        self._swap_out(p)
        p.go.clear()
        self.yielded.set()
        p.go.wait()
        if self.abort:
            raise _Abort()
        p.waiting = None

    def _thread_main(self, p: _Program, body: Callable[[tuple, int], object], inherited: dict) -> None:
        # the launching thread's rank (simulate_ranks) carries over to both cores, with the core's number
        _threadstate.enter(inherited, lnc_core=p.core)
        p.go.wait()
        try:
            if not self.abort:
                p.result = body(p.pid, p.core)
        except _Abort:
            pass
        except BaseException as exc:  # noqa: BLE001  (handed to the launching thread)
            p.error = exc
        finally:
            p.done = True
            if self.running is p:
                self._swap_out(p)
            self.yielded.set()

    # ---------------------------------------------------------------- the scheduler (launching thread)
    def run(self, body: Callable[[tuple, int], object]):
        """Run every program of the pair to completion; returns the last program's result."""
        progs = self.progs
        inherited = _threadstate.snapshot()
        for p in progs:
            p.thread = threading.Thread(target=self._thread_main, args=(p, body, inherited), daemon=True,
                                        name=f"nki-core{p.core}")
            p.thread.start()
        try:
            cur = 0
            while True:
                p = progs[cur]
                self._swap_in(p)
                self.yielded.clear()
                p.go.set()
                self.yielded.wait()
                failed = next((q for q in progs if q.error is not None), None)
                if failed is not None:
                    raise failed.error
                nxt = self._next_runnable(cur)
                if nxt is None:
                    if all(q.done for q in progs):
                        break
                    raise self._deadlock()
                cur = nxt
        finally:
            self.abort = True
            for p in progs:
                if not p.done:
                    p.go.set()
            for p in progs:
                p.thread.join()
            self.running = None
        return progs[-1].result

    def _next_runnable(self, cur: int) -> int | None:
        n = len(self.progs)
        for step in range(1, n + 1):
            i = (cur + step) % n
            q = self.progs[i]
            if q.done:
                continue
            if q.waiting is None or q.waiting[0]():
                return i
        return None

    def _deadlock(self) -> KernelError:
        waits = [q for q in self.progs if not q.done]
        ended = [q for q in self.progs if q.done]
        if ended:
            w = waits[0]
            other = ", ".join(f"core {q.core}" for q in ended)
            msg = (f"core {w.core} waits at {w.waiting[1]} for the other core, but {other} ended its program "
                   "without the matching call: the launch would hang")
        else:
            msg = "the cores wait for each other at different rendezvous: " + "; ".join(
                f"core {q.core} at {q.waiting[1]}" for q in waits) + " (the launch would hang)"
        return KernelError("err_lnc_deadlock", msg, _DEADLOCK_FIX)


def fresh_program_state(ctx, pid: tuple, core: int) -> dict:
    """The per-program tracing state a program instance starts with."""
    return {"program_id": tuple(int(x) for x in pid), "core": core, "shared_pos": 0, "scopes": [[]], "loops": [],
            "n_affine": 0, "affine_writes": {}, "sbuf_used": ctx.sbuf_used, "psum_banks_used": ctx.psum_banks_used,
            "live": dict(ctx.live), "deferred": [], "peak_pending": -1, "last_out": None, "last_out_index": -1,
            "last_vals": None, "last_mask": None, "directive_attrs": ctx.directive_attrs}


__all__ = ["LncPair", "PER_PROGRAM", "fresh_program_state"]
