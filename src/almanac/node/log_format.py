"""How the update log stores its values: checksummed frames and strict numbers.

Every entry the log writes under ``catalog.update.{N}`` (an update, or the
checkpoint that truncation writes) is a *frame* around the serialized object::

    offset  size  field
    0       4     magic  A1 4D C3 7E
    4       1     frame format (1)
    5       1     kind: 'U' (a VersionedUpdate) or 'C' (a checkpoint: a whole
                  CatalogVersion, or a Checkpoint when it carries request ids)
    6       8     the version N of the key, big-endian
    14      4     payload length, big-endian
    18      4     CRC-32 (zlib) of bytes 0..17 followed by the payload
    22      ...   payload: the object exactly as ``almanac.serialization`` writes it

The data plane frames its metastore values the same way (``frame`` and
``open_frame``, kinds 'P' and 'R': see ``almanac.data.snapshots``).

The checksum covers the header too, so a flip anywhere (magic, kind, version,
length, payload) is caught; the version in the header binds the entry to its
key, so an entry copied or moved to another version's key is caught as well.
The serializers are untouched: the golden files still describe the payload.

Legacy entries. Releases before the frame stored the bare serialized object,
which starts with the protocol version (``00 01``) and the type id of a
``VersionedUpdate`` (``00 C8``) or a ``CatalogVersion`` (``00 C9``). Those
entries are still read, with the checks they always had (the bytes must
decode to exactly one object of the expected type and version), so a store
written by an older release opens; everything written from now on is framed,
and ``checkpoint_log`` rewrites a legacy history as one framed checkpoint.
The magic differs from both legacy prefixes in at least 15 of its 32 bits
(6 of the first 16), and the type id a legacy reader would find in it is not
a registered one, so no bit flip, nor a handful of them, turns a frame into
something read as legacy: a value that is neither an intact frame nor a
legacy prefix is refused.

Numbers (``catalog.version``, ``catalog.snapshot.version``, pins) are stored
as canonical decimal ASCII; anything else (a sign, a space, a leading zero,
a non-digit) is corruption, never silently parsed.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Final

from almanac.errors import CorruptLogError, SerializationError
from almanac.metastore import KeyValue
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate
from almanac.model.request_ids import Checkpoint, RequestRecord
from almanac.serialization import decode, encode, encode_catalog, encode_update

__all__ = [
    "FRAME_MAGIC",
    "HEADER_SIZE",
    "KIND_CHECKPOINT",
    "KIND_UPDATE",
    "LEGACY_PREFIXES",
    "LogEntry",
    "encode_number",
    "frame",
    "frame_checkpoint",
    "frame_update",
    "open_frame",
    "parse_number",
    "read_checkpoint",
    "read_entry",
    "stored_number",
]

FRAME_MAGIC: Final = b"\xa1\x4d\xc3\x7e"
FRAME_FORMAT: Final = 1
KIND_UPDATE: Final = ord("U")
KIND_CHECKPOINT: Final = ord("C")
_HEADER: Final = struct.Struct(">4sBBQI")  # what the checksum covers, with the payload
_FRAMED: Final = struct.Struct(">4sBBQII")  # the whole header, checksum included
HEADER_SIZE: Final = _FRAMED.size
_CHECKED: Final = _HEADER.size
LEGACY_PREFIXES: Final = {
    b"\x00\x01\x00\xc8": KIND_UPDATE,  # protocol 1, VersionedUpdate
    b"\x00\x01\x00\xc9": KIND_CHECKPOINT,  # protocol 1, CatalogVersion
}
_KIND_NAMES: Final = {KIND_UPDATE: "an update", KIND_CHECKPOINT: "a checkpoint"}

LogEntry = VersionedUpdate | CatalogVersion


def frame(kind: int, number: int, payload: bytes) -> bytes:
    """``payload`` in a checksummed frame of ``kind``, bound to ``number``
    (the version of a log entry, the id in the key of another value). The
    data plane frames its pointers and records with it too."""
    header = _HEADER.pack(FRAME_MAGIC, FRAME_FORMAT, kind, number, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(header))
    return b"".join((header, crc.to_bytes(4, "big"), payload))


def open_frame(data: bytes, fail: Callable[[str], Exception]) -> tuple[int, int, bytes] | None:
    """The (kind, number, payload) of a framed value after the format, length
    and checksum checks (``fail(problem)`` is raised when one fails); None
    when ``data`` does not start with the magic, for the caller to read as
    its legacy format or refuse. Kind and number are the caller's to check."""
    if data[:4] != FRAME_MAGIC:
        return None
    if len(data) < HEADER_SIZE:
        raise fail(f"{len(data)} bytes is shorter than a frame header")
    _, fmt, kind, number, length, stored_crc = _FRAMED.unpack_from(data)
    if fmt != FRAME_FORMAT:
        raise fail(
            f"frame format {fmt} is not one this release reads ({FRAME_FORMAT}); "
            "the entry is damaged or was written by a newer release"
        )
    if len(data) != HEADER_SIZE + length:
        raise fail(
            f"the frame announces {length} payload bytes but holds "
            f"{len(data) - HEADER_SIZE} (truncated or extended)"
        )
    payload = data[HEADER_SIZE:]
    crc = zlib.crc32(payload, zlib.crc32(data[:_CHECKED]))
    if crc != stored_crc:
        raise fail(f"checksum mismatch (stored {stored_crc:08x}, computed {crc:08x})")
    return kind, number, bytes(payload)


