"""Traces in Kineto's format before torch 1.10 (the categories "Operator", "Kernel", "Runtime", ...; torch's
own annotations such as the DataLoader's and ProfilerStep# among the ops) read as today's do.

Made from real H100 recordings of the corpus (a single-process DataLoader with a slow transform, and its
twin with workers), their categories renamed as the old format wrote them: the first finding and the
step's parts are those of the trace as recorded. (The same on TensorBoard's own ResNet-50 sample traces,
recorded with torch 1.8, is in docs/FINDINGS.md: they were read as launch-bound before.)
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tenprof.analyses.findings import find_all
from tenprof.analyses.timeline.step_time import PARTS, step_time
from tenprof.importers.timeline_import import import_trace
from tenprof.store.profile import Profile, load_profile
from tests.conftest import DATA

# today's category -> the one Kineto wrote before torch 1.10 (user annotations were ops then)
OLD = {
    "cpu_op": "Operator",
    "user_annotation": "Operator",
    "kernel": "Kernel",
    "cuda_runtime": "Runtime",
    "gpu_memcpy": "Memcpy",
    "gpu_memset": "Memset",
    "python_function": "Python",
}


def _imported(trace: Path, into: Path, old: bool) -> Profile:
    data = json.loads(gzip.decompress(trace.read_bytes()))
    if old:
        for event in data["traceEvents"]:
            event["cat"] = OLD.get(event.get("cat"), event.get("cat"))
    into.mkdir()
    source = into / "trace.json"
    source.write_bytes(json.dumps(data).encode())
    import_trace(source, into / "p", force=False)
    return load_profile(into / "p")


@pytest.mark.parametrize("case", ["slow_transform", "slow_transform_fixed"])
def test_an_old_format_trace_reads_as_the_same_trace_today(tmp_path: Path, case: str) -> None:
    trace = DATA / "corpus_traces" / f"{case}.json.gz"
    today, old = (_imported(trace, tmp_path / str(o), o) for o in (False, True))
    assert [f.id for f in find_all(old)][:2] == [f.id for f in find_all(today)][:2]
    mean_today, mean_old = step_time(today), step_time(old)
    for part in PARTS:
        assert mean_old.mean(part) == pytest.approx(mean_today.mean(part), rel=1e-6, abs=1.0), part
    if case == "slow_transform":  # the single-process loader, named as such
        assert find_all(old)[0].id == "data-loading" and mean_old.mean("data_loading") > 0


@pytest.mark.parametrize(("renamed", "advice"), [(False, "Allow TF32"), (True, "torch.float16")])
def test_a_trace_that_does_not_name_its_gpu_is_advised_by_its_kernels_names(
    tmp_path: Path, renamed: bool, advice: str
) -> None:
    """Kineto's traces before torch 1.10 name no GPU; TensorBoard's ResNet-50 samples ran on Volta
    ('volta_sgemm_128x64_nn') and were told to allow TF32, which Volta has not. Here the H100 recording of
    fp32 GEMMs without its device list: its sm80_ kernels keep the TF32 advice; named as Volta's, fp16."""
    data = json.loads(gzip.decompress((DATA / "corpus_traces" / "fp32_gemm.json.gz").read_bytes()))
    del data["deviceProperties"]
    for event in data["traceEvents"]:
        if renamed and str(event.get("name", "")).startswith("sm80_xmma_gemm_f32f32"):
            event["name"] = "volta_sgemm_128x64_nn"
    source = tmp_path / "trace.json"
    source.write_bytes(json.dumps(data).encode())
    import_trace(source, tmp_path / "p", force=False)
    gemm = next(f for f in find_all(load_profile(tmp_path / "p")) if f.id == "gemm-without-tensor-cores")
    assert advice in gemm.fix
    assert ("Volta or Turing" in gemm.fix) == renamed


def test_an_unnamed_gpu_is_described_by_its_newest_library_kernels(tmp_path: Path) -> None:
    from tenprof.analyses.timeline.summary import summarize

    data = json.loads(gzip.decompress((DATA / "corpus_traces" / "fp32_gemm.json.gz").read_bytes()))
    del data["deviceProperties"]
    source = tmp_path / "trace.json"
    source.write_bytes(json.dumps(data).encode())
    import_trace(source, tmp_path / "p", force=False)
    assert summarize(load_profile(tmp_path / "p")).devices == [
        "GPU 0 (the trace does not name it; its newest library kernels are built for Ampere, sm_80)"
    ]
