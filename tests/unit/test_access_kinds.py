"""The access pass records the launches of the first op of each kind (same op, line and input layouts)
and lets the others like it run without a buffer (tenprof.capture.tensors, on the CPU with a stand-in for
the sanitizer tool's hook): a loop's repeats are not recorded, another line or another shape is, and
`--access-all-ops` records them all."""

from __future__ import annotations

import torch

from tenprof.capture.tensors import TensorRecorder


class _Hook:
    """Stands in for the preloaded tool: what each op was told."""

    def __init__(self) -> None:
        self.told: list[tuple[int, bool]] = []

    def enter(self, seq: int, record: bool = True) -> None:
        self.told.append((seq, record))

    def leave(self, seq: int) -> None:
        pass

    def flush(self) -> None:
        pass


def _record(all_ops: bool) -> list[bool]:
    recorder = TensorRecorder(None)
    hook = _Hook()
    recorder.access = hook  # type: ignore[assignment]
    recorder.access_all_ops = all_ops
    x, wide = torch.ones(4), torch.ones(8)
    with recorder:
        for _ in range(3):
            x.add(1)  # the loop: one kind
        x.add(1)  # another line: another kind
        wide.add(1)  # another shape: another kind
    return [record for _, record in hook.told]


def test_only_the_first_op_of_each_kind_is_recorded() -> None:
    assert _record(all_ops=False) == [True, False, False, True, True]


def test_all_ops_are_recorded_when_asked() -> None:
    assert _record(all_ops=True) == [True] * 5
