"""One version: pyproject.toml's is the one tenprof writes into profiles and prints (core.version)."""

from __future__ import annotations

from pathlib import Path

import tomllib

import tenprof
from tenprof.core.version import VERSION


def test_the_package_writes_the_version_it_is_built_as() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == VERSION == tenprof.__version__
