"""The log detects corruption: checksummed frames, strict keys, the catalog's
identity record, and durable commits by default.

Corruption is made the way a disk or an operator makes it: by writing the
SQLite file directly, under the metastore, never through the catalog.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import almanac
from almanac.errors import CatalogIdentityError, CorruptLogError, StorageError
from almanac.metastore import SqliteMetastore
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate
from almanac.node.catalog import Catalog
from almanac.node.log import KEY_CHECKPOINT_VERSION, KEY_ID, KEY_VERSION, UpdateLog, update_key
from almanac.node.log_format import (
    FRAME_MAGIC,
    HEADER_SIZE,
    LEGACY_PREFIXES,
    frame_update,
    read_entry,
)
from almanac.serialization import encode_update
from tests.durable.support import child, digest, table

# -- helpers -----------------------------------------------------------------


def raw_values(db: Path) -> dict[str, bytes]:
    conn = sqlite3.connect(db)
    try:
        return {bytes(k).decode(): bytes(v) for k, v in conn.execute("SELECT key, value FROM kv")}
    finally:
        conn.close()


def raw_put(db: Path, key: str, value: bytes) -> None:
    """Overwrite a stored value in place, as a damaged disk would."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("UPDATE kv SET value = ? WHERE key = ?", (value, key.encode()))
    finally:
        conn.close()


def raw_rename(db: Path, key: str, new_key: str) -> bool:
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("UPDATE kv SET key = ? WHERE key = ?", (new_key.encode(), key.encode()))
        return True
    except sqlite3.IntegrityError:
        return False
    finally:
        conn.close()


def raw_delete(db: Path, key: str) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("DELETE FROM kv WHERE key = ?", (key.encode(),))
    finally:
        conn.close()


def fingerprint(cat: almanac.Catalog) -> dict[int, tuple[int, str]]:
    return {
        v: (cat.catalog(v).activation_time, digest(cat.catalog(v)))
        for v in range(cat.earliest_version, cat.latest_version + 1)
    }


def build(target: Path, versions: int = 8, *, checkpoint_at: int | None = None) -> None:
    with almanac.connect(str(target), delay_ms=0, max_clock_skew_ms=0) as cat:
        while cat.latest_version < versions:
            n = cat.latest_version
            if n % 3 == 0:
                cat.execute([almanac.CreateSchema(f"S{n}")])
            else:
                cat.execute([table(f"T{n}")])
            if checkpoint_at is not None and cat.latest_version == checkpoint_at:
                cat.checkpoint_log()


def open_fingerprint(target: Path) -> dict[int, tuple[int, str]]:
    with almanac.connect(str(target), delay_ms=0, max_clock_skew_ms=0) as cat:
        return fingerprint(cat)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, tuple[int, str]]]:
    """A closed catalog directory of 12 versions, checkpointed at 5, and its fingerprint."""
    root = tmp_path_factory.mktemp("pristine") / "data"
    build(root, 12, checkpoint_at=5)
    return root, open_fingerprint(root)


