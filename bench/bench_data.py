"""Data-plane metadata figures: planning a 10,000-file table and the Iceberg
metadata that many small appends leave, each next to a floor measured in
the same run (these machines are noisy; ratios travel better than seconds).

* Planning: ``plan_scan`` of one 10,000-file table built as 10, 100 and
  1,000 commits (so 10, 100 and 1,000 manifests), cold (a fresh reader, no
  parsed-manifest cache) and warm; floors: pyiceberg's own
  ``StaticTable.from_metadata(...).scan().plan_files()`` on the same
  ``metadata.json``, and listing the 10,000 files with ``os.scandir``.
* Metadata: the bytes of ``metadata.json`` + manifest lists + manifests
  after 1,000 small appends (1 file each and 10 files each), and what
  append 10, 100 and 1,000 wrote.

Data files are real Parquet files (one written, the rest byte copies), so
commits check them as usual; only the metadata is measured.

Run: ``.venv/bin/python bench/bench_data.py [--appends 1000] [--files 10000]``
(``--appends`` also caps the commits a planning table is built from).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from pyiceberg.table import StaticTable

import almanac
import timing
from almanac import ColumnDef, ColumnType
from almanac.data import (
    CommitShape,
    DataFile,
    TableData,
    compact,
    conform,
    new_write_id,
    plan_scan,
)
from almanac.data import write_files as write_data_files

REPEATS = 5


def median_seconds(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    return timing.median_seconds(fn, repeats)


class Table:
    """One catalog table whose appends are commits of copied Parquet files
    (copies of one row, so all in that row's tablet)."""

    def __init__(self, cat: almanac.Catalog, name: str) -> None:
        cat.execute(
            [
                almanac.CreateTable(
                    name=name,
                    columns=(
                        ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                        ColumnDef(name="V", type=ColumnType.STRING),
                    ),
                    primary_key=("ID",),
                )
            ]
        )
        self.cat = cat
        self.name = name
        self.data = TableData.for_catalog(cat)
        table = cat.catalog().table(name)
        assert table is not None
        self.table = table
        self.shape = CommitShape.of(cat.catalog(), table)
        rows = conform(pa.table({"ID": pa.array([1], pa.int64()), "V": ["x"]}), table)
        seed_dir = f"{self.data.warehouse.root}/seed-{name}"
        (self.template,) = write_data_files(
            self.data.warehouse, table, self.shape.partitions, rows, seed_dir
        )
        self.payload = Path(self.template.path).read_bytes()
        shutil.rmtree(seed_dir)

    def append(self, files: int) -> None:
        """One staged write of ``files`` one-row files, committed."""
        write_id = new_write_id()
        write_dir = self.data.warehouse.write_dir(self.table.id, write_id)
        lease = self.data.staging.stage(write_id, write_dir, ttl_s=600)
        made: list[DataFile] = []
        directory = Path(write_dir, f"tablet={self.template.partition}")
        directory.mkdir(exist_ok=True)
        for i in range(files):
            path = directory / f"part-{i}.parquet"
            path.write_bytes(self.payload)
            made.append(replace(self.template, path=str(path)))
        self.data.commit(self.shape, write_id, made, operation="append")
        self.data.staging.release(lease)

    def metadata_dir(self) -> Path:
        return Path(self.data.warehouse.metadata_dir(self.table.id))

    def metadata_files(self) -> dict[str, int]:
        return {p.name: p.stat().st_size for p in self.metadata_dir().iterdir()}

    def location(self) -> str:
        location = self.data.metadata_location(self.table.id)
        assert location is not None
        return location


def _kib(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def bench_planning(cat: almanac.Catalog, files: int, max_commits: int) -> None:
    print(f"-- planning a {files:,}-file table (median of {REPEATS})")
    rows: list[tuple[int, float, float, float, float]] = []
    for commits in (10, 100, 1000):
        if files % commits or commits > max_commits:
            continue
        table = Table(cat, f"PLAN{commits}")
        for _ in range(commits):
            table.append(files // commits)
        location = table.location()

        def cold(table: Table = table) -> None:
            fresh = TableData(table.data.store, table.data.warehouse, table.data.clock)
            plan = plan_scan(cat, fresh, table.name)
            assert len(plan.files) == files

        def warm(table: Table = table) -> None:
            plan = plan_scan(cat, table.data, table.name)
            assert len(plan.files) == files

        def pyiceberg(location: str = location) -> None:
            tasks = list(StaticTable.from_metadata(location).scan().plan_files())
            assert len(tasks) == files

        def scandir(table: Table = table) -> None:
            found = 0
            root = table.data.warehouse.table_dir(table.table.id)
            stack = [root]
            while stack:
                with os.scandir(stack.pop()) as entries:
                    for entry in entries:
                        if entry.is_dir():
                            stack.append(entry.path)
                        elif entry.name.endswith(".parquet"):
                            found += 1
            assert found == files

        warm()
        t_cold, t_warm = median_seconds(cold), median_seconds(warm)
        t_ice, t_dir = median_seconds(pyiceberg), median_seconds(scandir)
        rows.append((commits, t_cold, t_warm, t_ice, t_dir))
        print(
            f"{files:,} files in {commits:,} manifests: plan_scan cold {t_cold * 1e3:,.1f} ms, "
            f"warm {t_warm * 1e3:,.2f} ms; pyiceberg plan_files {t_ice * 1e3:,.1f} ms "
            f"(cold/pyiceberg {t_cold / t_ice:.2f}x); os.scandir listing "
            f"{t_dir * 1e3:,.1f} ms (cold/scandir {t_cold / t_dir:.1f}x)"
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(
            f"same {files:,} files, {last[0] // first[0]}x the manifests: plan_scan cold "
            f"{last[1] / first[1]:.1f}x, pyiceberg {last[3] / first[3]:.1f}x"
        )


def bench_metadata(cat: almanac.Catalog, appends: int) -> None:
    print(f"-- Iceberg metadata after {appends:,} small appends")
    probes = sorted({k for k in (10, 100, 1000) if k <= appends} | {appends})
    for per_append in (1, 10):
        table = Table(cat, f"GROW{per_append}")
        costs: dict[int, int] = {}
        for k in range(1, appends + 1):
            before = table.metadata_files() if k in probes else {}
            table.append(per_append)
            if k in probes:
                after = table.metadata_files()
                costs[k] = sum(size for name, size in after.items() if name not in before)
        everything = table.metadata_files()
        needed = table.data.iceberg.referenced(table.location())
        current = sum(everything[Path(p).name] for p in needed.all())
        kinds = {"metadata.json": 0, "manifest lists": 0, "manifests": 0}
        for name, size in everything.items():
            if name.endswith(".metadata.json"):
                kinds["metadata.json"] += size
            elif name.startswith("snap-"):
                kinds["manifest lists"] += size
            else:
                kinds["manifests"] += size
        total = sum(everything.values())
        print(
            f"{per_append} file(s) per append, {appends * per_append:,} files: all metadata "
            f"of the {appends:,} kept snapshots {_kib(total)} "
            f"({', '.join(f'{k} {_kib(v)}' for k, v in kinds.items())}); "
            f"the current snapshot needs {_kib(current)} "
            f"({len(needed.manifests):,} manifests)"
        )
        started = time.perf_counter()
        compacted = compact(cat, table.name)
        took = time.perf_counter() - started
        assert compacted is not None
        merged = table.data.iceberg.referenced(compacted.metadata)
        merged_bytes = sum(table.metadata_files()[Path(p).name] for p in merged.all())
        print(
            f"  after compact() ({took:.1f} s, {len(compacted.files)} data file(s)): the current "
            f"snapshot needs {_kib(merged_bytes)} ({len(merged.manifests):,} manifests)"
        )
        print(
            "  bytes written by append "
            + ", ".join(f"#{k}: {_kib(v)}" for k, v in costs.items())
            + (
                f"; #{probes[-1]}/#{probes[0]} = {costs[probes[-1]] / costs[probes[0]]:.1f}x "
                f"for {probes[-1] // probes[0]}x the appends"
                if len(probes) > 1
                else ""
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} cpus, Python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory() as tmp, almanac.connect(tmp, delay_ms=0) as cat:
        bench_planning(cat, args.files, args.appends)
        bench_metadata(cat, args.appends)


if __name__ == "__main__":
    main()
