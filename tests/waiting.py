"""Waiting in tests: one patience and one poll loop for every suite.

Tests never sleep for a race; they wait for a condition. ``PATIENCE`` bounds
such a wait: a failure guard generous enough for a loaded two-core machine,
never a duration a test asserts."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable

__all__ = ["PATIENCE", "stdout_lines", "wait_for"]

PATIENCE = 120.0


def wait_for(
    condition: Callable[[], bool],
    what: str,
    timeout: float = PATIENCE,
    *,
    tick: Callable[[], None] | None = None,
) -> None:
    """Poll ``condition()`` until it holds, calling ``tick()`` between polls
    (to drive a loop the test owns); fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout:.0f} s")
        if tick is not None:
            tick()
        time.sleep(0.02)


def stdout_lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """A child's stdout lines as they come, read on a thread so that a wait
    for one (``get(timeout=PATIENCE)``) can give up."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines
