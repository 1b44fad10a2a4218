"""Catalog nodes as real processes, and the audit of what they did.

Every node is a ``node_worker`` process on the shared target; the test drives
it over its pipes and reads what it recorded. :func:`audit` then checks the
stored log against those records without trusting any node.
"""

from __future__ import annotations

import json
import queue
import signal
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from almanac.metastore import Metastore
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import TableCreated, VersionedUpdate, apply_update
from almanac.node.log import KEY_CHECKPOINT_VERSION, KEY_VERSION, update_key
from almanac.node.log_format import read_entry
from tests.durable.support import child, digest, replay_store
from tests.waiting import PATIENCE


class RecordingNode:
    """One ``node_worker`` process; its outcomes go to ``outcomes`` (appended,
    so a restarted node keeps adding to the same file)."""

    def __init__(self, target: str, name: str, outcomes: Path) -> None:
        self.name = name
        self.outcomes = outcomes
        self.proc = child("tests.cluster.node_worker", target, name, str(outcomes))
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._line("start")
        assert ready == "ready", f"node {name} did not start: {ready!r}"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _line(self, what: str) -> str:
        try:
            line = self._lines.get(timeout=PATIENCE)
        except queue.Empty:
            raise AssertionError(f"node {self.name} did not answer {what!r}") from None
        if line is None:
            raise AssertionError(f"node {self.name} exited ({self.proc.wait()}) during {what!r}")
        return line

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._line(command)

    def run(self, prefix: str, count: int = 0) -> None:
        assert self.ask(f"run {prefix} {count}") == "started"

    def digests(self, upto: int) -> dict[int, str]:
        answer = json.loads(self.ask(f"digests {upto}"))
        return {int(v): d for v, d in answer["digests"].items()}

    def successes(self) -> int:
        return sum(1 for r in read_outcomes([self.outcomes]) if r["event"] == "ok")

    def kill(self) -> None:
        """SIGKILL: the node dies wherever it is, mid-commit included."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=PATIENCE) == 0, f"node {self.name} failed on quit"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def read_outcomes(paths: Iterable[Path]) -> list[dict[str, object]]:
    """Every record of the given files; a line cut short by a kill is dropped."""
    records = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the last line of a killed node
    return records


@dataclass(frozen=True)
class Audit:
    latest: int
    earliest: int
    final: CatalogVersion
    digests: dict[int, str]
    """Digest of every version the log still holds, rebuilt from the store."""
    ok: int
    errors: dict[str, int]
    """Failed attempts by exception class."""


def audit(store: Metastore, records: list[dict[str, object]]) -> Audit:
    """Check the stored log against what the nodes recorded, independently of
    any node: versions contiguous, every version one attempted command,
    every successful command applied exactly once at the version it was told,
    no command applied twice or without having been attempted."""
    final = replay_store(store)  # asserts that the keys are contiguous
    kvs = {kv.key: kv for kv in store.range("catalog.").kvs}
    latest = int(kvs[KEY_VERSION].value)
    earliest = int(kvs[KEY_CHECKPOINT_VERSION].value)
    created_at: dict[str, list[int]] = {}
    digests: dict[int, str] = {}
    catalog = CatalogVersion.empty()
    for version in range(max(earliest, 1), latest + 1):
        entry = read_entry(update_key(version), version, kvs[update_key(version)].value)
        if isinstance(entry, CatalogVersion):
            catalog = entry  # the checkpoint: the versions before it are gone
        else:
            assert isinstance(entry, VersionedUpdate)
            catalog = apply_update(catalog, entry)
            names = [e.table.name for e in entry.entries if isinstance(e, TableCreated)]
            assert version == 1 or len(names) == 1, f"version {version} created {names}"
            for name in names:
                created_at.setdefault(name, []).append(version)
        digests[version] = digest(catalog)
    assert digests[latest] == digest(final)
    tried = {str(r["name"]) for r in records if r["event"] == "try"}
    ok = {str(r["name"]): int(str(r["version"])) for r in records if r["event"] == "ok"}
    errors: dict[str, int] = {}
    for r in records:
        if r["event"] == "error":
            errors[str(r["error"])] = errors.get(str(r["error"]), 0) + 1
    assert len(set(ok.values())) == len(ok), "two commands reported the same version"
    assert all(v <= latest for v in ok.values()), "a reported version is not in the log"
    for name, versions in created_at.items():
        assert len(versions) == 1, f"{name} was created at versions {versions}"
    final_names = {t.name for t in final.tables_by_id.values()}
    assert final_names <= tried, f"tables nobody asked for: {sorted(final_names - tried)[:5]}"
    for name, version in ok.items():
        assert name in final_names, f"{name} succeeded at version {version} but is missing"
        if version > earliest:
            assert created_at.get(name) == [version], (
                f"{name} succeeded at version {version}, the log has {created_at.get(name)}"
            )
    return Audit(latest, earliest, final, digests, len(ok), errors)
