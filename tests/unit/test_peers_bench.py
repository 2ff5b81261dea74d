"""benchmarks/peers.py's truth: what each tool should have reported, from the emulator's own stamps
(and the stall proxy's). The figures docs/benchmarks.md publishes against GuideLLM, AIPerf and
`vllm bench serve` stand on these functions, so each is played against the condition it exists for
(a late first send, a stall, a reordered burst, a replay late by a constant) beside a healthy control."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import peers
import peers_read
import peers_truth as pt

from rigbench.testing import RequestTruth

MS = 1_000_000


def _req(i: int, recv_ms: float, first_ms: float, *, tokens: int = 4, itl_ms: float = 10.0, rid: str | None = None,
         prompt: int = 10) -> pt.Req:
    first = int(first_ms * MS)
    last = first + int((tokens - 1) * itl_ms * MS)
    return pt.Req(rid or f"r{i}", int(recv_ms * MS), first, last, last + MS, tokens, prompt,
                  [itl_ms / 1e3] * (tokens - 1), tokens)


def test_the_intended_schedule_is_anchored_at_the_request_closest_to_due_not_the_first() -> None:
    """A tool whose first send was 12 ms late and the rest on time: anchoring at the first receipt
    would shift every due time 12 ms late and shrink every wait; the anchor is the on-time ones."""
    on_time = [1000 * MS + i * 100 * MS for i in range(10)]
    late_first = [on_time[0] + 12 * MS, *on_time[1:]]
    assert pt.intended_constant(late_first, 10.0) == on_time
    assert pt.intended_constant(on_time, 10.0) == on_time  # control: exact


def test_response_ttft_counts_the_wait_of_requests_a_capped_tool_held_back() -> None:
    """10 req/s, every request answered in 30 ms, but requests 3 and 4 left the tool 500 ms late (it
    waited for a slot): from the intended start they waited; from their send they did not."""
    recv = [0, 100, 200, 800, 800, 500 + 500]
    reqs = [_req(i, 1000 + r, 1000 + r + 30) for i, r in enumerate(recv)]
    resp = pt.response_ttft_s(pt.Truth(reqs=reqs), 10.0)
    assert [round(x * 1e3) for x in resp] == [30, 30, 30, 530, 430, 530]
    assert all(round(r.ttft_s * 1e3) == 30 for r in reqs)  # the service time hides it


def test_server_concurrency_counts_overlap_at_the_server() -> None:
    reqs = [_req(0, 0, 10, tokens=10), _req(1, 5, 15, tokens=10), _req(2, 500, 510)]
    assert pt.server_concurrency_max(pt.Truth(reqs=reqs)) == 2
    assert pt.server_concurrency_max(pt.Truth(reqs=[reqs[2]])) == 1
    # a capped tool sends the next request as the last one ends (req 2 ends at 541 ms): one at a time, so
    # a cap of N reads N in the tables, not N + 1
    assert pt.server_concurrency_max(pt.Truth(reqs=[reqs[2], _req(3, 541, 550)])) == 1


class _Emu:
    def __init__(self, rows: list[RequestTruth]) -> None:
        self.rows = rows

    def fetch_truth(self) -> list[RequestTruth]:
        return self.rows


def _truth_row(i: int, recv_ms: float, chunks_ms: list[float], path: str = "/v1/chat/completions") -> RequestTruth:
    return RequestTruth(index=i, response_id=f"id{i}", path=path, stream=True, received_ns=int(recv_ms * MS),
                        chunk_ns=[int(c * MS) for c in chunks_ms], chunk_tokens=[1] * len(chunks_ms),
                        end_ns=int((chunks_ms[-1] + 1) * MS) if chunks_ms else None,
                        prompt_tokens=5, output_tokens=len(chunks_ms))


def test_behind_a_stall_writes_are_delivered_at_its_end_and_receipts_are_the_proxys() -> None:
    """Stall 1000-3000 ms. Request 0 is mid-answer when it starts: its later tokens reach the client
    at 3000. Request 1 reached the proxy at 1500 and the server at 3000: its TTFT runs from 1500.
    A validation probe (fewer tokens) is not a measured request."""
    rows = [_truth_row(0, 900, [930, 960, 1010, 1040]), _truth_row(1, 3000, [3030, 3060, 3090, 3120]),
            _truth_row(2, 3100, [3110])]
    t = pt.emulator_truth(_Emu(rows), min_tokens=4, stall_ns=(1000 * MS, 3000 * MS),
                          arrived_ns=[900 * MS, 1500 * MS, 3100 * MS])
    a, b = t.reqs
    assert (a.first_ns, a.last_ns) == (930 * MS, 3000 * MS)  # the held tokens arrive together at the end
    assert a.gaps_s == pytest.approx([0.03, 2.04, 0.0])
    assert b.received_ns == 1500 * MS and b.ttft_s == pytest.approx(1.53)
    assert t.probes == 1 and t.stall_ns == (1000 * MS, 3000 * MS)
    control = pt.emulator_truth(_Emu(rows), min_tokens=4)
    assert control.reqs[0].last_ns == 1040 * MS and control.reqs[1].ttft_s == pytest.approx(0.03)


def test_receipts_are_left_unpaired_when_the_proxy_and_the_server_counted_differently() -> None:
    rows = [_truth_row(0, 100, [130, 140]), _truth_row(1, 200, [230, 240])]
    t = pt.emulator_truth(_Emu(rows), min_tokens=2, arrived_ns=[50 * MS])
    assert [r.received_ns for r in t.reqs] == [100 * MS, 200 * MS]
    assert "receipts unpaired" in t.notes[0]


def _rep(first_ns: list[int], ids: list[str | None]) -> peers_read.Reported:
    return peers_read.Reported(first_mono_ns=first_ns, ids=ids)


def test_stamp_error_pairs_by_response_id_where_a_tool_kept_it() -> None:
    """Request a's first token (written at 100 ms) stamped 50 ms late, b's (at 120) 5 ms late, so the
    stamps cross: paired by id the worst error is 50 ms; without ids, paired in time order, it reads
    30 (time order can only understate)."""
    truth = pt.Truth(reqs=[_req(0, 0, 100, rid="a"), _req(1, 0, 120, rid="b")])
    stamps = [150 * MS, 125 * MS]
    by_id = peers.stamp_err(_rep(stamps, ["a", "b"]), truth, 0)
    assert (by_id["p99_ms"], by_id["paired"]) == (pytest.approx(49.55), "response id")
    by_time = peers.stamp_err(_rep(stamps, [None, None]), truth, 0)
    assert (by_time["p99_ms"], by_time["paired"]) == (pytest.approx(29.95), "time order")
    wall = peers.stamp_err(peers_read.Reported(first_wall_ns=[7 * MS + s for s in stamps], ids=["a", "b"]), truth, 7 * MS)
    assert wall["p99_ms"] == pytest.approx(49.55)  # a wall-clock stamp is converted with the measured offset


def test_trace_adherence_tells_a_late_first_request_from_a_late_replay() -> None:
    lines = [{"timestamp": t} for t in (0, 100, 200, 300, 400)]
    exact = [int(1e9 + t * MS) for t in (0, 100, 200, 300, 400)]
    assert pt.trace_adherence(exact, lines)["arrival_err_p99_ms"] == 0.0
    first_late = [exact[0] + 40 * MS, *exact[1:]]  # counted from the first, the others look 40 ms early
    f = pt.trace_adherence(first_late, lines)
    assert (f["arrival_err_p50_ms"], f["arrival_offset_ms"]) == (40.0, -40.0)
    all_late = [e + 40 * MS for e in exact]  # a replay late as a whole keeps the trace's spacing
    assert pt.trace_adherence(all_late, lines)["arrival_err_max_ms"] == 0.0
    jitter = [e + (k % 2) * 20 * MS for k, e in enumerate(exact)]
    assert pt.trace_adherence(jitter, lines)["arrival_err_max_ms"] == 20.0


def test_lengths_are_matched_as_multisets() -> None:
    assert pt.lengths_met([21, 39, 14], [39, 14, 21]) == 3  # reordered, all met
    assert pt.lengths_met([21, 21, 14], [39, 14, 21]) == 2


def test_a_missing_figure_misses_its_target() -> None:
    slo = {"ttft_ms": 35.0, "itl_ms": 20.5}
    assert pt.slo_met(0.030, 0.020, 1.0, slo)
    assert not pt.slo_met(0.036, 0.020, 1.0, slo)
    assert not pt.slo_met(0.030, None, 1.0, slo)
    assert pt.slo_met(0.030, None, 1.0, {"ttft_ms": 35.0})  # a target not set is not judged


def test_capacity_is_slots_over_the_service_time_of_requests_that_found_a_slot() -> None:
    """2 slots, 100 ms per request; the 3rd and 4th arrive while both are held and wait: their longer
    residence is queueing, not service, and is left out."""
    reqs = [_req(0, 0, 10, tokens=10), _req(1, 0, 10, tokens=10), _req(2, 1, 101, tokens=10), _req(3, 1, 101, tokens=10)]
    for r in reqs:
        r.end_ns = r.last_ns
    cap = pt.capacity_rps(pt.Truth(reqs=reqs), 2)
    assert cap == pytest.approx(2 / 0.1, rel=0.02)


def test_a_peer_reads_only_its_own_packages() -> None:
    """A peer installed with pip --target gets that folder as its PYTHONPATH, never rigbench's."""
    import peers_tools

    def fake(tool: str) -> Path | None:
        return Path("/tmp/peers/guidellm-0.8.1/bin/guidellm")

    real = peers.peer_bin
    peers.peer_bin = fake
    try:
        env: dict[str, Any] = peers._env("guidellm")
    finally:
        peers.peer_bin = real
    assert env["PYTHONPATH"] == "/tmp/peers/guidellm-0.8.1" and env["HF_HUB_OFFLINE"] == "1"
    assert peers_tools.target_root(Path("/tmp/peers/guidellm-0.8.1/bin/guidellm")) == Path("/tmp/peers/guidellm-0.8.1")


