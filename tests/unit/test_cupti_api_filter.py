"""Which CUDA API calls the experimental CUPTI filter leaves recorded (tenprof.capture.cupti_api_filter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenprof.capture import cupti_api_filter
from tenprof.capture.cupti_api_filter import left_out, loaded_cupti


def test_the_calls_the_analyses_read_and_unknown_ones_keep_their_records() -> None:
    read = [
        "cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cuLaunchKernel", "cuLaunchKernelEx",
        "cudaGraphLaunch_v10000", "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020", "cudaMalloc_v3020",
        "cudaFree_v3020", "cudaHostAlloc_v3020", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemCreate", "cuMemMap",
        "cuMemUnmap", "cuMemRelease", "cudaDeviceSynchronize_v3020", "cudaStreamSynchronize_v3020",
        "cudaEventSynchronize_v3020", "cuModuleLoadData", "cuLibraryLoadData", "cudaStreamWaitEvent_v3020",
        "cudaEventRecord_v3020",
        # and calls it does not know, which may be costly: they stay in the step's "other CUDA calls"
        "cudaHostRegister_v4000", "cudaGetDeviceProperties_v2_v12000", "cudaStreamCreate_v3020",
    ]  # fmt: skip
    assert [name for name in read if left_out(name)] == []


def test_frequent_queries_no_analysis_reads_are_left_out() -> None:
    # the most frequent non-launch calls of the corpus's torch.profiler traces (ResNet-18, the MLPs)
    queries = [
        "cudaFuncGetAttributes_v3020", "cudaPeekAtLastError_v3020", "cudaStreamIsCapturing_v10000",
        "cudaDeviceGetAttribute_v5000", "cudaGetErrorString_v3020", "cudaOccupancyMaxActiveClusters_v11070",
        "cudaGetDevice_v3020", "cuCtxGetCurrent", "cuKernelGetAttribute", "cuPointerGetAttribute",
        "cudaStreamGetCaptureInfo_v2_v11030", "cudaPointerGetAttributes_v4000", "cuOccupancyMaxPotentialBlockSize",
    ]  # fmt: skip
    assert [name for name in queries if not left_out(name)] == []


def test_the_loaded_cupti_is_found_in_the_process_maps(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n"
        "7f20-7f30 r-xp 00000000 08:01 13 /site/nvidia/cu13/lib/libcupti.so.13\n"
        "7f40-7f50 rw-p 00000000 00:00 0\n"
    )
    assert loaded_cupti(maps) == "/site/nvidia/cu13/lib/libcupti.so.13"
    maps.write_text("7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n")
    assert loaded_cupti(maps) is None
    assert loaded_cupti(tmp_path / "absent") is None


def test_without_cupti_nothing_is_changed_and_the_reason_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cupti_api_filter, "loaded_cupti", lambda: None)
    result = cupti_api_filter.apply()
    assert result.turned_off == {} and "not loaded" in result.reason
    result.restore()  # nothing to turn back on
