"""Figures: pure matplotlib functions that draw onto an ``Axes`` they are given."""
