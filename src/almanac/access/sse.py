"""The Server-Sent Events wire format (the WHATWG ``text/event-stream`` rules):
``format_sse`` writes one message, ``parse_sse`` reads a stream.

The server writes its event stream with one and the remote client reads it
with the other. Kept apart from
the HTTP code so that the rules (multi-line data, comments, the last event id
that persists across messages, what is never dispatched) are one pure
function, tested without a socket.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["SseMessage", "format_sse", "parse_sse"]


@dataclass(frozen=True, slots=True)
class SseMessage:
    """One dispatched message. ``id`` is the stream's last event id when it was
    dispatched (ids persist until a later ``id:`` line changes them);
    ``retry_ms`` is the reconnection time the stream asked for last."""

    event: str
    data: str
    id: str | None
    retry_ms: int | None


def format_sse(data: str, *, id: str | None = None, event: str | None = None) -> str:
    """One message: a ``data:`` line per line of ``data``, ended by a blank line."""
    head = (f"event: {event}\n" if event else "") + (f"id: {id}\n" if id is not None else "")
    return head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"


def parse_sse(lines: Iterable[str]) -> Iterator[SseMessage]:
    """The messages of a stream given as lines without their line breaks.

    A message is dispatched at a blank line; one without any ``data:`` line is
    not (its ``id:`` still counts). A final message that no blank line ends is
    not dispatched either: the stream broke before it was complete.
    """
    last_id: str | None = None
    retry_ms: int | None = None
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield SseMessage(event or "message", "\n".join(data), last_id, retry_ms)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue  # a comment (servers send them to keep connections open)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id":
            if "\x00" not in value:
                last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry_ms = int(value)
