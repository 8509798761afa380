"""`Profile`: read access to a profile directory (tables as Arrow, SQL through DuckDB, meta).

Tables are read lazily and cached. A table whose pass is missing reads as an empty table of the right
schema, and `missing()` says which passes are absent or incomplete and why, so every report can say so.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tenprof.errors import ProfileError
from tenprof.store.meta import META_FILE, Meta, read_meta
from tenprof.store.schema import PASS_TABLES, SCHEMA_VERSION, TABLES


class Profile:
    def __init__(self, directory: Path, meta: Meta) -> None:
        self.directory = directory
        self.meta = meta
        self._tables: dict[str, pa.Table] = {}

    def table_path(self, name: str) -> Path | None:
        for pass_name, names in PASS_TABLES.items():
            if name in names:
                path = self.directory / pass_name / f"{name}.parquet"
                return path if path.exists() else None
        raise KeyError(f"unknown table {name!r}; known: {', '.join(TABLES)}")

    def table(self, name: str) -> pa.Table:
        if name not in self._tables:
            path = self.table_path(name)
            if path is None:
                self._tables[name] = TABLES[name].empty_table()
            else:
                self._tables[name] = pq.read_table(path, schema=TABLES[name])
        return self._tables[name]

    def column(self, table: str, column: str) -> Any:
        """One column as a numpy array (zero-copy where Arrow allows)."""
        return self.table(table).column(column).to_numpy()

    def has_pass(self, pass_name: str) -> bool:
        status = self.meta.passes.get(pass_name)
        return bool(
            status is not None and status.state in ("complete", "partial") and (self.directory / pass_name).is_dir()
        )

    def missing(self) -> list[str]:
        """Human-readable lines for passes that are absent, failed or partial."""
        lines = []
        for name, status in self.meta.passes.items():
            if status.state != "complete":
                lines.append(f"{name}: {status.state}" + (f" ({status.reason})" if status.reason else ""))
        return lines

    @cached_property
    def has_gpu(self) -> bool:
        return bool(self.table("kernels").num_rows > 0 or self.table("transfers").num_rows > 0)

    def sql(self, query: str) -> pa.Table:
        """Run SQL over the tables (each registered under its name) with an in-memory DuckDB."""
        import duckdb

        con = duckdb.connect()
        try:
            for name in TABLES:
                con.register(name, self.table(name))
            relation = con.sql(query)
            # DuckDB 2 names it to_arrow_table(); DuckDB 1 has arrow().
            fetch = getattr(relation, "to_arrow_table", None) or getattr(relation, "arrow")  # noqa: B009
            table: pa.Table = fetch()
            return table
        finally:
            con.close()


def load_profile(path: str | Path) -> Profile:
    directory = Path(path)
    if not directory.is_dir():
        raise ProfileError(f"{directory}: no such profile directory (make one with `tenprof run` or `tenprof import`)")
    if not (directory / META_FILE).exists():
        raise ProfileError(f"{directory}: not a tenprof profile (no {META_FILE})")
    try:
        meta = read_meta(directory)
    except ValueError as exc:
        raise ProfileError(f"{directory}/{META_FILE} is unreadable: {exc.__class__.__name__}") from exc
    if meta.schema_version > SCHEMA_VERSION:
        raise ProfileError(
            f"{directory} was written by a newer tenprof (schema {meta.schema_version} > {SCHEMA_VERSION}); "
            "upgrade tenprof"
        )
    return Profile(directory, meta)


def with_tables(profile: Profile, tables: dict[str, pa.Table]) -> Profile:
    """A profile that reads `tables` from memory and everything else from `profile` (for selections)."""
    derived = Profile(profile.directory, profile.meta.model_copy(deep=True))
    derived._tables = {**{n: profile.table(n) for n in TABLES}, **tables}
    return derived
