"""A model test: any sequence of appends, overwrites, ALTERs, expiries and
janitor runs leaves a table whose rows (read by Almanac, and by pyiceberg
alone) are exactly the model's, and every earlier version still reads as it
did when it was current, unless expired."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

import almanac
from almanac import AddColumns, AlterColumn, ColumnDef, ColumnType, SnapshotExpiredError
from almanac.data import TableData, expire_data, read_table, run_janitor, write_table
from tests.data.support import create

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 40)),
        st.tuples(st.just("overwrite"), st.integers(0, 20)),
        st.tuples(st.just("add"), st.just(0)),
        st.tuples(st.just("widen"), st.just(0)),
        st.tuples(st.just("expire"), st.just(0)),
        st.tuples(st.just("janitor"), st.just(0)),
    ),
    max_size=10,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_any_history_reads_as_the_model(ops: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cat = almanac.connect("memory://", warehouse=str(Path(tmp) / "lake"))
        try:
            table = create(
                cat,
                columns=[
                    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                    ColumnDef(name="N", type=ColumnType.INT32),
                ],
            )
            data = TableData.for_catalog(cat)
            model: list[int] = []
            seen: dict[int, list[int]] = {}  # catalog version -> rows then
            next_id = 0
            widened = False
            added = 0
            for op, size in ops:
                if op in ("append", "overwrite"):
                    ids = list(range(next_id, next_id + size))
                    next_id += size
                    n = pa.array([i % 1000 for i in ids], pa.int64() if widened else pa.int32())
                    write_table(cat, "T", pa.table({"ID": ids, "N": n}), operation=op)
                    model = ids if op == "overwrite" else model + ids
                elif op == "add":
                    added += 1
                    column = ColumnDef(name=f"X{added}", type=ColumnType.INT8)
                    cat.execute([AddColumns(table="T", columns=(column,))])
                elif op == "widen" and not widened:
                    widened = True
                    cat.execute([AlterColumn(table="T", column="N", type=ColumnType.INT64)])
                elif op == "expire":
                    expire_data(cat, "T", older_than=cat.clock.now())
                    seen.clear()
                elif op == "janitor":
                    run_janitor(cat, grace_s=0)
                seen[cat.latest_version] = sorted(model)
                assert sorted(read_table(cat, "T").column("ID").to_pylist()) == sorted(model)
                location = data.metadata_location(table.id)
                if location is not None:
                    theirs = StaticTable.from_metadata(location).scan().to_arrow()
                    assert sorted(theirs.column("ID").to_pylist()) == sorted(model)
            for version, rows in seen.items():
                try:
                    got = read_table(cat, "T", version=version).column("ID").to_pylist()
                except SnapshotExpiredError:
                    continue
                assert sorted(got) == rows, version
        finally:
            cat.close()
