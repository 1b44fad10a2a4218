"""Child process: one catalog node that runs DDL on request and records every
outcome, for the failure tests.

``python -m tests.cluster.node_worker TARGET NODE OUTCOMES``

Commands arrive one a line on stdin; every answer is one line on stdout:

* ``run PREFIX COUNT`` - create tables ``PREFIX_0`` … on a thread, one
  ``execute`` each (COUNT 0: until ``stop``); answers ``started``;
* ``wait`` - until that run is over; answers ``done``;
* ``stop`` - end the run after its current ``execute``; answers ``stopped``;
* ``digests N`` - wait until version N is applied here, answer the digest of
  every version this node holds up to N, as JSON;
* ``checkpoint`` - checkpoint the log at the latest version; answers the
  earliest version left;
* ``quit`` - close the node and exit.

OUTCOMES receives one JSON line per attempt *before* ``execute`` is called
(``try``) and one after it returned or raised (``ok`` with the version, or
``error`` with the exception's class). A ``try`` with no outcome is a command
that was in flight when the process died: it may or may not be committed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import IO

import almanac
from tests.durable.support import digest, table

_PAUSE_AFTER_ERROR_S = 0.05
"""A failed execute is retried with a new command after this pause, so that a
store that refuses at once is not hammered."""


class Node:
    def __init__(self, target: str, node: str, outcomes: IO[str]) -> None:
        self.cat = almanac.connect(target, delay_ms=0, max_clock_skew_ms=0)
        self.node = node
        self.outcomes = outcomes
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def record(self, **fields: object) -> None:
        self.outcomes.write(json.dumps({"node": self.node, **fields}) + "\n")
        self.outcomes.flush()

    def run(self, prefix: str, count: int) -> None:
        i = 0
        while (count == 0 or i < count) and not self.stop.is_set():
            name = f"{prefix}_{i}"
            i += 1
            self.record(event="try", name=name)
            start = time.monotonic()
            try:
                version = self.cat.execute([table(name)]).version
            except almanac.CatalogError as exc:
                self.record(
                    event="error",
                    name=name,
                    error=type(exc).__name__,
                    message=str(exc),
                    seconds=time.monotonic() - start,
                )
                self.stop.wait(_PAUSE_AFTER_ERROR_S)
                continue
            self.record(event="ok", name=name, version=version)

    def digests(self, upto: int) -> dict[str, object]:
        self.cat.catalog_ready(upto, timeout=120)  # a failure guard, not a duration
        first = max(self.cat.earliest_version, 1)
        return {
            "earliest": self.cat.earliest_version,
            "latest": self.cat.latest_version,
            "digests": {v: digest(self.cat.catalog(v)) for v in range(first, upto + 1)},
        }

    def serve(self) -> None:
        print("ready", flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            answer: object
            match words:
                case ["run", prefix, count]:
                    self.stop.clear()
                    self.thread = threading.Thread(target=self.run, args=(prefix, int(count)))
                    self.thread.start()
                    answer = "started"
                case ["wait"]:
                    if self.thread is not None:
                        self.thread.join()
                    answer = "done"
                case ["stop"]:
                    self.stop.set()
                    if self.thread is not None:
                        self.thread.join()
                    answer = "stopped"
                case ["digests", upto]:
                    answer = json.dumps(self.digests(int(upto)))
                case ["checkpoint"]:
                    answer = str(self.cat.checkpoint_log())
                case ["quit"]:
                    break
                case _:
                    answer = f"unknown command {line.strip()!r}"
            print(answer, flush=True)
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        self.cat.close()


def main() -> None:
    target, node, path = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(path, "a", encoding="utf-8") as outcomes:
        Node(target, node, outcomes).serve()


if __name__ == "__main__":
    main()
