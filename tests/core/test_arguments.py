"""Wrong argument types are a ValidationError where the value is built or the
call is made, naming the parameter, who takes it, what was expected and what
was given; nothing changes."""

from __future__ import annotations

import datetime as dt
import math
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

import almanac
from almanac import (
    AlterZone,
    Catalog,
    CatalogError,
    ColumnDef,
    ColumnType,
    ConstantDefault,
    CreateSchema,
    CreateTable,
    CreateZone,
    DropTable,
    EventType,
    RetentionPolicy,
    SetTableProperties,
    StartBuildingIndex,
    TableProperties,
    ValidationError,
)
from almanac.metastore import MemoryMetastore
from almanac.model.descriptors import Schema
from almanac.model.entries import SchemaCreated, TableDataCommitted
from almanac.node.catalog_types import HookWork
from almanac.node.log import UpdateLog

from .support import col, table


def bad(value: object) -> Any:
    """A value of the wrong type, on purpose (typed ``Any`` for the type checker)."""
    return value


def refused(call: Callable[[], object], *fragments: str) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    return info.value


# --------------------------------------------------------------------------- commands


def test_wrong_name_type_is_refused_when_the_command_is_built() -> None:
    error = refused(
        lambda: DropTable(name=bad({})), "Parameter 'name' of DropTable", "a str", "dict {}"
    )
    assert error.context["expected"] == "a str" and error.context["got"] == "dict"


def test_wrong_node_filter_is_refused_when_built_not_when_serialized() -> None:
    refused(
        lambda: CreateZone(name="Z", node_filter=bad(1)),
        "Parameter 'node_filter' of CreateZone 'Z' must be a str, got int 1",
    )


def test_properties_must_be_table_properties() -> None:
    refused(
        lambda: CreateTable(name="T", columns=(), primary_key=(), properties=bad(b"x")),
        "Parameter 'properties' of CreateTable 'T' must be a TableProperties, got bytes b'x'",
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda: CreateZone(name="Z", scale_up_seconds=2**64),
        lambda: CreateZone(name="Z", partitions=-(2**63) - 1),
        lambda: AlterZone(name="Z", replicas=2**70),
        lambda: SetTableProperties(name="T", min_stale_rows=2**63),
        lambda: TableProperties(0.5, 2**63),
        lambda: StartBuildingIndex(2**64),
        lambda: ColumnDef(name="C", type=ColumnType.STRING, length=2**64),
    ],
)
def test_ints_beyond_64_bits_are_refused_when_built(build: Callable[[], object]) -> None:
    refused(build, "signed 64-bit range")


def test_bool_is_not_an_int() -> None:
    refused(lambda: CreateZone(name="Z", partitions=bad(True)), "must be an int, got bool True")
    refused(lambda: StartBuildingIndex(bad(False)), "'index_id' of StartBuildingIndex")


def test_sequences_are_stored_as_tuples_and_items_are_checked() -> None:
    cmd = CreateTable(name="T", columns=bad([col("ID", nullable=False)]), primary_key=bad(["ID"]))
    assert isinstance(cmd.columns, tuple) and cmd.primary_key == ("ID",)
    assert hash(cmd) == hash(CreateTable(name="T", columns=cmd.columns, primary_key=("ID",)))
    refused(
        lambda: CreateTable(name="T", columns=(col("ID"),), primary_key=bad("ID")),
        "Parameter 'primary_key' of CreateTable 'T' must be a list or tuple, got str 'ID'",
    )
    refused(
        lambda: CreateTable(name="T", columns=bad(("ID",)), primary_key=("ID",)),
        "Item 0 of parameter 'columns' of CreateTable 'T' must be a ColumnDef, got str 'ID'",
    )
    refused(lambda: CreateTable(name="T", columns=bad({col("ID")}), primary_key=("ID",)))


def test_strings_are_valid_unicode_without_nul() -> None:
    refused(lambda: CreateSchema("A\x00B"), "without NUL characters")
    refused(lambda: CreateSchema("\udcff"), "valid Unicode text")


def test_constant_defaults_hold_only_column_values() -> None:
    refused(lambda: ConstantDefault(bad([1, 2])), "Parameter 'value' of ConstantDefault")
    refused(lambda: ConstantDefault("\udcff"), "valid Unicode")
    zoned = dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert ConstantDefault(zoned).value == zoned


def test_a_refused_command_changes_nothing(cat: Catalog) -> None:
    before = cat.catalog()
    with pytest.raises(ValidationError):
        cat.execute([CreateSchema("A"), CreateZone(name="Z", node_filter=bad(1))])
    assert cat.catalog() is before


# --------------------------------------------------------------------------- Catalog


@pytest.mark.parametrize("version", ["2", 1.5, True, None.__class__, math.nan, 2**64])
def test_catalog_version_must_be_an_int(cat: Catalog, version: Any) -> None:
    refused(lambda: cat.catalog(version), "Parameter 'version' of Catalog.catalog")


