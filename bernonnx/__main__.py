"""``python -m bernonnx``: the ``bernonnx`` command line (see :mod:`bernonnx.cli`)."""

import sys

from bernonnx.cli import main

if __name__ == "__main__":
    sys.exit(main())
