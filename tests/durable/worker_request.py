"""Child process: execute one request under a request id and print its result.

Arguments: target, request id, table name, mode. Mode ``crash`` kills the
process with SIGKILL right after its version is committed, before
``execute`` returns (a commit hook's finish callback); mode ``race`` waits
for a ``go`` line on stdin first, so that several children start together.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import almanac
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate
from almanac.node.catalog import HookWork
from tests.durable.support import table


def main() -> None:
    target, request_id, name, mode = sys.argv[1:5]
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as cat:
        if mode == "crash":

            def die_after_commit(ok: bool) -> None:
                if ok:
                    os.kill(os.getpid(), signal.SIGKILL)

            def hook(base: CatalogVersion, new: CatalogVersion, u: VersionedUpdate) -> HookWork:
                return HookWork(finish=die_after_commit)

            cat.add_commit_hook(hook)
        print("ready", flush=True)
        if mode == "race":
            assert sys.stdin.readline().strip() == "go"
        result = cat.execute(request_commands(name), request_id=request_id)
        print(json.dumps(result_json(result)), flush=True)


def request_commands(name: str) -> list[almanac.Command]:
    """Not idempotent by themselves: applied twice, the first one fails."""
    return [
        almanac.CreateSchema("S"),
        table(name, "S"),
        almanac.CreateSchema("S", if_not_exists=True),
    ]


def result_json(result: almanac.ExecuteResult) -> dict[str, object]:
    return {"version": result.version, "applied": list(result.applied), "created": result.created}


if __name__ == "__main__":
    main()
