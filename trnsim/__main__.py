"""``python -m trnsim``: see :mod:`trnsim.course.cli`."""
import sys

from trnsim.course.cli import main

sys.exit(main())
