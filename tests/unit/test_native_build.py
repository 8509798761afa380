"""tenprof.capture.native_build: a build lands whole or not at all, and a failed one says why in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tenprof.capture import native_build
from tenprof.errors import TenprofError


class Unavailable(TenprofError):
    pass


def test_a_build_whose_commands_all_succeed_is_moved_into_place(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "abc"
    write = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('built')"
    native_build.build_into(target, lambda folder: [[sys.executable, "-c", write, str(folder / "lib.so")]], Unavailable)
    assert (target / "lib.so").read_text() == "built"
    assert [p.name for p in target.parent.iterdir()] == ["abc"]  # no build folder left beside it


def test_a_failed_build_leaves_no_target_and_names_its_first_error_and_log(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "abc"
    fail = "import sys; print('x.cpp:3: error: no such type'); sys.exit(1)"
    with pytest.raises(Unavailable) as caught:
        native_build.build_into(target, lambda folder: [[sys.executable, "-c", fail]], Unavailable, "its build")
    message = str(caught.value)
    assert message.startswith("its build failed (x.cpp:3: error: no such type); log: ") and "\n" not in message
    assert not target.exists() and Path(message.rsplit("log: ", 1)[1]).is_file()


def test_no_compiler_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    with pytest.raises(Unavailable, match=r"no C\+\+ compiler .* install g\+\+ or set CXX"):
        native_build.find_compiler(Unavailable)
