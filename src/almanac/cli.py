"""The ``almanac`` command line: maintenance of a catalog's table data.

``almanac janitor <target>`` removes what crashed or aborted writes, dropped
tables and expired snapshots left in the warehouse (see
``almanac.data.run_janitor``). ``almanac upgrade-warehouse <target>``
converts table data written in the old JSON-manifest format to Iceberg (see
``almanac.data.upgrade``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="almanac", description="Maintenance of an Almanac catalog's table data."
    )
    commands = parser.add_subparsers(dest="command", required=True)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (1 for a catalog error)."""
    from almanac.errors import CatalogError

    args = _parser().parse_args(argv)
    try:
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