@pytest.mark.parametrize(
    "timestamp",
    [None, "2020", dt.date(2020, 1, 1), math.nan, 1.5, True, 2**64],
)
def test_catalog_at_refuses_what_is_not_a_timestamp(cat: Catalog, timestamp: Any) -> None:
    refused(lambda: cat.catalog_at(timestamp), "Parameter 'timestamp' of Catalog.catalog_at")


@pytest.mark.parametrize("moment", [dt.datetime.min, dt.datetime(2020, 1, 1), dt.datetime.now()])
def test_naive_datetimes_are_refused(cat: Catalog, moment: dt.datetime) -> None:
    refused(lambda: cat.catalog_at(moment), "naive datetimes are refused")
    refused(lambda: cat.wait_for_metadata_completeness(moment, timeout=0), "naive")


@pytest.mark.parametrize(
    "moment",
    [
        dt.datetime.max.replace(tzinfo=dt.UTC),
        dt.datetime.min.replace(tzinfo=dt.UTC),
        dt.datetime.min.replace(tzinfo=dt.timezone(dt.timedelta(hours=5))),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
    ],
)
def test_datetimes_outside_the_clock_are_refused(cat: Catalog, moment: dt.datetime) -> None:
    refused(lambda: cat.catalog_at(moment), "the hybrid clock's range")


class _RaisingZone(dt.tzinfo):
    def dst(self, moment: dt.datetime | None) -> None:
        return None

    def tzname(self, moment: dt.datetime | None) -> None:
        return None

    def utcoffset(self, moment: dt.datetime | None) -> dt.timedelta:
        raise RuntimeError("no offset here")


class _DayLongZone(dt.tzinfo):
    def dst(self, moment: dt.datetime | None) -> None:
        return None

    def tzname(self, moment: dt.datetime | None) -> None:
        return None

    def utcoffset(self, moment: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(hours=30)  # beyond what datetime accepts


@pytest.mark.parametrize("zone", [_RaisingZone(), _DayLongZone()], ids=["raises", "too-long"])
def test_a_tzinfo_that_cannot_give_its_offset_is_refused(cat: Catalog, zone: dt.tzinfo) -> None:
    moment = dt.datetime(2020, 1, 1, tzinfo=zone)
    refused(lambda: cat.catalog_at(moment), "tzinfo gives its offset")
    refused(lambda: cat.wait_for_metadata_completeness(moment, timeout=0), "tzinfo")


def test_aware_datetimes_in_any_offset_are_instants(cat: Catalog) -> None:
    cat.execute([CreateSchema("A")])
    later = dt.datetime.now(dt.timezone(dt.timedelta(hours=-7))) + dt.timedelta(seconds=1)
    assert cat.catalog_at(later).version == cat.latest_version
    assert cat.catalog_at(dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).version == 0


def test_other_entry_points_check_their_arguments(cat: Catalog) -> None:
    refused(lambda: cat.history(bad("x")), "Parameter 'since' of Catalog.history")
    refused(lambda: cat.execute(bad(None)), "Parameter 'commands' of Catalog.execute")
    refused(lambda: cat.execute(bad([1])), "Item 0 of parameter 'commands' of Catalog.execute")
    refused(lambda: cat.execute(bad(CreateSchema("A"))), "wrap a single command in a list")
    refused(lambda: cat.execute_async(bad([None])), "Catalog.execute_async")
    refused(lambda: cat.sql(bad(b"CREATE SCHEMA A")), "Parameter 'text' of Catalog.sql")
    refused(lambda: cat.catalog_ready(bad("1")), "Catalog.catalog_ready")
    # No version is numbered below 0: it is not "ready", it does not exist.
    refused(lambda: cat.catalog_ready(-1), "Parameter 'version' of Catalog.catalog_ready")
    refused(lambda: cat.catalog_ready(1, timeout=-1), "'timeout'")
    refused(lambda: cat.catalog_ready(1, timeout=math.nan), "'timeout'")
    refused(lambda: cat.checkpoint_log(bad(1.0)), "Catalog.checkpoint_log")
    refused(lambda: cat.listen(bad("TABLE_CREATE"), print), "must be a EventType")
    refused(lambda: cat.listen(EventType.TABLE_CREATE, bad(5)), "must be callable")
    refused(lambda: cat.pin(bad("1")).__enter__(), "Parameter 'version' of Catalog.pin")
    refused(lambda: cat.execute([], attach=bad(1)), "Parameter 'attach'")
    assert cat.latest_version == 1


def test_pin_of_a_missing_version_is_refused_before_pinning(cat: Catalog) -> None:
    with pytest.raises(almanac.VersionNotFoundError), cat.pin(99):
        pass
    assert cat.oldest_pinned()[0] is None


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "10", True])
def test_a_node_refuses_a_pin_lease_ttl_that_is_not_a_positive_number(bad: Any) -> None:
    with MemoryMetastore() as store:
        refused(
            lambda: Catalog(UpdateLog(store, owns_store=False), pin_ttl_s=bad),
            "Parameter 'pin_ttl_s' of Catalog",
        )


