"""The checks on measured traffic (honesty/_traffic.py), each against the rogue it stops and against
the honest persona, plus the thresholds at their edges."""

from __future__ import annotations

import asyncio

from rigbench.client import ChatClient
from rigbench.honesty import check_traffic
from rigbench.records import StreamResult, TrafficCheck
from rigbench.testing import Emulator, EmulatorScript
from rigbench.testing._script import Delay

PROMPTS = [f"[request {i:08x}] Write a short story about the harbor. " + "river " * (20 + i) for i in range(4)]


async def _traffic(persona: str, *, itl_ms: float = 4.0, usage: str = "final_chunk") -> TrafficCheck:
    script = EmulatorScript(persona=persona, ttft=Delay(mean_ms=2.0), itl=Delay(mean_ms=itl_ms),  # type: ignore[arg-type]
                            usage=usage)  # type: ignore[arg-type]
    async with Emulator(script) as emu, ChatClient(emu.url) as client:
        res = [await client.stream_chat({"model": "m", "messages": [{"role": "user", "content": p}],
                                         "max_tokens": 48, "ignore_eos": True}) for p in PROMPTS]
        return await check_traffic(client, "unknown", [(f"speed/x/i{i}", r) for i, r in enumerate(res)])


def test_an_honest_server_passes_every_traffic_check() -> None:
    c = asyncio.run(_traffic("healthy"))
    assert c.trusted, c.reasons
    assert (c.outputs, c.duplicate_outputs, c.usage_method, c.usage_inflated) == (4, 0, "tokenize", 0)
    assert c.timings_checked == 4 and c.timings_inconsistent == 0


def test_cached_replies_are_outputs_identical_across_prompts() -> None:
    c = asyncio.run(_traffic("cached"))
    assert c.duplicate_outputs == 3 and "3 of 4 measured outputs are identical" in c.reasons[0]


def test_inflated_usage_is_caught_by_recounting_the_received_text() -> None:
    c = asyncio.run(_traffic("inflated_usage"))
    assert c.usage_inflated == 4 and "usage says 144 output tokens, /tokenize of the received text counts 48" \
        in c.reasons[0]


def test_lying_timings_contradict_the_client_clock() -> None:
    c = asyncio.run(_traffic("lying_timings"))
    assert c.timings_inconsistent == 4 and "timings contradict the client's clock in 4 of 4" in c.reasons[0]


def _result(text: str, *, completion_tokens: int | None = None, predicted_ms: float | None = None,
            span_ms: float = 1000.0, whole_ms: float = 1100.0) -> StreamResult:
    n = max(2, len(text.split()))
    t0 = 100_000_000
    stamps = [t0 + int(span_ms * 1e6 * i / (n - 1)) for i in range(n)]
    return StreamResult(sent_ns=t0 - 50_000_000, done_ns=t0 - 50_000_000 + int(whole_ms * 1e6), chunk_ns=stamps,
                        chunk_chars=[1] * n, chunk_kind="c" * n, content=text, http_status=200,
                        usage={"completion_tokens": completion_tokens} if completion_tokens is not None else None,
                        timings={"predicted_n": n, "predicted_ms": predicted_ms} if predicted_ms is not None else None)


async def _check(results: list[StreamResult]) -> TrafficCheck:
    async with ChatClient("http://127.0.0.1:9/v1") as client:  # nothing listens: no tokenizer answers
        return await check_traffic(client, "unknown", [(f"u{i}", r) for i, r in enumerate(results)])


def test_without_a_tokenizer_usage_is_bounded_by_bytes() -> None:
    text = "a b c d e f g h"  # 15 bytes
    ok = asyncio.run(_check([_result(text, completion_tokens=15 + 8)]))
    bad = asyncio.run(_check([_result(text, completion_tokens=15 + 9)]))
    assert ok.usage_method == "bytes_bound" and ok.trusted
    assert not bad.trusted and "24 output tokens for 15 bytes" in bad.reasons[0]


def test_timing_bounds_at_their_edges() -> None:
    words = " ".join(["w"] * 20)
    fine = [_result(words + str(i), predicted_ms=480.0) for i in range(3)]  # 1000 ms seen <= 2 x 480 + 50
    fast = [_result(words + str(i), predicted_ms=450.0) for i in range(3)]  # 1000 ms seen > 2 x 450 + 50
    slow = [_result(words + str(i), predicted_ms=1200.0) for i in range(3)]  # more than the whole 1100 ms + 50
    assert asyncio.run(_check(fine)).trusted
    assert "the client saw them arrive over 1000 ms" in asyncio.run(_check(fast)).reasons[0]
    assert "the whole request took 1100 ms" in asyncio.run(_check(slow)).reasons[0]
    one_of_three = [fast[0], *fine[1:]]
    assert asyncio.run(_check(one_of_three)).trusted  # a single late request is noise, not a lie


def test_short_or_occasional_identical_outputs_may_coincide() -> None:
    assert asyncio.run(_check([_result("OK."), _result("OK.")])).trusted
    same = "The same long reply here."
    once = asyncio.run(_check([_result(same), _result("the same  long reply here."), _result("Another reply, x."),
                               _result("And a third one, y.")]))
    assert once.duplicate_outputs == 1 and once.trusted  # 1 of 4: a coincidence a small model can produce
    most = asyncio.run(_check([_result(same), _result(same), _result(same), _result("And a third one, y.")]))
    assert most.duplicate_outputs == 2 and not most.trusted


async def _check_sessions(results: list[StreamResult], history: dict[str, list[str]]) -> TrafficCheck:
    async with ChatClient("http://127.0.0.1:9/v1") as client:
        return await check_traffic(client, "unknown", [(f"u{i}", r) for i, r in enumerate(results)], history=history)


def test_a_session_turn_that_repeats_its_own_history_is_not_a_canned_reply_but_one_across_sessions_is() -> None:
    # two sessions of two turns (u0 u1, u2 u3); a small model answers each later turn with the reply it
    # already gave, which is in that turn's prompt (SmolLM2-135M did, live): prompt-dependent, not canned
    history = {"u1": ["u0"], "u3": ["u2"]}
    echo = [_result("First reply of session zero."), _result("First reply of session zero."),
            _result("First reply of session one."), _result("first reply of  session one.")]
    c = asyncio.run(_check_sessions(echo, history))
    assert c.trusted and c.duplicate_outputs == 0, c.reasons
    # the same echoes with no session history to explain them: two of four prompts got another's reply
    assert not asyncio.run(_check(echo)).trusted
    # a canned server answers every session alike: its first turns repeat one another across sessions
    canned = [_result("The one paragraph it always sends.")] * 8
    eight = {f"u{2 * s + 1}": [f"u{2 * s}"] for s in range(4)}
    c = asyncio.run(_check_sessions(canned, eight))
    assert not c.trusted and "3 of 4 measured outputs are identical" in c.reasons[0], c.reasons
    # a later turn that repeats another session's reply (not its own history) still counts
    cross = [_result("Reply A of session zero."), _result("Reply B of session zero."),
             _result("Reply C of session one."), _result("Reply A of session zero.")]
    c = asyncio.run(_check_sessions(cross, history))
    assert c.duplicate_outputs == 1, c
