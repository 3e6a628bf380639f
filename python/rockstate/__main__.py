"""``python -m rockstate``: the rockstate command line."""

from __future__ import annotations

import sys

from rockstate.cli import main

if __name__ == "__main__":
    sys.exit(main())
