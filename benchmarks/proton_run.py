"""Run a script under Proton (triton.profiler), for the overhead comparison in benchmarks/overhead.py.

    python benchmarks/proton_run.py PROFILE_NAME script.py args...

The session is started with the launch hook (`hook="triton"`: Triton kernels' launch metadata) before the
script runs as `__main__` and finalized after it, the way benchmarks/torch_profiler_run.py wraps the
script in torch.profiler; Proton writes PROFILE_NAME.hatchet. Proton is a CUPTI subscriber, so it runs
in a process of its own (GPU.md: one CUPTI subscriber per process).
"""

import runpy
import sys

import triton.profiler as proton  # type: ignore[import-not-found, unused-ignore]


def main() -> None:
    name, script = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[2:]
    proton.start(name, hook="triton")
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        proton.finalize()


if __name__ == "__main__":
    main()
