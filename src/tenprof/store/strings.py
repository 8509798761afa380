"""A string column as codes into its distinct values, so what is asked of each row's string is asked once
per distinct string: a run repeats a few hundred op and kernel names, shapes and dtypes over millions of
rows, and a Python list of them costs a str object per row and a test per row.

`Strings.of(column)` encodes an Arrow string column (nulls read as ""); `where(test)` is the per-row
verdict of `test`, `equals(value)` the rows holding one value, `at(row)` one row's string, `rows()` the column
as a list of shared str objects, `codes`/`values` the encoding itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Strings:
    codes: npt.NDArray[np.int64]  # per row, an index into `values`
    values: list[str]  # the distinct strings

    @staticmethod
    def of(column: pa.ChunkedArray | pa.Array) -> Strings:
        encoded = pc.dictionary_encode(pc.fill_null(column, "")).combine_chunks()
        values = [str(v) for v in encoded.dictionary.to_pylist()]
        return Strings(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), values)

    def where(self, test: Callable[[str], bool]) -> Bools:
        """Per row, test(its string), asked once per distinct string."""
        verdicts = np.array([test(v) for v in self.values], dtype=bool)
        return verdicts[self.codes] if len(verdicts) else np.zeros(len(self.codes), dtype=bool)

    def equals(self, value: str) -> Bools:
        try:
            return np.asarray(self.codes == self.values.index(value), dtype=bool)
        except ValueError:
            return np.zeros(len(self.codes), dtype=bool)

    def at(self, row: int) -> str:
        return self.values[int(self.codes[row])]

    def rows(self) -> list[str]:
        values = self.values
        return [values[c] for c in self.codes.tolist()]
