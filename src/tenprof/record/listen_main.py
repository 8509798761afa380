"""`python -m tenprof.record.listen_main [-m] TARGET ARGS...`: the script (or module) run as `__main__` with
only the on-demand listener (record.on_demand), as `tenprof run --on-demand` starts it. The process is the
script's own: its pid is the one `tenprof capture PID` names."""

from __future__ import annotations

import os
import runpy
import sys


def main(argv: list[str]) -> None:
    from tenprof.record.on_demand import listen

    module = bool(argv) and argv[0] == "-m"
    target, *args = argv[1:] if module else argv
    path = listen()
    print(
        f"tenprof: listening ({path}); capture the next steps with: tenprof capture {os.getpid()} -o OUT --steps N",
        file=sys.stderr,
        flush=True,
    )
    sys.argv = [target, *args]
    if module:
        sys.path.insert(0, os.getcwd())
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
