"""Where a profile is written, and the only way tenprof ever replaces or removes anything.

The contract (the README's "Safety" paragraph):
- A directory is a tenprof profile only if it holds the marker file `.tenprof-profile`, a JSON object
  that only tenprof writes (`written_by: tenprof`, the schema version, and the top-level entries
  tenprof wrote there). A `meta.json` alone proves nothing: users have files of that name.
- A new profile goes into an empty or new directory, or, when it replaces a profile (`--force`), into a
  sibling staging directory; the old one is touched only once the new one is complete, and then only
  the entries its marker lists are removed. Anything else in the directory (a user's notes, an export
  written there) is kept. A directory that is not a profile is never replaced.
- Writing fails before any work is done when the directory cannot be made or written to.
- `discard()` removes only what this writer made (for an import that failed, so a retry is not
  blocked); a profile that a run recorded is never discarded.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenprof.errors import ProfileError, UsageError
from tenprof.store.meta import META_FILE
from tenprof.store.schema import SCHEMA_VERSION

MARKER_FILE = ".tenprof-profile"
_WRITTEN_BY = "tenprof"
_STAGING_TAG = ".tenprof-new-"
_TRASH_TAG = ".tenprof-old-"


def read_marker(path: Path) -> dict[str, Any] | None:
    """The marker of a profile directory, or None when `path` holds none that tenprof wrote."""
    try:
        marker = json.loads((path / MARKER_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("written_by") != _WRITTEN_BY:
        return None
    if not isinstance(marker.get("entries"), list):
        return None
    return marker


def is_profile_dir(path: Path) -> bool:
    return path.is_dir() and read_marker(path) is not None


def owned_entries(path: Path) -> list[str]:
    """The top-level names tenprof wrote in the profile at `path` (those that still exist)."""
    marker = read_marker(path)
    if marker is None:
        return []
    names = {n for n in marker["entries"] if isinstance(n, str)}
    # Names are plain entries of this directory: never a path that leads elsewhere.
    return sorted(n for n in names if n and "/" not in n and n not in (".", "..") and (path / n).exists())


def claim(profile_dir: Path, *names: str) -> None:
    """Record that tenprof wrote these top-level entries of `profile_dir` (and the marker itself)."""
    marker = read_marker(profile_dir) or {"written_by": _WRITTEN_BY, "entries": []}
    entries = {n for n in marker["entries"] if isinstance(n, str)}
    entries.update({MARKER_FILE, *names})
    marker.update(schema_version=SCHEMA_VERSION, entries=sorted(entries))
    fd, tmp = tempfile.mkstemp(prefix=".marker-", dir=profile_dir)
    with os.fdopen(fd, "w") as handle:
        json.dump(marker, handle, indent=1)
    os.replace(tmp, profile_dir / MARKER_FILE)


def _sibling(path: Path, tag: str) -> Path:
    """A hidden neighbour of `path` on the same file system (so renames between them are atomic)."""
    path = path.resolve()
    return path.parent / f".{path.name}{tag}{os.getpid()}"


def _refuse_reason(path: Path, force: bool) -> str:
    """Why a new profile may not go to `path`, or '' when it may."""
    if not path.exists():
        return ""
    if not path.is_dir():
        return f"{path} exists and is not a directory; choose another with -o"
    if not any(path.iterdir()):
        return ""
    # Said before --force is suggested: --force replaces only a profile, so it would not help here.
    inside = path / "tenprof-out"
    if not is_profile_dir(path):
        if (path / META_FILE).exists():
            return (
                f"{path} has a {META_FILE} but no {MARKER_FILE} marker (not a profile, or one written by an older "
                "tenprof): tenprof replaces only what it can tell is its own; remove it yourself or choose "
                f"another -o (e.g. -o {inside})"
            )
        return (
            f"{path} is not empty and is not a tenprof profile, so tenprof will not write into it (--force "
            f"replaces only a profile); choose another -o (e.g. -o {inside})"
        )
    if not force:
        return f"{path} already exists; pass --force to replace it or -o DIR to choose another"
    return ""


@dataclass
class OutputDirectory:
    """A profile being written: `path` is where tenprof writes now; `final` where it ends up."""

    final: Path
    path: Path
    created: bool  # tenprof made `final` (it did not exist before)

    @property
    def staged(self) -> bool:
        return self.path != self.final

    def commit(self) -> None:
        """Claim what was written and, when staged, swap it in for the old profile's own entries."""
        claim(self.path, *(p.name for p in self.path.iterdir()))
        if self.staged:
            _swap_in(self.path, self.final)
            self.path = self.final

    def discard(self) -> None:
        """Remove what this writer made (nothing else); for writes that failed, such as a bad import."""
        if self.staged:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = self.final
            return
        remove_profile(self.path, remove_folder=self.created)


