"""Reading the Iceberg metadata of our tables: ``metadata.json``, manifest
lists and manifests (cached: they are immutable), the live data files of a
snapshot with the position deletes that apply to them, and every file a
``metadata.json`` keeps alive. Writing the next ``metadata.json`` is
``iceberg_write``; the schema and spec mapping is ``iceberg_schema``; files
and bounds are ``iceberg_files``.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile as IcebergFile
from pyiceberg.manifest import ManifestContent, ManifestFile
from pyiceberg.partitioning import PartitionSpec as IcebergSpec
from pyiceberg.serializers import Compressor, GzipCompressor
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil
from pyiceberg.types import PrimitiveType

from almanac.data.bounded_io import BoundedFileIO, gunzip_bounded
from almanac.data.deletes import plan_deletes
from almanac.data.files import DataFile
from almanac.data.iceberg_files import from_iceberg_file
from almanac.data.iceberg_schema import (
    PARTITION_FIELD_ID,
    TABLET_COLUMN_PROPERTY,
    TABLET_FIELD,
    TABLETS_PROPERTY,
    WRITE_ID_PROPERTY,
    partition_fields,
)
from almanac.data.tablets import tablet_position
from almanac.errors import CatalogError, CorruptLogError
from almanac.model.partitioning import PartitionField

__all__ = ["IcebergReader", "MetadataFiles"]

_METADATA_CACHE = 64
"""Parsed metadata.json files kept (each lists every snapshot of its table)."""
_MANIFEST_CACHE = 4096


def _reason(exc: BaseException) -> str:
    """The first line of an exception, with its type (for a file that does not parse)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


@contextlib.contextmanager
def _reading(what: str, path: str) -> Iterator[None]:
    """A file of the table's Iceberg metadata read inside: missing, it is a
    ``CatalogError``; unreadable (damaged storage: Avro, pydantic, JSON,
    UTF-8, I/O, ...), a ``CorruptLogError``; each naming it."""
    try:
        yield
    except FileNotFoundError as exc:
        raise CatalogError(f"{what} '{path}' is missing from the warehouse", path=path) from exc
    except CatalogError:
        raise
    except Exception as exc:
        raise CorruptLogError(f"{what} '{path}' cannot be read: {_reason(exc)}", path=path) from exc


def _tablet_at(metadata: TableMetadata, spec: IcebergSpec | None, partitions: int) -> int | None:
    """Which field of ``spec`` holds a file's tablet (see
    ``almanac.data.tablets``): the ``bucket[partitions]`` of the table's
    tablet column, or the hidden ``tablet`` field of a table whose metadata
    predates the tablet column property; None when none does."""
    if spec is None or not spec.fields:
        return None
    fields = [(f.source_id, str(f.transform)) for f in spec.fields]
    column = metadata.properties.get(TABLET_COLUMN_PROPERTY, "")
    if column.isdigit():
        return tablet_position(fields, int(column), partitions)
    first = spec.fields[0]
    if first.field_id == PARTITION_FIELD_ID and first.name == TABLET_FIELD:
        return 0
    return None


def _ref_targets(metadata: TableMetadata) -> list[int]:
    """The snapshots the metadata's branches and tags point at, but its
    current one, sorted."""
    targets = {r.snapshot_id for r in metadata.refs.values()} - {metadata.current_snapshot_id}
    return sorted(t for t in targets if t is not None and metadata.snapshot_by_id(t) is not None)


@dataclass(frozen=True, slots=True)
class MetadataFiles:
    """Every warehouse file one ``metadata.json`` needs but its data files:
    itself, its snapshots' manifest lists, their manifests and its delete files."""

    metadata: str
    manifest_lists: frozenset[str]
    manifests: frozenset[str]
    deletes: frozenset[str] = frozenset()
    """Its position delete files (merge-on-read): data, but listed in delete
    manifests rather than on ``DataFile``s only."""
    ref_files: frozenset[str] = frozenset()
    """The data and delete files of the snapshots its branches and tags
    point at (but its current one)."""

    def all(self) -> frozenset[str]:
        return (
            frozenset({self.metadata})
            | self.manifest_lists
            | self.manifests
            | self.deletes
            | self.ref_files
        )


