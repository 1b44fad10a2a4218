"""``almanac tserver`` in real processes on free loopback ports, and the
placement writes a placement manager makes (route and server indexes in one
transaction), for tests that drive tablet servers without one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from almanac.metastore import Compare, Metastore, Put
from almanac.placement import (
    ServerIndex,
    TableRoute,
    Tablet,
    TabletState,
    read_route,
    read_server_index,
    route_key,
    server_index_key,
)
from tests.waiting import PATIENCE, wait_for

ROOT = Path(__file__).resolve().parents[2]


class TabletServerProcess:
    """One ``almanac tserver`` process; its stderr goes to ``log``. Starting
    does not wait (start several at once); ``location`` waits until it serves."""

    def __init__(self, target: str, name: str, data_dir: Path, log: Path, *extra: str) -> None:
        self.name = name
        self.data_dir = data_dir
        self.log = log
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
        args = ["--store", target, "--name", name, "--data-dir", str(data_dir), *extra]
        with log.open("a") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "almanac.cli", "tserver", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                cwd=ROOT,
            )
        self._lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._location: str | None = None

    @property
    def location(self) -> str:
        """``grpc://host:port`` once it says it serves (waited for here)."""
        if self._location is None:
            prefix = f"Serving tablets as {self.name} on "
            wait_for(
                lambda: (
                    any(line.startswith(prefix) for line in self._lines)
                    or self.proc.poll() is not None
                ),
                f"tablet server {self.name} to start",
            )
            ready = [line for line in self._lines if line.startswith(prefix)]
            if not ready:
                raise AssertionError(
                    f"{self.name} exited with {self.proc.wait()}: {self.log_text()}"
                )
            self._location = ready[0].removeprefix(prefix).strip()
        return self._location

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.append(line.rstrip("\n"))

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        """SIGKILL: it dies wherever it is, mid-stream included."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=PATIENCE)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def spread(partitions: int, servers: Sequence[str], replicas: int) -> list[Tablet]:
    """Tablet ``p`` of partition ``p`` on ``replicas`` servers round robin,
    led by the first of them."""
    out = []
    for p in range(partitions):
        chosen = [servers[(p + k) % len(servers)] for k in range(replicas)]
        out.append(Tablet(p, p, TabletState.RUNNING, tuple(sorted(chosen)), chosen[0], 0, 0.0))
    return out


def place(
    store: Metastore, table_id: int, tablets: Sequence[Tablet], table_version: int = 1
) -> None:
    """Write the route and every touched server index in one transaction
    that compares the exact bytes read, as the placement manager does."""
    while True:
        old = store.get(route_key(table_id))
        before = read_route(store, table_id)
        route = TableRoute(
            table_id,
            1 if before is None else before.version + 1,
            table_version,
            tuple(tablets),
            max((t.id for t in tablets), default=-1) + 1
            if before is None
            else max(before.next_tablet_id, max((t.id for t in tablets), default=-1) + 1),
            TabletState.RUNNING,
        )
        servers = {r for t in tablets for r in t.replicas}
        if before is not None:
            servers |= {r for t in before.tablets for r in t.replicas}
        compares = [
            Compare.absent(route_key(table_id))
            if old is None
            else Compare.value(route_key(table_id), "==", old.value)
        ]
        puts = [Put(route_key(table_id), route.encode())]
        for server in sorted(servers):
            key = server_index_key(server)
            raw = store.get(key)
            index = read_server_index(store, server)
            pairs = {p for p in (index.tablets if index else ()) if p[0] != table_id}
            pairs |= {
                (table_id, t.id)
                for t in tablets
                if server in t.replicas
                and t.state not in (TabletState.DELETED, TabletState.REPLACED)
            }
            new = ServerIndex(
                server, tuple(sorted(pairs)), 1 if index is None else index.version + 1
            )
            compares.append(
                Compare.absent(key) if raw is None else Compare.value(key, "==", raw.value)
            )
            puts.append(Put(key, new.encode()))
        if store.txn(compares, puts).succeeded:
            return
