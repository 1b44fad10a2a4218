"""Pinned type ids and the registry of versioned serializers.

Header of every top-level object::

    protocol version   2 bytes, big-endian (PROTOCOL_VERSION)
    type id            2 bytes, big-endian (TYPE_IDS)
    serializer version uvarint

A nested object (a column inside a table, an entry inside an update) carries
only ``type id + serializer version``. The protocol version describes the
whole byte stream, so repeating it in each of the ~100,000 nested objects
of a 10,000-table catalog version would cost bytes and time and could never differ
from the outer one. The per-object type id and version are what let each
nested type evolve on its own, and the type id lets a reader check that a
slot holds a type it allows (and pick the class in a polymorphic slot).

A type may have several serializers, ``version`` 1..n, each naming the
``release`` that introduced it. Writing always uses the newest; reading
uses the one the header names, so old readers stay registered for as long
as bytes they wrote may exist (update log, checkpoints, other nodes).
"""

from __future__ import annotations

import gc
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, NoReturn, TypeVar, cast, overload

from almanac.errors import SerializationError, ValidationError
from almanac.model import entries as e
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import (
    Column,
    ConstantDefault,
    FunctionDefault,
    Index,
    Schema,
    Table,
    TableProperties,
    Zone,
)
from almanac.model.partitioning import PartitionSpec, SortOrder
from almanac.model.request_ids import Checkpoint
from almanac.serialization.io import Reader, Writer

__all__ = [
    "ENTRY_TYPES",
    "PROTOCOL_VERSION",
    "REGISTRY",
    "RETIRED_TYPE_IDS",
    "TEST_TYPE_IDS",
    "TYPE_IDS",
    "RegistrationError",
    "Registry",
    "SerializerInfo",
]

_T = TypeVar("_T")

PROTOCOL_VERSION = 1
_PROTOCOL_HEADER = PROTOCOL_VERSION.to_bytes(2, "big")
_GC_PAUSE_BYTES = 64 * 1024

TYPE_IDS: Mapping[type, int] = MappingProxyType(
    {
        # descriptors: 1..99
        Schema: 1,
        Column: 2,
        Table: 3,
        TableProperties: 4,
        Index: 5,
        Zone: 6,
        ConstantDefault: 7,
        FunctionDefault: 8,
        # 20 and up: table layout (ids below kept free for column-level types)
        PartitionSpec: 20,
        SortOrder: 21,
        # update entries: 100..199
        e.ObjectIdsReserved: 100,
        e.SchemaCreated: 101,
        e.SchemaDropped: 102,
        e.ZoneCreated: 103,
        e.ZoneAltered: 104,
        e.ZoneDropped: 105,
        e.DefaultZoneSet: 106,
        e.TableCreated: 107,
        e.TableDropped: 108,
        e.TableRenamed: 109,
        e.ColumnsAdded: 110,
        e.ColumnsDropped: 111,
        e.ColumnAltered: 112,
        e.TablePropertiesSet: 113,
        e.IndexCreated: 114,
        e.IndexRenamed: 115,
        e.IndexBuildStarted: 116,
        e.IndexMadeAvailable: 117,
        e.IndexStopped: 118,
        e.IndexRemoved: 119,
        e.TableSoftDropped: 120,
        e.TableRecovered: 121,
        e.PrimaryKeySet: 122,
        e.TableMoved: 123,
        # 130 and up: partition specs and sort orders
        e.PartitionSpecAdded: 130,
        e.DefaultPartitionSpecSet: 131,
        e.SortOrderAdded: 132,
        e.DefaultSortOrderSet: 133,
        # 140 and up: table data
        e.TableDataCommitted: 140,
        # containers: 200..299
        e.VersionedUpdate: 200,
        CatalogVersion: 201,
        Checkpoint: 202,
    }
)
"""The wire id of every object type. An id, once released, names its type
forever: remove a type by moving its id to ``RETIRED_TYPE_IDS``, never by
giving the number to something else."""

RETIRED_TYPE_IDS: frozenset[int] = frozenset()
"""Ids of types that no longer exist; never to be assigned again."""

TEST_TYPE_IDS = range(0xFF00, 0x10000)
"""Reserved for test-only registries; never used by ``TYPE_IDS``."""

ENTRY_TYPES: tuple[type[e.UpdateEntry], ...] = tuple(
    cls for cls in TYPE_IDS if issubclass(cls, e.UpdateEntry)
)

_RELEASE = re.compile(r"\d+\.\d+\.\d+")


class RegistrationError(ValueError):
    """A serializer was registered wrongly; raised at import time, a programming error."""


