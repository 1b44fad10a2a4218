"""``almanac tserver``: one tablet server in the foreground, until SIGTERM
or SIGINT (then its registration goes away at once and it exits 0). Its
Flight endpoint takes the tokens ``almanac serve`` takes, from the same
places, and binds to loopback unless told otherwise."""

from __future__ import annotations

import sys

import click

from almanac.cli.app import open_node, store_option
from almanac.cli.foreground import foreground

__all__ = ["tserver"]


def _attribute(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {value!r}", ctx, param)
        pairs.append((key, val))
    return tuple(pairs)


@click.command()
@click.option("--name", required=True, help="The server's name, unique among live servers.")
@click.option(
    "--data-dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Where the server keeps its tablets' local files.",
)
@click.option(
    "--attr",
    "attrs",
    multiple=True,
    callback=_attribute,
    metavar="K=V",
    help="An attribute that zone filters match (repeatable).",
)
@click.option(
    "--storage-profile",
    "profiles",
    multiple=True,
    metavar="P",
    help="A storage profile this server offers (repeatable).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The Flight address to bind.")
@click.option(
    "--tokens-file",
    type=click.Path(dir_okay=False),
    help="Bearer tokens a Flight call must carry, one `ROLE TOKEN` pair a line "
    "(default $ALMANAC_TOKENS); any role reads.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow a non-loopback address without tokens (anyone who reaches it reads every "
    "hosted table).",
)
@click.option(
    "--flight-port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The Arrow Flight port (0: a free one, printed once bound).",
)
@click.option("--warehouse", metavar="URI", help="The warehouse, if not the catalog's default.")
@click.option(
    "--report-interval",
    type=click.FloatRange(min=0, min_open=True),
    default=2.0,
    show_default=True,
    metavar="S",
    help="Seconds between full reports.",
)
@click.option(
    "--lease-ttl",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="S",
    help="Seconds the registration outlives a server that died.",
)
@click.option(
    "--compact-small-files",
    type=click.IntRange(min=2),
    metavar="N",
    help="As a tablet's leader, compact it once it has N files (default: never).",
)
@click.option(
    "--target-file-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=128.0,
    show_default=True,
    help="The size compaction writes files of.",
)
@click.option(
    "--batch-rows",
    type=click.IntRange(min=1),
    default=65_536,
    show_default=True,
    help="Rows per Flight batch.",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="What to log on stderr.",
)
@store_option
def tserver(
    name: str,
    data_dir: str,
    attrs: tuple[tuple[str, str], ...],
    profiles: tuple[str, ...],
    host: str,
    tokens_file: str | None,
    insecure: bool,
    flight_port: int,
    warehouse: str | None,
    report_interval: float,
    lease_ttl: float,
    compact_small_files: int | None,
    target_file_mb: float,
    batch_rows: int,
    log_level: str,
    store: str | None,
) -> int:
    """Run a tablet server: host the tablets placement gives it and serve
    their rows over Arrow Flight."""
    from almanac.access.tokens import Tokens
    from almanac.tserver.server import TabletServer, TabletServerSettings

    settings = TabletServerSettings(
        name=name,
        data_dir=data_dir,
        host=host,
        flight_port=flight_port,
        attributes=attrs,
        storage_profiles=profiles,
        report_interval_s=report_interval,
        lease_ttl_s=lease_ttl,
        compact_small_files=compact_small_files,
        target_file_mb=target_file_mb,
        batch_rows=batch_rows,
        tokens=Tokens.load(tokens_file),
        insecure=insecure,
    )
    with foreground("almanac.tserver", name, log_level) as fg:
        with (
            open_node(store, data=True, warehouse=warehouse) as cat,
            TabletServer(cat, settings) as server,
        ):
            click.echo(f"Serving tablets as {name} on {server.location}")
            sys.stdout.flush()
            while not fg.stop.wait(0.5):
                pass
        fg.log.info("tablet server %s stopped", name)
    return 0
