"""The metastore's value types and argument checks, shared by every backend."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Literal, TypeAlias

from almanac.errors import InvalidArgumentError

# --------------------------------------------------------------------------- validation


def _invalid(message: str, **context: Any) -> InvalidArgumentError:
    return InvalidArgumentError(message, **context)


def _check_text(value: object, what: str, *, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise _invalid(f"{what} must be a str, not {type(value).__name__}", **{what: value})
    if not value and not allow_empty:
        raise _invalid(f"{what} must not be empty", **{what: value})
    try:
        # Backends order keys by their UTF-8 bytes; lone surrogates have none.
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _invalid(f"{what} {value!r} is not valid unicode", **{what: value}) from exc
    return value


def check_key(key: object) -> str:
    return _check_text(key, "key", allow_empty=False)


def check_prefix(prefix: object) -> str:
    return _check_text(prefix, "prefix", allow_empty=True)


def check_value(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise _invalid(f"value must be bytes, not {type(value).__name__}", value=value)
    return value


def _check_int(value: object, what: str, *, minimum: int) -> int:
    # bool is an int subclass; True as a revision is always a bug in the caller.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid(f"{what} must be an int, not {type(value).__name__}", **{what: value})
    if value < minimum:
        raise _invalid(f"{what} must be >= {minimum}, got {value}", **{what: value})
    return value


def check_revision(revision: object, what: str = "revision") -> int:
    return _check_int(revision, what, minimum=0)


def check_lease_id(lease_id: object) -> int:
    return _check_int(lease_id, "lease_id", minimum=0)


def check_limit(limit: object) -> int | None:
    return None if limit is None else _check_int(limit, "limit", minimum=1)


def check_ttl(ttl: object) -> float:
    if not isinstance(ttl, int | float) or isinstance(ttl, bool):
        raise _invalid(f"ttl must be a number of seconds, not {type(ttl).__name__}", ttl=ttl)
    if not math.isfinite(ttl) or ttl <= 0:
        raise _invalid(f"ttl must be a positive finite number of seconds, got {ttl}", ttl=ttl)
    return float(ttl)


def check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise _invalid(f"timeout must be a number, not {type(timeout).__name__}", timeout=timeout)
    if math.isnan(timeout) or timeout < 0:
        raise _invalid(f"timeout must be >= 0, got {timeout}", timeout=timeout)
    return float(timeout)


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``.

    ``None`` means "no upper bound" (empty prefix, or only 0xFF bytes).
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key as stored at some revision.

    ``version`` counts the writes since the key was (re)created, so a delete
    followed by a put starts again at 1 with a new ``create_revision``.
    ``lease`` is 0 when the key is not attached to a lease.
    """

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


class CompareTarget(Enum):
    VALUE = "value"
    MOD_REVISION = "mod_revision"
    CREATE_REVISION = "create_revision"
    VERSION = "version"


CompareOp: TypeAlias = Literal["==", "!=", "<", ">"]

_COMPARE_OPS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}


