"""Reading a Server-Sent Events stream (the WHATWG ``text/event-stream`` rules).

The remote client follows the server's event stream with it. Kept apart from
the HTTP code so that the rules (multi-line data, comments, the last event id
that persists across messages, what is never dispatched) are one pure
function, tested without a socket.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["SseMessage", "parse_sse"]


@dataclass(frozen=True, slots=True)
class SseMessage:
    """One dispatched message. ``id`` is the stream's last event id when it was
    dispatched (ids persist until a later ``id:`` line changes them);
    ``retry_ms`` is the reconnection time the stream asked for last."""

    event: str
    data: str
    id: str | None
    retry_ms: int | None


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
