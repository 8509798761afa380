"""Input signatures sampled by step: which recorded steps ask torch for every op's inputs, and how the ops
of the other steps get theirs.

Asking costs most of what an op record costs beyond the record itself: torch boxes every argument of every
op for a callback that wants them (on the 2-core CI machine, a tiny MLP's loop 1.40x with every op recorded,
1.56x with their inputs). A training or decode step mostly repeats the same ops with the same inputs, so the
native recorder asks only in the steps sampled here and the others' ops take the signature of the op at the
same place of a sampled step whose ops are the same.

The contract:
- `InputSampling.after_step(digest)`, at each recorded step boundary, says whether the next step asks. It
  asks until two asked steps of a kind (the same op names, `StepDigest.names`) had the same inputs; then
  in one step of every `check_every`, and in the step after any step of a kind not yet settled or whose
  allocator sizes (`StepDigest.memory`, where memory is recorded) differ from its settled ones: shapes
  that change mostly change those, and the step after the change shows its new inputs. Once an asked
  step's inputs differ from its kind's settled ones (shapes that change from step to step: a decode loop's
  growing cache, variable sequence lengths), it asks in every step to the end. `resumed()`, when recording
  starts again after steps run un-profiled: the next step's allocator sizes decide nothing (it frees what
  the un-profiled steps allocated, which the CPU allocator does not report: every such step read as
  changed and made the next one ask). With `TENPROF_OPS=sampled` a step run without op records asks
  too where its launch digest (the CUDA calls that launched GPU work and their kernels, from tenprof's
  CUPTI client; 0 where not known) differs from the last recorded step's of the kind last asked: its ops
  could not be copied (capture/op_copy.py), and the next step shows the new work. Allocator sizes stop
  counting for a kind once they made a step ask `MEMORY_FALSE_ALARMS` times and that step's inputs were
  the kind's settled ones (CUDA's caching allocator reports block sizes, which move with its cache); the
  launches and the check still ask. `why` counts the reason each step asked (the first that held,
  `WHY_*`), so a run that asks often says why.
- `fill_signatures(ops, keys, ...)` then gives each op recorded without its inputs (`NOT_ASKED`) the
  signature of the op at its place in an asked step of the same thread with the same op names in the same
  order: of the nearest such asked steps before and after it where both agree (of the one there is, at
  either end), or of the one before it where its allocator sizes were its kind's settled ones
  (`InputSampling.unchanged`, where memory is recorded). Where an op's signature in the sequence's asked
  steps ever differed in ints' or doubles' values alone (a learning rate that a schedule changes, the
  random generator's offset that attention's dropout takes), the copy has no value for those
  (input_encoding.INPUT_SCALAR_UNKNOWN). Ops with no such step keep none (counted in the `FillReport`,
  never guessed). Steps are the `ProfilerStep#N` ranges among the ops; an op belongs to the step its
  start is in.
- The step digests leave ints' and doubles' values out likewise (callsite_observer.cpp), so a schedule's
  learning rate or dropout's generator offset does not make every step ask (fp32 GPT-2 with dropout asked
  in all of its steps on an H200, 2026-11-29, benchmarks/step_inputs_diff.py); a shape that changes still
  shows in the tensors' sizes; and they hold the ops of the thread that marks the steps and of those
  that run backward nodes alone, so another thread's (a pin-memory thread's, whose ops fall anywhere in the
  steps) do not either. Its ops take a sampled step's signatures where their own sequence in a step
  repeats an asked one, and keep none otherwise.

Torch-free: the digests come from the native recorder (callsite_observer.cpp, tenprof_lines_step_digest).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from tenprof.capture.input_encoding import merge_scalars

NOT_ASKED = -2  # the signature id of an op whose inputs were not asked for (callsite_observer.cpp, kNotAsked)
STEP_RANGE_PREFIX = "ProfilerStep#"
CHECK_EVERY = 20  # in steady state one step in this many asks, to see that the inputs still repeat
ASKED_LISTED = 1000  # the asked steps' numbers kept for the profile (a run asking in every step has many)
# why a step asked (InputSampling.why), each said as the profile's text report says it
WHY_INPUTS_VARY = "inputs vary"  # an asked step's inputs differed from its kind's settled ones: every step asks
WHY_KIND_UNSETTLED = "kind not settled"  # the step before was of a kind whose two asked steps were not yet alike
WHY_MEMORY = "allocator sizes changed"  # the step before allocated other sizes than its kind's settled ones
WHY_LAUNCHES = "launches changed"  # the step before, run without op records, launched other work
WHY_CHECK = "check"  # one step in `check_every`
# Allocator sizes that made a step ask this many times while its inputs were its kind's settled ones say
# nothing of that kind any more: CUDA's caching allocator reports a block's size, which exceeds the request
# by up to 1 MiB where it reused a cached block without splitting it, so the same shapes read as other sizes
# as its cache changes (compiled GPT-2 on an H200, 2026-11-29: 8 of 23 steps asked for that alone)
MEMORY_FALSE_ALARMS = 2


@dataclass(frozen=True)
class StepDigest:
    """One step's ops, summed over threads (order-free): `names` of every op, `inputs` of every asked op's
    name with its signature, `memory` of the allocators' reported sizes; how many ops were asked and how
    many not."""

    names: int
    inputs: int
    memory: int
    asked: int
    not_asked: int


class InputSampling:
    """Which recorded steps ask for every op's inputs (module docstring). The first step asks."""

    def __init__(self, check_every: int = CHECK_EVERY) -> None:
        self.check_every = check_every
        self.asks = True  # whether the step running now asks
        self.every_step = False  # inputs changed between steps of one kind: ask in every step from now on
        # a kind (names digest) -> its inputs and memory digests, once two asked steps' inputs were alike
        self._settled: dict[int, tuple[int, int]] = {}
        self._last_asked: dict[int, int] = {}  # a kind -> the inputs digest of its latest asked step
        self._since_asked = 0
        self.steps = 0
        self.asked_steps = 0
        self.asked: list[int] = []  # the numbers of the first ASKED_LISTED steps that asked
        self._last_kind: int | None = None  # the names digest of the latest asked step
        self.unchanged: set[int] = set()  # unasked steps (numbers) whose allocator sizes were their kind's
        self._sizes_unknown = False  # the step running now follows steps run un-profiled (`resumed`)
        self._launches: dict[int, int] = {}  # a kind -> the launch digest of its latest step with op records
        self.launches_changed = 0  # steps run without op records whose launches were not their kind's
        self.why: dict[str, int] = defaultdict(int)  # a reason -> the steps asked for it (after the first)
        self._memory_alarm: int | None = None  # the kind whose allocator sizes made the step now running ask
        self.memory_false_alarms: dict[int, int] = defaultdict(int)  # a kind -> asks its sizes made for nothing

    @property
    def launches_seen(self) -> bool:
        """Whether any step's launch digest was known (tenprof's CUPTI client with its callbacks); where none
        was, `launches_changed` measured nothing."""
        return bool(self._launches)

    def resumed(self) -> None:
        """Recording starts again after steps run un-profiled (module docstring)."""
        self._sizes_unknown = True

    def _memory(self, memory: int) -> int:
        """The step's allocator digest as evidence: 0 (says nothing) for the step after un-profiled ones."""
        unknown, self._sizes_unknown = self._sizes_unknown, False
        return 0 if unknown else memory

    def after_step(self, digest: StepDigest, number: int = -1, launches: int = 0) -> bool:
        """Learn from step `number`, which just ended (`launches`: its launch digest, 0 where not known);
        whether the next one asks (also left in `asks`)."""
        memory = self._memory(digest.memory)
        if digest.asked == 0 and digest.not_asked == 0:  # no op ran: nothing to learn, nothing to save
            return self.asks
        if launches:
            self._launches[digest.names] = launches
        self.steps += 1
        if digest.not_asked == 0:
            self.asked_steps += 1
            if len(self.asked) < ASKED_LISTED:
                self.asked.append(number)
            self._learn(digest, memory)
            self._last_kind = digest.names
            self._since_asked = 0
        else:
            self._since_asked += 1
        settled = self._settled.get(digest.names)
        if digest.not_asked and settled is not None and memory and settled[1] == memory:
            self.unchanged.add(number)
        self.asks = self._ask(digest.names, settled, memory, launched_other=False)
        return self.asks

    def after_step_without_ops(self, memory: int, number: int = -1, launches: int = 0) -> bool:
        """Learn from step `number`, run with the op callbacks off (`TENPROF_OPS=sampled`: the next stage of
        docs/design/cheaper_capture.md 3.6), which only its allocator sizes describe; whether the next one
        records its ops and asks for their inputs. As an unasked step of the kind last asked: it asks at
        the check, or after allocator sizes or launches unlike that kind's."""
        memory = self._memory(memory)
        self.steps += 1
        self._since_asked += 1
        settled = self._settled.get(self._last_kind) if self._last_kind is not None else None
        known = self._launches.get(self._last_kind) if self._last_kind is not None else None
        launched_other = launches != 0 and known is not None and launches != known
        self.launches_changed += launched_other
        self.asks = self._ask(self._last_kind, settled, memory, launched_other)
        return self.asks

    def _sizes_changed(self, kind: int | None, settled: tuple[int, int] | None, memory: int) -> bool:
        """Whether the step's allocator sizes (0: no evidence) differ from its kind's settled ones, where
        they still say something of that kind (`MEMORY_FALSE_ALARMS`)."""
        if settled is None or memory == 0 or settled[1] == memory:
            return False
        return kind is None or self.memory_false_alarms.get(kind, 0) < MEMORY_FALSE_ALARMS

    def _ask(self, kind: int | None, settled: tuple[int, int] | None, memory: int, launched_other: bool) -> bool:
        """Whether the next step asks, its reason counted in `why` (the first that holds, in this order)."""
        reason: str | None = None
        if self.every_step:
            reason = WHY_INPUTS_VARY
        elif settled is None:
            reason = WHY_KIND_UNSETTLED
        elif self._sizes_changed(kind, settled, memory):
            reason = WHY_MEMORY
        elif launched_other:
            reason = WHY_LAUNCHES
        elif self._since_asked + 1 >= self.check_every:
            reason = WHY_CHECK
        if reason is not None:
            self.why[reason] += 1
        self._memory_alarm = kind if reason == WHY_MEMORY else None
        return reason is not None

    def _learn(self, digest: StepDigest, memory: int) -> None:
        settled = self._settled.get(digest.names)
        alarm, self._memory_alarm = self._memory_alarm, None
        if alarm == digest.names and settled is not None and settled[0] == digest.inputs:
            self.memory_false_alarms[alarm] += 1  # asked for other sizes, found the same inputs
        if settled is not None and settled[0] != digest.inputs:
            self.every_step = True
        elif self._last_asked.get(digest.names) == digest.inputs:
            # sizes that say nothing (`resumed`) leave the settled ones as they were
            kept = settled[1] if settled is not None and memory == 0 else memory
            self._settled[digest.names] = (digest.inputs, kept)
        self._last_asked[digest.names] = digest.inputs

    def summary(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "asked_steps": self.asked_steps,
            "every_step": self.every_step,
            "asked": self.asked,
            "why": dict(self.why),
            "memory_false_alarms": sum(self.memory_false_alarms.values()),
        }


