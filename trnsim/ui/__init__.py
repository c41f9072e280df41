"""Widget panels: thin ipywidgets wiring over pure functions and ``trnsim.viz`` plots.

Import a panel module explicitly, e.g. ``from trnsim.ui import instances``.
"""
