"""The ``almanac`` command group: the global ``--store``, ``--token`` and
``--debug``, the one place where a catalog error becomes one line on stderr
and exit status 1, and the one way every subcommand opens its catalog.

An ``http://`` or ``https://`` store is a catalog server (``almanac
serve``): the reads, ``sql`` and ``watch`` reach it as a ``RemoteCatalog`` with the
bearer token of ``--token`` or ``$ALMANAC_TOKEN``, which is never printed;
the commands that run a node on the catalog itself refuse it.

Importing this stays cheap (click only): the catalog, rich, Spark and the
HTTP server are imported by the subcommands that use them.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

import click

from almanac._check import INT64_MAX

if TYPE_CHECKING:
    from almanac.access.remote import RemoteCatalog
    from almanac.model.targets import Target
    from almanac.node.catalog import Catalog
    from almanac.sql.results import SqlResult

__all__ = [
    "DEFAULT_STORE",
    "FullHelpGroup",
    "STORE_VARIABLE",
    "TOKEN_VARIABLE",
    "Settings",
    "SqlCatalog",
    "almanac_group",
    "int64_at_least",
    "local_target",
    "max_tablets_option",
    "open_node",
    "open_remote",
    "open_sql",
    "resolve_target",
    "run",
    "store_option",
]

STORE_VARIABLE = "ALMANAC_STORE"
TOKEN_VARIABLE = "ALMANAC_TOKEN"
DEFAULT_STORE = "./almanac-data"
DEFAULT_TIMEOUT_S = 30.0
"""``--timeout``: as long as a ``RemoteCatalog`` retries by default."""
RETRY_NOTICE_EVERY_S = 5.0
"""How often ``retrying…`` is repeated on a terminal while a server stays down."""

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Settings:
    """The global options, for every subcommand."""

    store: str
    debug: bool = False
    token: str | None = field(default=None, repr=False)
    """The bearer token for a catalog server; kept out of every message."""
    timeout: float = DEFAULT_TIMEOUT_S
    """How long a command keeps trying a catalog server that does not answer."""


class SqlCatalog(Protocol):
    """What ``sql`` and the reads need of a catalog: a local ``Catalog``
    and a ``RemoteCatalog`` both answer it, the same way."""

    def sql(
        self, text: str, *, default_schema: str = ..., request_id: str | None = None
    ) -> SqlResult: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class FullHelpGroup(click.Group):
    """A group whose command list shows each command's whole first
    paragraph, wrapped, where click would cut it off with "..."."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=sys.maxsize)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class _Group(FullHelpGroup):
    """Turns a ``CatalogError`` from any subcommand into ``error: <message>``
    and exit status 1 (the traceback too with ``--debug``); lists its
    commands in the order they were added, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def invoke(self, ctx: click.Context) -> Any:
        from almanac.errors import CatalogError, NotFoundError

        try:
            return super().invoke(ctx)
        except CatalogError as exc:
            settings = ctx.find_object(Settings)
            if settings is not None and settings.debug:
                traceback.print_exc()
            message = " ".join(str(exc).split("\n"))
            if isinstance(exc, NotFoundError) and exc.context.get("kind") == "catalog":
                message += f", or name another with --store or ${STORE_VARIABLE}"
            click.echo("error: " + message, err=True)
            ctx.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    envvar=STORE_VARIABLE,
    default=DEFAULT_STORE,
    metavar="URI",
    help=f"The catalog: a directory, sqlite:///file.db, etcd://host:port/ns or a "
    f"server, http(s)://host:port (default ${STORE_VARIABLE}, else {DEFAULT_STORE}).",
)
@click.option(
    "--token",
    envvar=TOKEN_VARIABLE,
    default=None,
    metavar="TOKEN",
    help=f"The bearer token of an http(s) store (default ${TOKEN_VARIABLE}); never printed.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, max=threading.TIMEOUT_MAX),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="How long to keep trying an http(s) store that does not answer; on a terminal, "
    "each retry says so on stderr.",
)
@click.option("--debug", is_flag=True, help="Print the traceback of an error.")
@click.version_option(package_name="almanac", prog_name="almanac")
@click.pass_context
def almanac_group(
    ctx: click.Context, store: str, token: str | None, timeout: float, debug: bool
) -> None:
    """Almanac: a versioned, transactional table catalog."""
    ctx.obj = Settings(store=store, debug=debug, token=token, timeout=timeout)


def int64_at_least(lo: int) -> click.IntRange:
    """A version or count option: checked as click usage (exit 2, naming the
    option) before the catalog's own checks would name an internal parameter."""
    return click.IntRange(min=lo, max=INT64_MAX)


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


