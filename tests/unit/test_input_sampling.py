"""Input signatures sampled by step (capture/input_sampling.py, capture/input_encoding.py): which steps ask,
and what the ops of the others are given, on hand-built op records (torch-free)."""

from __future__ import annotations

import struct
from typing import Any

from tenprof.analyses.timeline.summary import shapes_note
from tenprof.capture import input_encoding as ie
from tenprof.capture.input_sampling import NOT_ASKED, InputSampling, StepDigest, fill_signatures

USER = 7  # the scope number of a named range in these records


def _double(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little", signed=True)


def _asked(names: int, inputs: int, memory: int = 0) -> StepDigest:
    return StepDigest(names, inputs, memory, asked=10, not_asked=0)


def _unasked(names: int, memory: int = 0) -> StepDigest:
    return StepDigest(names, 0, memory, asked=0, not_asked=10)


def test_asking_stops_once_two_asked_steps_of_a_kind_agree_and_checks_every_so_often() -> None:
    sampling = InputSampling(check_every=4)
    assert sampling.asks
    asks = [
        sampling.after_step(_asked(1, 100), 0),  # the cold step, its own kind
        sampling.after_step(_asked(2, 200), 1),  # the steady kind, first seen
        sampling.after_step(_asked(2, 200), 2),  # seen again alike: settled
    ]
    assert asks == [True, True, False]
    asks = [sampling.after_step(_unasked(2), n) for n in (3, 4, 5)]
    assert asks == [False, False, True]  # the fourth step since the last asked one checks
    assert sampling.after_step(_asked(2, 200), 6) is False
    assert sampling.summary() == {
        "steps": 7,
        "asked_steps": 4,
        "every_step": False,
        "asked": [0, 1, 2, 6],
        "why": {"kind not settled": 2, "check": 1},  # the first step asks for no reason counted
        "memory_false_alarms": 0,
    }


def test_a_step_of_an_unsettled_kind_makes_the_next_ask_and_changed_inputs_make_every_step_ask() -> None:
    sampling = InputSampling(check_every=50)
    for digest in (_asked(2, 200), _asked(2, 200)):
        sampling.after_step(digest)
    assert sampling.after_step(_unasked(3)) is True  # an evaluation step, say: not seen asked
    assert sampling.after_step(_asked(3, 300)) is True
    assert sampling.after_step(_asked(3, 300)) is False
    assert sampling.after_step(_asked(2, 201)) is True  # a settled kind's inputs changed
    assert sampling.every_step
    assert all(sampling.after_step(_asked(2, 200 + k)) for k in range(5))
    assert sampling.after_step(StepDigest(0, 0, 0, 0, 0)) is True  # an empty step counts for nothing
    assert sampling.steps == 11


def test_allocator_sizes_unlike_the_settled_steps_make_the_next_step_ask() -> None:
    sampling = InputSampling(check_every=50)
    for digest in (_asked(2, 200, memory=7), _asked(2, 200, memory=7)):
        sampling.after_step(digest)
    assert sampling.after_step(_unasked(2, memory=7)) is False
    assert sampling.after_step(_unasked(2, memory=8)) is True  # shapes grew, say
    assert sampling.after_step(_asked(2, 200, memory=8)) is False  # same inputs after all: settled again
    assert sampling.after_step(_unasked(2, memory=8)) is False  # the settled sizes are the latest asked step's
    assert not sampling.every_step
    assert sampling.why == {"kind not settled": 1, "allocator sizes changed": 1}


def test_allocator_sizes_that_twice_made_a_step_ask_for_the_same_inputs_stop_counting_for_that_kind() -> None:
    # CUDA's caching allocator reports block sizes, which move with its cache while the shapes stay
    sampling = InputSampling(check_every=50)
    for n in (0, 1):
        sampling.after_step(_asked(2, 200, memory=7), n)
    asks = []
    for n, memory in enumerate((8, 8, 9, 9, 10, 10, 11), start=2):
        asks.append(sampling.after_step(_asked(2, 200, memory) if asks and asks[-1] else _unasked(2, memory), n))
    # sizes 8: ask, same inputs (false alarm 1); 9: ask, same inputs (2); then sizes say nothing of kind 2
    assert asks == [True, False, True, False, False, False, False]
    assert sampling.memory_false_alarms == {2: 2} and sampling.why["allocator sizes changed"] == 2
    assert not sampling.every_step
    # another kind's sizes still count, and a real change of inputs still makes every step ask
    for n in (9, 10):
        sampling.after_step(_asked(3, 300, memory=5), n)
    assert sampling.after_step(_unasked(3, memory=6), 11) is True
    assert sampling.after_step(_asked(3, 301, memory=6), 12) is True and sampling.every_step
    assert sampling.memory_false_alarms == {2: 2}


def test_two_signatures_that_differ_in_scalars_alone_merge_with_those_values_unknown() -> None:
    tensor = (ie.INPUT_TENSOR, 6, 2, 8, 4, 4, 1)
    tensors = (ie.INPUT_TENSOR_LIST, 2, 6, 1, 3, 1, -1, 0)
    key = (*tensor, ie.INPUT_DOUBLE, _double(0.5), ie.INPUT_INT, 3, *tensors, ie.INPUT_INT_LIST, 2, 5, 6, ie.INPUT_NONE)
    parts = list(ie.split_inputs(key))
    assert parts == [
        tensor,
        (ie.INPUT_DOUBLE, _double(0.5)),
        (ie.INPUT_INT, 3),
        tensors,
        (ie.INPUT_INT_LIST, 2, 5, 6),
        (0,),
    ]
    other_lr = (*tensor, ie.INPUT_DOUBLE, _double(0.25), ie.INPUT_INT, 3, *tensors, ie.INPUT_INT_LIST, 2, 5, 6, 0)
    merged = ie.merge_scalars(key, other_lr)
    assert merged == (*tensor, ie.INPUT_SCALAR_UNKNOWN, ie.INPUT_INT, 3, *tensors, ie.INPUT_INT_LIST, 2, 5, 6, 0)
    dims, types, _, values = ie.decode_signature(merged, {6: "float"}.__getitem__)
    assert dims == [[8, 4], [], [], [[3], []], [], []]
    assert types == ["float", "Scalar", "Scalar", "TensorList", "ScalarList", ""]
    assert values == ["", "", "3", "", "[5, 6]", ""]
    assert ie.decode_signature(key, {6: "float"}.__getitem__)[3][1] == "0.5"
    # an int that changes (a generator's offset) merges as the double does; an unknown value with a known one
    other_int = (*tensor, ie.INPUT_DOUBLE, _double(0.5), ie.INPUT_INT, 4, *tensors, ie.INPUT_INT_LIST, 2, 5, 6, 0)
    both = (*tensor, ie.INPUT_SCALAR_UNKNOWN, ie.INPUT_SCALAR_UNKNOWN, *tensors, ie.INPUT_INT_LIST, 2, 5, 6, 0)
    assert ie.merge_scalars(merged, other_int) == both
    # a shape, an int list or a kind that differs does not merge
    for changed in (
        (ie.INPUT_TENSOR, 6, 2, 9, 4, 4, 1, *key[len(tensor) :]),
        (*key[:-4], 2, 5, 7, 0),
        (*key[:-1], ie.INPUT_INT, 0),
        (*key[:-1], ie.INPUT_BOOL, 1),
    ):
        assert ie.merge_scalars(key, changed) is None, changed


class _Ops:
    """Op records as the native recorder collects them: steps as ProfilerStep#N ranges, each with the same
    ops on two threads; `sigs(step, thread)` their signature ids in order."""

    def __init__(self) -> None:
        self.columns: dict[str, Any] = {
            k: [] for k in ("thread_id", "start_ns", "end_ns", "name_id", "scope", "signature_id")
        }
        self.columns["names"] = [
            "ProfilerStep#0",
            "ProfilerStep#1",
            "ProfilerStep#2",
            "ProfilerStep#3",
            "aten::mm",
            "aten::add_",
        ]
        self.clock = 0

    def add(self, thread: int, name_id: int, scope: int, signature: int, length: int = 10) -> None:
        for column, value in zip(
            ("thread_id", "start_ns", "end_ns", "name_id", "scope", "signature_id"),
            (thread, self.clock, self.clock + length, name_id, scope, signature),
            strict=True,
        ):
            self.columns[column].append(value)
        self.clock += 1

    def step(self, number: int, main: list[int], autograd: list[int]) -> None:
        self.add(1, number, USER, -1, length=100)
        for k, signature in enumerate(main):
            self.add(1, 4 + k % 2, 0, signature)
        for signature in autograd:
            self.add(2, 4, 0, signature)
        self.clock += 100

    def sigs(self, step: int) -> list[int]:
        c = self.columns
        rows = list(zip(c["start_ns"], c["name_id"], c["scope"], c["signature_id"], strict=True))
        start = next(t for t, name, scope, _ in rows if scope == USER and name == step)
        return [sig for t, _, scope, sig in rows if scope != USER and start <= t < start + 100]


def test_ops_of_unasked_steps_take_the_signatures_of_the_same_place_in_an_asked_step() -> None:
    ops = _Ops()
    ops.step(0, [0, 1], [2])
    ops.step(1, [0, 1], [2])
    ops.step(2, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])
    ops.step(3, [NOT_ASKED], [NOT_ASKED])  # one op fewer on the main thread: no asked step like it
    keys: list[tuple[int, ...]] = [(ie.INPUT_INT, 1), (ie.INPUT_INT, 2), (ie.INPUT_INT, 3)]
    report = fill_signatures(ops.columns, keys, USER)
    assert ops.sigs(2) == [0, 1, 2]
    assert ops.sigs(3) == [NOT_ASKED, 2]  # the autograd thread's sequence still matches
    assert report.as_dict() == {
        "not_asked": 5,
        "filled": 4,
        "filled_without_scalars": 0,
        "left": 1,
        "unmatched_sequences": 1,
        "varying_sequences": 0,
    }
    assert len(keys) == 3


