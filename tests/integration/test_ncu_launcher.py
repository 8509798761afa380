"""`tenprof run --passes counters` end to end on the CPU, with a stand-in for the `ncu` executable (it
prints ncu's progress lines, writes a report file, and runs no child) and for the `ncu_report` module:
the command line, the relay of ncu's output, progress, the log, and building the pass from the report.
The real ncu was run on the GPU machine (tests/gpu)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tenprof.analyses.kernels.replays import judged_replays
from tenprof.cli.main import main
from tenprof.store.profile import load_profile
from tests.unit.fake_ncu import fake_module

FAKE_NCU = """\
#!{python}
import gzip, json, sys
from pathlib import Path
args = sys.argv[1:]
assert "--nvtx-include" in args and args[args.index("--nvtx-include") + 1] == "tenprof_keep/"
base = Path(args[args.index("--export") + 1])
raw = Path(args[-1]).parent  # the child's spec.json lies in the pass's raw folder
print("==PROF== Connected to process 1")
print("hello from the script")
{body}
"""
WORKS = """\
for i in range(2):
    print(f'==PROF== Profiling "gather_kernel" - {i}: 0%....50%....100% - 11 passes')
sigs = {"version": 1, "signatures": {"signature_id": [0], "op": ["aten::mm"], "shapes": [[[4, 4]]],
        "dtypes": [["float32"]], "first_op_seq": [0], "count": [3]}}
(raw / "counters_ops.json.gz").write_bytes(gzip.compress(json.dumps(sigs).encode()))
(raw / "child_status.json").write_text(json.dumps({"exit_code": 0, "cut_short": False, "reason": "", "env": {}}))
Path(str(base) + ".ncu-rep").write_bytes(b"report")
"""
NO_PERMISSION = """\
print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
sys.exit(1)
"""


def _fake_ncu(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable, body=textwrap.dedent(body)))
    exe.chmod(0o755)
    return exe


def test_counters_pass_through_ncu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", fake_module(["tenprof_keep", "tp:0"]))
    script = tmp_path / "job.py"
    script.write_text("print('never run by the stand-in')\n")
    out = tmp_path / "prof"
    ncu = _fake_ncu(tmp_path, WORKS)
    assert main(["run", "--quiet", "--passes", "counters", "--ncu", str(ncu), "-o", str(out), str(script)]) == 0
    captured = capsys.readouterr()
    assert "hello from the script" in captured.out and "==PROF==" not in captured.out
    assert captured.err == ""  # --quiet: no progress line
    out.rename(tmp_path / "first")
    assert main(["run", "--passes", "counters", "--ncu", str(ncu), "-o", str(out), str(script)]) == 0
    assert "tenprof counters: 2 kernels replayed" in capsys.readouterr().err
    profile = load_profile(out)
    status = profile.meta.passes["counters"]
    assert status.state == "complete", status.reason
    assert "==PROF== Profiling" in (out / "counters" / "raw" / "ncu.log").read_text()
    (row,) = judged_replays(profile).values()  # the verdict is judged by the report, not stored
    assert row["op"] == "aten::mm" and row["signature_id"] == 0 and row["verdict"] == "memory-bound"


def test_missing_counter_permission_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.py"
    script.write_text("pass\n")
    out = tmp_path / "prof"
    ncu = _fake_ncu(tmp_path, NO_PERMISSION)
    assert main(["run", "--quiet", "--passes", "counters", "--ncu", str(ncu), "-o", str(out), str(script)]) == 1
    status = load_profile(out).meta.passes["counters"]
    assert status.state == "failed" and "ERR_NVGPUCTRPERM" in status.reason and "NVreg_Restrict" in status.reason
    assert "the counters pass failed" in capsys.readouterr().err


def test_counters_and_stalls_share_one_ncu_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", fake_module(["tenprof_keep", "tp:0"]))
    calls = tmp_path / "calls"
    body = WORKS + f'open({str(calls)!r}, "a").write(" ".join(args) + "\\n")\n'
    script = tmp_path / "job.py"
    script.write_text("pass\n")
    out = tmp_path / "prof"
    ncu = _fake_ncu(tmp_path, body)
    args = ["run", "--quiet", "--passes", "stalls,counters", "--ncu", str(ncu), "-o", str(out), str(script)]
    assert main(args) == 0
    (call,) = calls.read_text().splitlines()  # one ncu run
    assert "--metrics" in call and "--section SourceCounters" in call
    profile = load_profile(out)
    assert profile.meta.passes["counters"].state == "complete"
    stalls = profile.meta.passes["stalls"]
    assert stalls.state == "complete" and "counters pass's ncu run" in stalls.reason
    assert profile.table("stall_kernels").column("op").to_pylist() == ["aten::mm"]
    assert (out / "stalls" / "raw" / "stalls.json.gz").exists()