def copy_of(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    return dest


# -- the frame ------------------------------------------------------------------


def test_every_stored_entry_is_a_frame_bound_to_its_version(tmp_path: Path) -> None:
    build(tmp_path / "d", 6, checkpoint_at=3)
    values = raw_values(tmp_path / "d" / "catalog.db")
    assert sorted(k for k in values if k.startswith("catalog.update.")) == [
        update_key(v) for v in range(3, 7)
    ]
    for v in range(3, 7):
        data = values[update_key(v)]
        assert data.startswith(FRAME_MAGIC)
        entry = read_entry(update_key(v), v, data)
        assert isinstance(entry, CatalogVersion if v == 3 else VersionedUpdate)
        assert entry.version == v


def test_frame_magic_is_far_from_every_legacy_prefix() -> None:
    for prefix in LEGACY_PREFIXES:
        assert sum(bin(a ^ b).count("1") for a, b in zip(FRAME_MAGIC, prefix, strict=True)) >= 12
        assert sum(bin(a ^ b).count("1") for a, b in zip(FRAME_MAGIC[:2], prefix[:2], strict=True))
    update = VersionedUpdate(version=7, commit_time=1, delay_ms=0, entries=())
    framed = frame_update(update)
    # Any corruption of the magic alone is refused, never read as a legacy entry.
    for bit in range(32):
        bad = bytearray(framed)
        bad[bit // 8] ^= 0x80 >> (bit % 8)
        with pytest.raises(CorruptLogError, match="neither a checksummed frame"):
            read_entry(update_key(7), 7, bytes(bad))
    legacy_looking = b"\x00\x01" + framed[2:]
    with pytest.raises(CorruptLogError):
        read_entry(update_key(7), 7, legacy_looking)


def test_entry_moved_to_another_key_is_detected() -> None:
    update = VersionedUpdate(version=4, commit_time=1, delay_ms=0, entries=())
    with pytest.raises(CorruptLogError, match="holds the entry of version 4, not of version 5"):
        read_entry(update_key(5), 5, frame_update(update))


def test_single_bit_flips_in_one_stored_entry_are_all_detected(tmp_path: Path) -> None:
    """Every bit of a small stored update, flipped alone, stops a node opening the store."""
    target = tmp_path / "d"
    build(target, 4)
    key = update_key(4)  # CREATE SCHEMA: a small entry
    store = SqliteMetastore(target / "catalog.db", durability="normal")
    try:
        kv = store.get(key)
        assert kv is not None and len(kv.value) < 120
        good = kv.value
        undetected = []
        for bit in range(len(good) * 8):
            bad = bytearray(good)
            bad[bit // 8] ^= 0x80 >> (bit % 8)
            store.put(key, bytes(bad))
            revision = store.revision
            try:
                Catalog(UpdateLog(store, owns_store=False)).close()
                undetected.append(bit)
            except CorruptLogError as exc:
                assert f"'{key}'" in str(exc) and "version 4" in str(exc), str(exc)
                assert exc.context["key"] == key and exc.context["version"] == 4
            assert store.revision == revision  # a refused open writes nothing
        assert undetected == []
        store.put(key, good)
        with Catalog(UpdateLog(store, owns_store=False)) as cat:
            assert cat.latest_version == 4
    finally:
        store.close()


# -- legacy entries -------------------------------------------------------------


def test_legacy_unframed_entries_are_still_read_and_new_ones_are_framed(tmp_path: Path) -> None:
    """A store of a release before checksums: bare serialized entries, no catalog id."""
    with almanac.connect("memory://") as mem:
        mem.execute([table("A")])
        mem.execute([almanac.CreateSchema("S")])
        expected = fingerprint(mem)
        updates = [info.update for info in mem.history()]
    target = tmp_path / "old"
    target.mkdir()
    store = SqliteMetastore(target / "catalog.db")
    store.txn(
        [],
        [
            *(almanac.metastore.Put(update_key(u.version), encode_update(u)) for u in updates),
            almanac.metastore.Put(KEY_VERSION, str(updates[-1].version).encode()),
            almanac.metastore.Put(KEY_CHECKPOINT_VERSION, b"0"),
        ],
    )
    store.close()
    with almanac.connect(str(target), delay_ms=0) as cat:
        assert fingerprint(cat) == expected
        cat.execute([table("B")])
    values = raw_values(target / "catalog.db")
    assert not values[update_key(2)].startswith(FRAME_MAGIC)  # left as it was
    assert values[update_key(4)].startswith(FRAME_MAGIC)
    assert KEY_ID in values and (target / "catalog.id").exists()
    # A corrupted legacy entry is still refused by the checks it always had.
    raw_put(target / "catalog.db", update_key(2), values[update_key(2)][:-2])
    with pytest.raises(CorruptLogError, match=r"'catalog.update.2'"):
        almanac.connect(str(target))
    raw_put(target / "catalog.db", update_key(2), values[update_key(2)])
    # A checkpoint replaces the legacy history by one framed entry.
    with almanac.connect(str(target), delay_ms=0) as cat:
        cat.checkpoint_log()
    values = raw_values(target / "catalog.db")
    assert values[update_key(4)].startswith(FRAME_MAGIC)
    assert isinstance(read_entry(update_key(4), 4, values[update_key(4)]), CatalogVersion)
    assert not any(k.startswith("catalog.update.") and k != update_key(4) for k in values)


# -- other corrupt states fail fast ---------------------------------------------


def raw_sql(db: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute(statement, params)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        ("UPDATE kv SET value = ? WHERE key = ?", (7, update_key(3).encode())),
        ("UPDATE kv SET value = ? WHERE key = ?", (2.5, update_key(3).encode())),
        ("UPDATE kv SET value = ? WHERE key = ?", ("text", update_key(3).encode())),
        ("UPDATE kv SET value = ? WHERE key = ?", (4, KEY_VERSION.encode())),
        ("UPDATE kv SET value = ? WHERE key = ?", (0, KEY_CHECKPOINT_VERSION.encode())),
        ("UPDATE kv SET value = ? WHERE key = ?", (5, KEY_ID.encode())),
        ("UPDATE kv SET key = ? WHERE key = ?", (update_key(3), update_key(3).encode())),
        ("UPDATE kv SET key = ? WHERE key = ?", (b"catalog.\xff", update_key(3).encode())),
        ("UPDATE kv SET mod_rev = 'x' WHERE key = ?", (update_key(3).encode(),)),
        ("UPDATE meta SET value = 'many' WHERE name = ?", ("revision",)),
    ],
    ids=[
        "int-value",
        "real-value",
        "text-value",
        "int-latest",
        "int-checkpoint",
        "int-id",
        "text-key",
        "non-utf8-key",
        "text-revision",
        "text-meta",
    ],
)
def test_a_cell_of_the_wrong_sqlite_type_is_a_storage_error(
    tmp_path: Path, statement: str, params: tuple[object, ...]
) -> None:
    """SQLite keeps any type in any column: a hand-edited or damaged row must
    not surface as a TypeError from deep inside the log."""
    build(tmp_path / "d", 4)
    raw_sql(tmp_path / "d" / "catalog.db", statement, *params)
    with pytest.raises(StorageError):
        open_fingerprint(tmp_path / "d")


@pytest.mark.parametrize("value", [b"-3", b"abc", b" 12", b"012", b"", b"12\n", b"1e1"])
def test_a_bad_latest_version_fails_fast_naming_the_key(
    pristine: tuple[Path, dict[int, tuple[int, str]]], tmp_path: Path, value: bytes
) -> None:
    target = copy_of(pristine[0], tmp_path / "d")
    raw_put(target / "catalog.db", KEY_VERSION, value)
    start = time.monotonic()
    with pytest.raises(CorruptLogError, match=f"'{KEY_VERSION}'"):
        almanac.connect(str(target))
    assert time.monotonic() - start < 5


def test_a_checkpoint_pointer_at_a_plain_update_says_so(tmp_path: Path) -> None:
    target = tmp_path / "d"
    build(target, 6)
    raw_put(target / "catalog.db", KEY_CHECKPOINT_VERSION, b"3")
    for key in ("catalog.update.1", "catalog.update.2"):
        raw_delete(target / "catalog.db", key)
    with pytest.raises(CorruptLogError) as info:
        almanac.connect(str(target))
    message = str(info.value)
    assert "checkpoint version 3" in message and "'catalog.update.3'" in message
    assert "not a checkpoint" in message and "holds an update" in message
    assert info.value.context == {"key": "catalog.update.3", "version": 3}


def test_entries_beyond_the_latest_or_before_the_checkpoint_are_corruption(
    pristine: tuple[Path, dict[int, tuple[int, str]]], tmp_path: Path
) -> None:
    target = copy_of(pristine[0], tmp_path / "a")
    raw_put(target / "catalog.db", KEY_VERSION, b"10")  # entries 11, 12 remain
    with pytest.raises(CorruptLogError, match=r"'catalog.update.11'.*beyond the latest version 10"):
        almanac.connect(str(target))
    target = copy_of(pristine[0], tmp_path / "b")
    raw_put(target / "catalog.db", KEY_CHECKPOINT_VERSION, b"6")  # checkpoint is at 5
    with pytest.raises(CorruptLogError, match=r"'catalog.update.5'.*before the checkpoint"):
        almanac.connect(str(target))
    target = copy_of(pristine[0], tmp_path / "c")
    raw_delete(target / "catalog.db", update_key(8))
    with pytest.raises(CorruptLogError, match=r"'catalog.update.8' of version 8 is missing"):
        almanac.connect(str(target))


# -- identity ---------------------------------------------------------------------


def test_a_new_directory_records_its_catalog_id_in_the_store_and_beside_it(
    tmp_path: Path,
) -> None:
    target = tmp_path / "d"
    with almanac.connect(str(target), delay_ms=0) as cat:
        cat.execute([table("A")])
        latest = cat.latest_version
    record = json.loads((target / "catalog.id").read_text())
    stored = raw_values(target / "catalog.db")[KEY_ID].decode()
    assert record["catalog_id"] == stored and record["last_seen_version"] == latest
    with almanac.connect(f"sqlite:///{tmp_path}/f.db") as cat:
        pass
    assert (tmp_path / "f.db.id").exists()
    with almanac.connect("memory://") as mem:
        assert mem.log.identity is None and mem.log.store.get(KEY_ID) is None


def test_a_sqlite_file_target_keeps_its_record_beside_the_file(tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path}/f.db"
    with almanac.connect(target, delay_ms=0) as cat:
        for i in range(5):
            cat.execute([table(f"T{i}")])
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp_path}/f.db{suffix}").unlink(missing_ok=True)
    with pytest.raises(CatalogIdentityError, match="up to version 6") as info:
        almanac.connect(target)
    assert str(tmp_path / "f.db.id") in str(info.value)


def test_nodes_opening_a_new_directory_at_once_agree_on_one_id(tmp_path: Path) -> None:
    target = str(tmp_path / "d")
    errors: list[BaseException] = []
    ids: list[str] = []
    barrier = threading.Barrier(4)

    def open_one() -> None:
        try:
            barrier.wait()
            with almanac.connect(target, delay_ms=0) as cat:
                kv = cat.log.store.get(KEY_ID)
                assert kv is not None
                ids.append(kv.value.decode())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(ids)) == 1
    assert json.loads((tmp_path / "d" / "catalog.id").read_text())["catalog_id"] == ids[0]


