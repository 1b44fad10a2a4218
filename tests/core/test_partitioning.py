"""Partition specs and sort orders: set, evolved by Iceberg's rules, kept
across versions, guarding the columns they read."""

from __future__ import annotations

from dataclasses import replace

from almanac import (
    Catalog,
    CatalogError,
    ColumnDef,
    ColumnType,
    CreateTable,
    DropColumns,
    EvolveColumn,
    EvolvePartitionSpec,
    NotFoundError,
    PartitionField,
    PartitionFieldDef,
    PartitionSpec,
    SetPartitionSpec,
    SetSortOrder,
    SortField,
    SortFieldDef,
    SortOrder,
    Table,
    ValidationError,
    preview,
)
from almanac.model.diff import diff_catalogs
from almanac.model.events import Event, EventType
from almanac.model.summary import summarize_update

from .support import ID, apply, col, noop, rejected

TS = col("TS", ColumnType.TIMESTAMP)
S = col("S", ColumnType.STRING)
D = col("D", ColumnType.DATE)
NESTED = ColumnDef(
    name="ADDR",
    type=ColumnType.STRUCT,
    fields=(col("CITY", ColumnType.STRING), col("TAGS", ColumnType.LIST)),
)


def _create(cat: Catalog, *fields: PartitionFieldDef, **kwargs: object) -> Table:
    apply(
        cat,
        CreateTable(
            name="T",
            columns=(ID, TS, S, D, NESTED),
            partitioned_by=fields,
            **kwargs,  # type: ignore[arg-type]
        ),
    )
    table = cat.catalog().table("T")
    assert table is not None
    return table


def _table(cat: Catalog) -> Table:
    table = cat.catalog().table("T")
    assert table is not None
    return table


def _fields(table: Table) -> list[tuple[int, str, str]]:
    return [(f.field_id, f.name, f.transform) for f in table.partition_spec.fields]


def test_create_table_takes_a_spec_with_iceberg_names_and_ids(cat: Catalog) -> None:
    t = _create(
        cat,
        PartitionFieldDef("ID", "bucket[16]"),
        PartitionFieldDef("ts", "days"),
        PartitionFieldDef("S", "truncate[4]", "PREFIX"),
        PartitionFieldDef("D"),
        PartitionFieldDef("addr.city"),
    )
    assert t.default_spec_id == 0 and len(t.partition_specs) == 1
    assert _fields(t) == [
        (1000, "ID_bucket", "bucket[16]"),
        (1001, "TS_day", "day"),
        (1002, "PREFIX", "truncate[4]"),
        (1003, "D", "identity"),
        (1004, "ADDR.CITY", "identity"),
    ]
    assert t.last_partition_id == 1004
    assert t.partition_spec.fields[4].source_id == t.columns[4].fields[0].id
    assert t.sort_order == SortOrder(0) and t.sort_orders == (SortOrder(0),)
    assert not t.bucketed


def test_spec_evolution_adds_specs_and_reuses_ids(cat: Catalog) -> None:
    _create(cat, PartitionFieldDef("TS", "day"))
    apply(cat, EvolvePartitionSpec(name="T", add=(PartitionFieldDef("ID", "bucket[8]"),)))
    t = _table(cat)
    assert t.default_spec_id == 1 and _fields(t) == [
        (1000, "TS_day", "day"),
        (1001, "ID_bucket", "bucket[8]"),
    ]
    # Replace day by hour: a new field id; the old spec stays for old files.
    apply(
        cat,
        EvolvePartitionSpec(
            name="T",
            drop=(PartitionFieldDef("TS", "days"),),
            add=(PartitionFieldDef("TS", "hour"),),
        ),
    )
    t = _table(cat)
    assert t.default_spec_id == 2
    assert _fields(t) == [(1001, "ID_bucket", "bucket[8]"), (1002, "TS_hour", "hour")]
    assert [s.spec_id for s in t.partition_specs] == [0, 1, 2]
    # Back to day: the field keeps its old id, and the identical spec its id.
    apply(
        cat,
        SetPartitionSpec(
            name="T", fields=(PartitionFieldDef("TS", "day"), PartitionFieldDef("ID", "bucket[8]"))
        ),
    )
    t = _table(cat)
    assert t.default_spec_id == 1 and len(t.partition_specs) == 3
    assert t.last_partition_id == 1002
    noop(
        cat,
        SetPartitionSpec(
            name="T", fields=(PartitionFieldDef("ts", "day"), PartitionFieldDef("id", "bucket[8]"))
        ),
    )
    # Dropping by name (in any case); unpartitioned is a spec of its own.
    apply(cat, EvolvePartitionSpec(name="T", drop=("ts_day", "ID_BUCKET")))
    t = _table(cat)
    assert t.default_spec_id == 3 and t.partition_spec == PartitionSpec(3)


