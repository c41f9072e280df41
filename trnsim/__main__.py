"""``python -m trnsim``: see :mod:`trnsim.cli`."""
import sys

from trnsim.cli import main

sys.exit(main())
