"""Issue 15: every bad input gets one clear `tenprof: error:` line (or argparse's usage error) and a
non-zero exit, never a traceback or a silently wrong result."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import orjson
import pytest

from tenprof.cli.main import main
from tenprof.errors import TraceFormatError
from tenprof.importers.formats.kineto_reader import TraceStream
from tenprof.store.profile import load_profile
from tests.conftest import DATA
from tests.helpers import one_error_line

MATMUL = DATA / "matmul64"


KINETO = MATMUL / "timeline" / "raw" / "kineto_trace.json.gz"


def test_export_into_a_missing_folder_is_refused_as_cp_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "no" / "such" / "dir" / "t.json"  # a typo in -o makes no folders
    assert main(["export", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), "does not exist (make it first: mkdir -p")
    assert not (tmp_path / "no").exists()
    (tmp_path / "no" / "such" / "dir").mkdir(parents=True)
    assert main(["export", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 0
    assert orjson.loads(out.read_bytes())["traceEvents"]


@pytest.mark.parametrize(
    "where, words",
    [
        ("file/t.json", "a part of the path is a file"),  # NotADirectoryError when opening
        ("file/sub/t.json", "a part of the path is a file"),  # NotADirectoryError when making the folder
        ("folder", "is a folder"),  # IsADirectoryError when opening
    ],
)
def test_export_to_a_place_that_cannot_be_written(
    tmp_path: Path, where: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("mine")
    (tmp_path / "folder").mkdir()
    out = tmp_path / where
    assert main(["export", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), words)
    assert (tmp_path / "file").read_text() == "mine"


def test_export_without_permission_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Tests run as root, whom chmod does not stop: refuse the making of a file in that folder instead (the
    # export is written beside its name, then renamed over it)
    import tempfile

    out = tmp_path / "t.json"
    real_mkstemp = tempfile.mkstemp

    def refuse(*args: object, **kwargs: object) -> object:
        if kwargs.get("dir") == out.parent:
            raise PermissionError(13, "Permission denied", str(out.parent))
        return real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert main(["export", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), "Permission denied")


def test_export_overwrites_nothing_unasked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    out.write_text("mine")
    assert main(["export", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), "--force")
    assert out.read_text() == "mine"
    assert main(["export", "--force", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 0
    assert orjson.loads(out.read_bytes())["traceEvents"]


@pytest.fixture
def compiled(tmp_path: Path) -> Path:
    profile = tmp_path / "compiled"
    shutil.copytree(DATA / "compiled" / "mlp_max_autotune", profile)
    return profile


@pytest.mark.parametrize("name, words", [("gen.txt", "looks like a file name"), ("existing", "is a file")])
def test_generated_code_refuses_a_file_for_its_folder(
    compiled: Path, tmp_path: Path, name: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "existing").write_text("mine")
    out = tmp_path / name
    assert main(["export", str(compiled), "--format", "generated-code", "-o", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), words, "folder of .py files")
    assert not out.is_dir()
    assert (tmp_path / "existing").read_text() == "mine"


def test_generated_code_makes_its_folder_but_not_the_folders_above(
    compiled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    above = tmp_path / "a" / "code"
    assert main(["export", str(compiled), "--format", "generated-code", "-o", str(above)]) == 2
    one_error_line(capsys.readouterr().err, str(above), "does not exist")
    assert not (tmp_path / "a").exists()
    out = tmp_path / "code"
    assert main(["export", str(compiled), "--format", "generated-code", "-o", str(out)]) == 0
    assert list(out.glob("*.py"))


def test_generated_code_writes_into_a_folder_in_use_only_with_force(
    compiled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "src"
    out.mkdir()
    (out / "model.py").write_text("mine")
    assert main(["export", str(compiled), "--format", "generated-code", "-o", str(out)]) == 2
    one_error_line(capsys.readouterr().err, str(out), "not empty")
    assert [p.name for p in out.iterdir()] == ["model.py"]
    assert main(["export", "--force", str(compiled), "--format", "generated-code", "-o", str(out)]) == 0
    assert (out / "model.py").read_text() == "mine" and len(list(out.glob("*.py"))) > 1


def test_import_of_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    assert main(["import", str(folder), "-o", str(tmp_path / "out")]) == 4
    one_error_line(capsys.readouterr().err, str(folder), "holds no trace")


def test_reading_a_folder_names_a_trace_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "traces"  # as tensorboard_trace_handler writes them
    folder.mkdir()
    shutil.copy(KINETO, folder / "host_1.pt.trace.json.gz")
    with pytest.raises(TraceFormatError, match=r"is a directory; .* \(e\.g\. .*host_1\.pt\.trace\.json\.gz\)"):
        list(TraceStream(folder).events())


def _perfetto_export(tmp_path: Path) -> Path:
    out = tmp_path / "t.json"
    assert main(["export", str(MATMUL), "--format", "perfetto", "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    "content, words",
    [
        ("perfetto", "tenprof exported"),
        (b'{"traceEvents": "nope"}', "not a torch.profiler / Kineto trace"),
        (b'{"traceEvents": []}', "not a torch.profiler / Kineto trace"),
        (b'{"traceEvents": [{"ph": "X", "cat": "gpu", "name": "a", "ts": 1, "dur": 2}]}', "schemaVersion"),
        (b'[{"ph": "X", "name": "a", "ts": 1, "dur": 2}]', "no `traceEvents`"),
    ],
)
def test_import_refuses_json_that_is_not_a_kineto_trace(
    tmp_path: Path, content: str | bytes, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if isinstance(content, bytes):
        trace = tmp_path / "t.json"
        trace.write_bytes(content)
    else:
        trace = _perfetto_export(tmp_path)
    capsys.readouterr()
    assert main(["import", str(trace), "-o", str(tmp_path / "out")]) == 4
    one_error_line(capsys.readouterr().err, str(trace), words)


@pytest.mark.parametrize(
    "content",
    [
        # Kineto's header alone: a run that recorded nothing
        b'{"schemaVersion": 1, "deviceProperties": [], "traceEvents": []}',
        # keys after the events only (as some Kineto versions write deviceProperties)
        b'{"traceEvents": [], "deviceProperties": [], "traceName": "x.json"}',
        # no header, but an op of Kineto's category
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}',
    ],
)
def test_import_accepts_kineto_traces_without_gpu_work(tmp_path: Path, content: bytes) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(content)
    assert main(["import", "--quiet", str(trace), "-o", str(tmp_path / "out")]) == 0


def test_import_accepts_a_cpu_only_torch_profiler_trace(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    trace = tmp_path / "cpu.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.ones(8, 8) @ torch.ones(8, 8)
    prof.export_chrome_trace(str(trace))
    with gzip.open(tmp_path / "cpu.json.gz", "wb") as packed:
        packed.write(trace.read_bytes())
    for name in ("cpu.json", "cpu.json.gz"):
        out = tmp_path / f"{name}.tenprof"
        assert main(["import", "--quiet", str(tmp_path / name), "-o", str(out)]) == 0
        assert "aten::mm" in load_profile(out).table("ops").column("name").to_pylist()


@pytest.mark.parametrize(
    "argv, option, words",
    [
        (["report", str(MATMUL), "--limit", "-1"], "--limit", "0 or more, got -1"),
        (["report", str(MATMUL), "--limit", "ten"], "--limit", "a whole number"),
        (["report", str(MATMUL), "--threshold", "idle.min_share=-0.1"], "--threshold", "idle.min_share needs"),
        (["report", str(MATMUL), "--threshold", "idle.min_share"], "--threshold", "needs NAME=VALUE"),
        (["view", str(MATMUL), "--depth", "-3"], "--depth", "0 or more, got -3"),
        (["view", str(MATMUL), "--threshold", "-1"], "--threshold", "0 or more, got -1"),
        (["view", str(MATMUL), "--threshold", "nan"], "--threshold", "0 or more, got nan"),
        (["view", str(MATMUL), "--flat", "--limit", "-2"], "--limit", "0 or more, got -2"),
        (["export", str(MATMUL), "--format", "forest", "--limit", "-1"], "--limit", "0 or more, got -1"),
    ],
)
def test_negative_counts_and_thresholds_are_refused(
    argv: list[str], option: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()  # argparse's usage (wrapped), then one error line
    assert lines[0].startswith(f"usage: tenprof {argv[0]}")
    assert lines[-1].startswith(f"tenprof {argv[0]}: error: argument {option}") and words in lines[-1], lines


def test_zero_still_means_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(MATMUL), "--limit", "0", "--threshold", "idle.min_share=0"]) == 0
    assert "aten::mm" in capsys.readouterr().out
    assert main(["view", str(MATMUL), "--flat", "--limit", "0", "--threshold", "0", "--depth", "0"]) == 0
    assert "aten::mm" in capsys.readouterr().out  # the flat view's --limit 0 shows all rows, as elsewhere
