"""`tenprof export DIR --format perfetto|hatchet|json|csv|forest|forest-dot|forest-svg|operators|stall-cost|blame-dot
-o FILE`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO

import orjson

from tenprof.analyses.tensor_forest import METRICS
from tenprof.errors import UsageError
from tenprof.store.profile import Profile
from tenprof.store.schema import TABLES

FORMATS = (
    "perfetto",
    "hatchet",
    "json",
    "csv",
    "forest",
    "forest-dot",
    "forest-svg",
    "operators",
    "stall-cost",
    "blame-dot",
    "generated-code",
)
DEFAULT_NAMES = {
    "perfetto": "trace.json",
    "hatchet": "tree.hatchet.json",
    "json": "report.json",
    "forest": "forest.txt",
    "forest-dot": "forest.dot",
    "forest-svg": "forest.svg",
    "operators": "operators.json",
    "stall-cost": "tensor_stall_cost.csv",
    "blame-dot": "blame.dot",
    "generated-code": "generated-code",
}


def _default_name(fmt: str, table: str) -> str:
    return DEFAULT_NAMES.get(fmt, f"{table}.csv")


class ExportCommand:
    """Write a Perfetto trace, a hatchet tree, the JSON report or a table as CSV."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        from tenprof.cli.common import add_profile_arguments, non_negative_int

        add_profile_arguments(parser)
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default=None,
            help="output format (default: from the -o file name, else perfetto)",
        )
        parser.add_argument("-o", "--output", default=None, help="output file ('-' for standard output)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="replace an existing output file (generated-code: files of the same names in its folder)",
        )
        parser.add_argument("--table", default="kernels", choices=sorted(TABLES), help="table for --format csv")
        parser.add_argument(
            "--metric", default="bytes", choices=METRICS, help="forest: order trees and size nodes by this"
        )
        parser.add_argument(
            "--limit", type=non_negative_int, default=40, help="forest: groups of trees to show (0: all)"
        )

    def run(self, args: argparse.Namespace) -> int:
        from tenprof.cli.common import open_profile

        fmt = args.format or _format_from_name(args.output)
        if fmt == "generated-code":
            _check_code_folder(args.output or DEFAULT_NAMES[fmt], args.force)
        profile = open_profile(args)
        if fmt == "operators" and not profile.has_pass("counters"):
            raise UsageError(
                f"{profile.directory} has no counters pass; record one with tenprof run --passes timeline,counters"
            )
        if fmt in ("stall-cost", "blame-dot"):
            missing = [p for p in ("tensors", "stalls", "accesses") if not profile.has_pass(p)]
            if missing:
                raise UsageError(
                    f"{profile.directory} has no {', '.join(missing)} pass; record with "
                    "tenprof run --passes timeline,tensors,stalls,accesses"
                )
        if fmt.startswith("forest"):
            if not profile.has_pass("tensors"):
                raise UsageError(
                    f"{profile.directory} has no tensors pass; record one with tenprof run --passes timeline,tensors"
                )
            if fmt == "forest-svg":
                from tenprof.renderers.forest_dot import has_graphviz

                if not has_graphviz():
                    raise UsageError(
                        "graphviz `dot` is not installed (apt install graphviz); --format forest-dot works"
                    )
        if fmt == "generated-code":
            return _write_generated_code(profile, Path(args.output or DEFAULT_NAMES[fmt]))
        output = args.output or _default_name(fmt, args.table)
        handle = sys.stdout.buffer if output == "-" else _open_output(Path(output), args.force)
        try:
            if fmt == "perfetto":
                from tenprof.renderers.perfetto import write_perfetto

                write_perfetto(profile, handle)
            elif fmt == "hatchet":
                from tenprof.analyses.calltree import build_tree
                from tenprof.renderers.hatchet import to_literal

                handle.write(orjson.dumps(to_literal(build_tree(profile))))
            elif fmt == "json":
                from tenprof.cli.report_command import all_tallies
                from tenprof.renderers.json_report import report_json

                handle.write(report_json(profile, all_tallies(profile)).encode())
            elif fmt == "operators":
                from tenprof.analyses.counters import operators_report

                report = operators_report(profile)
                handle.write(report.model_dump_json(indent=2).encode() if report is not None else b"{}")
            elif fmt.startswith("forest"):
                handle.write(_forest(profile, fmt, args.metric, args.limit or 10**9))
            elif fmt in ("stall-cost", "blame-dot"):
                handle.write(_stall_cost(profile, fmt))
            else:
                import pyarrow.csv as pacsv

                pacsv.write_csv(profile.table(args.table), handle)
        finally:
            if handle is not sys.stdout.buffer:
                handle.close()
        if output != "-":
            print(f"wrote {output} ({fmt})", file=sys.stderr)
        return 0


