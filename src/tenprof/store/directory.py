"""Creating a profile directory: refuse to overwrite unless asked, and then only a tenprof profile."""

from __future__ import annotations

import shutil
from pathlib import Path

from tenprof.errors import UsageError
from tenprof.store.meta import META_FILE


def prepare_output_dir(path: Path, force: bool) -> None:
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{path} exists and is not a directory; choose another with -o")
        entries = list(path.iterdir())
        if entries:
            if not force:
                raise UsageError(f"{path} already exists; pass --force to replace it or -o DIR to choose another")
            if not (path / META_FILE).exists():
                raise UsageError(f"{path} is not empty and is not a tenprof profile; refusing to replace it")
            shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
