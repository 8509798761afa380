"""The counters/stalls child's marker for torch.compile's generated kernels: the first launch of each
kernel after its autotuning runs inside tenprof's NVTX ranges, later ones and other kernels do not, and
Inductor's launcher is restored afterwards. Checked on CPU against Inductor's own CachingAutotuner class
(its `_pre_launch`/`_post_launch` hooks) and against a launcher that only has `run`."""

from __future__ import annotations

from typing import Any

import pytest

from tenprof.capture import counters
from tenprof.capture.counters import CompiledLaunchMarker


class _Tuner:
    def __init__(self, name: str, configs: int = 1) -> None:
        self.inductor_meta = {"kernel_name": name}
        self.launchers = [object()] * configs


@pytest.fixture
def ranges(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    pushed: list[str] = []
    monkeypatch.setattr(counters, "_push", lambda inner: pushed.append(inner))
    monkeypatch.setattr(counters, "_pop", lambda: pushed.append("pop"))
    return pushed


def _install_on(marker: CompiledLaunchMarker, owner: type, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor.runtime import triton_heuristics

    monkeypatch.setattr(triton_heuristics, "CachingAutotuner", owner)
    marker.install()


def test_first_launch_after_autotuning_is_marked_once(ranges: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class Launcher:
        def _pre_launch(self, launcher: Any, *args: Any, stream: int, **kwargs: Any) -> None:
            calls.append("pre")

        def _post_launch(self) -> None:
            calls.append("post")

    marker = CompiledLaunchMarker(keep_all=False)
    _install_on(marker, Launcher, monkeypatch)
    a, b = _Tuner("triton_poi_fused_add_0"), _Tuner("triton_red_fused_sum_1")
    for tuner in (a, a, b, a):
        Launcher._pre_launch(tuner, None, stream=0)  # type: ignore[arg-type]
        Launcher._post_launch(tuner)  # type: ignore[arg-type]
    assert ranges == ["tk:triton_poi_fused_add_0", "pop", "tk:triton_red_fused_sum_1", "pop"]
    assert calls == ["pre", "post"] * 4 and marker.kept == {"triton_poi_fused_add_0", "triton_red_fused_sum_1"}
    marker.uninstall()
    assert Launcher._pre_launch.__name__ == "_pre_launch" and Launcher._post_launch.__name__ == "_post_launch"


def test_keep_all_marks_every_launch(ranges: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    class Launcher:
        def _pre_launch(self, launcher: Any, *args: Any, stream: int) -> None:
            return None

        def _post_launch(self) -> None:
            return None

    marker = CompiledLaunchMarker(keep_all=True)
    _install_on(marker, Launcher, monkeypatch)
    tuner = _Tuner("triton_poi_fused_add_0")
    for _ in range(3):
        Launcher._pre_launch(tuner, None, stream=0)  # type: ignore[arg-type]
        Launcher._post_launch(tuner)  # type: ignore[arg-type]
    assert ranges.count("tk:triton_poi_fused_add_0") == 3 and ranges.count("pop") == 3
    # Inductor's run() would switch to a cached launcher that skips the hooks: not with keep_all
    assert getattr(tuner, "_cache_eligible", True) is False
    marker.uninstall()


def test_older_launchers_are_marked_through_run_once_autotuning_is_done(
    ranges: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Launcher:
        def run(self, *args: Any, stream: int, **kwargs: Any) -> str:
            return "launched"

    marker = CompiledLaunchMarker(keep_all=False)
    _install_on(marker, Launcher, monkeypatch)
    tuning, tuned = _Tuner("triton_red_fused_sum_1", configs=3), _Tuner("triton_red_fused_sum_1")
    assert Launcher.run(tuning, stream=0) == "launched"  # type: ignore[arg-type]
    assert ranges == []  # several configs left: this launch autotunes, the next one is replayed
    assert Launcher.run(tuned, stream=0) == "launched"  # type: ignore[arg-type]
    assert Launcher.run(tuned, stream=0) == "launched"  # type: ignore[arg-type]
    assert ranges == ["tk:triton_red_fused_sum_1", "pop"]
    marker.uninstall()
    assert Launcher.run.__name__ == "run"


def test_inductors_launcher_has_the_hooks_the_marker_wraps() -> None:
    """The hooks' signatures as the marker calls them through (torch on this machine)."""
    import inspect

    from torch._inductor.runtime import triton_heuristics

    autotuner = triton_heuristics.CachingAutotuner
    pre = inspect.signature(autotuner._pre_launch).parameters
    assert list(pre)[:2] == ["self", "launcher"] and "stream" in pre
    assert list(inspect.signature(autotuner._post_launch).parameters) == ["self"]
    assert "_cache_eligible" in inspect.getsource(autotuner)
