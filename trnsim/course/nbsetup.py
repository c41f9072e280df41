"""One call that makes a course notebook deterministic and quiet.

Every notebook's first code cell runs ``from trnsim.course import setup_notebook`` and
``SEED = setup_notebook()``. It fixes what
would otherwise make stored outputs drift between machines (figure size and dpi,
numpy print options, warnings written to stderr) and returns the seed that the
notebook passes explicitly to every random generator it creates.
"""
from __future__ import annotations

import warnings

import numpy as np

SEED = 0
"""The one seed the course uses. Notebooks pass it to ``np.random.default_rng``."""

FIGSIZE_IN = (7.0, 4.0)
DPI = 100


def setup_notebook(seed: int = SEED) -> int:
    """Configure matplotlib, numpy printing and warnings for a course notebook.

    Returns the seed so a notebook can write ``SEED = setup_notebook()``.
    """
    import matplotlib

    warnings.filterwarnings("ignore")
    np.set_printoptions(precision=4, suppress=True, linewidth=100)
    matplotlib.rcParams.update(
        {
            "figure.figsize": FIGSIZE_IN,
            "figure.dpi": DPI,
            "savefig.dpi": DPI,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "font.size": 10,
        }
    )
    return seed
