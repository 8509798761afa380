"""Captures that several integration tests read, each made once per test session (a `tenprof run` takes
seconds, most of it the child importing torch). Each fixture says which tests share it; they carry its name
as an xdist_group mark, which keeps them together where the tests are handed out to the pytest-xdist
workers (tests/conftest.py), so that one worker records it and runs them. Tests must only read what these
fixtures made."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import shared_recording
from tests.helpers import Ran, imported_profile, run_kept

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "matmul_add.py"


@dataclass(frozen=True)
class Recorded:
    """A shared `tenprof run`: the script it ran, the profile it wrote, and what it returned and printed."""

    script: Path
    profile: Path
    ran: Ran


def _recorded(
    tmp_path_factory: pytest.TempPathFactory, name: str, script: str, argv_for: Callable[[Path], list[str]]
) -> Recorded:
    """`tenprof argv_for(folder)` run once per session, with `script` written to folder/job.py first; the
    arguments put the profile at folder/prof."""

    def run(folder: Path) -> None:
        (folder / "job.py").write_text(script)
        run_kept(argv_for(folder), folder / "ran")

    folder = shared_recording(tmp_path_factory, name, run)
    return Recorded(folder / "job.py", folder / "prof", Ran.read(folder / "ran"))


# ---- a script that raises ----

RAISING_SCRIPT = """\
import torch


def explode(x):
    raise ValueError(f"boom {x}")


explode((torch.ones(8) * 2).sum().item())
"""


@pytest.fixture(scope="session")
def raising_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """`tenprof run --passes all` (timeline and tensors here) of a script that raises from a function, not
    quiet: the report it prints, the traceback, the profile kept and the pass not run
    (test_cli_run_and_errors, test_bad_input, test_tensors_pass)."""
    return _recorded(
        tmp_path_factory,
        "raising_run",
        RAISING_SCRIPT,
        lambda folder: ["run", "--passes", "all", "-o", str(folder / "prof"), str(folder / "job.py")],
    )


# ---- a module that exits with status 3, run with --force over an older profile ----

MODULE_SCRIPT = """\
import sys, torch
assert sys.argv[1:] == ["--lr", "3"]
(torch.ones(8, 8) @ torch.ones(8, 8)).sum()
print("inductor imported:", "torch._inductor" in sys.modules)
sys.exit(3)
"""


@dataclass(frozen=True)
class ForcedModuleRun:
    """`tenprof run --force -o out/prof -m mypkg.train --lr 3` in `folder`, where out/prof held an imported
    profile and two files of the user's (notes.txt, job_copy.py)."""

    folder: Path
    profile: Path
    ran: Ran

    @property
    def module_file(self) -> Path:
        return self.folder / "mypkg" / "train.py"


@pytest.fixture(scope="session")
def forced_module_run(tmp_path_factory: pytest.TempPathFactory) -> ForcedModuleRun:
    """A package module run with its arguments that prints whether Inductor was imported and exits with status
    3, recorded with --force over an older profile holding the user's files: the exit code passed through, the
    module mode, and --force (test_cli_run_and_errors, test_output_safety)."""

    def record(folder: Path) -> None:
        package = folder / "mypkg"
        package.mkdir()
        (package / "__init__.py").write_text("")
        (package / "train.py").write_text(MODULE_SCRIPT)
        older = imported_profile(folder / "out" / "prof")
        (older / "notes.txt").write_text("mine")
        shutil.copy(package / "train.py", older / "job_copy.py")
        here = os.getcwd()
        os.chdir(folder)  # -m finds the package in the folder the run starts in
        try:
            run_kept(["run", "--quiet", "--force", "-o", str(older), "-m", "mypkg.train", "--lr", "3"], folder / "ran")
        finally:
            os.chdir(here)

    folder = shared_recording(tmp_path_factory, "forced_module_run", record)
    return ForcedModuleRun(folder, folder / "out" / "prof", Ran.read(folder / "ran"))


# ---- examples/matmul_add.py ----


@pytest.fixture(scope="session")
def matmul_add_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """examples/matmul_add.py on the CPU, six steps of 256x256, all recorded (--overhead-steps 0): what a run
    records of it, and the same run against the one the GPU machine's torch recorded (test_cli_run_and_errors,
    test_diff). Its `script` is the example itself."""

    def record(folder: Path) -> None:
        argv = ["run", "--quiet", "--overhead-steps", "0", "-o", str(folder / "prof"), str(EXAMPLE)]
        run_kept([*argv, "--size", "256", "--steps", "6"], folder / "ran")

    folder = shared_recording(tmp_path_factory, "matmul_add_run", record)
    return Recorded(EXAMPLE, folder / "prof", Ran.read(folder / "ran"))


# ---- a script that prints, run with a schedule ----

