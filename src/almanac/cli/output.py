"""How the ``almanac`` command shows what it did: rich tables and progress
on a terminal, plain aligned text or JSON when piped, so that scripts read
stable text and people get colour."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from almanac.sql.results import Cell

__all__ = ["Output", "cell_text", "plain_table", "progress"]


def cell_text(value: Cell) -> str:
    """One cell as text, the same on a terminal and in a pipe."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """Rows under a header, columns left-aligned and two spaces apart; no
    trailing blanks, so a script may split a line on runs of spaces."""
    texts = [list(columns), *([cell_text(c) for c in row] for row in rows)]
    widths = [max(len(line[i]) for line in texts) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in texts
    )


def _is_number(value: Cell) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Output:
    """Where results go: ``as_json`` for scripts; ``rich`` when stdout is a terminal."""

    as_json: bool = False
    rich: bool = False

    @classmethod
    def for_stdout(cls, as_json: bool) -> Output:
        return cls(as_json=as_json, rich=not as_json and sys.stdout.isatty())

    def line(self, text: str) -> None:
        print(text, flush=True)

    def record(self, value: object) -> None:
        """One JSON document on one line (a stream of them stays parseable)."""
        print(json.dumps(value, ensure_ascii=False, separators=(",", ":")), flush=True)

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Cell]],
        styles: Sequence[str | None] | None = None,
    ) -> None:
        """Rows under a header; on a terminal row ``i`` takes the rich style
        ``styles[i]`` (a colour, which ``NO_COLOR`` turns off)."""
        if not self.rich:
            self.line(plain_table(columns, rows))
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(header_style="bold")
        for i, name in enumerate(columns):
            numbers = all(_is_number(row[i]) for row in rows if row[i] is not None)
            table.add_column(name, justify="right" if rows and numbers else "left")
        for i, row in enumerate(rows):
            table.add_row(*(cell_text(c) for c in row), style=styles[i] if styles else None)
        Console().print(table)


@contextlib.contextmanager
def progress(what: str) -> Iterator[None]:
    """A spinner with the elapsed time on stderr while ``what`` runs, only
    when stderr is a terminal; silent in a pipe or a log file. The library
    reports no counts for this work, so it shows time, not a fraction."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        bar.add_task(what, total=None)
        yield
