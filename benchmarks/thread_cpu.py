"""Run a command and sample the CPU time of every thread of it and its descendants, to see which thread took
the time (a profiler's own threads against the script's).

    python benchmarks/thread_cpu.py OUT.jsonl [--every-s 0.25] -- COMMAND ...

Writes OUT.jsonl (one line per sample: seconds since start, pid, tid, the process's command line's first
words, the thread's name, its user and system CPU seconds so far) and prints, when the command has ended,
each thread's CPU seconds (its last sample), the largest first, and the command's exit code, which it
returns. Linux only (/proc); a thread that ends between two samples keeps the CPU of its last one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TypedDict

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class ThreadSample(TypedDict):
    t: float
    pid: int
    tid: int
    cmd: str
    thread: str
    user_s: float
    sys_s: float


def descendants(root: int) -> list[int]:
    """`root` and every process below it, from /proc's parent links."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def sample(pid: int, now: float) -> list[ThreadSample]:
    """Each thread of `pid` at `now`: its name and CPU seconds so far."""
    rows: list[ThreadSample] = []
    try:
        command = (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))[:120]
        tids = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return rows
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        rows.append(
            {
                "t": now,
                "pid": pid,
                "tid": tid,
                "cmd": command,
                "thread": name,
                "user_s": int(fields[11]) / TICKS,
                "sys_s": int(fields[12]) / TICKS,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--every-s", type=float, default=0.25)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    began = time.monotonic()
    proc = subprocess.Popen(command)
    last: dict[tuple[int, int], ThreadSample] = {}
    with args.out.open("w") as out:
        while proc.poll() is None:
            now = round(time.monotonic() - began, 3)
            for pid in descendants(proc.pid):
                for row in sample(pid, now):
                    last[(row["pid"], row["tid"])] = row
                    out.write(json.dumps(row) + "\n")
            time.sleep(args.every_s)
    total = sorted(last.values(), key=lambda r: -(r["user_s"] + r["sys_s"]))
    print(f"exit {proc.returncode}, {time.monotonic() - began:.1f} s; threads by CPU seconds (user+sys):")
    for row in total[:25]:
        who = f"pid {row['pid']:>7} tid {row['tid']:>7}  {row['thread']:16s}"
        print(f"  {row['user_s'] + row['sys_s']:7.2f}  {who}  {row['cmd'][:60]}")
    return int(proc.returncode)


if __name__ == "__main__":
    sys.exit(main())
