"""Read an Nsight Compute report (`.ncu-rep`) into plain columns, with Nsight Compute's Python module.

`ncu_report` ships with Nsight Compute (`<install>/extras/python`) and on PyPI as `ncu-report` (which
reads reports with no GPU). It is found on the import path, beside the given ncu, or in the usual
install folders; a clear error names the fix when it is nowhere. The columns (one entry per profiled
kernel: names, the NVTX push/pop ranges around its launch, and every metric tenprof asks for, under
ncu's own names) are what `tenprof.importers.counters_import` builds tables from, so tests and
`tenprof import-ncu` need neither a GPU nor ncu once a report has been read.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from tenprof.errors import TraceFormatError, UsageError


def load_ncu_report_module(ncu: str = "") -> ModuleType:
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    places = []
    if ncu:
        places.append(Path(ncu).resolve().parent / "extras" / "python")
    places += sorted(Path("/opt/nvidia").glob("nsight-compute/*/extras/python"), reverse=True)
    places += sorted(Path("/usr/local/cuda").glob("nsight-compute*/extras/python"), reverse=True)
    for place in places:
        if (place / "ncu_report.py").exists():
            sys.path.insert(0, str(place))
            try:
                return importlib.import_module("ncu_report")
            except ImportError:
                sys.path.remove(str(place))
    raise UsageError(
        "reading an Nsight Compute report needs its Python module ncu_report: pip install ncu-report, "
        "or put <Nsight Compute>/extras/python on PYTHONPATH"
    )


def _actions(module: ModuleType, path: Path) -> list[Any]:
    """Every profiled kernel (action) of every range of the report."""
    try:
        context = module.load_report(str(path))
    except Exception as exc:
        raise TraceFormatError(f"{path}: not a readable Nsight Compute report ({exc})") from exc
    actions: list[Any] = []
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        actions.extend(rng.action_by_idx(a) for a in range(rng.num_actions()))
    return actions


def _nvtx_ranges(action: Any) -> list[str]:
    """The push/pop NVTX ranges open around the kernel's launch, outermost first."""
    ranges: list[str] = []
    state = action.nvtx_state()
    if state is not None:
        for domain_id in state.domains():
            ranges.extend(str(n) for n in state.domain_by_id(domain_id).push_pop_ranges())
    return ranges


def _value(metric: Any) -> float | str | None:
    if metric is None:
        return None
    try:
        return float(metric.as_double())
    except Exception:  # string metrics (and any the module cannot give as a number)
        try:
            return str(metric.as_string())
        except Exception:
            return None


def read_report(path: Path, metric_names: list[str], ncu: str = "") -> dict[str, Any]:
    """Every profiled kernel of the report: replay id, names, NVTX ranges, the asked-for metrics."""
    module = load_ncu_report_module(ncu)
    kernels: dict[str, list[Any]] = {"replay_id": [], "name": [], "demangled": [], "nvtx": [], "metrics": []}
    demangled_base = getattr(getattr(module, "IAction", None), "NameBase_DEMANGLED", None)
    for action in _actions(module, path):
        available = set(action.metric_names())
        values = {n: _value(action.metric_by_name(n)) for n in metric_names if n in available}
        kernels["replay_id"].append(len(kernels["replay_id"]))
        kernels["name"].append(str(action.name()))
        kernels["demangled"].append(str(action.name(demangled_base)) if demangled_base is not None else "")
        kernels["nvtx"].append(_nvtx_ranges(action))
        kernels["metrics"].append(values)
    return {"version": 1, "source": str(path), "kernels": kernels}


STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


def _source_line(action: Any, pc: int) -> tuple[str, int] | None:
    """(file, line) of a PC when the kernel carries line info (Triton kernels, -lineinfo builds)."""
    try:
        info = action.source_info(pc)
        if info is None:
            return None
        return str(info.file_name()), int(info.line())
    except Exception:
        return None


def read_source_counters(path: Path, ncu: str = "") -> dict[str, Any]:
    """Per profiled kernel: warp-stall samples per (PC, reason) from the SourceCounters section, the other
    per-PC metrics (memory sectors, executed instructions, ...) by ncu's names, the SASS of every PC any
    per-PC metric names, and the NVTX ranges around its launch."""
    kernels: list[dict[str, Any]] = []
    for action in _actions(load_ncu_report_module(ncu), path):
        ranges = _nvtx_ranges(action)
        samples: list[list[Any]] = []  # pc, reason, samples
        per_pc: list[list[Any]] = []  # pc, metric name, value (the non-stall per-PC metrics)
        pcs: set[int] = set()
        dropped = 0.0
        for name in action.metric_names():
            metric = action.metric_by_name(name)
            if metric is None:
                continue
            if "dropped" in name:
                value = _value(metric)
                dropped += value if isinstance(value, float) else 0.0
            try:
                if not metric.has_correlation_ids():
                    continue
                ids = metric.correlation_ids()
                count = metric.num_instances()
            except Exception:
                continue
            stall = name.startswith(STALL_PREFIX) and not name.endswith("_not_issued")
            for i in range(count):
                try:
                    pc = int(ids.as_uint64(i))
                except Exception:
                    continue
                pcs.add(pc)
                try:
                    value = float(metric.as_double(i))
                except Exception:
                    continue
                if value <= 0:
                    continue
                if stall:
                    samples.append([pc, name[len(STALL_PREFIX) :], value])
                elif not name.startswith(STALL_PREFIX):
                    per_pc.append([pc, name, value])
        sass = {}
        lines: list[list[Any]] = []
        for pc in sorted(pcs):
            try:
                text = str(action.sass_by_pc(pc))
            except Exception:
                text = ""
            if text.strip():  # some per-PC-looking metrics are instanced by other ids: no SASS there
                sass[pc] = text
                where = _source_line(action, pc)
                if where is not None:
                    lines.append([pc, *where])
        kernels.append(
            {
                "replay_id": len(kernels),
                "name": str(action.name()),
                "nvtx": ranges,
                "samples": samples,
                "pc_metrics": per_pc,
                "sass": [[pc, text] for pc, text in sass.items()],
                "source_lines": lines,
                "dropped": dropped,
            }
        )
    return {"version": 1, "source": str(path), "kernels": kernels}
