"""Workload: import the scientific stack an agent's script usually starts with.

Reads thousands of files (all read-only opens, which the filter lets through
without a trace stop) and maps shared libraries; writes nothing.
Usage: imports.py WORKDIR [SCALE]
"""
import sys

import matplotlib
import numpy
import pandas

print("numpy", numpy.__version__, "pandas", pandas.__version__,
      "matplotlib", matplotlib.__version__, "argv", len(sys.argv))
