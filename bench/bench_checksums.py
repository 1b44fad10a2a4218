"""What verifying data files costs a read: ``almanac.data.read_table`` of a
~100 MB table (the Parquet bytes on disk) with every file's size and CRC-32
checked, next to the same reader with the check off and to plain
``pyarrow.parquet.read_table`` of the same files, in one run. The ratio is
what travels between machines.

"Check off" reads the same files through ``read_file`` with the checksum and
size dropped from their ``DataFile`` (as for a file whose name records
none), so the difference is the check alone: reading each file whole into
memory and its CRC-32, before the Parquet reader parses it. A read of one
column of three is timed too: the check reads every byte of the file.

Run: ``.venv/bin/python bench/bench_checksums.py [--rows 6000000] [--partitions 4]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import almanac
import timing
from almanac import ColumnDef, ColumnType, CreateTable, CreateZone
from almanac.data import TableData, plan_scan, read_file, read_table, write_table

REPEATS = 5


def build(cat: almanac.Catalog, rows: int, partitions: int) -> None:
    cat.execute([CreateZone(name="Z", partitions=partitions)])
    cat.execute(
        [
            CreateTable(
                name="T",
                columns=(
                    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                    ColumnDef(name="X", type=ColumnType.DOUBLE),
                    ColumnDef(name="Y", type=ColumnType.INT64),
                ),
                primary_key=("ID",),
                zone="Z",
            )
        ]
    )
    rng = np.random.default_rng(1)
    write_table(
        cat,
        "T",
        pa.table(
            {
                "ID": pa.array(np.arange(rows, dtype=np.int64)),
                "X": pa.array(rng.random(rows)),
                "Y": pa.array(rng.integers(0, 2**62, rows, dtype=np.int64)),
            }
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory() as tmp:
        cat = almanac.connect(str(Path(tmp) / "catalog"), delay_ms=0, max_clock_skew_ms=0)
        try:
            build(cat, args.rows, args.partitions)
            data = TableData.for_catalog(cat)
            plan = plan_scan(cat, data, "T")
            files = plan.files
            unchecked = tuple(dataclasses.replace(f, checksum=None, size=0) for f in files)
            paths = [f.path for f in files]
            size = sum(os.path.getsize(p) for p in paths)
            print(
                f"table: {args.rows:,} rows in {len(files)} files, {size / 1e6:.0f} MB of Parquet"
            )

            def through(
                chosen: tuple[almanac.data.DataFile, ...], columns: list[str] | None = None
            ) -> int:
                return sum(
                    batch.num_rows
                    for f in chosen
                    for batch in read_file(plan.table, f, data.warehouse, columns=columns)
                )

            def crc_only() -> int:
                return sum(zlib.crc32(Path(p).read_bytes()) & 1 for p in paths)

            figures = {
                "read_table (checked)": lambda: read_table(cat, "T"),
                "read_file, checked": lambda: through(files),
                "read_file, check off": lambda: through(unchecked),
                "one column of three, checked": lambda: through(files, ["X"]),
                "one column of three, check off": lambda: through(unchecked, ["X"]),
                "pyarrow.parquet.read_table": lambda: [pq.read_table(p) for p in paths],
                "read + CRC-32 alone": crc_only,
            }
            seconds = {name: timing.median_seconds(fn, REPEATS) for name, fn in figures.items()}
        finally:
            cat.close()
    floor = seconds["pyarrow.parquet.read_table"]
    for name, value in seconds.items():
        print(f"{name:32s} {value * 1000:8.1f} ms  {value / floor:5.2f}x pyarrow")
    ratio = seconds["read_file, checked"] / seconds["read_file, check off"]
    print(f"verification costs {ratio:.2f}x the unchecked read")
    one = seconds["one column of three, checked"] / seconds["one column of three, check off"]
    print(f"and {one:.2f}x a read of one column of three (the check reads the whole file)")


if __name__ == "__main__":
    main()
