"""tenprof's own CUPTI client (tenprof.capture.cupti_client) where no GPU is: which record layouts the build
picks from the headers, the one line it gives where there are no headers, and that a run asking for it on a
machine without CUDA records as the native capture does (no client is loaded without GPU activity). What it
records on a GPU: tests/gpu (the native-cupti capture) and the merge of its records in test_native_trace.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tenprof.capture import cupti_client
from tenprof.capture.cupti_client import RECORD, CuptiClientUnavailable, gpu_trace, newest_records


def test_the_build_takes_the_newest_record_versions_the_headers_declare(tmp_path: Path) -> None:
    (tmp_path / "cupti_activity.h").write_text(
        "typedef struct { int kind; } CUpti_ActivityKernel9;\n"
        "typedef struct PACKED_ALIGNMENT {\n  int kind;\n} CUpti_ActivityKernel10;\n"
        "typedef struct { int kind; } CUpti_ActivityMemcpy6;\n} CUpti_ActivityMemcpy5;\n"
        "} CUpti_ActivityMemset;\n"
        "/* see CUpti_ActivityKernel11 in a later CUDA */\n"
    )
    assert newest_records(tmp_path) == {
        "TP_KERNEL_RECORD": "CUpti_ActivityKernel10",
        "TP_MEMCPY_RECORD": "CUpti_ActivityMemcpy6",
        "TP_MEMSET_RECORD": "CUpti_ActivityMemset",
    }
    (tmp_path / "cupti_activity.h").write_text("} CUpti_ActivityKernel10;\n")
    with pytest.raises(CuptiClientUnavailable, match="no CUpti_ActivityMemcpy record"):
        newest_records(tmp_path)


def test_without_cupti_headers_it_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cupti_client, "_cuda_homes", lambda: [tmp_path / "cuda"])
    monkeypatch.setattr(cupti_client, "_wheel_dirs", lambda: [tmp_path / "nvidia" / "cu13"])
    with pytest.raises(CuptiClientUnavailable) as caught:
        cupti_client.build_library(tmp_path / "cache")
    message = str(caught.value)
    assert "CUPTI headers" in message and "CUDA_HOME" in message and "\n" not in message


def test_records_become_kineto_events_in_microseconds_with_their_correlation() -> None:
    records = np.zeros(3, dtype=RECORD)
    records[0] = (cupti_client.KIND_CONCURRENT_KERNEL, 0, 2_000_500, 2_004_000, 0, 7, 11, 0,
                  (4, 2, 1), (128, 1, 1), 32, 1024, 0, 0, 1)  # fmt: skip
    records[1] = (cupti_client.KIND_MEMCPY, 1, 1_000_000, 1_001_000, 0, 7, 10, 0, (0, 0, 0), (0, 0, 0),
                  0, 0, 4096, 0, 1)  # fmt: skip
    records[2] = (cupti_client.KIND_RUNTIME, 2, 1_999_000, 2_000_250, -1, -1, 11, 0x640, (0, 0, 0), (0, 0, 0),
                  0, 0, 0, 211, 0)  # fmt: skip
    names = ["void k<float>(float*)", "Memcpy HtoD (Pageable -> Device)", "cudaLaunchKernel"]
    trace = gpu_trace(records, names, pid=42, devices=[{"id": 0, "name": "GPU"}])
    assert trace["baseTimeNanoseconds"] == 0 and trace["deviceProperties"] == [{"id": 0, "name": "GPU"}]
    kernel, copy, call = trace["traceEvents"]
    assert (kernel["cat"], kernel["name"], kernel["pid"], kernel["tid"]) == ("kernel", names[0], 0, 7)
    assert (kernel["ts"], kernel["dur"]) == (2000.5, 3.5)
    assert kernel["args"] == {"device": 0, "context": 1, "stream": 7, "correlation": 11, "registers per thread": 32,
                              "shared memory": 1024, "grid": [4, 2, 1], "block": [128, 1, 1]}  # fmt: skip
    assert (copy["cat"], copy["name"], copy["args"]["bytes"], copy["args"]["correlation"]) == (
        "gpu_memcpy", names[1], 4096, 10)  # fmt: skip
    assert (call["cat"], call["name"], call["pid"], call["tid"]) == ("cuda_runtime", "cudaLaunchKernel", 42, 0x640)
    assert call["args"] == {"cbid": 211, "correlation": 11} and call["ts"] == 1999.0


def test_a_driver_call_inside_a_runtime_call_on_its_thread_is_left_out() -> None:
    rows = [  # kind, start, end, thread
        (cupti_client.KIND_RUNTIME, 100, 200, 1),  # cudaLaunchKernel ...
        (cupti_client.KIND_DRIVER, 120, 180, 1),  # ... and the driver call it makes: left out
        (cupti_client.KIND_DRIVER, 120, 180, 2),  # the same times on another thread: the program's own
        (cupti_client.KIND_DRIVER, 250, 260, 1),  # after the runtime call: the program's own (a Triton launch)
        (cupti_client.KIND_CONCURRENT_KERNEL, 150, 400, 0),
    ]
    records = np.zeros(len(rows), dtype=RECORD)
    for k, (kind, start, end, thread) in enumerate(rows):
        records[k]["kind"], records[k]["start"], records[k]["end"], records[k]["thread"] = kind, start, end, thread
        records[k]["correlation"] = k
    kept = cupti_client.outer_calls(records)
    assert kept["correlation"].tolist() == [0, 2, 3, 4]
    assert len(cupti_client.outer_calls(records[[1, 2, 3, 4]])) == 4  # no runtime call: all kept


def test_the_records_of_each_attach_keep_their_correlation_ids_apart() -> None:
    # CUPTI attached again after a detach (TENPROF_CUPTI_DETACH=1) may number its calls from 1 again: a
    # kernel of the second window would then join a launch of the first
    def part(correlations: list[int]) -> np.ndarray:
        records = np.zeros(len(correlations), dtype=RECORD)
        records["correlation"] = correlations
        return records

    parts = [part([1, 1, 2]), part([3, 3]), part([1, 1]), part([]), part([1, 2, 2])]
    joined = cupti_client.apart_by_attach(parts, [0, 0, 1, 1, 2])
    assert joined["correlation"].tolist() == [1, 1, 2, 3, 3, 5, 5, 7, 8, 8]
    assert len(cupti_client.apart_by_attach([], [])) == 0
    # one attach: the ids as CUPTI gave them
    assert cupti_client.apart_by_attach(parts[:2], [0, 0])["correlation"].tolist() == [1, 1, 2, 3, 3]
