"""The profiler library's own log lines (Kineto, c10) kept out of what `tenprof run` shows and written to
`<pass>/raw/profiler.log`; everything else, partial lines included, passes at once and unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tenprof.capture.log_filter import KNOWN_LINES, LogFilter
from tenprof.record.launcher import _relay_ncu_output

# Lines of the exact shapes the profiler library prints (the first three seen on this project's machines).
USDT_START = "USDT:2026-11-26 10:31:43 3428:3428 SyncActivityProfilerHandler.cpp:52] profiler_start"


USDT_STOP = "USDT:2026-11-26 10:31:43 3428:3428 SyncActivityProfilerHandler.cpp:59] profiler_stop"


ALLOCATOR = (
    "[W1126 10:31:48.144574835 CPUAllocator.cpp:245] Memory block of unknown size was allocated before the "
    "profiling started, profiler results will not include the deallocation event"
)


NOISE = [
    USDT_START,
    USDT_STOP,
    ALLOCATOR,
    "STAGE:2024-01-05 09:02:11 77:77 ActivityProfilerController.cpp:314] Completed Stage: Warm Up",
    "STAGE:2024-01-05 09:02:12 77:77 ActivityProfilerController.cpp:320] Completed Stage: Collection",
    "[W CPUAllocator.cpp:249] Memory block of unknown size was allocated before the profiling started, "
    "profiler results will not include the deallocation event",
    "[rank1]:[W105 09:02:11.000000001 CPUAllocator.cpp:245] Memory block of unknown size was allocated before "
    "the profiling started, profiler results will not include the deallocation event",
    "[W kineto_shim.cpp:372] Profiler is not initialized: skipping step() invocation",
]


# The script's own lines, some of them close to the profiler's: all shown.
OWN = [
    "epoch 1: loss 0.25",
    "STAGE: warm up done",
    "STAGE 2 of the plan: Completed Stage: Warm Up",
    "USDT probes are enabled",
    "USDT:2026-11-26 10:31:43 profiler_start",  # no pid:tid, no file:line
    "Memory block of unknown size was allocated before the profiling started",
    "[W] CPUAllocator.cpp:245] Memory block of unknown size was allocated before the profiling started",
    "[W1126 10:31:48.144574835 my_allocator.cpp:12] Memory block of unknown size was allocated before the "
    "profiling started",
    "[W1126 10:31:48.144574835 train.cpp:12] a warning of the script's own C++ extension",
    "[E1126 10:31:48.144574835 kineto_shim.cpp:12] an error is shown",
    "",
]


def _filter() -> tuple[LogFilter, list[bytes], list[bytes]]:
    shown: list[bytes] = []
    logged: list[bytes] = []
    return LogFilter(shown.append, logged.append), shown, logged


def test_known_lines_go_to_the_log_and_the_scripts_lines_are_shown() -> None:
    log_filter, shown, logged = _filter()
    for own, noise in zip(OWN, NOISE, strict=False):  # interleaved, one line at a time
        log_filter.feed(own.encode() + b"\n")
        log_filter.feed(noise.encode() + b"\n")
    for own in OWN[len(NOISE) :]:
        log_filter.feed(own.encode() + b"\n")
    log_filter.close()
    assert b"".join(shown).decode() == "".join(line + "\n" for line in OWN)
    assert [line.decode() for line in logged] == [line + "\n" for line in NOISE]


def test_every_known_line_has_its_example() -> None:
    names = {known.name for known in KNOWN_LINES for line in NOISE if re.fullmatch(known.pattern, line)}
    assert names == {known.name for known in KNOWN_LINES} - {"kineto-log"}


def test_kinetos_warnings_and_errors_are_shown_and_logged() -> None:
    log_filter, shown, logged = _filter()
    warning = "WARNING:2026-11-26 10:31:43 3428:3428 CuptiActivityProfiler.cpp:1102] No CUPTI activity found\n"
    log_filter.feed(warning.encode())
    log_filter.close()
    assert b"".join(shown) == b"".join(logged) == warning.encode()


def test_partial_lines_pass_at_once_and_a_known_line_waits_only_for_its_newline() -> None:
    log_filter, shown, logged = _filter()
    log_filter.feed(b"\r 10%|#         | 1/10")
    assert shown == [b"\r 10%|#         | 1/10"]
    # Kineto writes a line's text, then its newline; here in the middle of a progress bar's line.
    log_filter.feed(USDT_START.encode())
    log_filter.feed(b"\n")
    log_filter.feed(b"\r 20%|##        | 2/10")
    assert b"".join(shown) == b"\r 10%|#         | 1/10\r 20%|##        | 2/10"
    assert logged == [USDT_START.encode() + b"\n"]
    log_filter.feed(b"\r100%|##########| 10/10\n")
    assert b"".join(shown).endswith(b"\r100%|##########| 10/10\n")


def test_a_known_line_cut_off_at_the_end_is_logged() -> None:
    log_filter, shown, logged = _filter()
    log_filter.feed(b"last words\n" + USDT_STOP.encode())
    assert shown == [b"last words\n"] and logged == []
    log_filter.close()
    assert logged == [USDT_STOP.encode() + b"\n"] and shown == [b"last words\n"]


def test_a_line_interrupted_by_a_carriage_return_ends_there() -> None:
    log_filter, shown, logged = _filter()
    log_filter.feed(USDT_STOP.encode() + b"\r 30%|###")
    assert logged == [USDT_STOP.encode() + b"\n"] and b"".join(shown) == b"\r 30%|###"


def test_ncu_relay_filters_the_scripts_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["==PROF== Connected to process 1\n", "hello from the script\n", USDT_START + "\n", ALLOCATOR + "\n"]
    _relay_ncu_output(iter(lines), tmp_path / "ncu.log", 0, "counters")
    assert capsys.readouterr().out == "hello from the script\n"
    assert (tmp_path / "profiler.log").read_text() == USDT_START + "\n" + ALLOCATOR + "\n"
    assert (tmp_path / "ncu.log").read_text() == "".join(lines)
