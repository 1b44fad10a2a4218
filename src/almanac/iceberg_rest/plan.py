"""Planning an Iceberg commit: requirements checked with pyiceberg's own
``TableRequirement.validate``, updates applied with pyiceberg's own
``update_table_metadata``, then what the result means for Almanac (a
``Change``; ``commit`` publishes it).

A schema change becomes the ALTER TABLE commands the equivalent DDL runs
(``mapping``); a new snapshot, or a change of branches and tags (``refs``),
becomes a data snapshot, so Almanac's time travel, retention and janitor
see it; properties go to their metastore key.

No update is dropped: the metadata the next load returns is what
pyiceberg's ``update_table_metadata`` makes of the loaded table, or the
commit is a 400 naming the update it refuses. What Almanac keeps itself is
the exception: ``last-updated-ms``, the metadata log, the timestamps of the
snapshot log, its ``almanac.*`` properties and snapshot summary entries, a
``last-column-id`` that may be higher (``tables``), and, before a table's
first snapshot, its schema history (it shows the catalog table's schema
only). A change the catalog's commands and the properties key do not carry
(a schema added but not made current, a schema removed, a ref's retention)
goes into a new metadata file of the current snapshot; before the first
snapshot, or together with a schema, spec or sort order change, there is
none to hold it, so it is refused. Statistics files are refused: the
janitor keeps only the table's data and metadata files.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import ManifestContent
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update import (
    AssertCreate,
    RemovePropertiesUpdate,
    SetPropertiesUpdate,
    TableUpdate,
    UpgradeFormatVersionUpdate,
    update_table_metadata,
)

from almanac.commands import Command
from almanac.commands.preview import preview
from almanac.data.commits import TableData
from almanac.data.deletes import check_delete_file
from almanac.data.iceberg_schema import (
    PARTITION_FIELD_ID,
    TABLE_ID_PROPERTY,
    WRITE_ID_PROPERTY,
    layout_properties,
)
from almanac.data.snapshots import (
    REFS,
)
from almanac.data.tablets import partition_column, table_partitions
from almanac.errors import CatalogError, InputError
from almanac.iceberg_rest.errors import CommitFailedError, refused
from almanac.iceberg_rest.mapping import (
    check_expressed,
    check_layout,
    create_command,
    in_order,
    layout_commands,
    schema_commands,
    zone_partitions,
)
from almanac.iceberg_rest.properties import (
    GC_ENABLED,
    Properties,
    check_gc,
    check_not_reserved,
    is_reserved,
    properties_key,
)
from almanac.iceberg_rest.refs import check_refs
from almanac.iceberg_rest.tables import Loaded, load, no_namespace, no_table
from almanac.model.catalog_version import CatalogVersion
from almanac.node.catalog import Catalog

__all__ = ["Change", "created", "one_namespace", "plan"]

_OPERATIONS = {
    Operation.APPEND: "append",
    Operation.REPLACE: "replace",
    Operation.OVERWRITE: "overwrite",
    Operation.DELETE: "overwrite",
}
_FORMAT_VERSION = 2
_EMPTY = MetastoreCatalog._empty_table_metadata()
"""pyiceberg's empty metadata, built once: building it costs milliseconds
(pydantic inspects its default factories every time), twice a staged create."""


def _empty() -> TableMetadata:
    """A staged create's starting point, as pyiceberg's own: a copy of
    ``_EMPTY`` with a uuid and an update time of its own."""
    return _EMPTY.model_copy(
        deep=True, update={"table_uuid": uuid.uuid4(), "last_updated_ms": time.time_ns() // 10**6}
    )


@dataclass(frozen=True, slots=True)
class Change:
    """One table's commit, checked and applied to its metadata, not yet published."""

    loaded: Loaded
    wanted: TableMetadata
    commands: tuple[Command, ...]
    operation: str | None
    """The data snapshot's operation, None when no snapshot is added."""
    properties: dict[str, str] | None
    """The table's new Iceberg properties, None when they do not change."""
    creates: bool = False
    """The table does not exist yet: ``commands`` create it (a staged create)."""
    added: tuple[str, ...] = ()
    """The files its new snapshots add (manifest lists, manifests, data files)."""
    needs: tuple[str, ...] = ()
    """Records of kept data snapshots whose files its refs rely on (``refs``)."""
    expired: tuple[str, ...] = ()
    """The write ids of the snapshots it removes (``expire_snapshots``)."""
    rewrite: bool = False
    """Its metadata changes beyond what the catalog and properties keep: a new
    metadata file of the same snapshot keeps them."""

    @property
    def full_name(self) -> str:
        return f"{self.loaded.namespace}.{self.loaded.table.name}"


