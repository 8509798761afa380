"""The script's own Triton launches (capture.own_launches), on the CPU with a stand-in `triton`
package: `kernel[grid](...)` goes through triton.runtime.jit.JITFunction.run, as in Triton; the wrapper
goes on when the script imports triton after the capture started, records each outermost launch with the
line that made it, none in the steps run with the capture off, and comes off at the end. (On the GPU the
importer turns each record into a "(user kernel) NAME" op: tests/unit/test_user_kernels.py.)"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import FAKE_JIT


def test_the_wrapper_comes_off_at_the_end(tmp_path: Path) -> None:
    # Triton already imported when the capture starts: wrapped at once, and its own run back at stop.
    import sys
    import types

    from tenprof.capture.callsites import new_interner
    from tenprof.capture.own_launches import JIT_MODULE, OwnLaunches

    module = types.ModuleType(JIT_MODULE)
    exec(FAKE_JIT, module.__dict__)
    original = module.JITFunction.run
    sys.modules[JIT_MODULE] = module
    try:
        launches = OwnLaunches(new_interner(None))
        launches.start()
        assert module.JITFunction.run is not original
        kernel = module.jit(lambda x: x + 1)
        assert kernel[(1,)](1) == 2
        launches.paused = True
        assert kernel[(1,)](2) == 3
        launches.stop()
        assert module.JITFunction.run is original
        assert len(launches.records) == 4 and len(launches.names) == 1  # the paused launch is not recorded
    finally:
        del sys.modules[JIT_MODULE]


def test_functions_of_an_extension_built_while_recording_are_recorded() -> None:
    # torch.utils.cpp_extension.load_inline builds a module of pybind functions (builtins), which launch
    # their kernels in no torch op: the module it returns while the capture runs has them wrapped.
    import math
    import sys
    import types

    from tenprof.capture.callsites import new_interner
    from tenprof.capture.own_launches import EXTENSION_MODULE, OwnLaunches

    built = types.ModuleType("my_extension")
    built.sqrt = math.sqrt  # type: ignore[attr-defined]  # a builtin, as pybind functions are
    fake = types.ModuleType(EXTENSION_MODULE)
    loader = lambda *args, **kwargs: built  # noqa: E731
    fake.load_inline = loader  # type: ignore[attr-defined]
    real = sys.modules.get(EXTENSION_MODULE)
    sys.modules[EXTENSION_MODULE] = fake
    try:
        launches = OwnLaunches(new_interner(None))
        launches.start()
        module = fake.load_inline("my_extension", cpp_sources="")  # type: ignore[attr-defined]
        assert module.sqrt(16.0) == 4.0
        launches.stop()
        assert module.sqrt(9.0) == 3.0  # after the capture: passed straight through, not recorded
        assert launches.names == ["sqrt"] and len(launches.records) == 4
        assert fake.load_inline is loader  # type: ignore[attr-defined]  # torch's loader is back
    finally:
        if real is not None:
            sys.modules[EXTENSION_MODULE] = real
        else:
            del sys.modules[EXTENSION_MODULE]


def test_the_tensors_pass_counts_a_user_kernels_arguments_as_used() -> None:
    # A table that only the script's own (stand-in) Triton kernel reads was "made and never read by any
    # op": with the launch an op of the tensors pass, "(user kernel) gather", the table is one of its uses
    # (in-process: the recorder and the patch as the tensors pass runs them).
    import sys
    import types

    import torch

    from tenprof.capture.own_launch_uses import OwnLaunchUses
    from tenprof.capture.own_launches import JIT_MODULE
    from tenprof.capture.tensors import READWRITE, TensorRecorder

    module = types.ModuleType(JIT_MODULE)
    exec(FAKE_JIT, module.__dict__)
    original = module.JITFunction.run
    sys.modules[JIT_MODULE] = module
    try:
        recorder = TensorRecorder(None)
        uses = OwnLaunchUses(recorder)
        uses.install()
        gather = module.jit(lambda table, out: None)  # a real kernel reads the table on the GPU
        gather.__name__ = "gather"
        table, out = torch.randn(1000), torch.empty(10)
        with recorder:
            gather[(1,)](table, out)
        uses.uninstall()
        assert module.JITFunction.run is original
    finally:
        del sys.modules[JIT_MODULE]
    ops = [recorder.ops[i : i + 8] for i in range(0, len(recorder.ops), 8)]
    launch = [op[0] for op in ops if recorder.names[op[1]] == "(user kernel) gather"]
    assert len(launch) == 1
    triples = [tuple(recorder.uses[i : i + 3]) for i in range(0, len(recorder.uses), 3)]
    mine = sorted((list(recorder.tensors[t][3]), role) for seq, t, role in triples if seq == launch[0])
    assert mine == [([10], READWRITE), ([1000], READWRITE)]


def _copy_of_libm(folder: Path) -> Path:
    """The system's C math library copied into `folder` as libmine.so: a library of the script's own."""
    import os
    import shutil

    candidates = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64")
    found = [f"{d}/libm.so.6" for d in candidates if os.path.exists(f"{d}/libm.so.6")]
    assert found, "no libm.so.6 on this machine"
    mine = folder / "libmine.so"
    shutil.copyfile(found[0], mine)
    return mine


def test_functions_of_the_scripts_own_shared_library_are_recorded(tmp_path: Path) -> None:
    # A library the script loads with ctypes from its own files (here: the C math library, copied into the
    # test's folder) has its functions recorded while the capture runs; argtypes and restype still reach
    # the function; a library loaded by bare name, as the system's are, is left alone.
    import ctypes

    from tenprof.capture.callsites import new_interner
    from tenprof.capture.own_launches import OwnLaunches

    mine = _copy_of_libm(tmp_path)
    launches = OwnLaunches(new_interner(None))
    launches.start()
    try:
        library = ctypes.CDLL(str(mine))
        library.cos.restype = ctypes.c_double
        library.cos.argtypes = [ctypes.c_double]
        assert library.cos(0.0) == 1.0
        system = ctypes.CDLL("libm.so.6")
        system.sin.restype = ctypes.c_double
        system.sin.argtypes = [ctypes.c_double]
        assert system.sin(0.0) == 0.0
    finally:
        launches.stop()
    assert launches.names == ["cos"] and len(launches.records) == 4
    assert library.cos(0.0) == 1.0 and len(launches.records) == 4  # after the capture: passed through


def test_a_library_loaded_by_bare_name_from_the_scripts_folders_is_recorded(tmp_path: Path) -> None:
    # ctypes.CDLL("libmine.so") found by the dynamic loader in the script's folders (LD_LIBRARY_PATH) is the
    # script's own: the path the loader opened is read back (dlinfo) and is not a system one. Here the bare
    # name is given to a handle opened by path, as the loader would have opened it.
    import ctypes

    from tenprof.capture.own_launches import loaded_path

    mine = _copy_of_libm(tmp_path)
    by_path = ctypes.CDLL(str(mine))
    by_name = ctypes.CDLL("libmine.so", handle=by_path._handle)
    assert loaded_path(by_name) == str(mine)
    assert loaded_path(ctypes.CDLL("libm.so.6")).startswith(("/lib", "/usr/lib"))

    from tenprof.capture.callsites import new_interner
    from tenprof.capture.own_launches import OwnLaunches

    launches = OwnLaunches(new_interner(None))
    launches.start()
    try:
        by_name.cos.restype = ctypes.c_double
        by_name.cos.argtypes = [ctypes.c_double]
        assert by_name.cos(0.0) == 1.0
    finally:
        launches.stop()
    assert launches.names == ["cos"]


def test_an_extension_built_before_the_run_and_imported_from_the_scripts_files_is_recorded(
    tmp_path: Path,
) -> None:
    # A CUDA extension module the script imports from its own folder (built before the run) has its
    # functions recorded, whether imported before the capture started or during it; a module from an
    # installed package, or one that launches no CUDA kernel, is left alone. Stand-in: the stdlib's
    # compiled `_bisect` module copied into the test's folder, with the CUDA launch marks appended.
    import _bisect
    import importlib.util
    import shutil
    import sys

    from tenprof.capture.callsites import new_interner
    from tenprof.capture.own_launches import OwnLaunches, launches_cuda_kernels

    def copy(name: str, cuda: bool) -> Path:
        path = tmp_path / Path(str(_bisect.__file__)).name.replace("_bisect", name)
        shutil.copyfile(str(_bisect.__file__), path)
        if cuda:
            with path.open("ab") as file:
                file.write(b"\0cudaLaunchKernel\0")
        return path

    def load(path: Path, name: str):  # type: ignore[no-untyped-def]
        # the module keeps _bisect's own init function name: import it under that name, then rename
        spec = importlib.util.spec_from_file_location("_bisect", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
        return module

    before = load(copy("_before", cuda=True), "tenprof_test_before")
    launches = OwnLaunches(new_interner(None))
    launches.start()
    try:
        during = load(copy("_during", cuda=True), "tenprof_test_during")
        plain = load(copy("_plain", cuda=False), "tenprof_test_plain")
        assert launches_cuda_kernels(str(during.__file__)) and not launches_cuda_kernels(str(plain.__file__))
        assert before.bisect_left([1, 2, 3], 2) == 1
        assert during.insort_left is not _bisect.insort_left
        assert during.bisect_right([1, 2, 3], 2) == 2
        assert plain.bisect_left([1, 2, 3], 3) == 2
        assert _bisect.bisect_left([1, 2, 3], 2) == 1  # the installed module: not the script's
    finally:
        launches.stop()
        for name in ("tenprof_test_before", "tenprof_test_during", "tenprof_test_plain"):
            sys.modules.pop(name, None)
    assert launches.names == ["bisect_left", "bisect_right"]
    assert during.bisect_right([1, 2, 3], 2) == 2 and len(launches.names) == 2  # passed through after
