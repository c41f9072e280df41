"""Constants the kernel puzzles (notebook 04b) and their worked solutions share.

They live apart from :mod:`trnsim.course.exercises.puzzles` (the checker, which calibrates its budgets on the
solutions) and :mod:`trnsim.course.exercises.puzzle_solutions` (which uses them) so neither imports the other
both ways.
"""
MASK_VALUE = -30000.0
"""What the causal mask writes above the diagonal (a large negative number, as attention kernels use)."""
RMS_EPS = 1e-6
ONLINE_CHUNK = 512
"""Columns per chunk the online-softmax puzzle streams (its SBUF rule forbids holding a whole row)."""
WORLD = 4
"""Ranks in the collective puzzle."""

__all__ = ["MASK_VALUE", "ONLINE_CHUNK", "RMS_EPS", "WORLD"]
