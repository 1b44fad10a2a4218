"""Binary, versioned serialization of catalog objects.

Bytes written here are a contract between nodes and between releases:

* every object starts with ``protocol version (2 bytes) | type id (2 bytes)
  | serializer version (uvarint)``; nested objects carry type id and version;
* type ids are pinned in ``registry.TYPE_IDS``; each type's serializers are
  versioned, writing uses the newest and reading the one the header names;
* equal objects encode to equal bytes (maps in key order, canonical
  integers), because nodes compare catalogs byte for byte;
* any input that is not exactly one valid object raises ``SerializationError``
  naming the problem and its byte offset.

Importing this package registers every serializer. ``commands_json`` is
the other wire form, of commands as JSON, shared by the HTTP API and its
client.
"""

from __future__ import annotations

from almanac import _check as check
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate
from almanac.serialization import catalogs as _catalogs
from almanac.serialization import types as _types
from almanac.serialization import updates as _updates
from almanac.serialization.registry import (
    PROTOCOL_VERSION,
    REGISTRY,
    TYPE_IDS,
    RegistrationError,
    Registry,
    SerializerInfo,
)

__all__ = [
    "PROTOCOL_VERSION",
    "REGISTRY",
    "TYPE_IDS",
    "RegistrationError",
    "Registry",
    "SerializerInfo",
    "decode",
    "decode_catalog",
    "decode_update",
    "encode",
    "encode_catalog",
    "encode_update",
]

del _catalogs, _types, _updates  # imported for their registrations only


def _bytes(data: object, what: str) -> bytes | bytearray | memoryview:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise check.fail(what, "bytes, a bytearray or a memoryview", data)
    return data


def encode(obj: object) -> bytes:
    """Any registered object (descriptor, entry, update, catalog version) as bytes."""
    return REGISTRY.encode(obj)


def decode(data: bytes | bytearray | memoryview) -> object:
    """The object ``data`` holds, whatever its registered type."""
    return REGISTRY.decode(_bytes(data, "Parameter 'data' of decode"))


def encode_update(update: VersionedUpdate) -> bytes:
    return REGISTRY.encode(
        check.instance(update, VersionedUpdate, "Parameter 'update' of encode_update")
    )


def decode_update(data: bytes | bytearray | memoryview) -> VersionedUpdate:
    """A ``VersionedUpdate``; any other type in the header is an error."""
    return REGISTRY.decode(_bytes(data, "Parameter 'data' of decode_update"), VersionedUpdate)


def encode_catalog(version: CatalogVersion) -> bytes:
    return REGISTRY.encode(
        check.instance(version, CatalogVersion, "Parameter 'version' of encode_catalog")
    )


def decode_catalog(data: bytes | bytearray | memoryview) -> CatalogVersion:
    """A whole ``CatalogVersion`` (a checkpoint in the update log)."""
    return REGISTRY.decode(_bytes(data, "Parameter 'data' of decode_catalog"), CatalogVersion)
