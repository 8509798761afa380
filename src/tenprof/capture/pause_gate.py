"""A pause for a capture's daemon thread (the host sampler, the GPU clock reader): while paused the thread
blocks in `wait_while_paused` rather than polling, so a paused reader costs the program nothing; `open`
wakes it (to resume it, or to let it see a stop). No torch."""

from __future__ import annotations

import threading


class PauseGate:
    def __init__(self, paused: bool) -> None:
        self._open = threading.Event()  # set while running, clear while paused
        if not paused:
            self._open.set()

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    def close(self) -> None:
        """Pause: the thread blocks at its next `wait_while_paused`."""
        self._open.clear()

    def open(self) -> None:
        """Resume, or wake a paused thread so that it sees a stop."""
        self._open.set()

    def wait_while_paused(self) -> None:
        self._open.wait()
