"""Run a script under torch's execution-trace observer (the other way to see every op's tensors), for
the tensors-pass comparison in benchmarks/overhead.py.

    python benchmarks/execution_trace_run.py TRACE_OUT script.py args...
"""

import runpy
import sys

from torch.profiler import ExecutionTraceObserver


def main() -> None:
    trace_out, script = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[2:]
    observer = ExecutionTraceObserver().register_callback(trace_out)
    observer.start()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        observer.stop()
        observer.unregister_callback()


if __name__ == "__main__":
    main()
