"""`Profile`: read access to a profile directory (tables as Arrow, SQL through DuckDB, meta).

Tables are read lazily and cached. A table whose pass is missing reads as an empty table of the right
schema, and `missing()` says which passes are absent or incomplete and why, so every report can say so.
A table that meta.json says a pass wrote is checked when read: its file (and pass folder) must be there,
hold the rows meta.json recorded, and read as that table; otherwise the profile is damaged and reading
raises a one-line `ProfileError` (a damaged profile must not read as an empty one).
"""

from __future__ import annotations

import shlex
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tenprof.errors import ProfileError
from tenprof.store.derived import fill_derived
from tenprof.store.meta import META_FILE, Meta, PassStatus, read_meta
from tenprof.store.schema import PASS_TABLES, SCHEMA_VERSION, TABLES, Pass
from tenprof.store.strings import Strings

BUILT = ("complete", "partial")
KEPT_TRACE = Path("raw") / "kineto_trace.json.gz"  # the timeline pass's recording, kept by `tenprof run`


def pass_of(table: str) -> str:
    """The pass that writes `table`."""
    for pass_name, names in PASS_TABLES.items():
        if table in names:
            return pass_name
    raise KeyError(f"unknown table {table!r}; known: {', '.join(TABLES)}")


class Profile:
    def __init__(self, directory: Path, meta: Meta) -> None:
        self.directory = directory
        self.meta = meta
        self._tables: dict[str, pa.Table] = {}
        self._strings: dict[tuple[str, str], Strings] = {}

    def table_path(self, name: str) -> Path | None:
        """The table's file; None when its pass did not write it (it then reads as empty). Raises
        `ProfileError` when meta.json says the pass wrote it but the file or the pass folder is gone."""
        pass_name = pass_of(name)
        status = self._built(pass_name)
        path = self.directory / pass_name / f"{name}.parquet"
        if path.exists():
            return path
        if status is not None and name in status.rows:  # older profiles may lack an entry: not damage
            raise self._damaged(
                pass_name,
                f"{path} is missing, but meta.json says the {pass_name} pass wrote {status.rows[name]} rows to it",
            )
        return None

    def table(self, name: str) -> pa.Table:
        if name not in self._tables:
            path = self.table_path(name)
            if path is None:
                self._tables[name] = TABLES[name].empty_table()
            else:
                self._tables[name] = fill_derived(name, self._read(name, path))
        return self._tables[name]

    def check(self) -> None:
        """Raise `ProfileError` for the first damaged table, without reading any (file, footer, rows, columns):
        cheap enough to call before a report prints anything."""
        for name in TABLES:
            path = self.table_path(name)
            if path is not None:
                self._open(name, path).close()

    def column(self, table: str, column: str) -> Any:
        """One column as a numpy array (zero-copy where Arrow allows)."""
        return self.table(table).column(column).to_numpy()

    def strings(self, table: str, column: str) -> Strings:
        """A string column encoded as codes into its distinct values (store.strings), made once."""
        key = (table, column)
        if key not in self._strings:
            self._strings[key] = Strings.of(self.table(table).column(column))
        return self._strings[key]

    def has_pass(self, pass_name: str) -> bool:
        """meta.json says the pass was built (complete or partial). Raises `ProfileError` when its folder is gone."""
        return self._built(pass_name) is not None

    def missing(self) -> list[str]:
        """Human-readable lines for passes that are absent, failed or partial."""
        lines = []
        for name, status in self.meta.passes.items():
            if status.state != "complete":
                lines.append(f"{name}: {status.state}" + (f" ({status.reason})" if status.reason else ""))
        return lines

    def _built(self, pass_name: str) -> PassStatus | None:
        """The pass's status when it was built, None when absent, failed or still running."""
        status = self.meta.passes.get(pass_name)
        if status is None or status.state not in BUILT:
            return None
        if not (self.directory / pass_name).is_dir():
            raise self._damaged(
                pass_name,
                f"{self.directory / pass_name} is missing, but meta.json says the {pass_name} pass is {status.state}",
            )
        return status

    def _read(self, name: str, path: Path) -> pa.Table:
        """The table's file, checked (`_open`) and read as the declared table. A file written with the
        declared columns is read as it is (a quarter of the time Arrow's dataset reader takes for the small
        files most tables are); one written before a column was added goes through the dataset reader,
        which fills the missing columns with nulls."""
        schema = TABLES[name]
        with self._open(name, path) as file:
            try:
                if file.schema_arrow.names != schema.names:
                    return pq.read_table(path, schema=schema)
                # the declared schema (its column docs) over the columns as read; a type that differs fails
                return pa.Table.from_arrays(file.read().columns, schema=schema)
            except (pa.ArrowException, OSError) as exc:
                what = f"{path} does not read as the {name} table ({_why(exc)})"
                raise self._damaged(pass_of(name), what) from exc

    def _open(self, name: str, path: Path) -> pq.ParquetFile:
        """The table's file, open, once its footer reads and passes `_inspect`."""
        try:
            file = pq.ParquetFile(path)
            columns = file.schema_arrow.names
        except (pa.ArrowException, OSError) as exc:
            raise self._damaged(pass_of(name), f"{path} is not a readable Parquet file ({_why(exc)})") from exc
        try:
            self._inspect(name, path, file.metadata.num_rows, columns)
        except ProfileError:
            file.close()
            raise
        return file

    def _inspect(self, name: str, path: Path, rows: int, columns: list[str]) -> None:
        """The cheap checks of a table's file from its footer: it holds the rows meta.json recorded, and it
        has the table's first (identity) column. Columns added to the table after the file was written may
        be missing: they read as nulls, or are computed when derived from the table's other columns
        (store.derived)."""
        pass_name = pass_of(name)
        status = self._built(pass_name)
        expected = status.rows.get(name) if status is not None else None
        if expected is not None and rows != expected:
            raise self._damaged(
                pass_name,
                f"{path} has {rows} rows, but meta.json says the {pass_name} pass wrote {expected}",
            )
        key = TABLES[name].names[0]
        if key not in columns:
            raise self._damaged(pass_name, f"{path} is not a {name} table (it has no {key} column)")

    def _damaged(self, pass_name: str, what: str) -> ProfileError:
        return ProfileError(f"{what}: the profile is damaged; {self._remedy(pass_name)}")

    def _remedy(self, pass_name: str) -> str:
        """What to do about a damaged pass: record or import it again, or import the trace the timeline kept."""
        out, meta = shlex.quote(str(self.directory)), self.meta
        source = meta.command[0] if meta.command else ""
        if meta.source == "import" and source:
            return f"import the trace again: `tenprof import --force -o {out} {shlex.quote(source)}`"
        if meta.source == "import-ncu" and source:
            return f"import the report again: `tenprof import-ncu --force -o {out} {shlex.quote(source)}`"
        again = "record it again with `tenprof run`" if meta.source == "run" else "record it again"
        if meta.source == "run" and meta.command and meta.rank < 0:  # a rank's command is its launcher's to repeat
            passes = meta.options.get("passes", Pass.TIMELINE)
            option = f" --passes {passes}" if passes != Pass.TIMELINE else ""
            again = f"record it again: `tenprof run{option} --force -o {out} {shlex.join(meta.command)}`"
        trace = self.directory / Pass.TIMELINE / KEPT_TRACE
        if pass_name == Pass.TIMELINE and trace.is_file():
            fresh, kept = shlex.quote(f"{self.directory}-reimported"), shlex.quote(str(trace))
            again += (
                f", or import the trace it kept into a new profile (timeline only): `tenprof import -o {fresh} {kept}`"
            )
        return again

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


def _why(exc: BaseException) -> str:
    """pyarrow's message on one line, without the path it repeats."""
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    if text.startswith("Could not open Parquet input source") and "': " in text:
        text = text.split("': ", 1)[1]
    return text[:200]


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
