"""Run a script under plain torch.profiler, for the overhead comparison in benchmarks/overhead.py.

    python benchmarks/torch_profiler_run.py [--stack] TRACE_OUT script.py args...

--stack turns on with_stack, record_shapes and profile_memory (the configuration tenprof replaces).
"""

import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    args = sys.argv[1:]
    full = args[0] == "--stack"
    if full:
        args = args[1:]
    trace_out, script = args[0], args[1]
    sys.argv = args[1:]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities, with_stack=full, record_shapes=full, profile_memory=full) as prof:
        runpy.run_path(script, run_name="__main__")
    prof.export_chrome_trace(trace_out)


if __name__ == "__main__":
    main()