def test_a_spec_added_without_default_leaves_the_default(cat: Catalog) -> None:
    _create(cat)
    apply(cat, SetPartitionSpec(name="T", fields=(PartitionFieldDef("D", "year"),), default=False))
    t = _table(cat)
    assert t.default_spec_id == 0 and len(t.partition_specs) == 2
    apply(cat, SetPartitionSpec(name="T", fields=(PartitionFieldDef("D", "years"),)))
    t = _table(cat)
    assert t.default_spec_id == 1 and len(t.partition_specs) == 2


def test_bad_specs_are_refused_naming_table_field_and_rule(cat: Catalog) -> None:
    _create(cat, PartitionFieldDef("TS", "day"))

    def refused(error: type[CatalogError], *fields: PartitionFieldDef, frag: str) -> None:
        rejected(cat, SetPartitionSpec(name="T", fields=fields), error, "PUBLIC.T", frag)

    refused(ValidationError, PartitionFieldDef("S", "day"), frag="day")
    refused(
        ValidationError,
        PartitionFieldDef("TS", "hours"),
        PartitionFieldDef("TS", "day"),
        frag="redundant",
    )
    refused(ValidationError, PartitionFieldDef("ID", "bucket[0]"), frag="width")
    refused(ValidationError, PartitionFieldDef("ID", "squash"), frag="not an Iceberg transform")
    refused(NotFoundError, PartitionFieldDef("NOPE"), frag="NOPE")
    refused(ValidationError, PartitionFieldDef("ADDR"), frag="primitive")
    refused(ValidationError, PartitionFieldDef("ADDR.TAGS.element"), frag="list or map")
    refused(ValidationError, PartitionFieldDef("ID", "bucket[2]", "S"), frag="name of a column")
    refused(
        ValidationError,
        PartitionFieldDef("ID", "bucket[2]", "X"),
        PartitionFieldDef("D", "year", "x"),
        frag="two fields named",
    )
    rejected(
        cat,
        EvolvePartitionSpec(name="T", add=(PartitionFieldDef("TS", "day"),)),
        ValidationError,
        "day of 'TS' next to field 'TS_day'",
    )
    rejected(cat, EvolvePartitionSpec(name="T", drop=("nope",)), NotFoundError, "'nope'", "TS_day")
    rejected(cat, SetPartitionSpec(name="NOPE", fields=()), NotFoundError, "PUBLIC.NOPE")


def test_a_column_the_spec_or_order_reads_cannot_be_dropped(cat: Catalog) -> None:
    _create(cat, PartitionFieldDef("ADDR.CITY", "truncate[2]", "CITY2"))
    error = rejected(
        cat, DropColumns(table="T", columns=("ADDR",)), ValidationError, "'CITY2'", "PUBLIC.T"
    )
    assert error.context["rule"] == "partition-source"
    addr = _table(cat).columns[4]
    rejected(
        cat,
        EvolveColumn(table="T", column="ADDR", new=replace(addr, fields=addr.fields[1:])),
        ValidationError,
        "'CITY2'",
    )
    apply(cat, SetSortOrder(name="T", fields=(SortFieldDef("D", descending=True),)))
    rejected(cat, DropColumns(table="T", columns=("D",)), ValidationError, "sort order", "D DESC")
    apply(cat, EvolvePartitionSpec(name="T", drop=("CITY2",)))
    apply(cat, SetSortOrder(name="T", fields=()))
    apply(cat, DropColumns(table="T", columns=("ADDR", "D")))