def test_asked_steps_that_differ_in_doubles_alone_give_copies_without_them_and_otherwise_none() -> None:
    ops = _Ops()
    lr = [(ie.INPUT_DOUBLE, _double(v)) for v in (0.1, 0.05)]
    shape = [(ie.INPUT_TENSOR, 6, 1, n, 1) for n in (8, 9)]
    keys: list[tuple[int, ...]] = [shape[0], lr[0], lr[1], shape[1]]
    ops.step(0, [0, 1], [0])  # the learning rate changes between asked steps; shapes do not
    ops.step(1, [0, 2], [0])
    ops.step(2, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])
    report = fill_signatures(ops.columns, keys, USER)
    assert keys[4] == (ie.INPUT_SCALAR_UNKNOWN,)
    assert ops.sigs(2) == [0, 4, 0]
    assert (report.filled, report.filled_without_scalars) == (3, 1)

    ops = _Ops()  # on the autograd thread the shapes change between asked steps 0 and 2
    ops.step(0, [0, 1], [0])
    ops.step(1, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])
    ops.step(2, [0, 1], [3])
    ops.step(3, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])
    report = fill_signatures(ops.columns, keys[:4], USER)
    assert ops.sigs(1) == [0, 1, NOT_ASKED]  # its shapes there could be either
    assert ops.sigs(3) == [0, 1, 3]  # after the change: the latest asked step's
    assert (report.filled, report.left, report.varying_sequences) == (5, 1, 1)


