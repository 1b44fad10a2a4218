"""A follower whose unread history is compacted re-reads the log and
watches again; a compaction that races that re-read (a checkpoint beside a
slow follower on a loaded machine) makes it re-read once more, never stop."""

from __future__ import annotations

from collections.abc import Sequence

from almanac import Catalog, CreateSchema
from almanac.metastore import MemoryMetastore, Put, Watch, WatchEvent
from almanac.model.schema_sync import SchemaSync
from almanac.node.log import UpdateLog
from tests.waiting import PATIENCE, wait_for

NO_WAIT = SchemaSync(delay_ms=0, max_clock_skew_ms=0)


class _Compacting(MemoryMetastore):
    """Compacts its whole history just before the next poll of a watch and,
    then, just before the next new watch: each then finds its start gone."""

    def __init__(self) -> None:
        super().__init__()
        self.poll_armed = False
        self.watch_armed = False
        self.raced = 0

    def _compact_now(self) -> None:
        for i in range(2):  # revisions the new watch would have started below
            self.txn([], [Put(f"unrelated.{self.revision}.{i}", b"x")])
        self.compact(self.revision)
        self.raced += 1

    def _watch_poll(
        self, prefix: str, from_revision: int
    ) -> tuple[Sequence[WatchEvent], int, bool]:
        if self.poll_armed:
            self.poll_armed = False
            self._compact_now()
        return super()._watch_poll(prefix, from_revision)

    def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        if self.watch_armed and from_revision is not None:
            self.watch_armed = False
            self._compact_now()
        return super()._watch(prefix, from_revision)


def _node(store: MemoryMetastore, name: str) -> Catalog:
    return Catalog(UpdateLog(store, owns_store=False), sync=NO_WAIT, node_name=name)


def test_a_compaction_racing_the_resume_of_a_follower_is_read_past() -> None:
    store = _Compacting()
    with _node(store, "writer") as writer, _node(store, "reader") as reader:
        writer.execute([CreateSchema("A")])
        assert reader.catalog_ready(writer.latest_version, timeout=PATIENCE)
        store.watch_armed = True
        store.poll_armed = True
        made = writer.execute([CreateSchema("B")]).version
        wait_for(lambda: store.raced == 2, "both compactions to race the reader's follower")
        assert reader.catalog_ready(made, timeout=PATIENCE)
        later = writer.execute([CreateSchema("C")]).version
        assert reader.catalog_ready(later, timeout=PATIENCE)
        assert reader.catalog().schema("C") is not None
        assert reader.log.failure is None and writer.log.failure is None