def test_a_store_that_lost_its_tables_refuses_to_open(tmp_path: Path) -> None:
    target = tmp_path / "d"
    build(target, 50)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target / 'catalog.db'}{suffix}").unlink(missing_ok=True)
    with pytest.raises(CatalogIdentityError) as info:
        almanac.connect(str(target))
    message = str(info.value)
    assert str(target / "catalog.id") in message and str(target / "catalog.db") in message
    assert "up to version 50" in message and "no catalog id" in message
    assert isinstance(info.value, StorageError) and isinstance(info.value, CorruptLogError)
    assert not (target / "catalog.db").exists() or KEY_ID not in raw_values(target / "catalog.db")


def test_a_store_that_lost_its_wal_refuses_to_open(tmp_path: Path) -> None:
    target = tmp_path / "d"
    build(target, 2)
    # A reader holding its snapshot keeps every later commit in the WAL only.
    holder = sqlite3.connect(target / "catalog.db", isolation_level=None)
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM kv").fetchone()
        with almanac.connect(str(target), delay_ms=0, max_clock_skew_ms=0) as cat:
            for i in range(50):
                cat.execute([table(f"W{i}")])
        assert json.loads((target / "catalog.id").read_text())["last_seen_version"] == 52
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        shutil.copy(target / "catalog.db", crashed / "catalog.db")  # the WAL is lost
        shutil.copy(target / "catalog.id", crashed / "catalog.id")
    finally:
        holder.close()
    with pytest.raises(CatalogIdentityError) as info:
        almanac.connect(str(crashed))
    message = str(info.value)
    assert "version 52 was seen" in message and str(crashed / "catalog.id") in message
    assert info.value.context["last_seen_version"] == 52
    assert info.value.context["store_version"] < 52
    # Deleting the record accepts the store as it is.
    (crashed / "catalog.id").unlink()
    with almanac.connect(str(crashed)) as cat:
        assert cat.latest_version < 52


