"""Columns derived from other columns of their table: computed once when the table is built, and again
when reading a table written before the column existed.

Such a file has no such column, so the loader reads it as nulls (a column added to a table later always
does); a derived column is instead computed here from the columns it comes from, with the function the
importer uses, so an old profile gives the reports a rebuilt one gives.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tenprof.core.inductor import AUTOTUNING_RECORDS, within_records
from tenprof.store.schema import TABLES


def _ops_is_autotuning(ops: pa.Table) -> pa.Array:
    # inside_autotuning's test, in Arrow: an old profile pays this on every load, so no Python per op
    names = ops.column("name")
    own = np.zeros(ops.num_rows, dtype=bool)
    for record in AUTOTUNING_RECORDS:
        own |= pc.fill_null(pc.match_substring(names, record), False).to_numpy(zero_copy_only=False)
    return pa.array(within_records(own, ops.column("parent_op_id").to_numpy()))


def _all_from_the_script(samples: pa.Table) -> pa.Array:
    # recorded before DataLoader workers were sampled: every sample is the script's own process's
    return pa.array(np.zeros(samples.num_rows, dtype=np.int64))


# table -> derived column -> how to compute it from the table's other columns
DERIVED: dict[str, dict[str, Callable[[pa.Table], pa.Array]]] = {
    "ops": {"is_autotuning": _ops_is_autotuning},
    "host_samples": {"process_id": _all_from_the_script},
}


def fill_derived(name: str, table: pa.Table) -> pa.Table:
    """`table` (as read, in its schema) with each derived column that holds nulls computed afresh.

    A table built by this tenprof never has a null there; one written before the column has nothing but
    nulls, so the whole column is computed."""
    for column, derive in DERIVED.get(name, {}).items():
        if table.column(column).null_count:
            index = table.schema.get_field_index(column)
            table = table.set_column(index, TABLES[name].field(column), derive(table))
    return table