def test_sort_orders_get_ids_and_unsorted_is_zero(cat: Catalog) -> None:
    _create(cat)
    apply(
        cat,
        SetSortOrder(
            name="T",
            fields=(
                SortFieldDef("TS", descending=True),
                SortFieldDef("S", "truncate[2]", nulls_first=False),
            ),
        ),
    )
    t = _table(cat)
    order = SortOrder(
        1, (SortField(1, "identity", True, False), SortField(2, "truncate[2]", False, False))
    )
    assert t.sort_order == order and t.default_sort_order_id == 1
    apply(cat, SetSortOrder(name="T", fields=()))
    assert _table(cat).default_sort_order_id == 0
    apply(
        cat,
        SetSortOrder(
            name="T",
            fields=(
                SortFieldDef("ts", descending=True),
                SortFieldDef("s", "truncate[2]", nulls_first=False),
            ),
        ),
    )
    t = _table(cat)
    assert t.default_sort_order_id == 1 and len(t.sort_orders) == 2
    rejected(
        cat, SetSortOrder(name="T", fields=(SortFieldDef("S", "year"),)), ValidationError, "year"
    )
    rejected(
        cat,
        SetSortOrder(name="T", fields=(SortFieldDef("S"), SortFieldDef("s"))),
        ValidationError,
        "twice",
    )


def test_create_table_with_a_sort_order(cat: Catalog) -> None:
    t = _create(cat, ordered_by=(SortFieldDef("ID"),))
    assert t.sort_orders == (SortOrder(0), SortOrder(1, (SortField(0),)))
    assert t.default_sort_order_id == 1


def test_diff_and_preview_show_spec_and_order_changes(cat: Catalog) -> None:
    _create(cat)
    before = cat.catalog()
    planned = preview(
        before,
        [
            EvolvePartitionSpec(name="T", add=(PartitionFieldDef("ID", "bucket[4]", "B"),)),
            SetSortOrder(name="T", fields=(SortFieldDef("ID", descending=True),)),
        ],
    )
    names = [type(e).__name__ for e in planned.entries]
    assert names == [
        "PartitionSpecAdded",
        "DefaultPartitionSpecSet",
        "SortOrderAdded",
        "DefaultSortOrderSet",
    ]
    t = planned.catalog.table("T")
    assert t is not None
    assert t.partition_spec.fields == (PartitionField(0, 1000, "B", "bucket[4]"),)
    diff = diff_catalogs(before, planned.catalog)
    (change,) = diff.changed
    fields = {f.field: (f.before, f.after) for f in change.fields}
    assert fields["partition_spec"] == ((), ("bucket(4, ID) AS B",))
    assert fields["sort_order"] == ((), ("ID DESC NULLS LAST",))
    events: list[Event] = []
    cat.listen(EventType.TABLE_ALTER, events.append)
    result = cat.execute(
        [
            EvolvePartitionSpec(name="T", add=(PartitionFieldDef("ID", "bucket[4]", "B"),)),
            SetSortOrder(name="T", fields=(SortFieldDef("ID", descending=True),)),
        ]
    )
    assert cat.catalog().table("T") == t.evolve(update_version=result.version)
    summary = summarize_update(cat.history()[-1].update, before, cat.catalog())
    assert summary.startswith(
        "added partition spec 1 (bucket(4, ID) AS B) to PUBLIC.T, "
        "made partition spec 1 the default of PUBLIC.T"
    )
    assert len(events) == 4 and {e.type for e in events} == {EventType.TABLE_ALTER}


def test_a_bucketed_tables_hidden_tablet_field_is_neither_repeated_nor_named(
    cat: Catalog,
) -> None:
    apply(
        cat,
        CreateTable(name="B", columns=(ID, TS), primary_key=("ID",), colocation=("ID",)),
    )
    rejected(
        cat,
        EvolvePartitionSpec(name="B", add=(PartitionFieldDef("ID", "bucket[25]"),)),
        ValidationError,
        "next to field 'tablet'",
    )
    rejected(
        cat,
        EvolvePartitionSpec(name="B", add=(PartitionFieldDef("TS", "day", "TABLET"),)),
        ValidationError,
        "two fields named 'TABLET'",
        "holds the tablet",
    )
    apply(cat, EvolvePartitionSpec(name="B", add=(PartitionFieldDef("ID", "bucket[4]"),)))
    table = cat.catalog().table("B")
    assert table is not None and table.bucketed
    assert table.partition_spec.fields == (PartitionField(0, 1001, "ID_bucket", "bucket[4]"),)