def one_namespace(parts: Sequence[str], table: str | None = None) -> str:
    """The catalog schema an Iceberg namespace names. A schema is one level,
    so a deeper (or empty) namespace names nothing: a 404 like any missing
    namespace, NoSuchTable when ``table`` is looked up in it (the spec's
    answer for table lookups, which Spark's metadata-table fallback needs)."""
    if len(parts) == 1 and parts[0]:
        return parts[0]
    shown = ".".join(parts) or "(empty)"
    raise no_namespace(shown) if table is None else no_table(shown, table)


def plan(cat: Catalog, version: CatalogVersion, request: CommitTableRequest) -> Change:
    """Check the request's requirements and apply its updates to the table's
    metadata; a 400 for anything the catalog cannot express."""
    namespace = one_namespace(request.identifier.namespace.root, request.identifier.name)
    name = request.identifier.name
    if version.table(name, namespace) is None and any(
        isinstance(r, AssertCreate) for r in request.requirements
    ):
        return _plan_create(cat, version, namespace, name, request)
    loaded = load(cat, namespace, name, version)
    full = f"{namespace}.{loaded.table.name}"
    base = loaded.metadata
    for requirement in request.requirements:
        if isinstance(requirement, AssertCreate):
            raise CommitFailedError(f"Table '{full}' already exists", table=full)
        try:
            requirement.validate(base)
        except CommitFailedException as exc:
            raise CommitFailedError(f"Table '{full}': {exc}", table=full) from None
    updates = _present_removals(base, request.updates)
    try:
        return _planned(cat, loaded, updates)
    except InputError as exc:
        raise _named(exc, _culprit(cat, loaded, updates, exc)) from None


def _planned(cat: Catalog, loaded: Loaded, updates: Sequence[TableUpdate]) -> Change:
    """``updates`` applied to the loaded table and turned into what carries
    each of them (see the module docstring); a 400 for any the catalog would
    not keep."""
    namespace = loaded.namespace
    full = f"{namespace}.{loaded.table.name}"
    base = loaded.metadata
    upgrades = {u.format_version for u in updates if isinstance(u, UpgradeFormatVersionUpdate)}
    if upgrades - {base.format_version}:
        raise _format_stays(full, base.format_version)
    try:
        wanted = update_table_metadata(base, tuple(updates))
    except CatalogError:
        raise
    except Exception as exc:  # pyiceberg refuses an update: the client's doing
        raise refused(f"Table '{full}': {exc}", table=full, rule="iceberg-update") from None
    _check_expressible(full, base, wanted)
    _check_statistics(full, base, wanted)
    schema: list[Command] = []
    if wanted.schema() != base.schema():
        schema = schema_commands(namespace, loaded.table, base.schema(), wanted.schema())
    tablet = PARTITION_FIELD_ID if partition_column(loaded.table) is not None else None
    layout = layout_commands(namespace, loaded.table, tablet, base, wanted)
    commands = in_order(schema, layout, base)
    operation = None
    added: tuple[str, ...] = ()
    needs = check_refs(TableData.for_catalog(cat), full, loaded.table.id, base, wanted)
    if wanted.current_snapshot_id != base.current_snapshot_id or wanted.refs != base.refs:
        operation = _operation(base, wanted)
    if operation is not None:
        added = _check_files(cat, full, loaded.table.id, base, wanted)
    expired = _expired(full, base, wanted, commands, operation)
    properties = None
    if wanted.properties != base.properties:
        _check_properties(full, base.properties, wanted.properties)
        properties = {
            k: v for k, v in wanted.properties.items() if not is_reserved(k) and k != GC_ENABLED
        }
    rewrite = False
    if operation is None and {s.snapshot_id for s in wanted.snapshots} - {
        s.snapshot_id for s in base.snapshots
    }:
        raise refused(
            f"Table '{full}': a snapshot the commit adds must become its current snapshot "
            "(Almanac keeps no staged snapshots: their files would not be checked or kept)",
            table=full,
            rule="staged-snapshot",
        )
    if operation is None:
        unkept = _unkept(base, wanted, bool(commands))
        if unkept and (commands or loaded.record is None):
            when = (
                "with a schema, partition spec or sort order change"
                if commands
                else "before the table's first snapshot"
            )
            raise refused(
                f"Table '{full}': its {', '.join(unkept)} cannot change {when} (Almanac keeps "
                "them in the metadata file of a snapshot); commit them on their own",
                table=full,
                rule="kept-metadata",
            )
        rewrite = bool(unkept)
    return Change(
        loaded,
        wanted,
        commands,
        operation,
        properties,
        added=added,
        needs=needs,
        expired=expired,
        rewrite=rewrite,
    )


