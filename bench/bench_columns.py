"""The cost of adding many columns in one ALTER TABLE, which runs inside the
catalog's writer lock: adding 2N columns to a table of 2N must cost about
twice adding N to a table of N (a ratio near 2: linear; near 4: quadratic).

Run: ``.venv/bin/python bench/bench_columns.py`` (or ``make bench``).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable

import almanac
import timing
from almanac import AddColumns, ColumnDef, ColumnType
from almanac.commands.base import MAX_COLUMNS

REPEATS = 5
N = MAX_COLUMNS // 4
"""2N existing plus 2N added stays within the cap."""


def _adds(cat: almanac.Catalog, n: int, via_sql: bool) -> Callable[[], object]:
    """Each call adds ``n`` columns to the next of ``REPEATS`` tables of ``n``
    columns made beforehand (only the ALTER is timed)."""
    prefix = f"S{n}" if via_sql else f"P{n}"
    existing = ", ".join(f"B{i} INT" for i in range(n - 1))
    for t in range(REPEATS):
        cat.sql(f"CREATE TABLE {prefix}_{t} (ID INT PRIMARY KEY, {existing})")
    tables = itertools.count()
    text = "ALTER TABLE {} ADD COLUMN (" + ", ".join(f"C{i} INT" for i in range(n)) + ")"
    columns = tuple(ColumnDef(name=f"C{i}", type=ColumnType.INT32) for i in range(n))

    def add() -> object:
        table = f"{prefix}_{next(tables)}"
        if via_sql:
            return cat.sql(text.format(table))
        return cat.execute([AddColumns(table=table, columns=columns)])

    return add


def bench_add_columns() -> None:
    with (
        tempfile.TemporaryDirectory() as root,
        almanac.connect(root, delay_ms=0, max_clock_skew_ms=0, durability="normal") as cat,
    ):
        for via_sql, label in ((True, "SQL ALTER TABLE"), (False, "AddColumns")):
            small = timing.median_seconds(_adds(cat, N, via_sql), REPEATS)
            large = timing.median_seconds(_adds(cat, 2 * N, via_sql), REPEATS)
            print(
                f"{label} on SQLite (durability normal), add {N:,} columns to {N:,}: "
                f"{small * 1000:.0f} ms; "
                f"add {2 * N:,} to {2 * N:,}: {large * 1000:.0f} ms; ratio {large / small:.2f} "
                "(goal ≤ 2.5: linear)"
            )


def main() -> None:
    bench_add_columns()


if __name__ == "__main__":
    main()
