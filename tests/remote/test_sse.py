"""The event-stream reader against the WHATWG rules, and a round trip of
any messages the server's writer makes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from almanac.access.sse import SseMessage, format_sse, parse_sse


def _lines(text: str) -> list[str]:
    return text.split("\n")


def test_fields_comments_and_multiline_data() -> None:
    text = ': keep-alive\nid: 7\nevent: version\ndata: {"a":\ndata:1}\nretry: 250\n\n'
    assert list(parse_sse(_lines(text))) == [SseMessage("version", '{"a":\n1}', "7", 250)]


def test_the_last_id_persists_and_messages_without_data_are_not_dispatched() -> None:
    text = "id: 3\n\ndata: x\n\nid: 4\ndata: y\n\n"
    assert list(parse_sse(_lines(text))) == [
        SseMessage("message", "x", "3", None),
        SseMessage("message", "y", "4", None),
    ]


def test_an_unfinished_message_is_not_dispatched() -> None:
    assert list(parse_sse(_lines("id: 1\ndata: whole\n\nid: 2\ndata: cut"))) == [
        SseMessage("message", "whole", "1", None)
    ]


def test_odd_lines_follow_the_rules() -> None:
    # no space after the colon, a field without a colon, an unknown field,
    # an id holding NUL (ignored), a retry that is not a number (ignored)
    text = "data:a\ndata\nfoo: bar\nid: x\x00y\nretry: 1.5\n\n"
    assert list(parse_sse(_lines(text))) == [SseMessage("message", "a\n", None, None)]


_text = st.text(st.characters(blacklist_characters="\r\n\x00", codec="utf-8"), max_size=20)


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8),
            st.lists(_text, min_size=1, max_size=3),
            st.integers(0, 10**6).map(str),
        ),
        max_size=6,
    )
)
def test_what_a_server_writes_is_what_is_read(
    messages: list[tuple[str, list[str], str]],
) -> None:
    wire = "".join(
        format_sse("\n".join(data), id=mid, event=event) for event, data, mid in messages
    )
    assert list(parse_sse(_lines(wire))) == [
        SseMessage(event, "\n".join(data), mid, None) for event, data, mid in messages
    ]