@dataclass
class FillReport:
    """What `fill_signatures` did: ops that had no inputs asked, those given a sampled step's signature,
    and the steps (per thread) whose ops had no asked step to take them from, or whose asked steps
    disagreed."""

    not_asked: int = 0
    filled: int = 0
    filled_without_scalars: int = 0  # of `filled`: those given a signature with ints' or doubles' values unknown
    unmatched_sequences: int = 0
    varying_sequences: int = 0

    @property
    def left(self) -> int:
        return self.not_asked - self.filled

    def as_dict(self) -> dict[str, int]:
        return asdict(self) | {"left": self.left}


def _step_windows(ops: dict[str, Any], is_range: Callable[[int], bool]) -> list[tuple[int, int, int]]:
    """(start, end, number) of each step's range, in time order."""
    names = ops["names"]
    windows = [
        (ops["start_ns"][i], ops["end_ns"][i], int(names[name_id][len(STEP_RANGE_PREFIX) :]))
        for i, name_id in enumerate(ops["name_id"])
        if is_range(ops["scope"][i]) and names[name_id].startswith(STEP_RANGE_PREFIX)
    ]
    return sorted(windows)


def _sequences(
    ops: dict[str, Any], windows: list[tuple[int, int, int]], is_range: Callable[[int], bool]
) -> dict[tuple[int, int], list[int]]:
    """(step index, thread) -> the indexes of its ops (not ranges), in start order."""
    starts = [w[0] for w in windows]
    grouped: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, start in enumerate(ops["start_ns"]):
        if is_range(ops["scope"][i]):
            continue
        k = bisect.bisect_right(starts, start) - 1
        if k < 0 or start >= windows[k][1] > 0:  # before the first step or after its step ended
            continue
        grouped[(k, ops["thread_id"][i])].append(i)
    for indexes in grouped.values():
        indexes.sort(key=lambda i: ops["start_ns"][i])
    return grouped


