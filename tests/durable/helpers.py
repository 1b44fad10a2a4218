"""Shared helpers for the durable-catalog tests."""

from __future__ import annotations

import hashlib

import almanac
from almanac import ColumnDef, ColumnType
from almanac.catalog_version import CatalogVersion
from almanac.entries import VersionedUpdate, apply_update
from almanac.log import KEY_CHECKPOINT_VERSION, KEY_VERSION, UPDATE_PREFIX, update_key
from almanac.log_format import read_entry
from almanac.metastore import Metastore
from almanac.serialization import encode_catalog


def table(name: str, schema: str = "PUBLIC") -> almanac.CreateTable:
    return almanac.CreateTable(
        name=name,
        schema=schema,
        columns=(
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING, length=10),
        ),
        primary_key=("ID",),
    )


def digest(snapshot: CatalogVersion) -> str:
    return hashlib.sha256(encode_catalog(snapshot)).hexdigest()


def replay_store(store: Metastore) -> CatalogVersion:
    """Rebuild the latest catalog from the raw keys, independently of any node."""
    kvs = {kv.key: kv for kv in store.range("catalog.").kvs}
    latest = int(kvs[KEY_VERSION].value)
    earliest = int(kvs[KEY_CHECKPOINT_VERSION].value)
    updates = [k for k in kvs if k.startswith(UPDATE_PREFIX)]
    assert len(updates) == latest - max(earliest, 1) + 1, "log keys are not contiguous"
    if earliest > 0:
        base = read_entry(update_key(earliest), earliest, kvs[update_key(earliest)].value)
        assert isinstance(base, CatalogVersion)
        start = earliest + 1
    else:
        base = CatalogVersion.empty()
        start = 1
    for version in range(start, latest + 1):
        update = read_entry(update_key(version), version, kvs[update_key(version)].value)
        assert isinstance(update, VersionedUpdate)
        base = apply_update(base, update)
    return base
