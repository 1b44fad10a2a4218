"""The Arrow Flight ticket of one tablet read: which table, which tablet,
at which catalog version. Canonical JSON (sorted keys, no spaces, UTF-8),
so a ticket names one read and nothing else."""

from __future__ import annotations

import json
from dataclasses import dataclass

from almanac import _check as check
from almanac.errors import ValidationError

__all__ = ["TabletTicket"]

_FIELDS = ("table_id", "tablet_id", "version")


@dataclass(frozen=True, slots=True)
class TabletTicket:
    """A read of tablet ``tablet_id`` of table ``table_id`` as of catalog ``version``."""

    table_id: int
    tablet_id: int
    version: int

    def __post_init__(self) -> None:
        for name in _FIELDS:
            check.integer(getattr(self, name), f"Field '{name}' of a tablet ticket", lo=0)

    def encode(self) -> bytes:
        record = {name: getattr(self, name) for name in _FIELDS}
        return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> TabletTicket:
        """The ticket in ``data``; ``ValidationError`` saying what is wrong
        with anything else."""
        try:
            record = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            record = None
        if not isinstance(record, dict) or sorted(record) != list(_FIELDS):
            raise ValidationError(
                f"A tablet ticket is the JSON object {{{', '.join(map(repr, _FIELDS))}}} "
                f"of integers, got {bytes(data)[:120]!r}",
                rule="tablet-ticket",
            )
        return TabletTicket(record["table_id"], record["tablet_id"], record["version"])
