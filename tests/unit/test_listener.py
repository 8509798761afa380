"""The on-demand listener's requests, checked field by field (capture.listener): what a request may say,
and the one line each refusal gives; a handler that raises, answered with its error; the recorder's load
tried again; the real jobs are in tests/integration/test_on_demand.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tenprof.capture.listener import CaptureRequest, Listener, parse_request


def _line(**fields: object) -> bytes:
    return json.dumps({"tenprof": "capture", "version": 1, **fields}).encode()


def test_a_capture_request_names_steps_or_seconds_and_an_absolute_output() -> None:
    assert parse_request(_line(steps=3, output="/tmp/a/../out")) == CaptureRequest(3, "/tmp/out", False)
    assert parse_request(_line(seconds=2.5, output="/o", force=True)) == CaptureRequest(0, "/o", True, -1, 2.5)
    assert parse_request(_line(steps=2, output="/o", at_step=40)) == CaptureRequest(2, "/o", False, 40)
    assert parse_request(b'{"tenprof": "status", "version": 1}') is None


@pytest.mark.parametrize(
    ("line", "refusal"),
    [
        (b"GET / HTTP/1.1", "not a tenprof request"),
        (b'["capture"]', "not a tenprof request"),
        (_line(steps=3, output="/o", command="id"), "unknown fields: command"),
        (b'{"tenprof": "status", "version": 1, "output": "/o"}', "unknown fields: output"),
        (_line(steps=0, output="/o"), "steps must be a whole number from 1 to 100000"),
        (_line(steps=True, output="/o"), "steps must be a whole number from 1 to 100000"),
        (_line(steps="3", output="/o"), "steps must be a whole number from 1 to 100000"),
        (_line(steps=3, seconds=2, output="/o"), "give steps or seconds, not both"),
        (_line(seconds=-1, output="/o"), "seconds must be a number from 0 to 3600"),
        (_line(steps=3, output="relative/out"), "output must be an absolute path"),
        (_line(steps=3, output="/o\x00x"), "output must be an absolute path"),
        (_line(steps=3, output="/o", force="yes"), "force must be true or false"),
        (_line(steps=3, output="/o", at_step=-5), "at_step must be a whole number"),
        (json.dumps({"tenprof": "capture", "version": 2, "steps": 3, "output": "/o"}).encode(), "protocol version 2"),
    ],
)
def test_every_other_request_is_refused_in_one_line(line: bytes, refusal: str) -> None:
    found = parse_request(line)
    assert isinstance(found, str) and found.startswith(refusal) and "\\n" not in found


def test_all_ranks_start_two_steps_or_half_a_second_ahead_of_the_furthest_rank() -> None:
    from tenprof.cli.capture_command import ahead

    assert ahead(0.0) == 2 and ahead(3.0) == 2  # slow steps: two are enough
    assert ahead(33.3) == 17 and ahead(1000.0) == 500  # fast ones: half a second of them


def _ask(path: Path, line: bytes) -> list[dict[str, object]]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(path))
        client.sendall(line + b"\n")
        return [json.loads(answer) for answer in client.makefile("rb")]


def test_a_handler_that_raises_is_answered_with_its_error_not_a_closed_connection() -> None:
    # A status or a request whose handler raised used to close the connection with no answer, which the
    # client reads as a listener that is gone: --all-ranks then left that rank out without a word.
    def status() -> dict[str, object]:
        raise ImportError("cannot import name 'x' from partially initialized module 'y'")

    def on_request(request: CaptureRequest, reply: object) -> None:
        raise RuntimeError("no recorder")

    listener = Listener(on_request, status)
    try:
        (answer,) = _ask(listener.path, b'{"tenprof": "status", "version": 1}')
        assert answer["ok"] is False and "partially initialized module" in str(answer["error"])
        (answer,) = _ask(listener.path, _line(steps=2, output="/tmp/never"))
        assert answer == {"ok": False, "error": "the job could not take the request: RuntimeError('no recorder')"}
    finally:
        listener.close()


def test_all_ranks_asks_a_live_silent_listener_again_and_names_it_when_it_never_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a rank whose status failed every time was left out of --all-ranks with only a count to show for it
    # ("1 of the job's 2 ranks listen on this host"), once in many runs of the on-demand integration test
    from tenprof.cli import capture_command

    monkeypatch.setattr(capture_command, "STATUS_RETRY_S", 0.0)
    asked: list[int] = []
    failing = capture_command.STATUS_TRIES - 1  # the tries that fail before one answers

    def status() -> dict[str, object]:
        asked.append(1)
        if len(asked) <= failing:
            raise ImportError("cannot import name 'x' from partially initialized module 'y'")
        return {"pid": os.getpid(), "rank": 0, "world_size": 2, "job": "j", "step": 4}

    listener = Listener(lambda request, reply: None, status)
    try:
        unanswered: dict[Path, str] = {}
        answer = capture_command._status(listener.path, unanswered)  # answered at the last try
        assert answer is not None and answer["step"] == 4 and not unanswered
        assert len(asked) == capture_command.STATUS_TRIES
        asked.clear()
        monkeypatch.setattr(capture_command, "STATUS_TRIES", failing)  # now never in time
        assert capture_command._status(listener.path, unanswered) is None
        assert "partially initialized module" in unanswered[listener.path]
    finally:
        listener.close()


def test_the_recorder_is_loaded_again_after_an_import_that_met_the_jobs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from tenprof.record import on_demand

    calls: list[str] = []

    def flaky(name: str) -> None:
        calls.append(name)
        if len(calls) == 1:
            raise ImportError("cannot import name 'x' from partially initialized module 'y'")

    monkeypatch.setattr(on_demand.importlib, "import_module", flaky)
    monkeypatch.setattr(on_demand, "LOAD_RETRY_S", 0.0)
    on_demand._load_recorder()
    assert calls == ["tenprof.record.inprocess"] * 2

    def broken(name: str) -> None:
        raise ImportError("gone")

    monkeypatch.setattr(on_demand.importlib, "import_module", broken)
    with pytest.raises(ImportError, match="gone"):
        on_demand._load_recorder()


def test_a_socket_is_alive_while_its_process_runs(tmp_path: Path) -> None:
    from tenprof.cli.capture_command import _alive

    assert _alive(tmp_path / f"{os.getpid()}.sock")
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert not _alive(tmp_path / f"{ended.pid}.sock") and not _alive(tmp_path / "x.sock")
