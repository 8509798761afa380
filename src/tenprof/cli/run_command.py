"""`tenprof run [options] script.py args...` (or `-m module args...`): profile, save, report."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tenprof.capture.accesses_build import DEFAULT_EVERY, DEFAULT_FIRST
from tenprof.capture.op_copy import OPS_VAR
from tenprof.capture.overhead_plan import DEFAULT_COUNT as DEFAULT_OVERHEAD_STEPS
from tenprof.capture.ranks import rank_from_env
from tenprof.cli.common import console, non_negative_int
from tenprof.cli.launch import run_under_launcher
from tenprof.cli.report_command import print_report
from tenprof.errors import UsageError
from tenprof.record.launcher import PASSES, RunRequest, all_passes, run_profile
from tenprof.renderers.run_times import time_breakdown
from tenprof.report.drawings import write_drawings
from tenprof.store.directory import rank_dir
from tenprof.store.profile import load_profile

CAPTURES = ("kineto", "native", "native-cupti")
CAPTURE_VAR = "TENPROF_CAPTURE"  # the --capture default, so that a test suite can run on either capture
OPS_CHOICES = ("every", "sampled")
NATIVE_CAPTURES = ("native", "native-cupti")


def default_capture() -> str:
    """--capture's default: kineto, or what TENPROF_CAPTURE names."""
    chosen = os.environ.get(CAPTURE_VAR, "") or "kineto"
    if chosen not in CAPTURES:
        raise UsageError(f"{CAPTURE_VAR}={chosen!r}: choose one of {', '.join(CAPTURES)}")
    return chosen