def open_output_dir(path: Path, force: bool) -> OutputDirectory:
    """Check `path` can take a new profile and make the directory tenprof will write into.

    Raises UsageError (the directory holds something that is not a replaceable profile) or ProfileError
    (it cannot be made or written), before any work is done."""
    reason = _refuse_reason(path, force)
    if reason:
        raise UsageError(reason)
    replacing = path.is_dir() and any(path.iterdir())
    created = not path.exists()
    target = _sibling(path, _STAGING_TAG) if replacing else path
    try:
        if replacing and not os.access(path, os.W_OK):
            raise PermissionError(f"[Errno 13] Permission denied: '{path}'")
        target.mkdir(parents=True, exist_ok=not replacing)
        claim(target, META_FILE)
    except OSError as exc:
        if replacing:
            shutil.rmtree(target, ignore_errors=True)
        reason = exc.strerror or str(exc)
        raise ProfileError(f"cannot write the profile to {path}: {reason}; choose another with -o") from None
    return OutputDirectory(final=path, path=target, created=created)


def remove_profile(path: Path, remove_folder: bool = True) -> None:
    """Delete the entries tenprof wrote in the profile at `path`, then the folder if that left it empty
    (a file the user put there stays, and so does the folder holding it)."""
    for name in owned_entries(path):
        entry = path / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    if remove_folder:
        try:
            path.rmdir()
        except OSError:
            pass


def _swap_in(new: Path, old: Path) -> None:
    """Move the old profile's own entries aside, move the new profile's entries in, then delete the old
    entries. Any failure before the delete puts everything back and names where the new profile is."""
    if not is_profile_dir(old):
        raise ProfileError(f"{old} stopped being a tenprof profile while the new one was written; it is in {new}")
    ours = owned_entries(old)
    incoming = [p.name for p in new.iterdir()]
    clash = [n for n in incoming if n not in ours and (old / n).exists()]
    if clash:
        raise ProfileError(
            f"{old / clash[0]} is not tenprof's but the new profile has an entry of that name; move it away "
            f"(the new profile is in {new})"
        )
    trash = _sibling(old, _TRASH_TAG)
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        trash.mkdir()
        for name in ours:
            os.rename(old / name, trash / name)
            moved_out.append(name)
        for name in incoming:
            os.rename(new / name, old / name)
            moved_in.append(name)
    except OSError as exc:
        for name in moved_in:
            os.rename(old / name, new / name)
        for name in moved_out:
            os.rename(trash / name, old / name)
        if trash.is_dir() and not any(trash.iterdir()):
            trash.rmdir()
        raise ProfileError(
            f"cannot replace the profile in {old}: {exc.strerror or exc}; it is unchanged and the new one is in {new}"
        ) from None
    new.rmdir()
    try:
        shutil.rmtree(trash)
    except OSError as exc:
        raise ProfileError(
            f"the new profile is in {old}, but the old one's files could not be deleted from {trash}: "
            f"{exc.strerror or exc}"
        ) from None


RANK_DIR_PREFIX = "rank"


def rank_dir(out_dir: Path, rank: int) -> Path:
    """Where one rank of a multi-process job writes its profile (five digits: listings sort by rank)."""
    return out_dir / f"{RANK_DIR_PREFIX}{rank:05d}"


def rank_dirs(out_dir: Path) -> list[Path]:
    """The ranks' profile directories under a multi-rank output directory, by rank."""
    return sorted(p.parent for p in out_dir.glob(f"{RANK_DIR_PREFIX}[0-9]*/{META_FILE}"))
