"""Widget panels: thin ipywidgets wiring over pure functions and ``trnsim.course.viz`` plots.

Import a panel module explicitly, e.g. ``from trnsim.course.ui import instances``.
"""
