"""A Kineto trace event as the importer reads it: only the keys tenprof uses, decoded by msgspec.

`decode_events(chunk)` turns a JSON array of trace events (bytes) into a list of `Event`s. msgspec
decodes straight into these typed structs and skips every key not declared here without building it,
which is what makes an import fast: no dict per event, no dict per `args`.

Traces are not always typed as Kineto types them (a tid written as a string, an id as a float, a
number as a string): a chunk that does not decode strictly is decoded again with msgspec's lax
conversions, and an event that still does not fit is converted key by key (`_lenient_event`), so a
value of an unexpected type becomes the default the importer uses for a missing one (-1 for an id, 0
for a size), as the dict reader did; except a time or a duration that is not a number (`"ts": "abc"`),
which becomes NaN, so that the importer leaves the event out and says so rather than placing it at 0.
Only bytes that are not JSON raise `msgspec.DecodeError` (JSON nested too deeply for the decoder
included: it raises RecursionError, which is not the caller's to handle).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

# `Input Dims` and the like are kept as their JSON text (`Raw`): the importer stores them as text
EMPTY_RAW = msgspec.Raw(b"")


class EventArgs(msgspec.Struct, gc=False, frozen=True):
    """The `args` keys tenprof reads: linking ids, shapes, launch configuration, copy sizes, and the
    allocator's samples; with the metadata Inductor attaches to each Triton launch."""

    external_id: int = msgspec.field(name="External id", default=-1)
    sequence: int = msgspec.field(name="Sequence number", default=-1)
    fwd_thread: int = msgspec.field(name="Fwd thread id", default=0)
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=EMPTY_RAW)
    input_types: msgspec.Raw = msgspec.field(name="Input type", default=EMPTY_RAW)
    input_strides: msgspec.Raw = msgspec.field(name="Input Strides", default=EMPTY_RAW)
    # the inputs' values where torch records them (scalars, int lists), '' for tensors
    concrete_inputs: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=EMPTY_RAW)
    correlation: int = -1
    device: int | None = None
    in_device: int | None = msgspec.field(name="inDevice", default=None)
    stream: int | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    registers: int = msgspec.field(name="registers per thread", default=-1)
    shared_memory: int = msgspec.field(name="shared memory", default=-1)
    bytes: int = 0
    # allocator samples ("[memory]" instant events)
    device_type: int = msgspec.field(name="Device Type", default=0)
    device_id: int = msgspec.field(name="Device Id", default=-1)
    addr: int = msgspec.field(name="Addr", default=0)
    alloc_bytes: int = msgspec.field(name="Bytes", default=0)
    total_allocated: int = msgspec.field(name="Total Allocated", default=-1)
    total_reserved: int = msgspec.field(name="Total Reserved", default=-1)
    # a collective's kernel (NCCL's, torch.distributed's metadata; timeline_columns.COLLECTIVE_ARGS), read
    # only when the collective's name is set
    collective_name: msgspec.Raw = msgspec.field(name="Collective name", default=EMPTY_RAW)
    group_name: msgspec.Raw = msgspec.field(name="Process Group Name", default=EMPTY_RAW)
    group_description: msgspec.Raw = msgspec.field(name="Process Group Description", default=EMPTY_RAW)
    group_ranks: msgspec.Raw = msgspec.field(name="Process Group Ranks", default=EMPTY_RAW)
    group_size: msgspec.Raw = msgspec.field(name="Group size", default=EMPTY_RAW)
    in_elements: msgspec.Raw = msgspec.field(name="In msg nelems", default=EMPTY_RAW)
    out_elements: msgspec.Raw = msgspec.field(name="Out msg nelems", default=EMPTY_RAW)
    element_type: msgspec.Raw = msgspec.field(name="dtype", default=EMPTY_RAW)
    # Inductor's Triton launches (timeline_columns._TRITON_LAUNCH_ARGS), read only when kernel_backend is set
    kernel_backend: msgspec.Raw = EMPTY_RAW
    kernel_file: msgspec.Raw = EMPTY_RAW
    num_warps: msgspec.Raw = EMPTY_RAW
    num_stages: msgspec.Raw = EMPTY_RAW
    kernel_kwargs: msgspec.Raw = EMPTY_RAW
    kernel_flop: msgspec.Raw = EMPTY_RAW
    kernel_num_gb: msgspec.Raw = EMPTY_RAW


NO_ARGS = EventArgs()


class Event(msgspec.Struct, gc=False, frozen=True):
    """One element of `traceEvents`; keys a trace leaves out take these defaults."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    args: EventArgs = NO_ARGS


_STRICT = msgspec.json.Decoder(list[Event])
_LAX = msgspec.json.Decoder(list[Event], strict=False)
_ANY = msgspec.json.Decoder()
_ARG_FIELDS = {f.encode_name: f for f in msgspec.structs.fields(EventArgs)}
_EVENT_FIELDS = {f.encode_name: f for f in msgspec.structs.fields(Event)}


# keys whose value, when it is not a number, marks the event as unreadable rather than taking a default
_TIMES = frozenset({"ts", "dur"})


def decode_events(chunk: bytes | bytearray | memoryview) -> list[Event]:
    """The events of one JSON array of trace events; elements that are not objects are left out."""
    try:
        return _decode_events(chunk)
    except RecursionError:
        raise msgspec.DecodeError("arrays or objects nested too deeply") from None


def _decode_events(chunk: bytes | bytearray | memoryview) -> list[Event]:
    try:
        return _STRICT.decode(chunk)
    except msgspec.ValidationError:
        pass
    try:
        return _LAX.decode(chunk)
    except msgspec.ValidationError:
        pass
    items = _ANY.decode(chunk)
    if not isinstance(items, list):
        raise msgspec.DecodeError("the events are not a JSON array")
    return [_lenient_event(item) for item in items if isinstance(item, dict)]


def _lenient_event(item: dict[str, Any]) -> Event:
    """An event from a decoded dict, each key of an unexpected type replaced by its default."""
    values: dict[str, Any] = {}
    for key, spec in _EVENT_FIELDS.items():
        if key == "args" or key not in item:
            continue
        value = item[key]
        if spec.type is str and isinstance(value, (int, float)):  # a name written as a number
            value = str(value)
        values[spec.name] = _lax_value(value, spec.type, math.nan if key in _TIMES else spec.default)
    args = item.get("args")
    if isinstance(args, dict):
        arg_values: dict[str, Any] = {}
        for key, spec in _ARG_FIELDS.items():
            if key in args:
                if spec.type is msgspec.Raw:
                    arg_values[spec.name] = msgspec.Raw(msgspec.json.encode(args[key]))
                else:
                    arg_values[spec.name] = _lax_value(args[key], spec.type, spec.default)
        values["args"] = EventArgs(**arg_values)
    return Event(**values)


def _lax_value(value: Any, kind: Any, default: Any) -> Any:
    try:
        return msgspec.convert(value, kind, strict=False)
    except msgspec.ValidationError:
        return default
