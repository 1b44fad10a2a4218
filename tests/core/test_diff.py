"""``Catalog.diff`` and ``almanac.model.diff``: objects matched by id, fields from
and to, in either direction, and a JSON form that reads back equal."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac
from almanac import (
    Catalog,
    CatalogDiff,
    CatalogError,
    CatalogVersion,
    Command,
    FieldChange,
    ObjectChange,
    ObjectRef,
    ValidationError,
    VersionNotFoundError,
)
from almanac.model.diff import diff_catalogs
from almanac.serialization import decode_catalog, encode_catalog
from almanac.sql.reads import diff_rows

from .test_properties import commands

SETUP = (
    "CREATE SCHEMA S1; CREATE TABLE T1 (ID INT64 PRIMARY KEY, A INT16, B STRING);"
    "CREATE INDEX I1 ON T1 (A); CREATE ZONE Z1"
)


def test_a_rename_is_a_changed_name_of_the_same_object(cat: Catalog) -> None:
    before = cat.sql("CREATE TABLE T (ID INT PRIMARY KEY, A VARCHAR(3) DEFAULT 'x')").version
    after = cat.sql(
        "ALTER TABLE T RENAME TO U; ALTER TABLE U ADD COLUMN B INT;"
        "ALTER TABLE U ALTER COLUMN A SET DEFAULT 'y'"
    ).version
    table = cat.catalog(after).table("U")
    assert table is not None
    d = cat.diff(before, after)
    assert (d.before, d.after) == (before, after)
    assert d.added == (ObjectRef("column", 2, "PUBLIC.U.B"),)
    assert d.removed == ()
    assert table.primary_key_index_id is not None
    assert d.changed == (
        ObjectChange(
            "table",
            table.id,
            "PUBLIC.U",
            (FieldChange("name", "T", "U"), FieldChange("table_version", 1, 3)),
        ),
        ObjectChange("column", 1, "PUBLIC.U.A", (FieldChange("default", "'x'", "'y'"),)),
        ObjectChange(
            "index",
            table.primary_key_index_id,
            "PUBLIC.U_PK",
            (FieldChange("name", "T_PK", "U_PK"),),
        ),
    )


def test_a_dropped_and_recreated_table_is_two_objects(cat: Catalog) -> None:
    first = cat.sql("CREATE TABLE T (ID INT PRIMARY KEY)").version
    old = cat.catalog().table("T")
    last = cat.sql("DROP TABLE T; CREATE TABLE T (ID INT PRIMARY KEY)").version
    new = cat.catalog().table("T")
    assert old is not None and new is not None and old.id != new.id
    d = cat.diff(first, last)
    assert d.changed == ()
    assert [(r.kind, r.name) for r in d.added] == [
        ("table", "PUBLIC.T"),
        ("column", "PUBLIC.T.ID"),
        ("index", "PUBLIC.T_PK"),
    ]
    assert [r.id for r in d.added if r.kind == "table"] == [new.id]
    assert [r.id for r in d.removed if r.kind == "table"] == [old.id]


def test_zones_show_the_default_flag_and_lists(cat: Catalog) -> None:
    before = cat.sql("CREATE ZONE Z WITH (STORAGE_PROFILES='a,b')").version
    after = cat.sql("ALTER ZONE Z SET (REPLICAS=3, STORAGE_PROFILES='c'); ALTER ZONE Z SET DEFAULT")
    (change,) = cat.diff(before, after.version).changed
    fields = {f.field: (f.before, f.after) for f in change.fields}
    assert fields["storage_profiles"] == (("a", "b"), ("c",))
    assert fields["default"] == (False, True)
    assert fields["replicas"][1] == 3
    assert json.loads(json.dumps(cat.diff(before, after.version).to_json()))["changed"][0][
        "fields"
    ][list(fields).index("storage_profiles")]["before"] == ["a", "b"]


def test_moving_the_default_changes_both_zones(cat: Catalog) -> None:
    first = cat.sql("CREATE ZONE A; CREATE ZONE B; ALTER ZONE A SET DEFAULT").version
    second = cat.sql("ALTER ZONE B SET DEFAULT").version
    d = cat.diff(first, second)
    assert [(c.name, c.fields) for c in d.changed] == [
        ("A", (FieldChange("default", True, False),)),
        ("B", (FieldChange("default", False, True),)),
    ]
    assert d.added == d.removed == ()


def test_a_later_first_version_gives_the_inverse_diff(cat: Catalog) -> None:
    one = cat.latest_version
    two = cat.sql("CREATE SCHEMA S").version
    forward, backward = cat.diff(one, two), cat.diff(two, one)
    assert forward.added == backward.removed == (ObjectRef("schema", forward.added[0].id, "S"),)
    assert forward.removed == backward.added == ()
    assert (backward.before, backward.after) == (two, one)
    assert cat.diff(two, two).is_empty


def test_versions_that_do_not_exist_or_were_truncated_are_refused(cat: Catalog) -> None:
    for _ in range(3):
        cat.sql(f"CREATE SCHEMA S{cat.latest_version}")
    cat.checkpoint_log(3)
    with pytest.raises(VersionNotFoundError, match="Catalog version 2 is no longer available"):
        cat.diff(2, 4)
    with pytest.raises(VersionNotFoundError, match="Catalog version 9 does not exist"):
        cat.diff(3, 9)
    with pytest.raises(ValidationError, match=r"Parameter 'v1' of Catalog\.diff"):
        cat.diff("3", 4)  # type: ignore[arg-type]
    assert cat.diff(3, 4).added[0].name == "S3"


def test_diff_catalogs_refuses_other_values() -> None:
    with pytest.raises(ValidationError, match="two CatalogVersion values"):
        diff_catalogs(CatalogVersion.empty(), 3)  # type: ignore[arg-type]


# -- properties over random command sequences ---------------------------------------


def _bare(version: CatalogVersion) -> tuple[Any, ...]:
    """The catalog's objects without the bookkeeping fields a diff leaves out."""

    def strip(obj: Any, *names: str) -> Any:
        return dataclasses.replace(obj, **{n: 0 for n in names})

    return (
        {i: strip(s, "update_version") for i, s in version.schemas_by_id.items()},
        {i: strip(z, "update_version") for i, z in version.zones_by_id.items()},
        {
            i: strip(t, "update_version", "created_version", "next_column_id")
            for i, t in version.tables_by_id.items()
        },
        {
            i: strip(x, "update_version", "created_version")
            for i, x in version.indexes_by_id.items()
        },
        version.default_zone_id,
    )


