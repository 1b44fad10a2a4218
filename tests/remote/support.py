"""Server processes for the remote client's tests, on a free loopback port
that stays theirs across restarts: the server tests' ``serve`` worker, or the
killing server of ``killing_server.py``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.waiting import PATIENCE, wait_for

from ..server.support import worker

KILLING_SERVER = Path(__file__).with_name("killing_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One server process at a time on ``port``; ``start`` again after a stop
    or a kill serves the same store on the same port."""

    def __init__(self, target: str, port: int, log: Path) -> None:
        self.target = target
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.proc: subprocess.Popen[str] | None = None

    def start(self, *, kill_on_table: str | None = None, tokens_file: Path | None = None) -> None:
        """Start and wait until ``/health`` answers. ``kill_on_table``: the
        server SIGKILLs itself right after committing a version that creates
        that table, before it replies."""
        assert self.proc is None or self.proc.poll() is not None
        if kill_on_table is not None:
            argv = [str(KILLING_SERVER), self.target, str(self.port), kill_on_table]
            with self.log.open("a") as out:
                self.proc = subprocess.Popen(
                    [sys.executable, *argv],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
        else:
            tokens = ["--tokens-file", str(tokens_file)] if tokens_file is not None else []
            self.proc = worker(self.target, "--port", str(self.port), *tokens, log=self.log)
        proc = self.proc
        wait_for(lambda: self._healthy() or proc.poll() is not None, f"a server at {self.url}")
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {self.tail()}")

    def _healthy(self) -> bool:
        try:
            return httpx.get(self.url + "/health", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def wait_exit(self) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=PATIENCE)

    def stop(self) -> None:
        """SIGTERM (serve closes its catalog), or SIGKILL if it hangs."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]
