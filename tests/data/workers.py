"""Code that the data tests run in spawned processes (importable by name)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pyarrow as pa

from almanac import Table
from almanac.data import tablets_of, write_table
from tests.data.support import connect, own_files, rows


def append_many(target: str, table: str, tag: int, count: int, gate: str) -> list[str]:
    """Commit ``count`` one-row appends from this process once every worker is
    ready (``<gate>/go`` exists); the files each commit added."""
    added: list[str] = []
    with connect(target) as cat:
        Path(gate, f"ready-{tag}").touch()
        while not Path(gate, "go").exists():
            time.sleep(0.005)
        for i in range(count):
            snapshot = write_table(cat, table, rows([tag * 10_000 + i]))
            added.extend(own_files(snapshot))
    return added


def tablets(table: Table, data: pa.Table, partitions: int) -> list[int]:
    """The tablets of ``data``'s rows in ``table``, computed in this process."""
    return [int(t) for t in tablets_of(data, table, partitions)]


def clean_until(target: str, table_name: str, gate: str, expire: bool) -> int:
    """Run the janitor with no grace (and, with ``expire``, expire every old
    data snapshot) in a loop until ``<gate>/stop`` exists; the runs made."""
    from almanac.data import expire_data, run_janitor

    runs = 0
    with connect(target) as cat:
        Path(gate, "ready-cleaner").touch()
        while not Path(gate, "stop").exists():
            report = run_janitor(cat, grace_s=0)
            assert not report.errors, report.errors
            if expire:
                expire_data(cat, table_name, older_than=cat.clock.now())
            runs += 1
    return runs


def retain_and_clean_until(target: str, gate: str, keep: int) -> int:
    """Keep only the last ``keep`` catalog versions (no pin passed) and run
    the janitor with no grace, in a loop until ``<gate>/stop`` exists; the
    runs made."""
    from almanac import RetentionPolicy
    from almanac.data import run_janitor

    runs = 0
    with connect(target) as cat:
        cat.retention = RetentionPolicy(keep_versions=keep)
        Path(gate, "ready-cleaner").touch()
        while not Path(gate, "stop").exists():
            cat.apply_retention()
            report = run_janitor(cat, grace_s=0)
            assert not report.errors, report.errors
            runs += 1
    return runs


def commit_and_hang_at(
    target: str,
    warehouse: str | None,
    table_name: str,
    gate: str,
    point: str,
    ttl_s: float = 3.0,
) -> None:
    """Commit one row (id 777) as ``write_table`` does and hang, reporting the
    files written on ``<gate>/written``, at ``point``: ``"attach"`` (inside the
    catalog commit, its metadata written, before the metastore transaction)
    or ``"published"`` (the transaction committed, before this node applied
    the version or the write released its lease). ``warehouse`` None: the
    catalog's own; ``ttl_s``: the write's staging lease."""
    import almanac
    from almanac.data import CommitShape, TableData, conform, new_write_id, write_files
    from almanac.model.catalog_version import CatalogVersion
    from almanac.node.catalog_types import HookWork

    def report_and_hang(written: list[str]) -> NoReturn:
        Path(gate, "written.tmp").write_text("\n".join(written))
        Path(gate, "written.tmp").rename(Path(gate, "written"))
        while True:
            time.sleep(1)

    opened = (
        connect(target)
        if warehouse is None
        else almanac.connect(target, warehouse=warehouse, delay_ms=0)
    )
    with opened as cat:
        data = TableData.for_catalog(cat)
        version = cat.catalog()
        table = version.table(table_name)
        assert table is not None
        write_id = new_write_id()
        write_dir = data.warehouse.write_dir(table.id, write_id)
        data.staging.stage(write_id, write_dir, ttl_s=ttl_s)
        shape = CommitShape.of(version, table)
        files = write_files(
            data.warehouse, table, shape.partitions, conform(rows([777]), table), write_dir
        )

        def attach(_base: CatalogVersion, new: CatalogVersion) -> HookWork:
            parent = data.current_record(table.id)
            work, snapshot = data.commit_ops(
                shape, write_id, files, operation="append", parent=parent, at=new
            )
            written = [snapshot.metadata, *(f.path for f in files)]
            if point == "attach":
                report_and_hang(written)

            def finish(ok: bool) -> None:
                assert ok
                report_and_hang(written)

            return dataclasses.replace(work, finish=finish)

        cat.execute([], attach=attach)


APPENDED = [0, *(tag * 10_000 + i for tag in (1, 2) for i in range(15))]
"""The rows of a table holding row 0 once ``appenders_beside`` ran."""


def appenders_beside(
    target: str, gate: Path, cleaner: Callable[..., int], args: tuple[object, ...], guard_s: float
) -> int:
    """Run two processes appending 15 rows each to table ``T`` (``append_many``)
    beside a third running ``cleaner(*args)`` until ``<gate>/stop``, all
    started together on ``<gate>/go``; the cleaner's count of runs."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        cleaning = pool.apply_async(cleaner, args)
        appending = pool.starmap_async(
            append_many, [(target, "T", tag, 15, str(gate)) for tag in (1, 2)]
        )
        deadline = time.monotonic() + guard_s
        while len(list(gate.glob("ready-*"))) < 3:
            assert time.monotonic() < deadline, "the workers never started"
            assert not cleaning.ready() and not appending.ready()
            time.sleep(0.01)
        (gate / "go").touch()
        appending.get(timeout=guard_s)
        (gate / "stop").touch()
        return int(cleaning.get(timeout=guard_s))
