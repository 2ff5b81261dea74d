"""Per-request timing, checked against hand-computed values for each definition in docs/metrics.md."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.analysis import analyze_run, request_timing, summarize_speed
from rigbench.analysis._timing import chunk_token_counts
from rigbench.records import StreamResult
from rigbench.report import render_json, render_markdown
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from rigbench.testing._script import Fault

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


def test_mean_itl_is_decode_time_over_tokens_after_the_first_arrival() -> None:
    # 5 tokens in 4 arrivals (the 2nd carries 2): decode time 60 ms over 4 tokens = 15 ms, not the
    # mean of the 3 arrival gaps (20 ms) nor the median per-token gap (12.5 ms).
    t = request_timing(_res([100, 110, 130, 160], [4, 8, 4, 4], tokens=5))
    assert t.itl_mean_s == pytest.approx(0.060 / 4)
    assert t.itl_mean_s == pytest.approx(1 / t.decode_tok_s)
    assert t.itl_s == pytest.approx([0.005, 0.005, 0.020, 0.030])


def test_headline_itl_is_the_per_request_mean_against_emulator_truth(tmp_path: Path) -> None:
    """A stall in every request (150 ms after token 10, 4 ms per token otherwise) is where the two
    views part: the pooled per-gap median stays at 4 ms while each request's true mean ITL is
    (63 × 4 + 150) / 63 ≈ 6.4 ms. The report's headline must be the latter, labelled so."""
    script = EmulatorScript(ttft=Delay(mean_ms=20), itl=Delay(mean_ms=4),
                            faults=[Fault(kind="stall", at_token=10, stall_ms=150)])
    with EmulatorProcess(script) as emu:
        res = subprocess.run(
            [sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, "--suite", "speed",
             "--scenarios", "chat_short", "--repetitions", "4", "--warmup", "0", "--no-sanity",
             "--allow-untrusted", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        truth = [t for t in emu.fetch_truth() if t.stream]
    true_means = [(t.chunk_ns[-1] - t.chunk_ns[0]) / 1e9 / (t.output_tokens - t.chunk_tokens[0]) for t in truth]
    assert len(true_means) == 4 and min(true_means) > 0.006  # the stall is in every request
    run_dir = next(tmp_path.iterdir())
    row = summarize_speed(RunReader(run_dir)).rows[0]  # type: ignore[union-attr]
    assert row.itl_mean_s is not None and row.itl_gaps_s is not None and row.e2e_latency_s is not None
    assert row.itl_mean_s.n == 4
    assert row.itl_mean_s.median == pytest.approx(statistics.median(true_means), abs=0.0005)
    # The old headline (median of pooled per-token gaps) would be off by a third:
    assert row.itl_gaps_s.median < 0.8 * statistics.median(true_means)
    # one per token after each request's first arrival (a loaded machine may read the first two
    # chunks together: that request then has one gap fewer)
    assert 0 <= sum(t.output_tokens - t.chunk_tokens[0] for t in truth) - row.itl_gaps_s.n <= len(truth)
    # and the report says which figure is which, with percentiles and n
    analysis = analyze_run(RunReader(run_dir))
    js = json.loads(render_json(analysis))["speed"]["rows"][0]
    assert js["itl_mean_s"]["n"] == 4 and js["itl_mean_s"]["p99"] >= js["itl_mean_s"]["p90"] >= js["itl_mean_s"]["median"]
    assert {"p90", "p99", "n"} <= set(js["ttft_s"]) and {"p90", "p99", "n"} <= set(js["e2e_latency_s"])
    md = render_markdown(analysis)
    assert "ITL ms, per-request mean" in md
    # the speed table's row (median ± std), not the answer's that opens the report with the same scenario
    speed_row = next(line for line in md.splitlines() if line.startswith("| chat_short |") and "±" in line)
    assert f"{row.itl_mean_s.median * 1e3:.1f}±" in speed_row
    assert "| p50 ms | p90 ms | p99 ms |" in md and "| ITL per token (pooled) |" in md