# --------------------------------------------------------------------------- found by the fuzzer


def test_a_set_of_commands_has_no_order_and_is_refused(cat: Catalog) -> None:
    refused(lambda: cat.execute(bad({CreateSchema("A")})), "a set has none")
    refused(lambda: cat.execute(bad(frozenset())), "a set has none")
    assert cat.execute(c for c in [CreateSchema("A")]).version == 2  # any ordered iterable


def test_a_timeout_longer_than_the_platform_waits_means_no_limit(cat: Catalog) -> None:
    assert cat.catalog_ready(1, timeout=1e308)
    closer = threading.Timer(0.2, cat.close)
    closer.start()
    try:
        # Waits (no limit) until the catalog closes; was OverflowError from threading.
        with pytest.raises(CatalogError, match="closed"):
            cat.catalog_ready(99, timeout=1e308)
    finally:
        closer.join()


def test_janitor_period_must_fit_the_platform() -> None:
    refused(
        lambda: almanac.connect("memory://", warehouse="/tmp/w", janitor_interval_s=1e308),
        "Parameter 'janitor_interval_s' of connect",
    )


def test_what_attach_returns_is_checked(cat: Catalog) -> None:
    refused(
        lambda: cat.execute([CreateSchema("A")], attach=bad(lambda base, new: None)),
        "a HookWork, (compares, ops) or (compares, ops, entries)",
    )
    refused(
        lambda: cat.execute([CreateSchema("A")], attach=bad(lambda base, new: ([1], []))),
        "must be a Compare",
    )
    refused(
        lambda: cat.execute(
            [], attach=bad(lambda base, new: ([], [], [SchemaCreated(Schema(9, "B", 9))]))
        ),
        "must be a TableDataCommitted",
    )
    assert cat.latest_version == 1


def test_a_data_commit_on_a_catalog_without_a_data_plane_is_refused() -> None:
    """No warehouse, so nothing can publish a data snapshot: an attached
    entry would pin one no reader can find."""
    with almanac.connect("memory://") as cat:
        cat.execute(
            [CreateTable(name="T", columns=(col("ID", nullable=False),), primary_key=("ID",))]
        )
        before = cat.latest_version
        made = cat.catalog().table("T")
        assert made is not None
        entry = TableDataCommitted(made.id, 1, "append", "m.metadata.json")
        refused(
            lambda: cat.execute([], attach=lambda base, new: HookWork(entries=(entry,))),
            f"table id {made.id} names data snapshot 1",
            "no data plane",
        )
        assert cat.latest_version == before
        assert cat.catalog().data_snapshot(made.id) is None


# --------------------------------------------------------------------------- connect and policies


def test_connect_checks_its_settings() -> None:
    refused(
        lambda: almanac.connect("memory://", retention=bad(5)),
        "Parameter 'retention' of connect must be a RetentionPolicy, got int 5",
    )
    refused(lambda: almanac.connect("memory://", delay_ms=bad(1.5)), "'delay_ms' of connect")
    refused(lambda: almanac.connect("memory://", max_clock_skew_ms=-1), "max_clock_skew_ms")
    refused(lambda: almanac.connect("memory://", warehouse=bad(1)), "'warehouse' of connect")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"keep_seconds": math.nan}, "'keep_seconds' of RetentionPolicy must be a finite number"),
        ({"keep_seconds": math.inf}, "finite"),
        ({"keep_seconds": 2**1100}, "finite"),
        ({"keep_versions": 1.5}, "'keep_versions' of RetentionPolicy must be an int"),
        ({"keep_versions": True}, "got bool True"),
        ({"keep_versions": 0}, "at least 1"),
        ({"keep_versions": 2, "check_every": 0}, "check_every"),
        ({}, "keep_versions or keep_seconds"),
    ],
)
def test_retention_policy_is_checked_when_built(kwargs: dict[str, Any], fragment: str) -> None:
    refused(lambda: RetentionPolicy(**kwargs), fragment)


def test_messages_read_like_the_rule_errors() -> None:
    error = refused(lambda: ColumnDef(name="C", type=bad("INT")))
    assert re.fullmatch(
        r"Parameter 'type' of ColumnDef 'C' must be a ColumnType \(.*\), got str 'INT'",
        str(error),
    )
    long = refused(lambda: DropTable(name=bad(list(range(100)))))
    assert len(str(long)) < 150


def test_hybrid_clock_constants_agree() -> None:
    from almanac import _check
    from almanac.model import clock

    assert _check._LOGICAL_BITS == clock.LOGICAL_BITS


def test_a_valid_table_still_builds_and_executes(cat: Catalog) -> None:
    result = cat.execute([table("T", col("A"))])
    assert result.version == 2
