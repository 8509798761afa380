"""Kernels the script launches itself, outside torch ops (issue 20), on an H100 recording
(tests/data/user_kernels: examples/user_kernels.py, a Triton gather three times a step, a CUDA
extension's kernel through a pybind function, `a.t() + b`, and a library's kernel called through
ctypes): each gets an op "(user kernel) NAME" at the line that launched it, so every kernel of the
recorded steps has a line, and no tally row is nameless."""

from __future__ import annotations

from tenprof.analyses.timeline.summary import attribution, user_frame_of
from tenprof.analyses.timeline.tally import op_gpu_tally
from tenprof.store.profile import Profile
from tests.conftest import DATA

EXAMPLE = "examples/user_kernels.py"


def _line(text: str) -> int:
    lines = (DATA.parent.parent / EXAMPLE).read_text().splitlines()
    return next(i + 1 for i, t in enumerate(lines) if text in t)


def test_user_kernels_have_their_launch_lines(rebuilt: dict[str, Profile]) -> None:
    profile = rebuilt["user_kernels"]  # rebuilt from the raw trace and call-site log
    ops = profile.table("ops").to_pydict()
    frames = profile.table("frames").to_pydict()
    user = user_frame_of(profile)
    lines: dict[str, set[str]] = {}
    for name, frame in zip(ops["name"], ops["frame_id"], strict=True):
        if name.startswith("(user kernel) "):
            u = int(user[frame]) if frame >= 0 else -1
            lines.setdefault(name, set()).add(f"{frames['file'][u]}:{frames['line'][u]}" if u >= 0 else "")
    triton_line, extension_line = _line("the user's Triton kernel"), _line("the extension's kernel")
    ctypes_line = _line("library.launch_add_one(")  # inside the helper that calls the library
    assert lines == {
        "(user kernel) gather_kernel": {f"{EXAMPLE}:{triton_line}"},
        "(user kernel) scale": {f"{EXAMPLE}:{extension_line}"},
        "(user kernel) launch_add_one": {f"{EXAMPLE}:{ctypes_line}"},
    }
    a = attribution(profile)
    assert a.op_percent == 100.0 and a.user_line_percent == 100.0
    # the gather (3 a step) and the extension's kernel are most of the GPU time, and are the script's own
    assert 60.0 < a.user_kernel_percent < 100.0


def test_no_tally_row_is_nameless(rebuilt: dict[str, Profile]) -> None:
    rows = {r.name: r for r in op_gpu_tally(rebuilt["user_kernels"]).rows}
    assert all(name.strip() for name in rows)
    # 6 steps, 3 launches each, less the step run with the capture off (its kernels have no op, by design)
    assert rows["(user kernel) gather_kernel"].calls == 15
    assert rows["[no op: a step run with the capture off]"].calls == 6


def test_the_text_report_shows_the_no_op_row_as_text(rebuilt: dict[str, Profile], capsys) -> None:  # type: ignore[no-untyped-def]
    # "[no op]" is not read as a rich markup tag (the row printed with an empty name before)
    from tenprof.cli.main import main

    assert main(["report", str(DATA / "user_kernels"), "--limit", "6"]) == 0
    out = capsys.readouterr().out
    assert "[no op: a step run with the capture off]" in out and "(user kernel) gather_kernel" in out
    assert "or your own kernel's launch" in out