@dataclass(frozen=True, slots=True)
class SerializerInfo(Generic[_T]):
    """One version of the wire format of ``cls``.

    ``write`` may be ``None`` for an old version kept only to read bytes
    that were written before the newer version was released.
    """

    cls: type[_T]
    version: int
    release: str
    read: Callable[[Reader], _T]
    write: Callable[[Writer, _T], None] | None = None


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


class Registry:
    """Serializers by type and version, and the encode/decode entry points over them."""

    def __init__(self, type_ids: Mapping[type, int]) -> None:
        seen: dict[int, type] = {}
        for cls, tid in type_ids.items():
            if not 1 <= tid <= 0xFFFF:
                raise RegistrationError(f"Type id {tid} of {cls.__name__} is not in 1..65535")
            if tid in seen:
                raise RegistrationError(
                    f"Type id {tid} is given to both {seen[tid].__name__} and {cls.__name__}"
                )
            if tid in RETIRED_TYPE_IDS:
                raise RegistrationError(f"Type id {tid} of {cls.__name__} is retired")
            seen[tid] = cls
        self._type_ids = dict(type_ids)
        self._names = {tid: cls.__name__ for tid, cls in seen.items()}
        self._infos: dict[type, list[SerializerInfo[Any]]] = {}
        # Readers by type id, index = version - 1; nested readers hold these lists.
        self._readers: dict[int, list[Callable[[Reader], Any]]] = {}
        # Newest writer by exact class, with its precomputed nested header.
        self._writers: dict[type, tuple[bytes, Callable[[Writer, Any], None]]] = {}
        self._top_readers: dict[type | None, Callable[[Reader], object]] = {}

    # -- registration ---------------------------------------------------------

    def register(self, *infos: SerializerInfo[Any]) -> None:
        """Register every version of one type's format at once: versions 1..n, each once.

        Taking them together lets the checks see the whole list: no gap, no
        duplicate, releases in order, and a writer on the newest (older
        versions may keep only their reader).
        """
        if not infos:
            raise RegistrationError("register() needs at least one serializer")
        cls = infos[0].cls
        name = cls.__name__
        tid = self._type_ids.get(cls)
        if tid is None:
            raise RegistrationError(f"{name} has no pinned type id in the type-id table")
        if cls in self._infos:
            raise RegistrationError(f"Serializers of {name} are already registered")
        versions = [info.version for info in infos]
        for info in infos:
            if info.cls is not cls:
                raise RegistrationError(
                    f"register() mixes {name} and {info.cls.__name__}; register one type per call"
                )
            if versions.count(info.version) > 1:
                raise RegistrationError(
                    f"Serializer version {info.version} of {name} is duplicated"
                )
            if not _RELEASE.fullmatch(info.release):
                raise RegistrationError(
                    f"Release {info.release!r} of {name} v{info.version} is not 'X.Y.Z'"
                )
        ordered = sorted(infos, key=lambda info: info.version)
        if [info.version for info in ordered] != list(range(1, len(ordered) + 1)):
            raise RegistrationError(
                f"Serializer versions of {name} must be 1..{len(ordered)} without gaps, "
                f"got {sorted(versions)}"
            )
        for older, newer in itertools.pairwise(ordered):
            if _release_key(newer.release) < _release_key(older.release):
                raise RegistrationError(
                    f"{name} v{newer.version} (release {newer.release}) is older than "
                    f"v{older.version} (release {older.release})"
                )
        newest = ordered[-1]
        if newest.write is None:
            raise RegistrationError(
                f"The newest serializer of {name}, v{newest.version}, cannot write"
            )
        self._infos[cls] = ordered
        # Extend in place: nested readers made earlier hold this very list.
        self._readers.setdefault(tid, []).extend(info.read for info in ordered)
        header = Writer()
        header.u16(tid)
        header.uvarint(newest.version)
        self._writers[cls] = (bytes(header), newest.write)

    def types(self) -> tuple[type, ...]:
        return tuple(self._infos)

    def serializers(self, cls: type) -> tuple[SerializerInfo[Any], ...]:
        """Every registered version of ``cls``'s format, oldest first."""
        return tuple(self._infos.get(cls, ()))

    def type_id(self, cls: type) -> int:
        tid = self._type_ids.get(cls)
        if tid is None:
            raise SerializationError(f"{cls.__name__} has no serializer type id")
        return tid

    # -- nested objects ---------------------------------------------------------

    def write_nested(self, w: Writer, obj: object) -> None:
        """Type id, newest serializer version, then the object's fields."""
        found = self._writers.get(type(obj))
        if found is None:
            raise SerializationError(f"No serializer is registered for {type(obj).__name__}")
        header, write = found
        w += header
        write(w, obj)

    def nested_reader(self, cls: type[_T]) -> Callable[[Reader], _T]:
        """A reader for a slot that must hold a ``cls``, with any of its versions."""
        tid = self.type_id(cls)
        readers = self._readers.setdefault(tid, [])

        def read(r: Reader) -> _T:
            # Fast path: the type id matches and the version is a one-byte varint.
            pos, data = r.pos, r.data
            if pos + 2 < r.end and (data[pos] << 8 | data[pos + 1]) == tid:
                version = data[pos + 2]
                if 0 < version <= len(readers) and version < 0x80:
                    r.pos = pos + 3
                    return cast(_T, readers[version - 1](r))
            found = r.u16()
            if found != tid:
                self._wrong_type(r, pos, found, cls.__name__)
            version = r.uvarint()
            if 0 < version <= len(readers):
                return cast(_T, readers[version - 1](r))
            self._unknown_version(r, pos, found, version)

        return read

    def nested_reader_any(self, classes: Iterable[type]) -> Callable[[Reader], object]:
        """A reader for a slot that may hold any of ``classes`` (or, with ``()``, any type)."""
        allowed = frozenset(self.type_id(cls) for cls in classes)
        expected = " or ".join(sorted(self._names[tid] for tid in allowed)) or "an object"
        readers = self._readers

        def read(r: Reader) -> object:
            start = r.pos
            found = r.u16()
            if allowed and found not in allowed:
                self._wrong_type(r, start, found, expected)
            versions = readers.get(found)
            if not versions:
                self._wrong_type(r, start, found, expected)
            version = r.uvarint()
            if 0 < version <= len(versions):
                return versions[version - 1](r)
            self._unknown_version(r, start, found, version)

        return read

    def _wrong_type(self, r: Reader, offset: int, found: int, expected: str) -> NoReturn:
        name = self._names.get(found)
        if name is None or not self._readers.get(found):
            r.fail(f"Unknown object type id {found} (expected {expected})", offset)
        r.fail(f"Found {name} (type id {found}) where {expected} was expected", offset)

    def _unknown_version(self, r: Reader, offset: int, tid: int, version: int) -> NoReturn:
        known = len(self._readers[tid])
        r.fail(
            f"Unknown serializer version {version} of {self._names[tid]} (type id {tid}); "
            f"this build reads versions 1..{known}",
            offset + 2,
        )

    # -- top level ----------------------------------------------------------------

    def encode(self, obj: object) -> bytes:
        w = Writer(_PROTOCOL_HEADER)
        self.write_nested(w, obj)
        return bytes(w)

    @overload
    def decode(self, data: bytes | bytearray | memoryview) -> object: ...

    @overload
    def decode(self, data: bytes | bytearray | memoryview, expect: type[_T]) -> _T: ...

    def decode(self, data: bytes | bytearray | memoryview, expect: type | None = None) -> object:
        """The one object ``data`` holds; ``expect`` restricts which type that may be."""
        if len(data) < _GC_PAUSE_BYTES or not gc.isenabled():
            return self._decode(data, expect)
        # Decoding a large catalog version allocates hundreds of thousands of acyclic
        # objects; every one of them would be scanned by the cyclic collector,
        # again and again as the young generations fill (measured: 40% of the
        # decode time of a 10,000-table version). Reference counting alone frees
        # everything decoding makes, so the collector pauses until the end. It
        # resumes only if it was on, and other threads lose nothing but a delay.
        gc.disable()
        try:
            return self._decode(data, expect)
        finally:
            gc.enable()

    def _decode(self, data: bytes | bytearray | memoryview, expect: type | None) -> object:
        r = Reader(data)
        protocol = r.u16()
        if protocol != PROTOCOL_VERSION:
            r.fail(
                f"Unsupported protocol version {protocol} (this build reads {PROTOCOL_VERSION})",
                0,
            )
        read = self._top_readers.get(expect)
        if read is None:
            read = self._top_readers[expect] = self.nested_reader_any(
                () if expect is None else (expect,)
            )
        try:
            obj = read(r)
        except ValidationError as exc:
            # Decoded fields that no constructor accepts: the bytes are corrupt.
            r.fail(f"Decoded an invalid value: {exc}")
        r.expect_end()
        return obj


REGISTRY = Registry(TYPE_IDS)
"""The registry every Almanac process uses; serializers register at import."""
