"""The ``almanac`` command group: the global ``--store`` and ``--debug``, the
one place where a catalog error becomes one line on stderr and exit status
1, and the one way every subcommand opens its catalog.

Importing this stays cheap (click only): the catalog, rich, Spark and the
HTTP server are imported by the subcommands that use them.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from almanac.catalog import Catalog
    from almanac.targets import Target

__all__ = [
    "DEFAULT_STORE",
    "STORE_VARIABLE",
    "Settings",
    "almanac_group",
    "open_node",
    "require_catalog",
    "resolve_target",
    "run",
    "store_option",
]

STORE_VARIABLE = "ALMANAC_STORE"
DEFAULT_STORE = "./almanac-data"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Settings:
    """The global options, for every subcommand."""

    store: str
    debug: bool = False


class _Group(click.Group):
    """Turns a ``CatalogError`` from any subcommand into ``error: <message>``
    and exit status 1 (the traceback too with ``--debug``); lists its
    commands in the order they were added, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def invoke(self, ctx: click.Context) -> Any:
        from almanac.errors import CatalogError

        try:
            return super().invoke(ctx)
        except CatalogError as exc:
            settings = ctx.find_object(Settings)
            if settings is not None and settings.debug:
                traceback.print_exc()
            click.echo("error: " + " ".join(str(exc).split("\n")), err=True)
            ctx.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    envvar=STORE_VARIABLE,
    default=DEFAULT_STORE,
    metavar="URI",
    help=f"The catalog: a directory, sqlite:///file.db or etcd://host:port/ns "
    f"(default ${STORE_VARIABLE}, else {DEFAULT_STORE}).",
)
@click.option("--debug", is_flag=True, help="Print the traceback of an error.")
@click.version_option(package_name="almanac", prog_name="almanac")
@click.pass_context
def almanac_group(ctx: click.Context, store: str, debug: bool) -> None:
    """Almanac: a versioned, transactional table catalog."""
    ctx.obj = Settings(store=store, debug=debug)


def store_option(command: F) -> F:
    """``--store`` on a subcommand too, overriding the global one, so that
    ``almanac node --store URI`` reads as naturally as ``almanac --store URI node``."""
    return click.option(
        "--store",
        "store",
        default=None,
        metavar="URI",
        help="The catalog, instead of the global --store.",
    )(command)


def resolve_target(store: str | None) -> Target:
    """The subcommand's ``--store``, else the global one (which falls back to
    ``$ALMANAC_STORE``, then ``./almanac-data``), parsed."""
    from almanac.targets import parse_target

    if store is None:
        settings = click.get_current_context().find_object(Settings)
        store = settings.store if settings is not None else DEFAULT_STORE
    return parse_target(store)


def require_catalog(target: Target) -> None:
    """Refuse a local path that holds no catalog (an etcd cluster can only
    tell once opened), so that a typo in ``--store`` does not quietly start
    an empty catalog; only ``init`` creates one."""
    from almanac.errors import NotFoundError

    path = target.store_path
    if path is not None and not path.exists():
        raise NotFoundError(
            f"No catalog at {target}: create one with `almanac --store {target} init`, "
            f"or name another with --store or ${STORE_VARIABLE}",
            target=str(target),
        )


def open_node(
    store: str | None,
    *,
    data: bool = False,
    create: bool = False,
    **options: Any,
) -> Catalog:
    """Open the catalog of ``store`` (see ``resolve_target``) as a node:
    with its data plane (``almanac.connect``) when ``data`` is set (DDL,
    table data), else the catalog alone (reads); ``create`` lets it make a
    new catalog (see ``require_catalog``)."""
    from almanac.cli.output import progress

    target = resolve_target(store)
    if not create:
        require_catalog(target)
    with progress(f"Opening the catalog at {target}"):
        if data:
            from almanac.connection import connect

            opened: Catalog = connect(target, **options)  # a local target: never remote
            return opened
        from almanac.connection import open_catalog

        return open_catalog(target, **options)


def run(group: click.Group, argv: Sequence[str] | None) -> int:
    """Run one command line; returns the exit status (1 for a catalog
    error, 2 for a usage error, 130 for Ctrl-C outside ``watch``/``node``)."""
    try:
        result = group.main(
            args=list(argv) if argv is not None else None,
            prog_name="almanac",
            standalone_mode=False,
        )
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return result if isinstance(result, int) else 0
