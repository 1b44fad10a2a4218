"""What every long-running command (``node``, ``tserver``) does around its
work: log to stderr stamped with the process's name, and turn SIGTERM and
SIGINT into a stop flag so that the work closes cleanly and exits 0."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

__all__ = ["Foreground", "foreground"]


class _Stamp(logging.Filter):
    """Stamps every log record with the process's name (a node knows its
    own only once it opened, hence settable)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name_ = name

    def filter(self, record: logging.LogRecord) -> bool:
        record.process_name = self.name_
        return True


@dataclass
class Foreground:
    log: logging.Logger
    stop: threading.Event
    stamp: _Stamp

    def named(self, name: str) -> None:
        self.stamp.name_ = name


@contextlib.contextmanager
def foreground(logger: str, name: str, log_level: str) -> Iterator[Foreground]:
    """Logging and signal handlers for the block; both restored after it."""
    stamp = _Stamp(name)
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(stamp)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s [%(process_name)s] %(name)s: %(message)s")
    )
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(log_level.upper())
    log = logging.getLogger(logger)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("%s received: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield Foreground(log, stop, stamp)
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        root.removeHandler(handler)
        root.setLevel(level)