class _ScalarsMerged:
    """One signature id for several that differ in scalars' values alone (input_encoding.merge_scalars), a new
    key appended to `keys` where needed; None where they differ otherwise."""

    def __init__(self, keys: list[tuple[int, ...]]) -> None:
        self.keys = keys
        self._ids: dict[tuple[int, ...], int] = {}
        self._of: dict[frozenset[int], int | None] = {}

    def __call__(self, signature_ids: frozenset[int]) -> int | None:
        if len(signature_ids) == 1:
            return next(iter(signature_ids))
        if signature_ids in self._of:
            return self._of[signature_ids]
        ids = sorted(signature_ids)
        key: tuple[int, ...] | None = self.keys[ids[0]] if ids[0] >= 0 else None
        for other in ids[1:]:
            if key is None:
                break
            key = merge_scalars(key, self.keys[other])
        result = None if key is None else self._ids.setdefault(key, len(self.keys))
        if result == len(self.keys):
            self.keys.append(key)  # type: ignore[arg-type]  # not None where result is an id
        self._of[signature_ids] = result
        return result


def fill_signatures(
    ops: dict[str, Any], keys: list[tuple[int, ...]], user_scope: int, unchanged: set[int] | None = None
) -> FillReport:
    """Give each op recorded without its inputs the signature of its place in an asked step (module
    docstring); `ops` as NativeCallsiteRecorder collects them and `keys` the encoded signatures by id, both
    changed in place (a copy with scalars' values unknown is a new key); `unchanged` the step numbers whose
    ops may take the asked step's before them alone (`InputSampling.unchanged`)."""
    signature_ids: list[int] = ops.get("signature_id", [])
    report = FillReport(not_asked=sum(1 for s in signature_ids if s == NOT_ASKED))
    if report.not_asked == 0:
        return report

    def is_range(scope: int) -> bool:
        return scope == user_scope

    windows = _step_windows(ops, is_range)
    grouped = _sequences(ops, windows, is_range)
    name_ids = ops["name_id"]
    # each (thread, op names) sequence's asked steps, in step order, with their signatures
    asked: dict[tuple[int, tuple[int, ...]], list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
    targets: list[tuple[int, tuple[int, tuple[int, ...]], list[int]]] = []
    for (step, thread), indexes in sorted(grouped.items()):
        key = (thread, tuple(name_ids[i] for i in indexes))
        signatures = tuple(signature_ids[i] for i in indexes)
        if NOT_ASKED in signatures:
            targets.append((step, key, indexes))
        else:
            asked[key].append((step, signatures))
    merged = _ScalarsMerged(keys)
    first_copy = len(keys)  # keys from here on are copies with scalars' values unknown
    # per sequence: whether all its asked steps agree (then any of them is the copy), and where they do not,
    # each op's signatures across them merged (its scalars unknown where they varied; None: it varied more)
    agree = {key: len({signatures for _, signatures in found}) == 1 for key, found in asked.items()}
    # (for the sequences some unasked step repeats alone: a run that asks in every step after a change has
    # many that none does)
    wanted = {key for _, key, _ in targets}
    across = {
        key: [merged(frozenset(column)) for column in zip(*(signatures for _, signatures in found), strict=True)]
        for key, found in asked.items()
        if key in wanted and not agree[key]
    }
    for step, key, indexes in targets:
        found = asked.get(key)
        if not found:
            report.unmatched_sequences += 1
            continue
        template = _template(found, across.get(key), step, merged, windows[step][2] in (unchanged or ()))
        if template is None:
            report.varying_sequences += 1
            continue
        for i, signature in zip(indexes, template, strict=True):
            if signature_ids[i] == NOT_ASKED:
                signature_ids[i] = signature
                report.filled += 1
                report.filled_without_scalars += signature >= first_copy
    return report


def _template(
    found: list[tuple[int, tuple[int, ...]]],
    across: list[int | None] | None,
    step: int,
    merged: _ScalarsMerged,
    unchanged: bool,
) -> tuple[int, ...] | None:
    """The signatures to copy into `step` from its sequence's asked steps (in step order; `across`: each op's
    signatures across them merged, None where they all agree): those of the nearest before and after it
    where both agree (the one there is, at either end; the one before where the step is `unchanged`), with
    the scalars unknown that varied across the asked steps; None where the two differ otherwise."""
    if across is None:
        return found[0][1]
    k = bisect.bisect_left(found, step, key=lambda item: item[0])
    around = (k - 1,) if unchanged and k > 0 else (k - 1, k)
    brackets = [found[j][1] for j in around if 0 <= j < len(found)]
    template: list[int] = []
    for at, column in enumerate(zip(*brackets, strict=True)):
        # a value that varied anywhere in the run is unknown here too, even where the brackets agree on it
        # (dropout's generator offset differs in every step); where the op varied more, the brackets decide
        signature = across[at] if across[at] is not None else merged(frozenset(column))
        if signature is None:
            return None
        template.append(signature)
    return tuple(template)
