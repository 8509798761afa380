"""capture.skipped_rounds: a round the sampler's gate skipped takes the frame of its thread's call-site
record that started last at or before it."""

from __future__ import annotations

from tenprof.capture.skipped_rounds import samples_of_skipped


def test_a_skipped_round_takes_the_frame_of_the_op_running_or_just_before_on_its_thread() -> None:
    # records: (thread, start, end, frame); thread 7 runs ops at frames 3 then 4, thread 8 one at frame 9
    records = [7, 100, 200, 3, 7, 300, 400, 4, 8, 50, 60, 9]
    skipped = [7, 150, 7, 250, 7, 350, 8, 500, 7, 90, 9, 150]
    assert list(samples_of_skipped(skipped, records)) == [
        7, 150, 3,  # inside the first op
        7, 250, 3,  # between the two: the one before
        7, 350, 4,
        8, 500, 9,  # long after thread 8's only op
    ]  # fmt: skip
    # before thread 7's first record, and on thread 9 without records: left out
    assert list(samples_of_skipped([7, 10], records)) == [] and list(samples_of_skipped([], records)) == []
