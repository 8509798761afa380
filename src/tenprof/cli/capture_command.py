"""`tenprof capture PID -o OUT --steps N`: record the next N steps of a running job that listens
(`tenprof run --on-demand`, or `tenprof.listen()` in the script), into a profile at OUT.

It asks the job's listener (capture.listener: the job's user's own Unix socket) and waits until the job
wrote the profile; the job records from its next tenprof.step() on and goes on as before afterwards.
Ctrl-C here stops the waiting, not the capture. Every refusal is one line: no listener in that process, a
capture already running, an output that exists (--force replaces a tenprof profile), the job ending first.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path

from tenprof.capture.listener import PROTOCOL, socket_path
from tenprof.cli.common import non_negative_int
from tenprof.errors import Interrupted, TenprofError, UsageError


class CaptureCommand:
    """Record the next steps of a running job started with `tenprof run --on-demand`."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("pid", type=int, help="the job's process id (printed by tenprof run --on-demand)")
        parser.add_argument("-o", "--output", required=True, help="profile directory to write")
        parser.add_argument("--steps", type=non_negative_int, default=5, help="how many steps to record (default 5)")
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")

    def run(self, args: argparse.Namespace) -> int:
        if args.steps < 1:
            raise UsageError("--steps must be 1 or more")
        path = socket_path(args.pid)
        if not path.exists():
            raise UsageError(
                f"no tenprof listener in process {args.pid}: start the job with tenprof run --on-demand, or call "
                "tenprof.listen() in it"
            )
        output = str(Path(args.output).resolve())
        request = {"tenprof": "capture", "version": PROTOCOL, "steps": args.steps, "output": output}
        request["force"] = args.force
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                try:
                    client.connect(str(path))
                except OSError as exc:
                    raise UsageError(f"process {args.pid} does not answer on {path}: {exc.strerror or exc}") from None
                client.sendall(json.dumps(request).encode() + b"\n")
                for line in client.makefile("rb"):
                    answer = json.loads(line)
                    if not answer.get("ok"):
                        raise TenprofError(f"process {args.pid}: {answer.get('error', 'refused')}")
                    if answer.get("state") == "armed":
                        print(f"tenprof: process {args.pid} records its next {args.steps} steps", file=sys.stderr)
                        continue
                    partial = f" (partial: {answer.get('why')})" if answer.get("partial") else ""
                    print(f"tenprof: profile written to {output}/{partial} (tenprof report {output})", file=sys.stderr)
                    return 0
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted; process {args.pid} still records into {output}") from None
        raise TenprofError(f"process {args.pid} ended before it wrote the profile")
