"""Instructions a training step costs under the native capture, counted by valgrind's callgrind: no timing
noise, so parts of the capture too small for a loaded 2-core machine's clock can be told apart.

    python benchmarks/step_instructions.py [--modes plain,every,sampled,ops-off,ops-sampled,timed-off]
        [--steps 5,105]
        [--keep DIR]

Each mode runs a CPU MLP (16 layers of 32, batch 8, SGD) for each step count in its own process under
callgrind, the process ending right after its loop (no trace written, nothing after); the instructions of a
step are the difference between the two counts over the difference in steps, so start-up (importing torch,
building the model, starting the capture) drops out. PYTHONHASHSEED is fixed so that the interpreter's own
work does not differ between runs. Modes: plain (no capture), every (`--capture native`'s session asking for
every op's inputs in every step: TENPROF_INPUTS=every), sampled (its default, inputs in sampled steps),
ops-off (that session with its op callbacks and allocator reports paused: what is left of it in a step),
ops-sampled (TENPROF_OPS=sampled as a GPU run has it: op callbacks on only in the steps the sampling asks
in, allocator reports on), timed-off (that session's steps all run as the ones it times un-profiled:
everything of tenprof's off, which should cost what plain does; issue 36), each without the host sampler and
the NVML thread (threads whose instructions would depend on wall time).
Needs valgrind; about 2.5 minutes a run on the development machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MODES = ("plain", "every", "sampled", "ops-off", "ops-sampled", "timed-off")


def child(mode: str, steps: int) -> None:
    """The loop itself, run under callgrind."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(16) for m in (torch.nn.Linear(32, 32), torch.nn.ReLU())])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 32)
    session = None
    if mode != "plain":
        os.environ["TENPROF_INPUTS"] = "every" if mode == "every" else "sampled"
        os.environ["TENPROF_GPU_CLOCKS"] = "0"
        from tenprof.capture.timeline import TimelineOptions, TimelineSession

        options = TimelineOptions(capture="native", sample_interval_ns=0, overhead_steps=0)
        session = TimelineSession(Path(tempfile.mkdtemp(prefix="tenprof-instr-")), options)
        session.start()
        if mode == "ops-off":  # the op callbacks off, the rest of the session on: a step without op records
            session.log.recorder.paused = True
        # op records in sampled steps alone (TENPROF_OPS=sampled, which a run without CUDA launches to copy
        # ops by leaves off: set here, as a GPU run would have it)
        session._ops_sampled = mode == "ops-sampled"
        if mode == "timed-off":  # every step one the session times un-profiled, from the first on
            from tenprof.capture.overhead_plan import OverheadPlan

            session._plan = OverheadPlan(count=10**9, after=1)  # as a schedule's measured steps are planned
            session.step()  # the switch happens at a step boundary: step 0 (recorded) ends before the loop
    for _ in range(steps):
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if session is not None:
            session.step()
    sys.stdout.flush()
    os._exit(0)  # the instructions counted end with the loop


def count(mode: str, steps: int, out: Path) -> int:
    """The instructions callgrind counted for one run."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    command = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        sys.executable, __file__, "--child", mode, str(steps),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if not found:
        raise SystemExit(f"callgrind counted nothing for {mode} x {steps}: {run.stderr.strip()[-300:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--steps", default="5,105", help="two step counts")
    parser.add_argument("--keep", type=Path, help="keep callgrind's output files here (callgrind_annotate reads them)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt install valgrind)")
    few, many = (int(s) for s in args.steps.split(","))
    base: float | None = None
    with tempfile.TemporaryDirectory(prefix="tenprof-callgrind-") as scratch:
        where = args.keep or Path(scratch)
        where.mkdir(parents=True, exist_ok=True)
        for mode in args.modes.split(","):
            counts = [count(mode, n, where / f"{mode}.{n}") for n in (few, many)]
            per_step = (counts[1] - counts[0]) / (many - few)
            base = per_step if mode == "plain" else base
            ratio = f"  x{per_step / base:.2f} of plain" if base else ""
            runs = f"{counts[0]:>15,} ({few} steps) {counts[1]:>15,} ({many})"
            print(f"{mode:8s} {runs} -> {per_step / 1e6:.3f}M a step{ratio}")


if __name__ == "__main__":
    main()
