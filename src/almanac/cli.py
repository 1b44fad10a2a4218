"""The ``almanac`` command line: a catalog node, and maintenance of a
catalog's table data.

``almanac node --store TARGET --name NAME`` runs one catalog node in the
foreground: it follows the log, logs every version it applies and every
event, optionally checkpoints the log by a retention policy, and on SIGTERM
or SIGINT closes (its node key goes away at once) and exits 0.
``almanac janitor <target>`` removes what crashed or aborted writes, dropped
tables and expired snapshots left in the warehouse (see
``almanac.data.run_janitor``). ``almanac upgrade-warehouse <target>``
converts table data written in the old JSON-manifest format to Iceberg (see
``almanac.data.upgrade``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from almanac.catalog import Catalog

__all__ = ["main"]

STORE_VARIABLE = "ALMANAC_STORE"
_FOLLOW_TICK_S = 0.25
"""How long the node waits for a version before it looks at its stop flag."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="almanac", description="Run an Almanac catalog node; maintain a catalog's table data."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    node = commands.add_parser(
        "node", help="run a catalog node in the foreground until SIGTERM or SIGINT"
    )
    node.add_argument(
        "--store",
        default=os.environ.get(STORE_VARIABLE),
        help=f"the catalog (a directory, sqlite:///path.db, ...; default ${STORE_VARIABLE})",
    )
    node.add_argument("--name", help="the node's name (default <hostname>-<pid>)")
    node.add_argument("--warehouse", help="the warehouse, if not the catalog's default")
    node.add_argument("--delay-ms", type=int, help="schema sync: activation delay")
    node.add_argument("--max-clock-skew-ms", type=int, help="schema sync: maximum clock skew")
    node.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="what to log on stderr (default info)",
    )
    node.add_argument("--keep-versions", type=int, help="retention: keep the last N versions")
    node.add_argument(
        "--keep-seconds", type=float, help="retention: keep the versions active within S seconds"
    )
    node.add_argument(
        "--checkpoint-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how often to apply the retention policy (default 60)",
    )
    janitor = commands.add_parser(
        "janitor",
        help="remove uncommitted writes, unreferenced files and dropped tables' data",
    )
    janitor.add_argument("target", help="the catalog (a directory, or sqlite:///path.db)")
    janitor.add_argument("--warehouse", help="the warehouse, if not <directory>/warehouse")
    janitor.add_argument(
        "--grace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="minimum age of unregistered write directories and manifests to remove "
        "(default: one hour)",
    )
    upgrade = commands.add_parser(
        "upgrade-warehouse",
        help="convert table data of the old JSON-manifest format to Apache Iceberg",
    )
    upgrade.add_argument("target", help="the catalog (a directory, or sqlite:///path.db)")
    upgrade.add_argument("--warehouse", help="the warehouse, if not <directory>/warehouse")
    return parser


def _janitor(args: argparse.Namespace) -> int:
    import almanac
    from almanac.data import run_janitor
    from almanac.data.janitor import DEFAULT_GRACE_S

    grace = DEFAULT_GRACE_S if args.grace is None else args.grace
    with almanac.connect(args.target, warehouse=args.warehouse) as cat:
        report = run_janitor(cat, grace_s=grace)
    print(f"staging directories removed: {len(report.staging_removed)}")
    for path in report.staging_removed:
        print(f"  {path}")
    print(f"files removed: {len(report.files_removed)}")
    for path in report.files_removed:
        print(f"  {path}")
    print(f"tables purged: {len(report.tables_purged)}")
    for table_id in report.tables_purged:
        print(f"  table {table_id}")
    return 0


def _upgrade(args: argparse.Namespace) -> int:
    import almanac
    from almanac.data.upgrade import upgrade_warehouse

    with almanac.connect(args.target, warehouse=args.warehouse) as cat:
        report = upgrade_warehouse(cat)
    print(f"tables converted: {len(report.converted)}")
    for table_id, count in sorted(report.converted.items()):
        print(f"  table {table_id}: {count} snapshots")
    print(f"tables purged (in no available catalog version): {len(report.purged)}")
    for table_id in report.purged:
        print(f"  table {table_id}")
    print(f"data files copied out of table-id directories: {len(report.relocated)}")
    for old, new in sorted(report.relocated.items()):
        print(f"  {old} -> {new}")
    print(f"old manifests removed: {len(report.manifests_removed)}")
    for table_id, why in sorted(report.errors.items()):
        print(f"table {table_id} was not converted: {why}", file=sys.stderr)
    return 1 if report.errors else 0


class _NodeName(logging.Filter):
    """Stamps every log record with the node's name (known once it opened)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.node = name

    def filter(self, record: logging.LogRecord) -> bool:
        record.node = self.node
        return True


def _log_versions(cat: Catalog, log: logging.Logger, after: int) -> int:
    """Log each version applied after ``after``; returns the latest logged."""
    from almanac.errors import VersionNotFoundError

    for info in cat.history(after + 1):
        try:
            log.info("applied %s", cat.describe(info.version))
        except VersionNotFoundError:  # checkpointed away meanwhile
            log.info("applied version %d", info.version)
        after = info.version
    return max(after, cat.earliest_version)


def _node(args: argparse.Namespace) -> int:
    """Set up logging and signals for ``_run_node``, and put them back after."""
    from almanac.errors import ValidationError

    if not args.store:
        raise ValidationError(f"almanac node needs --store or ${STORE_VARIABLE}")
    if not args.checkpoint_every > 0:
        raise ValidationError(f"--checkpoint-every must be positive, got {args.checkpoint_every}")
    stamp = _NodeName(args.name or "-")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(stamp)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s [%(node)s] %(name)s: %(message)s")
    )
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(args.log_level.upper())
    log = logging.getLogger("almanac.node")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("%s received: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _run_node(args, stop, stamp, log)
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        root.removeHandler(handler)
        root.setLevel(level)


def _run_node(
    args: argparse.Namespace, stop: threading.Event, stamp: _NodeName, log: logging.Logger
) -> int:
    import almanac
    from almanac.errors import CatalogError, WaitTimeoutError

    retention = None
    if args.keep_versions is not None or args.keep_seconds is not None:
        retention = almanac.RetentionPolicy(
            keep_versions=args.keep_versions, keep_seconds=args.keep_seconds
        )
    cat = almanac.connect(
        args.store,
        warehouse=args.warehouse,
        delay_ms=args.delay_ms,
        max_clock_skew_ms=args.max_clock_skew_ms,
        retention=retention,
        node_name=args.name,
    )
    with cat:
        stamp.node = cat.node_name
        for event_type in almanac.EventType:
            cat.listen(
                event_type,
                lambda e: log.info(
                    "event %s: version %d, object #%d", e.type.name, e.version, e.object_id
                ),
            )
        seen = cat.latest_version
        log.info(
            "node %s following %s from version %d (delay %d ms, max clock skew %d ms)",
            cat.node_name,
            cat.target,
            seen,
            cat.delay_ms,
            cat.max_clock_skew_ms,
        )
        checkpoint_at = time.monotonic() + args.checkpoint_every
        while not stop.is_set():
            with contextlib.suppress(WaitTimeoutError):
                cat.catalog_ready(seen + 1, timeout=_FOLLOW_TICK_S, applied_only=True)
            seen = _log_versions(cat, log, seen)
            if retention is not None and time.monotonic() >= checkpoint_at:
                before = cat.earliest_version
                try:
                    earliest = cat.apply_retention()
                except CatalogError as exc:  # the store is down, say: try again later
                    log.warning("checkpoint failed: %s", exc)
                    earliest = before
                if earliest != before:
                    log.info("checkpointed the log: earliest version now %d", earliest)
                checkpoint_at = time.monotonic() + args.checkpoint_every
    log.info("node %s stopped", cat.node_name)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (1 for a catalog error)."""
    from almanac.errors import CatalogError

    args = _parser().parse_args(argv)
    try:
        if args.command == "node":
            return _node(args)
        if args.command == "janitor":
            return _janitor(args)
        if args.command == "upgrade-warehouse":
            return _upgrade(args)
    except CatalogError as exc:
        print(f"almanac {args.command}: {exc}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
