"""The columns of every table in a profile: names (with units), Arrow types and meaning.

This is the single declaration the importer writes against and the loader checks against. Times are
int64 nanoseconds on the trace's clock (Unix epoch when the trace says so); `-1` means "none" for ids.
Bump SCHEMA_VERSION whenever a column changes meaning or is removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from tenprof.core.passes import Pass as Pass  # re-exported: where the rest of tenprof takes it from

SCHEMA_VERSION = 1  # still unreleased; the steps table gained `complete` before any release
# Added since without a bump, as neither changes a meaning: ops.is_autotuning (computed when an older file
# lacks it, store.derived), meta.json's typed `timeline` values (moved from older files' options) and
# frames.text (null in older files: readers fall back to the file itself).


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str


def _schema(*columns: Column) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type, metadata={"doc": c.doc}) for c in columns])


I64 = pa.int64()
I32 = pa.int32()
F64 = pa.float64()
STR = pa.string()
BOOL = pa.bool_()

OPS = _schema(
    Column("op_id", I64, "op instance: its rank by start time in the run"),
    Column("name", STR, "aten op or other record_function name, e.g. aten::addmm"),
    Column("thread_id", I64, "OS thread id that ran the op"),
    Column("start_ns", I64, "start time"),
    Column("end_ns", I64, "end time"),
    Column("duration_ns", I64, "inclusive CPU duration"),
    Column("self_duration_ns", I64, "duration minus the durations of child ops"),
    Column("parent_op_id", I64, "enclosing op on the same thread, -1 at top level"),
    Column("top_op_id", I64, "outermost enclosing op (itself when top level)"),
    Column("depth", I32, "nesting depth, 0 at top level"),
    Column("sequence_nr", I64, "autograd sequence number, -1 when absent"),
    Column("is_backward", BOOL, "ran by the autograd engine for a backward pass"),
    Column("forward_op_id", I64, "for backward ops: the forward op that created the grad_fn"),
    Column("input_shapes", STR, "JSON list of input shapes"),
    Column("input_dtypes", STR, "JSON list of input dtypes"),
    Column("input_strides", STR, "JSON list of input strides, in elements ('' where not recorded)"),
    Column(
        "input_values",
        STR,
        "JSON list of the inputs' recorded values, as Kineto's Concrete Inputs (scalars and int lists as "
        "text, '' for tensors); '' (or null in older profiles) when not recorded",
    ),
    Column("frame_id", I64, "leaf of the Python call path (frames table), -1 when unknown"),
    Column("frame_source", STR, "how frame_id was found: callsite | forward | stack | containment | none"),
    Column("scope_id", I64, "innermost enclosing user scope, -1 when none"),
    Column("step", I64, "step number (ProfilerStep#N), -1 outside steps"),
    Column("external_id", I64, "Kineto External id linking the op to its launches"),
    Column(
        "is_autotuning",
        BOOL,
        "is, or runs inside, one of Inductor's autotuning benchmarks: its launches are not the program's "
        "(computed from name and parent_op_id when reading profiles from before this column)",
    ),
)

KERNELS = _schema(
    Column("kernel_id", I64, "rank by start time"),
    Column("name", STR, "demangled kernel name"),
    Column("device", I32, "CUDA device index"),
    Column("stream", I64, "CUDA stream id"),
    Column("start_ns", I64, "GPU start time"),
    Column("end_ns", I64, "GPU end time"),
    Column("duration_ns", I64, "end - start"),
    Column("grid_x", I32, ""),
    Column("grid_y", I32, ""),
    Column("grid_z", I32, ""),
    Column("block_x", I32, ""),
    Column("block_y", I32, ""),
    Column("block_z", I32, ""),
    Column("registers_per_thread", I32, "-1 when unknown"),
    Column("shared_memory_bytes", I64, "static + dynamic shared memory, -1 when unknown"),
    Column("correlation_id", I64, "CUPTI correlation id (joins the launching API call)"),
    Column("op_id", I64, "innermost op that launched it, -1 when unattributed"),
    Column("api_call_id", I64, "launching runtime/driver call, -1 when not in the trace"),
    Column("ordinal_in_op", I32, "0-based index among the launches of op_id"),
)

COLLECTIVES = _schema(
    Column("kernel_id", I64, "the collective's kernel (kernels.kernel_id), in start order"),
    Column("collective", STR, "as torch.distributed names it: allreduce, allgather, reduce_scatter, broadcast, ..."),
    Column("group", STR, "the process group's name ('0': the default group), '' where the trace does not say"),
    Column("group_description", STR, "default_pg, or what the job named the group; ''"),
    Column("group_ranks", STR, "the group's global ranks as the trace writes them ('[0, 1]'), ''"),
    Column("group_size", I32, "ranks in the group, -1 when not said"),
    Column("in_elements", I64, "elements sent (In msg nelems), -1 when not said"),
    Column("out_elements", I64, "elements received (Out msg nelems), -1 when not said"),
    Column("element_type", STR, "Float, BFloat16, ...; ''"),
    Column(
        "seq",
        I64,
        "its place among this rank's collectives of the same group, from 0, by start: the same collective has the "
        "same seq on every rank of the group (a communicator runs its collectives in one order)",
    ),
)

TRANSFERS = _schema(
    Column("transfer_id", I64, "rank by start time"),
    Column("name", STR, "e.g. Memcpy HtoD (Pageable -> Device)"),
    Column("kind", STR, "memcpy | memset"),
    Column("direction", STR, "HtoD | DtoH | DtoD | HtoH | PtoP | '' for memset"),
    Column("src_memory", STR, "Pageable | Pinned | Device | ''"),
    Column("dst_memory", STR, "Pageable | Pinned | Device | ''"),
    Column("bytes", I64, "bytes moved or set"),
    Column("device", I32, "CUDA device index"),
    Column("stream", I64, "CUDA stream id"),
    Column("start_ns", I64, ""),
    Column("end_ns", I64, ""),
    Column("duration_ns", I64, ""),
    Column("bandwidth_gbps", F64, "bytes / duration, GB/s"),
    Column("correlation_id", I64, ""),
    Column("op_id", I64, "innermost op that issued it, -1 when unattributed"),
)

API_CALLS = _schema(
    Column("api_call_id", I64, "rank by start time"),
    Column("name", STR, "e.g. cudaLaunchKernel, cudaStreamSynchronize"),
    Column("api", STR, "runtime | driver"),
    Column("thread_id", I64, ""),
    Column("start_ns", I64, ""),
    Column("end_ns", I64, ""),
    Column("duration_ns", I64, ""),
    Column("correlation_id", I64, ""),
    Column("op_id", I64, "innermost op enclosing the call, -1 when none"),
)

FRAMES = _schema(
    Column("frame_id", I64, "call-path node: one frame reached through one particular path"),
    Column("parent_frame_id", I64, "caller's node, -1 at the root"),
    Column("file", STR, "source file"),
    Column("line", I32, "line executing in that frame (the call line for callers)"),
    Column("function", STR, "function name"),
    Column("depth", I32, "0 at the outermost frame (the script's module)"),
    Column("is_user", BOOL, "file is the user's code, not the stdlib, site-packages or torch"),
    Column(
        "text", STR, "a user frame's line as its file read when the profile was built; else null (and in older files)"
    ),
)

SCOPES = _schema(
    Column("scope_id", I64, "rank by start time"),
    Column("name", STR, "scope name"),
    Column("thread_id", I64, ""),
    Column("start_ns", I64, ""),
    Column("end_ns", I64, ""),
    Column("parent_scope_id", I64, "-1 at top level"),
    Column("frame_id", I64, "call path where the scope was entered, -1 when unknown"),
    Column("insert_depth", I32, "position in that call path where the scope begins, -1 when unknown"),
)

STEPS = _schema(
    Column("step", I64, "step number as recorded (ProfilerStep#N)"),
    Column("start_ns", I64, ""),
    Column("end_ns", I64, ""),
    Column("duration_ns", I64, ""),
    Column("complete", BOOL, "closed by tenprof.step() or the schedule, not cut by the end of profiling"),
    Column(
        "capture_on",
        BOOL,
        "ops and lines were recorded; false for the steps run with the capture off to time the un-profiled "
        "program (null in profiles from before this column: on)",
    ),
    Column("tokens", I64, "tokens the step held, as given to tenprof.step(tokens=N); -1 (or null) when not given"),
    Column(
        "own_duration_ns",
        I64,
        "the step's time between tenprof's clock reads at its boundaries, tenprof's own boundary work left "
        "out; -1 (or null) when tenprof did not mark the step",
    ),
    Column(
        "gpu_period_ns",
        I64,
        "a step run with the capture off and timed, on the GPU: the time between the CUDA events tenprof "
        "recorded on the script's stream at its boundaries, as the GPU reached them (the step's pace where the "
        "host runs ahead of a busy GPU); -1 (or null) otherwise",
    ),
)

MEMORY = _schema(
    Column("ts_ns", I64, "time of the allocation or free"),
    Column("device_type", STR, "cuda | cpu"),
    Column("device", I32, ""),
    Column("address", I64, ""),
    Column("bytes", I64, "positive for allocation, negative for free"),
    Column("total_allocated_bytes", I64, "allocator total after the event"),
    Column("total_reserved_bytes", I64, "reserved by the caching allocator after the event, -1 unknown"),
    Column("op_id", I64, "innermost op enclosing the event, -1 when none"),
)

USER_METRICS = _schema(
    Column("owner", STR, "scope: a tenprof.scope(..., flops=...) range; launch: a user Triton kernel's launch"),
    Column("owner_id", I64, "scope_id for a scope, op_id of the launch's '(user kernel)' op for a launch"),
    Column("metric", STR, "as the user named it: flops, bytes, Triton's flops8/flops16/flops32/flops64, or their own"),
    Column("value", F64, "as given by the user, per range or launch"),
)

GPU_SAMPLES = _schema(
    Column("ts_ns", I64, "when NVML was read (trace clock)"),
    Column("device", I32, "CUDA device index"),
    Column("sm_clock_mhz", F64, "SM clock then"),
    Column("max_sm_clock_mhz", F64, "the SM clock's maximum on this card"),
    Column("memory_clock_mhz", F64, "memory clock then"),
    Column("power_w", F64, "board power draw"),
    Column("power_limit_w", F64, "the power limit enforced then"),
    Column("temperature_c", F64, "GPU temperature"),
    Column("clock_reasons", I64, "NVML's clocks-event (throttle) reason bits active then; 0 when none"),
)

HOST_SAMPLES = _schema(
    Column("ts_ns", I64, "when the host sampler read the thread's Python stack (trace clock)"),
    Column("thread_id", I64, "the thread's native id, as ops name threads"),
    Column("frame_id", I64, "the thread's Python call path then (frames table), -1 when it ran no Python"),
    Column("op_id", I64, "the innermost torch op running on that thread then, -1 when none"),
    Column("weight_ns", I64, "the time the sample stands for: since the thread's previous sample"),
    Column("process_id", I64, "0: the script's own process; else the DataLoader worker process sampled"),
)

I64_LIST = pa.list_(pa.int64())

TENSOR_OPS = _schema(
    Column("op_seq", I64, "op sequence number of the tensors pass: ops in the order they started, from 0"),
    Column("name", STR, "aten op, e.g. aten::view (seen at the Python dispatch key: composites arrive split)"),
    Column("thread_id", I64, "OS thread id (backward ops run in autograd's device threads)"),
    Column("frame_id", I64, "leaf of the Python call path (tensor_frames), -1 when none (backward ops)"),
    Column("is_backward", BOOL, "run by the autograd engine"),
    Column("autograd_seq_nr", I64, "backward: the sequence nr of the node run; forward: the last one made; -1"),
    Column("forward_op_seq", I64, "backward ops: the forward op whose autograd node this op runs, -1 when none"),
    Column("step", I64, "number of tenprof.step() calls before the op"),
    Column("start_unix_ns", I64, "wall-clock time the op's kernel call began (places allocator events)"),
)

TENSORS = _schema(
    Column("tensor_id", I64, "one layout on one storage: (storage, offset, shape, stride, dtype)"),
    Column("storage_id", I64, "the allocation it lives in (storages table)"),
    Column("device", STR, "e.g. cuda:0, cpu"),
    Column("dtype", STR, "e.g. float32, bfloat16"),
    Column("itemsize", I32, "bytes per element"),
    Column("shape", I64_LIST, ""),
    Column("stride", I64_LIST, "in elements"),
    Column("numel", I64, "number of elements"),
    Column("storage_offset", I64, "in elements"),
    Column("data_ptr", I64, "address of element 0"),
    Column("byte_start", I64, "lowest address an element occupies"),
    Column("byte_end", I64, "one past the highest byte an element occupies (a strided view has gaps inside)"),
    Column("nbytes", I64, "numel * itemsize"),
    Column("is_view", BOOL, "made by an op as a new layout on an existing storage"),
    Column("parent_tensor_id", I64, "views: the input tensor it is a view of, -1 for bases"),
    Column("view_op", STR, "views: the op that made it, e.g. aten::transpose"),
    Column("source_tensor_id", I64, "transformations (clone, _to_copy, copy_): the tensor whose values it got"),
    Column("source_op", STR, "the transformation op, e.g. aten::clone"),
    Column("creator_op_seq", I64, "op that made it, -1 when made where no dispatch hook sees (or before)"),
    Column("creator_frame_id", I64, "call path of the creator (a backward op's forward line), -1 when unknown"),
    Column("first_use_op_seq", I64, "first op that made, read or wrote it"),
    Column("last_use_op_seq", I64, "last op that made, read or wrote it"),
    Column("last_read_op_seq", I64, "last op that read it, -1 when never read"),
    Column("reads", I64, "ops that read it (in-place ops included)"),
    Column("writes", I64, "ops that wrote it in place or as out="),
    Column("free_op_seq", I64, "its storage went back to the allocator before this op; -1: alive at the end"),
)

TENSOR_USES = _schema(
    Column("op_seq", I64, ""),
    Column("tensor_id", I64, ""),
    Column("role", STR, "read | write (out=) | readwrite (in-place) | output (made by the op)"),
)

STORAGES = _schema(
    Column("storage_id", I64, "one allocation, from the op that made it to its return to the allocator"),
    Column("device", STR, ""),
    Column("address", I64, "base address"),
    Column("nbytes", I64, "bytes requested (the CUDA caching allocator rounds up to 512)"),
    Column("alloc_op_seq", I64, "op that made it (or first used it, when made unseen)"),
    Column("free_op_seq", I64, "went back to the allocator before this op; -1: alive at the end"),
    Column("base_tensor_id", I64, "the first tensor seen on it (the root of its tree in the forest)"),
)

ALLOCATOR_EVENTS = _schema(
    Column("event_id", I64, "order in the CUDA caching allocator's own log"),
    Column("device", I32, ""),
    Column("action", STR, "alloc | free_requested | free_completed"),
    Column("address", I64, ""),
    Column("bytes", I64, "block size (rounded by the allocator)"),
    Column("unix_ns", I64, "when, on the wall clock (the allocator's microseconds)"),
    Column("op_seq", I64, "the op running then (last to start before it), -1 before the first"),
    Column("allocated_bytes", I64, "bytes allocated on the device after the event (counted from the pass start)"),
    Column("storage_id", I64, "alloc events: the storage this block became, -1 for memory no op output owns"),
)

KERNEL_METRICS = _schema(
    Column("replay_id", I64, "kernel as Nsight Compute profiled it (one replay per kernel signature)"),
    Column("name", STR, "kernel function name (ncu's base name)"),
    Column("demangled", STR, "full demangled name"),
    Column("signature_id", I64, "the op signature it ran in (counter_signatures), -1 when unknown"),
    Column("op", STR, "aten op it ran in"),
    Column("grid_size", I64, "blocks in the grid"),
    Column("block_size", I64, "threads per block"),
    Column("registers_per_thread", I64, ""),
    Column("duration_ns", F64, "gpu__time_duration.sum (under replay, clocks locked by ncu)"),
    Column("dram_read_bytes", F64, ""),
    Column("dram_write_bytes", F64, ""),
    Column("dram_throughput_pct", F64, "of the measured peak"),
    Column("memory_throughput_pct", F64, "busiest memory unit (L1, L2, DRAM), % of peak"),
    Column("sm_throughput_pct", F64, "busiest SM pipeline / issue, % of peak"),
    Column("l1_hit_rate_pct", F64, ""),
    Column("l2_hit_rate_pct", F64, ""),
    Column("achieved_occupancy_pct", F64, "active warps, % of the SM's maximum"),
    Column("theoretical_occupancy_pct", F64, ""),
    Column("tensor_pipe_pct", F64, "tensor-core pipe active, % of peak while the SM is active"),
    Column("instructions", F64, "warp instructions executed"),
    Column("flops", F64, "FP32/FP16 FLOPs on the FMA pipes (FMA = 2); tensor-core FLOPs are not counted"),
    Column("arithmetic_intensity", F64, "flops per DRAM byte, NaN without DRAM traffic"),
    Column("waves_per_sm", F64, ""),
    # No `occupancy_limiter` or `verdict`: judgements are computed by the reports from these metrics
    # (tenprof.analyses.kernels.replays; the limiter from ncu_metrics). Files imported before still hold both
    # columns; reading against this declaration leaves them out, so they are never used.
)

NCU_METRICS = _schema(
    Column("replay_id", I64, ""),
    Column("metric", STR, "Nsight Compute's metric name"),
    Column("value", F64, ""),
)

COUNTER_SIGNATURES = _schema(
    Column("signature_id", I64, "one (op, input shapes, dtypes) seen in the counters pass"),
    Column("op", STR, ""),
    Column("shapes", STR, "JSON list of the op's tensor input shapes"),
    Column("dtypes", STR, "JSON list"),
    Column("first_op_seq", I64, "the op instance that was replayed (its position among all ops)"),
    Column("count", I64, "op instances with this signature: all get the replayed metrics"),
)

# kernel_counters' `method` -> its `confidence`: how sure a match is. The same signature was replayed; the
# same op and launch but other shapes; only the same kernel and launch configuration (another op); nothing.
MATCH_CONFIDENCE = {"signature": "high", "op+launch": "medium", "launch": "low", "none": "none", "autotuning": "none"}

KERNEL_COUNTERS = _schema(
    Column("kernel_id", I64, "timeline kernel"),
    Column("replay_id", I64, "the replay whose metrics it gets, -1 when none matches"),
    Column(
        "method",
        STR,
        "signature | op+launch | launch | none | autotuning (a benchmark launch, not replayed): how it was matched",
    ),
    Column("confidence", STR, "high (signature) | medium (op+launch) | low (launch) | none"),
)

STALL_KERNELS = _schema(
    Column("replay_id", I64, "kernel as the stalls pass sampled it (one per signature or scope)"),
    Column("name", STR, "kernel function name"),
    Column("op", STR, "aten op it ran in, '' when none"),
    Column("scope", STR, "tenprof.scope it ran in, '' when none"),
    Column("signature_id", I64, "the op signature it ran in (its first instance was sampled), -1 when none"),
    Column("instances", I64, "op instances with that signature in the run (1 for scopes and unknown)"),
    Column("first_op_seq", I64, "the op instance that was sampled (dispatch order, as the tensors pass counts)"),
    Column("samples", F64, "warp-state samples of all reasons"),
    Column("dropped", F64, "samples ncu reports as dropped (buffer full), 0 when none"),
    Column("compiled_kernel", BOOL, "sampled as a torch.compile generated kernel (its first launch after autotuning)"),
)

PC_SAMPLES = _schema(
    Column("replay_id", I64, ""),
    Column("pc", I64, "instruction address"),
    Column("reason", STR, "stall reason, ncu's name without smsp__pcsamp_warps_issue_stalled_"),
    Column("samples", F64, ""),
)

SASS = _schema(
    Column("replay_id", I64, ""),
    Column("pc", I64, ""),
    Column("text", STR, "the instruction as ncu prints it"),
    Column("opcode", STR, ""),
    Column("space", STR, "memory space / unit of a variable-latency result: global, shared, ... or ''"),
    Column("file", STR, "source file of the instruction when the kernel has line info (Triton), else ''"),
    Column("line", I32, "its line, -1 when unknown"),
    Column("l2_sectors", F64, "L2 sectors this instruction requested for global memory (ncu), -1 when unknown"),
)

BLAME = _schema(
    Column("replay_id", I64, ""),
    Column("stalled_pc", I64, "where the warp was sampled"),
    Column("blamed_pc", I64, "where the blame landed (a producer, or the instruction itself)"),
    Column("reason", STR, ""),
    Column("samples", F64, "samples (split equally among candidate producers)"),
    Column("shifted", BOOL, "moved to a producer"),
    Column("unresolved", BOOL, "a dependency stall whose producer was not found"),
)

# Copied at import so that a report quotes a hot instruction's line without reading this machine's files
# (absent from profiles recorded before it: their lines outside the kept generated code read as '').
SOURCE_LINES = _schema(
    Column("file", STR, "a source file the SASS's line info names (sass.file), as it names it"),
    Column("line", I32, "a line of that file that some instruction of the pass's kernels maps to (1-based)"),
    Column(
        "text",
        STR,
        "the line as read where the pass was imported, without its newline; '' when that machine could not "
        "read it (file absent there, or not Python source)",
    ),
)

COMPILED_KERNELS = _schema(
    Column("kernel", STR, "generated kernel name (Triton), as in the kernels table"),
    Column("aten_ops", STR, "aten ops the kernel computes, comma-separated (aten::add,aten::gelu)"),
    Column("lines", STR, "user source lines of those ops, ';'-separated file:line"),
    Column("generated_file", STR, "the kernel's generated source file (Inductor's `kernel path`)"),
    Column("wrapper_file", STR, "the generated wrapper module that launches it"),
    Column("source", STR, "where the attribution came from: inductor-comments | kernel-name"),
    Column("confidence", STR, "high (Inductor's own records) | low (parsed from the kernel name)"),
    Column("kind", STR, "pointwise | reduction | persistent_reduction | template | ... (from the name)"),
    Column("num_load", I32, "loads Inductor counted in the kernel (inductor_meta), -1 when unknown"),
    Column("num_store", I32, "stores Inductor counted, -1 when unknown"),
    Column("num_reduction", I32, "reductions Inductor counted, -1 when unknown"),
    Column("launches", I64, "launches Inductor's launcher reported to the profiler, less autotuning's benchmarks"),
    Column("num_warps", I32, "warps per block of the config autotuning chose (null when not seen)"),
    Column("num_stages", I32, "software-pipelining stages of that config (null when not seen)"),
    Column("block_sizes", STR, "that config's block sizes, e.g. XBLOCK=1024,R0_BLOCK=8"),
    Column("flops", F64, "FLOPs per launch the kernel declares (Inductor's estimate; null when not declared)"),
    Column("bytes", F64, "bytes per launch the kernel declares (Inductor's estimate; null when not declared)"),
)

# Written with compiled_kernels when the run kept the generated wrappers (absent from older profiles and
# from imported traces, which keep none).
COMPILED_EXTERN_CALLS = _schema(
    Column("wrapper_file", STR, "the generated wrapper module that makes the calls"),
    Column("aten_op", STR, "aten op it runs through a library kernel (`extern_kernels.mm(` -> aten::mm)"),
    Column("calls", I64, "calls of it written in that wrapper"),
)

ACCESSES = _schema(
    Column("launch_id", I64, "the launch (access_launches)"),
    Column("op_seq", I64, "op instance of the launch (dispatch order, as the tensors pass counts); -1 outside ops"),
    Column("kernel", STR, "kernel function name (mangled), to check the join"),
    Column("ordinal", I32, "launch index within the op"),
    Column("pc_offset", I64, "instruction offset from the kernel's first instruction"),
    Column("address", I64, "device address the warp's first active lane touched"),
    Column("bytes", I64, "bytes the sampled warp accesses moved (access size x active lanes), times count"),
    Column("is_write", BOOL, ""),
    Column("count", I64, "warp accesses these records stand for (sampling weight)"),
    Column("lane_stride", I64, "bytes between neighbouring active lanes' addresses, the same for all; null: uneven"),
    Column("sectors", I64, "32-byte sectors the warp accesses touched, times count (null: not recorded)"),
    Column("min_sectors", I64, "sectors the same bytes would touch read contiguously, times count"),
    Column("lanes", I64, "active lanes of the warp accesses, times count"),
    Column("ascending", I64, "warp accesses whose lanes' addresses never go down from lane to lane"),
)

ACCESS_LAUNCHES = _schema(
    Column("launch_id", I64, ""),
    Column("op_seq", I64, "op instance (-1 outside ops)"),
    Column("last_op_seq", I64, "the last op that started before the launch (for the address lookup)"),
    Column("ordinal", I32, "launch index within the op"),
    Column("kernel", STR, "kernel function name (mangled)"),
    Column("records", I64, "records read back"),
    Column("claimed", I64, "records the kernel tried to write (more than records when the buffer was full)"),
    Column("dropped_weight", I64, "warp accesses whose record did not fit the buffer"),
    Column("accesses", I64, "warp accesses the records stand for"),
    Column("grid", STR, ""),
    Column("block", STR, ""),
)

TABLES: dict[str, pa.Schema] = {
    "ops": OPS,
    "kernels": KERNELS,
    "transfers": TRANSFERS,
    "collectives": COLLECTIVES,
    "api_calls": API_CALLS,
    "frames": FRAMES,
    "scopes": SCOPES,
    "steps": STEPS,
    "memory": MEMORY,
    "host_samples": HOST_SAMPLES,
    "user_metrics": USER_METRICS,
    "gpu_samples": GPU_SAMPLES,
    "tensor_ops": TENSOR_OPS,
    "tensors": TENSORS,
    "tensor_uses": TENSOR_USES,
    "storages": STORAGES,
    "tensor_frames": FRAMES,
    "allocator_events": ALLOCATOR_EVENTS,
    "kernel_metrics": KERNEL_METRICS,
    "ncu_metrics": NCU_METRICS,
    "counter_signatures": COUNTER_SIGNATURES,
    "kernel_counters": KERNEL_COUNTERS,
    "stall_kernels": STALL_KERNELS,
    "pc_samples": PC_SAMPLES,
    "sass": SASS,
    "blame": BLAME,
    "source_lines": SOURCE_LINES,
    "accesses": ACCESSES,
    "access_launches": ACCESS_LAUNCHES,
    "compiled_kernels": COMPILED_KERNELS,
    "compiled_extern_calls": COMPILED_EXTERN_CALLS,
}


# Which pass writes which table; the loader uses it to say what is missing and why.
PASS_TABLES: dict[str, tuple[str, ...]] = {
    Pass.TIMELINE: (
        "ops",
        "kernels",
        "collectives",
        "transfers",
        "api_calls",
        "frames",
        "scopes",
        "steps",
        "memory",
        "compiled_kernels",
        "compiled_extern_calls",
        "host_samples",
        "user_metrics",
        "gpu_samples",
    ),
    Pass.TENSORS: ("tensor_ops", "tensors", "tensor_uses", "storages", "tensor_frames", "allocator_events"),
    Pass.COUNTERS: ("kernel_metrics", "ncu_metrics", "counter_signatures", "kernel_counters"),
    Pass.STALLS: ("stall_kernels", "pc_samples", "sass", "blame", "source_lines"),
    Pass.ACCESSES: ("accesses", "access_launches"),
}
