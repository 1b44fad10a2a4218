"""Runs the README's Python blocks top to bottom as one story, the way a
reader pastes them into one interpreter in a fresh directory: one namespace,
each block relying on what the earlier ones made.

``python -m tests.docs.readme_story README`` runs in the current directory
and exits 1 naming the first block that raised, by its README line and its
first line. A block marked ``<!-- not run: why -->`` on the line before its
fence is skipped, and only such a block.

A line that is an expression followed by a comment holding a Python literal
(``r.version, r.applied  # (4, (True, False))``) states its result: the
runner checks the value equals it, so a number the README shows stays true.

One liberty, as for the command lines: the blocks that reach
``http://127.0.0.1:8181`` reach an ``almanac serve --store ./data
--tokens-file tokens`` this runner starts, as the README says, on a free
port instead of 8181, once the story's catalog exists."""

from __future__ import annotations

import ast
import io
import re
import signal
import subprocess
import sys
import threading
import tokenize
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from almanac import Catalog
from tests.cli.support import start
from tests.waiting import PATIENCE, wait_for

SERVED_AT = "127.0.0.1:8181"
SERVE = ("serve", "--store", "./data", "--tokens-file", "tokens", "--port", "0")
TOKENS = "admin ADMIN-TOKEN\n"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", flags=re.DOTALL | re.MULTILINE)
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->")


@dataclass(frozen=True)
class Block:
    """A fenced block: its language, its code, the README line of its first
    code line, and why it is not run (``None``: it runs)."""

    language: str
    code: str
    line: int
    not_run: str | None

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0] if self.code else ""


def blocks(text: str) -> list[Block]:
    """Every fenced block of ``text``, in order."""
    found = []
    for match in _FENCE.finditer(text):
        fence_line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _NOT_RUN.fullmatch(before.strip())
        found.append(
            Block(
                language=match.group(1),
                code=match.group(2),
                line=fence_line + 1,
                not_run=marker.group(1) if marker else None,
            )
        )
    return found


class _Served:
    """``almanac serve`` as the README starts it, on a free port."""

    def __init__(self) -> None:
        Path("tokens").write_text(TOKENS)
        self.proc = start(*SERVE, cwd=Path.cwd())
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        wait_for(lambda: bool(self._address()) or self.proc.poll() is not None, "`almanac serve`")
        address = self._address()
        if not address:
            stderr = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"`almanac serve` did not start: {self.lines} {stderr}")
        self.address = address

    def _address(self) -> str:
        for line in list(self.lines):
            found = re.fullmatch(r"Listening on http://(127\.0\.0\.1:\d+)", line.strip())
            if found:
                return found.group(1)
        return ""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_STATES = "__readme_states__"


def _states(value: Any, stated: Any, line: int) -> None:
    if value != stated:
        raise AssertionError(f"line {line} states {stated!r}, but the value is {value!r}")


def _stated(comment: str) -> ast.expr | None:
    """The literal a comment states, if it is one."""
    try:
        node = ast.parse(comment.removeprefix("#").strip(), mode="eval").body
        ast.literal_eval(node)
    except (SyntaxError, ValueError):
        return None
    return node


def _with_stated_results(source: str, filename: str) -> ast.Module:
    """``source`` with every ``EXPR  # LITERAL`` line made a check that
    ``EXPR`` equals ``LITERAL`` (``EXPR`` evaluated once)."""
    comments = {
        token.start[0]: token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    tree = ast.parse(source, filename)

    class Check(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.Expr:
            comment = comments.get(node.end_lineno or node.lineno)
            stated = _stated(comment) if comment is not None else None
            if stated is None:
                return node
            line = ast.Constant(node.lineno)
            call = ast.Call(ast.Name(_STATES, ast.Load()), [node.value, stated, line], [])
            return ast.copy_location(ast.Expr(ast.copy_location(call, node)), node)

    checked = ast.fix_missing_locations(Check().visit(tree))
    assert isinstance(checked, ast.Module)
    return checked


def _close_catalogs(namespace: dict[str, object]) -> None:
    for value in namespace.values():
        if isinstance(value, Catalog):
            value.close()


def run(readme: Path) -> int:
    """Run every runnable Python block of ``readme`` here; 0, or 1 after
    naming the block that raised."""
    namespace: dict[str, object] = {"__name__": "__readme__", _STATES: _states}
    served: _Served | None = None
    try:
        for block in blocks(readme.read_text()):
            if block.language != "python" or block.not_run is not None:
                continue
            code = block.code
            if SERVED_AT in code:
                served = served or _Served()
                code = code.replace(SERVED_AT, served.address)
            # Padded so that a traceback names the README's own line numbers.
            source = "\n" * (block.line - 1) + code
            try:
                exec(
                    compile(_with_stated_results(source, str(readme)), str(readme), "exec"),
                    namespace,
                )
            except BaseException:
                print(
                    f"{readme.name} line {block.line}: the block starting "
                    f"{block.first_line!r} raised:\n{traceback.format_exc()}",
                    file=sys.stderr,
                )
                return 1
            print(f"ran {readme.name} line {block.line}: {block.first_line}", flush=True)
        return 0
    finally:
        _close_catalogs(namespace)
        if served is not None:
            served.stop()


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
