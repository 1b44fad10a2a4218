"""The update log on every metastore backend: append, replay, follow, races."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac.metastore import MemoryMetastore, Metastore, SqliteMetastore
from almanac.model.entries import VersionedUpdate
from almanac.model.schema_sync import SchemaSync
from almanac.node.catalog import Catalog
from almanac.node.log import UpdateLog
from tests.durable.support import digest, replay_store, table

NO_WAIT = SchemaSync(delay_ms=0, max_clock_skew_ms=0)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Metastore]:
    s: Metastore = (
        MemoryMetastore() if request.param == "memory" else SqliteMetastore(tmp_path / "c.db")
    )
    yield s
    s.close()


def node(store: Metastore, **kwargs: object) -> Catalog:
    return Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT, **kwargs)  # type: ignore[arg-type]


def test_versions_are_appended_contiguously_and_replay_equal(store: Metastore) -> None:
    with node(store) as cat:
        for i in range(20):
            cat.execute([table(f"T{i}")])
        assert cat.latest_version == 21
        assert digest(replay_store(store)) == digest(cat.catalog())
        acts = [cat.catalog(v).activation_time for v in range(0, 22)]
        assert acts == sorted(set(acts))


def test_second_node_follows_and_matches_byte_for_byte(store: Metastore) -> None:
    with node(store) as a, node(store) as b:
        seen: list[int] = []
        b.listen(almanac.EventType.TABLE_CREATE, lambda e: seen.append(e.version))
        for i in range(10):
            a.execute([table(f"T{i}")])
        assert b.catalog_ready(a.latest_version, timeout=10)
        for v in range(1, a.latest_version + 1):
            assert digest(a.catalog(v)) == digest(b.catalog(v))
        assert seen == list(range(2, 12))


def test_lost_race_revalidates_and_retries(store: Metastore) -> None:
    with node(store) as a, node(store) as b:
        a.execute([table("A")])
        assert b.catalog_ready(2, timeout=10)
        raced = threading.Event()
        original = b.log.append

        def racing_append(update: VersionedUpdate, **kw: object) -> int | None:
            if not raced.is_set():
                raced.set()
                a.execute([table("FROM_A")])
            return original(update, **kw)  # type: ignore[arg-type]

        b.log.append = racing_append  # type: ignore[method-assign]
        result = b.execute([table("FROM_B")])
        assert result.version == 4
        version = b.catalog()
        assert version.table("FROM_A") is not None and version.table("FROM_B") is not None
        assert b.catalog(3).table("FROM_A") is not None and b.catalog(3).table("FROM_B") is None


def test_command_invalid_after_race_fails_with_its_own_error(store: Metastore) -> None:
    with node(store) as a, node(store) as b:
        original = b.log.append

        def racing_append(update: VersionedUpdate, **kw: object) -> int | None:
            if a.catalog().table("T") is None:
                a.execute([table("T")])
            return original(update, **kw)  # type: ignore[arg-type]

        b.log.append = racing_append  # type: ignore[method-assign]
        with pytest.raises(almanac.AlreadyExistsError, match=r"'PUBLIC\.T' already exists"):
            b.execute([table("T")])


def test_conflict_error_after_bounded_attempts(store: Metastore) -> None:
    with node(store) as a, node(store, max_attempts=3) as b:
        original = b.log.append
        counter = iter(range(100))

        def always_racing(update: VersionedUpdate, **kw: object) -> int | None:
            a.execute([table(f"R{next(counter)}")])
            return original(update, **kw)  # type: ignore[arg-type]

        b.log.append = always_racing  # type: ignore[method-assign]
        before = a.latest_version
        with pytest.raises(almanac.ConflictError, match="3 attempts") as info:
            b.execute([table("NEVER")])
        assert info.value.attempts == 3
        assert a.latest_version == before + 3
        assert a.catalog().table("NEVER") is None


def test_execute_async_overlaps_and_keeps_versions_contiguous(store: Metastore) -> None:
    with node(store) as cat:
        futures = [cat.execute_async([table(f"T{i}")]) for i in range(16)]
        versions = sorted(f.result(timeout=60).version for f in futures)
        assert versions == list(range(2, 18))
        assert len(cat.catalog().tables()) == 16


def test_snapshot_truncates_and_reports_earliest(store: Metastore) -> None:
    with node(store) as cat:
        for i in range(10):
            cat.execute([table(f"T{i}")])
        expected = digest(cat.catalog())
        assert cat.checkpoint_log(6) == 6
        assert cat.earliest_version == 6
        with pytest.raises(almanac.VersionNotFoundError, match="earliest available version is 6"):
            cat.catalog(5)
        assert cat.catalog(6).version == 6
        assert digest(replay_store(store)) == expected
    with node(store) as again:
        assert again.earliest_version == 6
        assert digest(again.catalog()) == expected
        assert again.execute([table("AFTER")]).version == 12


def test_snapshot_never_passes_a_pinned_version(store: Metastore) -> None:
    with node(store) as cat, node(store) as other:
        for i in range(10):
            cat.execute([table(f"T{i}")])
        assert other.catalog_ready(11, timeout=10)
        with other.pin(4) as pinned:
            assert pinned.version == 4
            assert cat.checkpoint_log() == 4
            assert other.catalog(4).version == 4
        assert cat.checkpoint_log() == 11
        assert other.catalog_ready(11, timeout=10)


def test_pinning_a_truncated_version_fails(store: Metastore) -> None:
    with node(store) as cat:
        for i in range(5):
            cat.execute([table(f"T{i}")])
        cat.checkpoint_log(5)
        with pytest.raises(almanac.VersionNotFoundError), cat.pin(3):
            pass


def test_retention_policy_snapshots_automatically(store: Metastore) -> None:
    policy = almanac.RetentionPolicy(keep_versions=5, check_every=4)
    with node(store, retention=policy) as cat:
        for i in range(30):
            cat.execute([table(f"T{i}")])
        assert cat.latest_version == 31
        assert 31 - 5 - 4 < cat.earliest_version <= 27
        assert digest(replay_store(store)) == digest(cat.catalog())


def test_follower_jumps_over_truncated_history(store: Metastore) -> None:
    with node(store) as cat:
        for i in range(8):
            cat.execute([table(f"T{i}")])
        cat.checkpoint_log()
        with node(store) as late:
            assert late.earliest_version == 9
            assert digest(late.catalog()) == digest(cat.catalog())


def test_attached_writes_ride_in_the_version_transaction(store: Metastore) -> None:
    from almanac.metastore import Compare, Put

    with node(store) as cat:
        seen: list[tuple[int, int]] = []

        def attach(
            base: almanac.CatalogVersion, new: almanac.CatalogVersion
        ) -> tuple[list[Compare], list[Put]]:
            seen.append((base.version, new.version))
            created = new.table("T")
            assert created is not None
            return [Compare.absent("extra.marker")], [Put("extra.marker", str(created.id).encode())]

        result = cat.execute([table("T")], attach=attach)
        marker = store.get("extra.marker")
        version_kv = store.get("catalog.version")
        assert marker is not None and version_kv is not None
        assert marker.mod_revision == version_kv.mod_revision
        assert seen == [(1, 2)] and result.version == 2
        snap_t = cat.catalog().table("T")
        assert snap_t is not None and int(marker.value) == snap_t.id
        with pytest.raises(almanac.ConflictError, match="condition attached"):
            cat.execute([table("U")], attach=attach)
        assert cat.latest_version == 2 and cat.catalog().table("U") is None


def test_retention_by_age_keeps_recent_versions(store: Metastore) -> None:
    wall = [time.time_ns() // 1_000_000]  # milliseconds, moved by hand
    clock = almanac.HybridClock(wall_ms=lambda: wall[0])
    policy = almanac.RetentionPolicy(keep_seconds=0.3, check_every=1)
    with node(store, retention=policy, clock=clock) as cat:
        for i in range(5):
            cat.execute([table(f"OLD{i}")])
        assert cat.earliest_version == 0
        wall[0] += 600
        first_recent = cat.execute([table("NEW0")]).version
        cat.execute([table("NEW1")])
        assert 1 < cat.earliest_version <= first_recent
        assert cat.catalog(first_recent).table("NEW0") is not None


class _Follower:
    """A LogFollower that records what the log delivers."""

    def __init__(self, start: int = 0) -> None:
        self.latest_version = start
        self.delivered: list[tuple[str, int]] = []

    def on_update(self, update: VersionedUpdate, token: int) -> None:
        if update.version <= self.latest_version:
            return
        assert update.version == self.latest_version + 1
        self.latest_version = update.version
        self.delivered.append(("update", update.version))

    def on_checkpoint(
        self, version: almanac.CatalogVersion, token: int, requests: tuple[object, ...] = ()
    ) -> None:
        self.latest_version = version.version
        self.delivered.append(("checkpoint", version.version))

    def on_truncate(self, earliest: int) -> None:
        pass


def test_catch_up_delivers_what_a_follower_lacks_on_the_calling_thread(store: Metastore) -> None:
    with node(store) as cat:
        for i in range(40):
            cat.execute([table(f"T{i}")])
        log = UpdateLog(store, owns_store=False)
        far_behind = _Follower()
        assert log.catch_up(far_behind) == 41
        assert far_behind.delivered == [("update", v) for v in range(1, 42)]
        for i in range(3):
            cat.execute([table(f"U{i}")])
        assert log.catch_up(far_behind) == 44
        assert far_behind.delivered[-3:] == [("update", 42), ("update", 43), ("update", 44)]
        assert cat.checkpoint_log(44) == 44
        cat.execute([table("V0")])
        cat.execute([table("V1")])
        lagging = _Follower(start=41)
        assert log.catch_up(lagging) == 46
        assert lagging.delivered == [("checkpoint", 44), ("update", 45), ("update", 46)]
