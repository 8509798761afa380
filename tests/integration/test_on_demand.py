"""On-demand capture of a running job (`tenprof run --on-demand`, `tenprof capture PID`), on the CPU: the
listener's socket and its permissions, a capture of three steps, the refusals (a second capture while one
runs, a request that is not tenprof's, no listener), and a job that ends during a capture (saved partial)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tenprof.capture.listener import socket_path
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]

JOB = textwrap.dedent(
    """
    import json, sys, time, torch, tenprof
    from pathlib import Path
    from tenprof.capture import runtime
    stop = Path(sys.argv[1])
    w = torch.randn(128, 128)
    steps = 0
    while not stop.exists():
        (torch.randn(32, 128) @ w).relu().sum()
        time.sleep(0.05)
        tenprof.step()
        steps += 1
    print(json.dumps({"steps": steps, "recording_after": runtime.current() is not None}))
    """
)


def _request(path: Path, message: bytes) -> list[dict[str, object]]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(path))
        client.sendall(message)
        return [json.loads(line) for line in client.makefile("rb")]


def _job(tmp_path: Path, text: str, name: str = "job.py", env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The script `text` started under `tenprof run --on-demand`, once it listens; it runs until
    tmp_path/stop exists."""
    script = tmp_path / name
    script.write_text(text)
    job = subprocess.Popen(
        [sys.executable, "-m", "tenprof", "run", "--on-demand", str(script), str(tmp_path / "stop")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    said = job.stderr.readline().decode() if job.stderr else ""
    assert said.startswith("tenprof: listening") and f"tenprof capture {job.pid} " in said, said
    return job


def test_a_running_job_records_its_next_steps_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = tmp_path / "stop"
    job = _job(tmp_path, JOB)
    try:
        path = socket_path(job.pid)
        # the job's user's alone: the socket 0600 in a 0700 folder
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert _request(path, b"GET / HTTP/1.0\r\n\r\n") == [{"ok": False, "error": "not a tenprof request"}]
        bad = b'{"tenprof": "capture", "version": 1, "steps": 3, "output": "rel", "exec": "rm -rf /"}\n'
        assert _request(path, bad)[0]["error"] == "unknown fields: exec"

        out = tmp_path / "out"
        assert main(["capture", str(path), "-o", str(out), "--steps", "3"]) == 0  # by its socket, as by its pid
        assert "profile written to" in capsys.readouterr().err
        profile = load_profile(out)
        assert profile.meta.passes["timeline"].state == "complete"
        assert int(profile.table("steps").column("complete").to_numpy(zero_copy_only=False).sum()) == 3
        assert profile.table("ops").num_rows > 0
        assert main(["capture", str(job.pid), "-o", str(out), "--steps", "3"]) == 2  # exists, no --force
        assert "already exists" in capsys.readouterr().err
        # a step that has begun is refused, not recorded late (ranks would record different steps)
        assert main(["capture", str(job.pid), "-o", str(tmp_path / "late"), "--at-step", "1"]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert "step 1 had begun when the request came" in line and not (tmp_path / "late").exists()

        # a long capture; a second one meanwhile is refused, naming the first; the job ends during it
        long_out = tmp_path / "long"
        answers: list[int] = []
        first = threading.Thread(
            target=lambda: answers.append(main(["capture", str(job.pid), "-o", str(long_out), "--steps", "1000"]))
        )
        first.start()
        deadline = time.monotonic() + 30
        while not long_out.exists() and time.monotonic() < deadline:  # the job made it: the capture runs
            time.sleep(0.05)
        second = _request(
            path,
            json.dumps({"tenprof": "capture", "version": 1, "steps": 2, "output": str(tmp_path / "x")}).encode()
            + b"\n",
        )
        assert second == [{"ok": False, "error": f"a capture is already running in process {job.pid}, into {long_out}"}]
        stop.write_text("")
        first.join(60)
        assert answers == [0]
        assert "partial: the job ended during the capture" in capsys.readouterr().err
        assert load_profile(long_out).meta.passes["timeline"].state == "partial"
        output, _ = job.communicate(timeout=60)
        ended = json.loads(output.decode().strip().splitlines()[-1])
        assert job.returncode == 0 and ended["steps"] > 3
    finally:
        stop.write_text("")
        if job.poll() is None:
            job.kill()
    assert not path.exists()  # the listener went with the job


def test_a_socket_that_is_no_listener_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", str(tmp_path / "nothing.sock"), "-o", str(tmp_path / "o")]) == 2
    assert "neither a process id nor the socket of a tenprof listener" in capsys.readouterr().err


def test_no_listener_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", str(os.getpid()), "-o", "/tmp/never"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"tenprof: error: no tenprof listener in process {os.getpid()}")


RANK_JOB = textwrap.dedent(
    """
    import json, sys, time, torch, tenprof
    from pathlib import Path
    from tenprof.capture import runtime
    stop = Path(sys.argv[1])
    recorded, steps = [], 0
    while not stop.exists():
        torch.ones(64, 64).sum()
        if runtime.current() is not None:
            recorded.append(steps)
        time.sleep(0.03)
        tenprof.step()
        steps += 1
    print(json.dumps(recorded))
    """
)


def test_every_rank_of_a_job_records_the_same_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = tmp_path / "stop"
    run = f"test-{os.getpid()}"
    jobs = [
        _job(tmp_path, RANK_JOB, "rank.py", dict(os.environ, TORCHELASTIC_RUN_ID=run, RANK=str(r), WORLD_SIZE="2"))
        for r in (0, 1)
    ]
    try:
        out = tmp_path / "out"
        assert main(["capture", str(jobs[1].pid), "--all-ranks", "-o", str(out), "--steps", "2"]) == 0
        said = capsys.readouterr().err
        if "2 ranks record steps" not in said:  # what the jobs said, for a failure that shows once in many runs
            stop.write_text("")
            jobs_said = [job.communicate(timeout=60)[1].decode()[-2000:] for job in jobs]
            raise AssertionError(f"{said}\n--- the jobs' stderr:\n" + "\n---\n".join(jobs_said))
        stop.write_text("")
        recorded = [json.loads(job.communicate(timeout=60)[0].decode().strip().splitlines()[-1]) for job in jobs]
        assert len(recorded[0]) == 2 and recorded[0] == recorded[1]  # the same steps of the job on both ranks
        profiles = [load_profile(out / f"rank0000{r}") for r in (0, 1)]
        assert [(p.meta.rank, p.meta.world_size, p.meta.passes["timeline"].state) for p in profiles] == [
            (0, 2, "complete"),
            (1, 2, "complete"),
        ]
        assert main(["report", str(out)]) == 0 and "2 ranks" in capsys.readouterr().out
    finally:
        stop.write_text("")
        for job in jobs:
            if job.poll() is None:
                job.kill()


NO_STEPS_JOB = textwrap.dedent(
    """
    import sys, time, torch
    from pathlib import Path
    stop = Path(sys.argv[1])
    w = torch.randn(64, 64)
    while not stop.exists():
        (torch.randn(16, 64) @ w).relu().sum()
        time.sleep(0.01)
    """
)


def test_a_job_without_steps_is_recorded_by_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = tmp_path / "stop"
    job = _job(tmp_path, NO_STEPS_JOB)
    try:
        out = tmp_path / "out"
        assert main(["capture", str(job.pid), "-o", str(out), "--seconds", "0.5"]) == 0
        assert "records 0.5 s" in capsys.readouterr().err
        profile = load_profile(out)
        assert profile.meta.passes["timeline"].state == "complete" and profile.table("ops").num_rows > 10
        assert profile.meta.run.wall_time_s >= 0.45  # stopped by time (the job still runs: below)
        assert job.poll() is None  # the job goes on
    finally:
        stop.write_text("")
        job.communicate(timeout=60)
    assert job.returncode == 0


def test_listening_loads_nothing_of_the_recorder_until_a_request() -> None:
    # a job that is never captured keeps its process as it was: no pyarrow, pydantic or capture modules
    probe = (
        "import sys, torch, tenprof; tenprof.listen(); "
        "print(sorted(m for m in ('pyarrow', 'pydantic', 'duckdb', 'tenprof.record.inprocess') if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    shown = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and shown.stdout.strip() == "[]", shown.stderr
