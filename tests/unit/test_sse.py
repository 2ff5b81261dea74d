"""SSE framing: events come out whole however the bytes are split."""

from __future__ import annotations

import random

import pytest

from rigbench.client._sse import COMMENT, SSEParser

STREAM = (
    b": keep-alive\n\n"
    b'data: {"a": 1}\n\n'
    b'data: {"b":\r\ndata: 2}\r\n\r\n'
    b"event: message\nid: 7\ndata: x\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [COMMENT, b'{"a": 1}', b'{"b":\n2}', b"x", b"[DONE]"]


def _feed_split(data: bytes, cuts: list[int]) -> list[bytes | object]:
    p = SSEParser()
    out: list[bytes | object] = []
    prev = 0
    for c in [*sorted(cuts), len(data)]:
        out.extend(p.feed(data[prev:c]))
        prev = c
    out.extend(p.flush())
    return out


def test_whole_stream_at_once() -> None:
    assert _feed_split(STREAM, []) == EXPECTED


def test_every_single_byte_split() -> None:
    assert _feed_split(STREAM, list(range(1, len(STREAM)))) == EXPECTED


@pytest.mark.parametrize("seed", range(20))
def test_random_splits(seed: int) -> None:
    rng = random.Random(seed)
    cuts = rng.sample(range(1, len(STREAM)), rng.randint(1, 12))
    assert _feed_split(STREAM, cuts) == EXPECTED


def test_final_event_without_blank_line_counts_at_flush() -> None:
    p = SSEParser()
    assert p.feed(b"data: last") == []
    assert p.flush() == [b"last"]


def test_data_without_space_after_colon() -> None:
    assert SSEParser().feed(b"data:{}\n\n") == [b"{}"]
