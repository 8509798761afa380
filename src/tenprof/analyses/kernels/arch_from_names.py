"""The GPU architecture a profile's library kernels were built for, from their names (pure; no I/O).

cuBLAS, cuDNN and CUTLASS name many kernels after the architecture they target: 'volta_sgemm_128x64_nn',
'turing_fp16_s1688gemm_...', 'ampere_sgemm_...', 'sm80_xmma_gemm_...', 'sm90_xmma_...',
'cutlass_80_simt_sgemm_...'. A GPU runs kernels built for its own architecture or an older one, so the
newest of them bounds the GPU's compute capability from below. Read where a profile does not name its GPU
(Kineto's traces before torch 1.10 have no device list).
"""

from __future__ import annotations

import re

from tenprof.store.profile import Profile

_ARCH_IN_NAME = re.compile(
    r"(?:^|[^a-z])(maxwell|volta|turing|ampere|hopper|sm_?(\d{2,3})|cutlass_(\d{2,3}))_", re.IGNORECASE
)
# cuBLAS names its kernels for Maxwell and Pascal GPUs 'maxwell_': newer GPUs run kernels of their own
_ARCH_WORDS = {"maxwell": 50, "volta": 70, "turing": 75, "ampere": 80, "hopper": 90}
_FAMILIES = (
    (100, "Blackwell"),
    (90, "Hopper"),
    (89, "Ada"),
    (80, "Ampere"),
    (75, "Turing"),
    (70, "Volta"),
    (60, "Pascal"),
    (50, "Maxwell"),
)


def newest_arch(profile: Profile) -> int | None:
    """The newest architecture in the kernels' names, as compute capability x 10 (70 for 'volta_'); None
    where no name carries one."""
    newest = None
    for name in profile.strings("kernels", "name").values:
        for match in _ARCH_IN_NAME.finditer(str(name)):
            word, sm, cutlass = match.groups()
            arch = int(sm or cutlass) if (sm or cutlass) else _ARCH_WORDS[word.lower()]
            newest = arch if newest is None else max(newest, arch)
    return newest


def family(arch: int) -> str:
    """'Volta' for 70, 'Ampere' for 86: the newest family at or below `arch`."""
    return next((name for floor, name in _FAMILIES if arch >= floor), f"sm_{arch}")
