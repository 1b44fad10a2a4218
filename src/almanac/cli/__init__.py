"""The ``almanac`` command line (click, with rich output on a terminal).

``almanac [--store URI] [--token TOKEN] [--debug] COMMAND``: ``init``, ``sql``, ``show``,
``describe``, ``history``, ``diff``, ``servers``, ``tablets``, ``watch``, ``compact``,
``janitor``, ``purge``, ``upgrade-warehouse``, ``node``, ``serve`` and ``tserver``.
``--store`` defaults to
``$ALMANAC_STORE``, else ``./almanac-data``; an ``http(s)://`` store is a
catalog server, reached with the token of ``--token`` or ``$ALMANAC_TOKEN``
(see ``almanac.cli.app``). A catalog error prints one line,
``error: <message>``, on stderr and exits 1; ``--debug`` adds the traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

from almanac.cli.app import almanac_group, run
from almanac.cli.maintenance import compact, init, janitor, purge, upgrade_warehouse
from almanac.cli.node import node
from almanac.cli.reads import describe, diff, history, servers, show, sql, tablets
from almanac.cli.serve import serve
from almanac.cli.tserver import tserver
from almanac.cli.watch import watch

__all__ = ["main"]

for _command in (
    init,
    sql,
    show,
    describe,
    history,
    diff,
    servers,
    tablets,
    watch,
    compact,
    janitor,
    purge,
    upgrade_warehouse,
    node,
    serve,
    tserver,
):
    almanac_group.add_command(_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; returns the exit status."""
    return run(almanac_group, argv)