def test_a_scalar_that_changes_in_every_asked_step_is_unknown_where_copied_and_the_others_are_kept() -> None:
    # an int that differs in every step (dropout's generator offset) beside an int that does not (a dim)
    offset = [(ie.INPUT_INT, 3, ie.INPUT_INT, v) for v in (100, 200)]
    keys: list[tuple[int, ...]] = [*offset, (ie.INPUT_INT, 1)]
    ops = _Ops()
    ops.step(0, [0, 2], [2])
    ops.step(1, [1, 2], [2])
    ops.step(2, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])
    ops.step(3, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])
    report = fill_signatures(ops.columns, keys, USER, unchanged={3})
    assert keys[3] == (ie.INPUT_INT, 3, ie.INPUT_SCALAR_UNKNOWN)
    # both take step 1's (the asked step before them), and not its offset: it varied
    assert ops.sigs(2) == ops.sigs(3) == [3, 2, 2]
    assert (report.filled, report.filled_without_scalars, report.varying_sequences) == (6, 2, 0)


def test_nothing_to_fill_leaves_the_records_alone() -> None:
    ops = _Ops()
    ops.step(0, [0, 1], [0])
    before = {k: list(v) for k, v in ops.columns.items()}
    keys: list[tuple[int, ...]] = [(ie.INPUT_INT, 1), (ie.INPUT_INT, 2)]
    assert fill_signatures(ops.columns, keys, USER).not_asked == 0
    assert ops.columns == before


