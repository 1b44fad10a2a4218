"""A catalog's data plane: its warehouse, its data-commit protocol, the
hook that keeps each table's Iceberg schema in step with its ALTERs, the
hook that refuses to recover a table whose data is gone, and the periodic
janitor. ``almanac.connect`` attaches one to every catalog
that has a warehouse; the catalog itself knows nothing of table data."""

from __future__ import annotations

import functools
import logging
import threading
import weakref

import pyarrow.fs as pafs

from almanac.data.commits import TableData
from almanac.data.iceberg_schema import CommitShape
from almanac.data.ownership import claim_warehouse
from almanac.data.published import check_published
from almanac.data.warehouse import Warehouse
from almanac.errors import CatalogError, ValidationError
from almanac.metastore import Compare, Op
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import TableRecovered, VersionedUpdate
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import HookWork

__all__ = ["DataPlane", "attach_data_plane", "warehouse_of"]

_log = logging.getLogger("almanac.data")
_planes: weakref.WeakKeyDictionary[Catalog, DataPlane] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class DataPlane:
    """Table data of one catalog node. Built by ``attach_data_plane``."""

    def __init__(self, cat: Catalog, warehouse: str, janitor_interval_s: float | None) -> None:
        self._catalog = weakref.ref(cat)
        self.warehouse = warehouse
        self.data = TableData(cat.metastore, Warehouse.open(warehouse), cat.clock)
        self.data.versions = self._version
        claim_warehouse(self.data.store, self.data.warehouse)
        self._stop = threading.Event()
        self._janitor: threading.Thread | None = None
        cat.add_commit_hook(self._schema_hook)
        cat.add_commit_hook(self._recover_hook)
        cat.set_data_commit_check(functools.partial(check_published, self.data.store))
        cat.on_close(self.close)
        self.data.attach(cat)
        if janitor_interval_s is not None:
            self._janitor = threading.Thread(
                target=self._clean, args=(janitor_interval_s,), name="almanac-janitor", daemon=True
            )
            self._janitor.start()

    @property
    def catalog(self) -> Catalog | None:
        """The catalog node, held weakly: the registry that finds this plane
        by its catalog (and the protocol's) must not keep the catalog alive;
        None once it was collected."""
        return self._catalog()

    def _clean(self, interval_s: float) -> None:
        """Purge the soft-deleted tables whose reserve ended, then collect
        the warehouse: a purged table's data goes by the janitor's rule for
        dropped tables."""
        from almanac.data.janitor import run_janitor
        from almanac.node.soft_delete import purge_expired_tables

        while not self._stop.wait(interval_s):
            cat = self.catalog
            if cat is None:
                return
            try:
                purge_expired_tables(cat)
            except Exception:
                _log.exception("The periodic purge failed; it runs again in %s s", interval_s)
            try:
                run_janitor(cat)
            except Exception:
                _log.exception("The periodic janitor failed; it runs again in %s s", interval_s)

    def _version(self, number: int) -> CatalogVersion | None:
        cat = self.catalog
        if cat is None:
            return None
        try:
            return cat.catalog(number)
        except CatalogError:
            return None

    def close(self) -> None:
        self._stop.set()
        janitor = self._janitor
        if janitor is not None and janitor is not threading.current_thread():
            janitor.join(timeout=60)

    # -- ALTER moves the Iceberg schema ---------------------------------------

    def _schema_hook(
        self, base: CatalogVersion, new: CatalogVersion, update: VersionedUpdate
    ) -> HookWork | None:
        """For every table with data that the version changes, a new
        ``metadata.json`` with the new schema (and spec), published by the
        version's own transaction: an Iceberg reader never sees a schema the
        catalog does not have. A table whose metadata cannot be read is left
        to its next data commit rather than blocking the ALTER. Only the
        tables the update's entries name are looked at (every entry that
        replaces a table names it), so a commit costs the same in a catalog
        of ten tables as in one of ten thousand."""
        compares: list[Compare] = []
        ops: list[Op] = []
        written: list[str] = []
        leases: list[int] = []
        data = self.data
        try:
            for table_id in sorted({entry.object_id() for entry in update.entries}):
                table = new.tables_by_id.get(table_id)
                old = base.tables_by_id.get(table_id)
                if table is None or old is None or old is table:
                    continue
                try:
                    record = data.current_record(table_id)
                except CatalogError as exc:
                    _log.warning("Table %s keeps its Iceberg schema: %s", table_id, exc)
                    continue
                if record is None:
                    continue
                # The hold comes first: from the moment a metadata file
                # exists until the version publishes it, the janitor must
                # leave the table alone.
                hold = data.staging.hold(table_id)
                leases.append(hold.lease)
                try:
                    shape = CommitShape.of(new, table)
                    result = data.iceberg.write_schema(table_id, record.metadata, shape)
                except CatalogError as exc:
                    _log.warning(
                        "Table %s keeps its Iceberg schema until its next commit: %s",
                        table_id,
                        exc,
                    )
                    result = None
                if result is None:
                    continue
                location, files = result
                written += files
                more = data.repoint(record, location, hold)
                compares += more[0]
                ops += more[1]
        except BaseException:
            self._finish(written, leases, False)
            raise
        if not ops:
            self._finish(written, leases, False)
            return None
        return HookWork(compares, ops, lambda ok: self._finish(written, leases, ok))

    # -- RECOVER needs the table's data ------------------------------------------

    def _recover_hook(
        self, base: CatalogVersion, new: CatalogVersion, update: VersionedUpdate
    ) -> HookWork | None:
        """Refuse a version that recovers a table whose current data snapshot
        cannot be read any more (its files deleted by hand, or by an engine
        that ignored ``gc.enabled=false``): it would bring back a table that
        every read fails on. A table that never had data recovers as it is."""
        for entry in update.entries:
            if not isinstance(entry, TableRecovered):
                continue
            table = new.tables_by_id.get(entry.table_id)
            schema = None if table is None else new.schema_by_id(table.schema_id)
            full = (
                str(entry.table_id)
                if table is None or schema is None
                else (f"{schema.name}.{table.name}")
            )
            data = self.data
            try:
                record = data.current_record(entry.table_id)
                if record is None:
                    continue
                files = [f.path for f in data.files_of(record)]
            except CatalogError as exc:
                raise _gone(full, str(exc)) from None
            infos = data.warehouse.fs.get_file_info(files) if files else []
            missing = [i.path for i in infos if i.type != pafs.FileType.File]
            if missing:
                more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
                raise _gone(full, f"data file '{missing[0]}'{more} is missing from the warehouse")
        return None

    def _finish(self, written: list[str], leases: list[int], ok: bool) -> None:
        if not ok:
            self.data.iceberg.remove(written)
        for lease in leases:
            self.data.staging.release(lease)


def _gone(full: str, why: str) -> ValidationError:
    return ValidationError(
        f"Table '{full}' cannot be recovered: its data is gone ({why}); it stays soft-deleted "
        "until its reserve ends and the purge removes it",
        table=full,
        rule="data-gone",
    )


def attach_data_plane(
    cat: Catalog, warehouse: str, *, janitor_interval_s: float | None = None
) -> DataPlane:
    """Give ``cat`` its data plane (once; a second call returns the first)."""
    with _lock:
        plane = _planes.get(cat)
        if plane is None:
            plane = DataPlane(cat, warehouse, janitor_interval_s)
            _planes[cat] = plane
        return plane


def warehouse_of(cat: Catalog) -> str | None:
    """Where the catalog's table data lives, None without a warehouse."""
    with _lock:
        plane = _planes.get(cat)
    return None if plane is None else plane.warehouse
