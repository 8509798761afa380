"""NVTX range names shared by the counters child (which pushes them) and the torch-free launcher and
importer (which filter and read them)."""

KEEP_RANGE = "tenprof_keep"
OP_RANGE_PREFIX = "tp:"
SCOPE_RANGE_PREFIX = "ts:"
COMPILED_RANGE_PREFIX = "tk:"  # + the generated Triton kernel's name (torch.compile)
