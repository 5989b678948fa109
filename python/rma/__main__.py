"""Run rmarun as ``python -m rma -n N program ...`` or ``python -m rma --info``."""

import sys

from .launcher import main

if __name__ == "__main__":
    sys.exit(main())
