"""The text of a source line a stalls report points at, from the profile alone (never this machine's files).

Triton kernels carry line info, so Nsight Compute places each instruction at a line of the file the
kernel was compiled from: for torch.compile, Inductor's generated file (`/tmp/torchinductor_<user>/xx/
c<hash>.py`); else Triton's own library inlined into the kernel, torch's helpers, or the user's
`@triton.jit` file. Two copies in the profile hold those lines:
- a generated file's text is the kernel's source string inside Inductor's generated wrapper, which every
  pass's run keeps (<pass>/raw/compiled_code.json.gz, the ncu run's first:
  `store.compiled_code.kept_code_files`), so its line is looked up by kernel name in the kept wrappers;
- every other line (and a generated one whose wrapper was not kept, as in `import-ncu`) is in the stalls
  pass's `source_lines` table, copied where the pass was built.
`line(file, n, kernel)` gives the stripped text, or '' when neither has it (a profile recorded before
`source_lines` existed has only the generated lines).
"""

from __future__ import annotations

from tenprof.core.generated_code import embedded_kernels
from tenprof.core.inductor import is_generated_file
from tenprof.store.compiled_code import kept_code_files, read_compiled_code
from tenprof.store.profile import Profile


class GeneratedSource:
    def __init__(self, profile: Profile) -> None:
        self._kernels: dict[str, str] = {}
        for kept in kept_code_files(profile.directory):
            for row in read_compiled_code(kept):
                source = str(row.get("source", ""))
                for name, (start, end) in embedded_kernels(source).items():
                    self._kernels.setdefault(name, source[start:end])
        self._kernel_lines: dict[str, list[str]] = {}
        table = profile.table("source_lines")
        self._copied: dict[tuple[str, int], str] = {
            (str(f), int(n)): str(t or "")
            for f, n, t in zip(
                table.column("file").to_pylist(),
                table.column("line").to_pylist(),
                table.column("text").to_pylist(),
                strict=True,
            )
        }

    def line(self, file: str, number: int, kernel: str = "") -> str:
        if is_generated_file(file) and kernel in self._kernels:
            if kernel not in self._kernel_lines:
                self._kernel_lines[kernel] = self._kernels[kernel].split("\n")
            lines = self._kernel_lines[kernel]
            return lines[number - 1].strip() if 0 < number <= len(lines) else ""
        return self._copied.get((file, number), "").strip()
