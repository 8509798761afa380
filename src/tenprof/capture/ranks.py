"""Which rank of a multi-process job this `tenprof run` is, from the environment its launcher set.

torch-free. tenprof never launches ranks itself: torchrun, mpirun (Open MPI, MPICH) and srun each set
variables naming the rank, its rank on the host and the job's size. With more than one rank, each rank
writes its profile to `<out>/rank<NNNNN>/` (`tenprof.store.directory.rank_dir`), and no two ranks write
the same file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

# launcher: (rank, local rank, world size) variables, in the order they are tried
LAUNCHER_VARIABLES: tuple[tuple[str, tuple[str, str, str]], ...] = (
    ("torchrun", ("RANK", "LOCAL_RANK", "WORLD_SIZE")),
    ("mpirun (Open MPI)", ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE")),
    ("mpirun (MPICH)", ("PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE")),
    ("srun", ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS")),
)


@dataclass(frozen=True)
class RankInfo:
    rank: int
    local_rank: int
    world_size: int
    launcher: str


def rank_from_env(env: Mapping[str, str] | None = None) -> RankInfo | None:
    """This process's rank when a launcher started several; None for a single process."""
    env = os.environ if env is None else env
    for launcher, (rank, local, size) in LAUNCHER_VARIABLES:
        if rank in env and size in env:
            try:
                info = RankInfo(int(env[rank]), int(env.get(local, "-1") or -1), int(env[size]), launcher)
            except ValueError:
                continue
            return info if info.world_size > 1 else None
    return None
