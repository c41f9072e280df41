"""State that belongs to the thread running a kernel instance and that its helper threads inherit.

``RANK`` holds what :func:`trnsim.nki.simulate_ranks` sets for the rank a thread runs (``world``, ``rank``) and
the options of the collective being issued; ``nki.collectives`` reads it. The two core threads of an LNC=2 launch
(:mod:`trnsim.nki.lnc`) start with a copy of the launching thread's ``RANK`` plus ``lnc_core`` (0 or 1), so a
kernel running on either core knows its rank.
"""
from __future__ import annotations

import threading

RANK = threading.local()


def snapshot() -> dict:
    """A copy of the calling thread's ``RANK`` attributes (for a helper thread to start from)."""
    return dict(RANK.__dict__)


def enter(state: dict, **extra) -> None:
    """Make ``state`` (plus ``extra``) the calling thread's ``RANK`` attributes."""
    RANK.__dict__.clear()
    RANK.__dict__.update(state, **extra)


__all__ = ["RANK", "enter", "snapshot"]
