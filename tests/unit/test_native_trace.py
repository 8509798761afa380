"""The Kineto-format trace written from native op records (tenprof.capture.native_trace), on records made
up here: categories, units, arguments and the autograd engine's ranges' sequence numbers; and the input
signatures the native recorder encodes, decoded as the profiler writes them (tenprof.capture.native_lines)."""

from __future__ import annotations

import struct

from tenprof.capture.native_trace import trace_events

USER_SCOPE = 7
NAMES = ["ProfilerStep#1", "aten::mm", "autograd::engine::evaluate_function: MmBackward0", "MmBackward0", "aten::t"]


def _records(rows: list[tuple[int, int, int, int, int, int]]) -> dict[str, list[int] | list[str]]:
    """rows: (thread, start, end, name id, sequence nr, scope); forward thread 0, depth 0."""
    columns: dict[str, list[int] | list[str]] = {
        "thread_id": [r[0] for r in rows],
        "start_ns": [r[1] for r in rows],
        "end_ns": [r[2] for r in rows],
        "name_id": [r[3] for r in rows],
        "sequence_nr": [r[4] for r in rows],
        "forward_thread_id": [0] * len(rows),
        "depth": [0] * len(rows),
        "scope": [r[5] for r in rows],
        "names": NAMES,
    }
    return columns


def test_ops_and_ranges_become_complete_events_in_start_order_in_microseconds() -> None:
    events = trace_events(
        _records([(1, 5_000, 9_000, 1, 3, 0), (1, 1_000, 20_000, 0, -1, USER_SCOPE), (2, 2_000, 2_500, 4, -1, 0)]),
        pid=42,
        user_scope=USER_SCOPE,
    )
    assert [(e["name"], e["cat"], e["tid"], e["ts"], e["dur"]) for e in events] == [
        ("ProfilerStep#1", "user_annotation", 1, 1.0, 19.0),
        ("aten::t", "cpu_op", 2, 2.0, 0.5),
        ("aten::mm", "cpu_op", 1, 5.0, 4.0),
    ]
    assert [e["args"]["External id"] for e in events] == [1, 2, 3]
    assert "Sequence number" not in events[0]["args"] and events[2]["args"]["Sequence number"] == 3
    assert {e["pid"] for e in events} == {42} and {e["ph"] for e in events} == {"X"}


def test_the_engines_range_takes_the_sequence_number_of_the_node_it_runs() -> None:
    # evaluate_function: MmBackward0 on thread 1 runs MmBackward0 (seq 7) first; on thread 2 the range's
    # first op inside is another one, and it keeps none
    events = trace_events(
        _records(
            [
                (1, 100, 900, 2, -1, 0),
                (1, 110, 800, 3, 7, 0),
                (1, 120, 300, 1, 7, 0),
                (2, 100, 900, 2, -1, 0),
                (2, 110, 800, 4, -1, 0),
            ]
        ),
        pid=1,
        user_scope=USER_SCOPE,
    )
    sequence = {(e["tid"], e["name"]): e["args"]["Sequence number"] for e in events}
    assert sequence[(1, "autograd::engine::evaluate_function: MmBackward0")] == 7
    assert sequence[(2, "autograd::engine::evaluate_function: MmBackward0")] == -1


def test_input_signatures_read_as_the_profilers_record_shapes_writes_them() -> None:
    from tenprof.capture import native_lines as nl

    def double(value: float) -> int:
        return int.from_bytes(struct.pack("<d", value), "little", signed=True)

    tensor = (nl.INPUT_TENSOR, 6, 2, 64, 32, 32, 1)  # float [64, 32], strides [32, 1]
    tensors = (nl.INPUT_TENSOR_LIST, 2, 15, 1, 8, 1, -1, 0)  # [bf16 [8], undefined]
    scalars = (nl.INPUT_INT, 6, nl.INPUT_BOOL, 0, nl.INPUT_DOUBLE, double(0.0), nl.INPUT_DOUBLE, double(-0.001))
    lists = (nl.INPUT_INT_LIST, 2, 256, 256, nl.INPUT_INT_LIST, 0, nl.INPUT_NONE)
    key = (*tensor, *tensors, *scalars, *lists)
    names = {6: "float", 15: "c10::BFloat16"}
    dims, types, strides, values = nl.decode_signature(key, names.__getitem__)
    assert dims == [[64, 32], [[8], []], [], [], [], [], [], [], []]
    assert types == ["float", "TensorList", "Scalar", "Scalar", "Scalar", "Scalar", "ScalarList", "ScalarList", ""]
    assert strides == [[32, 1], [[1], []], [], [], [], [], [], [], []]
    assert values == ["", "", "6", "False", "0.", "-0.001", "[256, 256]", "[]", ""]
    assert nl.decode_signature((), names.__getitem__) == [[], [], [], []]