def _versions(batch: list[Command]) -> list[CatalogVersion]:
    with almanac.connect("memory://") as cat:
        cat.sql(SETUP)
        for command in batch:
            with contextlib.suppress(CatalogError):
                cat.execute([command])
        return [cat.catalog(v) for v in range(1, cat.latest_version + 1)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(commands, min_size=1, max_size=20), data=st.data())
def test_diff_properties_over_random_histories(batch: list[Command], data: st.DataObject) -> None:
    versions = _versions(batch)
    for _ in range(6):
        a = data.draw(st.sampled_from(versions))
        b = data.draw(st.sampled_from(versions))
        d = diff_catalogs(a, b)
        assert d.is_empty == (_bare(a) == _bare(b))
        # A copy shares no descriptor with b: the shortcut for shared ones
        # must not change the answer.
        assert diff_catalogs(decode_catalog(encode_catalog(a)), b) == d
        back = diff_catalogs(b, a)
        assert back.added == d.removed and back.removed == d.added
        assert [(c.kind, c.id) for c in back.changed] == [(c.kind, c.id) for c in d.changed]
        for there, here in zip(d.changed, back.changed, strict=True):
            assert here.fields == tuple(
                FieldChange(f.field, f.after, f.before) for f in there.fields
            )
        shown = [(r[3], r[4], r[5]) for r in diff_rows(d) if r[0] == "changed"]
        fields = [f for c in d.changed for f in c.fields]
        assert [(f, json.loads(str(b)), json.loads(str(a))) for f, b, a in shown] == [
            (f.field, _listed(f.before), _listed(f.after)) for f in fields
        ]
        text = json.dumps(d.to_json(), allow_nan=False)
        assert CatalogDiff.from_json(json.loads(text)) == d
        assert CatalogDiff.from_json(d.to_json()) == d
        ids_a = {*a.schemas_by_id, *a.zones_by_id, *a.tables_by_id, *a.indexes_by_id}
        ids_b = {*b.schemas_by_id, *b.zones_by_id, *b.tables_by_id, *b.indexes_by_id}
        whole = [r for r in d.added if r.kind != "column"]
        assert {r.id for r in whole} == ids_b - ids_a
        assert {r.id for r in d.removed if r.kind != "column"} == ids_a - ids_b