_KEPT_APART = {"last_updated_ms", "metadata_log", "properties"}
"""Metadata fields kept otherwise: the time and the log are Almanac's, the
properties have their metastore key."""
_BY_COMMANDS = {
    "schemas",
    "current_schema_id",
    "last_column_id",
    "partition_specs",
    "default_spec_id",
    "last_partition_id",
    "sort_orders",
    "default_sort_order_id",
}
"""Metadata fields the catalog's commands carry (the schema, specs and
sort orders Almanac writes after an ALTER TABLE)."""


def _unkept(base: TableMetadata, wanted: TableMetadata, commands: bool) -> list[str]:
    """The metadata fields a commit changes that neither its catalog commands
    nor its properties carry: only a new metadata file keeps them."""
    skip = _KEPT_APART | (_BY_COMMANDS if commands else set())
    fields = type(wanted).model_fields
    unkept = [
        (fields[name].alias or name)
        for name in fields
        if name not in skip and getattr(base, name, None) != getattr(wanted, name, None)
    ]
    if commands and {s.schema_id for s in base.schemas} - {s.schema_id for s in wanted.schemas}:
        unkept.append("schemas")  # the commands add schemas; removing one takes a file
    return unkept


def _culprit(
    cat: Catalog, loaded: Loaded, updates: Sequence[TableUpdate], exc: CatalogError
) -> str:
    """The update a refusal is due to: the first whose prefix of the commit
    is refused by the same rule (several, when only together they are)."""
    rule = exc.context.get("rule")
    for k in range(1, len(updates)):
        try:
            _planned(cat, loaded, updates[:k])
        except InputError as early:
            if early.context.get("rule") == rule:
                return updates[k - 1].action
    if updates and rule not in _COMBINED:
        return updates[-1].action
    return ", ".join(dict.fromkeys(u.action for u in updates))


_COMBINED = {"kept-metadata"}
"""Rules a commit can break only through several updates together."""


def _named(exc: InputError, culprit: str) -> InputError:
    """``exc`` naming the commit's update(s) it refuses."""
    message = f"{exc.message} (refused update: {culprit})"
    return type(exc)(message, **{**exc.context, "update": culprit})


def _expired(
    full: str,
    base: TableMetadata,
    wanted: TableMetadata,
    commands: tuple[Command, ...],
    operation: str | None,
) -> tuple[str, ...]:
    """The write ids of the snapshots the commit removes: they leave the
    table's metadata, and their data snapshots stay for time travel until
    the janitor finds no kept catalog version reading them
    (``almanac.data.expired``)."""
    kept = {s.snapshot_id for s in wanted.snapshots}
    gone = [s for s in base.snapshots if s.snapshot_id not in kept]
    if gone and commands and operation is None:
        raise refused(
            f"Table '{full}': expire snapshots in a commit of their own, not with a change of "
            "its schema or layout",
            table=full,
            rule="expire-snapshots",
        )
    return tuple(
        str(s.summary.additional_properties[WRITE_ID_PROPERTY])
        for s in gone
        if s.summary is not None and WRITE_ID_PROPERTY in s.summary.additional_properties
    )


