"""Commands that look after a catalog rather than read or change it:
``init`` creates one, ``compact`` checkpoints its log, ``janitor`` cleans its
warehouse, ``purge`` removes soft-deleted tables whose reserve ended,
``upgrade-warehouse`` converts old table data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from almanac.cli.app import int64_at_least, local_target, open_node, store_option
from almanac.cli.output import progress

__all__ = ["compact", "init", "janitor", "purge", "upgrade_warehouse"]

F = TypeVar("F", bound=Callable[..., Any])


@click.command()
@store_option
def init(store: str | None) -> int:
    """Create the catalog at the store (nothing happens if one is there)."""
    from almanac.errors import ValidationError

    target = local_target(store)
    if not target.durable:
        raise ValidationError(
            f"Catalog target {target} lives only inside one process: there is nothing to "
            "create; name a directory, sqlite:///file.db or etcd://host:port/ns"
        )
    path = target.store_path
    existed = path is not None and path.exists()
    with open_node(str(target), create=True) as cat:
        version = cat.latest_version
    if path is None:
        click.echo(f"Catalog at {target} (version {version})")
    elif existed:
        click.echo(f"Catalog already at {target} (version {version})")
    else:
        click.echo(f"Created a catalog at {target} (version {version})")
    return 0


@click.command()
@click.option("--keep", type=int64_at_least(1), metavar="N", help="Keep the last N versions.")
@click.option(
    "--keep-seconds",
    type=click.FloatRange(min=0),
    metavar="S",
    help="Keep the versions active within the last S seconds.",
)
@store_option
def compact(keep: int | None, keep_seconds: float | None, store: str | None) -> int:
    """Checkpoint the log and delete the versions before it.

    Older versions can no longer be read afterwards; versions a reader pins
    are kept. With both rules, a version goes only when both allow it.
    """
    from almanac.node.catalog_types import RetentionPolicy

    if keep is None and keep_seconds is None:
        raise click.UsageError("compact needs --keep N or --keep-seconds S")
    policy = RetentionPolicy(keep_versions=keep, keep_seconds=keep_seconds)
    with open_node(store, retention=policy) as cat:
        # Versions start at 1: an uncheckpointed log's "earliest" is the empty version 0.
        before = max(cat.earliest_version, 1)
        with progress("Checkpointing the log"):
            earliest = max(cat.apply_retention(), 1)
        latest = cat.latest_version
    removed = earliest - before
    kept = f"version {latest}" if earliest == latest else f"versions {earliest} to {latest}"
    click.echo(
        f"{kept} kept, "
        + (
            f"{removed} older version{'' if removed == 1 else 's'} removed"
            if removed
            else "none removed"
        )
    )
    return 0


def _target_argument(command: F) -> F:
    """The catalog as a positional argument too (``almanac janitor ./data``),
    as these commands took it before ``--store`` existed."""
    return click.argument("target", required=False, metavar="[TARGET]")(command)


def _warehouse_option(command: F) -> F:
    return click.option(
        "--warehouse", metavar="URI", help="The warehouse, if not <directory>/warehouse."
    )(command)


def _store(target: str | None, store: str | None) -> str | None:
    if target is not None and store is not None:
        raise click.UsageError("Name the catalog as TARGET or with --store, not both")
    return target if target is not None else store


@click.command()
@_target_argument
@_warehouse_option
@click.option(
    "--grace",
    type=float,
    metavar="SECONDS",
    help="Minimum age of unregistered write directories and of unreferenced files "
    "to remove (default: three days); Iceberg clients' commits of files older than "
    "this are refused.",
)
@store_option
def janitor(
    target: str | None, warehouse: str | None, grace: float | None, store: str | None
) -> int:
    """Remove uncommitted writes, unreferenced files and dropped tables' data.

    Only in the catalog's own warehouse (its .almanac-warehouse marker names
    the catalog), and only below each table's own directory.
    """
    from almanac.data import run_janitor
    from almanac.data.janitor import DEFAULT_GRACE_S

    with (
        open_node(_store(target, store), data=True, warehouse=warehouse) as cat,
        progress("Cleaning the warehouse"),
    ):
        report = run_janitor(cat, grace_s=DEFAULT_GRACE_S if grace is None else grace)
    click.echo(f"staging directories removed: {len(report.staging_removed)}")
    for path in report.staging_removed:
        click.echo(f"  {path}")
    click.echo(f"files removed: {len(report.files_removed)}")
    for path in report.files_removed:
        click.echo(f"  {path}")
    click.echo(f"tables purged: {len(report.tables_purged)}")
    for table_id in report.tables_purged:
        click.echo(f"  table {table_id}")
    if report.kept:
        click.echo(f"files kept (outside their table's directory): {len(report.kept)}")
        for path in report.kept:
            click.echo(f"  {path}")
    return 0


@click.command()
@store_option
def purge(store: str | None) -> int:
    """Purge the soft-deleted tables whose reserve has ended, in one version.

    Their data goes with the next janitor run once no kept catalog version
    holds them (as for DROP TABLE).
    """
    from almanac.model.clock import to_datetime
    from almanac.node.soft_delete import purge_expired_tables

    with open_node(store) as cat:
        purged = purge_expired_tables(cat)
        version = cat.latest_version
        latest = cat.catalog(version)
        names = {s.id: s.name for s in latest.schemas()}
    click.echo(
        f"tables purged: {len(purged)}" + (f" (catalog version {version})" if purged else "")
    )
    for table in purged:
        end = to_datetime(table.purge_at or 0).isoformat(timespec="seconds")
        name = f"{names.get(table.schema_id, '?')}.{table.name}"
        click.echo(f"  {name} (id {table.id}, reserved until {end})")
    return 0


@click.command("upgrade-warehouse")
@_target_argument
@_warehouse_option
@store_option
def upgrade_warehouse(target: str | None, warehouse: str | None, store: str | None) -> int:
    """Convert table data of the old JSON-manifest format to Apache Iceberg."""
    from almanac.data.upgrade import upgrade_warehouse as upgrade

    with (
        open_node(_store(target, store), data=True, warehouse=warehouse) as cat,
        progress("Converting table data"),
    ):
        report = upgrade(cat)
    click.echo(f"tables converted: {len(report.converted)}")
    for table_id, count in sorted(report.converted.items()):
        click.echo(f"  table {table_id}: {count} snapshots")
    click.echo(f"tables purged (in no available catalog version): {len(report.purged)}")
    for table_id in report.purged:
        click.echo(f"  table {table_id}")
    click.echo(f"data files copied out of table-id directories: {len(report.relocated)}")
    for old, new in sorted(report.relocated.items()):
        click.echo(f"  {old} -> {new}")
    click.echo(f"old manifests removed: {len(report.manifests_removed)}")
    for table_id, why in sorted(report.errors.items()):
        click.echo(f"table {table_id} was not converted: {why}", err=True)
    return 1 if report.errors else 0