def test_a_killed_writer_leaves_a_record_that_catches_a_lost_wal(tmp_path: Path) -> None:
    """The record follows commits while the process runs, not only on close."""
    target = tmp_path / "d"
    build(target, 2)
    holder = sqlite3.connect(target / "catalog.db", isolation_level=None)
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM kv").fetchone()
        proc = child("tests.durable.worker_crash", str(target), "1")
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(1.0)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        seen = json.loads((target / "catalog.id").read_text())["last_seen_version"]
        assert seen > 2
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        shutil.copy(target / "catalog.db", crashed / "catalog.db")
        shutil.copy(target / "catalog.id", crashed / "catalog.id")
    finally:
        holder.close()
    with pytest.raises(CatalogIdentityError, match=f"version {seen} was seen"):
        almanac.connect(str(crashed))
    with almanac.connect(str(target)) as cat:  # the intact store still opens
        assert cat.latest_version >= seen


def test_a_store_of_another_catalog_refuses_to_open(tmp_path: Path) -> None:
    build(tmp_path / "a", 3)
    build(tmp_path / "b", 5)
    shutil.copy(tmp_path / "b" / "catalog.db", tmp_path / "a" / "catalog.db")
    with pytest.raises(CatalogIdentityError, match="another catalog"):
        almanac.connect(str(tmp_path / "a"))


