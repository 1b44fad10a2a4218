"""Child process: one catalog node, driven by JSON requests on stdin.

``python -m tests.cluster.worker_node TARGET NAME [DELAY_MS] [MAX_ATTEMPTS]``
(no clock skew to wait for: the processes share this machine's clock)
prints ``{"ready": <node name>}``, then answers each request line with one
JSON line:

* ``{"op": "tables", "names": [...]}`` - one ``execute`` per name, each a
  CREATE TABLE; the answer lists ``{"name", "version"}`` or ``{"name",
  "error", "message"}`` per name, in order (so a lost race shows up as
  ``ConflictError`` here, never as a crash);
* ``{"op": "wait", "version": N}`` - until version N is ready here;
* ``{"op": "digests"}`` - sha256 of ``encode_catalog(catalog(v))`` for every
  available version v;
* ``{"op": "events"}`` - every event this node fired, ``[type, version, id]``;
* ``{"op": "pin", "version": N}`` - pin N and keep the pin;
* ``{"op": "exit"}`` - close the node and exit 0.
"""

from __future__ import annotations

import contextlib
import json
import sys

import almanac
from almanac import CatalogError
from tests.durable.support import digest, table


def main() -> None:
    target, name = sys.argv[1], sys.argv[2]
    delay_ms = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    max_attempts = int(sys.argv[4]) if len(sys.argv) > 4 else None
    events: list[list[object]] = []
    with (
        contextlib.ExitStack() as pins,
        almanac.connect(target, delay_ms=delay_ms, max_clock_skew_ms=0, node_name=name) as cat,
    ):
        cat.max_attempts = max_attempts
        for event_type in almanac.EventType:
            cat.listen(event_type, lambda e: events.append([e.type.name, e.version, e.object_id]))
        print(json.dumps({"ready": cat.node_name}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            op = request["op"]
            answer: object
            if op == "tables":
                outcomes: list[dict[str, object]] = []
                for table_name in request["names"]:
                    try:
                        version = cat.execute([table(table_name)]).version
                        outcomes.append({"name": table_name, "version": version})
                    except CatalogError as exc:
                        error = type(exc).__name__
                        outcomes.append({"name": table_name, "error": error, "message": str(exc)})
                answer = outcomes
            elif op == "wait":
                answer = cat.catalog_ready(request["version"], timeout=120)
            elif op == "digests":
                answer = {
                    str(v): digest(cat.catalog(v))
                    for v in range(cat.earliest_version, cat.latest_version + 1)
                }
            elif op == "events":
                answer = list(events)
            elif op == "pin":
                answer = pins.enter_context(cat.pin(request["version"])).version
            elif op == "exit":
                break
            else:
                answer = {"unknown op": op}
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
