"""Python call paths interned as nodes of one frame tree (the profile's `frames` table), for every
recorder of the script's process: the call-site recorders, the host and worker samplers, the script's
own launches and the tensors pass.

A path's key is the tuple of (code object, bytecode offset) of its frames, so a repeated path costs one
frame walk and one dict lookup; line numbers are read only the first time a path is seen. Frames below
the user's script (tenprof's launcher, runpy), torch's mode plumbing and tenprof's capture modules are
left out.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import torch

from tenprof.sourcefiles import is_user_file

_PLUMBING_FILES = {
    torch.overrides.__file__,
    sys.modules["torch.utils._device"].__file__ if "torch.utils._device" in sys.modules else "",
}


class FrameInterner:
    """Call paths -> ids of nodes in a frame tree (the `frames` table)."""

    def __init__(self, stop_code: CodeType | None, skip_files: set[str]) -> None:
        self.stop_code = stop_code
        self.skip_files = skip_files
        self.by_key: dict[tuple[int, ...], int] = {}
        self.nodes: dict[tuple[int, str, int, str], int] = {}
        self.rows: list[list[Any]] = []
        self._keep_alive: set[CodeType] = set()
        self._lock = threading.RLock()

    def path_id(self, frame: FrameType | None) -> int:
        k = self._key(frame)
        found = self.by_key.get(k)
        if found is None:
            found = self._intern(frame)
            self.by_key[k] = found
        return found

    def _key(self, frame: FrameType | None) -> tuple[int, ...]:
        # Hot path: one int per frame, (code identity, bytecode offset); hashing ints is several times
        # cheaper than hashing code objects. Code objects seen are kept alive (in intern_chain), so their
        # ids cannot be reused by other code during the run. Plumbing frames are dropped in intern_chain.
        key: list[int] = []
        append = key.append
        stop = self.stop_code
        f = frame
        while f is not None:
            code = f.f_code
            if code is stop:
                break
            append(id(code) + (f.f_lasti << 48))
            f = f.f_back
        return tuple(key)

    def sample(self, frame: FrameType | None) -> tuple[tuple[int, ...], list[tuple[CodeType, int]] | None]:
        """A path read from another thread (the host sampler's), in two halves: here, the path's key and,
        where the path is new, its (code, bytecode offset) chain, innermost first; then `id_of`. Nothing
        this returns holds a frame, so the sampler lets go of the frames before it interns: a frame whose
        function returned meanwhile is then freed by its own thread, not by the sampler's."""
        key = self._key(frame)
        if key in self.by_key:
            return key, None
        chain = []
        f = frame
        while f is not None and f.f_code is not self.stop_code:
            chain.append((f.f_code, f.f_lasti))
            f = f.f_back
        return key, chain

    def id_of(self, key: tuple[int, ...], chain: list[tuple[CodeType, int]] | None) -> int:
        """The node of a path `sample` read."""
        found = self.by_key.get(key)
        if found is None:
            lines = [(code, _line_at(code, offset)) for code, offset in chain or ()]
            with self._lock:
                found = self.intern_chain(lines)
            self.by_key[key] = found
        return found

    def depth(self, frame_id: int) -> int:
        return int(self.rows[frame_id][5]) if frame_id >= 0 else -1

    def _intern(self, frame: FrameType | None) -> int:
        chain: list[tuple[CodeType, int]] = []
        f = frame
        while f is not None and f.f_code is not self.stop_code:
            chain.append((f.f_code, f.f_lineno or 0))
            f = f.f_back
        # The host sampler interns from its own thread: one node per path, whichever thread comes first.
        with self._lock:
            return self.intern_chain(chain)

    def intern_chain(self, chain: list[tuple[CodeType, int]]) -> int:
        """The node of a call path given innermost frame first as (code, line), the stop frame left out."""
        parent = -1
        for code, line in reversed(chain):
            self._keep_alive.add(code)
            if code.co_filename in self.skip_files:
                continue
            parent = self.intern_row(parent, code.co_filename, line, code.co_name)
        return parent

    def intern_row(self, parent: int, file: str, line: int, function: str) -> int:
        """The node of one frame under `parent` (-1: a root), added if new. Also how frames recorded in
        another process (DataLoader workers) join this tree."""
        node_key = (parent, file, line, function)
        node = self.nodes.get(node_key)
        if node is None:
            node = len(self.rows)
            depth = self.rows[parent][5] + 1 if parent >= 0 else 0
            self.rows.append([node, parent, file, line, function, depth, is_user_file(file)])
            self.nodes[node_key] = node
        return node


def _line_at(code: CodeType, offset: int) -> int:
    """The line of the instruction at a bytecode offset (a frame's f_lasti), as the frame's f_lineno reads
    it; 0 where the code table gives none."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line or 0
    return 0


def new_interner(stop_code: CodeType | None) -> FrameInterner:
    """An interner that leaves out frames below `stop_code`, torch's mode plumbing and tenprof's capture."""
    here = str(Path(__file__).resolve().parent)
    skip = {f for f in _PLUMBING_FILES if f}
    skip |= {str(p) for p in Path(here).glob("*.py")}
    return FrameInterner(stop_code, skip)
