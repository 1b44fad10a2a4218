"""Waiting in tests: one patience and one poll loop for every suite.

Tests never sleep for a race; they wait for a condition. ``PATIENCE`` bounds
such a wait: a failure guard generous enough for a loaded two-core machine,
never a duration a test asserts."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["PATIENCE", "wait_for"]

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
