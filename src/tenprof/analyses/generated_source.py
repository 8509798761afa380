"""The text of a line of torch.compile's generated Triton code, for reports that point into it.

Triton kernels carry line info, so Nsight Compute places each instruction at a line of the file the
kernel was compiled from (`/tmp/torchinductor_<user>/xx/c<hash>.py`). That file's text is the kernel's
source string inside Inductor's generated wrapper, which every pass's run keeps with the profile
(<pass>/raw/compiled_code.json.gz, the ncu run's first: `compiled_import.kept_code_files`). So a line of
a generated file is looked up by kernel name in the kept wrappers. Lines of any other file (Triton's own
library inlined into a reduction, torch's helpers) are read from that file when it exists here.
`line(file, n, kernel)` gives the stripped text, or '' when neither has it.
"""

from __future__ import annotations

from pathlib import Path

from tenprof.importers.compiled_import import embedded_kernels, is_generated_file, kept_code_files, read_compiled_code
from tenprof.store.profile import Profile


class GeneratedSource:
    def __init__(self, profile: Profile) -> None:
        self._kernels: dict[str, str] = {}
        for kept in kept_code_files(profile.directory):
            for row in read_compiled_code(kept):
                source = str(row.get("source", ""))
                for name, (start, end) in embedded_kernels(source).items():
                    self._kernels.setdefault(name, source[start:end])
        self._lines: dict[tuple[str, str], list[str]] = {}

    def _text(self, file: str, kernel: str) -> list[str]:
        generated = is_generated_file(file) and kernel in self._kernels
        key = ("kernel", kernel) if generated else ("file", file)
        if key not in self._lines:
            if generated:
                text = self._kernels[kernel]
            else:
                try:
                    text = Path(file).read_text(errors="replace") if file.endswith(".py") else ""
                except OSError:
                    text = ""
            self._lines[key] = text.split("\n")
        return self._lines[key]

    def line(self, file: str, number: int, kernel: str = "") -> str:
        lines = self._text(file, kernel) if file else []
        return lines[number - 1].strip() if 0 < number <= len(lines) else ""
