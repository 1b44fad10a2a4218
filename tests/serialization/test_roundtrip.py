"""Every serialized type survives encode → decode, and encoding is deterministic."""

from __future__ import annotations

import datetime as dt
import decimal
import gc
import inspect
import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from immutables import Map

from almanac.errors import SerializationError
from almanac.model import entries as e
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import ConstantDefault
from almanac.serialization import (
    REGISTRY,
    TYPE_IDS,
    decode,
    decode_catalog,
    decode_update,
    encode,
    encode_catalog,
    encode_update,
)

from . import STRATEGIES, column_values, nan_values, snapshots, versioned_updates

_TYPES = sorted(STRATEGIES, key=lambda cls: cls.__name__)


def test_strategies_cover_every_registered_type() -> None:
    assert set(STRATEGIES) == set(REGISTRY.types()) == set(TYPE_IDS)


def test_every_update_entry_class_has_a_type_id() -> None:
    """A new entry class in entries.py must get a pinned id and a serializer."""
    concrete = {
        cls
        for _, cls in inspect.getmembers(e, inspect.isclass)
        if issubclass(cls, e.UpdateEntry)
        and cls is not e.UpdateEntry
        and not cls.__name__.startswith("_")
    }
    assert concrete <= set(TYPE_IDS), concrete - set(TYPE_IDS)


@pytest.mark.parametrize("cls", _TYPES, ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip(cls: type, data: st.DataObject) -> None:
    obj = data.draw(STRATEGIES[cls])
    raw = encode(obj)
    back = decode(raw)
    assert type(back) is cls
    assert back == obj
    assert encode(back) == raw  # determinism: equal objects, equal bytes


@settings(max_examples=300, deadline=None)
@given(value=column_values)
def test_constant_values_round_trip_with_their_type(value: Any) -> None:
    back = decode(encode(ConstantDefault(value)))
    assert isinstance(back, ConstantDefault)
    got: Any = back.value
    assert type(got) is type(value)
    assert got == value
    if isinstance(value, dt.time | dt.datetime):
        assert got.utcoffset() == value.utcoffset()
    if isinstance(value, decimal.Decimal):
        assert got.as_tuple() == value.as_tuple()


@settings(max_examples=200, deadline=None)
@given(value=nan_values)
def test_nan_payloads_are_kept_bit_for_bit(value: float | decimal.Decimal) -> None:
    back = decode(encode(ConstantDefault(value)))
    assert isinstance(back, ConstantDefault)
    if isinstance(value, float):
        assert struct.pack(">d", back.value) == struct.pack(">d", value)
    else:
        assert back.value.as_tuple() == value.as_tuple()
        assert back.value.is_snan() == value.is_snan()


@pytest.mark.parametrize("value", [0.0, -0.0, math.inf, -math.inf, 5e-324, 1.7976931348623157e308])
def test_special_floats_are_exact(value: float) -> None:
    back = decode(encode(ConstantDefault(value)))
    assert isinstance(back, ConstantDefault)
    assert struct.pack(">d", back.value) == struct.pack(">d", value)


@pytest.mark.parametrize("value", [2**64, -(2**64) - 1, 10**400, -(10**400), 2**63 - 1, -(2**63)])
def test_big_integers(value: int) -> None:
    assert decode(encode(ConstantDefault(value))) == ConstantDefault(value)


def test_offset_is_kept_rather_than_normalised_to_utc() -> None:
    plus_one = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    back = decode(encode(ConstantDefault(plus_one)))
    assert isinstance(back, ConstantDefault)
    assert back.value.utcoffset() == dt.timedelta(hours=1)
    assert back.value.hour == 12


@settings(max_examples=40, deadline=None)
@given(update=versioned_updates)
def test_typed_update_helpers(update: e.VersionedUpdate) -> None:
    assert decode_update(encode_update(update)) == update


@settings(max_examples=40, deadline=None)
@given(version=snapshots)
def test_typed_snapshot_helpers(version: CatalogVersion) -> None:
    back = decode_catalog(encode_catalog(version))
    assert back == version
    for field in ("schemas_by_id", "table_names", "table_indexes", "zone_names"):
        assert isinstance(getattr(back, field), Map)


@settings(max_examples=40, deadline=None)
@given(version=snapshots, data=st.data())
def test_map_insertion_order_does_not_change_the_bytes(
    version: CatalogVersion, data: st.DataObject
) -> None:
    """Two nodes that built equal maps in different orders must agree byte for byte."""
    reordered: dict[str, Any] = {}
    for field in ("schemas_by_id", "tables_by_id", "index_names", "zone_names"):
        items = list(getattr(version, field).items())
        reordered[field] = Map(data.draw(st.permutations(items)))
    other = version.evolve(**reordered)
    assert other == version
    assert encode_catalog(other) == encode_catalog(version)


def test_table_indexes_keep_their_order() -> None:
    snap = CatalogVersion.empty().evolve(table_indexes=Map({5: (9, 3, 7)}))
    assert decode_catalog(encode_catalog(snap)).table_indexes[5] == (9, 3, 7)


def test_decode_accepts_any_bytes_like_object() -> None:
    raw = encode(ConstantDefault("x"))
    for data in (bytearray(raw), memoryview(raw), memoryview(b"??" + raw)[2:]):
        assert decode(data) == ConstantDefault("x")


def test_large_decode_leaves_the_garbage_collector_as_it_found_it() -> None:
    """Large decodes pause the cyclic collector; it must come back even on errors."""
    snap = CatalogVersion.empty().evolve(zone_names=Map({f"Z{i:06d}": i for i in range(20_000)}))
    raw = encode_catalog(snap)
    assert len(raw) > 64 * 1024
    assert gc.isenabled()
    assert decode_catalog(raw) == snap
    assert gc.isenabled()
    with pytest.raises(SerializationError):
        decode_catalog(raw[:-1])
    assert gc.isenabled()
    gc.disable()
    try:
        decode_catalog(raw)
        assert not gc.isenabled()
    finally:
        gc.enable()
