"""Child process: commit tables concurrently with siblings, then report.

``python -m tests.durable.worker_ddl TARGET PREFIX COUNT TOTAL [MAX_ATTEMPTS]``;
with ``MAX_ATTEMPTS`` 1 a single lost race fails the worker."""

from __future__ import annotations

import json
import sys

import almanac
from tests.durable.support import digest, table


def main() -> None:
    target, prefix, count, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    max_attempts = int(sys.argv[5]) if len(sys.argv) > 5 else None
    applied: list[int] = []
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as cat:
        cat.max_attempts = max_attempts
        cat.listen(almanac.EventType.TABLE_CREATE, lambda e: applied.append(e.version))
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(count):
            cat.execute([table(f"{prefix}{i}")])
        cat.catalog_ready(total, timeout=120)  # a failure guard, not a duration
        print(json.dumps({"applied": applied, "digest": digest(cat.catalog())}), flush=True)


if __name__ == "__main__":
    main()
