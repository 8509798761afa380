"""A loop's steps one by one, plain and recorded: which steps hold the capture's cost.

    python benchmarks/step_by_step.py [--capture native-cupti] [--rounds 3] [--json OUT.json] SCRIPT [ARGS...]

Each round runs the script plain under benchmarks/step_marks.py (its `tenprof.step()` calls marked on the
perf clock, nothing captured) and then under `tenprof run --capture CAPTURE --overhead-steps 0` (every step
recorded), so the two sit side by side step by step: the median over the rounds of each step's time, plain
and recorded, their ratio, and whether the recorded run asked for every op's inputs in that step (the
native captures' input sampling, meta.timeline.input_sampling's `asked`). A whole-loop ratio
(benchmarks/overhead.py) says how much; this says where: in the steps that asked, the first ones, or all.
Prints the card and the table; every round's steps go to --json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

from overhead import machine_info

from tenprof.store.profile import load_profile

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def plain_steps(script: list[str], marks: Path) -> list[int]:
    """Each step's nanoseconds in a plain run, numbered as tenprof numbers them (0 before the first mark)."""
    subprocess.run([sys.executable, str(HERE / "step_marks.py"), str(marks), *script], cwd=ROOT, check=True)
    at = json.loads(marks.read_text())
    return [b - a for a, b in pairwise(at)]


def recorded_steps(script: list[str], capture: str, out: Path) -> tuple[list[int], list[int]]:
    """Each step's own nanoseconds in a recorded run (-1 where not timed), and the steps that asked for inputs."""
    command = [sys.executable, "-m", "tenprof", "run", "--quiet", "--capture", capture, "--overhead-steps", "0"]
    subprocess.run([*command, "-o", str(out), *script], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    profile = load_profile(out)
    steps = profile.table("steps").to_pydict()
    own = dict(zip(steps["step"], steps["own_duration_ns"], strict=True))
    sampling = profile.meta.timeline.input_sampling or {}
    return [own.get(n, -1) for n in range(max(own) + 1)], list(sampling.get("asked") or [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capture", default="native-cupti")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("script", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    args.script[0] = str(Path(args.script[0]).resolve())  # the runs start in the repository's root
    info = machine_info()
    print(f"{info.get('card') or 'no GPU'}, driver {info.get('driver', '-')}, {info['date']}", flush=True)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tenprof-steps-") as scratch:
        for r in range(args.rounds):
            plain = plain_steps(args.script, Path(scratch) / f"marks{r}.json")
            recorded, asked = recorded_steps(args.script, args.capture, Path(scratch) / f"prof{r}")
            rounds.append({"plain_ns": plain, "recorded_ns": recorded, "asked": asked})
            if args.json:
                args.json.write_text(json.dumps({"machine": info, "script": args.script, "rounds": rounds}, indent=1))
    print(f"{'step':>4} {'plain ms':>9} {'recorded ms':>11} {'ratio':>6}  asked (rounds)")
    count = min(min(len(x["plain_ns"]), len(x["recorded_ns"])) for x in rounds)
    for n in range(count):
        plain = statistics.median(x["plain_ns"][n] for x in rounds)
        timed = [x["recorded_ns"][n] for x in rounds if x["recorded_ns"][n] > 0]
        recorded = statistics.median(timed) if timed else float("nan")
        asked = sum(n in x["asked"] for x in rounds)
        ratio = recorded / plain if plain > 0 else float("nan")
        print(f"{n:>4} {plain / 1e6:9.3f} {recorded / 1e6:11.3f} {ratio:6.2f}  {asked}/{len(rounds)}")


if __name__ == "__main__":
    main()
