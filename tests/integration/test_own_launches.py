"""The script's own kernel launches in a real capture, recorded at their line (the hooks' units are in
tests/unit/test_own_launches.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tenprof.cli.main import main
from tenprof.importers.callsites import read_callsites
from tenprof.store.profile import load_profile
from tests.helpers import FAKE_JIT

SCRIPT = textwrap.dedent(
    """
    import sys, torch, tenprof
    sys.path.insert(0, sys.argv[1])
    from triton.runtime.jit import jit

    @jit
    def inner(x):
        return x + 1

    @jit
    def outer(x):
        return inner[(1,)](x) * 2  # a launch inside a launch (an autotuner's benchmark run): one record

    x = torch.ones(4)
    for _ in range(9):
        y = outer[(1,)](x)  # the launch line
        tenprof.step()
    import triton.runtime.jit as j
    print("unwrapped" if not hasattr(j.JITFunction.run, "__wrapped__") else "wrapped")
    """
)


def test_own_launches_are_recorded_at_their_line(tmp_path: Path, capfd) -> None:  # type: ignore[no-untyped-def]
    fake = tmp_path / "fake"
    (fake / "triton" / "runtime").mkdir(parents=True)
    (fake / "triton" / "__init__.py").write_text("")
    (fake / "triton" / "runtime" / "__init__.py").write_text("")
    (fake / "triton" / "runtime" / "jit.py").write_text(FAKE_JIT)
    script = tmp_path / "launch.py"
    script.write_text(SCRIPT)
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "-o", str(out), str(script), str(fake)]) == 0
    # triton was imported after the capture started: the wrapper went on at the import
    assert "wrapped" in capfd.readouterr().out.split()
    log = read_callsites(out / "timeline" / "raw" / "callsites.json.gz")
    steps = load_profile(out).table("steps").to_pydict()
    recorded = sum(1 for n, on in zip(steps["step"], steps["capture_on"], strict=True) if on and n < 9)
    assert log.launch_name == ["outer"] * recorded  # outermost launches only, none while the capture was off
    assert recorded == 6  # steps 3-4 and 8 run with the capture off
    line = next(i + 1 for i, t in enumerate(SCRIPT.splitlines()) if "the launch line" in t)
    frames = {row[0]: row for row in log.frames}
    for frame in log.launch_frame.tolist():
        # the innermost frame of the user's script on the launch's call path is the launch line
        node = frame
        while node >= 0 and frames[node][2] != str(script):
            node = frames[node][1]
        assert node >= 0 and frames[node][3] == line
    assert (log.launch_end >= log.launch_start).all()