def _present_removals(
    base: TableMetadata, updates: Sequence[TableUpdate]
) -> tuple[TableUpdate, ...]:
    """``updates`` with each ``remove-properties`` cut to the keys set at that
    point: removing an absent property changes nothing, as in Iceberg's own
    catalogs (Spark's ``UNSET TBLPROPERTIES`` sends such removals), where
    pyiceberg's code would fail with a bare ``KeyError``."""
    present = set(base.properties)
    out: list[TableUpdate] = []
    for update in updates:
        if isinstance(update, RemovePropertiesUpdate):
            update = RemovePropertiesUpdate(removals=[k for k in update.removals if k in present])
            present.difference_update(update.removals)
        elif isinstance(update, SetPropertiesUpdate):
            present.update(update.updates)
        out.append(update)
    return tuple(out)


def _plan_create(
    cat: Catalog, version: CatalogVersion, namespace: str, name: str, request: CommitTableRequest
) -> Change:
    """A staged create's commit: the updates build the table from nothing."""
    full = f"{namespace}.{name}"
    for requirement in request.requirements:
        try:
            requirement.validate(None)
        except CommitFailedException as exc:
            raise CommitFailedError(f"Table '{full}': {exc}", table=full) from None
    try:
        empty = _empty()
        wanted = update_table_metadata(empty, _present_removals(empty, request.updates))
    except CatalogError:
        raise
    except Exception as exc:  # pyiceberg refuses an update: the client's doing
        raise refused(f"Table '{full}': {exc}", table=full, rule="iceberg-update") from None
    return created(cat, version, namespace, name, wanted)


def created(
    cat: Catalog,
    version: CatalogVersion,
    namespace: str,
    name: str,
    wanted: TableMetadata,
    *,
    relocate: bool = False,
) -> Change:
    """The change that creates table ``namespace.name`` as ``wanted`` says,
    with its snapshot if it has one (a staged create, a registration): its
    field ids must be the column ids the catalog gives, and its location the
    table's (``relocate``, for a registration, moves it there: files already
    written keep their paths, new ones go to the table's location)."""
    full = f"{namespace}.{name}"
    create = create_command(
        namespace,
        name,
        wanted.schema(),
        wanted.spec(),
        wanted.sort_order(),
        zone_partitions(version),
    )
    planned = preview(version, [create]).catalog
    made = planned.table(name, namespace)
    if made is None:  # pragma: no cover - preview either makes it or raises
        raise refused(f"Table '{full}' cannot be created")
    check_expressed(full, made, wanted.schema())
    check_layout(full, made, table_partitions(planned, made), wanted)
    if wanted.format_version != _FORMAT_VERSION:
        raise refused(
            f"Table '{full}' must be Iceberg format version {_FORMAT_VERSION}, "
            f"not {wanted.format_version}",
            table=full,
            rule="format-version",
        )
    data = TableData.for_catalog(cat)
    check_refs(data, full, made.id, _EMPTY, wanted)
    location = data.warehouse.table_dir(made.id)
    if relocate:
        wanted = wanted.model_copy(update={"location": location})
    if wanted.location.rstrip("/") != location:
        raise CommitFailedError(
            f"Table '{full}' was staged at '{wanted.location}', but it would be created at "
            f"'{location}' (another table was created meanwhile); stage it again",
            table=full,
        )
    operation = None
    added: tuple[str, ...] = ()
    if wanted.current_snapshot() is not None:
        added = _check_files(cat, full, made.id, None, wanted, registered=relocate)
        operation = _operation(None, wanted)
    if not relocate:  # a registered table's own gc.enabled gives way to the catalog's
        check_gc(full, wanted.properties)
    properties = {k: v for k, v in wanted.properties.items() if not is_reserved(k)}
    properties.pop(GC_ENABLED, None)
    wanted = wanted.model_copy(
        update={
            "properties": {
                **wanted.properties,
                GC_ENABLED: "false",
                TABLE_ID_PROPERTY: str(made.id),
                **layout_properties(made, table_partitions(planned, made)),
            }
        }
    )
    stored = Properties(properties_key("table", made.id), {}, 0)
    loaded = Loaded(namespace, made, planned, None, stored, wanted)
    return Change(
        loaded, wanted, (create,), operation, properties or None, creates=True, added=added
    )


