"""The GPUs' clocks, power and temperature while the timeline pass records, read through NVML.

A daemon thread reads, for each GPU the script can see, the SM clock (and its maximum, once), the memory
clock, the board's power draw and enforced power limit, the temperature and the clocks-event (throttle)
reason bits: once when sampling starts, every `interval_s` (50 ms) and once when it stops. Times are on
the perf clock (time.perf_counter_ns) like every other record of the call-site log; the importer moves
them onto the trace's clock (tenprof.importers.callsites). The thread sleeps between reads and NVML's
calls let go of the interpreter lock. Paused (`paused`, in the steps the timeline pass times
un-profiled), it blocks and reads nothing.

NVML comes from the optional `nvidia-ml-py` package (module `pynvml`). When it is missing, or NVML
cannot start (no driver), nothing is recorded and `warning` says why, in one line; sampling never fails
the pass. Which NVML device is which CUDA device: by PCI bus id through torch's device properties once
CUDA is initialised (it is by the end of any run that used the GPU), else in the order
CUDA_VISIBLE_DEVICES names them (all devices, in NVML's order, when it is unset).
"""

from __future__ import annotations

import math
import os
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenprof.capture.pause_gate import PauseGate
from tenprof.core.rawfiles import GPU_FLOAT_COLUMNS

INTERVAL_S = 0.05
NOT_INSTALLED = "GPU clocks not sampled: nvidia-ml-py is not installed (pip install 'tenprof[gpu]')"

