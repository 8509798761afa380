"""Writing one pass of a profile: tables go to a temporary folder that is renamed into place at the end.

A pass folder that exists is therefore complete or explicitly marked partial; a crash mid-write leaves
only `<pass>.tmp`, which readers ignore and the next writer removes. Other passes are never touched.
Both names are claimed in the profile's marker before anything is written, so a later `--force` knows
they are tenprof's even if this process dies mid-pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tenprof.errors import ProfileError
from tenprof.store.directory import claim
from tenprof.store.schema import TABLES


class PassWriter:
    def __init__(self, profile_dir: Path, pass_name: str) -> None:
        self.final_dir = profile_dir / pass_name
        self.tmp_dir = profile_dir / f"{pass_name}.tmp"
        claim(profile_dir, pass_name, self.tmp_dir.name)
        if self.tmp_dir.exists():
            shutil.rmtree(self.tmp_dir)
        self.tmp_dir.mkdir(parents=True)
        self.rows: dict[str, int] = {}

    def write_table(self, name: str, table: pa.Table) -> None:
        expected = TABLES[name]
        if table.schema.names != expected.names:
            raise ProfileError(f"internal: table {name} has columns {table.schema.names}, expected {expected.names}")
        table = table.cast(expected)
        pq.write_table(table, self.tmp_dir / f"{name}.parquet", compression="zstd")
        self.rows[name] = table.num_rows

    def commit(self) -> None:
        if self.final_dir.exists():
            shutil.rmtree(self.final_dir)
        self.tmp_dir.rename(self.final_dir)

    def abandon(self) -> None:
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
