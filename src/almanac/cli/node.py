"""``almanac node``: one catalog node in the foreground.

It follows the log, logs every version it applies and every event,
optionally checkpoints the log by a retention policy, and on SIGTERM or
SIGINT closes (its node key goes away at once) and exits 0.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING

import click

from almanac.cli.app import max_tablets_option, open_node, store_option
from almanac.cli.foreground import foreground

if TYPE_CHECKING:
    from almanac.node.catalog import Catalog, RetentionPolicy

__all__ = ["node"]

_FOLLOW_TICK_S = 0.25
"""How long the node waits for a version before it looks at its stop flag."""


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


@click.command()
@click.option("--name", help="The node's name (default <hostname>-<pid>).")
@click.option("--warehouse", metavar="URI", help="The warehouse, if not the catalog's default.")
@click.option("--delay-ms", type=int, help="Schema sync: activation delay.")
@click.option("--max-clock-skew-ms", type=int, help="Schema sync: maximum clock skew.")
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="What to log on stderr.",
)
@click.option("--keep-versions", type=int, help="Retention: keep the last N versions.")
@click.option(
    "--keep-seconds", type=float, help="Retention: keep the versions active within S seconds."
)
@click.option(
    "--checkpoint-every",
    type=float,
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="How often to apply the retention policy.",
)
@click.option(
    "--placement-interval",
    type=float,
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="How often the placement leader moves tablets.",
)
@click.option(
    "--placement-assignment-timeout",
    type=float,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="A tablet its servers do not report within this time is replaced.",
)
@click.option(
    "--placement-leader-ttl",
    type=float,
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="The placement leader's lease: another node takes over this long after it died.",
)
@click.option(
    "--placement-create-wait",
    type=float,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long CREATE TABLE waits for enough tablet servers.",
)
@max_tablets_option
@click.option("--no-placement", is_flag=True, help="Take no part in tablet placement.")
@store_option
def node(
    name: str | None,
    warehouse: str | None,
    delay_ms: int | None,
    max_clock_skew_ms: int | None,
    log_level: str,
    keep_versions: int | None,
    keep_seconds: float | None,
    checkpoint_every: float,
    placement_interval: float,
    placement_assignment_timeout: float,
    placement_leader_ttl: float,
    placement_create_wait: float,
    max_tablets_per_server: int,
    no_placement: bool,
    store: str | None,
) -> int:
    """Run a catalog node in the foreground until SIGTERM or SIGINT."""
    import almanac
    from almanac.errors import ValidationError

    if not checkpoint_every > 0:
        raise ValidationError(f"--checkpoint-every must be positive, got {checkpoint_every}")
    from almanac.placement.settings import PlacementSettings

    placement = None
    if not no_placement:
        placement = PlacementSettings(
            interval_s=placement_interval,
            assignment_timeout_s=placement_assignment_timeout,
            leader_ttl_s=placement_leader_ttl,
            create_wait_s=placement_create_wait,
            max_tablets_per_server=max_tablets_per_server,
        )
    retention = None
    if keep_versions is not None or keep_seconds is not None:
        retention = almanac.RetentionPolicy(keep_versions=keep_versions, keep_seconds=keep_seconds)
    with foreground("almanac.node", name or "-", log_level) as fg:
        cat = open_node(
            store,
            data=True,
            warehouse=warehouse,
            delay_ms=delay_ms,
            max_clock_skew_ms=max_clock_skew_ms,
            retention=retention,
            node_name=name,
            placement=placement,
        )
        with cat:
            fg.named(cat.node_name)
            _run_node(cat, retention, checkpoint_every, fg.stop, fg.log)
        fg.log.info("node %s stopped", cat.node_name)
        return 0


def _run_node(
    cat: Catalog,
    retention: RetentionPolicy | None,
    checkpoint_every: float,
    stop: threading.Event,
    log: logging.Logger,
) -> None:
    import almanac
    from almanac.errors import CatalogError, WaitTimeoutError

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
    checkpoint_at = time.monotonic() + checkpoint_every
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
            checkpoint_at = time.monotonic() + checkpoint_every
