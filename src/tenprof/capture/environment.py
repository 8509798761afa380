"""Facts about the machine for meta.json: host, Python, torch, CUDA, driver, GPUs."""

from __future__ import annotations

import platform
import socket
import subprocess
from typing import Any

import torch


def _driver_version() -> str:
    try:
        import pynvml  # nvidia-ml-py, present on most GPU machines

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def describe() -> dict[str, Any]:
    gpus = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            gpus.append(
                {
                    "index": index,
                    "name": props.name,
                    "total_memory_bytes": int(props.total_memory),
                    "compute_capability": f"{props.major}.{props.minor}",
                    "sm_count": int(props.multi_processor_count),
                }
            )
    return {
        "host": socket.gethostname(),
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda or "",
        "driver_version": _driver_version() if gpus else "",
        "gpus": gpus,
    }
