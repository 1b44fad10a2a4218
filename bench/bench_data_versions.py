"""Data commits as catalog versions on SQLite, each figure next to a floor
measured in the same run (these machines are noisy; ratios travel better).

* Small data commits/s: ``almanac.data.write_table`` of 10 rows into a
  two-column table on a directory target (the default ``durability="full"``),
  by this checkout and, with ``--before SRC``, by the sources of an older
  checkout (say the commit before data commits made catalog versions), each
  in a child process with its own sources first on the path, the two taking
  turns. Floor: ``pyarrow.parquet.write_table`` of the same 10 rows to a new
  file plus one ``sqlite_floor.SqliteFloor`` transaction (the store's
  pragmas) whose entry is as large as the catalog's stored data commit.
* Recovery of ``--versions`` (100,000) data-commit versions: ``connect``
  from the log (no checkpoint) and from a checkpoint, against a bare read of
  the log's keys; the memory the opened catalog holds per version
  (tracemalloc), against the stored bytes of a version. The log is built
  through ``Catalog.execute([], attach=...)`` publishing one
  ``TableDataCommitted`` a version (the entry of a real ``write_table``
  with a fresh snapshot id and metadata location each time, no files), and
  kept in ``--cache`` for the next run. ``--profile`` prints where the
  recovery from the log spends its time.

Run: ``.venv/bin/python bench/bench_data_versions.py [--before ../before/src]
[--commits 100] [--versions 100000]``.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import almanac
from almanac.data import write_table
from almanac.model.catalog_version import CatalogVersion
from almanac.node.log_format import frame_update
from bench_durable import bare_read_seconds, timed_open
from sqlite_floor import SqliteFloor
from workload import create_table

RUNS = 3
WARMUP = 5
ROWS = pa.table({"ID": pa.array(range(10), pa.int64()), "V": [f"value {i}" for i in range(10)]})


# -- small data commits -------------------------------------------------------


def write_rate(target: Path, commits: int) -> dict[str, float | int | None]:
    """``commits`` timed ``write_table`` calls (after a few untimed ones): the
    rate, the CPU milliseconds a commit, and the stored size of the last
    version's entry when it is a data commit."""
    with almanac.connect(str(target)) as cat:
        cat.execute([create_table("T")])
        ddl_version = cat.latest_version
        for _ in range(WARMUP):
            write_table(cat, "T", ROWS)
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(commits):
            write_table(cat, "T", ROWS)
        rate = commits / (time.perf_counter() - start)
        cpu_ms = (time.process_time() - cpu) / commits * 1e3
        versions = cat.latest_version - ddl_version
        entry = len(frame_update(cat.history()[-1].update)) if versions else None
        return {"rate": rate, "cpu_ms": cpu_ms, "versions": versions, "entry": entry}


