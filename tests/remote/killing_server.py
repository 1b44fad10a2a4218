"""A catalog server that SIGKILLs itself after committing a version that
creates table ``TABLE``, before it replies: the crash between commit and
reply that idempotent retries must survive. Test-only; the product has no
such hook. ``killing_server.py TARGET PORT TABLE``."""

from __future__ import annotations

import os
import signal
import sys

import uvicorn

import almanac
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate
from almanac.node.catalog import HookWork
from almanac.server import create_app


def main() -> None:
    target, port, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    cat = almanac.connect(target)

    def die(ok: bool) -> None:
        if ok:
            os.kill(os.getpid(), signal.SIGKILL)

    def hook(base: CatalogVersion, new: CatalogVersion, update: VersionedUpdate) -> HookWork | None:
        created = any(t.name == table for t in new.tables_by_id.values()) and not any(
            t.name == table for t in base.tables_by_id.values()
        )
        return HookWork(finish=die) if created else None

    cat.add_commit_hook(hook)
    uvicorn.run(create_app(cat, tokens=None), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