def test_a_damaged_identity_record_is_refused(tmp_path: Path) -> None:
    build(tmp_path / "d", 3)
    record = tmp_path / "d" / "catalog.id"
    text = record.read_text()
    record.write_text(text.replace('"last_seen_version": 3', '"last_seen_version": 7'))
    with pytest.raises(CatalogIdentityError, match="is damaged"):
        almanac.connect(str(tmp_path / "d"))


@pytest.mark.parametrize(
    "garbage",
    [b"\xff\xfe\x00not utf-8", b"[" * 100_000, b"", b"null", b'{"catalog_id": 1}'],
    ids=["not-utf8", "deep-nesting", "empty", "null", "wrong-type"],
)
def test_a_garbage_identity_record_is_a_catalog_error(tmp_path: Path, garbage: bytes) -> None:
    build(tmp_path / "d", 3)
    (tmp_path / "d" / "catalog.id").write_bytes(garbage)
    with pytest.raises(CatalogIdentityError, match="is damaged"):
        almanac.connect(str(tmp_path / "d"))


def test_the_record_follows_versions_committed_elsewhere(tmp_path: Path) -> None:
    target = tmp_path / "d"
    build(target, 2)
    store = SqliteMetastore(target / "catalog.db")
    log = UpdateLog(store)
    assert log.identity is not None
    log.identity.flush_interval_s = 0.0
    with almanac.Catalog(log) as reader, almanac.connect(str(target), delay_ms=0) as writer:
        writer.execute([table("X")])
        assert reader.catalog_ready(3, timeout=10)
        deadline = time.monotonic() + 5
        while json.loads((target / "catalog.id").read_text())["last_seen_version"] < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)


# -- durability -------------------------------------------------------------------


def synchronous(cat: almanac.Catalog) -> int:
    store = cat.log.store
    assert isinstance(store, SqliteMetastore)
    with store._connection() as conn:
        return int(conn.execute("PRAGMA synchronous").fetchone()[0])


def test_durable_by_default_and_normal_on_request(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "a")) as cat:
        assert synchronous(cat) == 2  # FULL
    with almanac.connect(str(tmp_path / "b"), durability="normal") as cat:
        assert synchronous(cat) == 1  # NORMAL
    with almanac.connect(f"sqlite:///{tmp_path}/c.db", durability="full") as cat:
        assert synchronous(cat) == 2
    with almanac.connect("memory://", durability="normal"):
        pass


@pytest.mark.parametrize("value", ["fast", "FULL", "", None, 2])
def test_bad_durability_is_a_validation_error(tmp_path: Path, value: object) -> None:
    with pytest.raises(almanac.ValidationError) as info:
        almanac.connect(str(tmp_path / "d"), durability=value)  # type: ignore[call-overload]
    assert "durability" in str(info.value)
    assert "'full'" in str(info.value) and "'normal'" in str(info.value)
    assert info.value.context["parameter"] == "durability"
    assert not (tmp_path / "d").exists()


# -- random corruption: an error, or the very same catalog --------------------------


Corruption = Callable[[random.Random, Path, dict[str, bytes]], str]