def _operation(base: TableMetadata | None, wanted: TableMetadata) -> str:
    """The data snapshot's operation: what the snapshots the commit adds do
    together (pyiceberg's overwrite adds a delete and then an append); a
    commit that leaves ``main`` alone changes only refs, one that moves it
    to a snapshot the table had overwrites (see ``refs``)."""
    known = set() if base is None else {s.snapshot_id for s in base.snapshots}
    if base is not None and wanted.current_snapshot_id == base.current_snapshot_id:
        return REFS
    if wanted.current_snapshot_id in known:
        return "overwrite"
    done = {
        _OPERATIONS[s.summary.operation] if s.summary is not None else "append"
        for s in wanted.snapshots
        if s.snapshot_id not in known
    }
    if "overwrite" in done or _replaces(base, wanted):
        return "overwrite"
    return "replace" if done == {"replace"} else "append"


def _replaces(base: TableMetadata | None, wanted: TableMetadata) -> bool:
    """Whether the new current snapshot does not descend from the old one:
    a replace (``CREATE OR REPLACE TABLE ... AS SELECT``) starts anew."""
    if base is None or base.current_snapshot_id is None:
        return False
    snapshot = wanted.current_snapshot()
    while snapshot is not None:
        if snapshot.snapshot_id == base.current_snapshot_id:
            return False
        parent = snapshot.parent_snapshot_id
        snapshot = None if parent is None else wanted.snapshot_by_id(parent)
    return True


def _check_files(
    cat: Catalog,
    full: str,
    table_id: int,
    base: TableMetadata | None,
    wanted: TableMetadata,
    *,
    registered: bool = False,
) -> tuple[str, ...]:
    """The files a commit adds are the table's own, and data or position
    delete files; returns them (but those a branch or tag already keeps,
    which a cherry-pick adds again).

    Every manifest list, manifest and data file its new snapshots add must
    be below the table's location, spelled as the warehouse lists it (no
    ``file:``, ``//``, ``..``) and not resolving elsewhere through a
    symlink: a file elsewhere (another table's, say) would be deleted under
    it when its owner's janitor collects it. A ``registered`` table's files
    are the opposite: all outside the catalog's warehouse however spelled,
    where no janitor ever deletes. Position delete files (merge-on-read) are
    applied by every Almanac reader (``almanac.data.deletes``); equality
    deletes and deletion vectors are refused, as Almanac would not apply them."""
    known = set() if base is None else {s.snapshot_id for s in base.snapshots}
    added = {s.snapshot_id for s in wanted.snapshots} - known
    if not added:
        return ()
    data = TableData.for_catalog(cat)
    warehouse = data.warehouse
    paths: list[str] = []

    def outside(path: str) -> bool:
        paths.append(path)
        if registered:
            return warehouse.within(path) or ("://" not in path and not path.startswith("/"))
        return warehouse.normal(path) != path or warehouse.inside(path, table_id) is None

    def refuse(what: str, rule: str) -> CatalogError:
        return refused(f"Table '{full}': {what}", table=full, rule=rule)

    io = data.iceberg.io
    held: frozenset[str] | None = None

    def new_data_file(path: str) -> bool:
        """A file a branch or tag of ``base`` already holds (a cherry-pick
        adds it again) is kept by the table, whatever its age."""
        nonlocal held
        if held is None:
            held = frozenset() if base is None else data.iceberg.ref_files(base)
        return path not in held

    try:
        for new in (s for s in wanted.snapshots if s.snapshot_id in added):
            if outside(new.manifest_list):
                raise refuse(
                    f"manifest list '{new.manifest_list}' is not where the table's files "
                    f"belong ({_place(wanted, registered)})",
                    "file-location",
                )
            for manifest in new.manifests(io):
                deletes = manifest.content == ManifestContent.DELETES
                if manifest.added_snapshot_id not in added:
                    continue
                if outside(manifest.manifest_path):
                    raise refuse(
                        f"manifest '{manifest.manifest_path}' is not where the table's files "
                        f"belong ({_place(wanted, registered)})",
                        "file-location",
                    )
                for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                    if entry.snapshot_id not in added:
                        continue
                    problem = check_delete_file(entry.data_file, full) if deletes else None
                    if problem is not None:
                        raise refused(problem.message, **problem.context)
                    path = entry.data_file.file_path
                    if new_data_file(path) and outside(path):
                        raise refuse(
                            f"{'delete' if deletes else 'data'} file "
                            f"'{entry.data_file.file_path}' is not where the table's "
                            f"files belong ({_place(wanted, registered)})",
                            "file-location",
                        )
    except CatalogError:
        raise
    except Exception as exc:  # the client's files: missing or damaged
        raise refuse(
            f"the files of its new snapshot cannot be read ({type(exc).__name__})",
            "snapshot-files",
        ) from None
    return tuple(paths)


