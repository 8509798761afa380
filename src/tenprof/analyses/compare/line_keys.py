"""Keys that match a user's source line between two runs (`tenprof diff`), though an edit moved it.

A line's key is (file name, the line's text, which of the lines with that text in that file it is,
counting by line number among the lines the profile knows). The text is the one stored with the
profile's frames when it was built (`frames.text`); a profile built before that column existed reads
the file itself, but only when the file has not changed since the profile was made, as an edit in place
would otherwise give the old run the new text. A line without text (unreadable, or edited since) is
keyed by its number (and `diff` matches it to the other run's line at that file name and number).
Two lines with the same text in one file (`x = self.act(x)` twice) stay apart
through the count, as long as both runs know both.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import defaultdict
from collections.abc import Iterable

from tenprof.sourcefiles import line_text
from tenprof.store.profile import Profile

LineKey = tuple[str, str, int]  # file name, text (or "line N"), ordinal among equal texts
Place = tuple[LineKey, str]  # the key and the label `file:line`


class LineKeys:
    """The keys of one profile's lines: the frames' lines and any others named (compiled kernels'); only
    the user's lines and those others are read for their text."""

    def __init__(self, profile: Profile, extra: Iterable[tuple[str, int]] = ()) -> None:
        frames = profile.table("frames")
        self.frame_places = list(
            zip(
                (str(f or "") for f in frames.column("file").to_pylist()),
                (int(n or 0) for n in frames.column("line").to_pylist()),
                strict=True,
            )
        )
        stored: dict[tuple[str, int], str] = {}
        for place, text in zip(self.frame_places, frames.column("text").to_pylist(), strict=True):
            if text:
                stored[place] = text
        made = _timestamp(profile.meta.created_at)
        user = frames.column("is_user").to_pylist()
        readable = {p for p, mine in zip(self.frame_places, user, strict=True) if mine} | set(extra)
        texts = {
            p: stored.get(p) or (_unchanged_text(*p, made) if p in readable else None) or f"line {p[1]}"
            for p in set(self.frame_places) | readable
        }
        # ordinal among the lines of one file with one text, by line number
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for (file, line), text in texts.items():
            groups[(os.path.basename(file), text)].append(line)
        self._keys: dict[tuple[str, int], Place] = {}
        for (file, line), text in texts.items():
            name = os.path.basename(file)
            ordinal = sorted(set(groups[(name, text)])).index(line)
            self._keys[(file, line)] = ((name, text, ordinal), f"{file}:{line}")

    def of_frame(self, frame: int) -> Place:
        return self._keys[self.frame_places[frame]]

    def of(self, file: str, line: int) -> Place:
        return self._keys[(file, line)]


def _timestamp(iso: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(iso).timestamp() if iso else None
    except ValueError:
        return None


def _unchanged_text(file: str, line: int, made: float | None) -> str | None:
    """The line's text read from the file, where it was not modified after the profile was made."""
    return line_text(file, line, made) if made is not None else None
