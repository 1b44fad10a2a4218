"""Distribution zones: how many partitions and replicas, and where."""

from __future__ import annotations

from dataclasses import dataclass, replace

from almanac.commands.base import (
    Command,
    IdAllocator,
    already_exists,
    check_name,
    check_text,
    find_zone,
    taken_by,
)
from almanac.errors import ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import shown
from almanac.model.descriptors import ConsistencyMode, Zone
from almanac.model.entries import DefaultZoneSet, UpdateEntry, ZoneAltered, ZoneCreated, ZoneDropped

__all__ = [
    "DEFAULT_ZONE_NAME",
    "AlterZone",
    "CreateZone",
    "DropZone",
    "RenameZone",
    "SetDefaultZone",
    "new_zone",
    "quorum_range",
]

DEFAULT_ZONE_NAME = "Default"
MAX_PARTITIONS = 65000
DEFAULT_PARTITIONS = 25
DEFAULT_REPLICAS = 1
DEFAULT_STORAGE_PROFILE = "default"
DEFAULT_NODE_FILTER = "$..*"
INFINITE_SECONDS = 2**31 - 1
MAX_REPLICAS = 2**31 - 1


def quorum_range(replicas: int) -> tuple[int, int]:
    """Allowed quorum sizes: at least min(r, 2), at most half the replicas rounded up."""
    low = min(replicas, 2)
    return low, max(low, (replicas + 1) // 2)


def _default_quorum(replicas: int) -> int:
    low, high = quorum_range(replicas)
    return min(max(replicas // 2 + 1, low), high)


def _check_replicas(zone: str, replicas: int) -> None:
    if (
        isinstance(replicas, bool)
        or not isinstance(replicas, int)
        or not 1 <= replicas <= MAX_REPLICAS
    ):
        raise ValidationError(
            f"Replicas of zone '{zone}' must be in [1, {MAX_REPLICAS}], got {shown(replicas)}",
            zone=zone,
            rule="replicas",
        )


def _check_quorum(zone: str, replicas: int, quorum: int) -> None:
    low, high = quorum_range(replicas)
    if isinstance(quorum, bool) or not isinstance(quorum, int) or not low <= quorum <= high:
        raise ValidationError(
            f"Quorum size of zone '{zone}' must be in [{low}, {high}] for {replicas} "
            f"replica(s), got {shown(quorum)}",
            zone=zone,
            rule="quorum",
        )


def _check_seconds(zone: str, what: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INFINITE_SECONDS:
        raise ValidationError(
            f"{what} of zone '{zone}' must be in [0, {INFINITE_SECONDS}] seconds "
            f"({INFINITE_SECONDS}: never), got {shown(value)}",
            zone=zone,
            rule="seconds",
        )


def _check_node_filter(zone: str, node_filter: object) -> None:
    if not isinstance(node_filter, str):
        raise ValidationError(
            f"Data nodes filter of zone '{zone}' must be a string, got {node_filter!r}",
            zone=zone,
            rule="node-filter",
        )
    check_text(f"Data nodes filter of zone '{zone}'", node_filter, zone=zone)


def _check_profiles(zone: str, profiles: object) -> tuple[str, ...]:
    if isinstance(profiles, str) or not isinstance(profiles, tuple | list):
        raise ValidationError(
            f"Storage profiles of zone '{zone}' must be a sequence of names, got {profiles!r}",
            zone=zone,
            rule="profiles",
        )
    profiles = tuple(profiles)
    if not profiles:
        raise ValidationError(
            f"Zone '{zone}' needs at least one storage profile", zone=zone, rule="profiles"
        )
    for p in profiles:
        check_name("Storage profile", p)
    if len(set(profiles)) != len(profiles):
        raise ValidationError(
            f"Storage profiles of zone '{zone}' contain duplicates: {list(profiles)}", zone=zone
        )
    return profiles


def new_zone(
    zone_id: int,
    name: str,
    *,
    partitions: int | None = None,
    replicas: int | None = None,
    quorum_size: int | None = None,
    scale_up_seconds: int | None = None,
    scale_down_seconds: int | None = None,
    node_filter: str | None = None,
    storage_profiles: tuple[str, ...] | None = None,
    consistency_mode: ConsistencyMode | None = None,
) -> Zone:
    """A validated zone descriptor, with documented defaults for what is not given."""
    parts = DEFAULT_PARTITIONS if partitions is None else partitions
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= MAX_PARTITIONS:
        raise ValidationError(
            f"Partitions of zone '{name}' must be in [1, {MAX_PARTITIONS}], got {shown(parts)}",
            zone=name,
            rule="partitions",
        )
    reps = DEFAULT_REPLICAS if replicas is None else replicas
    _check_replicas(name, reps)
    quorum = _default_quorum(reps) if quorum_size is None else quorum_size
    _check_quorum(name, reps, quorum)
    up = 0 if scale_up_seconds is None else scale_up_seconds
    down = INFINITE_SECONDS if scale_down_seconds is None else scale_down_seconds
    _check_seconds(name, "Scale-up delay", up)
    _check_seconds(name, "Scale-down delay", down)
    profiles = (
        (DEFAULT_STORAGE_PROFILE,)
        if storage_profiles is None
        else _check_profiles(name, storage_profiles)
    )
    mode = ConsistencyMode.STRONG if consistency_mode is None else consistency_mode
    if not isinstance(mode, ConsistencyMode):
        raise ValidationError(
            f"Consistency mode of zone '{name}' must be STRONG or HA, got {mode!r}", zone=name
        )
    if node_filter is not None:
        _check_node_filter(name, node_filter)
    return Zone(
        id=zone_id,
        name=name,
        partitions=parts,
        replicas=reps,
        quorum_size=quorum,
        scale_up_seconds=up,
        scale_down_seconds=down,
        node_filter=DEFAULT_NODE_FILTER if node_filter is None else node_filter,
        storage_profiles=profiles,
        consistency_mode=mode,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateZone(Command):
    name: str
    partitions: int | None = None
    replicas: int | None = None
    quorum_size: int | None = None
    scale_up_seconds: int | None = None
    scale_down_seconds: int | None = None
    node_filter: str | None = None
    storage_profiles: tuple[str, ...] | None = None
    consistency_mode: ConsistencyMode | None = None
    if_not_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Zone", self.name)
        existing = taken_by(version, "zone", self.name)
        if existing is not None:
            if self.if_not_exists:
                return []
            raise already_exists("Zone", self.name, version.zones_by_id[existing].name)
        ids = IdAllocator(version)
        zone = new_zone(
            ids.next(),
            self.name,
            partitions=self.partitions,
            replicas=self.replicas,
            quorum_size=self.quorum_size,
            scale_up_seconds=self.scale_up_seconds,
            scale_down_seconds=self.scale_down_seconds,
            node_filter=self.node_filter,
            storage_profiles=self.storage_profiles,
            consistency_mode=self.consistency_mode,
        )
        return ids.entries(ZoneCreated(zone))


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterZone(Command):
    """Changes what may change after creation; partitions and consistency may not."""

    name: str
    replicas: int | None = None
    quorum_size: int | None = None
    scale_up_seconds: int | None = None
    scale_down_seconds: int | None = None
    node_filter: str | None = None
    storage_profiles: tuple[str, ...] | None = None
    partitions: int | None = None
    consistency_mode: ConsistencyMode | None = None
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        zone = find_zone(version, self.name, missing_ok=self.if_exists)
        if zone is None:
            return []
        if self.partitions is not None and self.partitions != zone.partitions:
            raise ValidationError(
                f"Partitions of zone '{zone.name}' cannot change after creation "
                f"(has {zone.partitions}, asked {self.partitions})",
                zone=zone.name,
                rule="partitions-fixed",
            )
        if self.consistency_mode is not None and self.consistency_mode != zone.consistency_mode:
            raise ValidationError(
                f"Consistency mode of zone '{zone.name}' cannot change after creation "
                f"(has {zone.consistency_mode.name})",
                zone=zone.name,
                rule="consistency-fixed",
            )
        replicas = zone.replicas if self.replicas is None else self.replicas
        _check_replicas(zone.name, replicas)
        if self.quorum_size is not None:
            quorum = self.quorum_size
            _check_quorum(zone.name, replicas, quorum)
        else:
            low, high = quorum_range(replicas)
            quorum = min(max(zone.quorum_size, low), high)
        updated = replace(zone, replicas=replicas, quorum_size=quorum)
        if self.scale_up_seconds is not None:
            _check_seconds(zone.name, "Scale-up delay", self.scale_up_seconds)
            updated = replace(updated, scale_up_seconds=self.scale_up_seconds)
        if self.scale_down_seconds is not None:
            _check_seconds(zone.name, "Scale-down delay", self.scale_down_seconds)
            updated = replace(updated, scale_down_seconds=self.scale_down_seconds)
        if self.node_filter is not None:
            _check_node_filter(zone.name, self.node_filter)
            updated = replace(updated, node_filter=self.node_filter)
        if self.storage_profiles is not None:
            profiles = _check_profiles(zone.name, self.storage_profiles)
            for table in version.tables_by_id.values():
                if table.zone_id == zone.id and table.storage_profile not in profiles:
                    raise ValidationError(
                        f"Storage profile '{table.storage_profile}' of zone '{zone.name}' is "
                        f"used by table '{table.name}' and cannot be removed",
                        zone=zone.name,
                        rule="profile-in-use",
                    )
            updated = replace(updated, storage_profiles=profiles)
        if updated == zone:
            return []
        return [ZoneAltered(updated)]


@dataclass(frozen=True, slots=True)
class RenameZone(Command):
    name: str
    new_name: str
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        check_name("Zone", self.new_name)
        zone = find_zone(version, self.name, missing_ok=self.if_exists)
        if zone is None or self.new_name == zone.name:
            return []
        existing = taken_by(version, "zone", self.new_name, ignore=zone.id)
        if existing is not None:
            raise already_exists("Zone", self.new_name, version.zones_by_id[existing].name)
        return [ZoneAltered(replace(zone, name=self.new_name))]


@dataclass(frozen=True, slots=True)
class SetDefaultZone(Command):
    name: str
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        zone = find_zone(version, self.name, missing_ok=self.if_exists)
        if zone is None or version.default_zone_id == zone.id:
            return []
        return [DefaultZoneSet(zone.id)]


@dataclass(frozen=True, slots=True)
class DropZone(Command):
    name: str
    if_exists: bool = False

    def validate(self, version: CatalogVersion) -> list[UpdateEntry]:
        zone = find_zone(version, self.name, missing_ok=self.if_exists)
        if zone is None:
            return []
        if version.default_zone_id == zone.id:
            raise ValidationError(
                f"Zone '{zone.name}' is the default zone and cannot be dropped",
                zone=zone.name,
                rule="default-zone",
            )
        users = sorted(
            (t for t in version.tables_by_id.values() if t.zone_id == zone.id), key=lambda t: t.id
        )
        if users:
            schema = version.schema_by_id(users[0].schema_id)
            where = f"{schema.name}." if schema else ""
            held = " (soft-deleted: purge it first)" if users[0].soft_deleted else ""
            raise ValidationError(
                f"Zone '{zone.name}' is used by table '{where}{users[0].name}'{held} and cannot "
                "be dropped",
                zone=zone.name,
                rule="zone-in-use",
            )
        return [ZoneDropped(zone.id)]