def _open_output(path: Path, force: bool) -> IO[bytes]:
    """`path` opened for writing, its missing parent folders made first; UsageError, in one line, when
    that cannot be done (a parent is a file, no permission, the path is a folder) or when the file exists
    and `force` was not given (tenprof overwrites nothing unasked)."""
    if path.is_file() and not force:
        raise UsageError(f"{path} exists; pass --force to replace it, or choose another -o")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the folder {path.parent} for -o {path}: {_reason(exc)}") from exc
    if path.is_dir():
        raise UsageError(f"-o {path} is a folder; give a file name (e.g. -o {path / DEFAULT_NAMES['perfetto']})")
    try:
        return path.open("wb")
    except OSError as exc:
        raise UsageError(f"cannot write -o {path}: {_reason(exc)}") from exc


def _reason(exc: OSError) -> str:
    """The system's words for an OSError ('Permission denied'), without the errno and the path."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        return "a part of the path is a file, not a folder"
    return exc.strerror or exc.__class__.__name__


def _check_code_folder(output: str, force: bool) -> None:
    """generated-code writes a folder of .py files: refuse an -o that is a file, standard output or a name
    like a file's (gen.txt), rather than make a folder of that name; and a folder that already holds
    something, unless `force` (then files of the names it writes are replaced, others kept)."""
    hint = "--format generated-code writes a folder of .py files: give a folder name with -o (e.g. -o code)"
    out_dir = Path(output)
    if output == "-":
        raise UsageError(f"cannot write to standard output (-o -); {hint}")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {out_dir} is a file; {hint}")
    if not out_dir.exists() and out_dir.suffix[1:].isalpha():
        raise UsageError(f"-o {out_dir} looks like a file name; {hint}")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise UsageError(f"{out_dir} is not empty; pass --force to write into it, or choose another -o")


def _write_generated_code(profile: Profile, out_dir: Path) -> int:
    """torch.compile's generated wrapper modules kept by the profile's runs, one .py file each under its own
    name, and each Triton kernel's source as `<kernel>.py`: the text of the file Triton compiled it from,
    so the line numbers the stalls report gives are that file's."""
    from tenprof.importers.compiled_import import embedded_kernels, kept_code_files, read_compiled_code

    # the ncu run's wrappers first: their kernels are the ones the stalls report's line numbers refer to
    rows = [row for kept in kept_code_files(profile.directory) for row in read_compiled_code(kept, strict=True)]
    if not rows:
        raise UsageError(
            f"{profile.directory} keeps no torch.compile code (none ran under tenprof run; an imported trace "
            "only names the generated files)"
        )
    wrappers: set[str] = set()
    kernels: set[str] = set()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for row in rows:
            name, source = Path(str(row["path"])).name, str(row["source"])
            if name in wrappers:
                continue
            wrappers.add(name)
            (out_dir / name).write_text(source)
            for kernel, (start, end) in embedded_kernels(source).items():
                if kernel not in kernels:
                    kernels.add(kernel)
                    (out_dir / f"{kernel}.py").write_text(source[start:end])
    except OSError as exc:
        raise UsageError(f"cannot write the generated code to -o {out_dir}: {_reason(exc)}") from exc
    print(
        f"wrote {len(wrappers)} generated wrappers and {len(kernels)} kernel sources (<kernel>.py) to {out_dir}/",
        file=sys.stderr,
    )
    return 0


def _stall_cost(profile: Profile, fmt: str) -> bytes:
    from tenprof.analyses.tensor_forest import Forest
    from tenprof.analyses.tensor_stall_cost import tensor_stall_cost
    from tenprof.renderers.stall_cost_files import blame_dot, cost_csv

    costs, forest = tensor_stall_cost(profile), Forest(profile)
    return (cost_csv(costs, forest) if fmt == "stall-cost" else blame_dot(costs, forest)).encode()


def _forest(profile: Profile, fmt: str, metric: str, limit: int) -> bytes:
    from tenprof.analyses.tensor_forest import Forest
    from tenprof.renderers.forest_dot import dot_to_svg, forest_dot
    from tenprof.renderers.forest_files import pass_notes
    from tenprof.renderers.forest_text import forest_text

    forest = Forest(profile)
    if fmt == "forest":
        return forest_text(forest, metric, limit, pass_notes(profile)).encode()
    dot = forest_dot(forest, metric, limit)
    return dot.encode() if fmt == "forest-dot" else dot_to_svg(dot)


def _format_from_name(name: str | None) -> str:
    if not name or name == "-":
        return "perfetto"
    if name.endswith(".dot"):
        return "forest-dot"
    if name.endswith(".svg"):
        return "forest-svg"
    if name.endswith(".txt") and "forest" in Path(name).name:
        return "forest"
    if name.endswith(".csv"):
        return "csv"
    if "hatchet" in name:
        return "hatchet"
    if name.endswith(".json") and "report" in Path(name).name:
        return "json"
    if name.endswith(".json") and "operators" in Path(name).name:
        return "operators"
    if name.endswith(".json"):
        return "perfetto"
    raise UsageError(f"cannot tell the format from {name!r}; pass --format ({', '.join(FORMATS)})")