def _flip_bits(rng: random.Random, db: Path, values: dict[str, bytes]) -> str:
    key = rng.choice(sorted(values))
    data = bytearray(values[key])
    if not data:
        return "skip"
    bits = rng.randint(1, 3)
    for _ in range(bits):
        bit = rng.randrange(len(data) * 8)
        data[bit // 8] ^= 0x80 >> (bit % 8)
    raw_put(db, key, bytes(data))
    return f"flip {bits} bit(s) of {key}"


def _truncate(rng: random.Random, db: Path, values: dict[str, bytes]) -> str:
    key = rng.choice(sorted(values))
    data = values[key]
    cut = rng.randrange(len(data)) if data else 0
    raw_put(db, key, data[:cut])
    return f"truncate {key} to {cut}"


def _swap(rng: random.Random, db: Path, values: dict[str, bytes]) -> str:
    a, b = rng.sample(sorted(values), 2)
    raw_put(db, a, values[b])
    raw_put(db, b, values[a])
    return f"swap {a} and {b}"


def _copy_over(rng: random.Random, db: Path, values: dict[str, bytes]) -> str:
    entries = sorted(k for k in values if k.startswith("catalog.update."))
    a, b = rng.sample(entries, 2)
    raw_put(db, b, values[a])
    return f"copy {a} over {b}"


def _rename_key(rng: random.Random, db: Path, values: dict[str, bytes]) -> str:
    key = rng.choice(sorted(values))
    data = bytearray(key.encode())
    bit = rng.randrange(len(data) * 8)
    data[bit // 8] ^= 0x80 >> (bit % 8)
    try:
        new_key = data.decode()
    except UnicodeDecodeError:
        return "skip"
    return f"rename {key} to {new_key}" if raw_rename(db, key, new_key) else "skip"


CORRUPTIONS: list[Corruption] = [_flip_bits, _flip_bits, _truncate, _swap, _copy_over, _rename_key]


def corrupt_and_open(
    pristine: tuple[Path, dict[int, tuple[int, str]]], tmp_path: Path, seed: int, trials: int
) -> dict[str, int]:
    source, expected = pristine
    stored = raw_values(source / "catalog.db")
    values = {k: v for k, v in stored.items() if k.startswith("catalog.")}
    rng = random.Random(seed)
    outcomes = {"refused": 0, "identical": 0, "skipped": 0}
    for trial in range(trials):
        target = copy_of(source, tmp_path / f"t{trial}")
        what = rng.choice(CORRUPTIONS)(rng, target / "catalog.db", values)
        if what == "skip":
            outcomes["skipped"] += 1
        else:
            try:
                got = open_fingerprint(target)
            except StorageError:
                outcomes["refused"] += 1
            else:
                assert got == expected, f"seed {seed} trial {trial}: {what} opened another catalog"
                outcomes["identical"] += 1
        shutil.rmtree(target)
    return outcomes


def test_random_corruption_is_refused_or_harmless(
    pristine: tuple[Path, dict[int, tuple[int, str]]], tmp_path: Path
) -> None:
    outcomes = corrupt_and_open(pristine, tmp_path, seed=20261122, trials=60)
    assert outcomes["refused"] > 30


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_random_corruption_many_seeds(
    pristine: tuple[Path, dict[int, tuple[int, str]]], tmp_path: Path, seed: int
) -> None:
    outcomes = corrupt_and_open(pristine, tmp_path, seed=seed, trials=400)
    assert outcomes["refused"] > 200


@pytest.mark.slow
def test_single_bit_flips_in_every_stored_value(
    pristine: tuple[Path, dict[int, tuple[int, str]]], tmp_path: Path
) -> None:
    """Every bit of every catalog value (checkpoint included): refused, or the same catalog."""
    source, expected = pristine
    target = copy_of(source, tmp_path / "d")
    store = SqliteMetastore(target / "catalog.db", durability="normal")
    try:
        values = {kv.key: kv.value for kv in store.range("catalog.").kvs}
        for key, good in sorted(values.items()):
            for bit in range(len(good) * 8):
                bad = bytearray(good)
                bad[bit // 8] ^= 0x80 >> (bit % 8)
                store.put(key, bytes(bad))
                try:
                    with Catalog(UpdateLog(store, owns_store=False)) as cat:
                        got = fingerprint(cat)
                except StorageError:
                    continue
                finally:
                    store.put(key, good)
                assert got == expected, f"bit {bit} of {key} opened another catalog"
    finally:
        store.close()


def test_corruption_never_writes_over_the_entry(tmp_path: Path) -> None:
    target = tmp_path / "d"
    build(target, 4)
    db = target / "catalog.db"
    good = raw_values(db)[update_key(3)]
    raw_put(db, update_key(3), good[: HEADER_SIZE + 2])
    with pytest.raises(CorruptLogError, match="truncated"):
        almanac.connect(str(target))
    assert raw_values(db)[update_key(3)] == good[: HEADER_SIZE + 2]


def test_a_corrupt_entry_arriving_while_following_stops_the_node(tmp_path: Path) -> None:
    target = tmp_path / "d"
    build(target, 3)
    with almanac.connect(str(target), delay_ms=0) as node:
        store = node.log.store
        update = VersionedUpdate(version=4, commit_time=node.clock.now(), delay_ms=0, entries=())
        bad = bytearray(frame_update(update))
        bad[-1] ^= 0x01
        assert store.txn(
            [almanac.metastore.Compare.value(KEY_VERSION, "==", b"3")],
            [
                almanac.metastore.Put(update_key(4), bytes(bad)),
                almanac.metastore.Put(KEY_VERSION, b"4"),
            ],
        ).succeeded
        deadline = time.monotonic() + 10
        while node.log.failure is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert isinstance(node.log.failure, CorruptLogError)
        assert "'catalog.update.4'" in str(node.log.failure)
        with pytest.raises(almanac.CatalogError, match="checksum mismatch"):
            node.execute([table("LATE")])
        assert node.latest_version == 3