class RunCommand:
    """Run a script under the profiler, write the profile directory and print the report."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("-o", "--output", default="tenprof-out", help="profile directory (default: tenprof-out)")
        parser.add_argument("--force", action="store_true", help="replace the output directory if it is a profile")
        parser.add_argument(
            "--passes",
            default="timeline",
            help=f"comma-separated passes, each a run of the script ({', '.join(PASSES)}), or all",
        )
        parser.add_argument("-m", dest="module", action="store_true", help="run a module, like python -m")
        parser.add_argument("--ncu", default="", help="counters pass: the ncu executable (default: ncu on PATH)")
        parser.add_argument(
            "--counters-all",
            action="store_true",
            help="counters pass: replay every kernel, not one per signature (slow; for comparison)",
        )
        parser.add_argument(
            "--replay-scopes",
            default="",
            help="counters/stalls passes: also replay every kernel inside these tenprof.scope names "
            "(comma-separated; kernels the script launches itself are replayed without it)",
        )
        parser.add_argument(
            "--access-every",
            type=int,
            default=DEFAULT_EVERY,
            help=f"accesses pass: after the first {DEFAULT_FIRST} warp accesses of an instruction in a launch, "
            f"record those of one warp in N (default {DEFAULT_EVERY}; larger is faster and smaller)",
        )
        parser.add_argument(
            "--access-all-ops",
            action="store_true",
            help="accesses pass: record the launches of every op, not only of the first op of each kind "
            "(same op, line and input layouts; the default, several times faster)",
        )
        parser.add_argument(
            "--overhead-steps",
            type=non_negative_int,
            default=DEFAULT_OVERHEAD_STEPS,
            help=f"steps run with the capture off to time the program un-profiled (default {DEFAULT_OVERHEAD_STEPS}; "
            "0: none): from the 10th step, three in a row after three untimed ones that settle the profiler's stop "
            "(steps 6-11; more in such stretches every 9 steps), or with --schedule the steps after its window",
        )
        parser.add_argument(
            "--capture",
            choices=CAPTURES,
            default=None,
            help="timeline pass: kineto (torch.profiler records ops and GPU activity; the default, or what "
            f"{CAPTURE_VAR} names) or native (experimental: tenprof's own recorder records every op and its input "
            "shapes, a CUDA-only profiler session the GPU activity) or native-cupti (experimental: as native, with "
            "the GPU activity from tenprof's own CUPTI client)",
        )
        parser.add_argument(
            "--ops",
            choices=OPS_CHOICES,
            default=None,
            help="native captures: record ops in every recorded step (every; the default, or what "
            f"{OPS_VAR} names) or only in the steps sampled for their input shapes, every other step's ops "
            "copied from a recorded step that launched the same work (sampled; experimental, GPU runs)",
        )
        parser.add_argument(
            "--on-demand",
            action="store_true",
            help="record nothing now: start the script with a listener only, and record its next steps when "
            "`tenprof capture PID -o OUT --steps N` asks (the script must call tenprof.step())",
        )
        parser.add_argument("--no-lines", action="store_true", help="do not record Python call paths (less overhead)")
        parser.add_argument("--no-shapes", action="store_true", help="do not record op input shapes (less overhead)")
        parser.add_argument("--no-memory", action="store_true", help="do not record allocations (less overhead)")
        parser.add_argument(
            "--compiled-lines",
            action="store_true",
            help="torch.compile: each generated kernel's source lines (Inductor's origin comments); this changes "
            "the compiled program: identical kernels of different lines are no longer merged, and launching more "
            "kernels costs the host time",
        )
        parser.add_argument(
            "--schedule",
            default="",
            help="record only some steps, e.g. wait=1,warmup=1,active=3 (needs tenprof.step())",
        )
        parser.add_argument(
            "--verify",
            action="store_true",
            help="also store torch.profiler's own totals in meta.json, to cross-check",
        )
        parser.add_argument(
            "-l",
            "--launcher",
            default="",
            help='start the ranks with this launcher, e.g. -l "torchrun --nproc-per-node 2": each rank profiles '
            "itself into OUTPUT/rankNNNNN, then the merged report is printed",
        )
        parser.add_argument(
            "--quiet", action="store_true", help="print only the script's output and errors (no report, no progress)"
        )
        parser.add_argument("--limit", type=non_negative_int, default=10, help="rows per tally in the report (0: all)")
        parser.add_argument(
            "--html", action="store_true", help="also write the report as one page, OUTPUT/report.html (opens offline)"
        )
        parser.add_argument(
            "target", nargs=argparse.REMAINDER, help="script.py [args...] or, with -m, module [args...]"
        )

    def run(self, args: argparse.Namespace) -> int:
        if not args.target:
            raise UsageError(
                "nothing to run: give a script (tenprof run train.py) or a module (tenprof run -m pkg.mod)"
            )
        if args.ops is not None:
            _set_ops(args.ops, args.capture or default_capture())
        if args.on_demand:
            return _on_demand(args)
        if args.launcher:
            return run_under_launcher(
                args.launcher, args.argv, args.target, Path(args.output), args.quiet, args.limit, args.force
            )
        target, *script_args = args.target
        rank = rank_from_env()
        out_dir = rank_dir(Path(args.output), rank.rank) if rank is not None else Path(args.output)
        passes = tuple(p.strip() for p in args.passes.split(",") if p.strip())
        if args.passes.strip() == "all":
            passes, left_out = all_passes(args.ncu)
            if left_out and not args.quiet:
                by_reason: dict[str, list[str]] = {}
                for name, reason in left_out.items():
                    by_reason.setdefault(reason, []).append(name)
                why = "; ".join(f"{', '.join(names)} ({reason})" for reason, names in by_reason.items())
                print(f"tenprof: --passes all runs {','.join(passes)} here, without {why}", file=sys.stderr)
        request = RunRequest(
            target=target,
            args=script_args,
            module=args.module,
            out_dir=out_dir,
            rank=rank,
            force=args.force,
            passes=passes,
            lines=not args.no_lines,
            shapes=not args.no_shapes,
            memory=not args.no_memory,
            schedule=args.schedule,
            verify=args.verify,
            ncu=args.ncu,
            counters_all=args.counters_all,
            access_every=args.access_every,
            access_all_ops=args.access_all_ops,
            replay_scopes=tuple(x.strip() for x in args.replay_scopes.split(",") if x.strip()),
            quiet=args.quiet,
            overhead_steps=args.overhead_steps,
            capture=args.capture or default_capture(),
            compiled_lines=args.compiled_lines,
        )
        result = run_profile(request)
        drawing = time.perf_counter()
        for problem in write_drawings(out_dir):
            print(f"tenprof: {problem}", file=sys.stderr)
        drawings_s = time.perf_counter() - drawing
        failed = {name: s for name, s in result.meta.passes.items() if s.state == "failed"}
        for name, status in failed.items():
            print(f"tenprof: the {name} pass failed: {status.reason}", file=sys.stderr)
        page = _write_page(out_dir) if args.html and rank is None and len(failed) < len(result.meta.passes) else None
        if rank is not None:  # one report for all ranks, not one each: `tenprof report OUTPUT`
            if not args.quiet:
                print(f"tenprof: rank {rank.rank} wrote {out_dir}/ (tenprof report {args.output})", file=sys.stderr)
                if args.html and rank.rank == 0:  # one page for all ranks, made once they are all done
                    print(f"tenprof: the ranks' page: tenprof export {args.output} -o report.html", file=sys.stderr)
            return result.exit_code
        if args.quiet:
            if page and not page.startswith("report page written"):
                print(f"tenprof: {page}", file=sys.stderr)  # a failure is said even when quiet
            return result.exit_code
        if len(failed) < len(result.meta.passes):
            print_report(load_profile(request.out_dir), console(), args.limit or None)
        if len(result.meta.passes) > 1:
            print(f"tenprof: {time_breakdown(result.meta, drawings_s)}", file=sys.stderr)
        print(
            f"tenprof: profile written to {request.out_dir}/ (tenprof report {request.out_dir})",
            file=sys.stderr,
        )
        if page:
            print(f"tenprof: {page}", file=sys.stderr)
        return result.exit_code


def _write_page(out_dir: Path) -> str:
    """OUTPUT/report.html (tenprof's own file in its own profile directory); what happened, in words."""
    from tenprof.report.html_page import page_bytes
    from tenprof.store.directory import claim

    target = out_dir / "report.html"
    try:
        page = page_bytes(load_profile(out_dir))  # made whole before the file is opened
        claim(out_dir, target.name)  # so that --force may replace it with the rest of the profile
        target.write_bytes(page)
    except OSError as exc:
        target.unlink(missing_ok=True)
        return f"the report page could not be written to {target}: {exc.strerror or exc}"
    except Exception as exc:  # a page that cannot be made must not fail a run whose profile is saved
        target.unlink(missing_ok=True)
        return f"the report page could not be made ({type(exc).__name__}: {exc}); the profile is saved"
    return f"report page written to {target}"


def _set_ops(ops: str, capture: str) -> None:
    """--ops for the script's process (and, through its environment, a launcher's ranks); refused with a
    capture that records ops through torch.profiler, where every op of every recorded step is recorded."""
    if ops == "sampled" and capture not in NATIVE_CAPTURES:
        raise UsageError(
            f"--ops sampled needs a native capture (--capture {' or '.join(NATIVE_CAPTURES)}), not {capture}"
        )
    os.environ[OPS_VAR] = "" if ops == "every" else ops


def _on_demand(args: argparse.Namespace) -> int:
    """The script in this process's place (its pid is the one `tenprof capture` names), with the listener
    only (record.listen_main); its own exit status."""
    if args.launcher or args.passes != "timeline" or args.schedule:
        raise UsageError("--on-demand runs the script alone, with no pass, schedule or launcher of its own")
    if args.capture not in (None, "kineto") or args.ops == "sampled":
        # the capture a request starts is the in-process profile's (record.inprocess), torch.profiler's
        raise UsageError("--on-demand records with the default capture (kineto): no --capture or --ops of its own")
    command = [sys.executable, "-m", "tenprof.record.listen_main", *(["-m"] if args.module else []), *args.target]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, command)
    return 0  # not reached
