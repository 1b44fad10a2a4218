"""``almanac serve``: the HTTP API and the web console over one catalog,
until SIGINT or SIGTERM (see ``almanac.server.serve``)."""

from __future__ import annotations

import click

from almanac.cli.app import local_target, max_tablets_option, store_option

__all__ = ["serve"]


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8181,
    show_default=True,
    help="The port (0: a free one, printed once bound).",
)
@click.option(
    "--tokens-file",
    type=click.Path(dir_okay=False),
    help="Bearer tokens, one `ROLE TOKEN` pair a line (default $ALMANAC_TOKENS).",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow a non-loopback address without tokens "
    "(anyone who reaches it may change the catalog).",
)
@click.option("--warehouse", metavar="URI", help="The warehouse, if not the catalog's default.")
@click.option("--no-placement", is_flag=True, help="Take no part in tablet placement.")
@max_tablets_option
@click.option(
    "--soft-delete-reserve",
    type=click.FloatRange(min=0),
    default=0.0,
    metavar="SECONDS",
    help="The reserve of a DROP TABLE that names none (default 0: drop at once).",
)
@store_option
def serve(
    host: str,
    port: int,
    tokens_file: str | None,
    insecure: bool,
    warehouse: str | None,
    no_placement: bool,
    max_tablets_per_server: int,
    soft_delete_reserve: float,
    store: str | None,
) -> int:
    """Serve the HTTP API (under /v1) and the web console (at /)."""
    from almanac.placement.settings import PlacementSettings
    from almanac.server import serve as run_server

    target = local_target(store)
    run_server(
        str(target),
        host=host,
        port=port,
        tokens_file=tokens_file,
        insecure=insecure,
        warehouse=warehouse,
        placement=(
            False
            if no_placement
            else PlacementSettings(max_tablets_per_server=max_tablets_per_server)
        ),
        soft_delete_reserve_s=soft_delete_reserve,
        create=False,
    )
    return 0
