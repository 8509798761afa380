"""The streaming reader: header keys, and one clear error for each kind of bad file."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tenprof.errors import TraceFormatError
from tenprof.importers.formats.kineto_reader import TraceStream
from tests.conftest import DATA


def test_reads_events_and_header_of_a_real_trace() -> None:
    stream = TraceStream(DATA / "conv" / "timeline" / "raw" / "kineto_trace.json.gz")
    events = list(stream.events())
    assert len(events) > 100
    assert stream.header.base_time_ns > 1_700_000_000 * 10**9
    assert stream.header.device_properties and "H" in stream.header.device_properties[0]["name"]
    assert stream.header.other.get("traceName")


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "na', "not a complete JSON"),
        (b'{"hello": "world"}', "no `traceEvents`"),
        (b"this is not json", "not valid JSON"),
    ],
)
def test_bad_json_gives_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=message):
        list(TraceStream(path).events())


def test_truncated_gzip_is_reported(tmp_path: Path) -> None:
    data = gzip.compress(b'{"traceEvents": [' + b'{"ph": "X", "name": "a", "ts": 1, "dur": 2},' * 2000 + b"]}")
    path = tmp_path / "t.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError):
        list(TraceStream(path).events())


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        list(TraceStream(tmp_path / "nope.json").events())


def test_keys_after_the_events_survive_brackets_in_their_values(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(
        b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}],'
        b' "traceName": "run[3].json", "baseTimeNanoseconds": 1700000000000000000,'
        b' "deviceProperties": [{"id": 0, "name": "GPU[x]"}]}'
    )
    stream = TraceStream(path)
    assert len(list(stream.events())) == 1
    assert stream.header.base_time_ns == 1700000000000000000
    assert stream.header.device_properties == [{"id": 0, "name": "GPU[x]"}]
    assert stream.header.other["traceName"] == "run[3].json"
