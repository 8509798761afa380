"""Every Python function call a script makes in chosen steps, counted, and the compiled kernels' launchers
as the run left them: where a `tenprof run`'s steps timed un-profiled spend main-thread time that the same
steps of a plain run do not. Call counts do not depend on how loaded the machine is, so one run on each side
tells extra work apart from a slower machine.

    python benchmarks/step_calls.py OUT.json FIRST-LAST SCRIPT [ARGS...]
    tenprof run benchmarks/step_calls.py OUT.json FIRST-LAST SCRIPT [ARGS...]
    python benchmarks/step_calls.py --diff PLAIN.json TENPROF.json [N]

Steps are numbered as tenprof numbers them (step 0 is the code before the first `tenprof.step()`). Python's
own profiler (cProfile) runs from the start of step FIRST to the end of step LAST; under `tenprof run`,
tenprof's boundary work stays outside it (the profiler starts after tenprof's step call and stops before the
next one), and the chosen steps should be ones the run times un-profiled (a recorded step's capture uses
Python's profile hook itself).

OUT.json holds `calls`: [function, calls, own seconds, cumulative seconds] for every function called in the
steps, most-called first; `cpu_ns`: the main thread's CPU time over them; and `launchers`: for each Inductor
kernel launcher object alive at the end (CachingAutotuner), whether its launcher builds Triton's launch
metadata on every launch (a launch hook was installed when it was made) and whether it has the fast path's
cached launcher, counted, with Triton's launch hooks as they stand at the end. `--diff` prints the two
files' launchers and the N functions (default 40) whose own time or call count differs most.

A control: STEP_CALLS_KINETO=N (a plain run) records steps 0 to N-1 with torch.profiler (CPU and CUDA
activity, Kineto told to tear CUPTI down at the stop, as tenprof's sessions are), stopped at the start of
step N: what a profiler session that ran earlier in the process leaves in the steps after it.
"""

from __future__ import annotations

import atexit
import cProfile
import gc
import json
import os
import pstats
import runpy
import sys
import time
from pathlib import Path
from typing import Any

import tenprof


def _span(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    return int(first), int(last or first)


class StepCalls:
    """Wraps `tenprof.step`: cProfile on over steps FIRST..LAST, between the calls that bound them."""

    def __init__(self, first: int, last: int) -> None:
        self.first = first
        self.last = last
        self.calls_made = 0  # tenprof.step() calls so far: the step now running is this number
        self.profile = cProfile.Profile()
        self.cpu_ns = 0
        self._cpu_began = 0
        self._original = tenprof.step
        self.kineto_until = int(os.environ.get("STEP_CALLS_KINETO", "0") or 0)
        self._kineto: Any = None
        if self.kineto_until > 0:
            os.environ.setdefault("TEARDOWN_CUPTI", "1")
            import torch

            activities = [torch.profiler.ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self._kineto = torch.profiler.profile(activities=activities, record_shapes=True, with_stack=True)
            self._kineto.start()

    def step(self, *args: Any, **kwargs: Any) -> None:
        ending = self.calls_made  # the step this call ends
        if self._kineto is not None and ending + 1 == self.kineto_until:
            self._kineto.stop()
            self._kineto = None
        if ending == self.last:
            self.profile.disable()
            self.cpu_ns += time.thread_time_ns() - self._cpu_began
        self._original(*args, **kwargs)
        self.calls_made += 1
        if self.calls_made == self.first:
            self._cpu_began = time.thread_time_ns()
            self.profile.enable()


def _function_rows(profile: cProfile.Profile) -> list[list[Any]]:
    try:
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    except TypeError:  # the profile never ran (the script ended before step FIRST)
        return []
    rows = [
        [f"{Path(file).name}:{line}({name})", calls, round(own, 6), round(cumulative, 6)]
        for (file, line, name), (_, calls, own, cumulative, _) in stats.items()
    ]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def _launchers() -> dict[str, Any]:
    """Inductor's kernel launchers alive now: how many build launch metadata each launch, how many have the
    fast path's cached launcher, and Triton's launch hooks."""
    counts = {"autotuners": 0, "launchers": 0, "with_launch_metadata": 0, "cached_fast_path": 0, "no_cache_attr": 0}
    kinds: dict[str, int] = {}
    for obj in gc.get_objects():
        if type(obj).__name__ not in ("CachingAutotuner", "DebugAutotuner"):
            continue
        counts["autotuners"] += 1
        cached = getattr(obj, "_cached_launcher", "absent")
        if cached == "absent":
            counts["no_cache_attr"] += 1
        elif cached is not None:
            counts["cached_fast_path"] += 1
        for launcher in getattr(obj, "launchers", []) or []:
            counts["launchers"] += 1
            code = getattr(launcher, "__code__", None)
            if code is not None and "launch_metadata" in code.co_names:
                counts["with_launch_metadata"] += 1
            kind = type(launcher).__name__
            kinds[kind] = kinds.get(kind, 0) + 1
    hooks: dict[str, str] = {}
    try:
        from triton import knobs  # type: ignore[import-not-found]

        hooks = {
            "launch_enter_hook": repr(knobs.runtime.launch_enter_hook),
            "launch_exit_hook": repr(knobs.runtime.launch_exit_hook),
        }
    except Exception as exc:  # no Triton, or one without knobs
        hooks = {"error": f"{exc.__class__.__name__}: {exc}"}
    return {**counts, "launcher_types": kinds, "hooks": hooks}


def diff(plain_path: str, tenprof_path: str, top: int) -> None:
    plain, profiled = (json.loads(Path(p).read_text()) for p in (plain_path, tenprof_path))
    for name, data in ((Path(plain_path).name, plain), (Path(tenprof_path).name, profiled)):
        calls = sum(row[1] for row in data["calls"])
        print(f"{name}: steps {data['steps']}, main-thread CPU {data['cpu_ns'] / 1e6:.2f} ms, {calls} calls")
        print(f"  launchers: {json.dumps(data['launchers'])}")
    before = {row[0]: row for row in plain["calls"]}
    after = {row[0]: row for row in profiled["calls"]}
    rows = []
    for key in before.keys() | after.keys():
        a, b = before.get(key, [key, 0, 0.0, 0.0]), after.get(key, [key, 0, 0.0, 0.0])
        if a[1] != b[1] or abs(a[2] - b[2]) > 5e-4:
            rows.append((b[2] - a[2], key, a[1], b[1], a[2], b[2]))
    rows.sort(key=lambda row: (-abs(row[0]), row[1]))
    print("own-time change  function  calls first -> second  own time first -> second")
    for change, key, calls_a, calls_b, own_a, own_b in rows[:top]:
        print(f"{change * 1e3:+9.3f} ms  {key}  {calls_a} -> {calls_b}  {own_a * 1e3:.3f} -> {own_b * 1e3:.3f} ms")


def main() -> None:
    if sys.argv[1] == "--diff":
        diff(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 40)
        return
    out = Path(sys.argv[1])
    first, last = _span(sys.argv[2])
    sys.argv = sys.argv[3:]  # as the script sees them: its path, then its arguments
    watcher = StepCalls(first, last)
    tenprof.step = watcher.step  # the scripts call tenprof.step() by attribute, each step

    def write() -> None:
        data = {
            "steps": [first, last],
            "steps_seen": watcher.calls_made,
            "cpu_ns": watcher.cpu_ns,
            "launchers": _launchers(),
            "calls": _function_rows(watcher.profile),
        }
        out.write_text(json.dumps(data))

    atexit.register(write)
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
