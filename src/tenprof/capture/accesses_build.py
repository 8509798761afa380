"""The access pass's native tool: find the CUDA toolkit, build the tool once, say how to load it.

torch-free (the launcher uses it). The sources ship in `tenprof/native/`: `access_patch.cu` (the device
patch, built with `nvcc --fatbin ... --compile-as-tools-patch` for this machine's GPU) and
`access_tool.cpp` (the host part, a shared library linked with compute-sanitizer's public library).
They are built on first use into a cache folder named by a hash of the sources, the nvcc version and
the GPU architecture, so a later run reuses them. `find_toolkit` and `build_access_tool` raise
`AccessToolUnavailable` with one line naming the fix (no nvcc, no compute-sanitizer headers, no GPU,
a failed build); the launcher then marks the accesses pass failed and the other passes still run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tenprof.capture import native_build
from tenprof.errors import TenprofError

NATIVE_DIR = Path(__file__).resolve().parents[1] / "native"
SOURCES = ("access_format.h", "access_patch.cu", "access_tool.cpp")
LIBRARY_NAME = "libtenprof_access.so"
PATCH_NAME = "tenprof_access_patch.fatbin"
PATCH_CALLBACK = "tenprof_on_global_access"
# Sampling: per PC slot, every one of the first FIRST warp accesses, then those of one warp in EVERY.
DEFAULT_FIRST = 32
DEFAULT_EVERY = 64


class AccessToolUnavailable(TenprofError):
    """The access pass cannot run here (toolkit, sanitizer or GPU missing, or the build failed)."""


@dataclass(frozen=True)
class Toolkit:
    nvcc: Path
    sanitizer_dir: Path  # holds include/sanitizer.h and libsanitizer-public.so


@dataclass(frozen=True)
class AccessTool:
    library: Path
    patch: Path

    def environment(self, out_dir: Path, every: int = DEFAULT_EVERY, first: int = DEFAULT_FIRST) -> dict[str, str]:
        """What the child's environment needs for the tool to record into `out_dir`."""
        preload = os.environ.get("LD_PRELOAD", "")
        return {
            "LD_PRELOAD": str(self.library) + (":" + preload if preload else ""),
            "TENPROF_ACCESS_DIR": str(out_dir),
            "TENPROF_ACCESS_PATCH": str(self.patch),
            "TENPROF_ACCESS_EVERY": str(every),
            "TENPROF_ACCESS_FIRST": str(first),
        }


def find_toolkit() -> Toolkit:
    """nvcc from $TENPROF_NVCC, PATH, $CUDA_HOME or /usr/local/cuda; compute-sanitizer beside it."""
    candidates = [os.environ.get("TENPROF_NVCC", ""), shutil.which("nvcc") or ""]
    for home in (os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"):
        if home:
            candidates.append(str(Path(home) / "bin" / "nvcc"))
    nvcc = next((Path(c) for c in candidates if c and Path(c).is_file() and os.access(c, os.X_OK)), None)
    if nvcc is None:
        raise AccessToolUnavailable(
            "the accesses pass needs the CUDA toolkit's nvcc to build its compute-sanitizer tool: "
            "put nvcc on PATH or set CUDA_HOME"
        )
    # nvcc may be a wrapper script outside the toolkit: look beside it, then in the usual homes.
    homes = [nvcc.resolve().parent.parent, *(Path(c).parent.parent for c in candidates[2:] if c)]
    found = [h / "compute-sanitizer" for h in homes if _has_sanitizer(h / "compute-sanitizer")]
    if not found:
        raise AccessToolUnavailable(
            f"the accesses pass needs compute-sanitizer's public API (include/sanitizer.h, "
            f"libsanitizer-public.so) beside nvcc, in {homes[0] / 'compute-sanitizer'}: install the CUDA "
            "toolkit's compute-sanitizer"
        )
    sanitizer = found[0]
    return Toolkit(nvcc, sanitizer)


def _has_sanitizer(folder: Path) -> bool:
    return (folder / "include" / "sanitizer.h").is_file() and (folder / "libsanitizer-public.so").exists()


def gpu_architecture() -> str:
    """sm_XY of the first GPU, from nvidia-smi (the launcher does not import torch)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise AccessToolUnavailable("the accesses pass needs an NVIDIA GPU (nvidia-smi was not found)")
    # the first GPU the profiled process will see
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    select = [f"--id={visible}"] if visible else []
    try:
        text = subprocess.run(
            [smi, *select, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        major, minor = text.splitlines()[0].strip().split(".")
        return f"sm_{int(major)}{int(minor)}"
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        raise AccessToolUnavailable("the accesses pass needs an NVIDIA GPU (nvidia-smi listed none)") from None


def build_commands(toolkit: Toolkit, arch: str, out_dir: Path) -> list[list[str]]:
    include = str(toolkit.sanitizer_dir / "include")
    patch = [
        str(toolkit.nvcc), "--fatbin", "--keep-device-functions", "-Xptxas", "--compile-as-tools-patch",
        f"-arch={arch}", "-I", include, "-o", str(out_dir / PATCH_NAME), str(NATIVE_DIR / "access_patch.cu"),
    ]  # fmt: skip
    library = [
        str(toolkit.nvcc), "-shared", "-O2", "-std=c++17", "-Xcompiler", "-fPIC", "-I", include,
        "-o", str(out_dir / LIBRARY_NAME), str(NATIVE_DIR / "access_tool.cpp"),
        "-L", str(toolkit.sanitizer_dir), "-lsanitizer-public", f"-Xlinker=-rpath,{toolkit.sanitizer_dir}",
    ]  # fmt: skip
    return [patch, library]


def cache_root() -> Path:
    return native_build.cache_root("access")


def _cache_key(toolkit: Toolkit, arch: str) -> str:
    digest = hashlib.sha256(arch.encode())
    for name in SOURCES:
        digest.update((NATIVE_DIR / name).read_bytes())
    try:
        version = subprocess.run([str(toolkit.nvcc), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    digest.update(version.encode())
    return digest.hexdigest()[:16]


def build_access_tool(cache: Path | None = None) -> AccessTool:
    """The built tool, from the cache or built now (about half a minute the first time)."""
    toolkit = find_toolkit()
    arch = gpu_architecture()
    target = (cache or cache_root()) / f"{arch}-{_cache_key(toolkit, arch)}"
    tool = AccessTool(target / LIBRARY_NAME, target / PATCH_NAME)
    if tool.library.is_file() and tool.patch.is_file():
        return tool
    native_build.build_into(
        target, lambda folder: build_commands(toolkit, arch, folder), AccessToolUnavailable, "building the access tool"
    )
    return tool
