"""Which thread of a recording is the script's main Python thread, read from its ops alone (a trace
imported without host samples has nothing else): the one that ran the most top-level ops, not counting
the autograd engine's nodes. In a CUDA training step the engine runs backward on a thread of its own,
whose top-level ops are all `autograd::engine::evaluate_function: ...` and often outnumber the forward
ops of the main thread (a ResNet's backward: 4020 top-level ops against 3374 forward, in a public trace
of facebookresearch/param); counted as ops, that thread was taken for the main one, and the
DataLoader's ranges on the real main thread were left out of the step's parts. Torch-free."""

from __future__ import annotations

import numpy as np

from tenprof.core.kernel_names import NO_OP_RECORDED_PREFIX
from tenprof.store.profile import Profile

AUTOGRAD_NODE = "autograd::engine::evaluate_function"


def main_op_thread(profile: Profile) -> int:
    """The main thread's id, -1 where no op was recorded. Where every top-level op is an autograd node
    (a recording of backward alone), the thread with the most of them."""
    ops = profile.table("ops")
    top = ops.column("depth").to_numpy() == 0
    if not top.any():
        return -1
    threads = ops.column("thread_id").to_numpy()
    node = profile.strings("ops", "name").where(lambda name: name.startswith(AUTOGRAD_NODE))
    counted = top & ~node
    chosen = threads[counted] if counted.any() else threads[top]
    values, counts = np.unique(chosen, return_counts=True)
    return int(values[counts.argmax()])


def host_ops_recorded(profile: Profile) -> bool:
    """Whether the recording holds the host's torch ops. A trace recorded with the GPU's activity alone
    (`activities=[ProfilerActivity.CUDA]`) has only CUDA calls; its launches get ops of their own, named
    "(no op recorded) ..." (importers.user_launches), and the host's time between them is not known to be
    Python: three public traces so recorded read as "in Python outside torch ops 97-100%". A script that only
    launches its own kernels (Triton, CuPy) under a capture that recorded the CPU has "(user kernel) ..." ops:
    recorded."""
    names = profile.strings("ops", "name")
    return not names.where(lambda name: name.startswith(NO_OP_RECORDED_PREFIX)).all()
