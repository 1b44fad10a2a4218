"""Previewing a version: what a batch of commands would make of a catalog.

Committing, CREATE TABLE AS SELECT and the Spark driver all need the next
version before it exists (to validate, to shape the data they write, to
attach their own writes). They all get it here, so a batch means the same
thing everywhere: later commands see the changes of earlier ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from almanac import _check as check
from almanac.commands.base import Command
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import UpdateEntry, apply_entries

__all__ = ["Preview", "command_batch", "preview"]


@dataclass(frozen=True, slots=True)
class Preview:
    """``catalog`` is the next version as the entries make it (numbered
    ``base.version + 1``, not yet activated); ``applied[i]`` tells whether
    command ``i`` changed anything (False for an ``IF [NOT] EXISTS`` no-op)."""

    entries: tuple[UpdateEntry, ...]
    applied: tuple[bool, ...]
    catalog: CatalogVersion


def command_batch(commands: object, where: str) -> list[Command]:
    """The commands of one batch, in order, each checked to be a command."""
    what = f"Parameter 'commands' of {where}"
    if isinstance(commands, Command):
        raise check.fail(what, "a list of commands (wrap a single command in a list)", commands)
    if isinstance(commands, AbstractSet | Mapping):
        raise check.fail(what, "a list of commands (they apply in order; a set has none)", commands)
    if isinstance(commands, str | bytes | bytearray) or not isinstance(commands, Iterable):
        raise check.fail(what, "a list of commands", commands)
    batch = list(commands)
    for i, cmd in enumerate(batch):
        check.instance(cmd, Command, f"Item {i} of parameter 'commands' of {where}", "a Command")
    return batch


def preview(base: CatalogVersion, commands: Iterable[Command]) -> Preview:
    """Validate each command against the working version, then apply its entries."""
    check.instance(base, CatalogVersion, "Parameter 'base' of preview")
    commands = command_batch(commands, "preview")
    working = base.evolve(version=base.version + 1)
    entries: list[UpdateEntry] = []
    applied: list[bool] = []
    for command in commands:
        produced = command.validate(working)
        applied.append(bool(produced))
        working = apply_entries(working, produced)
        entries.extend(produced)
    return Preview(tuple(entries), tuple(applied), working)