def _place(wanted: TableMetadata, registered: bool) -> str:
    if registered:
        return "outside the catalog's warehouse, for a registered table"
    return f"below its location '{wanted.location}'"


def _check_expressible(full: str, base: TableMetadata, wanted: TableMetadata) -> None:
    def no(what: str, rule: str) -> CatalogError:
        return refused(f"Table '{full}': {what}", table=full, rule=rule)

    if wanted.table_uuid != base.table_uuid:
        raise no("its table uuid cannot change", "table-uuid")
    if wanted.location != base.location:
        raise no("its location is the catalog's and cannot change", "location")
    if wanted.format_version != base.format_version:
        raise _format_stays(full, base.format_version)
    kept = {s.spec_id: s for s in wanted.partition_specs}
    for spec in base.partition_specs:
        if spec.spec_id not in kept:
            raise no(f"partition spec {spec.spec_id} cannot be removed", "partition-spec")
    after = {s.snapshot_id for s in wanted.snapshots}
    if base.current_snapshot_id is not None and base.current_snapshot_id not in after:
        raise no(
            f"its current snapshot {base.current_snapshot_id} cannot be expired",
            "expire-current-snapshot",
        )


def _format_stays(full: str, version: int) -> CatalogError:
    """Tables stay at their format version: Almanac serves version 2 (and
    pyiceberg 0.12, whose update code applies every commit, writes no higher),
    so merge-on-read deletes arrive as position delete files, never as
    version 3's deletion vectors."""
    return refused(
        f"Table '{full}': it stays at Iceberg format version {version} (Almanac serves "
        "format version 2 tables: merge-on-read deletes are position delete files, not "
        "version 3's deletion vectors)",
        table=full,
        rule="format-version",
    )


def _check_statistics(full: str, base: TableMetadata, wanted: TableMetadata) -> None:
    """Statistics files are refused: the janitor keeps a table's data and
    metadata files only, so it would delete them under the metadata naming
    them."""
    if (wanted.statistics, wanted.partition_statistics) != (
        base.statistics,
        base.partition_statistics,
    ):
        raise refused(
            f"Table '{full}': statistics files are not kept (Almanac's janitor keeps a "
            "table's data and metadata files only)",
            table=full,
            rule="statistics",
        )


def _check_properties(full: str, before: dict[str, str], after: dict[str, str]) -> None:
    check_gc(full, after, served=True)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    check_not_reserved(full, changed)
