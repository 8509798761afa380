"""The timeline pass asks Kineto to tear CUPTI down at each stop of its session (TEARDOWN_CUPTI=1), so
the steps it times un-profiled run without CUPTI attached; only where it stops the session for them (a
GPU, steps to time, no schedule), and never over the user's own setting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tenprof.capture.schedule import Schedule
from tenprof.capture.timeline import TimelineOptions, TimelineSession


def _session(tmp_path: Path, **options: object) -> None:
    TimelineSession(tmp_path, TimelineOptions(lines=False, sample_interval_ns=0, **options))  # type: ignore[arg-type]


def test_set_where_the_session_stops_for_timed_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    _session(tmp_path)
    assert os.environ["TEARDOWN_CUPTI"] == "1"


@pytest.mark.parametrize(
    ("gpu", "options"),
    [(False, {}), (True, {"overhead_steps": 0}), (True, {"schedule": Schedule(wait=1, warmup=1, active=2)})],
    ids=["no GPU", "no timed steps", "a schedule (torch's own window, no stop)"],
)
def test_left_alone_where_it_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: bool, options: dict[str, object]
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    _session(tmp_path, **options)
    assert "TEARDOWN_CUPTI" not in os.environ


def test_a_users_own_setting_stands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("TEARDOWN_CUPTI", "0")
    _session(tmp_path)
    assert os.environ["TEARDOWN_CUPTI"] == "0"
