"""The reference emulator answers like an OpenAI-compatible server and records what it sent."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable

import pytest

from rigbench.client import ChatClient
from rigbench.rig.engines import LlamaCppAdapter, SGLangAdapter, VLLMAdapter, canonical_values
from rigbench.testing import Delay, Emulator, EmulatorScript

FAST = EmulatorScript(ttft=Delay(mean_ms=1), itl=Delay(mean_ms=0.5), output_tokens=8)
BODY = {"model": "m", "messages": [{"role": "user", "content": "say three words"}]}


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(FAST) as e:
        yield e


async def test_stream_matches_truth_and_usage(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat(BODY)
    assert r.ok and r.finish_reason == "stop"
    t = emu.truth_by_id()[r.response_id or ""]
    assert len(r.chunk_ns) == len(t.chunk_ns) == 8
    assert r.usage == {"prompt_tokens": 3, "completion_tokens": 8, "total_tokens": 11}
    assert r.empty_events == 2  # role-only first event + finish event
    assert r.first_event_ns is not None and r.first_event_ns < r.chunk_ns[0]
    assert all(c >= e for c, e in zip(r.chunk_ns, t.chunk_ns, strict=True))  # no stamp before the send


async def test_non_streaming_chat_and_completions(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        st, obj = await c.post_json("/chat/completions", {**BODY, "max_tokens": 3})
        assert st == 200 and obj["usage"]["completion_tokens"] == 3
        assert obj["choices"][0]["finish_reason"] == "length"
        assert len(obj["choices"][0]["message"]["content"]) == 3 * FAST.token_chars
        r = await c.stream_chat({"model": "m", "prompt": "a b"}, path="/completions")
    assert r.ok and len(r.content) == 8 * FAST.token_chars and r.usage and r.usage["prompt_tokens"] == 2


async def test_models_tokenize_metrics_health(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        st, models = await c.get_json("/models")
        assert st == 200 and models["data"][0]["id"] == FAST.model
        st, tok = await c.post_json(c.server_root + "/tokenize", {"content": "one two three"})
        assert tok["tokens"] == [0, 1, 2]
        st, tok = await c.post_json(c.server_root + "/tokenize", {"prompt": "one two"})
        assert tok["count"] == 2
        await c.stream_chat(BODY)
        st, text = await c.get_text(c.server_root + "/metrics")
        assert 'vllm:generation_tokens_total{model_name="emulated-model"} 8' in text
        # every engine's names, as its adapter scrapes them: each reads the emulator's tokens
        for adapter in (VLLMAdapter(), LlamaCppAdapter(), SGLangAdapter()):
            assert canonical_values(adapter, text)["generation_tokens_total"] == 8.0, adapter.name
        st, h = await c.get_json(c.server_root + "/health")
        assert h == {"status": "ok"}


async def test_reasoning_before_content(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat({**BODY, "x_emulator": {"reasoning_tokens": 3, "output_tokens": 6}})
    assert r.chunk_kind == "rrrccc"
    assert r.reasoning_field == "reasoning_content" and len(r.reasoning) == 3 * 4 and len(r.content) == 3 * 4
    assert r.first_content_ns == r.chunk_ns[3]


async def test_tool_call_split_across_chunks(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat({**BODY, "x_emulator": {"tool_call": True, "output_tokens": 5}})
    assert r.ok and r.finish_reason == "tool_calls" and set(r.chunk_kind) == {"t"}
    (tc,) = r.tool_calls
    assert tc["function"]["name"] == "search" and tc["id"]
    assert json.loads(tc["function"]["arguments"])["q"].split() == ["the", "cat", "sat", "on.", "a.."]


@pytest.mark.parametrize("mode", ["final_chunk", "last_token_chunk", "none"])
async def test_usage_modes(emu: Emulator, mode: str) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat({**BODY, "x_emulator": {"usage": mode}})
    assert r.ok
    assert (r.usage is None) == (mode == "none")


async def test_keepalive_comments_during_ttft(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat({**BODY, "x_emulator": {"ttft": {"mean_ms": 30}, "keepalive_ms": 5}})
    t = emu.truth_by_id()[r.response_id or ""]
    assert r.ok and t.comments >= 3 and r.comment_events == t.comments


async def test_fixed_and_speculative_chunk_sizes(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r3 = await c.stream_chat({**BODY, "x_emulator": {"tokens_per_chunk": 3, "output_tokens": 8}})
        rs = await c.stream_chat({**BODY, "x_emulator": {"spec_depth": 4, "spec_accept": 0.8, "output_tokens": 40}})
    truth = emu.truth_by_id()
    assert truth[r3.response_id or ""].chunk_tokens == [3, 3, 2]
    assert r3.chunk_chars == [12, 12, 8]
    sizes = truth[rs.response_id or ""].chunk_tokens
    assert sum(sizes) == 40 and max(sizes) <= 5 and len(set(sizes)) > 1


def test_speculative_acceptance_distribution() -> None:
    # P(chunk has 1 + k tokens) follows accept^k; the mean of 1 + Geom truncated at depth.
    s = EmulatorScript(spec_depth=3, spec_accept=0.5)
    sizes = s.chunk_sizes(200_000, random.Random(1))
    mean = sum(sizes) / len(sizes)
    assert mean == pytest.approx(1 + 0.5 + 0.25 + 0.125, rel=0.02)


async def test_keep_alive_reuses_connections(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        for _ in range(5):
            assert (await c.stream_chat(BODY)).ok
    assert emu.connections_total == 1


def test_delay_distributions_have_their_means() -> None:
    rng = random.Random(0)
    for dist in ("uniform", "normal", "exponential", "lognormal"):
        d = Delay(dist=dist, mean_ms=10, jitter_ms=3)  # type: ignore[arg-type]
        xs = [d.draw_s(rng) for _ in range(20_000)]
        assert sum(xs) / len(xs) == pytest.approx(0.010, rel=0.03), dist



async def test_slots_cap_the_requests_generating_at_once_and_queue_the_rest_in_order() -> None:
    """A server's capacity (`slots`): with 2 slots, 6 requests at once generate two at a time, each waiting
    for a slot in arrival order; a request whose client left while it waited never takes one. Control: no
    limit, more than two overlap."""
    import asyncio

    def overlap(truth: list) -> int:  # most requests generating at once, from the true first and last writes
        events = sorted([(t.chunk_ns[0], 1) for t in truth] + [(t.end_ns, -1) for t in truth])
        most = now = 0
        for _, d in events:
            now += d
            most = max(most, now)
        return most

    script = FAST.model_copy(update={"ttft": Delay(mean_ms=150), "itl": Delay(mean_ms=2)})
    for slots in (2, None):
        async with Emulator(script.model_copy(update={"slots": slots})) as e, ChatClient(e.url) as c:
            results = await asyncio.gather(*(c.stream_chat(BODY) for _ in range(6)))
            assert all(r.ok for r in results)
            # capped: never more than 2 at once; the control overlaps more (all 6 unless a busy host
            # staggered the sends by over a request's 166 ms)
            assert overlap(e.truth) == 2 if slots else overlap(e.truth) > 2, slots
            if slots:
                # served in arrival order: each waited for the one two places ahead of it to end
                ordered = sorted(e.truth, key=lambda t: t.received_ns)
                for ahead, later in zip(ordered, ordered[2:], strict=False):
                    assert later.chunk_ns[0] - ahead.end_ns >= 140e6  # its own TTFT (150 ms) began at that end
                assert e.generating == 0 and not e._waiting
    # a client that gives up while queued frees nothing it never held, and the next in line goes on
    async with Emulator(script.model_copy(update={"slots": 1})) as e, ChatClient(e.url) as c:
        async def until(cond: Callable[[], bool]) -> None:  # the server's own state, not a guess of its timing
            for _ in range(2000):
                if cond():
                    return
                await asyncio.sleep(0.001)
            raise AssertionError("the emulator never got there")

        first = asyncio.create_task(c.stream_chat(BODY))
        await until(lambda: e.generating == 1)
        async with ChatClient(e.url) as quitter:
            waiting = asyncio.create_task(quitter.stream_chat(BODY))
            await until(lambda: len(e._waiting) == 1)
            waiting.cancel()
        assert (await asyncio.wait_for(first, 5)).ok
        after = await asyncio.wait_for(c.stream_chat(BODY), 5)  # hangs if the quitter kept the slot
        assert after.ok and e.generating == 0 and not e._waiting
        assert len(e.truth) == 3 and sum(1 for t in e.truth if t.chunk_ns) == 2  # the quitter never generated
