"""Registry rules (contiguous versions, no duplicates, pinned ids) and version dispatch.

Evolution is shown on a test-only type rather than on a real descriptor:
every real type is still at version 1, and inventing a field in a descriptor
just to have a version 2 would put a fake field into the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from almanac.errors import SerializationError
from almanac.serialization import REGISTRY, TYPE_IDS, RegistrationError, Registry, SerializerInfo
from almanac.serialization.io import Reader, Writer
from almanac.serialization.registry import RETIRED_TYPE_IDS, TEST_TYPE_IDS


@dataclass(frozen=True)
class Point:
    x: int
    y: int
    label: str = ""


@dataclass(frozen=True)
class Other:
    value: int


_POINT_ID = TEST_TYPE_IDS[1]
_OTHER_ID = TEST_TYPE_IDS[2]


def _write_point_v1(w: Writer, p: Point) -> None:
    w.svarint(p.x)
    w.svarint(p.y)


def _read_point_v1(r: Reader) -> Point:
    """v1 had no label: reading it today yields the label's default."""
    return Point(r.svarint(), r.svarint())


def _write_point_v2(w: Writer, p: Point) -> None:
    _write_point_v1(w, p)
    w.string(p.label)


def _read_point_v2(r: Reader) -> Point:
    return Point(r.svarint(), r.svarint(), r.string())


V1 = SerializerInfo(Point, 1, "0.1.0", _read_point_v1, _write_point_v1)
V1_READ_ONLY = SerializerInfo(Point, 1, "0.1.0", _read_point_v1)
V2 = SerializerInfo(Point, 2, "0.2.0", _read_point_v2, _write_point_v2)
V3 = SerializerInfo(Point, 3, "0.3.0", _read_point_v2, _write_point_v2)

# Bytes a 0.1.0 node wrote for Point(3, -2): they must stay readable forever.
POINT_V1_BYTES = bytes.fromhex("0001" + "ff01" + "01" + "06" + "03")


def _registry(*infos: SerializerInfo[Any]) -> Registry:
    registry = Registry({Point: _POINT_ID, Other: _OTHER_ID})
    registry.register(*infos)
    return registry


def test_newest_version_writes_and_old_bytes_still_read() -> None:
    registry = _registry(V1_READ_ONLY, V2)
    data = registry.encode(Point(3, -2, "p"))
    assert data[:5] == bytes.fromhex("0001ff0102")  # protocol 1, type id, version 2
    assert registry.decode(data) == Point(3, -2, "p")
    assert registry.decode(POINT_V1_BYTES) == Point(3, -2)


def test_v1_writer_produced_the_pinned_bytes() -> None:
    assert _registry(V1).encode(Point(3, -2, "dropped")) == POINT_V1_BYTES


def test_versions_may_be_given_in_any_order() -> None:
    assert _registry(V2, V1).serializers(Point) == (V1, V2)


def test_unknown_version_names_the_known_range() -> None:
    data = bytearray(POINT_V1_BYTES)
    data[4] = 3
    match = r"version 3 of Point .* versions 1\.\.2 at byte 4"
    with pytest.raises(SerializationError, match=match):
        _registry(V1, V2).decode(bytes(data))


def test_decode_with_expected_type() -> None:
    registry = _registry(V1)
    assert registry.decode(POINT_V1_BYTES, Point) == Point(3, -2)
    with pytest.raises(SerializationError, match="where Other was expected"):
        registry.decode(POINT_V1_BYTES, Other)


def test_type_without_serializers_is_unknown() -> None:
    data = bytes.fromhex("0001" + "ff02" + "01" + "00")
    with pytest.raises(SerializationError, match="Unknown object type id 65282"):
        _registry(V1).decode(data)


@pytest.mark.parametrize(
    ("infos", "problem"),
    [
        ((V1, V3), r"must be 1\.\.2 without gaps, got \[1, 3\]"),
        ((V2,), r"must be 1\.\.1 without gaps, got \[2\]"),
        ((V1, V1), "version 1 of Point is duplicated"),
        ((V1, V2, V2), "version 2 of Point is duplicated"),
        ((), "at least one serializer"),
        ((V1_READ_ONLY,), "newest serializer of Point, v1, cannot write"),
        ((V1, SerializerInfo(Point, 2, "0.0.9", _read_point_v2, _write_point_v2)), "is older"),
        ((SerializerInfo(Point, 1, "one", _read_point_v1, _write_point_v1),), "is not 'X.Y.Z'"),
        ((V1, SerializerInfo(Other, 2, "0.2.0", lambda r: Other(0))), "mixes Point and Other"),
        ((SerializerInfo(int, 1, "0.1.0", Reader.svarint, Writer.svarint),), "no pinned type id"),
    ],
)
def test_registration_is_refused(infos: tuple[SerializerInfo[Any], ...], problem: str) -> None:
    with pytest.raises(RegistrationError, match=problem):
        _registry(*infos)


def test_registering_a_type_twice_is_refused() -> None:
    registry = _registry(V1)
    with pytest.raises(RegistrationError, match="already registered"):
        registry.register(V2)


@pytest.mark.parametrize(
    ("type_ids", "problem"),
    [
        ({Point: 0}, "not in 1..65535"),
        ({Point: 70000}, "not in 1..65535"),
        ({Point: 5, Other: 5}, "given to both Point and Other"),
    ],
)
def test_type_id_table_is_checked(type_ids: dict[type, int], problem: str) -> None:
    with pytest.raises(RegistrationError, match=problem):
        Registry(type_ids)


def test_pinned_type_ids_are_unique_and_outside_reserved_ranges() -> None:
    ids = list(TYPE_IDS.values())
    assert len(ids) == len(set(ids))
    assert not set(ids) & set(TEST_TYPE_IDS)
    assert not set(ids) & RETIRED_TYPE_IDS


def test_every_registered_type_has_contiguous_versions_and_a_writer() -> None:
    for cls in REGISTRY.types():
        infos = REGISTRY.serializers(cls)
        assert [info.version for info in infos] == list(range(1, len(infos) + 1))
        assert infos[-1].write is not None