def max_tablets_option(command: F) -> F:
    """``--max-tablets-per-server`` of a command that runs a placement
    candidate: the limit is the placement leader's, so every node should
    say the same."""
    from almanac.placement.settings import PlacementSettings

    return click.option(
        "--max-tablets-per-server",
        type=int64_at_least(1),
        default=PlacementSettings().max_tablets_per_server,
        show_default=True,
        metavar="N",
        help="Placement: the most tablet replicas one tablet server is given.",
    )(command)


def resolve_target(store: str | None) -> Target:
    """The subcommand's ``--store``, else the global one (which falls back to
    ``$ALMANAC_STORE``, then ``./almanac-data``), parsed."""
    from almanac.model.targets import parse_target

    if store is None:
        settings = click.get_current_context().find_object(Settings)
        store = settings.store if settings is not None else DEFAULT_STORE
    return parse_target(store)


def local_target(store: str | None) -> Target:
    """``resolve_target`` for a command that runs a node on the catalog
    itself: a catalog server is refused, naming the command."""
    from almanac.errors import ValidationError

    target = resolve_target(store)
    if target.kind == "http":
        command = click.get_current_context().command_path
        raise ValidationError(
            f"`{command}` needs the catalog itself, not a server: '{target}' is reached "
            "over HTTP; run it where the catalog's store is",
            target=str(target),
            rule="local-only",
        )
    return target


def open_node(
    store: str | None,
    *,
    data: bool = False,
    create: bool = False,
    **options: Any,
) -> Catalog:
    """Open the catalog of ``store`` (see ``resolve_target``) as a node:
    with its data plane (``almanac.connect``) when ``data`` is set (DDL,
    table data), else the catalog alone (reads). Only ``create`` (``init``)
    may make a new catalog: any other command refuses a target that holds
    none, so that a typo in ``--store`` does not quietly start an empty one."""
    from almanac.cli.output import progress

    target = local_target(store)
    with progress(f"Opening the catalog at {target}"):
        if data:
            from almanac.access.connection import connect

            # a local target: never remote
            opened: Catalog = connect(target, create=create, **options)
            return opened
        from almanac.access.connection import open_catalog

        return open_catalog(target, create=create, **options)


def open_sql(store: str | None, *, data: bool = False) -> SqlCatalog:
    """The catalog ``sql`` and the reads run on: a ``RemoteCatalog`` for a
    server (with the ``--token``), else the local node of ``open_node``."""
    if resolve_target(store).kind != "http":
        return open_node(store, data=data)
    return open_remote(store)


def open_remote(store: str | None) -> RemoteCatalog:
    """The catalog server of an ``http(s)://`` store, with the ``--token``
    (checked here, so that a bad one is named as the user gave it), tried
    for ``--timeout`` seconds; on a terminal each wait for it says so."""
    from almanac.access.remote import RemoteCatalog
    from almanac.access.tokens import check_token

    settings = click.get_current_context().find_object(Settings) or Settings(DEFAULT_STORE)
    token = settings.token
    if token is not None:
        token = check_token(token, f"--token (or ${TOKEN_VARIABLE})")
    target = resolve_target(store)
    notice = _RetryNotice(target.url) if sys.stderr.isatty() else None
    return RemoteCatalog(target.url, token=token, retry_s=settings.timeout, on_retry=notice)


class _RetryNotice:
    """``retrying…`` on stderr while a server does not answer: at the first
    retry, then every ``RETRY_NOTICE_EVERY_S``, so a wait is never silent."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.last: float | None = None

    def __call__(self, failure: str, left: float) -> None:
        now = time.monotonic()
        if self.last is not None and now - self.last < RETRY_NOTICE_EVERY_S:
            return
        self.last = now
        click.echo(
            f"retrying… {self.url} does not answer ({failure}); giving up in {left:.1f} s "
            "(--timeout)",
            err=True,
        )


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
