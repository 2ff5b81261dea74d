"""The multi-turn driver: send the conversation, run the model's tool calls, repeat until the
model stops, submits an answer, repeats itself or runs out of turns. It observes; it never grades."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._exchange import canonical_calls, parse_arguments, send
from rigbench.suites.agent._records import TaskStopReason, TurnObservation

__all__ = ["Conversation", "ToolRunner", "converse"]

# One tool call -> (the result the model reads, the submitted answer when the call was one)
ToolRunner = Callable[[dict[str, Any]], Awaitable[tuple[str, dict[str, Any] | None]]]


class Conversation(NamedTuple):
    messages: list[dict[str, Any]]  # the whole transcript, errors included
    turns: list[TurnObservation]
    stop: TaskStopReason
    answer: dict[str, Any] | None  # what a report tool submitted, if anything
    wall_s: float


def _tokens(usage: dict[str, Any] | None, key: str) -> int | None:
    v = (usage or {}).get(key)
    return v if isinstance(v, int) else None


async def converse(ctx: SuiteContext, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   run_tool: ToolRunner, *, seed: int, max_turns: int, repeat_limit: int,
                   max_tokens: int) -> Conversation:
    """At most `max_turns` requests; stops early after `repeat_limit` turns of the same calls."""
    messages = list(messages)
    turns: list[TurnObservation] = []
    stop: TaskStopReason = "max_turns"
    answer: dict[str, Any] | None = None
    last_sig: list[tuple[str, str]] | None = None
    repeats = 0
    t0 = time.perf_counter()
    for turn in range(max_turns):
        body = {
            "model": ctx.rig.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": "auto",
            "temperature": 0.0,
            "seed": seed,
            "max_tokens": max_tokens,
        }
        reply = await send(ctx.client, ctx.writer, body)
        ex = reply.exchange
        calls = [dict(c, id=c.get("id") or f"call_{turn}_{i}") for i, c in enumerate(ex.tool_calls)]
        turns.append(
            TurnObservation(
                tool_calls=len(calls),
                prompt_tokens=_tokens(ex.usage, "prompt_tokens"),
                completion_tokens=_tokens(ex.usage, "completion_tokens"),
                elapsed_s=ex.elapsed_s,
                finish_reason=ex.finish_reason,
                invalid_arguments=sum(parse_arguments(c) is None for c in calls),
            )
        )
        if ex.error:
            stop = "request_error"
            messages.append({"role": "rigbench", "error": ex.error})
            break
        msg = dict(reply.message)
        if calls:
            msg["tool_calls"] = calls
        messages.append(msg)
        if not calls:
            stop = "model_stopped"
            break
        for c in calls:
            result, submitted = await run_tool(c)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
            if submitted is not None:
                answer = submitted
        if answer is not None:
            stop = "answer_submitted"
            break
        sig = canonical_calls(calls)
        repeats = repeats + 1 if sig == last_sig else 0
        last_sig = sig
        if repeats >= repeat_limit - 1:
            stop = "repeated_call"
            break
    return Conversation(messages, turns, stop, answer, time.perf_counter() - t0)