@dataclass(frozen=True, slots=True)
class Compare:
    """A condition of a transaction: ``<target of key> <op> <operand>``.

    The last field is ``operand`` rather than ``value`` only because
    ``Compare.value(...)`` is the convenience constructor; positional
    construction ``Compare(key, target, op, operand)`` reads the same.
    Operands are ``bytes`` for VALUE (compared lexicographically, as etcd
    does) and non-negative ``int`` for the revision and version targets.
    """

    key: str
    target: CompareTarget
    op: CompareOp
    operand: bytes | int

    def __post_init__(self) -> None:
        check_key(self.key)
        if not isinstance(self.target, CompareTarget):
            raise _invalid(f"compare target must be a CompareTarget, not {self.target!r}")
        if self.op not in _COMPARE_OPS:
            raise _invalid(
                f"compare op must be one of {sorted(_COMPARE_OPS)}, not {self.op!r}", op=self.op
            )
        if self.target is CompareTarget.VALUE:
            check_value(self.operand)
        else:
            _check_int(self.operand, "operand", minimum=0)

    @classmethod
    def value(cls, key: str, op: CompareOp, value: bytes) -> Compare:
        return cls(key, CompareTarget.VALUE, op, value)

    @classmethod
    def mod_revision(cls, key: str, op: CompareOp, revision: int) -> Compare:
        return cls(key, CompareTarget.MOD_REVISION, op, revision)

    @classmethod
    def create_revision(cls, key: str, op: CompareOp, revision: int) -> Compare:
        return cls(key, CompareTarget.CREATE_REVISION, op, revision)

    @classmethod
    def version(cls, key: str, op: CompareOp, version: int) -> Compare:
        return cls(key, CompareTarget.VERSION, op, version)

    @classmethod
    def absent(cls, key: str) -> Compare:
        return cls(key, CompareTarget.CREATE_REVISION, "==", 0)

    @classmethod
    def exists(cls, key: str) -> Compare:
        return cls(key, CompareTarget.CREATE_REVISION, ">", 0)

    def holds(self, kv: KeyValue | None) -> bool:
        """Evaluate against the key's current state (``None`` when absent)."""
        actual: bytes | int
        if self.target is CompareTarget.VALUE:
            if kv is None:
                # etcd: an absent key has no value to compare, even with "!=".
                return False
            actual = kv.value
        elif self.target is CompareTarget.MOD_REVISION:
            actual = kv.mod_revision if kv else 0
        elif self.target is CompareTarget.CREATE_REVISION:
            actual = kv.create_revision if kv else 0
        else:
            actual = kv.version if kv else 0
        return _COMPARE_OPS[self.op](actual, self.operand)


@dataclass(frozen=True, slots=True)
class Put:
    """Write ``value`` under ``key``; a non-zero ``lease`` must be alive."""

    key: str
    value: bytes
    lease: int = 0

    def __post_init__(self) -> None:
        check_key(self.key)
        check_value(self.value)
        check_lease_id(self.lease)


@dataclass(frozen=True, slots=True)
class Delete:
    key: str

    def __post_init__(self) -> None:
        check_key(self.key)


@dataclass(frozen=True, slots=True)
class DeleteRange:
    """Delete every key starting with ``prefix`` (all keys when it is empty)."""

    prefix: str

    def __post_init__(self) -> None:
        check_prefix(self.prefix)


@dataclass(frozen=True, slots=True)
class Get:
    key: str

    def __post_init__(self) -> None:
        check_key(self.key)


@dataclass(frozen=True, slots=True)
class Range:
    prefix: str
    limit: int | None = None

    def __post_init__(self) -> None:
        check_prefix(self.prefix)
        check_limit(self.limit)


Op: TypeAlias = Put | Delete | DeleteRange | Get | Range


@dataclass(frozen=True, slots=True)
class PutResponse:
    prev_kv: KeyValue | None


@dataclass(frozen=True, slots=True)
class DeleteResponse:
    deleted: int
    prev_kvs: tuple[KeyValue, ...]


@dataclass(frozen=True, slots=True)
class GetResponse:
    kv: KeyValue | None


@dataclass(frozen=True, slots=True)
class RangeResult:
    """Keys sorted by key, and the revision whose state they show.

    ``more`` is true when ``limit`` cut the result short.
    """

    kvs: tuple[KeyValue, ...]
    revision: int
    more: bool = False


Response: TypeAlias = PutResponse | DeleteResponse | GetResponse | RangeResult


@dataclass(frozen=True, slots=True)
class TxnResult:
    """``revision`` is the new revision if the txn wrote, else the current one.

    ``responses`` has one entry per op of the branch that ran.
    """

    succeeded: bool
    revision: int
    responses: tuple[Response, ...]


class WatchEventKind(Enum):
    PUT = "put"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change. ``kv.mod_revision`` is the revision of the change.

    For a DELETE, ``kv`` is a tombstone (empty value, create revision and
    version 0, as etcd reports it) and ``prev_kv`` the deleted key.
    """

    type: WatchEventKind
    kv: KeyValue
    prev_kv: KeyValue | None = None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision


def _tombstone(prev: KeyValue, revision: int) -> WatchEvent:
    return WatchEvent(WatchEventKind.DELETE, KeyValue(prev.key, b"", 0, revision, 0, 0), prev)