STAGE = "STAGE:2024-01-05 09:02:11 77:77 ActivityProfilerController.cpp:314] Completed Stage: Warm Up"
LOGGING_SCRIPT = f"""\
import os, sys, torch
import tenprof
print("out: hello from the script")
print("err: a STAGE of the script's own, in prose, and a USDT probe", file=sys.stderr)
x = torch.ones(64)
for _ in range(6):
    x = x * 2
    tenprof.step()
sys.stderr.write("\\r 50%|#####")
sys.stderr.flush()
# A Kineto line of the exact known shape, written by the script itself: the torch on the test machine may
# print no noise of its own (CPU torch 2.13 prints USDT profiler_start/profiler_stop lines; older ones
# printed STAGE lines).
os.write(2, {STAGE!r}.encode())
os.write(2, b"\\n")
sys.stderr.write("\\r100%|##########|\\n")
print("out: done")
"""


@pytest.fixture(scope="session")
def scheduled_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Six steps with --schedule wait=1,warmup=1,active=2, of a script that prints to stdout and stderr, a
    progress bar and a profiler log line among them: the steps recorded and timed, and the script's output
    relayed and filtered (test_cli_run_and_errors, test_log_filter)."""
    return _recorded(
        tmp_path_factory,
        "scheduled_run",
        LOGGING_SCRIPT,
        lambda folder: [
            "run",
            "--quiet",
            "-o",
            str(folder / "prof"),
            "--schedule",
            "wait=1,warmup=1,active=2",
            str(folder / "job.py"),
        ],
    )


# ---- scopes ----

SCOPES_SCRIPT = """\
import torch, tenprof

x = torch.ones(4)
for _ in range(20):
    with tenprof.scope("proj"):
        x = x + 1
    with tenprof.scope("proj"):
        x = x * 1


@tenprof.scope("mlp", flops=2.0e6)
def mlp(x):
    return (x @ x).relu()


x = torch.ones(64, 64)
for i in range(6):
    with tenprof.scope("attn", flops=1.5e9, bytes=4096, heads=8):
        y = x + 1
    mlp(x)
    tenprof.step(tokens=128 * (i + 1))
"""


@pytest.fixture(scope="session")
def scopes_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Scopes entered microseconds apart (proj, 20 times two, before the first step), then six steps of
    scopes and steps given numbers (attn, mlp, tokens): each scope's line, and the numbers carried through
    the run (test_cli_run_and_errors, test_user_metrics)."""
    return _recorded(
        tmp_path_factory,
        "scopes_run",
        SCOPES_SCRIPT,
        lambda folder: ["run", "--quiet", "-o", str(folder / "prof"), str(folder / "job.py")],
    )


# ---- a tight loop that never calls tenprof.step() ----

TIGHT_LOOP = """\
import torch

w = torch.randn(64, 64)
for i in range(6):
    x = torch.randn(8, 64)
    y = (x @ w).relu()
    z = y.sum().item()
"""


@pytest.fixture(scope="session")
def tight_loop_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """A CPU loop of six iterations whose ops run microseconds apart, with no tenprof.step(): each op's line,
    and the iterations read from the ops (test_native_lines, test_step_time)."""
    return _recorded(
        tmp_path_factory,
        "tight_loop_run",
        TIGHT_LOOP,
        lambda folder: ["run", "--quiet", "-o", str(folder / "prof"), str(folder / "job.py")],
    )


# ---- the tensors pass where the accesses pass cannot run ----

TRANSPOSED_ADD = "import torch\na = torch.randn(64, 64)\nb = a.t()\nc = b + 1\n"


@pytest.fixture(scope="session")
def accesses_without_toolkit_run(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """`--passes tensors,accesses` of an add that reads a transposed view, on a machine without the CUDA
    toolkit (PATH, CUDA_HOME and the toolkit lookup all say so): the accesses pass fails alone, and the
    tensors pass's tables are what the tensor stall cost is computed on (test_accesses_launcher,
    test_tensor_stall_cost)."""
    from tenprof.capture import accesses_build

    def no_toolkit() -> accesses_build.Toolkit:
        raise accesses_build.AccessToolUnavailable("the accesses pass needs the CUDA toolkit's nvcc to build its tool")

    def argv_for(folder: Path) -> list[str]:
        return ["run", "--quiet", "--passes", "tensors,accesses", "-o", str(folder / "prof"), str(folder / "job.py")]

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("PATH", "/nonexistent")
        monkeypatch.setenv("CUDA_HOME", str(tmp_path_factory.getbasetemp() / "no-cuda"))
        monkeypatch.setattr(accesses_build, "find_toolkit", no_toolkit)
        return _recorded(tmp_path_factory, "accesses_without_toolkit_run", TRANSPOSED_ADD, argv_for)
