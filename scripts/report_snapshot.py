"""Write every report tenprof gives on the recordings in tests/data into one folder, to compare two
versions of the code: a change that should not change behaviour (moving modules, renaming) leaves every
file byte-identical.

    python scripts/report_snapshot.py OUT_DIR            # then, after the change:
    python scripts/report_snapshot.py OUT_DIR2 && diff -r OUT_DIR OUT_DIR2

For each profile under tests/data (a folder with meta.json; a folder of ranks as one, merged) it writes
`tenprof report --limit 0` as text and as JSON, and for the corpus traces (tests/data/corpus_traces, the
torch.profiler traces) the report of each one imported. The recordings are read as stored (no rebuild),
in one process, with a fixed terminal width so that tables wrap the same way every time.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    os.environ["COLUMNS"] = "160"  # rich reads it: tables wrap the same way in every run
    from tenprof.cli.main import main as tenprof

    failed = 0
    for profile in _profiles():
        failed += _write(tenprof, profile, out / _name(profile))
    with tempfile.TemporaryDirectory() as tmp:
        for trace in sorted((DATA / "corpus_traces").glob("*.json.gz")):
            imported = Path(tmp) / trace.name.removesuffix(".json.gz")
            if tenprof(["import", "--quiet", str(trace), "-o", str(imported)]) != 0:
                failed += 1
                continue
            failed += _write(tenprof, imported, out / f"corpus_traces__{imported.name}")
    print(f"{len(list(out.iterdir()))} files in {out}; {failed} report(s) failed")
    return 1 if failed else 0


def _profiles() -> list[Path]:
    """Each profile folder under tests/data, a folder of ranks once (not each rank in it)."""
    found = sorted(p.parent for p in DATA.rglob("meta.json"))
    ranks = {p.parent for p in found if p.name.startswith("rank")}
    return sorted([p for p in found if p.parent not in ranks] + list(ranks))


def _name(profile: Path) -> str:
    return str(profile.relative_to(DATA)).replace(os.sep, "__")


def _write(tenprof: Callable[[list[str]], int], profile: Path, base: Path) -> int:
    """The text and the JSON report of one profile; 1 where either failed."""
    failed = 0
    for suffix, extra in ((".txt", []), (".json", ["--json"])):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = tenprof(["report", "--limit", "0", *extra, str(profile)])
        base.with_suffix(suffix).write_text(buffer.getvalue())
        failed |= code != 0
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