def test_every_rigbench_command_line_of_the_cases_parses() -> None:
    """peers.py builds rigbench's command line per case; an option renamed in the CLI would make that
    case an error row on the quiet host, found only there. Each parses with rigbench's own parser."""
    import peers_tools
    import typer

    from rigbench.cli import app

    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    cases = list(peers_tools.CASES.values())
    assert {c.mode for c in cases} == {"rate", "goodput", "trace", "sessions", "sweep", "streams"}
    for case in cases:
        argv = peers_tools.command("rigbench", case, "http://127.0.0.1:9", "m", Path("/tmp/x"))
        assert isinstance(argv, list) and argv[3] == "run", case.name
        ctx = run.make_context("run", argv[4:])  # a misspelt option raises click's UsageError here
        assert ctx.params["endpoint"] == "http://127.0.0.1:9/v1"
    with pytest.raises(Exception, match="No such option"):  # control: the parser refuses what it does not know
        run.make_context("run", ["--endpoint", "http://h:1/v1", "--sweep-duration", "10"])


def test_figures_that_need_receipts_are_not_made_from_llama_servers_log() -> None:
    """llama-server's log gives each request's durations, no receipts (all at 0) and, with its prompt
    cache, only the tokens it evaluated: a capacity or a session count made from that would be a number
    with nothing behind it. The emulator's truth (control) gives both."""
    import argparse

    import peers_tools

    lines = [(0, "prompt eval time =      30.00 ms /    50 tokens"), (0, "       eval time =     100.00 ms /    10 tokens")]
    llama = pt.llama_truth(lines * 4, min_tokens=2)
    emu = pt.Truth(reqs=[_req(i, 0 if i < 2 else 120, 10 if i < 2 else 130, tokens=10, prompt=5 + 40 * (i % 2))
                         for i in range(4)])
    for r in emu.reqs:
        r.end_ns = r.last_ns
    sweep, sessions = peers_tools.CASES["sweep"], peers_tools.CASES["sessions"]
    rep = peers_read.Reported(ttft_s=[0.03] * 4, saturation_rps=20.0)
    for target, truth, has in (("llama", llama, False), ("emulator", emu, True)):
        args = argparse.Namespace(target=target)
        f = peers._figures("rigbench", sweep, rep, truth, args)
        assert (f["truth_capacity_rps"] is not None) is has, target
        assert ("sessions_seen" in peers._figures("rigbench", sessions, rep, truth, args)) is has, target


def test_sessions_are_counted_by_their_first_turns_whatever_the_tools_words_per_message() -> None:
    """3 sessions of 3 turns, first messages of 42, 50 and 59 words (one tool's 64 tokens as the emulator
    counts them: seen with AIPerf), replies of 12: every first turn is found, no later turn is taken
    for one."""
    import argparse

    import peers_tools

    reqs = []
    for s, first in enumerate((42, 50, 59)):
        hist = 0
        for t in range(3):
            prompt = hist + first if t == 0 else hist + 45
            reqs.append(_req(10 * s + t, 1000 * s + 100 * t, 1000 * s + 100 * t + 30, prompt=prompt))
            hist = prompt + 12
    f = peers._figures("rigbench", peers_tools.CASES["sessions"], peers_read.Reported(), pt.Truth(reqs=reqs),
                       argparse.Namespace(target="emulator"))
    assert (f["sessions_seen"], f["turns_per_session"], f["session_starts_per_s"]) == (3, 3.0, 1.0)
