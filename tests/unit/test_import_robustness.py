"""Issue 35, the import's side: every trace a new user tries imports, or says in one `tenprof: error:` line
why not (non-zero exit, no traceback, nothing half-written left behind); garbage in a trace is left out
and said, never taken silently; traces from elsewhere keep what they say (their rank, their kernels).

All traces here are small and synthetic, written by the tests."""

from __future__ import annotations

import multiprocessing
import time
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest

from tenprof.analyses.timeline.summary import summarize
from tenprof.cli import import_command
from tenprof.cli.main import main
from tenprof.errors import TraceFormatError
from tenprof.importers.formats import event_chunks
from tenprof.importers.formats.kineto_reader import TraceStream, valid_rank
from tenprof.store.profile import load_profile
from tests.helpers import error_lines, write_file

ROOT = Path(__file__).resolve().parents[2]


def _op(i: int, **changes: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 3}", "pid": 1, "tid": 1, "ts": 100.0 + 10 * i}
    event["dur"] = 5.0
    event.update(changes)
    return event


def _trace(events: list[dict[str, Any]], **keys: Any) -> bytes:
    return orjson.dumps({"schemaVersion": 1, **keys, "traceEvents": events, "baseTimeNanoseconds": 0})


def test_ctrl_c_during_a_folder_import_removes_the_ranks_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if multiprocessing.get_start_method() != "fork":
        pytest.skip("the stand-in import reaches the workers only when they are forked")
    folder = tmp_path / "traces"
    folder.mkdir()
    write_file(folder / "a.json", _trace([_op(0)]))
    write_file(folder / "b.json", _trace([_op(0)]))
    real = import_command.import_trace

    def interrupted_at_b(trace: Path, *args: Any) -> Any:
        if trace.name == "b.json":
            time.sleep(0.3)  # rank 0 is complete by then: it must go too
            raise KeyboardInterrupt  # what a Ctrl-C raises in the rank's worker
        return real(trace, *args)

    monkeypatch.setattr(import_command, "import_trace", interrupted_at_b)
    assert main(["import", "--quiet", str(folder), "-o", str(tmp_path / "out")]) == 130
    assert error_lines(capsys.readouterr().err) == [f"tenprof: error: interrupted; {tmp_path / 'out'} was removed"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "content",
    [
        b'{"traceEvents": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}",
        _trace([_op(0, args={"Input Dims": "DEEP"})]).replace(b'"DEEP"', b"[" * 200_000 + b"]" * 200_000),
    ],
    ids=["events", "an event's args"],
)
def test_a_trace_nested_200000_deep_is_one_line(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_file(tmp_path / "deep.json", content)
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 4
    (line,) = error_lines(capsys.readouterr().err)
    assert "nested too deeply" in line and "cut off" not in line, line
    assert not (tmp_path / "out").exists()


def test_a_profile_given_to_import_is_sent_to_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "prof"
    assert main(["import", "--quiet", str(write_file(tmp_path / "t.json", _trace([_op(0)]))), "-o", str(profile)]) == 0
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (profile).rename(ranks / "rank00000")  # a multi-rank profile: its ranks' profiles in rankNNNNN
    for given in (ranks / "rank00000", ranks):
        assert main(["import", str(given)]) == 2
        (line,) = error_lines(capsys.readouterr().err)
        assert f"{given} is a tenprof profile" in line and f"tenprof report {given}" in line, line
    # a profile of a tenprof from before the marker (tests/data's oldest recordings): its meta.json is not
    # read as a trace
    older = ROOT / "tests" / "data" / "mlp"
    assert not (older / ".tenprof-profile").exists()
    assert main(["import", str(older)]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert "looks like a tenprof profile" in line and f"tenprof report {older}" in line, line


def test_a_folder_whose_traces_all_fail_leaves_nothing_and_names_each_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "d2"
    folder.mkdir()
    write_file(folder / "x.json", _trace([_op(0)])[:40])
    write_file(folder / "y.json", b"nope")
    assert main(["import", "--quiet", str(folder), "-o", str(tmp_path / "out")]) == 1
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 2 and [line.count(".json") for line in lines] == [1, 1], lines
    assert not (tmp_path / "out").exists()


def test_events_with_impossible_times_are_left_out_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [_op(i) for i in range(16)]
    events += [_op(16, dur=-3.0), _op(17, dur=-1.0), _op(18, dur=1e300), _op(19, dur="NaN"), _op(20, ts="abc")]
    trace = write_file(tmp_path / "t.json", _trace(events))
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's, on casting a NaN, would fail here
        assert main(["import", "--quiet", str(trace), "-o", str(out)]) == 0
    profile = load_profile(out)
    ops = profile.table("ops")
    assert ops.num_rows == 16 and min(ops.column("duration_ns").to_pylist()) == 5000
    status = profile.meta.passes["timeline"]
    said = (
        "5 events were left out: 2 with a negative duration, 1 with a time that is not a number, "
        "1 with a duration that is not a number, 1 with a duration of more than a week"
    )
    assert status.state == "partial" and status.reason == said
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "5 events were left out" in " ".join(capsys.readouterr().out.split())


def test_one_kind_of_bad_event_is_said_in_its_own_words(tmp_path: Path) -> None:
    trace = write_file(tmp_path / "t.json", _trace([_op(i) for i in range(5)] + [_op(5, dur=-1.0), _op(6, dur=-2.0)]))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0
    reason = load_profile(tmp_path / "out").meta.passes["timeline"].reason
    assert reason == "2 events with a negative duration were left out"


def test_a_trace_of_mostly_bad_events_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_file(tmp_path / "t.json", _trace([_op(i, dur=-1.0) for i in range(10)] + [_op(10)]))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 4
    (line,) = error_lines(capsys.readouterr().err)
    assert "10 of its 11 events have times that cannot be right (10 with a negative duration)" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "content, cut_off",
    [
        (_trace([_op(0), _op(1)])[:-30], True),  # breaks off: the run writing it was stopped
        (_trace([_op(0)])[:25], True),  # breaks off before the events
        (_trace([_op(0)]).replace(b'"dur":5.0', b'"dur":5.0,,'), False),  # malformed: no such guess
        (b"hello, world", False),
    ],
)
def test_the_cut_off_hint_only_for_a_file_that_breaks_off(
    tmp_path: Path, content: bytes, cut_off: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_file(tmp_path / "t.json", content)
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 4
    (line,) = error_lines(capsys.readouterr().err)
    assert ("was the run cut off while writing it?" in line) == cut_off, line


def test_older_kineto_categories_are_read(tmp_path: Path) -> None:
    launch = {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "dur": 5.0}
    kernel = {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": 7, "dur": 20.0}
    copy = {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "dur": 3.0}
    events = [
        {**launch, "ts": 10.0, "args": {"correlation": 1}},
        {**kernel, "ts": 20.0, "args": {"correlation": 1, "device": 0, "stream": 7}},
        {**launch, "ts": 50.0, "args": {"correlation": 2}},
        {**kernel, "ts": 60.0, "args": {"correlation": 2, "device": 0, "stream": 7}},
        {**copy, "ts": 90.0, "args": {"correlation": 3, "device": 0, "stream": 7, "bytes": 64}},
    ]
    # as older Kineto wrote it: no schemaVersion, its rank after the events
    trace = write_file(tmp_path / "old.json", orjson.dumps({"traceEvents": events, "distributedInfo": {"rank": 1}}))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0
    profile = load_profile(tmp_path / "out")
    assert profile.table("kernels").column("api_call_id").to_pylist() == [0, 1]
    assert profile.table("transfers").num_rows == 1 and profile.table("api_calls").num_rows == 2
    # no deviceProperties, but kernels ran: a GPU, not "CPU only"
    assert summarize(profile).devices == ["GPU 0 (the trace does not name it)"]
    assert profile.meta.rank == 1


def test_a_trace_with_kernels_but_no_device_properties_is_not_cpu_only(tmp_path: Path) -> None:
    kernel = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20.0, "dur": 20.0}
    trace = write_file(tmp_path / "t.json", _trace([_op(0), {**kernel, "args": {"device": 2, "stream": 7}}]))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0
    assert summarize(load_profile(tmp_path / "out")).devices == ["GPU 2 (the trace does not name it)"]


def test_a_rank_keeps_its_own_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    write_file(folder / "t.json", _trace([_op(0)], distributedInfo={"rank": 3, "world_size": 4}))
    out = tmp_path / "out"
    assert main(["import", "--quiet", str(folder), "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["rank00003"]
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    assert [r["rank"] for r in orjson.loads(capsys.readouterr().out)["ranks"]] == [3]
    assert main(["report", str(out), "--rank", "3"]) == 0


@pytest.mark.parametrize("rank", ["../../x", -5, 1e30, True, 2**40, "3", 1.0, None])
def test_only_a_whole_number_is_a_rank(rank: object) -> None:
    assert valid_rank(rank) is None


def test_ranks_that_are_no_numbers_never_reach_a_path(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    for name, rank in (("a.json", "../../x"), ("b.json", -5), ("c.json", 1e30)):
        write_file(folder / name, _trace([_op(0)], distributedInfo={"rank": rank}))
    out = tmp_path / "out"
    assert main(["import", "--quiet", str(folder), "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "traces"]
    assert sorted(p.name for p in out.iterdir()) == ["rank00000", "rank00001", "rank00002"]
    assert [load_profile(out / f"rank0000{i}").meta.rank for i in range(3)] == [0, 1, 2]


def test_a_step_is_cut_to_the_recorded_window(tmp_path: Path) -> None:
    window = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler"}
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1}
    events = [
        {**window, "ts": 0.0, "dur": 355_000.0},
        {**step, "ts": 353_000.0, "dur": 13_340_000.0},  # a step annotation of 13.34 s
        _op(0, ts=353_100.0),
    ]
    trace = write_file(tmp_path / "t.json", _trace(events))
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0
    profile = load_profile(tmp_path / "out")
    assert profile.table("steps").column("duration_ns").to_pylist() == [2_000_000]
    status = profile.meta.passes["timeline"]
    assert status.state == "partial" and "ProfilerStep#1, from 13.34s to 2.00ms" in status.reason


def test_one_huge_event_is_refused_without_reading_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_chunks, "MAX_EVENT_BYTES", 1 << 20)
    trace = write_file(tmp_path / "t.json", _trace([_op(0, name="a" * (4 << 20))]))
    stream = TraceStream(trace, block_bytes=1 << 16)
    with pytest.raises(TraceFormatError, match=r"no event ends within 1 MB after byte \d+; not a trace"):
        stream.collect(1)
    assert stream.bytes_read < 2 << 20


@pytest.mark.parametrize(
    "content",
    [
        b'{"traceEvents": [' + b'{"cat":"mine","ph":"X"},' * 200_000 + b"{}]}",  # no Kineto key or event
        b'{"traceEvents": "none", "rest": "' + b"x" * (4 << 20) + b'"}',  # a key of that name, not an array
    ],
    ids=["no Kineto category", "traceEvents not an array"],
)
def test_json_that_is_no_trace_is_not_read_whole(
    tmp_path: Path, content: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_chunks, "HEAD_LIMIT", 1 << 20)
    trace = write_file(tmp_path / "t.json", content)
    stream = TraceStream(trace, block_bytes=1 << 16)
    with pytest.raises(TraceFormatError, match=r"not a torch\.profiler / Kineto trace"):
        stream.collect(1)
    assert stream.bytes_read < 2 << 20 < len(content)


def test_a_file_without_events_is_refused_within_4_mb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = write_file(tmp_path / "junk.json", b'{"weights": "' + b"x" * (6 << 20) + b'"}')
    assert main(["import", "--quiet", str(junk), "-o", str(tmp_path / "out")]) == 4
    (line,) = error_lines(capsys.readouterr().err)
    assert "no `traceEvents` array in its first 4 MB" in line, line
