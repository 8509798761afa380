"""Run a script with Python's garbage collector off, to tell its pauses from the profiler's cost.

python examples/nogc.py SCRIPT [ARGS...]   (or under tenprof run)
"""

import gc
import runpy
import sys

gc.disable()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