def frame_update(update: VersionedUpdate) -> bytes:
    """The stored form of an update: its serialized bytes in a checksummed frame."""
    return frame(KIND_UPDATE, update.version, encode_update(update))


def frame_checkpoint(version: CatalogVersion, requests: tuple[RequestRecord, ...] = ()) -> bytes:
    """The stored form of a checkpoint (the whole catalog of its version):
    the bare catalog, or a ``Checkpoint`` when it carries request ids."""
    payload = encode(Checkpoint(version, requests)) if requests else encode_catalog(version)
    return frame(KIND_CHECKPOINT, version.version, payload)


def _corrupt(key: str, version: int, problem: str) -> CorruptLogError:
    return CorruptLogError(
        f"Update log entry '{key}' of version {version} is corrupted: {problem}",
        key=key,
        version=version,
    )


def _unframe(key: str, version: int, data: bytes) -> tuple[int, bytes]:
    """The kind and payload of a stored entry, after every frame check."""
    opened = open_frame(data, lambda problem: _corrupt(key, version, problem))
    if opened is not None:
        kind, stored_version, payload = opened
        if kind not in _KIND_NAMES:
            raise _corrupt(key, version, f"unknown entry kind {kind}")
        if stored_version != version:
            raise CorruptLogError(
                f"Update log entry '{key}' holds the entry of version {stored_version}, "
                f"not of version {version}: it was copied or moved from another key",
                key=key,
                version=version,
            )
        return kind, payload
    legacy = LEGACY_PREFIXES.get(bytes(data[:4]))
    if legacy is not None:
        return legacy, data
    raise _corrupt(
        key,
        version,
        f"it starts with {bytes(data[:8]).hex(' ')}, neither a checksummed frame "
        f"({FRAME_MAGIC.hex(' ')} ...) nor an entry of an older release",
    )


def read_entry(key: str, version: int, data: bytes) -> LogEntry:
    """Check and decode the entry stored under ``key`` for ``version``.

    Returns a ``VersionedUpdate`` or a ``CatalogVersion`` of exactly that
    version (a checkpoint's catalog; ``read_checkpoint`` also gives its
    request ids); anything else raises ``CorruptLogError`` naming key and
    version.
    """
    value = _read(key, version, data)
    return value.catalog if isinstance(value, Checkpoint) else value


def read_checkpoint(key: str, version: int, data: bytes) -> Checkpoint | VersionedUpdate:
    """``read_entry``, with a checkpoint whole (its catalog and request ids)."""
    value = _read(key, version, data)
    return Checkpoint(value) if isinstance(value, CatalogVersion) else value


def _read(key: str, version: int, data: bytes) -> LogEntry | Checkpoint:
    kind, payload = _unframe(key, version, data)
    try:
        value = decode(payload)
    except SerializationError as exc:
        raise _corrupt(key, version, str(exc)) from exc
    expected = VersionedUpdate if kind == KIND_UPDATE else (CatalogVersion, Checkpoint)
    found = (
        value.catalog.version if isinstance(value, Checkpoint) else getattr(value, "version", "?")
    )
    if not isinstance(value, expected) or found != version:
        raise CorruptLogError(
            f"Update log entry '{key}' does not hold version {version} "
            f"(found {type(value).__name__} of version {found})",
            key=key,
            version=version,
        )
    return value


def parse_number(kv: KeyValue) -> int:
    """A stored count or version: canonical non-negative decimal ASCII only."""
    value = kv.value
    if value.isdigit() and value.isascii() and (value == b"0" or not value.startswith(b"0")):
        return int(value)
    raise CorruptLogError(
        f"Metastore key '{kv.key}' holds {bytes(value[:32])!r}, not a version number",
        key=kv.key,
    )


def stored_number(kv: KeyValue | None) -> int:
    """``parse_number`` of a key that may not be stored yet: 0 then."""
    return 0 if kv is None else parse_number(kv)


def encode_number(value: int) -> bytes:
    """A count or version the way ``parse_number`` reads it back."""
    return str(value).encode("ascii")
