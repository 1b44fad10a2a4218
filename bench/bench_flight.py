"""``almanac.tserver.client.read_table`` through 3 real tablet servers, next to
``pyarrow.dataset`` reading the same Parquet files directly, in one run.

The table has ``--partitions`` tablets spread over three ``almanac
tserver`` processes (one replica each, placed as the placement manager
places them: a route and server indexes in one transaction). The floor is
the fastest direct pyarrow read of exactly the files of the table's current
data snapshot: ``pyarrow.dataset.dataset(files).to_table()`` with and
without its thread pool, and ``ParquetFile.read`` file by file;
``almanac.data.read_table`` (the same files read by column id in this
process) is shown too. Every figure is the
median of several interleaved runs; the ratio is what travels between
machines.

Run: ``.venv/bin/python bench/bench_flight.py [--rows 2000000] [--partitions 6]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.tserver.support import TabletServerProcess, place, spread
from tests.waiting import wait_for

import almanac
import timing
from almanac import ColumnDef, ColumnType, CreateTable, CreateZone
from almanac.data import TableData, read_table, write_table
from almanac.placement import TabletState, read_reports
from almanac.tserver.client import read_table as flight_read

REPEATS = 7
SERVERS = ("ts1", "ts2", "ts3")


def _rows(lo: int, hi: int) -> pa.Table:
    ids = pa.array(range(lo, hi), pa.int64())
    return pa.table(
        {
            "ID": ids,
            "V": pa.array([f"value-{i}" for i in range(lo, hi)]),
            "X": pa.array([i * 0.5 for i in range(lo, hi)], pa.float64()),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=6)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, pyarrow {pa.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target = str(root / "catalog")
        cat = almanac.connect(target, delay_ms=0, max_clock_skew_ms=0)
        servers: list[TabletServerProcess] = []
        try:
            cat.execute([CreateZone(name="Z", partitions=args.partitions, replicas=1)])
            columns = (
                ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                ColumnDef(name="V", type=ColumnType.STRING),
                ColumnDef(name="X", type=ColumnType.DOUBLE),
            )
            cat.execute([CreateTable(name="T", columns=columns, primary_key=("ID",), zone="Z")])
            step = max(1, args.rows // 4)
            for lo in range(0, args.rows, step):
                write_table(cat, "T", _rows(lo, min(args.rows, lo + step)))
            table = cat.catalog().table("T")
            assert table is not None
            servers = [TabletServerProcess(target, n, root / n, root / f"{n}.log") for n in SERVERS]
            for server in servers:
                assert server.location
            place(cat.metastore, table.id, spread(args.partitions, SERVERS, 1))

            def running() -> bool:
                reports = read_reports(cat.metastore)
                states = [
                    r.state
                    for report in reports.values()
                    for r in report.tablets
                    if r.table_id == table.id
                ]
                return len(states) == args.partitions and all(
                    s is TabletState.RUNNING for s in states
                )

            wait_for(running, "every tablet running")
            current = TableData.for_catalog(cat).current(table.id)
            assert current is not None
            files = [f.path for f in current.files]
            got = flight_read(cat, "T")
            assert got.num_rows == args.rows, got.num_rows
            runs: dict[str, Callable[[], object]] = {
                "dataset": lambda: ds.dataset(files, format="parquet").to_table(),
                "dataset1": lambda: ds.dataset(files, format="parquet").to_table(use_threads=False),
                "files": lambda: pa.concat_tables([pq.ParquetFile(f).read() for f in files]),
                "local": lambda: read_table(cat, "T"),
                "flight": lambda: flight_read(cat, "T"),
            }
            samples: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(REPEATS):  # interleaved: a burst of load hits all three alike
                for name, fn in runs.items():
                    samples[name].append(timing.median_seconds(fn, 1))
            threads, single, plain, local, through = (statistics.median(samples[n]) for n in runs)
            floor = min(threads, single, plain)
            mb = got.nbytes / 1e6
            print(
                f"{args.rows:,} rows ({mb:.0f} MB in Arrow), {len(files)} files, "
                f"{args.partitions} tablets on {len(SERVERS)} tablet servers"
            )
            print(
                f"  pyarrow, same files (floor): {floor * 1000:8.1f} ms  (pyarrow.dataset "
                f"{threads * 1000:.1f} ms, one thread {single * 1000:.1f} ms; ParquetFile.read "
                f"per file {plain * 1000:.1f} ms)"
            )
            print(
                f"  almanac.data.read_table (in process): {local * 1000:8.1f} ms  "
                f"{local / floor:5.2f}x floor"
            )
            print(
                f"  almanac.tserver.client.read_table (3 servers): {through * 1000:7.1f} ms  "
                f"{through / floor:5.2f}x floor, {mb / through:.0f} MB/s"
            )
        finally:
            for server in servers:
                server.terminate()
            cat.close()


if __name__ == "__main__":
    main()
