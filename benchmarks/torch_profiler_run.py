"""Run a script under plain torch.profiler, for the overhead comparison in benchmarks/overhead.py.

    python benchmarks/torch_profiler_run.py [--stack|--cuda-only] TRACE_OUT script.py args...

--stack turns on with_stack, record_shapes and profile_memory (the configuration tenprof replaces);
--cuda-only records GPU activity alone (CUPTI as Kineto enables it: kernels, copies, the CUDA API calls),
what tenprof's native capture leaves to the profiler.
"""

import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    args = sys.argv[1:]
    full = args[0] == "--stack"
    cuda_only = args[0] == "--cuda-only"
    if full or cuda_only:
        args = args[1:]
    trace_out, script = args[0], args[1]
    sys.argv = args[1:]
    activities = [] if cuda_only else [ProfilerActivity.CPU]
    activities += [ProfilerActivity.CUDA] if torch.cuda.is_available() else []
    with profile(activities=activities, with_stack=full, record_shapes=full, profile_memory=full) as prof:
        runpy.run_path(script, run_name="__main__")
    prof.export_chrome_trace(trace_out)


if __name__ == "__main__":
    main()
