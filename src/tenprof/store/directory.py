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


RANK_DIR_PREFIX = "rank"


def rank_dir(out_dir: Path, rank: int) -> Path:
    """Where one rank of a multi-process job writes its profile (five digits: listings sort by rank)."""
    return out_dir / f"{RANK_DIR_PREFIX}{rank:05d}"


def rank_dirs(out_dir: Path) -> list[Path]:
    """The ranks' profile directories under a multi-rank output directory, by rank."""
    return sorted(p.parent for p in out_dir.glob(f"{RANK_DIR_PREFIX}[0-9]*/{META_FILE}"))