def _listed(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["before", "after", "added", "removed", "changed", "kind", "id"])
            | st.sampled_from(["name", "fields", "field"]),
            inner,
            max_size=7,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(data=JSON)
def test_from_json_reads_a_diff_or_raises_validation_error(data: object) -> None:
    try:
        d = CatalogDiff.from_json(data)
    except ValidationError as exc:
        assert "catalog diff" in exc.message
        return
    assert CatalogDiff.from_json(d.to_json()) == d


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "A catalog diff must be a JSON object, not list"),
        ({"before": 1}, "A catalog diff must have exactly the keys before, after"),
        (
            {"before": 1, "after": True, "added": [], "removed": [], "changed": []},
            "'after' of a catalog diff must be a 64-bit integer, not bool",
        ),
        (
            {
                "before": 1,
                "after": 2,
                "added": [{"kind": "view", "id": 1, "name": "V"}],
                "removed": [],
                "changed": [],
            },
            "'kind' of item 0 of 'added' of a catalog diff must be one of schema, zone",
        ),
        (
            {
                "before": 1,
                "after": 2,
                "added": [],
                "removed": [],
                "changed": [
                    {
                        "kind": "zone",
                        "id": 1,
                        "name": "Z",
                        "fields": [{"field": "x", "before": {}, "after": 1}],
                    }
                ],
            },
            "'before' of field change 0 of item 0 of 'changed' of a catalog diff must be a JSON",
        ),
    ],
)
def test_from_json_names_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CatalogDiff.from_json(data)
    assert caught.value.message.startswith(message), caught.value.message


def test_added_and_removed_objects_carry_their_definition(cat: Catalog) -> None:
    before = cat.latest_version
    after = cat.sql(
        "CREATE TABLE T (ID INT64 PRIMARY KEY, NOTE VARCHAR(16) NOT NULL DEFAULT 'n');"
        "CREATE UNIQUE INDEX BY_NOTE ON T (NOTE DESC, ID)"
    ).version
    d = cat.diff(before, after)
    shown = {r.name: r.definition for r in d.added}
    assert shown["PUBLIC.T.NOTE"] == "STRING(16) NOT NULL DEFAULT 'n'"
    assert shown["PUBLIC.T"].startswith("2 columns, primary key (ID) HASH, zone ")
    assert shown["PUBLIC.BY_NOTE"] == "unique SORTED on PUBLIC.T (NOTE DESC, ID ASC), AVAILABLE"
    back = cat.diff(after, before)
    assert {r.name: r.definition for r in back.removed} == shown
    # The JSON form carries it; a diff from a server without it still reads.
    data = d.to_json()
    assert data["added"][0]["definition"] == d.added[0].definition
    for ref in data["added"]:
        del ref["definition"]
    assert [r.definition for r in CatalogDiff.from_json(data).added] == [""] * len(d.added)


def test_values_read_as_text() -> None:
    from almanac.model.diff import value_text

    shown = [value_text(v) for v in (None, True, 7, 0.5, "T", "", ("A", "B"), ())]
    assert shown == ["none", "true", "7", "0.5", "T", "''", "A, B", "(empty)"]
