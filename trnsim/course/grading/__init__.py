"""Coursework with nbgrader: the course's exercises as nbgrader assignments.

* :mod:`trnsim.course.grading.cells`: one exercise cell -> a solution cell (``### BEGIN SOLUTION``
  regions) and read-only autograder test cells that call :func:`trnsim.course.check.require`;
* :mod:`trnsim.course.grading.notebook`: apply that to every exercise of a notebook, idempotently
  (``python -m trnsim nbgrader-sync``);
* :mod:`trnsim.course.grading.course`: lay out an nbgrader course folder from the notebooks
  (``python -m trnsim nbgrader-course``), ready for ``nbgrader generate_assignment`` and
  ``nbgrader autograde``.
"""
