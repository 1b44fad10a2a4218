"""Whose warehouse this is: the catalog id a store holds, and the proof
(``Warehouse.claim``) that a warehouse belongs to it, which every deleter
needs first. Below the commit protocol and its staging leases, which claim
a warehouse they were handed without a data plane."""

from __future__ import annotations

import re

import pyarrow.fs as pafs

from almanac.data.snapshots import SNAPSHOT_PREFIX, STAGING_PREFIX
from almanac.data.warehouse import Warehouse
from almanac.errors import CorruptLogError
from almanac.metastore import Compare, Metastore, Put
from almanac.node.identity import new_catalog_id, parse_catalog_id
from almanac.node.log import KEY_ID

__all__ = ["catalog_id", "claim_warehouse"]


def catalog_id(store: Metastore) -> str:
    """The catalog's id (``catalog.id``), given to a store that has none yet
    (etcd, memory), as a SQLite catalog's log gives it."""
    while True:
        kv = store.get(KEY_ID)
        if kv is not None:
            found = parse_catalog_id(kv.value)
            if found is None:
                raise CorruptLogError(f"Metastore key '{KEY_ID}' is unreadable", key=KEY_ID)
            return found
        fresh = new_catalog_id()
        if store.txn([Compare.absent(KEY_ID)], [Put(KEY_ID, fresh.encode("ascii"))]).succeeded:
            return fresh


_SIGNS_CHECKED = 64


def claim_warehouse(store: Metastore, warehouse: Warehouse) -> bool:
    """Prove the warehouse is the catalog's of ``store`` (``Warehouse.claim``). A
    warehouse made before markers is adopted when a file that the catalog's
    snapshot records or staged writes name in it exists (a table's metadata,
    a staged write's directory, an old-layout manifest): a directory that
    merely looks like a warehouse never is."""
    root = warehouse.root.rstrip("/")
    # Whole paths only (a record's path starts the value or follows a quote
    # or a space), in the layouts Almanac writes: a table's metadata.json, a
    # staged write's directory, an old-layout manifest. A parent of the real
    # warehouse (or "/") never matches them.
    segment = rb'[^/"\\\s]+'
    named = re.compile(
        rb'(?<![^"\s])'
        + re.escape(root).encode()
        + rb"/(?:[0-9]+/(?:metadata/"
        + segment
        + rb"\.metadata\.json|[0-9a-f]{32})|"
        + segment
        + rb"/"
        + segment
        + rb"/_manifests/"
        + segment
        + rb'\.json)(?=["\s]|$)'
    )

    def signs() -> bool:
        candidates: list[str] = []
        for prefix in (STAGING_PREFIX, SNAPSHOT_PREFIX):
            for kv in store.range(prefix, limit=_SIGNS_CHECKED).kvs:
                candidates += [m.decode("utf-8", "replace") for m in named.findall(kv.value)]
        if not candidates:
            return False
        infos = warehouse.fs.get_file_info(candidates[:_SIGNS_CHECKED])
        return any(i.type != pafs.FileType.NotFound for i in infos)

    return warehouse.claim(catalog_id(store), signs)