class IcebergReader:
    """Reading Iceberg metadata in one warehouse. Parsed metadata files and
    manifests are immutable, so they are cached (bounded). Every read is
    bounded in size and of regular files only (``bounded_io``): a
    registered table's files are wherever its client put them."""

    def __init__(self, io: FileIO | None = None) -> None:
        self.io = io or BoundedFileIO()
        self._metadata: OrderedDict[str, TableMetadata] = OrderedDict()
        self._manifests: OrderedDict[str, tuple[tuple[DataFile, IcebergFile, int], ...]] = (
            OrderedDict()
        )
        self._planned: OrderedDict[str, list[tuple[DataFile, IcebergFile]]] = OrderedDict()
        self._lock = threading.Lock()

    def _cached(self, cache: OrderedDict[str, Any], key: str) -> Any:
        with self._lock:
            value = cache.get(key)
            if value is not None:
                cache.move_to_end(key)
            return value

    def _remember(self, cache: OrderedDict[str, Any], key: str, value: Any) -> None:
        limit = _MANIFEST_CACHE if cache is self._manifests else _METADATA_CACHE
        with self._lock:
            cache[key] = value
            while len(cache) > limit:
                cache.popitem(last=False)

    def metadata(self, location: str) -> TableMetadata:
        """The parsed ``metadata.json``; ``CatalogError`` if it is missing and
        ``CorruptLogError`` if it does not parse."""
        cached = self._cached(self._metadata, location)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        with _reading("Iceberg metadata file", location):
            with self.io.new_input(location).open() as stream:
                raw = stream.read()
            if isinstance(Compressor.get_compressor(location), GzipCompressor):
                raw = gunzip_bounded(location, raw)
            metadata = TableMetadataUtil.parse_raw(raw.decode("utf-8"))
        self._remember(self._metadata, location, metadata)
        return metadata

    def check_current(self, location: str, write_id: str) -> None:
        """``CorruptLogError`` unless the current snapshot of ``location`` is the
        one write ``write_id`` committed: a ``metadata.json`` edited or damaged
        so that it names another snapshot (or none) must not read as another
        set of files, nor leave the janitor thinking the table's files are
        unreferenced."""
        snapshot = self.metadata(location).current_snapshot()
        found = None if snapshot is None else snapshot.summary
        written = None if found is None else found.additional_properties.get(WRITE_ID_PROPERTY)
        if written != write_id:
            raise CorruptLogError(
                f"Iceberg metadata file '{location}' does not name the snapshot of write "
                f"{write_id} as current (it names "
                f"{'no snapshot' if snapshot is None else f'snapshot {snapshot.snapshot_id}'}"
                f" of write {written}); the file was changed or damaged",
                path=location,
            )

    def _types(self, metadata: TableMetadata) -> dict[int, PrimitiveType]:
        types: dict[int, PrimitiveType] = {}
        for schema in sorted(metadata.schemas, key=lambda s: s.schema_id):
            for f in schema.fields:
                if isinstance(f.field_type, PrimitiveType):
                    types[f.field_id] = f.field_type
        current = metadata.schema()
        for f in current.fields:
            if isinstance(f.field_type, PrimitiveType):
                types[f.field_id] = f.field_type
        return types

    def manifests(
        self, metadata: TableMetadata, snapshot_id: int | None = None
    ) -> list[ManifestFile]:
        """The manifests of snapshot ``snapshot_id`` (default: the current one)."""
        snapshot = (
            metadata.current_snapshot()
            if snapshot_id is None
            else metadata.snapshot_by_id(snapshot_id)
        )
        if snapshot is None and snapshot_id is not None:
            raise CorruptLogError(
                f"Iceberg metadata of the table at '{metadata.location}' has no snapshot "
                f"{snapshot_id}",
                path=metadata.location,
            )
        if snapshot is None:
            return []
        with _reading("Iceberg manifest list", snapshot.manifest_list):
            return list(snapshot.manifests(self.io))

    def _entries(
        self, manifest: ManifestFile, metadata: TableMetadata
    ) -> tuple[tuple[DataFile, IcebergFile, int], ...]:
        """The manifest's live files, each with its data sequence number (a
        delete manifest's files as they are, for ``plan_deletes``)."""
        spec = metadata.specs().get(manifest.partition_spec_id)
        tablets = metadata.properties.get(TABLETS_PROPERTY, "")
        partitions = int(tablets) if tablets.isdigit() and int(tablets) > 0 else 0
        tablet_at = _tablet_at(metadata, spec, partitions)
        # The tablets a manifest's files get follow from the metadata's layout
        # properties too, so they are part of the key.
        key = f"{manifest.manifest_path}\0{tablet_at}\0{partitions}"
        cached = self._cached(self._manifests, key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        types = self._types(metadata)
        with _reading("Iceberg manifest", manifest.manifest_path):
            entries = manifest.fetch_manifest_entry(self.io, discard_deleted=True)
        result = tuple(
            (
                from_iceberg_file(e.data_file, types, tablet_at, partitions),
                e.data_file,
                e.sequence_number or 0,
            )
            for e in entries
        )
        self._remember(self._manifests, key, result)
        return result

    def entries(
        self, location: str, snapshot_id: int | None = None
    ) -> list[tuple[DataFile, IcebergFile]]:
        """The live data files of snapshot ``snapshot_id`` of ``location``
        (default: its current snapshot), each with the position delete files
        that apply to it (``DataFile.deletes``, see ``almanac.data.deletes``)."""
        key = location if snapshot_id is None else f"{location}\0{snapshot_id}"
        planned = self._cached(self._planned, key)
        if planned is not None:
            return planned  # type: ignore[no-any-return]
        metadata = self.metadata(location)
        data: list[tuple[DataFile, IcebergFile, int]] = []
        deletes: list[tuple[IcebergFile, int]] = []
        for manifest in self.manifests(metadata, snapshot_id):
            if manifest.content == ManifestContent.DELETES:
                deletes.extend((e, n) for _, e, n in self._entries(manifest, metadata))
            else:
                data.extend(self._entries(manifest, metadata))
        if not deletes:
            return [(f, e) for f, e, _ in data]
        out = plan_deletes(data, deletes, metadata.specs(), metadata.location)
        self._remember(self._planned, key, out)
        return out

    def delete_files(self, location: str) -> list[IcebergFile]:
        """The live delete files of the current snapshot of ``location``."""
        metadata = self.metadata(location)
        return [
            e
            for manifest in self.manifests(metadata)
            if manifest.content == ManifestContent.DELETES
            for _, e, _ in self._entries(manifest, metadata)
        ]

    def files(self, location: str, snapshot_id: int | None = None) -> tuple[DataFile, ...]:
        return tuple(f for f, _ in self.entries(location, snapshot_id))

    def spec_fields(self, location: str) -> dict[int, tuple[PartitionField, ...]]:
        """Every partition spec of ``location`` by its Iceberg id, as the
        fields files written under it record values for (``DataFile.spec_id``
        is that id): what the planner prunes each file by."""
        return {i: partition_fields(spec) for i, spec in self.metadata(location).specs().items()}

    def referenced(self, location: str) -> MetadataFiles:
        """The metadata files the current snapshot of ``location`` needs, and
        every file the snapshots its branches and tags point at need: a ref
        keeps its snapshot readable for as long as the metadata is kept."""
        metadata = self.metadata(location)
        snapshot = metadata.current_snapshot()
        if snapshot is None:
            return MetadataFiles(location, frozenset(), frozenset())
        lists = {snapshot.manifest_list}
        manifests = {m.manifest_path for m in self.manifests(metadata)}
        for target in _ref_targets(metadata):
            found = metadata.snapshot_by_id(target)
            assert found is not None  # _ref_targets lists held snapshots only
            lists.add(found.manifest_list)
            manifests.update(m.manifest_path for m in self.manifests(metadata, target))
        deletes = frozenset(f.file_path for f in self.delete_files(location))
        return MetadataFiles(
            location,
            frozenset(lists),
            frozenset(manifests),
            deletes,
            self.ref_files(metadata),
        )

    def ref_files(self, metadata: TableMetadata) -> frozenset[str]:
        """The data and delete files of the snapshots the branches and tags
        of ``metadata`` point at, but for its current one's."""
        return frozenset(
            e.file_path
            for target in _ref_targets(metadata)
            for manifest in self.manifests(metadata, target)
            for _, e, _ in self._entries(manifest, metadata)
        )

    def snapshot_id(self, location: str) -> int | None:
        """The Iceberg id of the current snapshot of ``location``."""
        return self.metadata(location).current_snapshot_id
