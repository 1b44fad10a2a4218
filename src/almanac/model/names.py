"""The one rule for names: within its parent (the catalog for schemas and
zones, a schema for tables and indexes, a table for columns) a name is
unique without regard to case, and any spelling of it finds its object.
A name is kept and shown as it was written when the object was made
(after SQL's folding of unquoted names to upper case)."""

from __future__ import annotations

__all__ = ["name_key"]


def name_key(name: str) -> str:
    """The case-free key of a name: the one place names are compared.

    Unicode default caseless matching (``str.casefold``), applied after
    ``str.upper`` (SQL's folding of unquoted names) so that an unquoted SQL
    name always finds what the same text names elsewhere:
    ``name_key(s.upper()) == name_key(s)`` for every string (casefold alone
    misses one letter, the dotless i, U+0131). ASCII-only folding would not
    do: SQL folds ``café`` to ``CAFÉ``. Names are not Unicode-normalised:
    precomposed and decomposed spellings stay different names."""
    return name.upper().casefold()
