"""The access pass's raw files (written by tenprof/native/access_tool.cpp) read into tables.

Files, per process (`<pid>` is the profiled process's; processes the script started are ignored):
- `access-launches-<pid>.tsv`: one line per kernel launch: launch id, op seq (-1 outside ops), last op
  seq started, ordinal in the op, records written, records claimed, dropped weight, function start pc,
  grid "x,y,z", block "x,y,z", kernel (mangled) name;
- `access-records-<pid>.bin` (`.bin.gz` once the pass is built): the header "TPACCv2\n", then packed
  little-endian {u32 launch id, u32 pc offset, u64 address, u32 bytes, u32 flags_weight, i32 lane
  stride, u8 sectors, u8 lanes, u8 pattern bits, u8 0} (flags in the low 8 bits: 1 read, 2 write; the
  rest the weight; tenprof/native/access_format.h). A file without the header was written before the
  lanes were compared: the first six fields only, and the pattern columns read as nulls.
- `access-log-<pid>.txt`: the tool's own problems, one per line.

Records are summed per (launch, pc offset, address, write, lane stride): `count` is the warp accesses
they stand for, `bytes` the bytes those moved (each record's warp bytes times its weight), and likewise
`sectors` (32-byte sectors touched), `min_sectors` (sectors the same bytes would touch read contiguously)
`lanes`, and `ascending` (accesses whose lanes' addresses never go down from one lane to the next);
`lane_stride` is null where the lanes were not evenly spaced. A launch line without
records (an unfinished last launch) or records of an unknown launch are dropped and counted.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from tenprof.store.schema import ACCESS_LAUNCHES, ACCESSES
from tenprof.store.writer import PassWriter

RECORD_V1 = np.dtype([("launch", "<u4"), ("pc_offset", "<u4"), ("address", "<u8"), ("bytes", "<u4"), ("flags", "<u4")])
RECORD = np.dtype(
    [
        ("launch", "<u4"),
        ("pc_offset", "<u4"),
        ("address", "<u8"),
        ("bytes", "<u4"),
        ("flags", "<u4"),
        ("lane_stride", "<i4"),
        ("sectors", "u1"),
        ("lanes", "u1"),
        ("pattern", "u1"),
        ("pad", "u1"),
    ]
)
RECORDS_HEADER = b"TPACCv2\n"
SAME_STRIDE = 0x1  # pattern bits (access_format.h)
BULK = 0x2
ASCENDING = 0x4
SECTOR_BYTES = 32
WRITE_FLAG = 0x2
LAUNCH_FIELDS = 11


@dataclass
class AccessReport:
    launches: int = 0
    records: int = 0
    accesses: int = 0  # warp accesses the records stand for
    dropped_weight: int = 0  # warp accesses lost to a full buffer
    launches_without_records: int = 0
    problems: list[str] = field(default_factory=list)


def access_files(raw_dir: Path, pid: int) -> tuple[Path, Path, Path]:
    return (
        raw_dir / f"access-launches-{pid}.tsv",
        raw_dir / f"access-records-{pid}.bin",
        raw_dir / f"access-log-{pid}.txt",
    )


def read_launches(path: Path) -> dict[str, list[object]]:
    columns: dict[str, list[object]] = {name: [] for name in ACCESS_LAUNCHES.names}
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) != LAUNCH_FIELDS:
            continue  # a line cut short by a crash
        launch, op, last_op, ordinal, written, claimed, dropped, _pc, grid, block = parts[:10]
        columns["launch_id"].append(int(launch))
        columns["op_seq"].append(int(op))
        columns["last_op_seq"].append(int(last_op))
        columns["ordinal"].append(int(ordinal))
        columns["kernel"].append(parts[10])
        columns["records"].append(int(written))
        columns["claimed"].append(int(claimed))
        columns["dropped_weight"].append(int(dropped))
        columns["accesses"].append(0)  # filled from the records
        columns["grid"].append(grid)
        columns["block"].append(block)
    return columns


def read_records(path: Path) -> np.ndarray:
    """The records file, as the tool wrote it or gzipped (`<name>.bin.gz`, how a built pass keeps it), in
    the RECORD layout (from a file without the header: the pattern fields zero, `lanes` 0 meaning unknown)."""
    packed = path.with_name(path.name + ".gz")
    if path.exists():
        data = path.read_bytes()
    elif packed.exists():
        data = gzip.decompress(packed.read_bytes())
    else:
        data = b""
    if data.startswith(RECORDS_HEADER):
        body = data[len(RECORDS_HEADER) :]
        whole = len(body) - len(body) % RECORD.itemsize  # a record cut short by a crash is dropped
        return np.frombuffer(body[:whole], dtype=RECORD)
    whole = len(data) - len(data) % RECORD_V1.itemsize
    old = np.frombuffer(data[:whole], dtype=RECORD_V1)
    records = np.zeros(len(old), dtype=RECORD)
    for name in RECORD_V1.names or ():
        records[name] = old[name]
    return records


def _sectors(records: np.ndarray, warp_bytes: np.ndarray) -> np.ndarray:
    """Sectors each record's warp access touched: as the patch counted them, but a bulk copy's from its
    bytes (one contiguous block, 16-byte aligned; the record's 8-bit count stops at 255 sectors, 8 KiB)."""
    bulk = (records["pattern"] & BULK) != 0
    return np.where(bulk, -(-warp_bytes // SECTOR_BYTES), records["sectors"].astype(np.int64))


def build_access_tables(raw_dir: Path, pid: int) -> tuple[dict[str, pa.Table], AccessReport]:
    launches_path, records_path, log_path = access_files(raw_dir, pid)
    report = AccessReport()
    if log_path.exists():
        report.problems = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    launches = read_launches(launches_path) if launches_path.exists() else {n: [] for n in ACCESS_LAUNCHES.names}
    records = read_records(records_path)
    ids = np.asarray(launches["launch_id"], dtype=np.int64)
    # launch id -> row of the launch table (ids are small, dense numbers)
    lookup = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
    lookup[ids] = np.arange(len(ids))
    launch = records["launch"].astype(np.int64)
    row = np.full(len(records), -1, dtype=np.int64)
    known = launch < len(lookup)
    row[known] = lookup[launch[known]]
    records, row = records[row >= 0], row[row >= 0]

    weight = (records["flags"] >> 8).astype(np.int64)
    launches["accesses"] = np.bincount(row, weights=weight, minlength=len(ids)).astype(np.int64).tolist()
    known_lanes = records["lanes"] > 0  # 0: recorded before the lanes were compared
    warp_bytes = records["bytes"].astype(np.int64)
    evenly = known_lanes & ((records["pattern"] & SAME_STRIDE) != 0)
    # Sum per (launch, pc offset, address, write, stride): a hash aggregation in Arrow, then a stable order.
    grouped = (
        pa.table(
            {
                "row": row,
                "pc_offset": records["pc_offset"].astype(np.int64),
                "address": records["address"].view(np.int64),
                "is_write": (records["flags"] & WRITE_FLAG) != 0,
                "lane_stride": pa.array(records["lane_stride"].astype(np.int64), mask=~evenly),
                "count": weight,
                "bytes": weight * warp_bytes,
                "sectors": pa.array(weight * _sectors(records, warp_bytes), mask=~known_lanes),
                "min_sectors": pa.array(weight * -(-warp_bytes // SECTOR_BYTES), mask=~known_lanes),
                "lanes": pa.array(weight * records["lanes"], mask=~known_lanes),
                "ascending": pa.array(weight * ((records["pattern"] & ASCENDING) != 0), mask=~known_lanes),
            }
        )
        .group_by(["row", "pc_offset", "address", "is_write", "lane_stride"])
        .aggregate([(c, "sum") for c in ("count", "bytes", "sectors", "min_sectors", "lanes", "ascending")])
        .sort_by([("row", "ascending"), ("pc_offset", "ascending"), ("address", "ascending")])
    )
    of_row = grouped.column("row").to_numpy().astype(np.int64)
    accesses = {
        "launch_id": ids[of_row],
        "op_seq": np.asarray(launches["op_seq"], dtype=np.int64)[of_row],
        # the name repeats on every row of a launch: taken from the launch table inside Arrow
        "kernel": pa.array(launches["kernel"], type=pa.string()).take(of_row),
        "ordinal": np.asarray(launches["ordinal"], dtype=np.int32)[of_row],
        "pc_offset": grouped.column("pc_offset"),
        "address": grouped.column("address"),
        "bytes": grouped.column("bytes_sum"),
        "is_write": grouped.column("is_write"),
        "count": grouped.column("count_sum"),
        "lane_stride": grouped.column("lane_stride"),
        "sectors": grouped.column("sectors_sum"),
        "min_sectors": grouped.column("min_sectors_sum"),
        "lanes": grouped.column("lanes_sum"),
        "ascending": grouped.column("ascending_sum"),
    }
    report.launches = len(ids)
    report.records = len(records)
    report.accesses = int(weight.sum())
    report.dropped_weight = int(np.asarray(launches["dropped_weight"], dtype=np.int64).sum())
    report.launches_without_records = int(sum(1 for n in launches["records"] if n == 0))
    tables = {
        "accesses": pa.table(accesses, schema=ACCESSES),
        "access_launches": pa.table(launches, schema=ACCESS_LAUNCHES),
    }
    return tables, report


def build_accesses_pass(writer: PassWriter, raw_dir: Path, pid: int) -> AccessReport:
    tables, report = build_access_tables(raw_dir, pid)
    for name, table in tables.items():
        writer.write_table(name, table)
    return report
