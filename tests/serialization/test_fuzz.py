"""Fuzzing ``decode``: any input yields an object or a ``SerializationError``.

Inputs are random bytes (bare, or behind a valid header so that they reach
the object readers), truncations, and byte replacements, bit flips,
insertions and deletions in valid encodings of every example. When decoding
succeeds the result must re-encode to exactly the input: the format has one
encoding per value, so a reader that accepts anything else is too lenient.
"""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from almanac.errors import SerializationError
from almanac.serialization import REGISTRY, TYPE_IDS, decode, encode

from . import EXAMPLES, STRATEGIES

CORPUS: list[bytes] = [encode(obj) for _, obj in sorted(EXAMPLES.items())]
_HEADERS = [(1).to_bytes(2, "big") + tid.to_bytes(2, "big") + b"\x01" for tid in TYPE_IDS.values()]
# With one serializer version per type, a re-encoding can only equal the input.
_SINGLE_VERSION = all(len(REGISTRY.serializers(cls)) == 1 for cls in REGISTRY.types())


def check(data: bytes) -> None:
    try:
        obj = decode(data)
    except SerializationError as exc:
        offset = exc.context["offset"]
        assert 0 <= offset <= len(data), exc
        assert str(exc).endswith(f"at byte {offset}")
        return
    again = encode(obj)
    assert encode(decode(again)) == again
    if _SINGLE_VERSION:
        assert again == data


def _mutate(rng: random.Random, valid: bytes) -> bytes:
    data = bytearray(valid)
    op = rng.randrange(6)
    pos = rng.randrange(len(data))
    if op == 0:
        return bytes(data[:pos])
    if op == 1:
        data[pos] ^= 1 << rng.randrange(8)
    elif op == 2:
        data[pos] = rng.randrange(256)
    elif op == 3:
        data.insert(pos, rng.randrange(256))
    elif op == 4:
        del data[pos]
    else:
        for _ in range(rng.randint(2, 8)):
            data[rng.randrange(len(data))] = rng.choice(
                (0x00, 0x7F, 0x80, 0xFF, rng.randrange(256))
            )
    return bytes(data)


@st.composite
def fuzz_inputs(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.binary(max_size=64))
    if kind == 1:
        return draw(st.sampled_from(_HEADERS)) + draw(st.binary(max_size=64))
    if kind == 5:
        # A generated object reaches value shapes the fixed corpus does not.
        obj = draw(st.sampled_from(sorted(STRATEGIES, key=str)).flatmap(STRATEGIES.__getitem__))
        return _mutate(random.Random(draw(st.integers(0, 2**32))), encode(obj))
    valid = draw(st.sampled_from(CORPUS))
    if kind == 2:
        return valid[: draw(st.integers(0, len(valid) - 1))]
    if kind == 3:
        pos = draw(st.integers(0, len(valid) - 1))
        bit = draw(st.integers(0, 7))
        return valid[:pos] + bytes([valid[pos] ^ (1 << bit)]) + valid[pos + 1 :]
    return _mutate(random.Random(draw(st.integers(0, 2**32))), valid)


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(fuzz_inputs())
def test_decode_fuzz(data: bytes) -> None:
    check(data)


@pytest.mark.parametrize("valid", CORPUS[:: max(1, len(CORPUS) // 12)])
def test_every_single_bit_flip(valid: bytes) -> None:
    for pos in range(len(valid)):
        for bit in range(8):
            check(valid[:pos] + bytes([valid[pos] ^ (1 << bit)]) + valid[pos + 1 :])


@pytest.mark.slow
def test_decode_fuzz_long() -> None:
    """300,000 inputs; prints how long they took (``pytest -s``)."""
    rng = random.Random(20240229)
    total = 300_000
    start = time.perf_counter()
    for i in range(total):
        if i % 10 == 0:
            check(rng.choice(_HEADERS) + rng.randbytes(rng.randrange(96)))
        else:
            check(_mutate(rng, rng.choice(CORPUS)))
    elapsed = time.perf_counter() - start
    print(f"\nfuzzed decode with {total:,} inputs in {elapsed:.1f} s")
