"""The access tool's raw files (tenprof/native/access_tool.cpp) read into the accesses tables: written
here byte by byte in the documented layout, since the tool itself needs a GPU."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tenprof.importers.accesses_import import RECORD, RECORD_V1, RECORDS_HEADER, build_access_tables

PID = 4242
# (lane stride, sectors, lanes, pattern bits) of a warp of 32 lanes reading 4 contiguous bytes each
COALESCED = (4, 4, 32, 1 | 4)


def _write(
    raw: Path,
    launches: list[str],
    records: list[tuple[int, int, int, int, int, int]],
    tail: bytes = b"",
    lanes: list[tuple[int, int, int, int]] | None = None,
    old: bool = False,
) -> None:
    """The launch lines, and the records in the tool's layout (`old`: as written before the lanes were
    compared, without the header); `lanes` gives each record's pattern fields (default COALESCED)."""
    (raw / f"access-launches-{PID}.tsv").write_text("".join(line + "\n" for line in launches))
    packed = []
    for i, (launch, pc, address, nbytes, flags, weight) in enumerate(records):
        head = struct.pack("<IIQII", launch, pc, address, nbytes, flags | (weight << 8))
        pattern = lanes[i] if lanes else COALESCED
        packed.append(head if old else head + struct.pack("<iBBBB", *pattern, 0))
    (raw / f"access-records-{PID}.bin").write_bytes((b"" if old else RECORDS_HEADER) + b"".join(packed) + tail)


def test_record_layouts_are_packed() -> None:
    assert RECORD.itemsize == 32 and RECORD_V1.itemsize == 24


def test_records_are_summed_per_launch_pc_and_address_with_their_weights(tmp_path: Path) -> None:
    _write(
        tmp_path,
        [
            "0\t7\t7\t0\t3\t3\t0\t140000\t4,1,1\t128,1,1\t_ZN2at6native18elementwise_kernelEv",
            "1\t-1\t7\t0\t1\t1\t0\t150000\t1,1,1\t32,1,1\tgather_kernel",
        ],
        [
            (0, 0x40, 0x1000, 128, 1, 1),
            (0, 0x40, 0x1000, 128, 1, 1),  # the same warp address again (a loop): summed
            (0, 0x80, 0x2000, 512, 2, 64),  # a sampled store standing for 64 warp accesses
            (1, 0x10, 0x3000, 4, 1, 1),
            (9, 0x10, 0x3000, 4, 1, 1),  # a launch the launch file does not have: dropped
        ],
        tail=b"\x00" * 10,  # a record cut short by a crash
    )
    tables, report = build_access_tables(tmp_path, PID)
    rows = tables["accesses"].to_pylist()
    assert len(rows) == 3
    load = next(r for r in rows if r["pc_offset"] == 0x40)
    assert (load["op_seq"], load["count"], load["bytes"], load["is_write"]) == (7, 2, 256, False)
    store = next(r for r in rows if r["pc_offset"] == 0x80)
    assert (store["count"], store["bytes"], store["is_write"]) == (64, 512 * 64, True)
    outside = next(r for r in rows if r["launch_id"] == 1)
    assert outside["op_seq"] == -1 and outside["kernel"] == "gather_kernel"
    launches = tables["access_launches"].to_pylist()
    assert [lr["accesses"] for lr in launches] == [66, 1]
    assert launches[1]["last_op_seq"] == 7
    assert (report.launches, report.records, report.accesses) == (2, 4, 67)


def test_the_lanes_pattern_is_kept_per_record_and_summed_with_the_weights(tmp_path: Path) -> None:
    # One load PC read coalesced (4 sectors of 32 lanes x 4 bytes), one strided (16 KiB between lanes: a
    # sector per lane), one gathered (lanes unevenly spaced: stride null), each record standing for its weight.
    _write(
        tmp_path,
        ["0\t7\t7\t0\t4\t4\t0\t140000\t4,1,1\t128,1,1\tk"],
        [
            (0, 0x10, 0x1000, 128, 1, 1),
            (0, 0x20, 0x8000, 128, 1, 64),
            (0, 0x20, 0x8000, 128, 1, 1),
            (0, 0x30, 0x9000, 128, 1, 2),
        ],
        lanes=[COALESCED, (16384, 32, 32, 1 | 4), (16384, 32, 32, 1 | 4), (-77, 30, 32, 0)],
    )
    rows = {r["pc_offset"]: r for r in build_access_tables(tmp_path, PID)[0]["accesses"].to_pylist()}
    assert (rows[0x10]["lane_stride"], rows[0x10]["sectors"], rows[0x10]["min_sectors"]) == (4, 4, 4)
    strided = rows[0x20]
    assert (strided["count"], strided["lane_stride"], strided["sectors"], strided["min_sectors"]) == (
        65,
        16384,
        65 * 32,
        65 * 4,
    )
    assert strided["lanes"] == 65 * 32
    gathered = rows[0x30]
    assert gathered["lane_stride"] is None and (gathered["sectors"], gathered["min_sectors"]) == (60, 8)
    assert (strided["ascending"], gathered["ascending"]) == (65, 0)  # the gather's lanes go up and down