def test_a_step_whose_allocator_sizes_were_unchanged_takes_the_asked_step_before_it() -> None:
    keys: list[tuple[int, ...]] = [(ie.INPUT_TENSOR, 6, 1, n, 1) for n in (8, 9)]
    for unchanged, expected in ((set(), NOT_ASKED), ({1}, 0)):
        ops = _Ops()
        ops.step(0, [0, 0], [0])
        ops.step(1, [NOT_ASKED, NOT_ASKED], [NOT_ASKED])  # before the batch grew
        ops.step(2, [1, 1], [1])
        fill_signatures(ops.columns, keys, USER, unchanged)
        assert ops.sigs(1) == [expected] * 3


def test_the_sampling_notes_the_unasked_steps_whose_allocator_sizes_were_the_settled_ones() -> None:
    sampling = InputSampling(check_every=50)
    for number, digest in enumerate((_asked(2, 200, 7), _asked(2, 200, 7), _unasked(2, 7), _unasked(2, 8))):
        sampling.after_step(digest, number)
    assert sampling.unchanged == {2}
    no_memory = InputSampling(check_every=50)  # memory not recorded: its digest is 0 and tells nothing
    for number, digest in enumerate((_asked(2, 200), _asked(2, 200), _unasked(2))):
        no_memory.after_step(digest, number)
    assert no_memory.unchanged == set()


def test_the_summary_line_names_the_steps_that_asked() -> None:
    sampling = {"steps": 9, "asked_steps": 3, "asked": [0, 1, 2], "not_asked": 3786, "filled": 3786, "left": 0}
    assert shapes_note(sampling) == (
        "input shapes asked in 3 of 9 recorded steps (step 0, 1, 2), copied to 3786 ops of the others from the "
        "same op of a step with the same ops"
    )
    many = dict(sampling, steps=19, asked_steps=12, asked=list(range(12)), filled=3000, left=786)
    assert shapes_note(many).startswith(
        "input shapes asked in 12 of 19 recorded steps (step 0, 1, 2, 3, 4, 5, 6, 7, ...)"
    )
    assert shapes_note(many).endswith("; 786 ops without shapes (no step like theirs asked)")
    assert shapes_note({k: v for k, v in sampling.items() if k != "asked"}).startswith("input shapes asked in 3 of 9 ")
    why = dict(sampling, why={"check": 1, "kind not settled": 2})
    assert shapes_note(why).startswith(
        "input shapes asked in 3 of 9 recorded steps (step 0, 1, 2; asked for: kind not settled 2, check 1), "
    )
    assert shapes_note(dict(sampling, not_asked=0)) == ""