def child_write_rate(src: Path, target: Path, commits: int) -> dict[str, float | int | None]:
    """``write_rate`` in a new process that imports Almanac from ``src``,
    run by the bench beside ``src`` when that checkout has one (its own
    scripts know its module paths), else by this one."""
    bench = Path(src).resolve().parent / "bench"
    if not (bench / Path(__file__).name).is_file():
        bench = Path(__file__).resolve().parent
    script = str(bench / Path(__file__).name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(bench)]))
    out = subprocess.run(
        [sys.executable, script, "--child-writes", str(target), "--commits", str(commits)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float | int | None] = json.loads(out.splitlines()[-1])
    return result


def floor_write_rate(root: Path, commits: int, payload: bytes) -> tuple[float, float]:
    """The same Parquet file written anew plus one bare metastore transaction:
    the rate and the CPU milliseconds a commit."""
    root.mkdir()
    floor = SqliteFloor(root / "floor.db", "full")
    try:
        for i in range(WARMUP):
            pq.write_table(ROWS, root / f"warm-{i}.parquet")
            floor.commit(payload)
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(commits):
            pq.write_table(ROWS, root / f"part-{i}.parquet")
            floor.commit(payload)
        rate = commits / (time.perf_counter() - start)
        return rate, (time.process_time() - cpu) / commits * 1e3
    finally:
        floor.close()


def bench_writes(root: Path, commits: int, before: Path | None) -> None:
    here = Path(almanac.__file__).resolve().parents[1]
    sources = {"now": here} if before is None else {"before": before, "now": here}
    rates: dict[str, list[float]] = {name: [] for name in (*sources, "floor")}
    cpu: dict[str, list[float]] = {name: [] for name in rates}
    entry = 0
    for run in range(RUNS):
        for name, src in sources.items():
            result = child_write_rate(src, root / f"{name}-{run}", commits)
            assert isinstance(result["rate"], float) and isinstance(result["cpu_ms"], float)
            rates[name].append(result["rate"])
            cpu[name].append(result["cpu_ms"])
            if name == "now":
                assert result["versions"] == WARMUP + commits and isinstance(result["entry"], int)
                entry = result["entry"]
        rate, cpu_ms = floor_write_rate(root / f"floor-{run}", commits, b"x" * entry)
        rates["floor"].append(rate)
        cpu["floor"].append(cpu_ms)
    print(
        f"-- write_table of 10 rows, {commits:,} commits a run after {WARMUP}, median of {RUNS} "
        f"runs taking turns (durability 'full'); floor: pyarrow.parquet.write_table of the rows "
        f"to a new file + one sqlite3 transaction of a {entry}-byte entry"
    )
    median = {name: statistics.median(values) for name, values in rates.items()}
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    for name in (*sources, "floor"):
        spread = ", ".join(f"{r:,.0f}" for r in rates[name])
        print(
            f"  {name:<6} {median[name]:7,.1f}/s ({spread}), {median_cpu[name]:6.2f} ms of CPU a "
            f"commit; {median[name] / median['floor']:6.1%} of the floor's rate"
        )
    if before is not None:
        print(
            f"  now / before: {median['now'] / median['before']:.2f}x the rate, "
            f"{median_cpu['now'] / median_cpu['before']:.2f}x the CPU a commit"
        )


# -- recovery -----------------------------------------------------------------


def build_versions(target: Path, versions: int) -> int:
    """A catalog of one table and ``versions`` data-commit versions after
    its CREATE TABLE (the first a real ``write_table``); its latest version."""
    from almanac.model.entries import TableDataCommitted  # not in older sources

    rng = random.Random(22)  # the same log on every build
    with almanac.connect(str(target), delay_ms=0, max_clock_skew_ms=0, durability="normal") as cat:
        cat.execute([create_table("T")])
        write_table(cat, "T", ROWS)
        (template,) = cat.history()[-1].update.entries
        assert isinstance(template, TableDataCommitted)
        folder = os.path.dirname(template.metadata)
        entries = [template]

        def attach(
            _base: CatalogVersion, _new: CatalogVersion
        ) -> tuple[tuple[()], tuple[()], list[TableDataCommitted]]:
            return (), (), entries  # no files: the log's replay is what is measured

        for n in range(2, versions + 1):
            entries[0] = dataclasses.replace(
                template,
                snapshot_id=template.snapshot_id + n - 1,
                metadata=f"{folder}/{n:05d}-{uuid.UUID(int=rng.getrandbits(128))}.metadata.json",
            )
            cat.execute([], attach=attach)
        assert len(cat.history()) == versions + 2  # the initial catalog and the DDL
        return cat.latest_version


def cached_log(cache: Path, versions: int) -> tuple[Path, int]:
    """The built catalog and its latest version, built when not cached yet."""
    target = cache / f"data-versions-{versions}"
    built = target / "built"
    if built.exists():
        return target, int(built.read_text())
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    start = time.perf_counter()
    latest = build_versions(target, versions)
    built.write_text(str(latest))
    print(
        f"built {versions:,} data-commit versions in {time.perf_counter() - start:.0f} s "
        f"({target}, kept for the next run)"
    )
    return target, latest


def open_memory(target: Path) -> tuple[int, int, int]:
    """Bytes the opened catalog holds (tracemalloc), its version count and
    the stored bytes of its log."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cat = almanac.connect(str(target))
    try:
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        history = cat.history()
        stored = sum(len(frame_update(info.update)) for info in history)
        return held, len(history), stored
    finally:
        cat.close()


def bench_recovery(target: Path, latest: int, scratch: Path, profile: bool) -> None:
    versions = latest - 2  # after the initial catalog and the DDL
    full, cpu, version = min(timed_open(str(target)) for _ in range(RUNS))
    assert version == latest
    bare = bare_read_seconds(target / "catalog.db")
    print(
        f"-- recovery of {versions:,} data-commit versions (best of {RUNS}): from the log "
        f"{full:.2f} s (goal ≤ 5 s; {cpu:.2f} s of CPU); bare read of its keys {bare:.2f} s; "
        f"ratio {full / bare:.1f}x"
    )
    held, count, stored = open_memory(target)
    print(
        f"  memory of the opened catalog: {held / count:,.0f} bytes a version (goal ≤ 4,096; "
        f"{count:,} versions, {held / 2**20:,.0f} MiB); stored {stored / count:,.0f} bytes a "
        f"version; ratio {held / stored:.1f}x"
    )
    if profile:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        almanac.connect(str(target)).close()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    copy = scratch / "checkpointed"
    shutil.copytree(target, copy)
    with almanac.connect(str(copy)) as cat:
        cat.checkpoint_log()
    snap, cpu, version = min(timed_open(str(copy)) for _ in range(RUNS))
    assert version == latest
    print(
        f"  from a checkpoint of the same catalog: {snap * 1000:,.0f} ms (goal ≤ 1 s; "
        f"{cpu * 1000:,.0f} ms of CPU)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an older checkout's src directory")
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--versions", type=int, default=100_000)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir(), "almanac-bench-data-versions")
    )
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--skip-writes", action="store_true")
    parser.add_argument("--skip-recovery", action="store_true")
    parser.add_argument("--child-writes", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_writes is not None:
        print(json.dumps(write_rate(args.child_writes, args.commits)))
        return
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {platform.platform()}, {os.cpu_count()} cpus, load average {load}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not args.skip_writes:
            bench_writes(root, args.commits, args.before)
        if not args.skip_recovery:
            target, latest = cached_log(args.cache, args.versions)
            bench_recovery(target, latest, root, args.profile)


if __name__ == "__main__":
    main()
