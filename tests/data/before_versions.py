"""A catalog as the release before data commits became catalog versions
(cae65ec) wrote it, so the tests can open one with the running code.

That release made catalog versions for DDL only. A data commit was one
compare-and-swap on the table's pointer beside the log, with no entry in it;
its record was stamped with the catalog version its write was planned
against (so every append between two DDL versions shares one) and with a
hybrid time taken at the commit, never before that version activated nor
before its parent. A checkpoint stored the catalog in serializer v1, which
knows no table data. The running code no longer writes either, so this
module does, step for step as that release did (``TableData.commit`` and
``Log.truncate`` at cae65ec).
"""

from __future__ import annotations

from collections.abc import Sequence

from almanac import Catalog
from almanac.data import CommitShape, DataSnapshot, TableData, conform, new_write_id, write_files
from almanac.data.commits import COMMIT_SECTION_TIMEOUT_S
from almanac.metastore import Compare, Put
from almanac.model.catalog_version import CatalogVersion
from almanac.model.request_ids import Checkpoint
from almanac.node.log import KEY_CHECKPOINT_VERSION, update_key
from almanac.node.log_format import KIND_CHECKPOINT, frame, read_checkpoint, read_entry
from almanac.serialization.catalogs import _write_catalog_v1
from almanac.serialization.io import Writer
from almanac.serialization.registry import _PROTOCOL_HEADER, REGISTRY
from tests.data.support import rows


def append(cat: Catalog, ids: Sequence[int], name: str = "T") -> DataSnapshot:
    """Append ``ids`` to table ``name`` as that release did: no catalog version."""
    data = TableData.for_catalog(cat)
    version = cat.catalog()
    table = version.table(name)
    assert table is not None
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=60)
    shape = CommitShape.of(version, table)
    files = write_files(
        data.warehouse, table, shape.partitions, conform(rows(list(ids)), table), write_dir
    )
    with data.store.exclusive(COMMIT_SECTION_TIMEOUT_S):
        parent = data.current_record(table.id)
        activated = version.activation_time
        floor = activated if parent is None else max(parent.commit_time, activated)
        # That release's stamp: the version written against, at the commit's
        # own time (``_stamp`` at cae65ec); ``commit_ops`` stamps a record
        # with the number and activation time of the version it is given.
        stamp = version.evolve(activation_time=data.clock.update(floor))
        work, snapshot = data.commit_ops(
            shape, write_id, files, operation="append", parent=parent, at=stamp
        )
        ok = data.store.txn(work.compares, work.ops).succeeded
        work.finished(ok)
        assert ok
    return snapshot


def _encode_v1(catalog: CatalogVersion) -> bytes:
    """The catalog as serializer v1 wrote it (what ``encode_catalog`` gave then)."""
    w = Writer(_PROTOCOL_HEADER)
    w.u16(REGISTRY.type_id(CatalogVersion))
    w.uvarint(1)
    _write_catalog_v1(w, catalog)
    return bytes(w)


def checkpoint(cat: Catalog) -> int:
    """Checkpoint the log at its latest version, its catalog stored in
    serializer v1 as that release stored it; returns the version."""
    version = cat.checkpoint_log()
    key = update_key(version)
    kv = cat.log.store.get(key)
    assert kv is not None
    held = read_checkpoint(key, version, kv.value)
    assert isinstance(held, Checkpoint) and not held.requests, "no request ids: a bare catalog"
    stored = held.catalog
    assert not stored.table_data, "that release had no data entries"
    value = frame(KIND_CHECKPOINT, version, _encode_v1(stored))
    assert value != kv.value and read_entry(key, version, value) == stored
    unchanged = [
        Compare.mod_revision(key, "==", kv.mod_revision),
        Compare.value(KEY_CHECKPOINT_VERSION, "==", str(version).encode("ascii")),
    ]
    assert cat.log.store.txn(unchanged, [Put(key, value)]).succeeded
    return version
