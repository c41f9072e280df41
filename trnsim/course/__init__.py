"""The course around the simulator: everything here may import the simulator, never the reverse.

- :mod:`trnsim.course.nbsetup`: the notebook set-up call (``from trnsim.course import setup_notebook``).
- :mod:`trnsim.course.course_map`: the notebooks in order and the environment report.
- :mod:`trnsim.course.check` and :mod:`trnsim.course.exercises`: the checkers behind every exercise.
- :mod:`trnsim.course.grading`: nbgrader student copies and the nbgrader course builder.
- :mod:`trnsim.course.lite`, :mod:`trnsim.course.doctor`, :mod:`trnsim.course.cli`: the JupyterLite
  build, the workshop doctor and ``python -m trnsim``.
- :mod:`trnsim.course.viz` (figures) and :mod:`trnsim.course.ui` (widget panels) sit on top.
"""
from trnsim.course.nbsetup import SEED, setup_notebook

__all__ = ["SEED", "setup_notebook"]
