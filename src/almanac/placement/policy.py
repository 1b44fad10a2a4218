"""Which servers may host a table's tablets: the zone's node filter (an
Ignite-style JSONPath over a server's attributes) and storage profile.

Supported filters: ``$..*`` (every server) and ``$[?(<expr>)]`` where
``<expr>`` joins comparisons ``@.key == "value"`` / ``!=`` (also
``@['key']`` and single quotes) with ``&&`` and ``||`` (``&&`` binds
tighter, no parentheses). Anything else is a ``NodeFilterError`` naming the
filter, so a zone with a filter we cannot read places nothing rather than
placing everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from almanac.errors import ValidationError
from almanac.placement.model import ServerInfo

__all__ = ["NodeFilterError", "eligible", "node_filter"]

Predicate = Callable[[Mapping[str, str]], bool]

_TERM = re.compile(
    r"""\s*@(?:\.(?P<dot>[A-Za-z_][A-Za-z0-9_\-]*)|\[\s*(?P<q1>['"])(?P<bracket>.*?)(?P=q1)\s*\])"""
    r"""\s*(?P<op>==|!=)\s*(?P<q2>['"])(?P<value>.*?)(?P=q2)\s*"""
)


class NodeFilterError(ValidationError):
    """A zone's node filter is not one placement can evaluate."""


def _unsupported(text: str, why: str) -> NodeFilterError:
    return NodeFilterError(
        f"Node filter {text!r} is not supported ({why}): use '$..*' or "
        """'$[?(@.key == "value" && @.other == "x" || ...)]'""",
        node_filter=text,
        rule="supported node filters",
    )


def _term(text: str, whole: str) -> Predicate:
    found = _TERM.fullmatch(text)
    if found is None:
        raise _unsupported(whole, f"cannot read {text.strip()!r}")
    key = found["dot"] if found["dot"] is not None else found["bracket"]
    value, equal = found["value"], found["op"] == "=="
    return lambda attrs: (attrs.get(key) == value) == equal


def node_filter(text: str) -> Predicate:
    """The predicate over server attributes that ``text`` means."""
    stripped = text.strip()
    if stripped == "$..*":
        return lambda attrs: True
    body = re.fullmatch(r"\$\[\?\((.*)\)\]", stripped, flags=re.DOTALL)
    if body is None:
        raise _unsupported(text, "not '$..*' nor '$[?(...)]'")
    alternatives = [
        [_term(part, text) for part in alternative.split("&&")]
        for alternative in body[1].split("||")
    ]
    return lambda attrs: any(all(term(attrs) for term in terms) for terms in alternatives)


def eligible(server: ServerInfo, matches: Predicate, storage_profile: str) -> bool:
    """A server without declared profiles takes any profile."""
    profiles = server.storage_profiles
    return matches(dict(server.attributes)) and (not profiles or storage_profile in profiles)
