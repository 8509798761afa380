"""`tenprof capture PID|SOCKET -o OUT --steps N`: record the next N steps of a running job that listens
(`tenprof run --on-demand`, or `tenprof.listen()` in the script), into a profile at OUT.

It asks the job's listener (capture.listener: the job's user's own Unix socket) and waits until the job
wrote the profile; the job records from its next tenprof.step() on and goes on as before afterwards.
`--all-ranks`: every rank of PID's job listening on this host (same launcher run) records the same steps,
from a step none has reached yet (two steps or half a second at the fastest rank's pace after the furthest
one; or `--at-step S`, which the ranks on other hosts are then given too), each into OUT/rankNNNNN, merged
by `tenprof report OUT`. Ctrl-C here stops the waiting, not the capture.
Every refusal is one line: no listener in that process, a capture already running, an output that exists
(--force replaces a tenprof profile), an `--at-step` the job has reached already, the job ending first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tenprof.capture.listener import PROTOCOL, STATUS, socket_dir, socket_path
from tenprof.cli.common import non_negative_int
from tenprof.errors import Interrupted, TenprofError, UsageError

AHEAD = 2  # --all-ranks: start at least this many steps after the furthest rank, so that none has passed it
STATUS_RETRY_S = 0.5  # --all-ranks: the pause before asking a live job's silent listener again
STATUS_TRIES = 3  # and how often it is asked in all
LEAD_S = 0.5  # --all-ranks: and at least this long after it, at the fastest rank's pace (requests take time to
# reach every rank: on a loaded 2-core machine two steps of 30 ms were once too few)


class CaptureCommand:
    """Record the next steps of a running job started with `tenprof run --on-demand`."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "pid",
            metavar="PID|SOCKET",
            help="the job's process id, or its listener's socket path (both printed by tenprof run --on-demand)",
        )
        parser.add_argument("-o", "--output", required=True, help="profile directory to write")
        parser.add_argument("--steps", type=non_negative_int, default=5, help="how many steps to record (default 5)")
        parser.add_argument(
            "--seconds",
            type=float,
            default=0.0,
            help="record for this long from now instead, steps or not (a job that never calls tenprof.step())",
        )
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")
        parser.add_argument(
            "--all-ranks",
            action="store_true",
            help="every rank of PID's job listening on this host records the same steps, into OUTPUT/rankNNNNN",
        )
        parser.add_argument(
            "--at-step", type=int, default=-1, help="start once this many steps have ended (default: the next step)"
        )

    def run(self, args: argparse.Namespace) -> int:
        if args.steps < 1:
            raise UsageError("--steps must be 1 or more")
        if args.seconds < 0 or (args.seconds and args.all_ranks):
            raise UsageError("--seconds must be positive, and records one process (not with --all-ranks)")
        output = Path(args.output).resolve()
        path, args.pid = _target(args.pid)
        if args.all_ranks:
            return _all_ranks(args, output)
        request = _request(args.steps, output, args.force, args.at_step, args.seconds)
        return _capture(path, args.pid, request, output)


def _target(given: str) -> tuple[Path, int]:
    """The listener's socket and the job's pid, from a pid or from a socket path (whose job says its pid)."""
    if given.isdigit():
        return _listening(int(given)), int(given)
    path = Path(given)
    status = _status(path) if path.is_socket() else None
    if status is None:
        raise UsageError(f"{given}: neither a process id nor the socket of a tenprof listener that answers")
    return path, int(status["pid"])


def _listening(pid: int) -> Path:
    path = socket_path(pid)
    if not path.exists():
        raise UsageError(
            f"no tenprof listener in process {pid}: start the job with tenprof run --on-demand, or call "
            "tenprof.listen() in it"
        )
    return path


def _request(steps: int, output: Path, force: bool, at_step: int, seconds: float = 0.0) -> dict[str, Any]:
    request: dict[str, Any] = {"tenprof": "capture", "version": PROTOCOL, "output": str(output), "force": force}
    if seconds:
        request["seconds"] = seconds
    else:
        request.update(steps=steps, at_step=at_step)
    return request