def test_a_bulk_copy_over_8_kib_counts_its_sectors_from_its_bytes(tmp_path: Path) -> None:
    # cp.async.bulk: one record per copy, its 8-bit sector count stops at 255; 16 KiB is 512 sectors
    _write(
        tmp_path,
        ["0\t7\t7\t0\t2\t2\t0\t140000\t1,1,1\t128,1,1\tk"],
        [(0, 0x10, 0x10000, 16384, 1, 1), (0, 0x20, 0x20000, 4096, 1, 3)],
        lanes=[(0, 255, 1, 2), (0, 128, 1, 2)],
    )
    rows = {r["pc_offset"]: r for r in build_access_tables(tmp_path, PID)[0]["accesses"].to_pylist()}
    assert (rows[0x10]["sectors"], rows[0x10]["min_sectors"]) == (512, 512)
    assert (rows[0x20]["sectors"], rows[0x20]["min_sectors"]) == (3 * 128, 3 * 128)


def test_records_written_before_the_lanes_were_compared_read_without_a_pattern(tmp_path: Path) -> None:
    _write(tmp_path, ["0\t7\t7\t0\t1\t1\t0\t140000\t4,1,1\t128,1,1\tk"], [(0, 0x10, 0x1000, 128, 1, 3)], old=True)
    (row,) = build_access_tables(tmp_path, PID)[0]["accesses"].to_pylist()
    assert (row["count"], row["bytes"]) == (3, 384)
    assert (row["lane_stride"], row["sectors"], row["min_sectors"], row["lanes"], row["ascending"]) == (None,) * 5


def test_full_buffer_and_tool_problems_are_reported(tmp_path: Path) -> None:
    _write(
        tmp_path, ["0\t3\t3\t0\t2\t5\t192\t140000\t1,1,1\t32,1,1\tk"], [(0, 0, 0x10, 4, 1, 1), (0, 0, 0x20, 4, 1, 1)]
    )
    (tmp_path / f"access-log-{PID}.txt").write_text("sanitizerPatchModule failed: invalid (7)\n")
    _, report = build_access_tables(tmp_path, PID)
    assert report.dropped_weight == 192
    assert report.problems == ["sanitizerPatchModule failed: invalid (7)"]


def test_no_files_give_empty_tables(tmp_path: Path) -> None:
    tables, report = build_access_tables(tmp_path, PID)
    assert tables["accesses"].num_rows == 0 and report.launches == 0


@pytest.mark.parametrize("line", ["0\t3\t3", "not\ta\tlaunch"])
def test_cut_lines_are_skipped(tmp_path: Path, line: str) -> None:
    _write(tmp_path, [line], [])
    tables, _ = build_access_tables(tmp_path, PID)
    assert tables["access_launches"].num_rows == 0


def test_built_pass_moves_this_process_files_and_keeps_the_records_gzipped(tmp_path: Path) -> None:
    from tenprof.record.pass_builders import finish_accesses
    from tenprof.store.writer import PassWriter

    tensors_raw = tmp_path / "tensors" / "raw"
    tensors_raw.mkdir(parents=True)
    _write(tensors_raw, ["0\t3\t3\t0\t1\t1\t0\t140000\t1,1,1\t32,1,1\tk"], [(0, 0x10, 0x40, 128, 1, 1)])
    (tensors_raw / "access-launches-99.tsv").write_text("")  # a child process of the script: dropped
    writer = PassWriter(tmp_path, "accesses")
    status = finish_accesses(writer, tensors_raw, PID, "")
    writer.commit()
    raw = tmp_path / "accesses" / "raw"
    assert status.state == "complete"
    assert "1 kernel launches, 1 access records for 1 warp accesses" in status.reason
    assert (raw / f"access-records-{PID}.bin.gz").exists() and not (raw / f"access-records-{PID}.bin").exists()
    assert not list(tensors_raw.glob("access-*"))
    tables, _ = build_access_tables(raw, PID)  # rebuilt from the kept files
    assert tables["accesses"].num_rows == 1


def test_nothing_recorded_fails_with_the_tool_problem(tmp_path: Path) -> None:
    from tenprof.record.pass_builders import finish_accesses
    from tenprof.store.writer import PassWriter

    (tmp_path / f"access-log-{PID}.txt").write_text("sanitizerAddPatchesFromFile failed: not found (3)\n")
    status = finish_accesses(PassWriter(tmp_path, "accesses"), tmp_path, PID, "")
    assert status.state == "failed" and "sanitizerAddPatchesFromFile" in status.reason
