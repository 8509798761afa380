"""`tenprof diff BEFORE AFTER`: what changed between two runs and which Python line it comes from
(analyses.compare.diff), as text or JSON. Each side is a profile directory, or a trace (torch.profiler's JSON,
.json.gz) imported on the fly into a temporary profile that is removed afterwards."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from tenprof.analyses.compare.diff import Diff, diff, read_side
from tenprof.cli.common import console, non_negative_int, rank_profile
from tenprof.core.quantities import format_quantities
from tenprof.errors import UsageError
from tenprof.renderers.diff_text import render_diff
from tenprof.store.meta import META_FILE
from tenprof.store.profile import Profile, load_profile
from tenprof.store.schema import Pass


class DiffCommand:
    """Compare two runs: the step change, and the lines, ops and kernels it comes from."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("before", help="profile directory or trace (.json, .json.gz) of the run before")
        parser.add_argument("after", help="profile directory or trace of the run after")
        parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
        parser.add_argument("--limit", type=non_negative_int, default=10, help="rows per table (0: all)")
        parser.add_argument("--html", default="", help="also write the comparison as a page, with AFTER's report")
        parser.add_argument("--force", action="store_true", help="replace an existing --html file")

    def run(self, args: argparse.Namespace) -> int:
        if args.html:  # refused before the work, not after it
            from tenprof.cli.export_command import check_output

            check_output(Path(args.html), args.force)
        with tempfile.TemporaryDirectory(prefix="tenprof-diff-") as scratch:
            before = _open(Path(args.before), Path(scratch) / "before")
            after = _open(Path(args.after), Path(scratch) / "after")
            result = diff(read_side(before, args.before), read_side(after, args.after))
            if args.html:
                _write_page(after, Path(args.html), diff_data(result), args.force)
        if args.json:
            sys.stdout.write(
                orjson.dumps(diff_data(result), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"
            )
            return 0
        render_diff(result, console(), args.limit or None)
        return 0


def diff_data(result: Diff) -> dict[str, Any]:
    """The comparison as plain data (`--json`, and the page's diff section)."""
    data = dataclasses.asdict(result)
    data["step"]["delta_ns"] = result.step.delta_ns
    data["appeared"] = [format_quantities(t) for t in result.appeared]
    data["vanished"] = [format_quantities(t) for t in result.vanished]
    for side in ("before", "after"):
        data[side].pop("op_lines", None)  # sets, and only for placing compiled ops
        data[side].pop("region_ops", None)
        data[side].pop("op_signatures", None)
        data[side]["lines"] = [
            {"file_text_ordinal": list(key), "gpu_ns": v[0], "cpu_ns": v[1], "launches": v[2], "line": v[3]}
            for key, v in getattr(result, side).lines.items()
        ]
    return data


def _write_page(after: Profile, target: Path, data: dict[str, Any], force: bool) -> None:
    """AFTER's report page with the comparison on top."""
    from tenprof.cli.export_command import write_output
    from tenprof.report.html_page import write_html

    title = f"{data['before']['name']} -> {data['after']['name']}"
    write_output(target, force, lambda out: write_html(after, out, extra={"diff": data, "title": title}))
    print(f"wrote {target} (html: the comparison, then the after run's report)", file=sys.stderr)


def _open(path: Path, scratch: Path) -> Profile:
    """A profile directory as it is; a trace file imported into `scratch`."""
    if path.is_dir():
        rank_profile(path, None, "diff")  # a directory of ranks: refused, naming them
        if not (path / META_FILE).exists():
            raise UsageError(f"{path} is not a tenprof profile (no {META_FILE}); give a profile or a trace file")
        profile = load_profile(path)
        profile.check()
        if not profile.has_pass(Pass.TIMELINE):
            raise UsageError(f"{path} has no timeline pass to compare (record it: tenprof run --passes timeline,...)")
        return profile
    if not path.is_file():
        raise UsageError(f"{path} does not exist")
    from tenprof.importers.timeline_import import import_trace

    import_trace(path, scratch, force=False)
    return load_profile(scratch)