def _answers(path: Path, request: dict[str, Any]) -> Any:
    """The listener's answers to one request, line by line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(path))
        client.sendall(json.dumps(request).encode() + b"\n")
        for line in client.makefile("rb"):
            yield json.loads(line)


def _capture(path: Path, pid: int, request: dict[str, Any], output: Path, quiet: bool = False) -> int:
    try:
        for answer in _answers(path, request):
            if not answer.get("ok"):
                raise TenprofError(f"process {pid}: {answer.get('error', 'refused')}")
            if answer.get("state") == "armed":
                if not quiet:
                    what = f"{request['seconds']:g} s" if "seconds" in request else f"its next {request['steps']} steps"
                    print(f"tenprof: process {pid} records {what}", file=sys.stderr)
                continue
            partial = f" (partial: {answer.get('why')})" if answer.get("partial") else ""
            print(f"tenprof: profile written to {output}/{partial} (tenprof report {output})", file=sys.stderr)
            return 0
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; process {pid} still records into {output}") from None
    except OSError as exc:
        raise UsageError(f"process {pid} does not answer on {path}: {exc.strerror or exc}") from None
    raise TenprofError(f"process {pid} ended before it wrote the profile")


def _status(path: Path, unanswered: dict[Path, str] | None = None) -> dict[str, Any] | None:
    """The listener's status answer; None where none came. A live job's listener that gave none is asked
    again after a pause, STATUS_TRIES times in all (its first answer loads the recorder beside the job's own
    imports); what the last try got is noted in `unanswered` where given, so a rank left out is said."""
    answer, why = _status_once(path)
    for _ in range(STATUS_TRIES - 1):
        if answer is not None or not _alive(path):
            break
        time.sleep(STATUS_RETRY_S)
        answer, why = _status_once(path)
    if answer is None and unanswered is not None and _alive(path):
        unanswered[path] = why
    return answer


def _status_once(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The status answer, or None and what came instead."""
    try:
        answers = list(_answers(path, {"tenprof": STATUS, "version": PROTOCOL}))
    except (OSError, ValueError) as exc:  # a listener of a process that ended, or a garbled answer
        return None, str(exc) or type(exc).__name__
    answer = answers[0] if answers else None
    if isinstance(answer, dict) and answer.get("ok"):
        return answer, ""
    return None, str(answer.get("error", answer)) if isinstance(answer, dict) else "no answer"


def _alive(sock: Path) -> bool:
    """Whether the process whose listener socket this is (`<pid>.sock`) still runs."""
    try:
        os.kill(int(sock.stem), 0)
    except ValueError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def ahead(steps_per_s: float) -> int:
    """How many steps after the furthest rank --all-ranks starts: AHEAD, or LEAD_S at the given pace."""
    return max(AHEAD, math.ceil(steps_per_s * LEAD_S))


def _all_ranks(args: argparse.Namespace, output: Path) -> int:
    """Every rank of PID's job listening here records the same steps (see the module)."""
    from tenprof.cli.launch import prepare_ranks_dir
    from tenprof.store.directory import rank_dir

    asked = _status(_listening(args.pid))
    if asked is None or not asked.get("job") or asked.get("world_size", 1) < 2:
        raise UsageError(f"process {args.pid} is no rank of a job of several (started by torchrun or another launcher)")
    found = []
    unanswered: dict[Path, str] = {}
    for sock in socket_dir().glob("*.sock"):
        status = _status(sock, unanswered)
        if status is not None and status.get("job") == asked["job"]:
            found.append((status, sock, time.monotonic()))
    for sock, why in unanswered.items():  # maybe a rank of this job: said, not left out without a word
        print(f"tenprof: the listener of process {sock.stem} did not say its status ({why}): left out", file=sys.stderr)
    found.sort(key=lambda each: int(each[0]["rank"]))
    ranks = [(status, sock) for status, sock, _ in found]
    # asked again: the first answers waited while each rank loaded its recorder (seconds, in which the ranks
    # ran on), these come at once and say where the ranks are now, and with the first how fast they step
    now, pace = [], 0.0
    for status, sock, answered in found:
        again = _status(sock) or status
        now.append(again)
        pace = max(pace, (int(again["step"]) - int(status["step"])) / max(time.monotonic() - answered, 1e-3))
    start = args.at_step if args.at_step >= 0 else max(int(s["step"]) for s in now) + ahead(pace)
    if len(ranks) < asked["world_size"]:
        print(
            f"tenprof: {len(ranks)} of the job's {asked['world_size']} ranks listen on this host: capture the others "
            f"on theirs with --at-step {start}",
            file=sys.stderr,
        )
    prepare_ranks_dir(output, args.force)
    results: dict[int, str] = {}

    def one(status: dict[str, Any], sock: Path) -> None:
        target = rank_dir(output, int(status["rank"]))
        try:
            _capture(sock, int(status["pid"]), _request(args.steps, target, args.force, start), target, quiet=True)
            results[int(status["rank"])] = ""
        except TenprofError as exc:
            results[int(status["rank"])] = str(exc)

    threads = [threading.Thread(target=one, args=found) for found in ranks]
    said = f"steps {start}-{start + args.steps - 1} of the job (counted from 0)"
    print(f"tenprof: {len(ranks)} ranks record {said}", file=sys.stderr)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = {rank: error for rank, error in results.items() if error}
    for rank, error in sorted(failed.items()):
        print(f"tenprof: error: rank {rank}: {error}", file=sys.stderr)
    print(f"tenprof: merged report: tenprof report {output}", file=sys.stderr)
    return 1 if failed else 0
