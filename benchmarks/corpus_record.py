"""Record the corpus of planted mistakes (examples/findings/corpus.json) the ways tenprof itself is not
needed for: each script and its fixed twin timed un-profiled, and recorded under plain torch.profiler
without and with with_stack (see examples/findings/_common.py for how the script's loop does each), and
(mode `run`) with `tenprof run` itself, the recordings tests/data/finding_* hold.

    python benchmarks/corpus_record.py OUT_DIR [--only NAME,...] [--modes time,traces,run] [--deadline-s S]

Writes OUT_DIR/timings.jsonl (one line per script run: pair, twin, step_ms, the card) and
OUT_DIR/traces/<pair>[_fixed][_stack].json.gz, each trace recorded in a process of its own (a pair with
`nproc` runs that many processes under torch's launcher, and its trace is rank 0's), and
OUT_DIR/prof/<recording> for mode `run` (the pair's `recording` and `twin` names; at least RUN_STEPS steps,
so the run times some steps un-profiled under tenprof's default plan; with `--verify`, as tests/data's
recordings were made). Runs one process at a time (timings on a shared GPU would mean nothing); stops
starting runs once --deadline-s has passed, so a call of limited length returns what it finished.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "findings"
# steps 0-5 recorded, 6-8 settling, 9-11 timed (tenprof.capture.overhead_plan): the scripts' default of six
# would time none, and the findings would stand on the cost model's estimate of the un-profiled steps
RUN_STEPS = 12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", default="", help="comma-separated pair names (default: all)")
    parser.add_argument("--modes", default="time,traces")
    parser.add_argument("--deadline-s", type=float, default=1e9)
    parser.add_argument("--timeout-s", type=float, default=120)
    args = parser.parse_args()
    began = time.monotonic()
    pairs = json.loads((CORPUS / "corpus.json").read_text())["pairs"]
    only = {n for n in args.only.split(",") if n}
    (args.out / "traces").mkdir(parents=True, exist_ok=True)
    card = _card()
    for pair in pairs:
        if only and pair["name"] not in only:
            continue
        for fixed in (False, True):
            for mode in args.modes.split(","):
                if time.monotonic() - began > args.deadline_s:
                    print(f"deadline: stopped before {pair['name']} {mode}", flush=True)
                    return
                _one(args, pair, fixed, mode, card)


def _one(args: argparse.Namespace, pair: dict, fixed: bool, mode: str, card: str) -> None:
    name = pair["name"] + ("_fixed" if fixed else "")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CORPUS), os.environ.get("PYTHONPATH", "")]))
    trace = (args.out / "traces" / name).resolve()  # the scripts run in the corpus folder
    script = [pair["script"], *pair["args"], *(["--fixed"] if fixed else [])]
    # one process per GPU under torch's launcher where the pair needs several (`nproc`), else the script
    nproc = int(pair.get("nproc", 1))
    python = [sys.executable, *(["-m", "torch.distributed.run", f"--nproc-per-node={nproc}"] if nproc > 1 else [])]
    if mode == "run":
        recording = pair["recording"] if not fixed else pair.get("twin", pair["recording"] + "_fixed")
        if fixed and recording in _twins_of_others(pair):  # made with the pair it belongs to
            return
        launcher = ["-l", " ".join(python)] if nproc > 1 else []
        out = str((args.out / "prof" / recording).resolve())
        command = ["tenprof", "run", "--quiet", "--verify", *launcher, "-o", out]
        _run([*command, *_with_steps(script, RUN_STEPS)], env, args.timeout_s, f"{recording:28s} {mode:6s}")
        return
    if mode == "time":
        env["TENPROF_CORPUS_TIME"] = "1"
        rc, out = _run([*python, *script], env, args.timeout_s, f"{name:28s} {mode:6s}")
    else:
        # each trace in a process of its own: a one-off cost (a library loaded on first use) is paid once
        # per process, and a second run in the same one would not show it
        for suffix in ("", "_stack"):
            traced = dict(env, TENPROF_CORPUS_TRACE=f"{trace}{suffix}.json")
            if suffix:
                traced["TENPROF_CORPUS_STACK"] = "1"
            rc, out = _run([*python, *script], traced, args.timeout_s, f"{name + suffix:28s} {mode:6s}")
            if rc != 0:
                return
    if rc != 0:
        return
    if mode == "time":
        step_ms = next(float(w.split("=", 1)[1]) for w in out.split() if w.startswith("corpus_step_ms="))
        line = {"pair": pair["name"], "fixed": fixed, "step_ms": step_ms, "card": card, "args": script[1:]}
        timed = [w.split("=", 1)[1] for w in out.split() if w.startswith("corpus_timed_steps=")]
        if timed:
            line["timed_steps"] = int(timed[0])
        with (args.out / "timings.jsonl").open("a") as f:
            f.write(json.dumps(line) + "\n")
        return
    for suffix in ("", "_stack"):
        written = Path(f"{trace}{suffix}.json")
        if written.exists():
            with written.open("rb") as src, gzip.open(f"{written}.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            written.unlink()


def _twins_of_others(pair: dict) -> set[str]:
    """The fixed recordings the corpus's other pairs make under their own names."""
    pairs = json.loads((CORPUS / "corpus.json").read_text())["pairs"]
    return {p["recording"] + "_fixed" for p in pairs if p is not pair and p["name"] != pair["name"] and "twin" not in p}


def _with_steps(script: list[str], at_least: int) -> list[str]:
    """The script's command with `--steps` raised to at least `at_least` (added where it is not given)."""
    if "--steps" not in script:
        return [*script, "--steps", str(at_least)]
    i = script.index("--steps") + 1
    return [*script[:i], str(max(int(script[i]), at_least)), *script[i + 1 :]]


def _run(command: list[str], env: dict[str, str], timeout_s: float, label: str) -> tuple[int, str]:
    """Run one recording or timing in the corpus folder; print its outcome (the output's tail on failure)."""
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=CORPUS, env=env, capture_output=True, text=True, timeout=timeout_s)
        rc, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        rc, out = 124, "timed out"
    print(f"{label} rc={rc} {time.monotonic() - start:5.1f}s", flush=True)
    if rc != 0:
        print(out[-2000:], flush=True)
    return rc, out


def _card() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "cpu"


if __name__ == "__main__":
    main()
