"""Per-request timing, checked against hand-computed values for each definition in docs/metrics.md."""

from __future__ import annotations

import pytest

from rigbench.analysis import request_timing
from rigbench.analysis._timing import chunk_token_counts
from rigbench.client import StreamResult

MS = 1_000_000  # ns


def _res(stamps_ms: list[float], chars: list[int], *, tokens: int | None, kinds: str | None = None,
         first_event_ms: float | None = None, first_content_ms: float | None = None) -> StreamResult:
    return StreamResult(
        sent_ns=1_000 * MS,
        first_event_ns=None if first_event_ms is None else 1_000 * MS + int(first_event_ms * MS),
        first_content_ns=None if first_content_ms is None else 1_000 * MS + int(first_content_ms * MS),
        done_ns=1_000 * MS + int((stamps_ms[-1] + 1) * MS),
        chunk_ns=[1_000 * MS + int(t * MS) for t in stamps_ms],
        chunk_chars=chars,
        chunk_kind=kinds or "c" * len(stamps_ms),
        usage=None if tokens is None else {"prompt_tokens": 5, "completion_tokens": tokens},
        http_status=200,
    )


def test_one_token_per_chunk() -> None:
    t = request_timing(_res([100, 110, 130, 160], [4, 4, 4, 4], tokens=4, first_event_ms=20))
    assert t.ttft_s == pytest.approx(0.100)
    assert t.first_event_s == pytest.approx(0.020)  # role-only event is not TTFT
    assert t.itl_s == pytest.approx([0.010, 0.020, 0.030])
    assert t.decode_tok_s == pytest.approx(3 / 0.060)
    assert t.e2e_tok_s == pytest.approx(4 / 0.160)
    assert t.itl_mean_s == pytest.approx(1 / t.decode_tok_s)
    assert not t.multi_token_chunks and t.ttft_not_comparable is None
    assert t.chunk_tokens_source == "one_each"


def test_multi_token_chunks_split_over_their_tokens_and_ttft_withheld() -> None:
    # 3 chunks of 2, 3, 1 tokens (4 chars per token); usage says 6 tokens.
    t = request_timing(_res([100, 130, 190], [8, 12, 4], tokens=6))
    assert t.ttft_s is None
    assert t.ttft_not_comparable and "2.00 tokens" in t.ttft_not_comparable
    assert t.first_chunk_s == pytest.approx(0.100)
    assert t.itl_s == pytest.approx([0.010, 0.010, 0.010, 0.060])
    assert t.decode_tok_s == pytest.approx((6 - 2) / 0.090)
    assert t.tokens_per_chunk == pytest.approx(2.0)
    assert t.tokens_per_chunk_max == 3
    assert t.chunk_tokens_source == "by_chars"


def test_exact_chunk_tokens_override_the_char_estimate() -> None:
    r = _res([100, 130, 190], [8, 12, 4], tokens=6)
    t = request_timing(r, chunk_tokens=[1, 4, 1])
    assert t.itl_s == pytest.approx([0.0075] * 4 + [0.060])
    assert t.chunk_tokens_source == "exact"
    with pytest.raises(ValueError):
        request_timing(r, chunk_tokens=[1, 1])


def test_coalesced_read_is_one_arrival_not_a_zero_gap() -> None:
    t = request_timing(_res([100, 120, 120, 150], [4, 4, 4, 4], tokens=4))
    assert 0.0 not in t.itl_s
    assert t.coalesced_chunks == 1 and t.arrivals == 3
    assert t.itl_s == pytest.approx([0.010, 0.010, 0.030])
    assert t.ttft_s == pytest.approx(0.100)  # coalescing does not make TTFT incomparable


def test_ttft_content_after_reasoning() -> None:
    t = request_timing(_res([50, 60, 70], [4, 4, 4], tokens=3, kinds="rrc", first_content_ms=70))
    assert t.ttft_s == pytest.approx(0.050)
    assert t.ttft_content_s == pytest.approx(0.070)


def test_without_usage_tokens_are_counted_chunks() -> None:
    t = request_timing(_res([10, 20], [4, 4], tokens=None))
    assert t.output_tokens == 2 and t.output_tokens_source == "chunks"


def test_no_chunks() -> None:
    r = StreamResult(sent_ns=0, done_ns=5, http_status=500)
    t = request_timing(r)
    assert t.ttft_s is None and t.itl_s == [] and t.chunks == 0 and t.decode_tok_s is None


def test_char_shares_add_up_and_give_each_chunk_at_least_one() -> None:
    r = _res([1, 2, 3, 4], [1, 30, 0, 9], tokens=17)
    counts, src = chunk_token_counts(r, 17)
    assert sum(counts) == 17 and min(counts) >= 1 and src == "by_chars"
    assert counts[1] == max(counts)