def test_steps_run_without_op_records_ask_again_at_the_check_or_when_the_allocator_sizes_change() -> None:
    sampling = InputSampling(check_every=4)
    assert sampling.after_step_without_ops(memory=7, number=0) is True  # nothing settled yet: record the next
    for n, digest in enumerate((_asked(2, 200, memory=7), _asked(2, 200, memory=7)), start=1):
        sampling.after_step(digest, n)
    assert [sampling.after_step_without_ops(7, n) for n in (3, 4, 5)] == [False, False, True]  # the check
    sampling.after_step(_asked(2, 200, memory=7), 6)
    assert sampling.after_step_without_ops(8, 7) is True  # sizes unlike the settled ones: record the next
    assert sampling.after_step_without_ops(0, 8) is False  # no allocator reports: nothing says it changed
    assert sampling.summary()["asked"] == [1, 2, 6] and sampling.steps == 9


def test_the_summary_line_says_how_steps_recorded_without_ops_got_theirs() -> None:
    copy = {"steps_without_ops": 27, "copied_steps": 26, "unmatched": [30], "ops": 338, "calls": 0}
    assert shapes_note(None, copy) == (
        "ops recorded in sampled steps alone: 26 of 27 steps without them given those of a step that launched "
        "the same work (338 ops), 1 left without ops"
    )
    sampling = {"steps": 31, "asked_steps": 4, "asked": [0, 1, 2, 20], "not_asked": 10, "filled": 10, "left": 0}
    assert shapes_note(sampling, copy).startswith("ops recorded in sampled steps alone: 26 of 27 ")
    assert "; input shapes asked in 4 of 31 recorded steps (step 0, 1, 2, 20)" in shapes_note(sampling, copy)


def test_the_step_after_steps_run_un_profiled_is_not_judged_by_its_allocator_sizes() -> None:
    # It frees what the un-profiled steps allocated, which the CPU allocator does not report: its sizes
    # differ from the settled ones without any change of shapes (a CPU GPT-2 asked once after each stretch).
    sampling = InputSampling(check_every=50)
    for n, digest in enumerate((_asked(2, 200, memory=7), _asked(2, 200, memory=7))):
        sampling.after_step(digest, n)
    sampling.resumed()
    assert sampling.after_step(_unasked(2, memory=5), 5) is False  # sizes of no evidence
    assert 5 not in sampling.unchanged  # nor taken as unchanged
    assert sampling.after_step(_unasked(2, memory=8), 6) is True  # the step after it is judged again
    sampling.resumed()
    assert sampling.after_step(_asked(2, 200, memory=5), 7) is False  # asked: settled sizes kept (7)
    assert sampling.after_step(_unasked(2, memory=7), 8) is False and 8 in sampling.unchanged
    sampling.resumed()
    assert sampling.after_step_without_ops(5, 9) is False  # the same for a step run without op records


def test_a_step_without_op_records_that_launched_other_work_makes_the_next_one_record() -> None:
    sampling = InputSampling(check_every=50)
    assert not sampling.launches_seen  # no digest known yet: launches_changed measures nothing
    for n in (0, 1):
        sampling.after_step(_asked(2, 200, memory=7), n, launches=41)
    assert sampling.launches_seen
    assert sampling.after_step_without_ops(7, 2, launches=41) is False  # the kind's launches
    assert sampling.after_step_without_ops(7, 3, launches=0) is False  # not known: no evidence
    assert sampling.after_step_without_ops(7, 4, launches=43) is True  # other work: record the next
    assert sampling.why == {"kind not settled": 1, "launches changed": 1}
    sampling.after_step(_asked(2, 200, memory=7), 5, launches=43)  # the latest recorded step's launches
    assert sampling.after_step_without_ops(7, 6, launches=43) is False
    assert sampling.launches_changed == 1