# the sidecar's value columns, in order, as its reader declares them (the gpu_samples table's)
FLOAT_COLUMNS = GPU_FLOAT_COLUMNS


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML knows it: its handle, its NVML index, where it sits on the PCI bus and its UUID."""

    handle: Any
    index: int
    pci: tuple[int, int, int]  # (domain, bus, device)
    uuid: str
    max_sm_clock_mhz: float


class GpuClockSampler:
    """Samples every visible GPU every `interval_s` on a daemon thread, between `start` and `stop`."""

    def __init__(self, interval_s: float = INTERVAL_S, nvml: Any = None) -> None:
        self.interval_s = interval_s
        self.warning = ""
        self._nvml = nvml  # the pynvml module (tests give a stand-in)
        self._devices: list[NvmlDevice] = []
        self._reasons: Callable[[Any], int] | None = None
        self._stop = threading.Event()
        self._gate = PauseGate(paused=False)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.ts_ns = array("q")
        self.nvml_index = array("q")
        self.clock_reasons = array("q")
        self.values: dict[str, array[float]] = {name: array("d") for name in FLOAT_COLUMNS}
        self.cuda_index: dict[int, int] = {}  # NVML index -> CUDA index, set by `stop`

    @property
    def paused(self) -> bool:
        return self._gate.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        """Paused (in the steps timed un-profiled), the thread reads nothing until resumed, then reads at once."""
        if value:
            self._gate.close()
        else:
            self._gate.open()

    def start(self) -> None:
        """Start the thread. It finds the GPUs and reads them: NVML's start-up takes milliseconds, which on
        the script's thread the host sampler would take for the script's own time."""
        self._thread = threading.Thread(target=self._run, name="tenprof-gpu-clocks", daemon=True)
        self._thread.start()

    def stop(self, cuda_index: Callable[[list[NvmlDevice]], dict[int, int]] | None = None) -> None:
        """Stop the thread (it reads once more), and find each sampled GPU's CUDA index (`cuda_index`: NVML
        devices -> {NVML index: CUDA index}; default: by PCI bus id through torch, see the docstring)."""
        if self._thread is not None:
            self._stop.set()
            self._gate.open()  # wake a paused thread so that it sees the stop
            self._thread.join()
            self._thread = None
        if self._devices:
            try:
                self.cuda_index = (cuda_index or cuda_indices)(self._devices)
            except Exception:
                self.cuda_index = {}
            if not self.cuda_index:
                self.cuda_index = {d.index: k for k, d in enumerate(self._devices)}

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None

    def _open(self) -> bool:
        """Find the GPUs; on any failure, a warning and False."""
        try:
            if self._nvml is None:
                try:
                    import pynvml
                except ImportError:
                    self.warning = NOT_INSTALLED
                    return False
                self._nvml = pynvml
            nvml = self._nvml
            try:
                nvml.nvmlInit()
            except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
                self.warning = f"GPU clocks not sampled: NVML could not start ({_why(exc)})"
                self._nvml = None
                return False
            self._devices = _visible(_devices(nvml), os.environ.get("CUDA_VISIBLE_DEVICES"))
            if not self._devices:
                self.warning = "GPU clocks not sampled: NVML sees none of the GPUs CUDA_VISIBLE_DEVICES names"
                self.close()
                return False
            self._reasons = _reasons_reader(nvml)
        except Exception as exc:  # never the pass's failure
            self.warning = f"GPU clocks not sampled: {_why(exc)}"
            self._devices = []
            self.close()
            return False
        return True

    def _run(self) -> None:
        if not self._open():
            return
        try:
            self.sample()  # at the start, then every interval, then at the stop
            while not self._stop.wait(self.interval_s):
                if self._gate.paused:
                    self._gate.wait_while_paused()
                    if self._stop.is_set():
                        break
                try:
                    self.sample()
                except Exception:  # a read failing now and then (the driver resetting): the next one may do
                    pass
            self.sample()
        except Exception as exc:
            self.warning = self.warning or f"GPU clocks partly sampled: {_why(exc)}"
        finally:
            self.close()

    def sample(self) -> None:
        """Read every sampled GPU once."""
        nvml = self._nvml
        if nvml is None:
            return
        for device in self._devices:
            h = device.handle
            ts = time.perf_counter_ns()
            row = (
                _number(nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM),
                device.max_sm_clock_mhz,
                _number(nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_MEM),
                _number(nvml.nvmlDeviceGetPowerUsage, h) / 1000.0,  # mW
                _number(nvml.nvmlDeviceGetEnforcedPowerLimit, h) / 1000.0,  # mW
                _number(nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU),
            )
            reasons = -1
            if self._reasons is not None:
                try:
                    reasons = int(self._reasons(h))
                except Exception:
                    reasons = -1
            with self._lock:  # a row is whole when `columns` reads it
                self.ts_ns.append(ts)
                self.nvml_index.append(device.index)
                self.clock_reasons.append(reasons)
                for name, value in zip(FLOAT_COLUMNS, row, strict=True):
                    self.values[name].append(value)

    def columns(self) -> dict[str, Any]:
        """The samples as the call-site log's `gpu_samples` block: one list per column, `device` the CUDA
        index (samples of a GPU CUDA does not see are left out), NaN where NVML could not read a value."""
        keep = [i for i, n in enumerate(self.nvml_index) if n in self.cuda_index]
        out: dict[str, Any] = {
            "ts_ns": [self.ts_ns[i] for i in keep],
            "device": [self.cuda_index[self.nvml_index[i]] for i in keep],
        }
        for name in FLOAT_COLUMNS:
            values = self.values[name]
            out[name] = [values[i] for i in keep]
        out["clock_reasons"] = [self.clock_reasons[i] for i in keep]
        return out


def _why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{exc.__class__.__name__}: {text}"[:200] if text else exc.__class__.__name__


def _number(read: Callable[..., Any], *args: Any) -> float:
    """What NVML read, as a float; NaN where it cannot (not supported on this GPU, no permission)."""
    try:
        return float(read(*args))
    except Exception:
        return math.nan


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _devices(nvml: Any) -> list[NvmlDevice]:
    """Every GPU NVML sees, in its order."""
    found = []
    for index in range(int(nvml.nvmlDeviceGetCount())):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        try:
            pci = nvml.nvmlDeviceGetPciInfo(handle)
            where = (int(pci.domain), int(pci.bus), int(pci.device))
        except Exception:
            where = (-1, -1, -1)
        try:
            uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        except Exception:
            uuid = ""
        max_sm = _number(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)
        found.append(NvmlDevice(handle, index, where, uuid, max_sm))
    return found


def _visible(devices: list[NvmlDevice], visible: str | None) -> list[NvmlDevice]:
    """The devices CUDA_VISIBLE_DEVICES lets CUDA see, in its order: indices (NVML's order is the PCI
    bus's, which is CUDA's under CUDA_DEVICE_ORDER=PCI_BUS_ID and on machines of one GPU model) or UUIDs
    (GPU-..., a unique prefix is enough, as for CUDA); all when it is unset or names a MIG instance."""
    if visible is None:
        return devices
    chosen: list[NvmlDevice] = []
    for token in (t.strip() for t in visible.split(",")):
        if not token:
            break
        if token.startswith("MIG-"):
            return devices
        if token.lstrip("-").isdigit():
            index = int(token)
            if index < 0 or index >= len(devices):
                break  # CUDA stops at the first invalid entry
            chosen.append(devices[index])
        else:
            prefix = token if token.startswith("GPU-") else f"GPU-{token}"
            match = [d for d in devices if d.uuid.startswith(prefix)]
            if len(match) != 1:
                break
            chosen.append(match[0])
    return list(dict.fromkeys(chosen))


def _reasons_reader(nvml: Any) -> Callable[[Any], int] | None:
    """NVML's clocks-event reasons call (named ClocksThrottleReasons before driver 535)."""
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        read = getattr(nvml, name, None)
        if read is not None:
            return read  # type: ignore[no-any-return]
    return None


def cuda_indices(devices: list[NvmlDevice]) -> dict[int, int]:
    """NVML index -> CUDA index, matched by PCI location (or UUID) through torch's device properties;
    empty when CUDA is not initialised (asking would initialise it) or torch does not say."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return {}
    by_pci = {d.pci: d.index for d in devices if d.pci[1] >= 0}
    by_uuid = {d.uuid.removeprefix("GPU-").lower(): d.index for d in devices if d.uuid}
    found: dict[int, int] = {}
    for k in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(k)
        bus = getattr(props, "pci_bus_id", None)
        index = None
        if bus is not None:
            index = by_pci.get(
                (int(getattr(props, "pci_domain_id", 0)), int(bus), int(getattr(props, "pci_device_id", 0)))
            )
        if index is None:
            uuid = str(getattr(props, "uuid", "")).lower().removeprefix("gpu-")
            index = by_uuid.get(uuid)
        if index is not None:
            found[index] = k
    return found
